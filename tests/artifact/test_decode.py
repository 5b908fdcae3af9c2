"""Every rule of the format, broken once: each refusal names its field or byte."""

import dataclasses
import struct

import pytest

from curta_chain.artifact import decode_artifact, encode_parts, read_artifact
from curta_chain.errors import ArtifactError

S1 = 68_536  # stories260K: section zero's length, where section one starts
STRINGS = 66_312  # its token strings block
ENTRIES = 56_072  # its tokenizer entries block
SORTED = 64_264  # its sorted ids block
ROTARY, EXP, SILU = 6_912, 23_296, 39_684  # its tables: context 512 × head size 8, 4,097 each
DOWN = S1 + 63_072  # layer 0 ffn down: 64 rows of 184 bytes, 172 columns, 4 padding bytes


def patch(data: bytes, offset: int, fmt: str, *values) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, *values)
    return bytes(out)


def desc(index: int, field: int = 0) -> int:
    return 512 + 24 * index + field


def bump(data: bytes, offset: int, fmt: str, by: int) -> bytes:
    (value,) = struct.unpack_from(fmt, data, offset)
    return patch(data, offset, fmt, value + by)


def refused(data: bytes, pattern: str) -> str:
    with pytest.raises(ArtifactError, match=pattern) as info:
        decode_artifact(data, "a.curta")
    message = str(info.value)
    assert message.startswith("a.curta: ") and "\n" not in message
    return message


def grow_section0(data: bytes, extra: bytes) -> bytes:
    """Insert ``extra`` at the end of section zero and fix the section table around it."""
    data = data[:S1] + extra + data[S1:]
    data = patch(data, 136, "<Q", S1 + len(extra))
    return patch(data, 144, "<Q", S1 + len(extra))


CASES = {
    # The header.
    "short file": (lambda d: d[:100], r"100 bytes, shorter than the 4,096-byte header"),
    "tag": (lambda d: b"CURTAW02" + d[8:], r"byte 0 \(tag\): CURTAW02, expected CURTAW01"),
    "dim": (lambda d: patch(d, 8, "<I", 0), r"header byte 8 \(dim\): 0, expected 1 to 512"),
    "hidden": (lambda d: patch(d, 12, "<I", 2_049), r"header byte 12 \(hidden_dim\): 2049"),
    "layers": (lambda d: patch(d, 16, "<I", 17), r"header byte 16 \(n_layers\): 17"),
    "heads divide dim": (
        lambda d: patch(d, 20, "<I", 7),
        r"header byte 20 \(n_heads\): 7 does not divide dimension 64",
    ),
    "kv heads divide heads": (
        lambda d: patch(d, 24, "<I", 3),
        r"header byte 24 \(n_kv_heads\): 3 is not a divisor of heads 8",
    ),
    "head size even": (
        lambda d: patch(d, 8, "<I", 72),
        r"header byte 20 \(n_heads\): head size 9 is not even and at most 64",
    ),
    "head size at most 64": (
        lambda d: patch(patch(d, 8, "<I", 128), 20, "<2I", 1, 1),  # dim 128, one head
        r"head size 128 is not even and at most 64",
    ),
    "vocabulary": (lambda d: patch(d, 28, "<I", 258), r"header byte 28 \(vocab_size\): 258"),
    "context": (lambda d: patch(d, 32, "<I", 513), r"header byte 32 \(seq_len\): 513"),
    "section count range": (
        lambda d: patch(d, 36, "<I", 1),
        r"header byte 36 \(section count\): 1, expected 2 to 18",
    ),
    "section count rule": (
        lambda d: patch(d, 36, "<I", 7),
        r"section count\): 7, expected 2 \(259,328 matrix weights is under 1,000,000",
    ),
    "unused header": (lambda d: patch(d, 100, "<B", 1), r"byte 100 \(unused header\): 0x01"),
    # The section table.
    "section 0 offset": (
        lambda d: patch(d, 128, "<Q", 8),
        r"header byte 128 \(section 0 offset\): 8, expected 0",
    ),
    "sections contiguous": (
        lambda d: patch(d, 144, "<Q", S1 + 8),
        rf"header byte 144 \(section 1 offset\): {S1 + 8:,}, expected {S1:,}",
    ),
    "section 0 holds the header": (
        lambda d: patch(d, 136, "<Q", 4_000),
        r"header byte 136 \(section 0 length\): 4,000, expected 4,096 to 10,483,712",
    ),
    "section limit": (
        lambda d: patch(d, 152, "<Q", 10_483_713),
        r"header byte 152 \(section 1 length\): 10,483,713, expected 1 to 10,483,712",
    ),
    "truncated": (lambda d: d[:-8], r"but the file is [\d,]+ bytes \(truncated\)"),
    "trailing bytes": (lambda d: d + bytes(8), r"\(8 trailing bytes\)"),
    "unused section table": (
        lambda d: patch(d, 200, "<B", 9),
        r"byte 200 \(unused section table\)",
    ),
    # Section zero's blocks.
    "block in header": (
        lambda d: patch(d, 40, "<I", 100),
        r"header byte 40 \(normalization coefficients offset\): 100 points into the header",
    ),
    "block past section zero": (
        lambda d: patch(d, 64, "<I", S1 + 8),
        rf"header byte 64 \(token strings offset\): {S1 + 8:,} points past section zero",
    ),
    "blocks back to back": (
        lambda d: patch(d, 48, "<I", 23_304),
        r"header byte 48 \(exponential table offset\): 23,304, expected 23,296",
    ),
    # The matrix table.
    "unused matrix table": (
        lambda d: patch(d, 4_000, "<B", 1),
        r"byte 4,000 \(unused matrix table\)",
    ),
    "matrix section": (
        lambda d: patch(d, desc(2), "<I", 0),
        rf"header byte {desc(2)} \(matrix 2 \(layer 0 query\) section\): 0, expected 1",
    ),
    "matrix columns": (
        lambda d: patch(d, desc(3, 4), "<I", 32),
        r"\(matrix 3 \(layer 0 key\) columns\): 32, expected 64",
    ),
    "matrix rows": (
        lambda d: patch(d, desc(3, 8), "<I", 64),
        r"\(matrix 3 \(layer 0 key\) rows\): 64, expected 32",
    ),
    "row length": (
        lambda d: patch(d, desc(7, 12), "<I", 180),
        r"\(matrix 7 \(layer 0 ffn down\) row length\): 180, expected 184 \(columns plus 8",
    ),
    "matrix alignment": (
        lambda d: patch(d, desc(2, 16), "<Q", 36_868),
        r"\(matrix 2 \(layer 0 query\) offset\): 36,868, not a multiple of 8",
    ),
    "matrix crosses its section": (
        lambda d: patch(d, desc(36, 16), "<Q", 288_000),
        r"\(matrix 36 \(layer 4 ffn up\) offset\): bytes 288,000 to 300,384 cross the end of",
    ),
    "matrices packed": (
        lambda d: patch(d, desc(2, 16), "<Q", 36_872),
        r"\(matrix 2 \(layer 0 query\) offset\): 36,872, expected 36,864 \(matrices are packed",
    ),
    "tied classifier copies the embedding": (
        lambda d: patch(d, desc(1, 4), "<I", 65),
        rf"header byte {desc(1)} \(classifier descriptor\): shares the embedding's bytes",
    ),
    "section ends with its last matrix": (
        lambda d: patch(d, 152, "<Q", 288_712) + bytes(8),
        r"header byte 152 \(section 1 length\): 288,712, expected 288,704",
    ),
    # Rows.
    "row scale": (
        lambda d: patch(d, S1 + 72 * 3, "<I", 0),
        rf"byte {S1 + 216:,} \(matrix 0 \(token embedding\) row 3 scale\): 0, expected at least 1",
    ),
    "row zero bytes": (
        lambda d: patch(d, DOWN + 184 + 6, "<B", 1),
        r"\(matrix 7 \(layer 0 ffn down\) row 1 bytes 4 to 7\): 0x01, expected zero",
    ),
    "weight -128": (
        lambda d: patch(d, DOWN + 184 * 2 + 8 + 5, "<B", 0),
        rf"byte {DOWN + 381:,} \(matrix 7 \(layer 0 ffn down\) row 2 weight 5\): 0, a weight of",
    ),
    "row padding": (
        lambda d: patch(d, DOWN + 184 * 3 + 182, "<B", 0),
        rf"byte {DOWN + 734:,} \(matrix 7 \(layer 0 ffn down\) row 3 padding\): 0, expected 128",
    ),
    # The tokenizer.
    "entry zero field": (
        lambda d: patch(d, ENTRIES + 16 * 9 + 12, "<I", 1),
        rf"byte {ENTRIES + 156:,} \(token 9 bytes 12 to 15\): 1, expected zero",
    ),
    "token length": (
        lambda d: patch(d, ENTRIES + 16 * 9 + 4, "<I", 129),
        r"\(token 9 length\): 129, expected at most 128",
    ),
    "token in bounds": (
        lambda d: patch(d, ENTRIES + 16 * 9 + 8, "<I", S1 - 2),
        rf"\(token 9 string offset\): bytes {S1 - 2:,} to {S1 + 4:,} lie outside the token strings",
    ),
    "token before the strings": (
        lambda d: patch(d, ENTRIES + 16 * 9 + 8, "<I", 100),
        r"\(token 9 string offset\): bytes 100 to 106 lie outside",
    ),
    "tokens follow one another": (
        lambda d: patch(d, ENTRIES + 16 * 9 + 8, "<I", STRINGS + 100),
        rf"\(token 9 string offset\): {STRINGS + 100:,}, expected {STRINGS + 5 + 5 + 6 + 6 * 6:,}",
    ),
    "score key of a finite float": (
        lambda d: patch(d, ENTRIES + 16 * 300, "<I", 0xFFC0_0000),
        r"\(token 300 score key\): 0xffc00000, not the key of a finite score",
    ),
    "section zero padded to eight": (
        lambda d: grow_section0(d, bytes(8)),
        rf"\(section 0 length\): {S1 + 8:,}, expected {S1:,} \(token strings end at 68,534",
    ),
    # The tables the configuration fixes: one unit off is a rounding, two is corruption.
    "rotary entry": (
        lambda d: bump(d, ROTARY + 4 * (77 * 8 + 3), "<i", 2),
        rf"byte {ROTARY + 4 * (77 * 8 + 3):,} \(rotary position 77 pair 1 sine\): [\d,]+, "
        r"expected [\d,]+ ± 1 \(sin\(77/10000\^\(2/8\)\) with 24 fractional bits\)",
    ),
    "exponential entry": (
        lambda d: bump(d, EXP + 4 * 100, "<I", -2),
        rf"byte {EXP + 400:,} \(exponential table entry 100\): [\d,]+, expected [\d,]+ ± 1 "
        r"\(e\^\(-100/256\) with 30 fractional bits\)",
    ),
    "SiLU entry": (
        lambda d: bump(d, SILU + 4 * 4_096, "<i", 3),
        rf"byte {SILU + 4 * 4_096:,} \(SiLU table entry 4096\): 1,048,579, expected 1,048,576 ± 1",
    ),
    "section zero padding zero": (
        lambda d: patch(d, S1 - 1, "<B", 7),
        rf"byte {S1 - 1:,} \(section zero padding\): 0x07, expected zero",
    ),
    "sorted ids": (
        lambda d: patch(d, SORTED + 40, "<2I", *struct.unpack_from("<2I", d, SORTED + 40)[::-1]),
        rf"byte {SORTED + 40:,} \(sorted token id 10\): \d+, expected \d+ \(ids sorted by",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_every_broken_rule_is_refused_with_its_field(stories260k, case):
    mutate, pattern = CASES[case]
    broken = mutate(stories260k.data)
    assert broken != stories260k.data
    refused(broken, pattern)


@pytest.mark.parametrize("offset, fmt", [(ROTARY + 4 * 9, "<i"), (EXP + 4, "<I"), (SILU, "<i")])
@pytest.mark.parametrize("by", [-1, 1])
def test_tables_may_differ_from_the_formulas_by_one_unit(stories260k, offset, fmt, by):
    decode_artifact(bump(stories260k.data, offset, fmt, by))


def test_split_model_needs_one_section_per_layer(split_untied):
    data = patch(split_untied.data, 36, "<I", 2)
    refused(
        data, r"section count\): 2, expected 4 \(1,097,728 matrix weights is at least 1,000,000"
    )


def test_layer_matrices_sit_in_their_layer_section(split_untied):
    data = patch(split_untied.data, desc(9), "<I", 2)
    refused(data, rf"header byte {desc(9)} \(matrix 9 \(layer 1 query\) section\): 2, expected 3")


def test_an_own_classifier_follows_the_embedding(split_untied):
    # A classifier descriptor equal to the embedding's means a tied one, stored once: the
    # classifier's own bytes are then left over at the end of section one.
    data = patch(split_untied.data, desc(1, 16), "<Q", 0)
    refused(data, r"\(section 1 length\): 2,304,000, expected 1,152,000")
    data = patch(split_untied.data, desc(1, 16), "<Q", 16_000 * 72 - 8)
    refused(data, r"\(matrix 1 \(classifier\) offset\): 1,151,992, expected 1,152,000")


def test_equal_token_strings_sort_by_id(stories260k):
    tokens = list(stories260k.tokens())
    tokens[300] = tokens[200]  # two ids with the same bytes
    data = encode_parts(dataclasses.replace(stories260k.parts(), tokens=tuple(tokens)))
    artifact = decode_artifact(data)
    ids = artifact.sorted_ids().tolist()
    assert ids.index(200) + 1 == ids.index(300)
    slot = ids.index(200)
    swapped = patch(data, artifact.blocks[5] + 4 * slot, "<2I", 300, 200)
    refused(swapped, rf"\(sorted token id {slot}\): 300, expected 200 \(.*equal strings by id\)")


def test_read_artifact_names_a_missing_file(tmp_path):
    with pytest.raises(ArtifactError, match=r"missing.curta: cannot read: No such file"):
        read_artifact(tmp_path / "missing.curta")


def test_decode_accepts_any_bytes_like(stories260k):
    assert decode_artifact(memoryview(stories260k.data)).data == stories260k.data
    assert decode_artifact(bytearray(stories260k.data)).weights_hash() == stories260k.weights_hash()
