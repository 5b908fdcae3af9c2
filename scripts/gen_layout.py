"""Write the CURTAW01 layout's C header and TypeScript module from curta_chain/artifact/layout.py.

Both files are generated: edit layout.py, then run this (``--check`` only says whether both
are current, exit 1 when not; the program's build runs that check first). Every constant
keeps its Python name in C and in TypeScript, with its docstring as a comment.

- ``programs/curta/layout.h``: the constants, the chain's limits the format is bound by
  (``curta_chain.constants``), the configuration's fields and bounds, the block and matrix
  indices and the matrix descriptor, for the program's C (``curta.h`` includes it).
- ``sdk/js/src/layout.generated.ts``: the same constants, the configuration's fields under
  the SDK's names, and the limits the SDK checks (``curta_chain.constants``), which
  ``sdk/js/src/layout.ts`` re-exports beside its functions.

Usage: python scripts/gen_layout.py [--check] [--header PATH] [--module PATH]
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import struct
import sys
import textwrap
from pathlib import Path

from curta_chain import constants
from curta_chain.artifact import layout
from curta_chain.fsutil import refresh_generated

ROOT = Path(__file__).resolve().parent.parent
HEADER_PATH = "programs/curta/layout.h"
"""Where the C header goes, relative to the repository."""
MODULE_PATH = "sdk/js/src/layout.generated.ts"
"""Where the TypeScript module goes, relative to the repository."""
NOT_CONSTANTS = {
    "CONFIG_FIELDS", "BLOCKS", "BLOCK_NAMES", "MODEL_MATRICES", "LAYER_MATRICES",
    "LAYER_MATRIX_NAMES", "DESCRIPTOR_FORMAT",
}  # fmt: skip
"""layout.py's tables (written as C enums, a C struct and TypeScript arrays instead)."""
TS_CONFIG_NAMES = {
    "dim": "dim",
    "hidden_dim": "hiddenDim",
    "n_layers": "layers",
    "n_heads": "heads",
    "n_kv_heads": "kvHeads",
    "vocab_size": "vocabSize",
    "seq_len": "contextLength",
}
"""The SDK's names of the configuration's fields (the spec's words), by their Python names."""
CHAIN_LIMITS = {
    "MAX_ACCOUNT_SIZE": "Solana's largest account, which holds a weight account.",
    "WEIGHT_HEADER_SIZE": "A weight account's header, before its section's bytes.",
    "MAX_SECTION_SIZE": "Solana's largest account less the weight account's header.",
    "MAX_SECTIONS": "The most sections a model has.",
    "HASH_CHUNK_SIZE": "The weights hash chains SHA-256 over chunks of at most this many bytes.",
}
"""``curta_chain.constants`` that bound the format, each with its comment: the C has them
all (as u64), the SDK's decoder, hash and chain reader those of ``SDK_LIMITS``."""
SDK_LIMITS = ("WEIGHT_HEADER_SIZE", "MAX_SECTION_SIZE", "MAX_SECTIONS", "HASH_CHUNK_SIZE")
C_TYPES = {"I": "uint32_t", "Q": "uint64_t"}


def _documented(module_path: Path) -> list[tuple[str, str]]:
    """Return ``(name, docstring or "")`` of every upper-case constant, in source order."""
    body = ast.parse(module_path.read_text()).body
    out = []
    for at, node in enumerate(body):
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        for target in targets:
            if not isinstance(target, ast.Name) or not target.id.isupper():
                continue
            follows = body[at + 1] if at + 1 < len(body) else None
            doc = ""
            if isinstance(follows, ast.Expr) and isinstance(follows.value, ast.Constant):
                doc = " ".join(str(follows.value.value).split())
            out.append((target.id, doc))
    return out


LAYOUT = _documented(Path(layout.__file__))


def _c_comment(text: str) -> list[str]:
    """``text`` as a C comment on the lines before what it describes (none when empty)."""
    lines = textwrap.wrap(text.replace("``", ""), 94)
    if len(lines) <= 1:
        return [f"/* {line} */" for line in lines]
    return [f"/* {lines[0]}", *(f" * {line}" for line in lines[1:-1]), f" * {lines[-1]} */"]


def _ts_doc(text: str) -> list[str]:
    """``text`` as a TSDoc comment (none when empty)."""
    lines = textwrap.wrap(text.replace("``", "`"), 94)
    if len(lines) <= 1:
        return [f"/** {line} */" for line in lines]
    return ["/**", *(f" * {line}" for line in lines), " */"]


def _c_scalar(value: object) -> str:
    if isinstance(value, bytes):
        return f"0x{struct.unpack('<Q', value)[0]:016x}UL"
    return repr(value)


def _c_enum(name: str, prefix: str, members: list[str], count: str = "") -> list[str]:
    lines = [f"enum {name} {{", *(f"  {prefix}{m} = {i}," for i, m in enumerate(members))]
    if count:
        lines.append(f"  {count} = {len(members)},")
    return [*lines, "};"]


def _c_descriptor() -> list[str]:
    fields = dataclasses.fields(layout.MatrixDescriptor)
    codes = layout.DESCRIPTOR_FORMAT.lstrip("<")
    assert len(codes) == len(fields), "DESCRIPTOR_FORMAT has a code for each field"
    assert struct.calcsize(layout.DESCRIPTOR_FORMAT) == layout.DESCRIPTOR_SIZE
    return [
        "typedef struct {",
        *(f"  {C_TYPES[code]} {field.name};" for code, field in zip(codes, fields, strict=True)),
        "} MatrixDescriptor;",
        "_Static_assert(sizeof(MatrixDescriptor) == DESCRIPTOR_SIZE, "
        '"a matrix descriptor is DESCRIPTOR_SIZE bytes");',
    ]


def c_header() -> str:
    """The text of ``programs/curta/layout.h``: layout.py in C."""
    constants_lines = []
    for name, doc in LAYOUT:
        if name in NOT_CONSTANTS:
            continue
        value = getattr(layout, name)
        if isinstance(value, bytes):
            doc = f"The tag {value.decode()}, read as a little-endian u64."
        constants_lines += [*_c_comment(doc), f"#define {name} {_c_scalar(value)}"]
    fields = [name.upper() for name, *_ in layout.CONFIG_FIELDS]
    bounds = []
    for index, (name, byte, low, high) in enumerate(layout.CONFIG_FIELDS):
        assert byte == layout.CONFIG_OFFSET + 4 * index, f"{name} follows the one before it"
        bounds += [f"#define MIN_{name.upper()} {low}", f"#define MAX_{name.upper()} {high}"]
    first_layer = len(layout.MODEL_MATRICES)
    lines = [
        "/*",
        " * layout.h: GENERATED by scripts/gen_layout.py from curta_chain/artifact/layout.py",
        " * and curta_chain/constants.py. Do not edit: edit those and regenerate",
        " * (tests/artifact/test_layout_generated.py compares).",
        " *",
        " * Where everything sits in a CURTAW01 artifact (docs/spec/curta-weight-format.md): the",
        " * header's fields, the chain's limits, the configuration's bounds, section zero's",
        " * blocks and the matrix table, each under the name the Python gives it.",
        " */",
        "#ifndef LAYOUT_H",
        "#define LAYOUT_H",
        "",
        '#include "curta_sdk.h"',
        "",
        *constants_lines,
        "",
        "/* The chain's limits the format is bound by (curta_chain/constants.py). */",
        *(
            line
            for name, doc in CHAIN_LIMITS.items()
            for line in (*_c_comment(doc), f"#define {name} {getattr(constants, name)}UL")
        ),
        "",
        "/* The configuration: seven u32 from header byte CONFIG_OFFSET, in this order. */",
        *_c_enum("ConfigField", "CONFIG_", fields, "CONFIG_FIELD_COUNT"),
        "",
        "/* The spec's bounds on the configuration. */",
        *bounds,
        "",
        "/* Section zero's blocks, in the order of the header's block offsets. */",
        *_c_enum("Block", "BLOCK_", [ident for ident, _ in layout.BLOCKS], "BLOCK_COUNT"),
        "",
        "/* The matrix table: the model's matrices, then per layer in this order. */",
        *_c_enum("ModelMatrix", "MAT_", [ident for ident, _ in layout.MODEL_MATRICES]),
        *_c_enum("LayerMatrix", "MAT_", [ident for ident, _ in layout.LAYER_MATRICES]),
        "#define layer_matrix(layer, kind) "
        f"({first_layer} + MATRICES_PER_LAYER * (layer) + (kind))",
        "",
        "/* One entry of the matrix table. */",
        *_c_descriptor(),
        "",
        "#endif",
        "",
    ]
    return "\n".join(lines)


def _ts_value(value: object) -> str:
    if isinstance(value, bytes):
        return f'new TextEncoder().encode("{value.decode()}")'
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return repr(value)


def ts_module() -> str:
    """The text of ``sdk/js/src/layout.generated.ts``: layout.py in TypeScript."""
    lines = [
        "// layout.generated.ts: GENERATED by scripts/gen_layout.py from",
        "// curta_chain/artifact/layout.py and curta_chain/constants.py. Do not edit: edit those",
        "// and regenerate (tests/artifact/test_layout_generated.py compares). layout.ts",
        "// re-exports it beside the layout's functions.",
        "",
    ]
    for name, doc in LAYOUT:
        if name in NOT_CONSTANTS:
            continue
        lines += [*_ts_doc(doc), f"export const {name} = {_ts_value(getattr(layout, name))};"]
    for name in SDK_LIMITS:
        doc = CHAIN_LIMITS[name]
        lines += [*_ts_doc(doc), f"export const {name} = {getattr(constants, name)};"]
    assert set(TS_CONFIG_NAMES) == {name for name, *_ in layout.CONFIG_FIELDS}
    union = " | ".join(f'"{TS_CONFIG_NAMES[name]}"' for name, *_ in layout.CONFIG_FIELDS)
    rows = [
        f'  ["{TS_CONFIG_NAMES[name]}", "{name}", {byte}, {low}, {high}],'
        for name, byte, low, high in layout.CONFIG_FIELDS
    ]
    lines += [
        "",
        "/** The configuration's fields by the spec's names (docs/spec/curta-weight-format.md). */",
        f"export type ConfigField = {union};",
        "",
        "/**",
        " * (field, its Python name, header byte, lowest, highest), in header order. The Python",
        " * name (curta_chain's ModelConfig) is the one error messages give, word for word as",
        " * decode.py's.",
        " */",
        "export const CONFIG_FIELDS: readonly [ConfigField, string, number, number, number][] = [",
        *rows,
        "];",
        "",
        "/** Section zero's seven blocks, in the order of the header's block offsets. */",
        "export const BLOCK_NAMES = [",
        *(f'  "{name}",' for _, name in layout.BLOCKS),
        "] as const;",
        *(f"export const BLOCK_{ident} = {i};" for i, (ident, _) in enumerate(layout.BLOCKS)),
        "",
        "/** The matrix table's first entries, before every layer's. */",
        "export const MODEL_MATRIX_NAMES = [",
        *(f'  "{name}",' for _, name in layout.MODEL_MATRICES),
        "] as const;",
        *(f"export const MAT_{ident} = {i};" for i, (ident, _) in enumerate(layout.MODEL_MATRICES)),
        "",
        "/** A layer's matrices, in the matrix table's order within a layer. */",
        "export const LAYER_MATRIX_NAMES = [",
        *(f'  "{name}",' for _, name in layout.LAYER_MATRICES),
        "] as const;",
        "",
    ]
    return "\n".join(lines)


def outputs() -> dict[str, str]:
    """Each generated file's path (relative to the repository) and its text."""
    return {HEADER_PATH: c_header(), MODULE_PATH: ts_module()}


def main(argv: list[str] | None = None) -> int:
    """Write (or with ``--check`` compare) both generated files; 0 when both are current."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 if stale")
    parser.add_argument(
        "--header", type=Path, default=ROOT / HEADER_PATH, help=f"default {HEADER_PATH}"
    )
    parser.add_argument(
        "--module", type=Path, default=ROOT / MODULE_PATH, help=f"default {MODULE_PATH}"
    )
    args = parser.parse_args(argv)
    texts = outputs()
    stale = "stale, not layout.py's: run scripts/gen_layout.py"
    current = [
        refresh_generated(path, text, args.check, stale)
        for path, text in ((args.header, texts[HEADER_PATH]), (args.module, texts[MODULE_PATH]))
    ]
    return 0 if all(current) or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())
