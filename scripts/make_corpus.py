"""Write tests/corpus/: two small artifacts from curta_chain's encoder and corruptions of them.

One corpus, read by both decoders' suites (tests/artifact/test_corpus.py for Python,
sdk/js/test/decode.test.ts for TypeScript). Each case is a base artifact and a list of
byte edits; ``cases.json`` records the message the Python decoder gives (or the hash and
configuration it accepts with), so the TypeScript decoder must give the same one-line
message, naming the same field and offset. Run it again after changing the format or the
decoder's wording: ``.venv/bin/python scripts/make_corpus.py``.
"""

import json
import struct
from pathlib import Path

from curta_chain.artifact import Artifact, ModelConfig, decode_artifact, encode_parts
from curta_chain.artifact.layout import (
    BLOCK_OFFSETS_OFFSET,
    DESCRIPTOR_SIZE,
    MATRIX_TABLE_OFFSET,
)
from curta_chain.artifact.synthetic import synthetic_artifact
from curta_chain.errors import ArtifactError

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "corpus"
TIED = ModelConfig(dim=16, hidden_dim=36, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=320,
                   seq_len=16)  # fmt: skip
"""Small, two sections, a shared classifier, padded rows (36 columns in 48 bytes)."""
UNTIED = ModelConfig(dim=8, hidden_dim=20, n_layers=1, n_heads=2, n_kv_heads=1, vocab_size=300,
                     seq_len=8)  # fmt: skip
"""Smaller, with its own classifier."""
SOURCE = "a.curta"

Edit = dict[str, object]


def put(offset: int, fmt: str, *values: int) -> Edit:
    """An edit writing ``values`` packed by ``fmt`` at ``offset``."""
    return {"at": offset, "hex": struct.pack(fmt, *values).hex()}


def bump(data: bytes, offset: int, fmt: str, by: int) -> Edit:
    """An edit adding ``by`` to the number at ``offset``."""
    (value,) = struct.unpack_from(fmt, data, offset)
    return put(offset, fmt, value + by)


def apply(data: bytes, edits: list[Edit]) -> bytes:
    """Apply edits in order: ``at``/``hex`` overwrites, ``truncate``, ``append``, ``insert``."""
    out = bytearray(data)
    for edit in edits:
        if "truncate" in edit:
            del out[int(edit["truncate"]) :]
        elif "append" in edit:
            out += bytes.fromhex(str(edit["append"]))
        elif "insert" in edit:
            at = int(edit["insert"])
            out[at:at] = bytes.fromhex(str(edit["hex"]))
        else:
            at, patch = int(edit["at"]), bytes.fromhex(str(edit["hex"]))
            out[at : at + len(patch)] = patch
    return bytes(out)


def desc(index: int, field: int = 0) -> int:
    """The header byte of matrix ``index``'s descriptor field at ``field``."""
    return MATRIX_TABLE_OFFSET + DESCRIPTOR_SIZE * index + field


def cases(a: Artifact) -> dict[str, list[Edit]]:
    """The corruptions of artifact ``a`` (positions from its own tables, not constants)."""
    d = a.data
    s1 = len(a.sections[0])
    blocks = a.blocks
    entries, ids, strings = blocks[4], blocks[5], blocks[6]
    down = a.matrices[7]  # layer 0 ffn down: padded rows
    down_at = s1 + down.offset
    emb = a.matrices[0]
    last = a.matrices[-1]
    strings_end = strings + sum(len(t) for t in a.tokens())
    swapped = struct.unpack_from("<2I", d, ids + 40)[::-1]
    grow = bytes(8)
    return {
        "short file": [{"truncate": 100}],
        "tag": [{"at": 0, "hex": b"CURTAW02".hex()}],
        "dim": [put(8, "<I", 0)],
        "hidden": [put(12, "<I", 2_049)],
        "layers": [put(16, "<I", 17)],
        "heads": [put(20, "<I", 0)],
        "heads divide dim": [put(20, "<I", 3)],
        "kv heads divide heads": [put(24, "<I", 3)],
        "kv heads above heads": [put(24, "<I", 8)],
        "head size even": [put(8, "<I", 12)],
        "head size at most 64": [put(8, "<I", 128), put(20, "<2I", 1, 1)],
        "vocabulary": [put(28, "<I", 258)],
        "context": [put(32, "<I", 513)],
        "section count range": [put(36, "<I", 1)],
        "section count above 18": [put(36, "<I", 19)],
        "section count rule": [put(36, "<I", 3)],
        "section count rule, split": [put(28, "<I", 65_536)],
        "inverse square root": [bump(d, 68, "<I", 2)],
        "unused header": [put(100, "<B", 1)],
        "section 0 offset": [put(128, "<Q", 8)],
        "sections contiguous": [put(144, "<Q", s1 + 8)],
        "section 0 holds the header": [put(136, "<Q", 4_000)],
        "section limit": [put(152, "<Q", 10_483_713)],
        "section 1 empty": [put(152, "<Q", 0)],
        "truncated": [{"truncate": len(d) - 8}],
        "trailing bytes": [{"append": bytes(8).hex()}],
        "unused section table": [put(200, "<B", 9)],
        "block in header": [put(BLOCK_OFFSETS_OFFSET, "<I", 100)],
        "block past section zero": [put(BLOCK_OFFSETS_OFFSET + 24, "<I", s1 + 8)],
        "blocks back to back": [bump(d, BLOCK_OFFSETS_OFFSET + 8, "<I", 8)],
        "unused matrix table": [put(4_000, "<B", 1)],
        "matrix section": [put(desc(2), "<I", 0)],
        "matrix columns": [put(desc(3, 4), "<I", 32)],
        "matrix rows": [put(desc(3, 8), "<I", 64)],
        "row length": [bump(d, desc(7, 12), "<I", -8)],
        "matrix alignment": [bump(d, desc(2, 16), "<Q", 4)],
        "matrix crosses its section": [put(desc(len(a.matrices) - 1, 16), "<Q", last.offset + 8)],
        "matrices packed": [bump(d, desc(2, 16), "<Q", 8)],
        "tied classifier copies the embedding": [bump(d, desc(1, 4), "<I", 1)],
        "section ends with its last matrix": [bump(d, 152, "<Q", 8), {"append": grow.hex()}],
        "row scale": [put(s1 + emb.row_bytes * 3, "<I", 0)],
        "row zero bytes": [put(down_at + down.row_bytes + 6, "<B", 1)],
        "weight -128": [put(down_at + down.row_bytes * 2 + 8 + 5, "<B", 0)],
        "row padding": [put(down_at + down.row_bytes * 3 + down.row_bytes - 2, "<B", 0)],
        "entry zero field": [put(entries + 16 * 9 + 12, "<I", 1)],
        "token length": [put(entries + 16 * 9 + 4, "<I", 129)],
        "token in bounds": [put(entries + 16 * 9 + 8, "<I", s1 - 2)],
        "token before the strings": [put(entries + 16 * 9 + 8, "<I", 100)],
        "tokens follow one another": [bump(d, entries + 16 * 9 + 8, "<I", 100)],
        "score key of a finite float": [put(entries + 16 * 300, "<I", 0xFFC0_0000)],
        "section zero padded to eight": [
            {"insert": s1, "hex": grow.hex()},
            put(136, "<Q", s1 + 8),
            put(144, "<Q", s1 + 8),
        ],
        "rotary entry": [bump(d, blocks[1] + 4 * (13 * TIED.head_size + 3), "<i", 2)],
        "exponential entry": [bump(d, blocks[2] + 4 * 100, "<I", -2)],
        "SiLU entry": [bump(d, blocks[3] + 4 * 4_096, "<i", 3)],
        "section zero padding zero": [put(s1 - 1, "<B", 7)] if strings_end < s1 else [],
        "sorted ids": [put(ids + 40, "<2I", *swapped)],
        # Accepted: one unit off a formula is a converter's rounding.
        "rotary entry one unit off": [bump(d, blocks[1] + 4 * 9, "<i", 1)],
        "exponential entry one unit off": [bump(d, blocks[2] + 4, "<I", -1)],
        "SiLU entry one unit off": [bump(d, blocks[3], "<i", 1)],
    }


def untied_cases(a: Artifact) -> dict[str, list[Edit]]:
    """Corruptions only a model with its own classifier has."""
    emb = a.matrices[0]
    return {
        "own classifier described as the embedding": [put(desc(1, 16), "<Q", 0)],
        "own classifier not packed": [put(desc(1, 16), "<Q", emb.end - 8)],
    }


def equal_strings_base(a: Artifact) -> bytes:
    """``a`` with two ids of the same bytes: equal strings sort by id."""
    tokens = list(a.tokens())
    tokens[300] = tokens[200]
    parts = a.parts()
    return encode_parts(type(parts)(**{**parts.__dict__, "tokens": tuple(tokens)}))


def outcome(data: bytes) -> dict[str, object]:
    """What the Python decoder says of ``data``: its message, or what it accepted."""
    try:
        artifact = decode_artifact(data, SOURCE)
    except ArtifactError as exc:
        return {"error": str(exc)}
    return {
        "config": artifact.config.to_json(),
        "sections": [len(s) for s in artifact.sections],
        "tied": artifact.tied,
        "weights_hash": artifact.weights_hash().hex(),
    }


def main() -> None:
    """Write the bases and cases.json."""
    CORPUS.mkdir(parents=True, exist_ok=True)
    tied = synthetic_artifact(TIED, seed=22)
    untied = synthetic_artifact(UNTIED, seed=23, shared_classifier=False)
    equal = decode_artifact(equal_strings_base(tied))
    ids = list(equal.sorted_ids())
    slot = ids.index(200)
    bases: dict[str, bytes] = {"tied": tied.data, "untied": untied.data, "equal": equal.data}
    plan: list[tuple[str, str, list[Edit]]] = []
    plan += [("tied", name, edits) for name, edits in cases(tied).items()]
    plan += [("untied", name, edits) for name, edits in untied_cases(untied).items()]
    plan.append(("equal", "equal strings sort by id", [put(equal.blocks[5] + 4 * slot, "<2I",
                                                            300, 200)]))  # fmt: skip
    out: list[dict[str, object]] = [
        {"name": f"{name} (good)", "base": name, "edits": [], **outcome(data)}
        for name, data in bases.items()
    ]
    for base, name, edits in plan:
        if not edits:
            raise SystemExit(f"case {name!r}: no edit applies to this base")
        data = apply(bases[base], edits)
        out.append({"name": name, "base": base, "edits": edits, **outcome(data)})
    for name, data in bases.items():
        (CORPUS / f"{name}.curta").write_bytes(data)
    generated = "by scripts/make_corpus.py (.venv/bin/python scripts/make_corpus.py): do not edit"
    text = json.dumps({"generated": generated, "source": SOURCE, "cases": out}, indent=1) + "\n"
    (CORPUS / "cases.json").write_text(text)
    refused = sum(1 for case in out if "error" in case)
    print(f"{CORPUS}: {len(bases)} bases, {len(out)} cases ({refused} refused)")


if __name__ == "__main__":
    main()
