"""Decode a CURTAW01 file and check every rule of the spec, in the order the bytes are read.

Each refusal is an ``ArtifactError`` whose one-line message starts with the source, names
the header field, table entry or byte offset at fault, and says what was expected.
"""

import os
import struct
from collections.abc import Callable
from typing import NoReturn

import numpy as np

from curta_chain.artifact.layout import (
    BLOCK_NAMES,
    BLOCK_OFFSETS_OFFSET,
    CONFIG_FIELDS,
    CONFIG_OFFSET,
    DESCRIPTOR_FORMAT,
    DESCRIPTOR_SIZE,
    HEADER_FIELDS_END,
    HEADER_SIZE,
    INV_SQRT_OFFSET,
    MATRIX_TABLE_OFFSET,
    MAX_TOKEN_LENGTH,
    ROW_PREFIX,
    SECTION_COUNT_OFFSET,
    SECTION_ENTRY_SIZE,
    SECTION_TABLE_OFFSET,
    SPLIT_WEIGHT_COUNT,
    TAG,
    TOKEN_ENTRY_SIZE,
    WEIGHT_BIAS,
    MatrixDescriptor,
    ModelConfig,
    matrix_name,
    matrix_section_lengths,
    plan_blocks,
    plan_matrices,
    round_up,
)
from curta_chain.artifact.llama2c import is_checkpoint
from curta_chain.artifact.model import Artifact
from curta_chain.artifact.tables import exp_table, inv_sqrt_head_size, rotary_table, silu_table
from curta_chain.artifact.tezw import MAGIC as TEZW_MAGIC
from curta_chain.artifact.tokenizer import (
    is_sorted_token_ids,
    scores_from_keys,
    sorted_token_ids,
)
from curta_chain.constants import MAX_SECTION_SIZE, MAX_SECTIONS
from curta_chain.errors import ArtifactError

Fail = Callable[[str], NoReturn]


def read_artifact(path: str | os.PathLike[str]) -> Artifact:
    """Read and decode the artifact file at ``path``.

    Raises:
        ArtifactError: the file cannot be read or breaks a rule of the format.
    """
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise ArtifactError(f"{path}: cannot read: {exc.strerror}") from exc
    if data[: len(TAG)] != TAG:
        # A file that is another format curta-chain reads is named, with the way to an artifact.
        if data[: len(TEZW_MAGIC)] == TEZW_MAGIC:
            raise ArtifactError(
                f"{path}: this is a TEZW file, not a CURTAW01 artifact: run "
                f"`curta-chain convert {path} -o OUT.curta` first"
            )
        if is_checkpoint(data):
            raise ArtifactError(
                f"{path}: this is a llama2.c checkpoint, not a CURTAW01 artifact: run "
                f"`curta-chain convert {path} TOKENIZER -o OUT.curta` first"
            )
    return decode_artifact(data, str(path))


def decode_artifact(data: bytes, source: str = "<bytes>") -> Artifact:
    """Decode and fully validate the bytes of an artifact.

    Args:
        data: the whole file.
        source: names the bytes in error messages (a path, usually).

    Raises:
        ArtifactError: the first rule of the spec the bytes break.
    """
    data = bytes(data)

    def fail(message: str) -> NoReturn:
        raise ArtifactError(f"{source}: {message}")

    config, count, blocks, inv_sqrt = _header(data, fail)
    sections = _section_table(data, count, fail)
    _blocks(config, blocks, sections[0], fail)
    _tables(data, config, blocks, fail)
    descriptors = _matrix_table(data, config, sections, fail)
    starts = [sum(sections[:i]) for i in range(count)]
    for index, desc in enumerate(descriptors):
        if index != 1 or desc != descriptors[0]:
            _rows(data, index, desc, starts[desc.section], fail)
    _tokenizer(data, config, blocks, sections[0], fail)
    return Artifact(
        config=config,
        data=data,
        section_lengths=tuple(sections),
        matrices=descriptors,
        blocks=blocks,
        inv_sqrt_head_size=inv_sqrt,
        source=source,
    )


def _u32(data: bytes, offset: int) -> int:
    return struct.unpack_from("<I", data, offset)[0]


def shown_bytes(raw: bytes) -> str:
    """Bytes as a person reads them: printable ASCII as text, anything else in hex."""
    if raw and all(0x20 < b < 0x7F for b in raw):
        return raw.decode("ascii")
    return f"{raw.hex(' ')} (hex)" if raw else "nothing"


def _expect_zero(data: bytes, start: int, end: int, what: str, fail: Fail) -> None:
    region = np.frombuffer(data, dtype=np.uint8, count=end - start, offset=start)
    if region.any():
        at = start + int(np.argmax(region != 0))
        fail(f"byte {at:,} ({what}): {data[at]:#04x}, expected zero")


def _header(data: bytes, fail: Fail) -> tuple[ModelConfig, int, tuple[int, ...], int]:
    if len(data) < HEADER_SIZE:
        fail(f"{len(data):,} bytes, shorter than the {HEADER_SIZE:,}-byte header")
    if data[: len(TAG)] != TAG:
        fail(f"byte 0 (tag): {shown_bytes(data[: len(TAG)])}, expected {TAG.decode()}")
    config = ModelConfig(*struct.unpack_from("<7I", data, CONFIG_OFFSET))
    problem = config.problem()
    if problem:
        field, what = problem
        at = next(byte for name, byte, *_ in CONFIG_FIELDS if name == field)
        fail(f"header byte {at} ({field}): {what}")
    count = _u32(data, SECTION_COUNT_OFFSET)
    if not 2 <= count <= MAX_SECTIONS:
        fail(
            f"header byte {SECTION_COUNT_OFFSET} (section count): {count}, "
            f"expected 2 to {MAX_SECTIONS}"
        )
    if count != config.section_count:
        weights = config.matrix_weight_count
        side = "under" if weights < SPLIT_WEIGHT_COUNT else "at least"
        fail(
            f"header byte {SECTION_COUNT_OFFSET} (section count): {count}, expected "
            f"{config.section_count} ({weights:,} matrix weights is {side} "
            f"{SPLIT_WEIGHT_COUNT:,}, with {config.n_layers} layers)"
        )
    blocks = struct.unpack_from("<7I", data, BLOCK_OFFSETS_OFFSET)
    inv_sqrt = _u32(data, INV_SQRT_OFFSET)
    want = inv_sqrt_head_size(config)
    # Within one unit: a conforming converter may round the last bit differently.
    if abs(inv_sqrt - want) > 1:
        fail(
            f"header byte {INV_SQRT_OFFSET} (inverse square root of the head size): "
            f"{inv_sqrt:,}, expected {want:,} (1/sqrt({config.head_size}) with 24 fractional bits)"
        )
    _expect_zero(data, HEADER_FIELDS_END, SECTION_TABLE_OFFSET, "unused header", fail)
    return config, count, blocks, inv_sqrt


def _section_table(data: bytes, count: int, fail: Fail) -> list[int]:
    lengths: list[int] = []
    end = 0
    for index in range(count):
        at = SECTION_TABLE_OFFSET + SECTION_ENTRY_SIZE * index
        offset, length = struct.unpack_from("<QQ", data, at)
        if offset != end:
            fail(
                f"header byte {at} (section {index} offset): {offset:,}, expected {end:,} "
                "(sections follow one another from byte 0)"
            )
        low = HEADER_SIZE if index == 0 else 1
        if not low <= length <= MAX_SECTION_SIZE:
            fail(
                f"header byte {at + 8} (section {index} length): {length:,}, "
                f"expected {low:,} to {MAX_SECTION_SIZE:,}"
            )
        lengths.append(length)
        end += length
    table_end = SECTION_TABLE_OFFSET + SECTION_ENTRY_SIZE * count
    _expect_zero(data, table_end, MATRIX_TABLE_OFFSET, "unused section table", fail)
    if end != len(data):
        state = "truncated" if end > len(data) else f"{len(data) - end:,} trailing bytes"
        fail(f"the sections end at byte {end:,} but the file is {len(data):,} bytes ({state})")
    return lengths


def _blocks(config: ModelConfig, blocks: tuple[int, ...], length0: int, fail: Fail) -> None:
    for index, (name, got, want) in enumerate(
        zip(BLOCK_NAMES, blocks, plan_blocks(config), strict=True)
    ):
        field = f"header byte {BLOCK_OFFSETS_OFFSET + 4 * index} ({name} offset)"
        if got < HEADER_SIZE:
            fail(f"{field}: {got:,} points into the header, expected {want:,}")
        if got > length0:
            fail(f"{field}: {got:,} points past section zero's {length0:,} bytes")
        if got != want:
            fail(f"{field}: {got:,}, expected {want:,} (the blocks sit back to back)")


def _tables(data: bytes, config: ModelConfig, blocks: tuple[int, ...], fail: Fail) -> None:
    """The rotary, exponential and SiLU tables, which the configuration fixes, within one unit.

    A conforming converter may round a transcendental's last bit differently, so each
    entry may differ from the formula's rounding by one; more means a corrupted table.
    """
    head = config.head_size

    def rotary_entry(i: int) -> tuple[str, str]:
        position, within = divmod(i, head)
        pair, kind = divmod(within, 2)
        what = f"rotary position {position} pair {pair} {('cosine', 'sine')[kind]}"
        angle = f"{position}/10000^({2 * pair}/{head})"
        return what, f"{('cos', 'sin')[kind]}({angle}) with 24 fractional bits"

    def exp_entry(i: int) -> tuple[str, str]:
        return f"exponential table entry {i}", f"e^(-{i}/256) with 30 fractional bits"

    def silu_entry(i: int) -> tuple[str, str]:
        return f"SiLU table entry {i}", f"SiLU({i}/128 - 16) with 16 fractional bits"

    for block, dtype, want, entry in (
        (1, "<i4", rotary_table(config), rotary_entry),
        (2, "<u4", exp_table(), exp_entry),
        (3, "<i4", silu_table(), silu_entry),
    ):
        got = np.frombuffer(data, dtype=dtype, count=want.size, offset=blocks[block])
        off = np.abs(got.astype(np.int64) - want.astype(np.int64)) > 1
        if off.any():
            i = int(np.argmax(off))
            what, formula = entry(i)
            fail(
                f"byte {blocks[block] + 4 * i:,} ({what}): {int(got[i]):,}, expected "
                f"{int(want[i]):,} ± 1 ({formula})"
            )


def _matrix_table(
    data: bytes, config: ModelConfig, sections: list[int], fail: Fail
) -> tuple[MatrixDescriptor, ...]:
    count = config.matrix_count
    got = [
        MatrixDescriptor(
            *struct.unpack_from(DESCRIPTOR_FORMAT, data, MATRIX_TABLE_OFFSET + DESCRIPTOR_SIZE * i)
        )
        for i in range(count)
    ]
    table_end = MATRIX_TABLE_OFFSET + DESCRIPTOR_SIZE * count
    _expect_zero(data, table_end, HEADER_SIZE, "unused matrix table", fail)
    tied = got[1] == got[0]
    if not tied and (got[1].section, got[1].offset) == (got[0].section, got[0].offset):
        fail(
            f"header byte {MATRIX_TABLE_OFFSET + DESCRIPTOR_SIZE} (classifier descriptor): "
            "shares the embedding's bytes but is not a copy of its descriptor"
        )
    for index, (desc, want) in enumerate(zip(got, plan_matrices(config, tied), strict=True)):
        at = MATRIX_TABLE_OFFSET + DESCRIPTOR_SIZE * index
        name = f"matrix {index} ({matrix_name(index)})"
        for field, shift in (("section", 0), ("columns", 4), ("rows", 8)):
            if getattr(desc, field) != getattr(want, field):
                fail(
                    f"header byte {at + shift} ({name} {field}): {getattr(desc, field)}, "
                    f"expected {getattr(want, field)}"
                )
        if desc.row_bytes != want.row_bytes:
            fail(
                f"header byte {at + 12} ({name} row length): {desc.row_bytes}, expected "
                f"{want.row_bytes} (columns plus 8, rounded up to a multiple of 8)"
            )
        if desc.offset % 8:
            fail(f"header byte {at + 16} ({name} offset): {desc.offset:,}, not a multiple of 8")
        if desc.end > sections[desc.section]:
            fail(
                f"header byte {at + 16} ({name} offset): bytes {desc.offset:,} to {desc.end:,} "
                f"cross the end of section {desc.section} ({sections[desc.section]:,} bytes)"
            )
        if desc.offset != want.offset:
            fail(
                f"header byte {at + 16} ({name} offset): {desc.offset:,}, expected "
                f"{want.offset:,} (matrices are packed in table order)"
            )
    for index, want_length in enumerate(matrix_section_lengths(config, tied), start=1):
        if sections[index] != want_length:
            fail(
                f"header byte {SECTION_TABLE_OFFSET + SECTION_ENTRY_SIZE * index + 8} "
                f"(section {index} length): {sections[index]:,}, expected {want_length:,} "
                "(a section ends with its last matrix)"
            )
    return tuple(got)


def _rows(data: bytes, index: int, desc: MatrixDescriptor, start: int, fail: Fail) -> None:
    base = start + desc.offset
    rows = np.frombuffer(data, dtype=np.uint8, count=desc.size, offset=base)
    rows = rows.reshape(desc.rows, desc.row_bytes)
    name = f"matrix {index} ({matrix_name(index)})"
    end = ROW_PREFIX + desc.columns

    def first(mask: np.ndarray, column: int) -> tuple[int, int]:
        row, col = divmod(int(np.argmax(mask)), mask.shape[1])
        return row, base + row * desc.row_bytes + column + col

    scales = np.ascontiguousarray(rows[:, :4]).view("<u4")
    if not scales.all():
        row, at = first(scales == 0, 0)
        fail(f"byte {at:,} ({name} row {row} scale): 0, expected at least 1")
    zero = rows[:, 4:ROW_PREFIX]
    if zero.any():
        row, at = first(zero != 0, 4)
        fail(f"byte {at:,} ({name} row {row} bytes 4 to 7): {data[at]:#04x}, expected zero")
    weights = rows[:, ROW_PREFIX:end]
    if not weights.all():
        row, at = first(weights == 0, ROW_PREFIX)
        fail(
            f"byte {at:,} ({name} row {row} weight {at - base - row * desc.row_bytes - 8}): "
            "0, a weight of -128, expected 1 to 255 (weights are -127 to 127 plus 128)"
        )
    padding = rows[:, end:]
    if padding.size and (padding != WEIGHT_BIAS).any():
        row, at = first(padding != WEIGHT_BIAS, end)
        fail(f"byte {at:,} ({name} row {row} padding): {data[at]}, expected 128")


def _tokenizer(
    data: bytes, config: ModelConfig, blocks: tuple[int, ...], length0: int, fail: Fail
) -> None:
    vocab = config.vocab_size
    entries = np.frombuffer(data, dtype="<u4", count=4 * vocab, offset=blocks[4]).reshape(-1, 4)
    keys, lengths, offsets = (entries[:, i].astype(np.int64) for i in range(3))

    def field(token: int, shift: int) -> str:
        return f"byte {blocks[4] + TOKEN_ENTRY_SIZE * token + shift:,} (token {token}"

    if entries[:, 3].any():
        token = int(np.argmax(entries[:, 3] != 0))
        fail(f"{field(token, 12)} bytes 12 to 15): {entries[token, 3]}, expected zero")
    if (lengths > MAX_TOKEN_LENGTH).any():
        token = int(np.argmax(lengths > MAX_TOKEN_LENGTH))
        fail(f"{field(token, 4)} length): {lengths[token]}, expected at most {MAX_TOKEN_LENGTH}")
    outside = (offsets < blocks[6]) | (offsets + lengths > length0)
    if outside.any():
        token = int(np.argmax(outside))
        fail(
            f"{field(token, 8)} string offset): bytes {offsets[token]:,} to "
            f"{offsets[token] + lengths[token]:,} lie outside the token strings "
            f"({blocks[6]:,} to {length0:,})"
        )
    expected = blocks[6] + np.cumsum(lengths) - lengths
    if (offsets != expected).any():
        token = int(np.argmax(offsets != expected))
        fail(
            f"{field(token, 8)} string offset): {offsets[token]:,}, expected "
            f"{expected[token]:,} (token strings follow one another in id order)"
        )
    finite = np.isfinite(scores_from_keys(keys.astype(np.uint32)))
    if not finite.all():
        token = int(np.argmax(~finite))
        fail(f"{field(token, 0)} score key): {keys[token]:#010x}, not the key of a finite score")
    strings_end = blocks[6] + int(lengths.sum())
    if length0 != round_up(strings_end, 8):
        fail(
            f"header byte {SECTION_TABLE_OFFSET + 8} (section 0 length): {length0:,}, expected "
            f"{round_up(strings_end, 8):,} (token strings end at {strings_end:,}, padded to 8)"
        )
    _expect_zero(data, strings_end, length0, "section zero padding", fail)
    ids = np.frombuffer(data, dtype="<u4", count=vocab, offset=blocks[5])
    if not is_sorted_token_ids(ids, data, offsets, lengths):
        tokens = [data[o : o + n] for o, n in zip(offsets.tolist(), lengths.tolist(), strict=True)]
        want = sorted_token_ids(tokens)  # the sort names the first wrong slot
        slot = int(np.argmax(ids != want))
        fail(
            f"byte {blocks[5] + 4 * slot:,} (sorted token id {slot}): {ids[slot]}, expected "
            f"{want[slot]} (ids sorted by token bytes, equal strings by id)"
        )
