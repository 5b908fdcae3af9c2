"""The artifact's tokenizer against llama2.c's own algorithm on the full 32k Llama 2 vocabulary."""

import dataclasses
import struct

import numpy as np
import pytest

from curta_chain.artifact import decode_artifact, encode_parts
from curta_chain.errors import PromptError
from curta_chain.inference import Tokenizer

TRICKY = [
    "Once upon a time",
    "Hello world",
    "  two leading spaces",
    "trailing spaces   ",
    " ",
    "a",
    "naïve café, Ünïcödé — “quotes” ½",
    "日本語のテキスト、中文字符",
    "emoji 😀🚀 and 🧑‍💻 joined",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ꙮ ᚠᛇᚻ",  # characters with no token: byte fallback
    "tabs\tand\nnewlines\r\n",
    "<0x41> is not a byte here, nor <s> a special",
    "3.14159 + 2,718 = 5.85 %",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "The quick brown fox jumps over the lazy dog. " * 4,
    "\x01\x7f control",
]


def llama2c_vocabulary(data: bytes) -> tuple[list[bytes], list[float]]:
    pos, tokens, scores = 4, [], []
    while pos < len(data):
        score, length = struct.unpack_from("<fI", data, pos)
        tokens.append(data[pos + 8 : pos + 8 + length])
        scores.append(score)
        pos += 8 + length
    return tokens, scores


def llama2c_encode(text: bytes, vocab: list[bytes], scores: list[float]) -> list[int]:
    """run.c's encode(bos=1, eos=0), transliterated: float scores, one pair scan per merge."""
    index: dict[bytes, int] = {}
    for token_id, token in enumerate(vocab):
        index.setdefault(token, token_id)
    tokens = [1]
    if text:
        tokens.append(index[b" "])
    buffer = b""
    for i, byte in enumerate(text):
        if byte & 0xC0 != 0x80:
            buffer = b""
        buffer += bytes([byte])
        following = text[i + 1] if i + 1 < len(text) else 0
        if following & 0xC0 == 0x80 and len(buffer) < 4:
            continue
        found = index.get(buffer)
        tokens.extend([found] if found is not None else [b + 3 for b in buffer])
        buffer = b""
    while True:
        best_score, best_id, best_index = -1e10, -1, -1
        for i in range(len(tokens) - 1):
            found = index.get(vocab[tokens[i]] + vocab[tokens[i + 1]])
            if found is not None and scores[found] > best_score:
                best_score, best_id, best_index = scores[found], found, i
        if best_index == -1:
            return tokens
        tokens[best_index : best_index + 2] = [best_id]


@pytest.fixture(scope="module")
def reference(tokenizer_bin):
    return llama2c_vocabulary(tokenizer_bin)


def random_texts(count: int) -> list[str]:
    rng = np.random.default_rng(9)
    pool = list(
        "abcdefghijklmnopqrstuvwxyz      ,.!?'\"-\nABCXYZ0123456789éüßçñ日本語中文字😀🚀ꙮ\t"
    )
    return ["".join(rng.choice(pool, size=int(rng.integers(1, 60)))) for _ in range(count)]


def test_encode_matches_llama2c_on_the_32k_vocabulary(tokenizer32k, reference):
    vocab, scores = reference
    assert list(tokenizer32k.tokens) == vocab
    for text in TRICKY + random_texts(300):
        assert tokenizer32k.encode(text) == llama2c_encode(text.encode(), vocab, scores), text


def test_encode_pieces(tokenizer32k):
    vocab = tokenizer32k.tokens
    ids = tokenizer32k.encode("Once upon a time")
    assert ids[0] == 1 and [vocab[i] for i in ids[1:]] == [b" Once", b" upon", b" a", b" time"]
    # A character with no token is its UTF-8 bytes, each as token byte + 3.
    assert tokenizer32k.lookup("ꙮ".encode()) is None
    assert tokenizer32k.encode("ꙮ")[-3:] == [b + 3 for b in "ꙮ".encode()]
    assert tokenizer32k.encode("") == [1]
    assert tokenizer32k.decode(tokenizer32k.encode("  x  y ")[1:]) == b"  x  y "


def test_decode_follows_llama2c(tokenizer32k):
    ids = tokenizer32k.encode("Once upon a time 😀ꙮ")
    assert tokenizer32k.decode(ids[1:]) == "Once upon a time 😀ꙮ".encode()
    assert tokenizer32k.decode(ids[2:], previous=ids[1]) == " upon a time 😀ꙮ".encode()
    assert tokenizer32k.piece(1, 3 + 0x41) == b"A"  # <0x41>
    assert tokenizer32k.piece(7, 3 + 0x20) == b" "
    assert tokenizer32k.piece(5, 1) == b"" and tokenizer32k.piece(5, 2) == b""
    assert tokenizer32k.piece(5, 0) == b"<unk>"
    for token_id, token in enumerate(tokenizer32k.tokens):
        if not 3 <= token_id < 259 and token_id > 2:
            assert tokenizer32k.piece(5, token_id) == token


def test_non_utf8_prompts_are_refused(tokenizer32k):
    text = b"caf\xe9".decode("utf-8", errors="surrogateescape")
    with pytest.raises(PromptError, match=r"the prompt is not valid UTF-8 \(character 3"):
        tokenizer32k.encode(text)


def test_the_stand_in_vocabulary_has_no_space_token(stories260k):
    # The first 512 Llama 2 tokens hold "  " but no " ": the prefix falls back to byte 0x20.
    tokenizer = Tokenizer.from_artifact(stories260k)
    assert tokenizer.lookup(b" ") is None
    assert tokenizer.encode("a")[:2] == [1, 3 + 0x20]
    assert tokenizer.decode(tokenizer.encode("hi there")[1:]) == b" hi there"


def test_lookup_finds_the_lowest_id_of_equal_strings(stories260k):
    tokens = list(stories260k.tokens())
    tokens[300] = tokens[400] = b"zq"
    data = encode_parts(dataclasses.replace(stories260k.parts(), tokens=tuple(tokens)))
    tokenizer = Tokenizer.from_artifact(decode_artifact(data))
    assert tokenizer.lookup(b"zq") == 300
    assert tokenizer.lookup(b"zz") is None


def pair_tokenizer(stories260k, ab: int, bc: int) -> Tokenizer:
    """Tokens a, b, c (304-306), ab (300), bc (301) and cab (303) with the given score keys."""
    tokens = list(stories260k.tokens())
    keys = stories260k.score_keys().copy()
    for token_id, token in enumerate((b"ab", b"bc", b"zzz", b"cab", b"a", b"b", b"c"), 300):
        tokens[token_id] = token
    keys[300], keys[301], keys[303] = ab, bc, 0x8000_0001
    parts = dataclasses.replace(stories260k.parts(), tokens=tuple(tokens), score_keys=keys)
    return Tokenizer.from_artifact(decode_artifact(encode_parts(parts)))


def test_merges_take_the_highest_key_then_the_leftmost(stories260k):
    a, b, c = 304, 305, 306
    assert pair_tokenizer(stories260k, 0x8000_0010, 0x8000_0010)._merge([a, b, c]) == [300, c]
    assert pair_tokenizer(stories260k, 0x8000_0010, 0x8000_0030)._merge([a, b, c]) == [a, 301]
    assert pair_tokenizer(stories260k, 0x7000_0000, 0x8000_0030)._merge([a, b, c]) == [a, 301]
    # A merge makes a new pair: "c" + "ab" is the token "cab".
    assert pair_tokenizer(stories260k, 0x8000_0010, 0x8000_0030)._merge([c, a, b]) == [303]
