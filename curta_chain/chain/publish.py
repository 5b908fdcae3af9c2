"""publish: plan from the chain's current state, then create, bind and upload.

Publishing is resumable from the chain alone. The model's address is derived from the
authority and the weights hash (see ``plan``), so a rerun finds the model, reads what each
weight account holds, and sends only the pieces that differ; on a complete model it
sends nothing. A failed model is reopened first, one transaction per weight account still
frozen (a rerun after a crash reopens only the rest); a sealing or sealed one takes no writes
(``frozen_differences`` says whether its frozen bytes are the artifact's), and a closing one
is refused.

Planning is split as the data flows: ``read_state`` reads what the chain holds (the only
I/O), ``plan.plan_from_state`` decides what to create, reopen and write from it alone (pure,
so unit tests build states by hand), and ``plan_publish`` adds the fees the node asks.

With a fee payer other than the authority (``ChainContext.fee_payer``), the fee payer pays
the fees and the rent of what is created, as ``solana program deploy --fee-payer`` does;
the authority signs what it must.
"""

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from solders.pubkey import Pubkey
from solders.system_program import ID as SYSTEM_PROGRAM_ID

from curta_chain import program
from curta_chain.artifact import Artifact
from curta_chain.chain.accounts import ZERO_KEY, read_model, read_section, read_weight_header
from curta_chain.chain.context import ChainContext
from curta_chain.chain.effects import ReadBack, Written, created
from curta_chain.chain.features import select_tx_version
from curta_chain.chain.fees import estimate_fees
from curta_chain.chain.keys import ClusterScope, model_keypair, weight_keypair
from curta_chain.chain.plan import (
    NewAccount,
    PublishPlan,
    PublishState,
    WritePiece,
    differing_pieces,
    mismatch,
    plan_from_state,
)
from curta_chain.chain.rent import plan_new_accounts, require_funds
from curta_chain.chain.rpc import AccountInfo, RpcClient
from curta_chain.chain.specs import TxSpec
from curta_chain.constants import WEIGHT_HEADER_SIZE
from curta_chain.errors import AccountError, ProgramError
from curta_chain.program import ModelState, WeightHeader
from curta_chain.reporting import counted

RESUME_HINT = "rerun `curta-chain publish` with the same artifact and keypair to resume"
"""What a give-up tells the user: publishing resumes from the chain alone."""


@dataclass(frozen=True)
class PublishSignatures:
    """The signatures of what a publish landed (writes: how many, the last one, and all).

    The display says the last write's; the JSON lists every write's signature too, in the
    order they were confirmed (stories15M's upload is 16,403 of them, about 1.5 MB).
    """

    create_model: str | None = None
    reopen: str | None = None
    bind: tuple[str, ...] = ()
    writes: int = 0
    last_write: str | None = None
    write_signatures: tuple[str, ...] = ()

    def lines(self) -> list[str]:
        """``Signature: ...`` lines, as the Solana CLI prints them, each saying what it is."""
        out = []
        if self.create_model:
            out.append(f"Signature: {self.create_model} (create model)")
        if self.reopen:
            out.append(f"Signature: {self.reopen} (reopen)")
        if self.bind:
            many = f"last of {len(self.bind)} " if len(self.bind) > 1 else ""
            out.append(f"Signature: {self.bind[-1]} ({many}create and bind)")
        if self.last_write:
            many = f"last of {self.writes:,} writes" if self.writes > 1 else "write"
            out.append(f"Signature: {self.last_write} ({many})")
        return out

    def to_json(self) -> dict[str, object]:
        """The signatures as JSON values."""
        return {
            "create_model": self.create_model,
            "reopen": self.reopen,
            "bind": list(self.bind),
            "writes": self.writes,
            "last_write": self.last_write,
            "write_signatures": list(self.write_signatures),
        }


@dataclass(frozen=True)
class PublishResult:
    """What a publish did."""

    plan: PublishPlan
    transactions: int
    seconds: float
    signatures: PublishSignatures = PublishSignatures()

    def to_json(self) -> dict[str, object]:
        """The result as JSON values."""
        return {
            "model": str(self.plan.model),
            "weight_accounts": [str(k) for k in self.plan.weight_accounts],
            "hash": self.plan.weights_hash.hex(),
            "transactions": self.transactions,
            "transaction_version": self.plan.tx_version,
            "seconds": round(self.seconds, 3),
            "signatures": self.signatures.to_json(),
        }


async def read_state(ctx: ChainContext, artifact: Artifact) -> PublishState:
    """Read what the chain holds for ``artifact`` under ``ctx``'s authority and program.

    Addresses are derived for this cluster (its genesis hash, read from the node) and the
    program. Rent is the runtime's formula, checked against the node's answer. A model that
    is not this artifact's, or takes no writes, has none of its bytes read.

    Raises:
        AccountError: a derived address holds something that is not this model's.
        NodeMismatchError: the node asks more rent than the runtime's formula gives.
    """
    client, authority = ctx.client, ctx.authority
    weights_hash = artifact.weights_hash()
    lengths = tuple(len(s) for s in artifact.sections)
    scope = ClusterScope(await client.genesis_hash(), ctx.program_id)
    model_address = model_keypair(authority, weights_hash, scope).pubkey()
    derived = tuple(
        weight_keypair(authority, weights_hash, scope, i).pubkey() for i in range(len(lengths))
    )
    model = await _existing_model(client, ctx.program_id, model_address)
    sections: list[bytes | None] = [None] * len(lengths)
    frozen: tuple[int, ...] = ()
    unbound: list[tuple[Pubkey, int]] = []
    if model is None:
        unbound.append((model_address, program.MODEL_ACCOUNT_SIZE))
        unbound += [(derived[i], WEIGHT_HEADER_SIZE + n) for i, n in enumerate(lengths)]
    elif model.state != ModelState.CLOSING and (
        mismatch(model_address, model, authority.pubkey(), weights_hash, lengths) is None
    ):
        slots = model.sections
        bound = [i for i, slot in enumerate(slots) if slot.weight_account != ZERO_KEY]
        unbound += [
            (derived[i], WEIGHT_HEADER_SIZE + lengths[i])
            for i in range(len(lengths))
            if i not in bound
        ]
        if model.state in (ModelState.UPLOADING, ModelState.FAILED):  # those take writes
            read = await asyncio.gather(
                *(read_section(client, slots[i].weight_account, lengths[i]) for i in bound)
            )
            sections = [None] * len(lengths)
            for i, data in zip(bound, read, strict=True):
                sections[i] = data
        if model.state == ModelState.FAILED:
            still = await _frozen_sections(
                client, ctx.program_id, tuple(slots[i].weight_account for i in bound)
            )
            frozen = tuple(bound[i] for i in still)
    funding = await plan_new_accounts(client, unbound) if unbound else ()
    return PublishState(scope, model_address, derived, model, tuple(sections), frozen, funding)


async def plan_publish(ctx: ChainContext, artifact: Artifact) -> PublishPlan:
    """Read what the chain holds for this artifact and authority; plan the rest, with fees.

    ``ctx.payer`` is who the fees are computed for. The writes go as v1 transactions where
    ``ctx.budget.tx_version`` allows it and the cluster has activated them (its feature
    account says so), else as legacy ones.

    Raises:
        AccountError: a derived address holds something that is not this model's.
        NodeMismatchError: the node asks more rent than the runtime's formula gives.
        ChainError: v1 was asked for on a cluster that has not activated it.
    """
    version = await select_tx_version(ctx.client, ctx.budget.tx_version)
    state = await read_state(ctx, artifact)
    payload = ctx.budget.write_payload(version)
    plan = plan_from_state(state, artifact, ctx.authority.pubkey(), payload, version)
    return replace(plan, fee_lamports=await _fees(ctx, plan, artifact))


async def check_funds(ctx: ChainContext, plan: PublishPlan) -> int:
    """Return the payer's balance.

    Raises:
        InsufficientFundsError: the balance is below the plan's cost; names the shortfall.
    """
    return await require_funds(
        ctx.client, ctx.payer.pubkey(), plan.cost_lamports, "publishing costs"
    )


ACCOUNT_ALREADY_IN_USE = 0
"""The System Program's custom error for creating an account that exists."""


async def publish(ctx: ChainContext, artifact: Artifact, plan: PublishPlan) -> PublishResult:
    """Carry out ``plan``: create the model, reopen it if failed, create and bind, upload.

    ``ctx.payer`` pays the fees and the rent; the authority cosigns when it is not the payer.
    An account the plan creates that an earlier run created after this one read the chain
    (its transaction on its way when that run stopped, as on a busy cluster) fails the
    creation with AccountAlreadyInUse, one fee: the chain is read again, at its latest
    state, and the new plan carried out.
    """
    try:
        return await _carry_out(ctx, artifact, plan)
    except ProgramError as exc:
        if exc.code != ACCOUNT_ALREADY_IN_USE or exc.name is not None or not plan.new_accounts:
            raise
    ctx.reporter.note(
        "an earlier run's accounts landed after this one read the chain: reading again"
    )
    latest = replace(ctx, client=RpcClient(ctx.client.transport, "processed"))
    return await _carry_out(ctx, artifact, await plan_publish(latest, artifact))


async def _carry_out(ctx: ChainContext, artifact: Artifact, plan: PublishPlan) -> PublishResult:
    reporter, authority = ctx.reporter, ctx.authority
    sender = ctx.sender_for(RESUME_HINT)
    txs = ctx.transactions
    started = time.monotonic()
    landed = 0
    signatures = PublishSignatures()
    if plan.create_model:
        model_kp = model_keypair(authority, plan.weights_hash, plan.scope)
        spec = txs.create_model(
            model_kp, plan.weights_hash, plan.section_lengths, plan.new_account(plan.model)
        )
        made = created(ctx.client, [plan.model], ctx.program_id)
        sent = await sender.send([spec], what="the model account's creation", effects=made)
        landed += sent.confirmed
        signatures = replace(signatures, create_model=sent.last_signature)
        reporter.line(f"created model {plan.model}")
    if plan.reopen_sections:
        reopened = _read_back(
            ctx,
            [plan.weight_accounts[i] for i in plan.reopen_sections],
            lambda info: not WeightHeader.from_bytes(info.data).frozen,
        )
        sent = await sender.send(txs.reopens(plan), what="the reopen", effects=reopened)
        landed += sent.confirmed
        signatures = replace(signatures, reopen=sent.last_signature)
        reporter.line(
            f"reopened failed model {plan.model} for rewriting "
            f"({counted(len(plan.reopen_sections), 'weight account')})"
        )
    if plan.create_sections:
        binds: list[TxSpec] = []
        keys = []
        for i in plan.create_sections:
            kp = weight_keypair(authority, plan.weights_hash, plan.scope, i)
            binds.append(txs.bind(plan.model, kp, i, plan.new_account(kp.pubkey())))
            keys.append(kp.pubkey())
        bound = _read_back(
            ctx, keys, lambda info: WeightHeader.from_bytes(info.data).model == plan.model
        )
        sent = await sender.send(
            binds, what=f"{len(binds)} weight accounts' creation", effects=bound
        )
        landed += sent.confirmed
        signatures = replace(signatures, bind=tuple(sent.signatures))
        reporter.line(f"created and bound {len(binds)} weight accounts")
    if plan.writes:
        writes = txs.writes(plan, artifact.sections)
        total = sum(plan.section_lengths)
        done = total - plan.write_bytes if plan.state != "new" else 0
        if done:
            reporter.note(
                f"resuming the upload: {done:,} of {total:,} bytes are on chain already; "
                f"{counted(len(writes), 'write')} to go"
            )
        bar = reporter.progress("upload", done + plan.write_bytes, len(writes), done_bytes=done)
        written = Written(
            ctx.client,
            [
                (
                    plan.weight_accounts[p.section],
                    WEIGHT_HEADER_SIZE + p.offset,
                    bytes(artifact.sections[p.section][p.offset : p.offset + p.length]),
                )
                for p in plan.writes
            ],
        )
        try:
            sent = await sender.send(writes, bar, effects=written)
        finally:
            bar.close()
        landed += sent.confirmed
        signatures = replace(
            signatures,
            writes=len(writes),
            last_write=sent.last_signature,
            write_signatures=tuple(sent.signatures),
        )
    return PublishResult(plan, landed, time.monotonic() - started, signatures)


def _read_back(
    ctx: ChainContext, addresses: list[Pubkey], holds: Callable[[AccountInfo], bool]
) -> ReadBack:
    """The effect of transactions that each leave one of ``addresses`` as ``holds`` says.

    The account must be the program's and its first ``WEIGHT_HEADER_SIZE`` bytes must
    satisfy ``holds`` (a header that does not decode does not).
    """

    def held(_: int, info: AccountInfo | None) -> bool:
        if info is None or info.owner != ctx.program_id:
            return False
        try:
            return holds(info)
        except AccountError:
            return False

    return ReadBack(ctx.client, addresses, held, WEIGHT_HEADER_SIZE)


async def frozen_differences(
    client: RpcClient, plan: PublishPlan, artifact: Artifact
) -> list[WritePiece]:
    """The pieces where a sealing model's frozen bytes differ from the artifact's.

    A sealing model takes no writes, so publish can only say whether its seal will end
    sealed (none differ) or failed (then a reopen and a rewrite follow).
    """
    chain = await asyncio.gather(
        *(
            read_section(client, account, length)
            for account, length in zip(plan.weight_accounts, plan.section_lengths, strict=True)
        )
    )
    return [
        piece
        for i, section in enumerate(artifact.sections)
        for piece in differing_pieces(i, bytes(section), chain[i], plan.payload_per_write)
    ]


async def _existing_model(
    client: RpcClient, program_id: Pubkey, address: Pubkey
) -> program.ModelAccount | None:
    """The model at its derived address; None while only lamports someone sent are there."""
    try:
        return await read_model(client, program_id, address)
    except AccountError:
        (info,) = await client.accounts([address], head=1)
        if info is not None and info.owner == SYSTEM_PROGRAM_ID and not info.data:
            return None
        raise


async def _frozen_sections(
    client: RpcClient, program_id: Pubkey, accounts: tuple[Pubkey, ...]
) -> tuple[int, ...]:
    """The sections of a failed model whose weight account is still frozen."""
    headers = await asyncio.gather(
        *(read_weight_header(client, program_id, account) for account in accounts)
    )
    return tuple(i for i, header in enumerate(headers) if header.frozen)


async def _fees(ctx: ChainContext, plan: PublishPlan, artifact: Artifact) -> int:
    """Ask the node what each kind of transaction in the plan costs, times how many."""
    txs, authority = ctx.transactions, ctx.authority
    kinds: list[tuple[TxSpec, int]] = []
    if plan.create_model:
        kp = model_keypair(authority, plan.weights_hash, plan.scope)
        funding = NewAccount(kp.pubkey(), program.MODEL_ACCOUNT_SIZE, 0)
        kinds.append((txs.create_model(kp, plan.weights_hash, plan.section_lengths, funding), 1))
    if plan.create_sections:
        i = plan.create_sections[0]
        kp = weight_keypair(authority, plan.weights_hash, plan.scope, i)
        funding = NewAccount(kp.pubkey(), WEIGHT_HEADER_SIZE + plan.section_lengths[i], 0)
        kinds.append((txs.bind(plan.model, kp, i, funding), len(plan.create_sections)))
    if plan.writes:
        (spec,) = txs.writes(replace(plan, writes=plan.writes[:1]), artifact.sections)
        kinds.append((spec, len(plan.writes)))
    if plan.reopen_sections:
        (spec,) = txs.reopens(replace(plan, reopen_sections=plan.reopen_sections[:1]))
        kinds.append((spec, len(plan.reopen_sections)))
    return await estimate_fees(ctx.client, ctx.payer.pubkey(), kinds, ctx.reporter)
