import struct

import numpy as np
import pytest

from curta_chain.artifact.tokenizer import (
    is_sorted_token_ids,
    parse_llama2c_tokenizer,
    score_keys,
    scores_from_keys,
    sorted_token_ids,
)
from curta_chain.errors import CheckpointError


def tokenizer(entries, longest=None):
    longest = max(len(t) for _, t in entries) if longest is None else longest
    out = struct.pack("<I", longest)
    for score, token in entries:
        out += struct.pack("<fI", score, len(token)) + token
    return out


def test_score_keys_order_like_the_floats_and_invert():
    scores = np.array([-1e9, -3.5, -1.0, -0.0, 0.0, 1e-30, 2.0, 1e30], dtype=np.float32)
    keys = score_keys(scores)
    assert keys.dtype == np.uint32
    assert list(np.argsort(keys, kind="stable")) == list(range(len(scores)))
    assert keys[4] == 0x8000_0000  # +0.0: its bits with the top bit set
    assert keys[3] == 0x7FFF_FFFF  # -0.0: its bits inverted
    assert scores_from_keys(keys).tobytes() == scores.tobytes()


def test_sorted_ids_compare_bytes_and_keep_equal_strings_in_id_order():
    tokens = [b"b", b"a", b"ab", b"", b"a", b"\xff", b"B"]
    assert sorted_token_ids(tokens).tolist() == [3, 6, 1, 4, 2, 0, 5]


def as_block(tokens):
    """The tokens back to back, as section zero's token strings, with offsets and lengths."""
    lengths = np.array([len(t) for t in tokens], dtype=np.int64)
    return b"".join(tokens), np.cumsum(lengths) - lengths, lengths


def test_the_sorted_order_is_checked_without_a_sort():
    rng = np.random.default_rng(5)
    # Prefixes, equal strings, zero bytes (the padding's value) and the empty string, over
    # more tokens than one block of the check.
    pieces = [b"", b"\x00", b"a", b"a\x00", b"a\x00b", b"ab", b"b", b"\xff", b"\xff\x00"]
    tokens = [pieces[i] + bytes(rng.integers(0, 3, size=rng.integers(0, 3), dtype=np.uint8))
              for i in rng.integers(0, len(pieces), size=9_000)]  # fmt: skip
    data, offsets, lengths = as_block(tokens)
    ids = sorted_token_ids(tokens)
    assert is_sorted_token_ids(ids, data, offsets, lengths)
    for at in (0, 17, 4_095, 4_096, 8_998):  # each pair swapped, block edges included
        swapped = ids.copy()
        swapped[[at, at + 1]] = swapped[[at + 1, at]]
        assert not is_sorted_token_ids(swapped, data, offsets, lengths), at
    twice = ids.copy()
    twice[3] = twice[4]  # an id twice, another never
    assert not is_sorted_token_ids(twice, data, offsets, lengths)
    past = ids.copy()
    past[np.argmax(ids == ids.max())] = len(tokens)  # an id past the vocabulary
    assert not is_sorted_token_ids(past, data, offsets, lengths)


def test_parse_reads_every_token():
    data = tokenizer([(0.0, b"<unk>"), (-1.5, b" the"), (2.0, b"")])
    vocabulary = parse_llama2c_tokenizer(data, 3, "t.bin")
    assert vocabulary.tokens == (b"<unk>", b" the", b"")
    assert vocabulary.scores.tolist() == [0.0, -1.5, 2.0]


def test_the_leading_length_may_exceed_the_longest_token():
    data = tokenizer([(0.0, b"ab")], longest=27)
    assert parse_llama2c_tokenizer(data, 1, "t.bin").tokens == (b"ab",)


ONE = [(0.0, b"a")]
TWO = [(0.0, b"a"), (0.0, b"bc")]


@pytest.mark.parametrize(
    ("data", "count", "message"),
    [
        (b"\x01\x00", 1, r"^t.bin: 2 bytes, truncated before the 4-byte header$"),
        (tokenizer(ONE, longest=0), 1, r"byte 0 \(longest token length\): 0, expected 1 to 128"),
        (tokenizer(ONE, longest=129), 1, r"byte 0 \(longest token length\): 129"),
        (
            tokenizer([(0.0, b"a" * 20)], longest=16),
            1,
            r"byte 8 \(length of token 0\): 20, expected at most 16, the file's longest",
        ),
        (
            tokenizer([(0.0, b"a" * 129)], longest=128),
            1,
            r"\(length of token 0\): 129, expected at most 128, the format's limit",
        ),
        (
            tokenizer([(0.0, b"a"), (float("nan"), b"b")]),
            2,
            r"byte 13 \(score of token 1\): nan, expected a finite float",
        ),
        (tokenizer([(0.0, b"a"), (float("-inf"), b"b")]), 2, r"\(score of token 1\): -inf"),
        (tokenizer(ONE), 2, r"truncated at byte 13 in token 1, expected 2 tokens"),
        (tokenizer(TWO)[:-1], 2, r"truncated at byte 22 in the bytes of token 1"),
        (tokenizer(TWO), 1, r"10 bytes after token 0 at byte 13, expected exactly 1 token"),
    ],
)
def test_parse_refuses_anything_but_the_exact_format(data, count, message):
    with pytest.raises(CheckpointError, match=message):
        parse_llama2c_tokenizer(data, count, "t.bin")
