"""Choosing the next token from integer logits: greedy, or seeded sampling with top-p.

All integers, as ``docs/inference.md`` defines them:

- Temperature and top-p are Q16 (``round(value × 65,536)``); temperature 0 is greedy.
- Greedy: the largest logit, the lowest id among equal maxima. It draws no random number.
- Sampling: with ``m`` the largest logit, token ``t`` weighs
  ``exp_weights(((m - logit_t) << 16) // temperature)`` (Q22, the exponential table
  interpolated); ``Z`` is the sum of the weights.
- Top-p, when 0 < top_p < 65,536: order the ids by weight, heaviest first, equal weights
  by ascending id; the nucleus is the shortest prefix whose weight sum ``C`` satisfies
  ``C × 65,536 > top_p × Z``. Otherwise the nucleus is every id.
- One draw ``u`` of the generator, ``r = u mod W`` with ``W`` the nucleus's weight sum;
  the token is the first nucleus id, in ascending id order, whose running weight sum
  exceeds ``r``.
- The generator is xorshift64* (llama2.c's, 64-bit output): ``s ^= s >> 12;
  s ^= s << 25; s ^= s >> 27`` (mod 2^64), output ``s × 0x2545F4914F6CDD1D mod 2^64``.
  Its state starts at ``seed ^ 0x9E3779B97F4A7C15``, or that constant if this is zero.
"""

from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation

import numpy as np

from curta_chain.errors import ConfigError
from curta_chain.inference.fixed import ACT_BITS, exp_weights

ONE: int = 1 << 16
"""1.0 in Q16, the format of temperature and top-p."""
MAX_TEMPERATURE = 100
"""The largest temperature the command line takes."""
MASK64 = (1 << 64) - 1
GOLDEN = 0x9E37_79B9_7F4A_7C15
MULTIPLIER = 0x2545_F491_4F6C_DD1D


class Xorshift64Star:
    """llama2.c's xorshift64* generator, returning all 64 bits of each output."""

    def __init__(self, seed: int):
        """Start from ``seed`` (a u64)."""
        if not 0 <= seed <= MASK64:
            raise ConfigError(f"seed {seed}: expected 0 to {MASK64}")
        self.state = (seed ^ GOLDEN) or GOLDEN

    def next(self) -> int:
        """Advance and return the next u64."""
        s = self.state
        s ^= s >> 12
        s ^= (s << 25) & MASK64
        s ^= s >> 27
        self.state = s
        return (s * MULTIPLIER) & MASK64


@dataclass(frozen=True)
class SamplingSettings:
    """How to choose tokens: Q16 temperature (0 = greedy), Q16 top-p, and the seed."""

    temperature: int = ONE
    top_p: int = 58_982  # 0.9
    seed: int = 0

    @property
    def greedy(self) -> bool:
        """Temperature zero: take the largest logit."""
        return self.temperature == 0

    @property
    def nucleus(self) -> bool:
        """Top-p applies: 0 < top_p < 1.0."""
        return 0 < self.top_p < ONE

    def to_json(self) -> dict[str, object]:
        """The settings as JSON values (Q16 integers and their decimal reading)."""
        return {
            "temperature_q16": self.temperature,
            "temperature": self.temperature / ONE,
            "top_p_q16": self.top_p,
            "top_p": self.top_p / ONE,
            "seed": self.seed,
        }


def q16(text: str, what: str, high: int, hint: str = "") -> int:
    """Return decimal ``text`` as round(value × 65,536), ties to even, from 0 to ``high``.

    Exact: the decimal is never a float.

    Raises:
        ConfigError: not a decimal number (the message ends with ``hint``), outside 0 to
            ``high`` once converted, or positive but below the Q16 step (it would silently
            read as 0).
    """
    try:
        value = Decimal(text)
    except InvalidOperation as exc:
        raise ConfigError(f"{what} {text!r}: expected a decimal number{hint}") from exc
    if not value.is_finite():
        raise ConfigError(f"{what} {text!r}: expected a finite decimal number")
    fixed = int((value * ONE).to_integral_value(rounding=ROUND_HALF_EVEN))
    if not 0 <= fixed <= high:
        raise ConfigError(f"{what} {text}: expected 0 to {high / ONE:g}")
    if value > 0 and fixed == 0:
        raise ConfigError(f"{what} {text}: expected 0, or at least 1/65,536 (its step)")
    return fixed


def weights(logits: np.ndarray, temperature: int, exp: np.ndarray) -> np.ndarray:
    """Return each token's Q22 weight at Q16 ``temperature`` >= 1.

    ``(m - logit) << 16`` is below 2^48; the quotient by the temperature is unsigned.
    """
    distance = logits.max() - logits.astype(np.int64)
    return exp_weights((distance << ACT_BITS) // temperature, exp)


def sample(
    logits: np.ndarray, settings: SamplingSettings, exp: np.ndarray, rng: Xorshift64Star
) -> int:
    """Return the next token for ``logits`` (one row, Q16), drawing from ``rng`` unless greedy."""
    if settings.greedy:
        return int(np.argmax(logits))  # numpy returns the first (lowest) of equal maxima
    w = weights(logits, settings.temperature, exp)
    if settings.nucleus:
        order = np.lexsort((np.arange(w.size), -w))  # heaviest first, then by id
        running = np.cumsum(w[order])
        total = int(running[-1])
        count = int(np.argmax(running * ONE > settings.top_p * total)) + 1
        kept = np.zeros(w.size, dtype=bool)
        kept[order[:count]] = True
        w = np.where(kept, w, 0)
    cumulative = np.cumsum(w)
    r = rng.next() % int(cumulative[-1])
    return int(np.argmax(cumulative > r))
