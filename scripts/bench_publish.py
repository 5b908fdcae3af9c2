"""Publish a stories15M-shaped artifact on a fresh embedded localnet and measure it.

Publishes it twice in one run, with legacy write transactions (1,232 bytes) and with v1
ones (4,096 bytes, where the localnet has activated them), each by its own authority.
Prints a table, then as its last line one JSON object:
  legacy, v1          each: writes (transactions), write_bytes, write_seconds,
                      write_tx_per_s, mb_per_s (weight megabytes, 10^6, a second) and
                      bytes_per_write_tx, of `publish` over HTTP
  v1_over_legacy      v1's bytes a second over legacy's, and its writes over legacy's
  write_tx_per_s      legacy's write transactions landed per second (as before)
  mb_per_s            legacy's weight megabytes uploaded per second (as before)
  bytes_per_write_tx  weight bytes one legacy write transaction carries (as before)
  inprocess_tx_per_s  the same write transactions pushed straight into an in-process
                      LiteSVM in this run: the ceiling any RPC path can reach here
  naive_tx_per_s      solana-py send_transaction + confirm_transaction, one at a time, on a
                      sample of writes to a second model
  seal_seconds, seal_transactions

    .venv/bin/python scripts/bench_publish.py [--naive-sample 200] [--skip-seal] [--record]

``--write-size`` prints instead the weight bytes one write carries, legacy and v1, for each
budget and signer the client sends with (``Budget.write_payload``: real transactions
serialized, no localnet); with ``--record``, to docs/numbers/write_size.jsonl.

``--largest`` measures instead the life of the largest model the spec allows (18 sections,
79 MB) on a fresh localnet, through the library: publish (the writes as the cluster takes
them: v1 there), a seal that hashes every chunk and fails on a flipped last byte, publish
again (a reopen per section and the one write), then close. Each step's planned
transactions and fees (``plan_publish``, ``seal_cost``, ``close_cost``) are checked against
the payer's balance; the account data a transaction loads is the localnet's simulation of
each kind the authority sends against every weight account. With ``--record``, to
docs/numbers/largest_model.jsonl.
"""

import argparse
import asyncio
import base64
import json
import subprocess
import sys
import time
from collections.abc import Awaitable
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

from solana.rpc.commitment import Confirmed
from solana.rpc.models import TxOpts
from solders.keypair import Keypair
from solders.litesvm import LiteSVM
from solders.pubkey import Pubkey
from solders.transaction import Transaction

from curta_chain import program
from curta_chain.artifact import Artifact
from curta_chain.artifact.synthetic import LARGEST, synthetic_artifact
from curta_chain.chain.close import close, close_cost
from curta_chain.chain.context import ChainContext
from curta_chain.chain.keys import model_keypair, weight_keypair
from curta_chain.chain.plan import NewAccount
from curta_chain.chain.publish import plan_publish, publish
from curta_chain.chain.rpc import RpcClient
from curta_chain.chain.seal import seal, seal_cost
from curta_chain.chain.sender import Sender, wait_for_signature
from curta_chain.chain.specs import Budget, Transactions, TxSpec, sign
from curta_chain.chain.transport import HttpTransport
from curta_chain.constants import (
    LAMPORTS_PER_SOL,
    LOCALNET_PROGRAM_ID,
    MAX_LOADED_ACCOUNTS_DATA_SIZE,
    MAX_SECTIONS,
    WEIGHT_HEADER_SIZE,
)
from curta_chain.localnet.current_bank import reuse_freed_memory

# solana-py's reference client, called from plain code: the tests' (tests/reference_client.py).
sys.path.append(str(Path(__file__).resolve().parents[1] / "tests"))
from reference_client import Client

PROGRAM_ID = Pubkey.from_string(LOCALNET_PROGRAM_ID)
T = TypeVar("T")


def transactions(authority: Keypair) -> Transactions:
    """The curta transactions of ``authority``, who also pays (no compute budget)."""
    return Transactions(PROGRAM_ID, authority.pubkey(), authority.pubkey())


def start_localnet(port: int) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "curta_chain", "localnet", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if "ready" in line.lower():
            return proc
    raise SystemExit(f"localnet did not start (exit {proc.wait()})")


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def airdrop(client: RpcClient, who: Pubkey, sol: int) -> None:
    await wait_for_signature(client, await client.request_airdrop(who, sol * LAMPORTS_PER_SOL))


async def pipelined(
    url: str, artifact, authority: Keypair, version: str, with_seal: bool
) -> dict[str, float]:
    """Publish (the accounts untimed, then the writes timed) and seal, with ``version`` writes."""
    client = RpcClient(HttpTransport(url), "confirmed")
    ctx = ChainContext(client, PROGRAM_ID, authority, budget=Budget(tx_version=version))
    try:
        await airdrop(client, authority.pubkey(), 1000)
        plan = await plan_publish(ctx, artifact)
        # Accounts first (not timed), then the writes alone.
        await publish(ctx, artifact, replace(plan, writes=()))
        plan = await plan_publish(ctx, artifact)
        started = time.perf_counter()
        result = await publish(ctx, artifact, plan)
        write_seconds = time.perf_counter() - started
        assert plan.tx_version == version, f"asked for {version}, planned {plan.tx_version}"
        assert result.signatures.writes == len(plan.writes)
        out = {
            "writes": len(plan.writes),
            "write_bytes": plan.write_bytes,
            "write_seconds": write_seconds,
            "payload": plan.payload_per_write,
            "published_transactions": result.transactions,
        }
        if with_seal:
            started = time.perf_counter()
            sealed = await seal(ctx, plan.model, artifact)
            out["seal_seconds"] = time.perf_counter() - started
            out["seal_transactions"] = sealed.transactions
            assert sealed.state == program.ModelState.SEALED, sealed.describe()
        return out
    finally:
        await client.aclose()


async def naive_setup(url: str, artifact, authority: Keypair):
    """Create and bind a second model's accounts; return its plan (legacy writes to send)."""
    client = RpcClient(HttpTransport(url), "confirmed")
    ctx = ChainContext(client, PROGRAM_ID, authority, budget=Budget(tx_version="legacy"))
    try:
        await airdrop(client, authority.pubkey(), 1000)
        plan = await plan_publish(ctx, artifact)
        await publish(ctx, artifact, replace(plan, writes=()))
        return plan
    finally:
        await client.aclose()


def naive(url: str, artifact, authority: Keypair, plan, sample: int) -> float:
    client = Client(url, commitment="confirmed")
    write_specs = transactions(authority).writes(plan, artifact.sections)
    started = time.perf_counter()
    for spec in write_specs[:sample]:
        blockhash = client.get_latest_blockhash().value.blockhash
        tx = Transaction.new_signed_with_payer(
            list(spec.instructions), authority.pubkey(), [authority], blockhash
        )
        # TxOpts preflights at finalized unless told, a bank behind a confirmed blockhash.
        opts = TxOpts(skip_confirmation=True, preflight_commitment=Confirmed)
        signature = client.send_transaction(tx, opts=opts).value
        client.confirm_transaction(signature, commitment="confirmed", sleep_seconds=0.01)
    return sample / (time.perf_counter() - started)


def in_process(artifact, authority: Keypair, plan) -> float:
    """The same write transactions, straight into LiteSVM: no HTTP, no JSON.

    This process's malloc keeps what it frees, as the localnet's does (``new_svm``): else
    each write's copy of its account would fault in fresh pages, and the ceiling be lower.
    """
    reuse_freed_memory()
    svm = LiteSVM()
    svm.add_program(PROGRAM_ID, program.PROGRAM_BINARY.read_bytes())
    svm.airdrop(authority.pubkey(), 1000 * LAMPORTS_PER_SOL)
    txs = transactions(authority)
    blockhash = svm.latest_blockhash()
    model_kp = model_keypair(authority, plan.weights_hash, plan.scope)
    size = program.MODEL_ACCOUNT_SIZE
    funding = NewAccount(plan.model, size, svm.minimum_balance_for_rent_exemption(size))
    setup = [txs.create_model(model_kp, plan.weights_hash, plan.section_lengths, funding)]
    for i, length in enumerate(plan.section_lengths):
        kp = weight_keypair(authority, plan.weights_hash, plan.scope, i)
        size = WEIGHT_HEADER_SIZE + length
        funding = NewAccount(kp.pubkey(), size, svm.minimum_balance_for_rent_exemption(size))
        setup.append(txs.bind(plan.model, kp, i, funding))
    for spec in setup:
        result = svm.send_transaction(sign(spec, authority, blockhash))
        assert not hasattr(result, "err"), result
    signed = [sign(s, authority, blockhash) for s in txs.writes(plan, artifact.sections)]
    started = time.perf_counter()
    for tx in signed:
        result = svm.send_transaction(tx)
    elapsed = time.perf_counter() - started
    assert not hasattr(result, "err"), result
    return len(signed) / elapsed


WRITE_BUDGETS = (
    ("one signer, a local node (no compute budget)", Budget()),
    ("one signer, a cluster (a compute-unit limit)", Budget(limit_compute=True)),
    (
        "one signer, with a price (`--with-compute-unit-price`)",
        Budget(limit_compute=True, compute_unit_price=0),
    ),
    ("a separate fee payer (`--fee-payer`: a second signature)", Budget(separate_fee_payer=True)),
    ("a separate fee payer, a cluster", Budget(limit_compute=True, separate_fee_payer=True)),
    (
        "a separate fee payer, with a price",
        Budget(limit_compute=True, compute_unit_price=0, separate_fee_payer=True),
    ),
)
"""The budgets a write goes with: ``cluster_runner.budget_for`` limits compute off loopback."""


def write_size(record_it: bool) -> None:
    """Print (with ``record_it``, record) the weight bytes a write carries in each case."""
    columns = ["write transaction", "legacy (in 1,232 bytes)", "v1 (in 4,096 bytes)"]
    rows = [
        [label, f"{budget.write_payload('legacy'):,}", f"{budget.write_payload('v1'):,}"]
        for label, budget in WRITE_BUDGETS
    ]
    rows[0][1:] = [f"**{cell}**" for cell in rows[0][1:]]
    print("| " + " | ".join(columns) + " |")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    if not record_it:
        return
    from numbers_page import record

    record(
        "write_size",
        "Bytes of weights a write carries",
        ".venv/bin/python scripts/bench_publish.py --write-size --record",
        columns,
        rows,
        "What the client puts in one writeWeights transaction (`Budget.write_payload`), computed "
        "by serializing real transactions up to the limit: legacy where the cluster has no v1 "
        "transactions (or `--tx-version legacy`), v1 where it has.",
        "A legacy write's compute-budget instructions take their room from the weights; the "
        "client sizes it for a limit and a price alike, so with a limit alone a few bytes go "
        "unused. A v1 write carries its budget inline (`TransactionConfig`) and always states "
        "its compute-unit and loaded-data limits, so a cluster costs it nothing more; a price "
        "adds its priority-fee field.",
    )


def lamports(value: int) -> str:
    """SOL to three places, as the page has shown the fees."""
    return f"{value / LAMPORTS_PER_SOL:,.3f} SOL"


def largest_model(record_it: bool) -> None:
    """Print (with ``record_it``, record) what the largest model's life costs."""
    artifact = synthetic_artifact(LARGEST, seed=18)
    assert len(artifact.sections) == MAX_SECTIONS
    port = free_port()
    proc = start_localnet(port)
    try:
        rows = asyncio.run(largest_life(f"http://127.0.0.1:{port}", artifact))
    finally:
        proc.terminate()
        proc.wait()
    for row in rows:
        print(" | ".join(row))
    if not record_it:
        return
    from numbers_page import record

    record(
        "largest_model",
        "The largest model the spec allows",
        ".venv/bin/python scripts/bench_publish.py --largest --record",
        ["measure", "value"],
        rows,
        f"{LARGEST.n_layers} layers, dimension {LARGEST.dim}, hidden {LARGEST.hidden_dim:,}, "
        f"vocabulary {LARGEST.vocab_size:,} (the largest whose embedding fits a section): "
        f"{MAX_SECTIONS} sections, {sum(map(len, artifact.sections)):,} bytes, on a fresh "
        "`curta-chain localnet` process (rent by the runtime's formula, 5,000 lamports "
        "a signature). Each step's planned transactions and fees are what the payer's "
        "balance lost.",
        "The seal hashed every chunk and failed on a byte flipped at the end (a good seal "
        "sends as many). A seal step names at most two weight accounts, every other "
        "transaction of the authority one: the largest load is the localnet's simulation "
        "(counted as a validator counts it) of a write, a seal step, a reopen and a close "
        "against every weight account. `tests/reliability/test_largest_model.py` runs "
        "publish, a failed seal, reopen, a good seal and verify over HTTP.",
    )


async def largest_life(url: str, artifact: Artifact) -> list[list[str]]:
    """Publish, seal (to a failure on its last byte), publish again and close ``artifact``."""
    client = RpcClient(HttpTransport(url), "confirmed")
    processed = RpcClient(client.transport, "processed")
    try:
        owner = Keypair()
        await airdrop(client, owner.pubkey(), 1_000)
        ctx = ChainContext(client, PROGRAM_ID, owner)
        me = owner.pubkey()

        async def spent(work: Awaitable[T]) -> tuple[T, int]:
            """What ``work`` returns, and the lamports the payer's balance lost to it."""
            before = await processed.balance(me)
            done = await work
            return done, before - await processed.balance(me)

        plan = await plan_publish(ctx, artifact)
        published, taken = await spent(publish(ctx, artifact, plan))
        assert published.transactions == plan.transactions
        assert taken == plan.cost_lamports, (taken, plan.cost_lamports)
        address = plan.model

        last = plan.section_lengths[-1] - 1
        flipped = bytes([artifact.sections[-1][last] ^ 1])
        write = program.write_weights(PROGRAM_ID, me, plan.weight_accounts[-1], last, flipped)
        await Sender(client, owner).send([TxSpec((write,))])
        seal_planned = await seal_cost(ctx, address)
        failed, seal_fees = await spent(seal(ctx, address, artifact, check_upload=False))
        assert failed.state == program.ModelState.FAILED, failed.describe()
        assert (failed.transactions, seal_fees) == seal_planned, (failed, seal_fees)

        again = await plan_publish(ctx, artifact)
        assert (len(again.reopen_sections), len(again.writes)) == (MAX_SECTIONS, 1)
        _, reopen_fees = await spent(publish(ctx, artifact, again))
        assert reopen_fees == again.fee_lamports
        loaded, heaviest = await largest_load(ctx, address, plan.weight_accounts)

        close_fees = await close_cost(ctx, address)
        closed = await close(ctx, address)
        assert closed.lamports_returned == closed.lamports_closed - close_fees
        assert closed.lamports_closed == plan.rent_lamports
    finally:
        await client.aclose()
    rows = [
        [
            "accounts' rent (all returned by `close` while unsealed)",
            f"**{plan.rent_lamports / LAMPORTS_PER_SOL:,.2f} SOL** "
            f"({plan.rent_lamports:,} lamports)",
        ],
        [
            f"publish ({plan.tx_version} writes of {plan.payload_per_write:,} bytes)",
            f"{plan.transactions:,} transactions ({len(plan.writes):,} writes), "
            f"{lamports(plan.fee_lamports)} of fees",
        ],
        [
            "seal",
            f"{failed.transactions:,} transactions, {lamports(seal_fees)}",
        ],
        [
            "reopen / close",
            f"{len(again.reopen_sections)} / {closed.transactions} transactions "
            f"({reopen_fees // (len(again.reopen_sections) + 1):,} / "
            f"{close_fees // closed.transactions:,} lamports each)",
        ],
        [
            "account data an authority's transaction loads, at most",
            f"{loaded:,} bytes ({heaviest}; the limit is {MAX_LOADED_ACCOUNTS_DATA_SIZE:,})",
        ],
    ]
    return rows


async def largest_load(
    ctx: ChainContext, model: Pubkey, weights: tuple[Pubkey, ...]
) -> tuple[int, str]:
    """The most account data a transaction of the authority loads, as the node simulates it
    (a write, a seal step as the client names its accounts, a reopen and a close of each
    weight account), and which transaction that is."""
    txs, me = ctx.transactions, ctx.authority.pubkey()
    specs: list[tuple[str, TxSpec]] = []
    for index, weight in enumerate(weights):
        pair = weights[index : index + 2]  # the cursor's section and the next (seal._round)
        named = " and ".join(str(i) for i in range(index, index + len(pair)))
        specs += [
            (f"a write to section {index}", TxSpec((program.write_weights(
                ctx.program_id, me, weight, 0, b"\0"),))),
            (f"a seal step naming sections {named}", txs.seal_step(model, pair, index)),
            (f"a reopen of section {index}", TxSpec((program.reopen(
                ctx.program_id, me, model, weight, index),))),
            (f"a close of section {index}", TxSpec((program.close_weight_account(
                ctx.program_id, me, model, weight, index),))),
        ]  # fmt: skip
    blockhash, _ = await ctx.client.latest_blockhash()
    config = {"encoding": "base64", "commitment": "processed", "replaceRecentBlockhash": True}
    most = (0, "")
    for label, spec in specs:
        raw = base64.b64encode(bytes(sign(spec, ctx.authority, blockhash))).decode()
        answer = await ctx.client.call("simulateTransaction", [raw, config])
        most = max(most, (answer["value"]["loadedAccountsDataSize"], label))
    return most


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--naive-sample", type=int, default=200)
    parser.add_argument(
        "--record", action="store_true", help="append the results to docs/numbers/publish.jsonl"
    )
    parser.add_argument("--skip-seal", action="store_true", help="measure the writes only")
    parser.add_argument(
        "--write-size", action="store_true", help="only the bytes a write carries, each case"
    )
    parser.add_argument(
        "--largest", action="store_true", help="only the largest model's life and costs"
    )
    args = parser.parse_args()
    if args.write_size:
        write_size(args.record)
        return
    if args.largest:
        largest_model(args.record)
        return
    artifact = synthetic_artifact()
    port = free_port()
    proc = start_localnet(port)
    url = f"http://127.0.0.1:{port}"
    try:
        naive_authority = Keypair()
        naive_plan = asyncio.run(naive_setup(url, artifact, naive_authority))
        naive_rate = naive(url, artifact, naive_authority, naive_plan, args.naive_sample)
        with_seal = not args.skip_seal
        runs = {
            version: asyncio.run(pipelined(url, artifact, Keypair(), version, with_seal))
            for version in ("legacy", "v1")
        }
    finally:
        proc.terminate()
        proc.wait()
    inprocess_rate = in_process(artifact, naive_authority, naive_plan)
    print(
        f"artifact: {len(artifact.sections)} sections, {sum(map(len, artifact.sections)):,} bytes"
    )
    summary: dict[str, dict[str, float]] = {}
    for version, measured in runs.items():
        seconds = measured["write_seconds"]
        summary[version] = {
            "writes": measured["writes"],
            "write_bytes": measured["write_bytes"],
            "write_seconds": round(seconds, 2),
            "write_tx_per_s": round(measured["writes"] / seconds, 1),
            "mb_per_s": round(measured["write_bytes"] / seconds / 1e6, 3),
            "bytes_per_write_tx": measured["payload"],
        }
        if with_seal:
            summary[version]["seal_seconds"] = round(measured["seal_seconds"], 2)
            summary[version]["seal_transactions"] = measured["seal_transactions"]
        print(
            f"{version:>6} writes: {measured['writes']:,} transactions of up to "
            f"{measured['payload']:,} bytes, {measured['write_bytes']:,} bytes in {seconds:.1f} s"
            f" = {measured['writes'] / seconds:,.0f} tx/s, "
            f"{measured['write_bytes'] / seconds / 1e6:.2f} MB/s"
        )
    legacy, v1 = summary["legacy"], summary["v1"]
    speedup = v1["mb_per_s"] / legacy["mb_per_s"]
    print(
        f"v1 over legacy: {speedup:.2f} x the bytes a second, "
        f"{v1['writes'] / legacy['writes']:.3f} x the write transactions"
    )
    legacy_rate = legacy["write_tx_per_s"]
    print(
        f"legacy write rate {legacy_rate:.0f} tx/s = {legacy_rate / inprocess_rate:.2f} x "
        f"in-process, {legacy_rate / naive_rate:.1f} x naive"
    )
    out = {
        "legacy": legacy,
        "v1": v1,
        "v1_over_legacy": {
            "mb_per_s": round(speedup, 2),
            "writes": round(v1["writes"] / legacy["writes"], 3),
        },
        "write_tx_per_s": legacy_rate,
        "mb_per_s": legacy["mb_per_s"],
        "bytes_per_write_tx": legacy["bytes_per_write_tx"],
        "inprocess_tx_per_s": round(inprocess_rate, 1),
        "naive_tx_per_s": round(naive_rate, 1),
    }
    if with_seal:
        out["seal_seconds"] = legacy["seal_seconds"]
        out["seal_transactions"] = legacy["seal_transactions"]
    print(json.dumps(out))
    if args.record:
        from numbers_page import record

        rows = [
            ["`write_tx_per_s` legacy (publish over HTTP)", f"{legacy_rate:,.0f}"],
            [
                "`inprocess_tx_per_s` (the same writes straight into LiteSVM)",
                f"{inprocess_rate:,.0f}",
            ],
            ["ratio to in-process", f"**{legacy_rate / inprocess_rate:.2f}** (target ≥ 0.5)"],
            ["`naive_tx_per_s` (solana-py send + confirm, one at a time)", f"{naive_rate:.1f}"],
            ["ratio to naive", f"**{legacy_rate / naive_rate:,.0f}×** (target ≥ 20)"],
        ]
        for version in ("legacy", "v1"):
            measured = summary[version]
            rows.append(
                [
                    f"{version}: writes, bytes a write, MB/s",
                    f"{measured['writes']:,}, {measured['bytes_per_write_tx']:,}, "
                    f"{measured['mb_per_s']:.2f}",
                ]
            )
        rows.append(["v1 over legacy, bytes a second", f"**{speedup:.2f}×** (target ≥ 3)"])
        if with_seal:
            rows.append(
                [
                    "`seal_seconds`, `seal_transactions`",
                    f"{out['seal_seconds']:.1f} s, {out['seal_transactions']}",
                ]
            )
        record(
            "publish",
            "Publishing",
            " ".join([".venv/bin/python scripts/bench_publish.py", *sys.argv[1:]]),
            ["measure", "value"],
            rows,
            "The stories15M-shaped artifact on a fresh `curta-chain localnet` process, its "
            "writes sent as legacy and as v1 transactions in one run.",
            "The naive client waits for each transaction's confirmation (its 400 ms slot) before "
            "sending the next; the pipelined sender keeps 2,048 in flight.",
        )


if __name__ == "__main__":
    main()
