"""Tokenizer pieces of the format: score keys, the sorted id list, the llama2.c reader."""

import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from curta_chain.artifact.layout import MAX_TOKEN_LENGTH
from curta_chain.errors import CheckpointError
from curta_chain.reporting import counted

SIGN_BIT = 0x8000_0000


def score_keys(scores: np.ndarray) -> np.ndarray:
    """Map float32 scores to u32 keys that order the same way the floats do.

    A score with its sign bit clear takes its bits with the top bit set; one with its sign
    bit set takes its bits inverted.
    """
    bits = np.asarray(scores, dtype="<f4").view("<u4")
    return np.where(bits & SIGN_BIT, ~bits, bits | SIGN_BIT).astype(np.uint32)


def scores_from_keys(keys: np.ndarray) -> np.ndarray:
    """Invert ``score_keys``: return the float32 scores the keys were made from."""
    keys = np.asarray(keys, dtype=np.uint32)
    bits = np.where(keys & SIGN_BIT, keys ^ SIGN_BIT, ~keys).astype("<u4")
    return bits.view("<f4")


def sorted_token_ids(tokens: Sequence[bytes]) -> np.ndarray:
    """Return every id sorted by its token's bytes; identical strings keep id order."""
    # Python's sort is stable, so equal strings stay in ascending id order.
    order = sorted(range(len(tokens)), key=tokens.__getitem__)
    return np.array(order, dtype=np.uint32)


def is_sorted_token_ids(
    ids: np.ndarray, data: bytes, offsets: np.ndarray, lengths: np.ndarray
) -> bool:
    """True when ``ids`` is ``sorted_token_ids`` of the tokens, checked without a sort.

    Token ``i`` is ``data[offsets[i] : offsets[i] + lengths[i]]``. ``ids`` must hold every
    id once, each adjacent pair in order: bytes ascending, ids ascending where the bytes are
    equal; that is the one sorted order. The bytes are compared as rows padded with zeros,
    the shorter row first where the padded rows are equal (a proper prefix, or equal
    strings): the same order as the strings'. Rows go a block at a time, to bound memory.
    """
    count = lengths.size
    if ids.size != count or (np.bincount(ids, minlength=count) != 1).any():
        return False  # not every id once (an id past the vocabulary makes bincount longer)
    raw = np.frombuffer(data, dtype=np.uint8)
    width = int(lengths.max(initial=0))
    columns = np.arange(width)
    ids = ids.astype(np.int64)
    for first in range(0, count - 1, _SORT_BLOCK):
        pair = ids[first : first + _SORT_BLOCK + 1]  # a block's rows and the next block's first
        inside = columns < lengths[pair, None]
        rows = np.where(inside, raw[offsets[pair, None] + np.where(inside, columns, 0)], 0)
        before, after = rows[:-1], rows[1:]
        differs = before != after
        at = differs.argmax(axis=1)
        step = np.arange(at.size)
        by_bytes = before[step, at] < after[step, at]
        shorter, longer = lengths[pair[:-1]], lengths[pair[1:]]
        by_length = (shorter < longer) | ((shorter == longer) & (pair[:-1] < pair[1:]))
        if not np.where(differs.any(axis=1), by_bytes, by_length).all():
            return False
    return True


_SORT_BLOCK = 4_096
"""Rows compared at once by ``is_sorted_token_ids`` (4,096 x 128 bytes at most)."""


@dataclass(frozen=True, eq=False)
class Vocabulary:
    """Tokens and their float32 merge scores, indexed by id."""

    tokens: tuple[bytes, ...]
    scores: np.ndarray


def parse_llama2c_tokenizer(
    data: bytes, vocab_size: int, source: str, cut: bool = False
) -> Vocabulary:
    """Parse a llama2.c tokenizer file holding exactly ``vocab_size`` tokens.

    The leading u32 (llama2.c sizes its buffers by it) must be 1 to 128 and at least the
    longest token's length. With ``cut``, a file holding more tokens gives its first
    ``vocab_size`` (as llama2.c itself reads only those).

    Raises:
        CheckpointError: the file does not match the format, or holds another count of
            tokens than the vocabulary.
    """
    if len(data) < 4:
        raise CheckpointError(f"{source}: {len(data)} bytes, truncated before the 4-byte header")
    (max_length,) = struct.unpack_from("<I", data, 0)
    if not 1 <= max_length <= MAX_TOKEN_LENGTH:
        raise CheckpointError(
            f"{source}: byte 0 (longest token length): {max_length}, "
            f"expected 1 to {MAX_TOKEN_LENGTH}"
        )
    tokens: list[bytes] = []
    scores = np.empty(vocab_size, dtype=np.float32)
    pos = 4
    for token_id in range(vocab_size):
        if pos + 8 > len(data):
            raise CheckpointError(
                f"{source}: truncated at byte {pos:,} in token {token_id}, "
                f"expected {vocab_size} tokens (the checkpoint's vocabulary)"
            )
        score, length = struct.unpack_from("<fI", data, pos)
        if not math.isfinite(score):
            raise CheckpointError(
                f"{source}: byte {pos:,} (score of token {token_id}): {score}, "
                "expected a finite float"
            )
        if length > max_length:
            limit = f"{max_length}, the file's longest token length"
            if max_length == MAX_TOKEN_LENGTH:
                limit = f"{MAX_TOKEN_LENGTH}, the format's limit"
            raise CheckpointError(
                f"{source}: byte {pos + 4:,} (length of token {token_id}): {length}, "
                f"expected at most {limit}"
            )
        pos += 8
        if pos + length > len(data):
            raise CheckpointError(
                f"{source}: truncated at byte {len(data):,} in the bytes of token {token_id}, "
                f"expected {vocab_size} tokens (the checkpoint's vocabulary)"
            )
        tokens.append(data[pos : pos + length])
        scores[token_id] = score
        pos += length
    if pos != len(data) and not cut:
        raise CheckpointError(
            f"{source}: {len(data) - pos:,} bytes after token {vocab_size - 1} at byte {pos:,}, "
            f"expected exactly {counted(vocab_size, 'token')} (the checkpoint's vocabulary); "
            f"if its first {vocab_size:,} are the model's, add --cut-tokenizer to the convert "
            "command to keep those"
        )
    return Vocabulary(tuple(tokens), scores)
