"""The whole pass: bit for bit against the plain-integer transliteration, in any grouping."""

import int_reference as ref
import numpy as np
import pytest

from curta_chain.artifact.llama2c import parse_checkpoint
from curta_chain.errors import PromptError
from curta_chain.inference import (
    FloatReference,
    IntModel,
    KVCache,
    dequantize,
    forward,
    teacher_forcing_logits,
)

SEQUENCE = [1, 300, 45, 511, 259, 3, 87, 402, 402, 17, 260, 2, 99, 150, 201, 333]


def test_matches_the_plain_integer_transliteration(stories260k, model260k):
    plain = ref.Model(stories260k)
    want = [plain.step(token) for token in SEQUENCE[:6]]
    got = teacher_forcing_logits(model260k, SEQUENCE[:6])
    assert got.tolist() == want


def test_the_largest_shapes_saturate_without_leaving_64_bits(widest):
    # Every intermediate of the transliteration is checked against i64 as it is made.
    plain = ref.Model(widest)
    want = [plain.step(token) for token in (1, 200)]
    got = teacher_forcing_logits(IntModel.from_artifact(widest), [1, 200])
    assert got.tolist() == want
    assert {-(2**31), 2**31 - 1} & set(np.unique(got).tolist())  # it does saturate


def test_positions_give_the_same_bits_however_they_are_grouped(model260k):
    sequence = (SEQUENCE * 5)[:72]
    whole = teacher_forcing_logits(model260k, sequence)
    assert whole.dtype == np.int32 and whole.shape == (72, 512)
    cache = KVCache.empty(model260k)
    one_by_one = [forward(model260k, cache, [token])[0] for token in sequence[:20]]
    assert np.array_equal(np.array(one_by_one), whole[:20])
    cache = KVCache.empty(model260k)
    chunks = [
        forward(model260k, cache, sequence[a:b], all_logits=True)
        for a, b in ((0, 5), (5, 6), (6, 40), (40, 72))
    ]
    assert np.array_equal(np.concatenate(chunks), whole)
    last = forward(model260k, KVCache.empty(model260k), sequence)
    assert np.array_equal(last[0], whole[-1])


def test_top1_agrees_with_the_float_pass_on_the_same_weights(
    stories260k, stories260k_bytes, model260k
):
    deq = FloatReference(dequantize(stories260k))
    original = FloatReference(parse_checkpoint(stories260k_bytes, "stories260K.bin"))
    rng = np.random.default_rng(0)
    agree_deq = agree_original = total = 0
    for _ in range(2):
        sequence = [1]
        cache = original.empty_cache()
        while len(sequence) < 160:
            logits = original.forward(cache, [sequence[-1]])[0]
            p = np.exp(logits - logits.max())
            sequence.append(int(rng.choice(p.size, p=p / p.sum())))
        ours = teacher_forcing_logits(model260k, sequence).argmax(axis=1)
        agree_deq += int((ours == deq.teacher_forcing_logits(sequence).argmax(axis=1)).sum())
        agree_original += int(
            (ours == original.teacher_forcing_logits(sequence).argmax(axis=1)).sum()
        )
        total += len(sequence)
    assert agree_deq / total >= 0.95
    assert agree_original / total >= 0.75  # int8 quantization's share: see bench_run.py
    floats = deq.teacher_forcing_logits(SEQUENCE)
    assert np.abs(teacher_forcing_logits(model260k, SEQUENCE) / 2**16 - floats).max() < 0.05


@pytest.mark.parametrize(
    "tokens, message",
    [
        ([], r"no tokens to run"),
        ([1] * 513, r"513 positions, more than the model's context of 512"),
        ([1, 512], r"token 1 is 512, outside the vocabulary 0 to 511"),
        ([1, -1], r"token 1 is -1, outside the vocabulary"),
    ],
)
def test_bad_token_sequences_are_refused(model260k, tokens, message):
    with pytest.raises(PromptError, match=message):
        teacher_forcing_logits(model260k, tokens)


def test_a_full_context_then_one_more_is_refused(model260k):
    cache = KVCache.empty(model260k)
    forward(model260k, cache, [5] * 512)
    with pytest.raises(PromptError, match=r"513 positions"):
        forward(model260k, cache, [5])
