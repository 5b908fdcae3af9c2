"""verify: prove from the chain alone that a model holds exactly a given artifact.

It reads the model and every weight account, and checks: each account is bound to this
model and slot; the section count and lengths; every byte; the configuration decoded
from the chain's own section zero; the declared hash against the artifact's; the hash
recomputed from the chain's bytes; and that the model is sealed with that hash. Each
failure is listed with its section, offset and length.
"""

import asyncio
from dataclasses import dataclass

import numpy as np
from solders.pubkey import Pubkey

from curta_chain.artifact import Artifact, decode_artifact, weights_hash
from curta_chain.chain.accounts import ZERO_KEY, read_section, read_weight_header, require_model
from curta_chain.chain.rpc import RpcClient
from curta_chain.errors import AccountError, ArtifactError
from curta_chain.program import ModelAccount, ModelState

MAX_RANGES_PER_SECTION = 20
"""Differing byte ranges listed per section; the rest are counted."""


@dataclass(frozen=True)
class Difference:
    """One way the chain differs from the artifact."""

    kind: str
    detail: str
    section: int | None = None
    offset: int | None = None
    length: int | None = None

    def __str__(self) -> str:
        where = ""
        if self.section is not None:
            where = f" section {self.section}"
            if self.offset is not None:
                where += f" offset {self.offset} length {self.length}"
        return f"{self.kind}{where}: {self.detail}"

    def to_json(self) -> dict[str, object]:
        """The difference as JSON values."""
        return {
            "kind": self.kind,
            "section": self.section,
            "offset": self.offset,
            "length": self.length,
            "detail": self.detail,
        }


@dataclass(frozen=True)
class VerifyReport:
    """Everything verify found."""

    model: Pubkey
    state: str
    declared_hash: bytes
    chain_hash: bytes | None
    artifact_hash: bytes
    differences: tuple[Difference, ...]

    @property
    def ok(self) -> bool:
        """True when the chain holds exactly the artifact, sealed."""
        return not self.differences

    def to_json(self) -> dict[str, object]:
        """The report as JSON values."""
        return {
            "model": str(self.model),
            "ok": self.ok,
            "state": self.state,
            "declared_hash": self.declared_hash.hex(),
            "chain_hash": self.chain_hash.hex() if self.chain_hash else None,
            "artifact_hash": self.artifact_hash.hex(),
            "differences": [d.to_json() for d in self.differences],
        }


async def verify(
    client: RpcClient, program_id: Pubkey, address: Pubkey, artifact: Artifact
) -> VerifyReport:
    """Compare the model at ``address`` with ``artifact``; list every difference.

    Raises:
        AccountError: there is no curta model at ``address``.
    """
    model = await require_model(client, program_id, address)
    ours = artifact.weights_hash()
    found: list[Difference] = []
    chain_lengths = [slot.length for slot in model.sections]
    local_lengths = [len(s) for s in artifact.sections]
    if len(chain_lengths) != len(local_lengths):
        found.append(
            Difference(
                "section-count", f"chain {len(chain_lengths)}, artifact {len(local_lengths)}"
            )
        )
    for i, (theirs, mine) in enumerate(zip(chain_lengths, local_lengths, strict=False)):
        if theirs != mine:
            found.append(Difference("section-length", f"chain {theirs}, artifact {mine}", i))
    chain_sections = await _read_sections(client, program_id, address, model, found)
    for i, section in enumerate(chain_sections):
        if section is not None and i < len(artifact.sections):
            found.extend(_byte_ranges(i, section, artifact.sections[i]))
    chain_hash = None
    if all(s is not None for s in chain_sections):
        complete = [s for s in chain_sections if s is not None]
        chain_hash = weights_hash(complete)
        found.extend(_config_differences(address, complete, artifact))
        if chain_hash != model.declared_hash:
            found.append(
                Difference(
                    "hash",
                    f"the chain's bytes hash to {chain_hash.hex()}, the model "
                    f"declares {model.declared_hash.hex()}",
                )
            )
    if model.declared_hash != ours:
        found.append(
            Difference(
                "declared-hash",
                f"the model declares {model.declared_hash.hex()}, the "
                f"artifact's hash is {ours.hex()}",
            )
        )
    if model.state != ModelState.SEALED:
        found.append(Difference("state", f"the model is {model.state.name.lower()}, not sealed"))
    elif model.running_hash != model.declared_hash:
        found.append(Difference("state", "sealed, but its running hash is not the declared one"))
    return VerifyReport(
        model=address,
        state=model.state.name.lower(),
        declared_hash=model.declared_hash,
        chain_hash=chain_hash,
        artifact_hash=ours,
        differences=tuple(found),
    )


async def _read_sections(
    client: RpcClient,
    program_id: Pubkey,
    address: Pubkey,
    model: ModelAccount,
    found: list[Difference],
) -> list[bytes | None]:
    """Each bound, correctly bound section's bytes; None (and a Difference) otherwise."""

    async def one(index: int, account: Pubkey, length: int) -> bytes | None:
        if account == ZERO_KEY:
            found.append(Difference("account", "no weight account is bound", index))
            return None
        try:
            header = await read_weight_header(client, program_id, account)
        except AccountError as exc:
            found.append(Difference("account", str(exc), index))
            return None
        if (header.model, header.section_index, header.section_length) != (address, index, length):
            found.append(
                Difference(
                    "account",
                    f"{account} is bound to section {header.section_index} of {header.model}",
                    index,
                )
            )
            return None
        return await read_section(client, account, length)

    slots = model.sections
    return list(
        await asyncio.gather(*(one(i, s.weight_account, s.length) for i, s in enumerate(slots)))
    )


def _byte_ranges(section: int, chain: bytes, local: bytes) -> list[Difference]:
    """The ranges where the two sections' common bytes differ, merged into runs."""
    n = min(len(chain), len(local))
    a = np.frombuffer(chain, dtype=np.uint8, count=n)
    b = np.frombuffer(local, dtype=np.uint8, count=n)
    mask = np.concatenate(([False], a != b, [False]))
    edges = np.flatnonzero(mask[1:] != mask[:-1])
    starts, ends = edges[0::2], edges[1::2]
    out = [
        Difference(
            "bytes", "the chain's bytes differ from the artifact's", section, int(s), int(e - s)
        )
        for s, e in zip(starts[:MAX_RANGES_PER_SECTION], ends[:MAX_RANGES_PER_SECTION], strict=True)
    ]
    if len(starts) > MAX_RANGES_PER_SECTION:
        more = len(starts) - MAX_RANGES_PER_SECTION
        out.append(Difference("bytes", f"and {more} more differing ranges", section))
    return out


def _config_differences(
    address: Pubkey, chain_sections: list[bytes], artifact: Artifact
) -> list[Difference]:
    """Decode the chain's own artifact and compare its configuration with ours."""
    try:
        chain_artifact = decode_artifact(b"".join(chain_sections), source=f"model {address}")
    except ArtifactError as exc:
        return [Difference("config", f"the chain's bytes are not a valid artifact: {exc}", 0)]
    theirs, mine = chain_artifact.config, artifact.config
    if theirs == mine:
        return []
    return [Difference("config", f"chain {theirs}, artifact {mine}", 0)]
