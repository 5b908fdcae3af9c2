"""The CURTAW01 layout has one source: layout.h and layout.generated.ts are layout.py's.

The program's C and the TypeScript SDK read the layout only through the two generated
files (scripts/gen_layout.py): no other header, C source or TypeScript module defines one of
its constants, under its name or under the names the C used to give them.
"""

import re
from pathlib import Path

import build_program
import gen_layout
import gen_schedule
import pytest

from curta_chain import constants
from curta_chain.artifact import layout
from curta_chain.errors import BuildError
from curta_chain.program.builds import BUILDS

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "programs" / "curta"
SDK_SOURCES = ROOT / "sdk" / "js" / "src"
CONSTANTS = [name for name, _ in gen_layout.LAYOUT if name not in gen_layout.NOT_CONSTANTS]
"""Every constant of layout.py the generated files carry."""


def test_the_committed_files_are_layout_pys():
    for path, text in gen_layout.outputs().items():
        assert (ROOT / path).read_text() == text, f"{path}: run scripts/gen_layout.py"


def test_every_constant_reaches_c_and_typescript_under_its_python_name():
    """layout.py's constants, and constants.py's limits of the format, under one name each."""
    header = (ROOT / gen_layout.HEADER_PATH).read_text()
    module = (ROOT / gen_layout.MODULE_PATH).read_text()
    assert "ROW_PREFIX" in CONSTANTS and "TAG" in CONSTANTS
    for name in CONSTANTS:
        assert re.search(rf"^#define {name} ", header, re.M), name
        assert re.search(rf"^export const {name} = ", module, re.M), name
    for name in gen_layout.CHAIN_LIMITS:
        assert f"#define {name} {getattr(constants, name)}UL\n" in header
    for name in gen_layout.SDK_LIMITS:
        assert f"export const {name} = {getattr(constants, name)};\n" in module
    tag = re.search(r"^#define TAG 0x([0-9a-f]{16})UL$", header, re.M)
    assert tag and bytes.fromhex(tag[1])[::-1] == layout.TAG
    for name, byte, low, high in layout.CONFIG_FIELDS:
        assert f"#define MIN_{name.upper()} {low}\n" in header
        assert f"#define MAX_{name.upper()} {high}\n" in header
        ts_name = gen_layout.TS_CONFIG_NAMES[name]
        assert f'  ["{ts_name}", "{name}", {byte}, {low}, {high}],\n' in module
    for index, (ident, name) in enumerate(layout.BLOCKS):
        assert f"  BLOCK_{ident} = {index},\n" in header
        assert f'  "{name}",\n' in module


def test_no_hand_written_c_defines_the_layout():
    """The program's headers and sources include layout.h; none defines what it holds."""
    generated = (ROOT / gen_layout.HEADER_PATH).read_text()
    defined = set(re.findall(r"^#define (\w+)", generated, re.M))
    defined |= set(re.findall(r"^  (\w+) = \d+,", generated, re.M))  # enum members
    defined |= {"MatrixDescriptor", "ROW_HEADER_SIZE"}
    own = re.compile(r"#define (ART_\w+|\w+)\b|^\s*(\w+) = \d+,|\} (\w+);", re.M)
    sources = [*PROGRAM.glob("*.h"), *(PROGRAM / "src").glob("*.c")]
    assert len(sources) > 10
    for source in sources:
        if source.name == "layout.h":
            continue
        names = {n for match in own.findall(source.read_text()) for n in match if n}
        clash = sorted(n for n in names if n in defined or n.startswith("ART_"))
        assert clash == [], f"{source.name} defines layout.h's {clash}"
    assert '#include "layout.h"' in (PROGRAM / "inference.h").read_text()


def test_no_hand_written_typescript_defines_the_layout():
    """The SDK's modules take every layout constant from layout.generated.ts."""
    names = [
        *CONSTANTS,
        *gen_layout.SDK_LIMITS,
        "CONFIG_FIELDS",
        "BLOCK_NAMES",
        "LAYER_MATRIX_NAMES",
    ]
    sources = sorted(SDK_SOURCES.glob("*.ts"))
    assert SDK_SOURCES / "layout.ts" in sources
    for source in sources:
        if source.name == "layout.generated.ts":
            continue
        text = source.read_text()
        clash = [n for n in names if re.search(rf"\b(const|let|var) {n}\b", text)]
        assert clash == [], f"{source.name} defines {clash}"
    assert 'export * from "./layout.generated.js";' in (SDK_SOURCES / "layout.ts").read_text()


def test_stale_files_are_named_and_rewritten(tmp_path: Path, capsys):
    header, module = tmp_path / "layout.h", tmp_path / "layout.generated.ts"
    texts = gen_layout.outputs()
    header.write_text(
        texts[gen_layout.HEADER_PATH].replace("#define ROW_PREFIX 8", "#define ROW_PREFIX 9")
    )
    module.write_text(texts[gen_layout.MODULE_PATH])
    paths = ["--header", str(header), "--module", str(module)]
    assert gen_layout.main(["--check", *paths]) == 1
    stale = f"{header}: stale, not layout.py's: run scripts/gen_layout.py"
    assert capsys.readouterr().err.strip() == stale
    module.unlink()
    assert gen_layout.main(paths) == 0
    assert header.read_text() == texts[gen_layout.HEADER_PATH]
    assert module.read_text() == texts[gen_layout.MODULE_PATH]
    assert gen_layout.main(["--check", *paths]) == 0


def test_the_build_refuses_a_layout_header_that_is_not_layout_pys(monkeypatch, tmp_path: Path):
    stale = tmp_path / "layout.h"
    stale.write_text(
        gen_layout.c_header().replace("#define HEADER_SIZE 4096", "#define HEADER_SIZE 4095")
    )
    monkeypatch.setattr(build_program, "ROOT", tmp_path)
    monkeypatch.setattr(gen_schedule, "HEADER_PATH", str(ROOT / gen_schedule.HEADER_PATH))
    monkeypatch.setattr(gen_layout, "HEADER_PATH", "layout.h")
    with pytest.raises(BuildError, match=r"^layout.h differs from curta_chain/artifact/layout.py"):
        build_program.build_one(BUILDS[0])
