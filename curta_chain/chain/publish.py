"""publish: plan from the chain's current state, then create, bind and upload.

Publishing is resumable from the chain alone. The model's address is derived from the
authority and the weights hash (see ``plan``), so a rerun finds the model, reads what each
weight account holds, and sends only the pieces that differ; on a complete model it
sends nothing. A failed model is reopened first, one transaction per weight account still
frozen (a rerun after a crash reopens only the rest); a sealing or sealed one takes no writes,
and a closing one is refused.
"""

import asyncio
import time
from dataclasses import dataclass, replace

from solders.hash import Hash
from solders.keypair import Keypair
from solders.message import Message
from solders.pubkey import Pubkey

from curta_chain import program
from curta_chain.artifact import Artifact
from curta_chain.chain import specs
from curta_chain.chain.accounts import ZERO_KEY, read_model, read_section, read_weight_header
from curta_chain.chain.plan import (
    PublishPlan,
    differing_pieces,
    interleave,
    model_keypair,
    weight_keypair,
)
from curta_chain.chain.rpc import RpcClient
from curta_chain.chain.sender import Sender, TxSpec
from curta_chain.constants import LAMPORTS_PER_SOL, WEIGHT_HEADER_SIZE
from curta_chain.errors import AccountError, InsufficientFundsError
from curta_chain.program import ModelState
from curta_chain.reporting import NullReporter, Reporter

RESUME_HINT = "rerun `curta-chain publish` with the same artifact and keypair to resume"
"""What a give-up tells the user: publishing resumes from the chain alone."""


@dataclass(frozen=True)
class PublishResult:
    """What a publish did."""

    plan: PublishPlan
    transactions: int
    seconds: float

    def to_json(self) -> dict[str, object]:
        """The result as JSON values."""
        return {
            "model": str(self.plan.model),
            "weight_accounts": [str(k) for k in self.plan.weight_accounts],
            "hash": self.plan.weights_hash.hex(),
            "transactions": self.transactions,
            "seconds": round(self.seconds, 3),
        }


async def plan_publish(
    client: RpcClient,
    program_id: Pubkey,
    authority: Keypair,
    artifact: Artifact,
    budget: specs.Budget,
) -> PublishPlan:
    """Read what the chain holds for this artifact and authority; plan the rest.

    Raises:
        AccountError: the derived model address holds something that is not this model.
    """
    weights_hash = artifact.weights_hash()
    lengths = tuple(len(s) for s in artifact.sections)
    model_address = model_keypair(authority, weights_hash).pubkey()
    model = await read_model(client, program_id, model_address)
    payload = budget.write_payload()
    derived = [weight_keypair(authority, weights_hash, i).pubkey() for i in range(len(lengths))]

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
    rent = await _rent(client, lengths, create, model is None)
    draft = PublishPlan(
        model=model_address,
        weights_hash=weights_hash,
        section_lengths=lengths,
        weight_accounts=accounts,
        state=state,
        create_model=model is None,
        reopen_sections=reopen,
        create_sections=create,
        writes=tuple(writes),
        payload_per_write=payload,
        rent_lamports=rent,
        fee_lamports=0,
    )
    fees = await _fees(client, program_id, authority, draft, artifact, budget)
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
    """Carry out ``plan``: create the model, reopen it if failed, create and bind, upload."""
    reporter = reporter or NullReporter()
    sender = sender or Sender(
        client,
        authority,
        resume_hint=RESUME_HINT,
    )
    started = time.monotonic()
    confirmed_before = sender.stats.confirmed
    lengths = plan.section_lengths
    if plan.create_model:
        rent = await client.rent_exempt_minimum(program.MODEL_ACCOUNT_SIZE)
        model_kp = model_keypair(authority, plan.weights_hash)
        await sender.send(
            [
                specs.create_model_spec(
                    program_id, authority, model_kp, plan.weights_hash, lengths, rent, budget
                )
            ]
        )
        reporter.line(f"created model {plan.model}")
    if plan.reopen_sections:
        await sender.send(specs.reopen_specs(program_id, authority.pubkey(), plan, budget))
        reporter.line(
            f"reopened failed model {plan.model} for rewriting "
            f"({len(plan.reopen_sections)} weight accounts)"
        )
    if plan.create_sections:
        binds: list[TxSpec] = []
        for i in plan.create_sections:
            rent = await client.rent_exempt_minimum(WEIGHT_HEADER_SIZE + lengths[i])
            kp = weight_keypair(authority, plan.weights_hash, i)
            binds.append(
                specs.bind_spec(program_id, authority, plan.model, kp, i, lengths[i], rent, budget)
            )
        await sender.send(binds)
        reporter.line(f"created and bound {len(binds)} weight accounts")
    if plan.writes:
        writes = specs.write_specs(program_id, authority.pubkey(), plan, artifact.sections, budget)
        bar = reporter.progress("upload", plan.write_bytes, len(writes))
        try:
            await sender.send(writes, bar)
        finally:
            bar.close()
    return PublishResult(
        plan, sender.stats.confirmed - confirmed_before, time.monotonic() - started
    )


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


async def _rent(
    client: RpcClient, lengths: tuple[int, ...], create: tuple[int, ...], create_model: bool
) -> int:
    sizes = [WEIGHT_HEADER_SIZE + lengths[i] for i in create]
    if create_model:
        sizes.append(program.MODEL_ACCOUNT_SIZE)
    return sum(await asyncio.gather(*(client.rent_exempt_minimum(s) for s in sizes)))


async def _fees(
    client: RpcClient,
    program_id: Pubkey,
    authority: Keypair,
    plan: PublishPlan,
    artifact: Artifact,
    budget: specs.Budget,
) -> int:
    """Ask the node what each kind of transaction in the plan costs, times how many."""
    blockhash, _ = await client.latest_blockhash()
    kinds: list[tuple[TxSpec, int]] = []
    if plan.create_model:
        kp = model_keypair(authority, plan.weights_hash)
        spec = specs.create_model_spec(
            program_id, authority, kp, plan.weights_hash, plan.section_lengths, 0, budget
        )
        kinds.append((spec, 1))
    if plan.create_sections:
        i = plan.create_sections[0]
        kp = weight_keypair(authority, plan.weights_hash, i)
        spec = specs.bind_spec(
            program_id, authority, plan.model, kp, i, plan.section_lengths[i], 0, budget
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
    fees = await asyncio.gather(
        *(
            client.fee_for_message(_message(spec, authority.pubkey(), blockhash))
            for spec, _ in kinds
        )
    )
    return sum(fee * count for fee, (_, count) in zip(fees, kinds, strict=True))


def _message(spec: TxSpec, payer: Pubkey, blockhash: Hash) -> Message:
    return Message.new_with_blockhash(spec.instructions, payer, blockhash)
