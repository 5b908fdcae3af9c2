"""The run account: its 512-byte header (the IDL's ``Run``) and the regions after it.

``programs/curta/inference.h`` lays the same bytes out in C and ``run_layout.c`` computes
the same region offsets as ``run_layout`` here; tests compare both with what the program
writes. A client creates the account with ``run_account_size`` bytes before ``openRun``.
"""

from __future__ import annotations

import dataclasses
import enum
import operator
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, get_type_hints

from solders.pubkey import Pubkey

from curta_chain.artifact import ModelConfig
from curta_chain.constants import MAX_ACCOUNT_SIZE
from curta_chain.errors import AccountError, InputError
from curta_chain.program.accounts import decode_account, encode_account

RUN_HEADER_SIZE = 512
"""The run header: discriminator, fields, region offsets, reserved zeros."""
MAX_PROMPT_LENGTH = 2_048
"""The most prompt bytes (or token ids) openRun takes."""
Q16 = 1 << 16
"""Temperature and top-p are Q16 in the run and in openRun."""


class RunState(enum.IntEnum):
    """The IDL's ``RunState``."""

    TOKENIZING = 0
    RUNNING = 1
    FINISHED = 2


class FinishReason(enum.IntEnum):
    """The IDL's ``FinishReason``: why a finished run ended."""

    NONE = 0
    END_TOKEN = 1
    CAPACITY = 2
    PROMPT_TOO_LONG = 3


class PromptKind(enum.IntEnum):
    """The IDL's ``PromptKind``: what the prompt region holds."""

    TEXT = 0
    TOKENS = 1


class Region(enum.IntEnum):
    """The run account's regions, in order (``enum Region`` in inference.h)."""

    PROMPT = 0
    WORK = 1
    TOKENS = 2
    X = 3
    XB = 4
    Q = 5
    HB = 6
    HB2 = 7
    LOGITS = 8
    HIST = 9
    KEYS = 10
    VALUES = 11
    END = 12


class SamplePass(enum.IntEnum):
    """The SAMPLE phase's passes over the vocabulary (``enum SamplePass``)."""

    WEIGHTS = 0
    CUT = 1
    DRAW = 2


MAX_LANES = 2
"""A batch computes up to two prompt positions at once; vector regions hold a vector each."""


def batch_lanes(position: int, prompt_tokens: int) -> int:
    """The positions a run's batch computes at ``position`` (``batch_lanes`` in inference.h).

    Two while the position after it is still the prompt's: every other position of the
    run (the prompt's last among them) is a batch of one.
    """
    return 2 if position + 1 < prompt_tokens else 1


HIST_SHIFT = 11
"""The nucleus histograms: weight sums by ``weight >> 11``, then by ``weight & 2,047``."""
HIST_HIGH = (1 << (22 - HIST_SHIFT)) + 1
HIST_LOW = 1 << HIST_SHIFT
MIN_CAPACITY = 2
"""A run holds a prompt token and a generated one at least."""


def _round8(value: int) -> int:
    return -(-value // 8) * 8


def work_entries(prompt_length: int) -> int:
    """Entries of each tokenizer work array: the opening token, the space, one per byte."""
    return prompt_length + 2


def run_layout(
    config: ModelConfig, capacity: int, prompt_kind: PromptKind, prompt_length: int
) -> tuple[int, ...]:
    """Return the offset of every region and, last, the account's size (``Region`` order).

    Vectors are i64, zero past their length up to a multiple of 8 (the matvec kernel reads
    whole groups of 8), one a lane of a batch (``MAX_LANES``); keys and values have a row
    per position run (``capacity - 1``: the last token is sampled, never run).

    Args:
        config: the model's shape.
        capacity: the run's tokens, the prompt's and the generated ones.
        prompt_kind: text bytes or token ids.
        prompt_length: the prompt's bytes, or its count of token ids.
    """
    text = prompt_kind == PromptKind.TEXT
    vector = 8 * MAX_LANES * _round8(config.dim)
    hidden = 8 * MAX_LANES * _round8(config.hidden_dim)
    cache_bytes = 8 * config.n_layers * (capacity - 1) * config.kv_dim
    sizes = (
        _round8(prompt_length if text else 4 * prompt_length),
        _round8(12 * work_entries(prompt_length)) if text else 0,
        _round8(4 * capacity),
        vector,
        vector,
        vector,
        hidden,
        hidden,
        8 * _round8(config.vocab_size),
        8 * (HIST_HIGH + HIST_LOW),
        cache_bytes,
        cache_bytes,
    )
    offsets = [RUN_HEADER_SIZE]
    for size in sizes:
        offsets.append(offsets[-1] + size)
    return tuple(offsets)


def run_account_size(
    config: ModelConfig, capacity: int, prompt_kind: PromptKind, prompt_length: int
) -> int:
    """The run account's size in bytes for this model, capacity and prompt.

    Raises:
        InputError: the run would not fit one account (10 MiB): fewer positions would.
    """
    size = run_layout(config, capacity, prompt_kind, prompt_length)[Region.END]
    if size > MAX_ACCOUNT_SIZE:
        raise InputError(
            f"a run of {capacity} positions needs a {size:,}-byte account, over Solana's "
            f"{MAX_ACCOUNT_SIZE:,}: ask for fewer steps"
        )
    return size


RNG_GOLDEN = 0x9E37_79B9_7F4A_7C15
"""The generator's state is ``seed ^ RNG_GOLDEN``, or this constant when that is 0."""


def opened_run_data(
    config: ModelConfig,
    model: Pubkey,
    opener: Pubkey,
    capacity: int,
    prompt: bytes | Sequence[int],
    temperature: int = 0,
    top_p: int = 0,
    seed: int = 0,
) -> bytes:
    """Return the bytes openRun leaves in a run account: the header, the prompt, zeros.

    A text prompt (``bytes``) waits to be tokenized; token ids are the run's first tokens.
    """
    kind = PromptKind.TEXT if isinstance(prompt, bytes | bytearray) else PromptKind.TOKENS
    ids = [] if kind == PromptKind.TEXT else [int(i) for i in prompt]
    regions = run_layout(config, capacity, kind, len(prompt))
    header = RunAccount(
        model=model,
        opener=opener,
        config=config,
        capacity=capacity,
        prompt_length=len(prompt),
        prompt_tokens=len(ids),
        token_count=len(ids),
        position=0,
        state=RunState.TOKENIZING if kind == PromptKind.TEXT else RunState.RUNNING,
        prompt_kind=kind,
        finish_reason=FinishReason.NONE,
        phase=0,
        cursor=0,
        work_count=0,
        temperature=temperature,
        top_p=top_p,
        seed=seed,
        rng=(seed ^ RNG_GOLDEN) or RNG_GOLDEN,
        steps=0,
        regions=regions,
        best_logit=0,
        best_token=0,
        sample_pass=SamplePass.WEIGHTS,
        weight_sum=0,
        kept_sum=0,
        cut_weight=0,
        cut_count=0,
        cut_seen=0,
        target=0,
        running=0,
    )
    data = bytearray(regions[Region.END])
    data[:RUN_HEADER_SIZE] = header.to_bytes()
    body = bytes(prompt) if kind == PromptKind.TEXT else struct.pack(f"<{len(ids)}I", *ids)
    data[regions[Region.PROMPT] : regions[Region.PROMPT] + len(body)] = body
    if ids:
        data[regions[Region.TOKENS] : regions[Region.TOKENS] + len(body)] = body
    return bytes(data)


_CONFIG_FIELDS = ("dim", "hidden_dim", "layers", "heads", "kv_heads", "vocab", "context")
"""The IDL's names of the model's shape in a run, in ``ModelConfig``'s field order."""
_RESERVED = {"reserved0": 0, "reserved1": 0, "reserved": bytes(216)}


@dataclass(frozen=True)
class _Codec:
    """How one field of ``RunAccount`` maps to the IDL's ``Run`` and to JSON."""

    decode: Callable[[Any, str], Any]
    encode: Callable[[Any, str], dict[str, Any]]
    json: Callable[[Any], Any]


def _plain(value: Any, name: str) -> dict[str, Any]:
    return {name: value}


def _enum_codec(kind: type[enum.IntEnum]) -> _Codec:
    def decode(raw: Any, name: str) -> Any:
        value = raw[name]
        return kind(value if isinstance(value, int) else value.index)

    def encode(value: Any, name: str) -> dict[str, Any]:
        # An enum the IDL defines is Borsh's one-byte variant (the coder takes its index);
        # others are plain integers of the IDL.
        return {name: int(value)}

    return _Codec(decode, encode, lambda value: value.name.lower())


_CODECS: dict[object, _Codec] = {
    int: _Codec(operator.getitem, _plain, lambda value: value),
    Pubkey: _Codec(operator.getitem, _plain, str),
    tuple[int, ...]: _Codec(
        lambda raw, name: tuple(raw[name]),
        lambda value, name: {name: list(value)},
        list,
    ),
    ModelConfig: _Codec(
        lambda raw, name: ModelConfig(*(raw[f] for f in _CONFIG_FIELDS)),
        lambda value, name: dict(zip(_CONFIG_FIELDS, dataclasses.astuple(value), strict=True)),
        lambda value: value.to_json(),
    ),
}


@cache
def _codecs() -> tuple[tuple[str, _Codec], ...]:
    """Each field of ``RunAccount`` with its codec, chosen by the field's type."""
    hints = get_type_hints(RunAccount)
    table = []
    for f in dataclasses.fields(RunAccount):
        kind = hints[f.name]
        is_enum = isinstance(kind, type) and issubclass(kind, enum.IntEnum)
        table.append((f.name, _enum_codec(kind) if is_enum else _CODECS[kind]))
    return tuple(table)


@dataclass(slots=True)
class RunAccount:
    """A decoded run header (the account's first 512 bytes).

    The fields are written once, here: the IDL codec and ``to_json`` follow them, each by its
    type. The header is mutable so that the mirror's step updates it in place, as the
    program updates its ``Run``; a decoded header is a copy, never the account's bytes.
    """

    model: Pubkey
    opener: Pubkey
    config: ModelConfig
    capacity: int
    """The run's tokens: the prompt's and the generated ones."""
    prompt_length: int
    prompt_tokens: int
    token_count: int
    position: int
    state: RunState
    prompt_kind: PromptKind
    finish_reason: FinishReason
    phase: int
    cursor: int
    work_count: int
    temperature: int
    top_p: int
    seed: int
    rng: int
    steps: int
    regions: tuple[int, ...]
    best_logit: int
    best_token: int
    sample_pass: SamplePass
    weight_sum: int
    kept_sum: int
    cut_weight: int
    cut_count: int
    cut_seen: int
    target: int
    running: int

    @classmethod
    def from_bytes(cls, data: bytes) -> RunAccount:
        """Decode a run account's header.

        Args:
            data: the account data (at least its first 512 bytes).

        Returns:
            The decoded header.

        Raises:
            AccountError: too short, wrong discriminator or undecodable fields.
        """
        raw = decode_account("Run", bytes(data[:RUN_HEADER_SIZE]), RUN_HEADER_SIZE, "run account")
        if raw["heads"] == 0:
            raise AccountError("run account: heads is 0 at offset 84")
        return cls(**{name: codec.decode(raw, name) for name, codec in _codecs()})

    def to_bytes(self) -> bytes:
        """Encode the header as the program lays it out (512 bytes)."""
        values: dict[str, Any] = dict(_RESERVED)
        for name, codec in _codecs():
            values.update(codec.encode(getattr(self, name), name))
        return encode_account("Run", values)

    def __bytes__(self) -> bytes:
        return self.to_bytes()

    @property
    def generated(self) -> int:
        """Tokens the run has sampled (beyond the prompt)."""
        return max(0, self.token_count - self.prompt_tokens)

    def to_json(self) -> dict[str, Any]:
        """The header as JSON-ready values (addresses base58, enums by name)."""
        return {name: codec.json(getattr(self, name)) for name, codec in _codecs()}
