"""Runs on chain in LiteSVM: open a run of an installed sealed model, crank it with the
mirror checking every step, and read what it holds."""

from __future__ import annotations

import base64
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from curta_svm import CU_LIMIT, PROGRAM_ID, Chain, Published, Result
from solders.compute_budget import set_compute_unit_limit
from solders.instruction import Instruction
from solders.keypair import Keypair
from solders.pubkey import Pubkey

from curta_chain.artifact import Artifact
from curta_chain.onchain.mirror import Logged, RunMirror
from curta_chain.onchain.run_account import (
    PromptKind,
    Region,
    RunAccount,
    RunState,
    run_account_size,
)
from curta_chain.onchain.schedule import STEP_BUDGET, STEP_OVERHEAD
from curta_chain.program import open_run, step

STEP_CU_CEILING = STEP_BUDGET + STEP_OVERHEAD
"""No step may use more real compute units than its budget and what it spends besides its
phases (so its transaction stays within 1,400,000: tests/program/test_schedule.py)."""


def prompt_kind(prompt: bytes | Sequence[int]) -> tuple[PromptKind, int]:
    if isinstance(prompt, bytes):
        return PromptKind.TEXT, len(prompt)
    return PromptKind.TOKENS, len(prompt)


def open_ixs(
    chain: Chain,
    pub: Published,
    artifact: Artifact,
    run: Keypair,
    capacity: int,
    prompt: bytes | Sequence[int],
    temperature: int = 0,
    top_p: int = 0,
    seed: int = 0,
    size: int | None = None,
    opener: Pubkey | None = None,
) -> list[Instruction]:
    kind, length = prompt_kind(prompt)
    size = size if size is not None else run_account_size(artifact.config, capacity, kind, length)
    ix = open_run(
        PROGRAM_ID,
        opener or chain.authority.pubkey(),
        run.pubkey(),
        pub.model.pubkey(),
        pub.weight_keys[0],
        capacity,
        prompt,
        temperature,
        top_p,
        seed,
    )
    return [set_compute_unit_limit(CU_LIMIT), chain.new_account(run, size), ix]


def step_ix(pub: Published, run: Pubkey, sections: Sequence[int], expected: int) -> Instruction:
    keys = [pub.weight_keys[0], *(pub.weight_keys[i] for i in sections)]
    return step(PROGRAM_ID, run, pub.model.pubkey(), keys, expected)


def logged_tokens(result: Result) -> list[Logged]:
    """The tokens a step logged: ``Program data: <position, id> <bytes>``."""
    out = []
    for line in result.logs:
        if line.startswith("Program data: "):
            parts = line.split(" ")[2:]
            position, token = struct.unpack("<II", base64.b64decode(parts[0]))
            piece = base64.b64decode(parts[1]) if len(parts) > 1 else b""
            out.append(Logged(position, token, piece))
    return out


@dataclass
class Cranked:
    """What cranking a run to its end did."""

    steps: int = 0
    units: list[int] = field(default_factory=list)
    logged: list[Logged] = field(default_factory=list)
    steps_per_position: dict[int, int] = field(default_factory=dict)


def account_data(chain: Chain, key: Pubkey) -> bytes:
    return bytes(chain.svm.get_account(key).data)


def crank(
    chain: Chain, pub: Published, artifact: Artifact, run: Pubkey, limit: int | None = None
) -> tuple[Cranked, RunMirror]:
    """Step the run to its end (or ``limit`` steps), comparing every step with the mirror."""
    mirror = RunMirror(artifact, account_data(chain, run))
    out = Cranked()
    while mirror.header.state != RunState.FINISHED and (limit is None or out.steps < limit):
        before = mirror.header
        plan = mirror.plan()
        ixs = [set_compute_unit_limit(CU_LIMIT), step_ix(pub, run, plan.sections, before.steps)]
        result = chain.send(ixs)
        assert result.ok, (result.raw_error, result.logs[-3:])
        mirror.advance(plan)
        mirror.compare(account_data(chain, run), before)
        units = result.units - 150  # the compute-budget instruction
        assert units <= STEP_CU_CEILING, (before.steps, units)
        assert logged_tokens(result) == plan.logged, result.logs
        out.steps += 1
        out.units.append(units)
        out.logged += plan.logged
        key = before.position
        out.steps_per_position[key] = out.steps_per_position.get(key, 0) + 1
    return out, mirror


def tokens_of(data: bytes) -> list[int]:
    header = RunAccount.from_bytes(data)
    start = header.regions[Region.TOKENS]
    return np.frombuffer(data, "<u4", header.token_count, start).tolist()
