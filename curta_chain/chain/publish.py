"""publish: plan from the chain's current state, then create, bind and upload.

Publishing is resumable from the chain alone. The model's address is derived from the
authority and the weights hash (see ``plan``), so a rerun finds the model, reads what each
weight account holds, and sends only the pieces that differ; on a complete model it
sends nothing. A failed model is reopened first, one transaction per weight account still
frozen (a rerun after a crash reopens only the rest); a sealing or sealed one takes no writes
(``frozen_differences`` says whether its frozen bytes are the artifact's), and a closing one
is refused.

With a fee payer other than the authority (``Sender.payer``), the fee payer pays the fees
and the rent of what is created, as ``solana program deploy --fee-payer`` does; the
authority signs what it must.
"""

import asyncio
import time
from dataclasses import dataclass, replace

from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.system_program import ID as SYSTEM_PROGRAM_ID

from curta_chain import program
from curta_chain.artifact import Artifact
from curta_chain.chain import specs
from curta_chain.chain.accounts import ZERO_KEY, read_model, read_section, read_weight_header
from curta_chain.chain.plan import (
    ClusterScope,
    PublishPlan,
    WritePiece,
    differing_pieces,
    interleave,
    model_keypair,
    weight_keypair,
)
from curta_chain.chain.rent import plan_new_accounts
from curta_chain.chain.rpc import RpcClient
from curta_chain.chain.sender import Sender, TxSpec, estimate_fees
from curta_chain.constants import LAMPORTS_PER_SOL, WEIGHT_HEADER_SIZE
from curta_chain.errors import AccountError, InsufficientFundsError
from curta_chain.program import ModelState
from curta_chain.reporting import NullReporter, Reporter, counted

RESUME_HINT = "rerun `curta-chain publish` with the same artifact and keypair to resume"
"""What a give-up tells the user: publishing resumes from the chain alone."""


@dataclass(frozen=True)
class PublishSignatures:
    """The signatures of what a publish landed (writes: how many, and the last one)."""

    create_model: str | None = None
    reopen: str | None = None
    bind: tuple[str, ...] = ()
    writes: int = 0
    last_write: str | None = None

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
            "seconds": round(self.seconds, 3),
            "signatures": self.signatures.to_json(),
        }


async def plan_publish(
    client: RpcClient,
    program_id: Pubkey,
    authority: Keypair,
    artifact: Artifact,
    budget: specs.Budget,
    fee_payer: Pubkey | None = None,
) -> PublishPlan:
    """Read what the chain holds for this artifact and authority; plan the rest.

    Addresses are derived for this cluster (its genesis hash, read from ``client``) and
    ``program_id``. Rent is the runtime's formula, checked against the node's answer.
    ``fee_payer`` (default: the authority) is who the fees are computed for.

    Raises:
        AccountError: a derived address holds something that is not this model's.
        NodeMismatchError: the node asks more rent than the runtime's formula gives.
    """
    weights_hash = artifact.weights_hash()
    lengths = tuple(len(s) for s in artifact.sections)
    scope = ClusterScope(await client.genesis_hash(), program_id)
    model_address = model_keypair(authority, weights_hash, scope).pubkey()
    model = await _existing_model(client, program_id, model_address)
    payload = budget.write_payload()
    derived = [
        weight_keypair(authority, weights_hash, scope, i).pubkey() for i in range(len(lengths))
    ]

    reopen: tuple[int, ...] = ()
    if model is None:
        state, accounts, create = "new", tuple(derived), tuple(range(len(lengths)))
        chain_sections: list[bytes | None] = [None] * len(lengths)
    else:
        _check_model_matches(model_address, model, authority.pubkey(), weights_hash, lengths)
        if model.state == ModelState.CLOSING:
            raise AccountError(
                f"model {model_address} is being closed: finish `curta-chain close "
                f"{model_address}`, then publish again"
            )
        state = model.state.name.lower()
        accounts = tuple(
            slot.weight_account if slot.weight_account != ZERO_KEY else derived[i]
            for i, slot in enumerate(model.sections)
        )
        create = tuple(i for i, s in enumerate(model.sections) if s.weight_account == ZERO_KEY)
        if model.state == ModelState.FAILED:
            reopen = await _frozen_sections(client, program_id, accounts)
        if model.state in (ModelState.SEALING, ModelState.SEALED):
            # Nothing to write: sealed is final, and a seal under way is left to finish (a
            # failed one is reopened by the next publish).
            chain_sections = list(artifact.sections)
        else:
            chain_sections = await asyncio.gather(
                *(
                    _none() if i in create else read_section(client, accounts[i], lengths[i])
                    for i in range(len(lengths))
                )
            )
    writes = interleave(
        [
            differing_pieces(i, bytes(section), chain_sections[i], payload)
            for i, section in enumerate(artifact.sections)
        ]
    )
    sizes = [(accounts[i], WEIGHT_HEADER_SIZE + lengths[i]) for i in create]
    if model is None:
        sizes.insert(0, (model_address, program.MODEL_ACCOUNT_SIZE))
    draft = PublishPlan(
        model=model_address,
        weights_hash=weights_hash,
        scope=scope,
        section_lengths=lengths,
        weight_accounts=accounts,
        state=state,
        create_model=model is None,
        reopen_sections=reopen,
        create_sections=create,
        writes=tuple(writes),
        payload_per_write=payload,
        new_accounts=await plan_new_accounts(client, sizes),
        fee_lamports=0,
    )
    fees = await _fees(
        client, program_id, authority, draft, artifact, budget, fee_payer or authority.pubkey()
    )
    return replace(draft, fee_lamports=fees)


async def check_funds(client: RpcClient, payer: Pubkey, plan: PublishPlan) -> int:
    """Return the payer's balance.

    Raises:
        InsufficientFundsError: the balance is below the plan's cost; names the shortfall.
    """
    balance = await client.balance(payer)
    if balance < plan.cost_lamports:
        short = plan.cost_lamports - balance
        raise InsufficientFundsError(
            f"payer {payer} has {balance / LAMPORTS_PER_SOL:.9f} SOL; publishing costs "
            f"{plan.cost_lamports / LAMPORTS_PER_SOL:.9f} SOL (short by "
            f"{short / LAMPORTS_PER_SOL:.9f} SOL); nothing was sent"
        )
    return balance


async def publish(
    client: RpcClient,
    program_id: Pubkey,
    authority: Keypair,
    artifact: Artifact,
    plan: PublishPlan,
    budget: specs.Budget,
    reporter: Reporter | None = None,
    sender: Sender | None = None,
) -> PublishResult:
    """Carry out ``plan``: create the model, reopen it if failed, create and bind, upload.

    ``sender`` (default: one paying with ``authority``) decides who pays: its payer pays
    the fees and the rent; the authority must be the payer or one of its cosigners.
    """
    reporter = reporter or NullReporter()
    sender = sender or Sender(client, authority, resume_hint=RESUME_HINT, reporter=reporter)
    funder = sender.payer.pubkey()
    started = time.monotonic()
    confirmed_before = sender.stats.confirmed
    lengths = plan.section_lengths
    signatures = PublishSignatures()
    if plan.create_model:
        model_kp = model_keypair(authority, plan.weights_hash, plan.scope)
        funding = plan.new_account(plan.model)
        spec = specs.create_model_spec(
            program_id,
            authority,
            model_kp,
            plan.weights_hash,
            lengths,
            funding.rent,
            budget,
            existing=funding.existing,
            funder=funder,
        )
        await sender.send([spec], what="the model account's creation")
        signatures = replace(signatures, create_model=sender.stats.last_signature)
        reporter.line(f"created model {plan.model}")
    if plan.reopen_sections:
        await sender.send(
            specs.reopen_specs(program_id, authority.pubkey(), plan, budget), what="the reopen"
        )
        signatures = replace(signatures, reopen=sender.stats.last_signature)
        reporter.line(
            f"reopened failed model {plan.model} for rewriting "
            f"({counted(len(plan.reopen_sections), 'weight account')})"
        )
    if plan.create_sections:
        binds: list[TxSpec] = []
        for i in plan.create_sections:
            kp = weight_keypair(authority, plan.weights_hash, plan.scope, i)
            funding = plan.new_account(kp.pubkey())
            binds.append(
                specs.bind_spec(
                    program_id,
                    authority,
                    plan.model,
                    kp,
                    i,
                    lengths[i],
                    funding.rent,
                    budget,
                    existing=funding.existing,
                    funder=funder,
                )
            )
        await sender.send(binds, what=f"{len(binds)} weight accounts' creation")
        signatures = replace(signatures, bind=tuple(sender.stats.signatures[-len(binds) :]))
        reporter.line(f"created and bound {len(binds)} weight accounts")
    if plan.writes:
        writes = specs.write_specs(program_id, authority.pubkey(), plan, artifact.sections, budget)
        total = sum(lengths)
        done = total - plan.write_bytes if plan.state != "new" else 0
        if done:
            reporter.note(
                f"resuming the upload: {done:,} of {total:,} bytes are on chain already; "
                f"{counted(len(writes), 'write')} to go"
            )
        bar = reporter.progress("upload", done + plan.write_bytes, len(writes), done_bytes=done)
        try:
            await sender.send(writes, bar)
        finally:
            bar.close()
        signatures = replace(signatures, writes=len(writes), last_write=sender.stats.last_signature)
    return PublishResult(
        plan, sender.stats.confirmed - confirmed_before, time.monotonic() - started, signatures
    )


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


def _check_model_matches(
    address: Pubkey,
    model: program.ModelAccount,
    authority: Pubkey,
    weights_hash: bytes,
    lengths: tuple[int, ...],
) -> None:
    if model.authority != authority:
        raise AccountError(f"model {address} belongs to {model.authority}, not to {authority}")
    if model.declared_hash != weights_hash:
        raise AccountError(
            f"model {address} declares hash {model.declared_hash.hex()}, the artifact's is "
            f"{weights_hash.hex()}"
        )
    chain_lengths = tuple(slot.length for slot in model.sections)
    if chain_lengths != lengths:
        raise AccountError(
            f"model {address} has section lengths {list(chain_lengths)}, "
            f"the artifact {list(lengths)}"
        )


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


async def _none() -> None:
    return None


async def _frozen_sections(
    client: RpcClient, program_id: Pubkey, accounts: tuple[Pubkey, ...]
) -> tuple[int, ...]:
    """The sections of a failed model whose weight account is still frozen."""
    headers = await asyncio.gather(
        *(read_weight_header(client, program_id, account) for account in accounts)
    )
    return tuple(i for i, header in enumerate(headers) if header.frozen)


async def _fees(
    client: RpcClient,
    program_id: Pubkey,
    authority: Keypair,
    plan: PublishPlan,
    artifact: Artifact,
    budget: specs.Budget,
    fee_payer: Pubkey,
) -> int:
    """Ask the node what each kind of transaction in the plan costs, times how many."""
    kinds: list[tuple[TxSpec, int]] = []
    if plan.create_model:
        kp = model_keypair(authority, plan.weights_hash, plan.scope)
        spec = specs.create_model_spec(
            program_id,
            authority,
            kp,
            plan.weights_hash,
            plan.section_lengths,
            0,
            budget,
            funder=fee_payer,
        )
        kinds.append((spec, 1))
    if plan.create_sections:
        i = plan.create_sections[0]
        kp = weight_keypair(authority, plan.weights_hash, plan.scope, i)
        spec = specs.bind_spec(
            program_id,
            authority,
            plan.model,
            kp,
            i,
            plan.section_lengths[i],
            0,
            budget,
            funder=fee_payer,
        )
        kinds.append((spec, len(plan.create_sections)))
    if plan.writes:
        (spec,) = specs.write_specs(
            program_id,
            authority.pubkey(),
            replace(plan, writes=plan.writes[:1]),
            artifact.sections,
            budget,
        )
        kinds.append((spec, len(plan.writes)))
    if plan.reopen_sections:
        first = replace(plan, reopen_sections=plan.reopen_sections[:1])
        (spec,) = specs.reopen_specs(program_id, authority.pubkey(), first, budget)
        kinds.append((spec, len(plan.reopen_sections)))
    return await estimate_fees(client, fee_payer, kinds)
