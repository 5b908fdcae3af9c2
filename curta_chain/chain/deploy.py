"""deploy: put a shipped build on a cluster through the upgradeable loader, resumably.

As ``solana program deploy`` does it: a buffer account is created and initialized (the
payer is its authority), the ELF is written into it by Write transactions (about 3.9 KB
each as v1 transactions where the cluster takes them, else about 1 KB), pipelined through
the ``Sender``, and one last transaction creates the program account
and runs DeployWithMaxDataLen, which moves the ELF into the program's data (the buffer's
lamports come back to the payer). With ``final`` the same transaction also sets the
upgrade authority to none, so the program is never upgradeable, not even for a slot.

Resumable from the chain alone. The program's keypair (unless the user names one) and the
buffer's are derived from the payer's secret and the cluster's genesis hash (the buffer's
also from the program id and the build's hash): a rerun after a kill finds its buffer,
reads what it holds and writes only the pieces that differ; a rerun after the deploy finds
the program and has nothing left to do (or only makes it final). Rent is the runtime's
formula, checked against the node; an address someone sent lamports to is still used
(allocated and assigned with its own signature).
"""

import time
from dataclasses import dataclass, replace

from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.system_program import ID as SYSTEM_PROGRAM_ID

from curta_chain.chain import loader
from curta_chain.chain.context import ChainContext
from curta_chain.chain.deploy_transactions import DeployTransactions
from curta_chain.chain.features import TxVersion, select_tx_version
from curta_chain.chain.fees import estimate_fees
from curta_chain.chain.keys import buffer_keypair
from curta_chain.chain.plan import NewAccount, WritePiece, differing_pieces
from curta_chain.chain.program_check import DeployedProgram, read_program
from curta_chain.chain.rent import checked_rent, plan_new_accounts, require_funds
from curta_chain.chain.rpc import RpcClient
from curta_chain.chain.specs import Budget, TxSpec
from curta_chain.errors import AccountError, ProgramCheckError
from curta_chain.program import ShippedProgram
from curta_chain.reporting import counted, sol

RESUME_HINT = "rerun `curta-chain deploy` with the same keypair (and --program-keypair) to resume"
"""What a give-up tells the user: deploying resumes from the buffer on the chain."""


@dataclass(frozen=True)
class DeployPlan:
    """What ``deploy`` will do and cost, before anything is sent."""

    program_id: Pubkey
    build: ShippedProgram
    buffer: Pubkey
    state: str
    """"new", "resuming" (a buffer is there), "deployed" (upgradeable) or "final"."""
    new_buffer: NewAccount | None
    writes: tuple[WritePiece, ...]
    new_program: NewAccount | None
    """The program account to create; None once deployed."""
    programdata_rent: int
    buffer_lamports: int
    """What the buffer will hold when the deploy returns its lamports to the payer."""
    final: bool
    """The program ends with no upgrade authority."""
    set_final: bool
    """A deployed program is made final (SetAuthority to none) and nothing else."""
    chunk: int
    fee_lamports: int
    upgrade_authority: Pubkey | None
    tx_version: TxVersion = "legacy"
    """The buffer writes' format: "v1" where the cluster takes it, else "legacy"."""

    @property
    def programdata(self) -> Pubkey:
        """The program's program-data account."""
        return loader.programdata_address(self.program_id)

    @property
    def transactions(self) -> int:
        """Transactions ``deploy`` sends."""
        deploy = self.new_program is not None or self.set_final
        return int(self.new_buffer is not None) + len(self.writes) + int(deploy)

    @property
    def rent_lamports(self) -> int:
        """Rent that stays in the program and its data (the buffer's comes back)."""
        if self.new_program is None:
            return 0
        return self.new_program.transfer + self.programdata_rent

    @property
    def cost_lamports(self) -> int:
        """What the payer is poorer by at the end.

        The rent that stays and the fees, less what a pre-funded buffer gives back beyond
        what the payer put in.
        """
        put_in = self.new_buffer.transfer if self.new_buffer is not None else 0
        back = self.buffer_lamports if self.new_program is not None else 0
        return self.fee_lamports + put_in + self.rent_lamports - back

    @property
    def funds_needed(self) -> int:
        """The least balance that carries the deploy through.

        The cost, and never less than what goes out before the buffer's lamports come back.
        """
        put_in = self.new_buffer.transfer if self.new_buffer is not None else 0
        return max(self.cost_lamports, self.fee_lamports + put_in)

    def describe(self) -> list[str]:
        """The plan in a few lines, for people."""
        build = f"{self.build.name} ({len(self.build.elf):,} bytes, sha256 {self.build.sha256})"
        authority = "none (--final)" if self.final else str(self.upgrade_authority)
        if self.state == "final" or (self.state == "deployed" and not self.set_final):
            return [f"program {self.program_id} already holds {build}; nothing to send"]
        if self.set_final:
            return [
                f"program {self.program_id} already holds {build}; "
                f"one transaction removes its upgrade authority {self.upgrade_authority}",
                f"cost: {sol(self.cost_lamports)} (fees {self.fee_lamports:,} lamports)",
            ]
        lines = [
            f"deploy {build} to program {self.program_id}",
            f"program data {self.programdata}: {len(self.build.elf):,} bytes, upgrade "
            f"authority {authority}",
            f"buffer {self.buffer}: "
            + ("new" if self.new_buffer is not None else "found on the chain, resuming")
            + f"; {counted(len(self.writes), 'write')} of up to {self.chunk:,} bytes "
            f"({self.tx_version} transactions), "
            f"{counted(self.transactions, 'transaction')}",
        ]
        lines += [
            f"{account.address} already holds {account.existing:,} lamports someone sent: "
            f"it will be allocated and assigned with its own signature, topped up by "
            f"{account.transfer:,}"
            for account in (self.new_buffer, self.new_program)
            if account is not None and account.existing
        ]
        lines.append(
            f"cost: {sol(self.cost_lamports)} (rent {self.rent_lamports:,}"
            f" that stays with the program + fees {self.fee_lamports:,} lamports; the buffer's"
            f" rent comes back at the deploy)"
        )
        return lines

    def to_json(self) -> dict[str, object]:
        """The plan as JSON values."""
        return {
            "program_id": str(self.program_id),
            "programdata": str(self.programdata),
            "buffer": str(self.buffer),
            "build": self.build.name,
            "sha256": self.build.sha256,
            "state": self.state,
            "final": self.final,
            "write_transactions": len(self.writes),
            "write_chunk": self.chunk,
            "transaction_version": self.tx_version,
            "transactions": self.transactions,
            "rent_lamports": self.rent_lamports,
            "fee_lamports": self.fee_lamports,
            "cost_lamports": self.cost_lamports,
            "new_accounts": [
                a.to_json() for a in (self.new_buffer, self.new_program) if a is not None
            ],
        }


@dataclass(frozen=True)
class DeployResult:
    """What a deploy did, and the program as it now stands on the chain."""

    plan: DeployPlan
    program: DeployedProgram
    transactions: int
    seconds: float

    def to_json(self) -> dict[str, object]:
        """The result as JSON values."""
        return {
            **self.program.to_json(),
            "transactions": self.transactions,
            "seconds": round(self.seconds, 3),
        }


async def plan_deploy(
    ctx: ChainContext, program: Keypair, build: ShippedProgram, final: bool
) -> DeployPlan:
    """Read what the chain holds at the program's and the buffer's addresses; plan the rest.

    ``ctx.payer`` pays and is the buffer's and the program's upgrade authority;
    ``ctx.program_id`` is ``program``'s address.

    Raises:
        AccountError: an address holds something this deploy cannot use or resume from.
        ProgramCheckError: the program id holds another program, or one we may not finalize.
        NodeMismatchError: the node asks more rent than the runtime's formula gives.
        ChainError: v1 was asked for on a cluster that has not activated it.
    """
    client, payer, budget = ctx.client, ctx.payer, ctx.budget
    genesis_hash = await client.genesis_hash()
    program_id = _program_id(ctx, program)
    buffer = buffer_keypair(payer, genesis_hash, program_id, build).pubkey()
    version = await select_tx_version(client, budget.tx_version)
    chunk = DeployTransactions(payer.pubkey(), budget).chunk(version)
    elf = build.elf
    programdata_rent = await checked_rent(client, loader.PROGRAMDATA_METADATA_SIZE + len(elf))
    draft = DeployPlan(
        program_id=program_id,
        build=build,
        buffer=buffer,
        state="new",
        new_buffer=None,
        writes=(),
        new_program=None,
        programdata_rent=programdata_rent,
        buffer_lamports=0,
        final=final,
        set_final=False,
        chunk=chunk,
        fee_lamports=0,
        upgrade_authority=None if final else payer.pubkey(),
        tx_version=version,
    )
    info = await client.account(program_id)
    if info is not None and info.executable:
        plan = await _deployed(client, payer, draft)
    else:
        (new_program,) = await plan_new_accounts(
            client, [(program_id, loader.PROGRAM_ACCOUNT_SIZE)]
        )
        plan = await _buffer(client, payer, replace(draft, new_program=new_program))
    kinds = _fee_kinds(
        payer, program, buffer_keypair(payer, genesis_hash, program_id, build), plan, budget
    )
    fees = await estimate_fees(client, payer.pubkey(), kinds, ctx.reporter)
    return replace(plan, fee_lamports=fees)


def _program_id(ctx: ChainContext, program: Keypair) -> Pubkey:
    if ctx.program_id != program.pubkey():
        raise ValueError(f"the context's program id {ctx.program_id} is not {program.pubkey()}")
    return ctx.program_id


async def _deployed(client: RpcClient, payer: Keypair, draft: DeployPlan) -> DeployPlan:
    """The program is there: nothing to do, make it final, or refuse it."""
    deployed = await read_program(client, draft.program_id)
    if deployed.build is None:
        raise ProgramCheckError(
            f"program {draft.program_id} already holds other bytes (sha256 "
            f"{deployed.sha256}); deploy to another address with --program-keypair"
        )
    authority = deployed.upgrade_authority
    draft = replace(draft, build=deployed.build)  # another shipped build counts as deployed
    if authority is None:
        return replace(draft, state="final", final=True, upgrade_authority=None)
    if draft.final and authority != payer.pubkey():
        raise ProgramCheckError(
            f"program {draft.program_id} can be upgraded by {authority}, not by "
            f"{payer.pubkey()}: only {authority} can make it final"
        )
    return replace(draft, state="deployed", set_final=draft.final, upgrade_authority=authority)


async def _buffer(client: RpcClient, payer: Keypair, draft: DeployPlan) -> DeployPlan:
    """Plan the buffer: create it, or resume from what it already holds."""
    elf = draft.build.elf
    size = loader.BUFFER_METADATA_SIZE + len(elf)
    info = await client.account(draft.buffer)
    if info is None or (info.owner == SYSTEM_PROGRAM_ID and not info.data):
        (new_buffer,) = await plan_new_accounts(client, [(draft.buffer, size)])
        writes = differing_pieces(0, elf, None, draft.chunk)
        lamports = max(new_buffer.rent, new_buffer.existing)
        return replace(draft, new_buffer=new_buffer, writes=tuple(writes), buffer_lamports=lamports)
    state = None
    if info.owner == loader.LOADER_V3:
        state = loader.decode_state(info.data, f"buffer {draft.buffer}")
    if (
        not isinstance(state, loader.BufferState)
        or state.authority != payer.pubkey()
        or len(info.data) != size
    ):
        raise AccountError(
            f"buffer {draft.buffer} holds {len(info.data):,} bytes owned by {info.owner}, not "
            f"a {size:,}-byte buffer of {payer.pubkey()} for this build; close it with "
            f"`solana program close {draft.buffer}`"
        )
    chain = info.data[loader.BUFFER_METADATA_SIZE :]
    writes = differing_pieces(0, elf, chain, draft.chunk)
    return replace(draft, state="resuming", writes=tuple(writes), buffer_lamports=info.lamports)


def _fee_kinds(
    payer: Keypair, program: Keypair, buffer: Keypair, plan: DeployPlan, budget: Budget
) -> list[tuple[TxSpec, int]]:
    kinds: list[tuple[TxSpec, int]] = []
    txs = DeployTransactions(payer.pubkey(), budget)
    if plan.new_buffer is not None:
        kinds.append((txs.create_buffer(buffer, plan.new_buffer), 1))
    if plan.writes:
        first = txs.write(plan.buffer, plan.build.elf, plan.writes[0], plan.tx_version)
        kinds.append((first, len(plan.writes)))
    if plan.new_program is not None or plan.set_final:
        kinds.append((_deploy_spec(txs, program, plan), 1))
    return kinds


def _deploy_spec(txs: DeployTransactions, program: Keypair, plan: DeployPlan) -> TxSpec:
    """Create the program and deploy (and make it final), or only make it final."""
    if plan.new_program is None:
        return txs.make_final(plan.program_id)
    return txs.deploy(program, plan.buffer, plan.new_program, len(plan.build.elf), plan.final)


async def check_deploy_funds(ctx: ChainContext, plan: DeployPlan) -> None:
    """Raise unless the payer can carry the deploy through.

    Raises:
        InsufficientFundsError: the balance is short; names by how much.
    """
    await require_funds(ctx.client, ctx.payer.pubkey(), plan.funds_needed, "deploying needs")


async def deploy(ctx: ChainContext, program: Keypair, plan: DeployPlan) -> DeployResult:
    """Carry out ``plan``; return the program as the chain then holds it.

    Raises:
        ProgramCheckError: after the deploy, the program does not hold the build.
        SendGaveUpError: the node stayed unreachable; rerunning resumes from the buffer.
    """
    client, payer, budget, reporter = ctx.client, ctx.payer, ctx.budget, ctx.reporter
    sender = ctx.sender_for(RESUME_HINT)
    started = time.monotonic()
    landed = 0
    genesis_hash = await client.genesis_hash()
    txs = DeployTransactions(payer.pubkey(), budget)
    if plan.new_buffer is not None:
        buffer = buffer_keypair(payer, genesis_hash, plan.program_id, plan.build)
        landed += (await sender.send([txs.create_buffer(buffer, plan.new_buffer)])).confirmed
        reporter.line(f"created buffer {plan.buffer}")
    if plan.writes:
        elf, version = plan.build.elf, plan.tx_version
        writes = [txs.write(plan.buffer, elf, piece, version) for piece in plan.writes]
        bar = reporter.progress("write", sum(p.length for p in plan.writes), len(writes))
        try:
            landed += (await sender.send(writes, bar)).confirmed
        finally:
            bar.close()
    if plan.new_program is not None or plan.set_final:
        landed += (await sender.send([_deploy_spec(txs, program, plan)])).confirmed
    deployed = await read_program(client, plan.program_id)
    if plan.build.sha256 not in deployed.hashes or (plan.final and deployed.upgradeable):
        raise ProgramCheckError(
            f"program {plan.program_id} holds sha256 {deployed.sha256} with upgrade authority "
            f"{deployed.upgrade_authority} after the deploy, not {plan.build.name}"
            + (" with none" if plan.final else "")
        )
    return DeployResult(plan, deployed, landed, time.monotonic() - started)
