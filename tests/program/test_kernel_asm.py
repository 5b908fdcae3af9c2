"""The matvec kernel's assembly has one source: kernel_asm.h is scripts/gen_kernel.py's."""

from pathlib import Path

import build_program
import gen_kernel
import pytest

from curta_chain.errors import BuildError
from curta_chain.program.builds import BUILDS

ROOT = Path(__file__).resolve().parents[2]


def test_the_committed_header_is_the_generators():
    assert (ROOT / gen_kernel.HEADER_PATH).read_text() == gen_kernel.c_header(), (
        "run scripts/gen_kernel.py"
    )


def test_the_loop_names_every_column_once_and_leaves_after_each_round():
    pieces = gen_kernel.quads_asm()
    lines = [i for piece in pieces for i in piece]
    columns = [piece for piece in pieces if len(piece) == 1 + 4 * 3]  # a load, 4 MACs
    offsets = [int(column[0].rsplit(" ", 1)[1].rstrip(")")) for column in columns]
    assert offsets == [gen_kernel.FRAME_X - 8 * k for k in range(3 * 96)]
    assert min(offsets) > max(gen_kernel.SLOTS.values()) >= min(gen_kernel.SLOTS.values()) > 512
    rounds = [i for i in lines if i.startswith("if %[t] == ") and i.endswith("9f")]
    assert rounds == ["if %[t] == 1 goto 9f", "if %[t] == 2 goto 9f"]  # after rounds 1 and 2
    assert lines.count("%[t] *= %[v]") == 4 * 3 * 96


def test_a_stale_header_is_named_and_rewritten(tmp_path: Path, capsys):
    header = tmp_path / "kernel_asm.h"
    header.write_text(gen_kernel.c_header().replace("r10 - 4096", "r10 - 4088", 1))
    assert gen_kernel.main(["--check", "--header", str(header)]) == 1
    stale = f"{header}: stale, not the generator's: run scripts/gen_kernel.py"
    assert capsys.readouterr().err.strip() == stale
    assert gen_kernel.main(["--header", str(header)]) == 0
    assert header.read_text() == gen_kernel.c_header()


def test_the_build_refuses_a_header_that_is_not_the_generators(monkeypatch, tmp_path: Path):
    # Every generated header current but the kernel's, which has one line more.
    for generator, _ in build_program.GENERATED_HEADERS:
        name = Path(generator.HEADER_PATH).name
        stale = "\n" if generator is gen_kernel else ""
        (tmp_path / name).write_text(generator.c_header() + stale)
        monkeypatch.setattr(generator, "HEADER_PATH", name)
    monkeypatch.setattr(build_program, "ROOT", tmp_path)
    with pytest.raises(BuildError, match=r"^kernel_asm.h differs from scripts/gen_kernel.py"):
        build_program.build_one(BUILDS[0])
