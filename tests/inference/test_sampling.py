"""Choosing tokens in integers, and a run's plan and loop."""

import numpy as np
import pytest

import curta_chain.inference.run as run_module
from curta_chain.artifact.tables import exp_table
from curta_chain.errors import ConfigError, PromptError
from curta_chain.inference import (
    SamplingSettings,
    Tokenizer,
    Xorshift64Star,
    generate,
    plan_run,
    q16,
    sample,
    teacher_forcing_logits,
)
from curta_chain.inference.sampling import weights

EXP = exp_table().astype(np.int64)


def test_xorshift64star_is_llama2c_generator_with_64_bit_output():
    # The same numbers as run.c's xorshift (state ^= >> 12, << 25, >> 27; × 0x2545F4914F6CDD1D)
    # started at 42 ^ 0x9E3779B97F4A7C15, compiled with clang: pinned for the program.
    rng = Xorshift64Star(42)
    assert [rng.next() for _ in range(3)] == [
        0x8328D7F03BCEC1A,
        0x77E7279E17AB6CD,
        0xC4E098F541BB09E,
    ]
    zero = Xorshift64Star(0)
    assert zero.state == 0x9E3779B97F4A7C15 and zero.next() == 0xD83B3E29A21487A
    assert Xorshift64Star(0x9E3779B97F4A7C15).state == 0x9E3779B97F4A7C15  # never a zero state
    with pytest.raises(ConfigError, match=r"seed -1: expected 0 to"):
        Xorshift64Star(-1)


@pytest.mark.parametrize(
    "text, want",
    [("1.0", 65_536), ("0.9", 58_982), ("0", 0), ("1", 65_536), ("0.00001", 1), ("2.5", 163_840)],
)
def test_q16_reads_decimals_exactly(text, want):
    assert q16(text, "--temperature", 2**22) == want


def test_q16_refuses_a_positive_value_that_would_read_as_zero():
    # 2^-17 is half a step: it rounds (ties to even) to 0, which would mean greedy.
    with pytest.raises(ConfigError, match=r"expected 0, or at least 1/65,536"):
        q16("0.00000762939453125", "--temperature", 2**22)


@pytest.mark.parametrize("text", ["abc", "nan", "inf", "-0.5", "1.5", ""])
def test_q16_refuses_what_is_not_a_number_in_range(text):
    with pytest.raises(ConfigError, match=r"^--top-p "):
        q16(text, "--top-p", 65_536)


def test_greedy_takes_the_lowest_of_equal_maxima_and_draws_nothing():
    rng = Xorshift64Star(5)
    before = rng.state
    logits = np.array([3, 9, -4, 9, 9], dtype=np.int64)
    assert sample(logits, SamplingSettings(temperature=0), EXP, rng) == 1
    assert rng.state == before


def test_weights_follow_temperature():
    logits = np.array([0, -(2**16), -(2**17), -(2**31)], dtype=np.int64)
    w1 = weights(logits, 65_536, EXP)
    assert w1.tolist()[:3] == [2**22, round(2**22 / np.e), round(2**22 / np.e**2)]
    assert w1[3] == 0
    w2 = weights(logits, 2 * 65_536, EXP)  # temperature 2 halves every distance
    assert w2[2] == w1[1]
    assert weights(np.array([2**31 - 1, -(2**31)]), 1, EXP).tolist() == [2**22, 0]


def test_nucleus_keeps_the_shortest_heaviest_prefix():
    # Weights 2^22 e^-i: cumulative shares 0.632, 0.865, 0.953, 0.983, ... of the total.
    logits = -np.arange(6, dtype=np.int64) * 2**16
    w = weights(logits, 65_536, EXP)
    total = int(w.sum())
    for top_p, kept in [(0.5, 1), (0.8, 2), (0.95, 3), (0.96, 4)]:
        p = q16(str(top_p), "--top-p", 65_536)
        cumulative = np.cumsum(w)
        assert int(np.argmax(cumulative * 65_536 > p * total)) + 1 == kept
        rng = Xorshift64Star(1)
        settings = SamplingSettings(temperature=65_536, top_p=p)
        seen = {sample(logits[::-1], settings, EXP, rng) for _ in range(300)}
        assert seen == {5 - i for i in range(kept)}  # reversed: the heaviest ids are the last


def test_sampling_draws_in_proportion_to_the_weights():
    logits = np.array([0, 0, -45_426, -(2**20)], dtype=np.int64)  # weights 1, 1, 1/2, 0
    rng = Xorshift64Star(3)
    settings = SamplingSettings(temperature=65_536, top_p=0)
    counts = np.bincount([sample(logits, settings, EXP, rng) for _ in range(5_000)], minlength=4)
    assert abs(counts[0] / 5_000 - 0.4) < 0.03 and abs(counts[2] / 5_000 - 0.2) < 0.03
    assert counts[3] == 0


def test_sampling_is_reproducible_from_its_seed():
    logits = np.random.default_rng(0).integers(-(2**18), 2**18, 512)
    settings = SamplingSettings(temperature=52_429, top_p=58_982, seed=11)

    def draws(seed: int) -> list[int]:
        rng = Xorshift64Star(seed)
        return [sample(logits, settings, EXP, rng) for _ in range(50)]

    assert draws(11) == draws(11)
    assert draws(11) != draws(12)


def test_plan_refuses_what_does_not_fit(stories260k, model260k):
    tokenizer = Tokenizer.from_artifact(stories260k)
    cases = [
        ("x" * 600, None, r"the prompt is 602 tokens, longer than the model's context of 512"),
        ("x" * 510, None, r"the prompt's 512 tokens fill the model's context of 512"),
        ("hello", 0, r"--steps 0: expected at least 1"),
        ("hello", 600, r"--steps 600: the prompt's 7 tokens and 600 new ones are past the model's "
                       r"context of 512 \(at most 505 new tokens\)"),
        (b"\xff".decode("utf-8", errors="surrogateescape"), 5, r"the prompt is not valid UTF-8"),
    ]  # fmt: skip
    for prompt, steps, message in cases:
        with pytest.raises(PromptError, match=message):
            plan_run(model260k, tokenizer, prompt, steps)
    plan = plan_run(model260k, tokenizer, "hello", None)
    assert len(plan.prompt_ids) == 7 and plan.max_tokens == 256
    assert plan_run(model260k, tokenizer, "x" * 300, None).max_tokens == 512 - 302
    assert plan_run(model260k, tokenizer, "hello", 505).max_tokens == 505
    empty = plan_run(model260k, tokenizer, "", None)  # run.c with no -i: the opening token
    assert empty.prompt_ids == (1,) and empty.max_tokens == 256


def test_greedy_runs_are_deterministic_and_follow_teacher_forcing(stories260k, model260k):
    tokenizer = Tokenizer.from_artifact(stories260k)
    plan = plan_run(model260k, tokenizer, "Once upon a time", 40)
    first = list(generate(model260k, plan, SamplingSettings(temperature=0)))
    assert first == list(generate(model260k, plan, SamplingSettings(temperature=0, seed=9)))
    logits = teacher_forcing_logits(model260k, [*plan.prompt_ids, *first])
    predicted = logits.argmax(axis=1)[len(plan.prompt_ids) - 1 : -1]
    assert predicted.tolist() == first


def test_seeded_runs_repeat(stories260k, model260k):
    tokenizer = Tokenizer.from_artifact(stories260k)
    plan = plan_run(model260k, tokenizer, "Once upon a time", 40)
    settings = SamplingSettings(temperature=65_536, top_p=58_982, seed=2024)
    first = list(generate(model260k, plan, settings))
    assert first == list(generate(model260k, plan, settings))
    other = list(
        generate(model260k, plan, SamplingSettings(temperature=65_536, top_p=58_982, seed=2025))
    )
    assert first != other


@pytest.mark.parametrize("stop", [1, 2])
def test_a_generated_stop_token_ends_the_run(stories260k, model260k, monkeypatch, stop):
    tokens = iter([40, 41, stop, 42])
    monkeypatch.setattr(run_module, "sample", lambda *args: next(tokens))
    tokenizer = Tokenizer.from_artifact(stories260k)
    plan = plan_run(model260k, tokenizer, "hi", 10)
    assert list(generate(model260k, plan, SamplingSettings(temperature=0))) == [40, 41, stop]
