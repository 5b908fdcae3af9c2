"""The program's whole life in any runtime: create, bind, write, seal, verify, and refusals.

``run_lifecycle`` drives a program already loaded at ``program_id`` (deployed or added)
through one model of two sections with the package's instruction builders, checks every
outcome, and returns the compute units each instruction consumed and the name of each
refusal, so that runtimes and builds can be compared line by line.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from runtimes import Session
from solders.instruction import Instruction
from solders.keypair import Keypair
from solders.pubkey import Pubkey

from curta_chain.artifact.hashing import weights_hash
from curta_chain.constants import HASH_CHUNK_SIZE, WEIGHT_HEADER_SIZE
from curta_chain.program import (
    MAX_WRITE_PAYLOAD,
    MODEL_ACCOUNT_SIZE,
    ModelAccount,
    ModelState,
    begin_sealing,
    bind_weight_account,
    close_model,
    close_weight_account,
    create_model,
    reopen,
    seal_step,
    write_weights,
)

SECTION_LENGTHS = (HASH_CHUNK_SIZE + MAX_WRITE_PAYLOAD, HASH_CHUNK_SIZE)
"""Section 0 seals in a 64 KiB step that stops mid-section and a short one that ends it;
section 1 in one 64 KiB step that ends the model (and compares the hash)."""


def written(length: int) -> tuple[int, ...]:
    """Offsets written in a section of ``length`` bytes, one full write each (the rest is
    zero): its start, its middle, and the piece that ends it."""
    return (0, length // 2, length - MAX_WRITE_PAYLOAD)


WRITE = f"writeWeights ({MAX_WRITE_PAYLOAD:,} bytes)"
SEAL_MID = f"sealStep ({HASH_CHUNK_SIZE:,} bytes, mid-section)"
SEAL_END = f"sealStep ({HASH_CHUNK_SIZE:,} bytes, ends the model: compare)"
"""The labels of the compute-unit table in docs/numbers.md."""


@dataclass
class Lifecycle:
    """What one run measured: compute units by instruction, the refusals' error names."""

    units: dict[str, int] = field(default_factory=dict)
    refusals: dict[str, str | None] = field(default_factory=dict)
    sealed_hash: bytes = b""


def sections_content(seed: int = 12) -> list[bytes]:
    rng = random.Random(seed)
    sections = [bytearray(length) for length in SECTION_LENGTHS]
    for section in sections:
        for offset in written(len(section)):
            section[offset : offset + MAX_WRITE_PAYLOAD] = rng.randbytes(MAX_WRITE_PAYLOAD)
    return [bytes(s) for s in sections]


def run_lifecycle(session: Session, program_id: Pubkey) -> Lifecycle:
    """Publish, seal and verify one model with the program at ``program_id``."""
    result = Lifecycle()
    authority = session.payer.pubkey()
    sections = sections_content()
    declared = weights_hash(sections)

    def units(label: str, ixs: list[Instruction], signers: list[Keypair] = ()) -> None:
        result.units[label] = session.must(ixs, signers).program_units(program_id)

    def refused(label: str, ixs: list[Instruction], signers: list[Keypair] = ()) -> None:
        outcome = session.send(ixs, signers)
        assert not outcome.ok, (session.runtime.name, label, outcome.logs)
        result.refusals[label] = outcome.name

    model = Keypair()
    weights = [Keypair() for _ in sections]
    keys = [w.pubkey() for w in weights]
    create = create_model(program_id, authority, model.pubkey(), declared, list(SECTION_LENGTHS))
    account = session.new_account(model.pubkey(), MODEL_ACCOUNT_SIZE, program_id)
    units("createModel (2 sections)", [account, create], [model])
    for index, (weight, section) in enumerate(zip(weights, sections, strict=True)):
        size = WEIGHT_HEADER_SIZE + len(section)
        bind = bind_weight_account(program_id, authority, model.pubkey(), weight.pubkey(), index)
        units(
            "bindWeightAccount",
            [session.new_account(weight.pubkey(), size, program_id), bind],
            [weight],
        )

    writes = set()
    for key, section in zip(keys, sections, strict=True):
        for offset in written(len(section)):
            piece = section[offset : offset + MAX_WRITE_PAYLOAD]
            units(WRITE, [write_weights(program_id, authority, key, offset, piece)])
            writes.add(result.units[WRITE])
    assert len(writes) == 1, f"a full write costs the same wherever it lands: {writes}"

    stranger = Keypair()
    session.runtime.airdrop(stranger.pubkey(), 10**9)
    refused(
        "writeWeights by another signer",
        [write_weights(program_id, stranger.pubkey(), keys[0], 0, b"x")],
        [stranger],
    )
    refused(
        "writeWeights past the section",
        [write_weights(program_id, authority, keys[1], SECTION_LENGTHS[1] - 1, b"xy")],
    )
    refused("sealStep before beginSealing", [seal_step(program_id, model.pubkey(), [keys[0]], 0)])
    refused(
        "reopen an uploading model", [reopen(program_id, authority, model.pubkey(), keys[0], 0)]
    )

    units("beginSealing", [begin_sealing(program_id, authority, model.pubkey())])
    refused(
        "sealStep with another slot's account",
        [seal_step(program_id, model.pubkey(), [keys[1]], 0)],
    )

    units(SEAL_MID, [seal_step(program_id, model.pubkey(), [keys[0]], 0)])
    refused(
        "writeWeights once the seal entered its section",
        [write_weights(program_id, authority, keys[0], 0, b"x")],
    )
    units(
        f"sealStep ({MAX_WRITE_PAYLOAD:,} bytes, ends its section)",
        [seal_step(program_id, model.pubkey(), [keys[0]], 0)],
    )
    last = session.must([seal_step(program_id, model.pubkey(), [keys[1]], 0)])
    result.units[SEAL_END] = last.program_units(program_id)
    assert "Program log: Sealed: the weights match the declared hash" in last.logs, last.logs

    state = session.runtime.account(model.pubkey())
    assert state is not None and state.owner == program_id
    sealed = ModelAccount.from_bytes(state.data)
    assert sealed.state == ModelState.SEALED
    assert sealed.running_hash == sealed.declared_hash == declared
    result.sealed_hash = sealed.running_hash

    refused(
        "closeWeightAccount of a sealed model",
        [close_weight_account(program_id, authority, model.pubkey(), keys[0], 0)],
    )
    refused("closeModel of a sealed model", [close_model(program_id, authority, model.pubkey())])
    refused("sealStep of a sealed model", [seal_step(program_id, model.pubkey(), [keys[1]], 0)])
    return result
