"""verify: prove from the chain alone that a model holds exactly a given artifact.

It first reads the program the model belongs to (``program_check``): its bytes must be a
shipped build (or a hash the user trusts), and a program that can still be upgraded is
reported, or refused with ``require_final``. Then it reads the model and every weight
account, and checks: each account is bound to this model and slot; the section count and
lengths; every byte; the configuration decoded from the chain's own section zero; the
declared hash against the artifact's; the hash recomputed from the chain's bytes; and that
the model is sealed with that hash. Each failure is listed with its section, offset and
length. The report (``verify_report``: each ``Difference``, the ``VerifyReport``) is what
the CLI prints and ``--output json`` holds.

What it trusts is the RPC node it reads. With a second node (``cross_check``), every
account it read (program, program data, model, weight accounts) is read again from that
node at the same slot or later (``minContextSlot``), and any difference fails the check.
"""

import asyncio
import hashlib
from dataclasses import dataclass

import numpy as np
from solders.pubkey import Pubkey

from curta_chain.artifact import Artifact, decode_artifact, weights_hash
from curta_chain.chain.accounts import (
    ZERO_KEY,
    binding_problem,
    read_model_account,
    read_section,
    read_weight_head,
)
from curta_chain.chain.program_check import DeployedProgram, check_program, read_program
from curta_chain.chain.rpc import AccountInfo, RpcClient
from curta_chain.chain.verify_report import Difference, VerifyReport
from curta_chain.errors import AccountError, ArtifactError, NodeMismatchError, ProgramCheckError
from curta_chain.program import ModelAccount, ModelState, SectionSlot

LISTED_RANGES = 10
"""Differing byte ranges a report lists by default (all are counted); None lists all."""
DIFFERENCE_BINS = 48
"""Equal parts of a section that ``VerifyReport.difference_bins`` counts differing bytes in."""


@dataclass(frozen=True)
class ChainView:
    """Everything verify read from one node, and a digest of each account as read."""

    program: DeployedProgram
    model: ModelAccount
    sections: list[bytes | None]
    """Each slot's bytes; None where its account is missing or bound elsewhere."""
    binding: list[Difference]
    """What reading found wrong with the bindings."""
    digests: dict[str, str]
    """Address -> sha256 of the owner, executable flag and bytes read."""
    slot: int


async def read_view(client: RpcClient, program_id: Pubkey, address: Pubkey) -> ChainView:
    """Read the program, the model and every bound weight account from ``client``.

    Raises:
        AccountError: there is no curta model at ``address``.
        ProgramCheckError: there is no executable program at ``program_id``.
    """
    program = await read_program(client, program_id)
    found = await read_model_account(client, program_id, address)
    if found is None:
        raise AccountError(f"{address}: no such account on {client.url}")
    model, info = found
    digests = dict(program.digests)
    digests[str(address)] = _digest(info, info.data)
    binding: list[Difference] = []
    sections = await _read_sections(client, program_id, address, model, binding, digests)
    return ChainView(program, model, sections, binding, digests, client.context_slot)


def _digest(info: AccountInfo, data: bytes) -> str:
    return hashlib.sha256(bytes(info.owner) + bytes([info.executable]) + data).hexdigest()


def view_differences(ours: ChainView, theirs: ChainView, url: str) -> list[Difference]:
    """Every account the two nodes answered differently about."""
    out = []
    for address in sorted(set(ours.digests) | set(theirs.digests)):
        mine, other = ours.digests.get(address), theirs.digests.get(address)
        if mine != other:
            out.append(
                Difference(
                    "cross-check",
                    f"{url} (slot {theirs.slot:,}) holds different bytes for account "
                    f"{address} than the first node (slot {ours.slot:,})",
                )
            )
    return out


async def verify(
    client: RpcClient,
    program_id: Pubkey,
    address: Pubkey,
    artifact: Artifact | None,
    trusted_hashes: tuple[str, ...] = (),
    require_final: bool = False,
    cross_check: RpcClient | None = None,
    listed_ranges: int | None = LISTED_RANGES,
) -> VerifyReport:
    """Compare the model at ``address`` with ``artifact``; list every difference.

    Without an artifact the chain is checked alone, as the SDK's ``verifyModel`` does: the
    program, the bindings, the sealed state, and the chain's bytes against the declared
    hash (so it proves the model is sealed and whole, not which file it holds).

    Differing bytes are merged into ranges; every range is counted, and the first
    ``listed_ranges`` (None: all) are listed. The other differences come first.

    Args:
        client: the node to read.
        program_id: the curta program the model belongs to.
        address: the model.
        artifact: what the model must hold (None: the chain is checked alone).
        trusted_hashes: SHA-256s of programs trusted besides the shipped builds.
        require_final: a program that can still be upgraded is a difference.
        cross_check: a second node to read every account again from, at ``client``'s
            slot or later; any difference between the two is a difference.
        listed_ranges: how many differing byte ranges to list (None: every one).

    Raises:
        AccountError: there is no curta model at ``address``.
        ProgramCheckError: there is no executable program at ``program_id``.
        NodeMismatchError: the cross-check node is on another cluster.
    """
    view = await read_view(client, program_id, address)
    model = view.model
    ours = artifact.weights_hash() if artifact is not None else None
    found = _program_differences(view.program, model, trusted_hashes, require_final)
    chain_lengths = [slot.length for slot in model.sections]
    local_lengths = [len(s) for s in artifact.sections] if artifact is not None else chain_lengths
    if len(chain_lengths) != len(local_lengths):
        found.append(
            Difference(
                "section-count", f"chain {len(chain_lengths):,}, artifact {len(local_lengths):,}"
            )
        )
    for i, (theirs, mine) in enumerate(zip(chain_lengths, local_lengths, strict=False)):
        if theirs != mine:
            found.append(Difference("section-length", f"chain {theirs:,}, artifact {mine:,}", i))
    found.extend(view.binding)
    chain_sections = view.sections
    ranges: list[Difference] = []
    counted_ranges = counted_bytes = 0
    bins: list[tuple[int, ...]] = []
    for i, section in enumerate(chain_sections):
        part = (0,) * DIFFERENCE_BINS
        if section is not None and artifact is not None and i < len(artifact.sections):
            room = None if listed_ranges is None else max(listed_ranges - len(ranges), 0)
            listed, count, size = _byte_ranges(i, section, artifact.sections[i], room)
            part = _difference_bins(section, artifact.sections[i]) if count else part
            ranges.extend(listed)
            counted_ranges += count
            counted_bytes += size
        bins.append(part)
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
    if ours is not None and model.declared_hash != ours:
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
    if cross_check is not None:
        found.extend(await _cross_check(client, cross_check, program_id, address, view))
    found.extend(ranges)  # after the causes: a wrong artifact differs in many places
    return VerifyReport(
        model=address,
        state=model.state.name.lower(),
        declared_hash=model.declared_hash,
        chain_hash=chain_hash,
        artifact_hash=ours,
        differences=tuple(found),
        program=view.program,
        slot=view.slot,
        cross_checked=cross_check.url if cross_check is not None else None,
        differing_ranges=counted_ranges,
        differing_bytes=counted_bytes,
        difference_bins=tuple(bins),
    )


def _program_differences(
    program: DeployedProgram,
    model: ModelAccount,
    trusted_hashes: tuple[str, ...],
    require_final: bool,
) -> list[Difference]:
    """Every check of the program the model lives under, against the model: the one place.

    The program's bytes must be a shipped build (or trusted), and must not have been
    redeployed since sealing began: the sealed state is evidence only if the program that
    computed it is the one there now. With ``require_final`` nobody may be able to replace
    them.
    """
    out = []
    try:
        check_program(program, trusted_hashes)
    except ProgramCheckError as exc:
        out.append(Difference("program", str(exc)))
    deployed = program.last_deploy_slot
    if deployed is not None and model.seal_slot and deployed >= model.seal_slot:
        out.append(
            Difference(
                "program",
                f"the program was deployed at slot {deployed}, after sealing began at slot "
                f"{model.seal_slot}: its sealed state is no evidence",
            )
        )
    if require_final and program.upgradeable:
        out.append(
            Difference(
                "program",
                f"the program can still be upgraded by {program.upgrade_authority} "
                f"(--require-final)",
            )
        )
    return out


async def _cross_check(
    client: RpcClient, other: RpcClient, program_id: Pubkey, address: Pubkey, view: ChainView
) -> list[Difference]:
    """Read the same accounts from ``other`` at ``view``'s slot or later; list differences.

    Raises:
        NodeMismatchError: ``other`` serves another cluster (another genesis hash).
    """
    ours, theirs = await asyncio.gather(client.genesis_hash(), other.genesis_hash())
    if ours != theirs:
        raise NodeMismatchError(
            f"--cross-check {other.url} serves genesis {theirs}, {client.url} serves {ours}: "
            f"not the same cluster"
        )
    other.min_context_slot = max(other.min_context_slot or 0, view.slot)
    try:
        second = await read_view(other, program_id, address)
    except (AccountError, ProgramCheckError) as exc:
        return [Difference("cross-check", f"{other.url}: {exc}")]
    return view_differences(view, second, other.url)


async def _read_sections(
    client: RpcClient,
    program_id: Pubkey,
    address: Pubkey,
    model: ModelAccount,
    found: list[Difference],
    digests: dict[str, str],
) -> list[bytes | None]:
    """Each bound, correctly bound section's bytes; None (and a Difference) otherwise."""

    async def one(index: int, account: Pubkey, length: int) -> bytes | None:
        if account == ZERO_KEY:
            found.append(Difference("account", "no weight account is bound", index))
            return None
        try:
            header, info = await read_weight_head(client, program_id, account)
        except AccountError as exc:
            found.append(Difference("account", str(exc), index))
            digests[str(account)] = f"unreadable: {exc}"
            return None
        if binding_problem(address, index, SectionSlot(account, length), header) is not None:
            found.append(
                Difference(
                    "account",
                    f"{account} is bound to section {header.section_index} of {header.model}",
                    index,
                )
            )
            digests[str(account)] = _digest(info, info.data)
            return None
        section = await read_section(client, account, length)
        digests[str(account)] = _digest(info, info.data + section)
        return section

    slots = model.sections
    return list(
        await asyncio.gather(*(one(i, s.weight_account, s.length) for i, s in enumerate(slots)))
    )


def _byte_ranges(
    section: int, chain: bytes, local: bytes, limit: int | None
) -> tuple[list[Difference], int, int]:
    """The runs where the two sections' common bytes differ.

    Returns the first ``limit`` runs (None: all) as differences, how many runs there are,
    and how many bytes differ.
    """
    n = min(len(chain), len(local))
    a = np.frombuffer(chain, dtype=np.uint8, count=n)
    b = np.frombuffer(local, dtype=np.uint8, count=n)
    differs = a != b
    mask = np.concatenate(([False], differs, [False]))
    edges = np.flatnonzero(mask[1:] != mask[:-1])
    starts, ends = edges[0::2], edges[1::2]
    shown = len(starts) if limit is None else min(limit, len(starts))
    listed = [
        Difference(
            "bytes", "the chain's bytes differ from the artifact's", section, int(s), int(e - s)
        )
        for s, e in zip(starts[:shown], ends[:shown], strict=True)
    ]
    return listed, len(starts), int(np.count_nonzero(differs))


def _difference_bins(chain: bytes, local: bytes) -> tuple[int, ...]:
    """How many of the common bytes differ in each of ``DIFFERENCE_BINS`` equal parts."""
    n = min(len(chain), len(local))
    a = np.frombuffer(chain, dtype=np.uint8, count=n)
    b = np.frombuffer(local, dtype=np.uint8, count=n)
    edges = np.linspace(0, max(n, 1), DIFFERENCE_BINS + 1)
    per_bin, _ = np.histogram(np.flatnonzero(a != b), bins=edges)
    return tuple(int(count) for count in per_bin)


def _config_differences(
    address: Pubkey, chain_sections: list[bytes], artifact: Artifact | None
) -> list[Difference]:
    """Decode the chain's own artifact and compare its configuration with ours (if any)."""
    try:
        chain_artifact = decode_artifact(b"".join(chain_sections), source=f"model {address}")
    except ArtifactError as exc:
        return [Difference("config", f"the chain's bytes are not a valid artifact: {exc}", 0)]
    if artifact is None:
        return []
    theirs, mine = chain_artifact.config, artifact.config
    if theirs == mine:
        return []
    differing = [
        f"{name} chain {getattr(theirs, name):,}, artifact {getattr(mine, name):,}"
        for name in theirs.to_json()
        if getattr(theirs, name) != getattr(mine, name)
    ]
    return [Difference("config", "; ".join(differing), 0)]
