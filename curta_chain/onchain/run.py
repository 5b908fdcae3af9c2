"""run --on-chain: a run account computes the tokens, a mirror checks every state it sees.

The run account's keypair is derived (``keys.run_keypair``) from the payer's secret, the
cluster, the program, the model and the run's arguments, so rerunning the same command
finds the same run from the chain alone. An address someone sent lamports to (a closed
run's, say) is still used: it is allocated and assigned with the run keypair's own
signature and topped up, as publish does for model addresses (``specs.new_account``).

Order-free and pipelined. A step means "advance this run by its next slice": the program
refuses a step that lacks a weight account its slice needs (MissingWeightAccount, nothing
changed), so **the run account after step k is a function of the run's arguments and k
alone**, whoever cranks and in whatever order the leader puts the steps. The resume and
the pipeline rely on that. The mirror (``onchain.mirror``) computes the states from
openRun on, so the client knows how many steps the run still takes (``steps_to_finish``)
and sends exactly that many, each a distinct transaction (its label), keeping in flight
as many as the per-account compute limit lets land in a few blocks (``onchain.pipeline``).
Every state the chain is seen in (read at a slot the chain has reached:
``RpcClient.account_at``) is compared with the mirror's at that step count (``observe``);
a difference names the position, the phase and the region. A step that lands after the
run finished (someone else cranked it too) is refused (RunFinished) and changes nothing;
a rerun resumes from whatever step count the chain holds.

Each step names every weight account when they fit the 64 MiB a transaction may load;
otherwise the sections the steps in flight may meet (a window of layers).
"""

import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np
from solders.hash import Hash
from solders.keypair import Keypair
from solders.pubkey import Pubkey

from curta_chain.artifact import Artifact
from curta_chain.chain.accounts import require_model
from curta_chain.chain.context import ChainContext
from curta_chain.chain.effects import closed, created
from curta_chain.chain.features import select_tx_version
from curta_chain.chain.fees import estimate_fees, priced
from curta_chain.chain.fetch import fetch_artifact
from curta_chain.chain.keys import ClusterScope, run_keypair
from curta_chain.chain.rent import plan_new_accounts, require_funds
from curta_chain.chain.rpc import RpcClient
from curta_chain.chain.sender import wait_for_signature
from curta_chain.chain.specs import TxSpec, sign
from curta_chain.constants import ACCOUNT_CU_LIMIT, MAX_V1_TRANSACTION_SIZE
from curta_chain.errors import AccountError, InputError, MirrorMismatchError
from curta_chain.inference import IntModel, SamplingSettings, Tokenizer, plan_run
from curta_chain.onchain.mirror import RunMirror
from curta_chain.onchain.pipeline import OnChainRun, RunFlow, crank, landed_steps
from curta_chain.onchain.run_account import Region, RunAccount, RunState, opened_run_data
from curta_chain.program import ModelState
from curta_chain.reporting import counted, sol


def resume_hint(model: Pubkey) -> str:
    """What a give-up tells the user: the same command resumes the run from the chain."""
    return f"rerun the same `curta-chain run {model} --on-chain` command to resume"


async def run_on_chain(
    ctx: ChainContext,
    model: Pubkey,
    prompt: str,
    max_tokens: int | None,
    settings: SamplingSettings,
    on_piece: Callable[[bytes], None] | None = None,
    confirm: Callable[[int, int], None] | None = None,
    close: bool = False,
    account_cu_limit: int = ACCOUNT_CU_LIMIT,
    steps: int | None = None,
) -> OnChainRun:
    """Open (or find) the run account and crank it to its end, mirroring every state seen.

    ``ctx.payer`` pays the rent and fees, opens the run and gets the rent back on close;
    of ``ctx.budget`` only the compute-unit price counts (each step sets its own limit).
    What the run does goes to ``ctx.reporter``: the opening, a resume, and a progress
    display of the run's steps (their count, phase and position, the compute units the
    mirror's cost model gives them, a rate and an ETA).

    Args:
        ctx: the node, the program, the payer, the budget, the reporter (and sender).
        model: a sealed model.
        prompt: the text (tokenized on chain; the mirror tokenizes it too); an empty one
            is the opening token alone.
        max_tokens: tokens to generate at most (None: as ``curta-chain run`` chooses).
        settings: temperature, top-p and seed.
        on_piece: called with the prompt's bytes once the run is open, then with each
            generated token's bytes as the chain is seen past it.
        confirm: called before a new run is opened with the rent it locks and its size in
            bytes; it raises to stop before anything is sent.
        close: close the finished run account, rent back to the payer (by default it stays:
            it is the chain's record of what the model said).
        account_cu_limit: the compute units one block may spend on one writable account,
            which bounds the steps worth keeping in flight.
        steps: llama2.c's ``-n``, the prompt's tokens included, in place of ``max_tokens``
            (``inference.run.new_tokens_for_steps``).

    Raises:
        AccountError: the model is not sealed or its bytes do not hash to its hash; an
            account at the run's address is not this run.
        InputError: the prompt does not fit one transaction or the model's context.
        MirrorMismatchError: the chain's run account differs from the mirror's.
        ProgramError: the program refused a transaction (named from the IDL).
    """
    client, program_id, payer, reporter = ctx.client, ctx.program_id, ctx.payer, ctx.reporter
    started = time.monotonic()
    if settings.greedy:
        settings = SamplingSettings(0, 0, 0)  # neither top-p nor the seed changes a token
    model_account = await require_model(client, program_id, model)
    if model_account.state != ModelState.SEALED:
        raise AccountError(
            f"model {model} is {model_account.state.name.lower()}, not sealed: a run on chain "
            "needs a sealed model"
        )
    artifact = await fetch_artifact(client, program_id, model)
    int_model, tokenizer = IntModel.from_artifact(artifact), Tokenizer.from_artifact(artifact)
    plan = plan_run(int_model, tokenizer, prompt, max_tokens, steps=steps)
    capacity = len(plan.prompt_ids) + plan.max_tokens
    text = prompt.encode()
    # openRun takes 1 to 2,048 bytes of text: an empty prompt opens with the opening token
    # as a token prompt instead, the same run as llama2.c's with no -i.
    opening: bytes | tuple[int, ...] = text or plan.prompt_ids
    scope = ClusterScope(await client.genesis_hash(), program_id)
    keypair = run_keypair(payer, scope, model, text, capacity, settings)
    if (auto := ctx.budget.auto_price) is not None:
        ctx = replace(ctx, budget=await priced(client, ctx.budget, [keypair.pubkey()]))
        reporter.line(
            f"compute-unit price {ctx.budget.compute_unit_price or 0:,} micro-lamports (auto: "
            f"the {auto.percentile}th percentile of recent blocks')"
        )
    flow = RunFlow(
        ctx=ctx,
        processed=RpcClient(client.transport, "processed"),
        reader=RpcClient(client.transport, client.commitment),
        sender=ctx.sender_for(resume_hint(model)),
        model=model,
        model_account=model_account,
        address=keypair.pubkey(),
        on_piece=on_piece or (lambda piece: None),
    )
    opened = opened_run_data(
        artifact.config,
        model,
        payer.pubkey(),
        capacity,
        opening,
        settings.temperature,
        settings.top_p,
        settings.seed,
    )
    address = keypair.pubkey()
    chain = await flow.read_run(flow.processed)
    flow.since_slot = flow.processed.context_slot
    counted_steps: int | None = None
    if chain is None:
        # Every step the run takes is known before it opens: the funds check counts their fees.
        with reporter.waiting("the mirror to count the run's steps"):
            counted_steps = RunMirror(artifact, opened, int_model, tokenizer).steps_to_finish()
        await _open(
            flow,
            keypair,
            artifact,
            capacity,
            opening,
            settings,
            len(opened),
            confirm,
            counted_steps,
        )
        reporter.line(
            f"opened run {address}: room for {counted(capacity, 'token')} (the prompt's "
            f"{len(plan.prompt_ids)} included), {len(opened):,} bytes"
        )
        chain = await flow.read_after(flow.processed)
    header = RunAccount.from_bytes(chain)
    result = OnChainRun(run=address, prompt_ids=plan.prompt_ids, resumed_from=header.steps)
    mirror = RunMirror(artifact, opened, int_model, tokenizer)
    flow.on_piece(tokenizer.decode(plan.prompt_ids[1:]))  # as `curta-chain run` shows it
    if header.steps:
        reporter.line(f"resuming run {address} at step {header.steps}: replaying the mirror")
        with reporter.waiting("the mirror to replay the run's steps"):
            flow.show(result, mirror.observe(chain))
    else:
        mirror.compare(chain, header)
    resumed_tokens = len(result.generated)
    if counted_steps is not None and not header.steps:
        remaining = counted_steps
    else:
        with reporter.waiting("the mirror to count the run's steps"):
            remaining = mirror.steps_to_finish()
    await crank(flow, mirror, result, remaining, account_cu_limit)
    if flow.last_signature:
        await wait_for_signature(client, flow.last_signature)
    flow.show(result, mirror.observe(await flow.read_after(flow.reader)))
    final = mirror.header
    if final.state != RunState.FINISHED:
        raise MirrorMismatchError(f"the run stopped at step {final.steps}, not finished")
    result.step_units, result.refused_steps, result.step_signatures = await landed_steps(flow)
    result.open_signature = flow.open_signature
    result.finish, result.steps = final.finish_reason, final.steps
    result.tokens_sent = len(result.generated) - resumed_tokens
    tokens = _tokens(final, mirror)
    if tuple(tokens[: final.prompt_tokens]) != plan.prompt_ids:
        raise MirrorMismatchError("the chain tokenized the prompt differently from the mirror")
    info = await client.account(address)
    result.rent = info.lamports if info is not None else 0
    if close:
        gone = closed(ctx.client, [address])
        closed_run = await flow.sender.send([ctx.transactions.close_run(address)], effects=gone)
        flow.count(closed_run)
        result.closed = True
        result.close_signature = closed_run.last_signature or None
        reporter.line(f"closed run {address}: its rent, {sol(result.rent)}, is back with the payer")
    result.transactions = flow.landed + len(result.step_units)
    result.seconds = time.monotonic() - started
    return result


async def _open(
    flow: RunFlow,
    keypair: Keypair,
    artifact: Artifact,
    capacity: int,
    prompt: bytes | tuple[int, ...],
    settings: SamplingSettings,
    size: int,
    confirm: Callable[[int, int], None] | None,
    steps: int,
) -> None:
    """Create the run account (its address may hold lamports someone sent) and open it.

    The payer must hold the rent it locks and the fees of opening and of all ``steps``.
    """
    (funding,) = await plan_new_accounts(flow.ctx.client, [(keypair.pubkey(), size)])
    payer = flow.ctx.payer.pubkey()
    version = await select_tx_version(flow.ctx.client, flow.ctx.budget.tx_version)
    spec = flow.ctx.transactions.open_run(
        keypair,
        funding,
        flow.model,
        flow.model_account.sections[0].weight_account,
        capacity,
        prompt,
        settings,
        artifact.config,
        version,
    )
    check_opening_size(spec, flow.ctx.payer, len(prompt))
    section_zero = flow.model_account.sections[0].weight_account
    step = flow.ctx.transactions.step(flow.address, flow.model, [section_zero], 0)
    fees = await estimate_fees(
        flow.ctx.client, payer, [(spec, 1), (step, steps)], flow.ctx.reporter
    )
    await require_funds(
        flow.ctx.client,
        payer,
        funding.transfer + fees,
        f"opening the run (its rent) and its {counted(steps, 'step')} (their fees) need",
    )
    if confirm is not None:
        confirm(funding.transfer, size)
    made = created(flow.processed, [flow.address], flow.ctx.program_id)
    opened = await flow.sender.send([spec], commitment="processed", effects=made)
    flow.count(opened)
    flow.open_signature = opened.last_signature or None


def check_opening_size(spec: TxSpec, payer: Keypair, prompt_bytes: int) -> None:
    """Refuse an openRun transaction (``spec``) over its size limit, naming the prompt's room.

    Raises:
        InputError: the signed transaction is larger than its version allows.
    """
    size, limit = len(bytes(sign(spec, payer, Hash.default()))), spec.size_limit
    if size > limit:
        room = prompt_bytes - (size - limit)
        raise InputError(
            f"the prompt is {prompt_bytes} bytes: openRun carries it in one {spec.version} "
            f"transaction, which holds at most {max(room, 0)} prompt bytes"
            + ("; v1 transactions hold more" if limit < MAX_V1_TRANSACTION_SIZE else "")
        )


def _tokens(header: RunAccount, mirror: RunMirror) -> list[int]:
    start = header.regions[Region.TOKENS]
    return np.frombuffer(mirror.data, "<u4", header.token_count, start).tolist()
