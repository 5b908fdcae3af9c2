"""sendTransaction throughput of the embedded localnet over HTTP, next to LiteSVM in-process.

Starts `python -m curta_chain localnet` (a separate process, as users run it), sets up a
curta model with one weight account per mode, then sends full-size writeWeights
transactions (1,232 bytes, MAX_WRITE_PAYLOAD bytes of weights each) over HTTP:

- single: one sendTransaction per request, one request at a time (keep-alive);
- concurrent: single requests, 64 in flight;
- batch100 / batch250: JSON-RPC batches, one at a time;
- batch100x4: batches of 100, 4 in flight;

then replays the very same transactions through a bare in-process LiteSVM (sigverify on).
Beside each mode's rate it prints the localnet process's CPU time per transaction, which
moves less with machine load than the rates do.
With ``--blocks`` it runs every mode twice in the same run, against today's localnet and
against one started with ``--blocks`` (the busy mode's blocks, leader's order and limits,
no loss), where a mode's CPU counts until every transaction has landed in its block; it
prints the ratio of the two CPU times a transaction (the target is at most 1.2), and the
floor of that ratio: block mode's preflight is one more execution of each transaction (a
LiteSVM simulation, timed in-process on the same transactions, each just before it runs,
in a LiteSVM set up as the localnet's), so no bookkeeping could bring it below
(default + simulation) / default. The two
localnets run side by side and take turns mode by mode (``--rounds N``: N times, who goes
first alternating), so that a change in a shared machine's load falls on both alike.
The last line printed is JSON.

    .venv/bin/python scripts/bench_localnet.py [--count 2000] [--ledger] [--section-bytes N]
        [--blocks] [--skip-preflight] [--rounds N] [--record]
    .venv/bin/python scripts/bench_localnet.py --execution-costs [--record]

With ``--blocks --record`` it appends the CPU ratios to docs/numbers/busy_localnet.jsonl;
with ``--record`` alone it runs today's localnet and one serving ``--ledger`` side by side,
taking turns the same way, and appends both to docs/numbers/localnet.jsonl; with
``--execution-costs --record`` it appends the costs to
docs/numbers/localnet_execution_costs.jsonl.
"""

import argparse
import asyncio
import base64
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from statistics import mean

import aiohttp
import httpx
from solders.account import Account
from solders.hash import Hash
from solders.instruction import Instruction
from solders.keypair import Keypair
from solders.litesvm import LiteSVM
from solders.message import Message
from solders.pubkey import Pubkey
from solders.system_program import ID as SYSTEM_PROGRAM_ID
from solders.system_program import CreateAccountParams, create_account
from solders.transaction import VersionedTransaction

from curta_chain.chain.features import TxVersion
from curta_chain.chain.specs import WRITE_CU, Budget
from curta_chain.chain.specs import message as compile_message
from curta_chain.constants import LAMPORTS_PER_SOL, LOCALNET_PROGRAM_ID, WEIGHT_HEADER_SIZE
from curta_chain.localnet.current_bank import new_svm
from curta_chain.program import (
    MAX_WRITE_PAYLOAD,
    MODEL_ACCOUNT_SIZE,
    PROGRAM_BINARY,
    bind_weight_account,
    create_model,
    write_weights,
)

PROGRAM_ID = Pubkey.from_string(LOCALNET_PROGRAM_ID)
MODES = ("single", "concurrent", "batch100", "batch250", "batch100x4")


def rpc(http: httpx.Client, url: str, method: str, params: list) -> object:
    answer = http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    body = answer.json()
    if "error" in body:
        raise RuntimeError(f"{method}: {body['error']}")
    return body["result"]


def start_node(ledger: str | None, extra: tuple[str, ...] = ()) -> tuple[subprocess.Popen, str]:
    command = [sys.executable, "-m", "curta_chain", "localnet", "--port", "0", *extra]
    if ledger:
        command += ["--ledger", ledger]
    node = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert node.stdout is not None
    for line in node.stdout:
        if line.startswith("Localnet ready at"):
            return node, line.split()[-1]
    node.wait()
    raise RuntimeError(f"localnet exited with code {node.returncode} before it was ready")


def program_account(payer: Keypair, account: Keypair, size: int, lamports: int) -> Instruction:
    """Create ``account`` with ``size`` bytes for the curta program, ``payer`` funding it."""
    params = CreateAccountParams(
        from_pubkey=payer.pubkey(),
        to_pubkey=account.pubkey(),
        lamports=lamports,
        space=size,
        owner=PROGRAM_ID,
    )
    return create_account(params)


def localnet_svm(payer: Keypair) -> LiteSVM:
    """An in-process LiteSVM set up as the localnet's, the program loaded, ``payer`` funded.

    Its features, and no sigverify: the localnet checks signatures itself, in every mode.
    """
    svm = new_svm().with_sigverify(False).with_blockhash_check(False)
    svm.with_transaction_history(0)
    svm.add_program(PROGRAM_ID, PROGRAM_BINARY.read_bytes())
    funds = Account(1_000 * LAMPORTS_PER_SOL, b"", SYSTEM_PROGRAM_ID, False, 0)
    svm.set_account(payer.pubkey(), funds)
    return svm


class Setup:
    """The authority, a model and one weight account per mode, created over RPC."""

    def __init__(
        self, http: httpx.Client, url: str, section: int, modes: tuple = MODES, blocks: bool = False
    ):
        self.http, self.url, self.blocks = http, url, blocks
        self.authority = Keypair()
        self.sent: list[VersionedTransaction] = []
        airdrop = [str(self.authority.pubkey()), 1_000 * LAMPORTS_PER_SOL]
        self.wait_landed([str(rpc(http, url, "requestAirdrop", airdrop))])
        self.model = Keypair()
        self.weights = {mode: Keypair() for mode in modes}
        lengths = [section] * len(modes)
        self.send(
            [
                self.new_account(self.model, MODEL_ACCOUNT_SIZE),
                create_model(
                    PROGRAM_ID, self.authority.pubkey(), self.model.pubkey(), bytes(32), lengths
                ),
            ],
            self.model,
        )
        for index, weight in enumerate(self.weights.values()):
            bind = bind_weight_account(
                PROGRAM_ID, self.authority.pubkey(), self.model.pubkey(), weight.pubkey(), index
            )
            self.send([self.new_account(weight, WEIGHT_HEADER_SIZE + section), bind], weight)

    def blockhash(self) -> Hash:
        value = rpc(self.http, self.url, "getLatestBlockhash", [])["value"]  # type: ignore[index]
        return Hash.from_string(value["blockhash"])

    def new_account(self, account: Keypair, size: int) -> Instruction:
        lamports = rpc(self.http, self.url, "getMinimumBalanceForRentExemption", [size])
        return program_account(self.authority, account, size, lamports)  # type: ignore[arg-type]

    def send(self, instructions: list[Instruction], *signers: Keypair) -> None:
        message = Message.new_with_blockhash(
            instructions, self.authority.pubkey(), self.blockhash()
        )
        tx = VersionedTransaction(message, [self.authority, *signers])
        rpc(self.http, self.url, "sendTransaction", [encode(tx), {"encoding": "base64"}])
        self.wait_landed([str(tx.signatures[0])])
        self.sent.append(tx)

    def wait_landed(self, signatures: list[str]) -> None:
        """In block mode, return once every one of ``signatures`` has landed."""
        if not self.blocks:
            return
        waiting = list(signatures)
        while waiting:
            statuses = []
            for start in range(0, len(waiting), 256):
                chunk = waiting[start : start + 256]
                answer = rpc(self.http, self.url, "getSignatureStatuses", [chunk])
                statuses += answer["value"]  # type: ignore[index]
            waiting = [s for s, status in zip(waiting, statuses, strict=True) if status is None]
            if waiting:
                time.sleep(0.25)  # polls cost the server CPU too: not too often

    def writes(
        self, mode: str, count: int, round_: int = 0, version: TxVersion = "legacy"
    ) -> list[VersionedTransaction]:
        """``count`` full-size writes into ``mode``'s account; each round writes other bytes.

        Legacy writes carry ``MAX_WRITE_PAYLOAD`` bytes, v1 ones fill 4,096 bytes as
        publish's do, their budget inline; neither sets a compute-unit price.
        """
        blockhash = self.blockhash()
        weight = self.weights[mode].pubkey()
        payload = Budget().write_payload(version)
        txs = []
        for n in range(count):
            word = (n + round_ * count).to_bytes(4, "little")
            data = (word * (payload // 4 + 1))[:payload]
            ix = write_weights(PROGRAM_ID, self.authority.pubkey(), weight, n * payload, data)
            spec = Budget().spec(WRITE_CU, (ix,), version)
            msg = compile_message(spec, self.authority.pubkey(), blockhash)
            txs.append(VersionedTransaction(msg, [self.authority]))
        return txs


def encode(tx: VersionedTransaction) -> str:
    return base64.b64encode(bytes(tx)).decode()


SKIP_PREFLIGHT = False
"""--skip-preflight: send without the preflight simulation."""


def request(tx_b64: str, request_id: int) -> dict:
    params = [tx_b64, {"encoding": "base64", "skipPreflight": SKIP_PREFLIGHT}]
    return {"jsonrpc": "2.0", "id": request_id, "method": "sendTransaction", "params": params}


def cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds the process ``pid`` has used (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def send_mode(url: str, mode: str, encoded: list[str]) -> float:
    batch = {"single": 1, "concurrent": 1, "batch100": 100, "batch250": 250, "batch100x4": 100}[
        mode
    ]
    in_flight = {"concurrent": 64, "batch100x4": 4}.get(mode, 1)
    bodies = []
    for start in range(0, len(encoded), batch):
        chunk = [request(tx, start + i) for i, tx in enumerate(encoded[start : start + batch])]
        bodies.append(json.dumps(chunk[0] if batch == 1 else chunk).encode())
    queue = list(reversed(bodies))
    failures = 0
    connector = aiohttp.TCPConnector(limit=in_flight)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def worker() -> None:
            nonlocal failures
            while queue:
                body = queue.pop()
                headers = {"content-type": "application/json"}
                async with session.post(url, data=body, headers=headers) as answer:
                    parsed = await answer.json()
                for item in parsed if isinstance(parsed, list) else [parsed]:
                    failures += "error" in item

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(in_flight)))
        elapsed = time.perf_counter() - start
    if failures:
        raise RuntimeError(f"{mode}: {failures} transactions refused")
    return len(encoded) / elapsed


def litesvm_rate(setup: Setup, txs: list[VersionedTransaction]) -> float:
    svm = LiteSVM().with_blockhash_check(False).with_transaction_history(0)
    svm.add_program(PROGRAM_ID, PROGRAM_BINARY.read_bytes())
    svm.airdrop(setup.authority.pubkey(), 1_000 * LAMPORTS_PER_SOL)
    for tx in setup.sent:
        assert not hasattr(svm.send_transaction(tx), "err")
    start = time.perf_counter()
    for tx in txs:
        result = svm.send_transaction(tx)
        if hasattr(result, "err"):
            raise RuntimeError(f"LiteSVM refused a write: {result.err()}")
    return len(txs) / (time.perf_counter() - start)


def simulation_us(setup: Setup, txs: list[VersionedTransaction]) -> float:
    """Mean µs of a preflight's LiteSVM simulation of each of ``txs``, in-process.

    The LiteSVM is set up as the localnet's (``localnet_svm``); each transaction is
    simulated just before it runs, so that each simulation sees the state its preflight
    would.
    """
    svm = localnet_svm(setup.authority)
    for tx in setup.sent:
        assert not hasattr(svm.send_transaction(tx), "err")
    spent = 0.0
    for tx in txs:
        start = time.perf_counter()
        simulated = svm.simulate_transaction(tx)
        spent += time.perf_counter() - start
        if hasattr(simulated, "err") or hasattr(svm.send_transaction(tx), "err"):
            raise RuntimeError("LiteSVM refused a write")
    return 1e6 * spent / len(txs)


def record_blocks(
    args: argparse.Namespace,
    server_us: dict[str, dict[str, list[float]]],
    ratio: float,
    floor: float,
) -> None:
    """Append the --blocks comparison (CPU a transaction, block mode over default) to the page."""
    from numbers_page import record

    met = "met" if ratio <= 1.2 else "not met"
    rows = [
        [
            mode,
            f"{mean(server_us['today'][mode]):,.0f}",
            f"{mean(server_us['blocks'][mode]):,.0f}",
            f"{sum(server_us['blocks'][mode]) / sum(server_us['today'][mode]):.2f}×",
        ]
        for mode in MODES
    ]
    rows.append(["all modes", "", "", f"**{ratio:.2f}×** (target ≤ 1.2×, {met})"])
    if not args.skip_preflight:
        rows.append(["floor: default + one simulation", "", "", f"{floor:.2f}×"])
    preflight = "with preflight"
    if args.skip_preflight:
        preflight = "without preflight (`--skip-preflight`)"
    record(
        "busy_localnet",
        "The busy localnet's CPU a transaction",
        " ".join([".venv/bin/python scripts/bench_localnet.py", *sys.argv[1:]]),
        ["mode", "default µs CPU a tx", "`--blocks` µs CPU a tx", "block over default"],
        rows,
        f"The localnet's own CPU per transaction, {preflight}, {args.count:,} full-size writes "
        f"a mode, the two localnets side by side taking turns mode by mode ({args.rounds} "
        "round(s)), on the shared machine. The floor is what block mode would cost with no "
        "bookkeeping at all: the default mode's CPU plus one LiteSVM simulation of each "
        "transaction (its preflight, timed in-process on the same transactions).",
    )


def execution_costs(
    sizes: tuple[int, ...] = (16_384, 262_144, 2_020_000, 10_483_712), keep: bool = False
) -> None:
    """Print what one write costs LiteSVM, in-process, by the size of the account written.

    For each size: a simulation, a send, a write that runs the program but fails before it
    writes (an offset past the end), applying a simulation's outcome (``post_accounts()``
    and ``set_account`` of the two accounts it wrote), and a plain copy of as many bytes
    (numpy, the baseline), each the mean over 200. Block mode's preflight is the simulation.
    With ``keep`` the table is appended to docs/numbers/localnet_execution_costs.jsonl.
    """
    print("account bytes | simulate | send | failing write | apply a simulation | memcpy (µs)")
    rows = []
    for section in sizes:
        costs = write_costs(section)
        rows.append([f"{WEIGHT_HEADER_SIZE + section:,}", *(f"{c:,.0f}" for c in costs)])
        print(" | ".join(rows[-1]))
    if keep:
        from numbers_page import record

        record(
            "localnet_execution_costs",
            "What a write costs LiteSVM, by account size",
            ".venv/bin/python scripts/bench_localnet.py --execution-costs --record",
            [
                "account bytes",
                "simulate",
                "send",
                "a write that fails before writing",
                "apply a simulation's outcome",
                "memcpy of as many bytes",
            ],
            rows,
            "µs a write of 1,000 bytes into a weight account, in-process, the mean of 200: "
            "a simulation (block mode's preflight), a send, a write that runs the program but "
            "fails before writing, applying a simulation's outcome (`post_accounts()` and "
            "`set_account`), and numpy copying as many bytes (the baseline).",
            "The runtime copies an account on the program's first write into it, whole: the "
            "cost of a write grows with its account, and a write that fails first costs the "
            "same at any size.",
        )


def write_costs(section: int, count: int = 200) -> tuple[float, ...]:
    """The µs ``execution_costs`` prints for one weight account of ``section`` bytes."""
    import numpy as np

    authority, model, weight = Keypair(), Keypair(), Keypair()
    svm = localnet_svm(authority)

    def transaction(instructions: list[Instruction], *signers: Keypair) -> VersionedTransaction:
        blockhash = svm.latest_blockhash()
        message = Message.new_with_blockhash(instructions, authority.pubkey(), blockhash)
        return VersionedTransaction(message, [authority, *signers])

    def new_account(account: Keypair, size: int) -> Instruction:
        lamports = svm.minimum_balance_for_rent_exemption(size)
        return program_account(authority, account, size, lamports)

    create = create_model(
        PROGRAM_ID, authority.pubkey(), model.pubkey(), bytes(32), [section, section]
    )
    bind = bind_weight_account(PROGRAM_ID, authority.pubkey(), model.pubkey(), weight.pubkey(), 0)
    for tx in (
        transaction([new_account(model, MODEL_ACCOUNT_SIZE), create], model),
        transaction([new_account(weight, WEIGHT_HEADER_SIZE + section), bind], weight),
    ):
        assert not hasattr(svm.send_transaction(tx), "err")

    def writes(past_the_end: bool, salt: int = 0) -> list[VersionedTransaction]:
        # 1,000 bytes each, at offsets that stay inside the section (or start past its end).
        offsets = [
            section + n if past_the_end else n * 1_000 % (section - 1_000) for n in range(count)
        ]
        return [
            transaction(
                [
                    write_weights(
                        PROGRAM_ID,
                        authority.pubkey(),
                        weight.pubkey(),
                        offsets[n],
                        (n + salt).to_bytes(2, "little") * 500,
                    )
                ]
            )
            for n in range(count)
        ]

    def mean_us(run: Callable[[VersionedTransaction], object], txs: list) -> float:
        start = time.perf_counter()
        for tx in txs:
            run(tx)
        return 1e6 * (time.perf_counter() - start) / count

    written = {authority.pubkey(), weight.pubkey()}

    def apply(tx: VersionedTransaction) -> None:
        for key, account in svm.simulate_transaction(tx).post_accounts():  # type: ignore[union-attr]
            if key in written:
                svm.set_account(key, account)

    good = writes(False)
    simulate = mean_us(svm.simulate_transaction, good)
    failing = mean_us(svm.simulate_transaction, writes(True))
    applied = mean_us(apply, good) - simulate
    send = mean_us(svm.send_transaction, writes(False, salt=count))
    source = np.ones(WEIGHT_HEADER_SIZE + section, dtype=np.uint8)
    target = np.empty_like(source)
    start = time.perf_counter()
    for _ in range(count):
        np.copyto(target, source)
    copy = 1e6 * (time.perf_counter() - start) / count
    return simulate, send, failing, applied, copy


MODE_NAMES = {
    "single": "one sendTransaction per request",
    "concurrent": "64 requests in flight",
    "batch100": "JSON-RPC batches of 100",
    "batch250": "batches of 250",
    "batch100x4": "batches of 100, 4 in flight",
}


def record_throughput(
    args: argparse.Namespace,
    rates: dict[str, dict[str, list[float]]],
    server_us: dict[str, dict[str, list[float]]],
    in_process: float,
    size: int,
) -> None:
    """Append today's localnet's throughput, and with ``--ledger``, to the page."""
    from numbers_page import record

    rows = [
        [
            MODE_NAMES[mode],
            f"{mean(rates['today'][mode]):,.0f}",
            f"{mean(server_us['today'][mode]):,.0f}",
            f"{mean(rates['ledger'][mode]):,.0f}",
            f"{mean(server_us['ledger'][mode]):,.0f}",
        ]
        for mode in MODES
    ]
    rows.append(["LiteSVM in-process, same transactions", f"{in_process:,.0f}", "", "", ""])
    record(
        "localnet",
        "The localnet's throughput",
        " ".join([".venv/bin/python scripts/bench_localnet.py", *sys.argv[1:]]),
        ["mode", "tx/s", "server µs CPU a tx", "with `--ledger`: tx/s", "server µs CPU a tx"],
        rows,
        f"sendTransaction over HTTP with preflight, {args.count:,} writes of {size:,} bytes a "
        f"mode, the default localnet and one with `--ledger` (each transaction fsynced to its log) "
        f"side by side, taking turns mode by mode ({args.rounds} round(s)); then the same "
        "transactions in a bare LiteSVM in this process (sigverify on).",
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=2000, help="transactions per mode")
    parser.add_argument("--ledger", action="store_true", help="serve with --ledger (fsync)")
    parser.add_argument(
        "--section-bytes",
        type=int,
        help="weight account section size (default: just what the writes fill); LiteSVM "
        "copies an account on every write, so 10 MB accounts are slower",
    )
    parser.add_argument(
        "--blocks",
        action="store_true",
        help="run every mode against today's localnet and against --blocks; compare the CPU",
    )
    parser.add_argument(
        "--skip-preflight", action="store_true", help="send with skipPreflight (no simulation)"
    )
    parser.add_argument(
        "--rounds", type=int, default=1, help="run every mode this many times (default 1)"
    )
    parser.add_argument(
        "--execution-costs",
        action="store_true",
        help="only print what one write costs LiteSVM in-process, by account size",
    )
    parser.add_argument(
        "--record",
        action="store_true",
        help="append to docs/numbers/: the throughput, with --blocks the CPU ratios, with "
        "--execution-costs the costs",
    )
    args = parser.parse_args()
    if args.execution_costs:
        execution_costs(keep=args.record)
        return 0
    if args.record and args.ledger:
        parser.error("--record runs a --ledger localnet beside today's: drop --ledger")
    global SKIP_PREFLIGHT
    SKIP_PREFLIGHT = args.skip_preflight
    section = max(args.section_bytes or 0, args.count * MAX_WRITE_PAYLOAD)
    kinds: dict[str, tuple[str, ...]] = {"today": ()}
    ledgers = {"today": args.ledger}
    if args.record and not args.blocks:
        kinds["ledger"], ledgers["ledger"] = (), True
    if args.blocks:
        # The limits would spread one account's writes over many blocks: lift them so that
        # both localnets run the same transactions and only the machinery differs, and so
        # that each block takes the whole queue. (A full-size write reserves about 218,000
        # CU, so the default 100M-CU block, and an account limit of as much, hold about 458.)
        lifted = str(10**12)
        kinds["blocks"] = ("--blocks", "--seed", "1", "--account-write-limit", "100000")
        kinds["blocks"] += ("--account-cu-limit", lifted, "--block-cu-limit", lifted)
    rates: dict[str, dict[str, list[float]]] = {kind: {} for kind in kinds}
    server_us: dict[str, dict[str, list[float]]] = {kind: {} for kind in kinds}
    with contextlib.ExitStack() as stack:
        # Both localnets run side by side and take turns, one mode at a time, so that a
        # change in the machine's load falls on both alike (the machine may be shared).
        nodes: dict[str, tuple[subprocess.Popen, str, Setup]] = {}
        for kind, extra in kinds.items():
            folder = stack.enter_context(tempfile.TemporaryDirectory())
            node, url = start_node(folder if ledgers.get(kind) else None, extra)
            stack.callback(node.wait)
            stack.callback(node.terminate)
            http = stack.enter_context(httpx.Client(timeout=60))
            nodes[kind] = (node, url, Setup(http, url, section, blocks=kind == "blocks"))
        sent: list[VersionedTransaction] = []
        for round_ in range(args.rounds):
            for mode in MODES:
                # Who goes first alternates from round to round.
                order = list(kinds) if round_ % 2 == 0 else list(reversed(kinds))
                for kind in order:
                    node, url, setup = nodes[kind]
                    txs = setup.writes(mode, args.count, round_)
                    size = len(bytes(txs[0]))
                    before = cpu_seconds(node.pid)
                    rate = asyncio.run(send_mode(url, mode, [encode(tx) for tx in txs]))
                    # The limits are lifted: each block takes the whole queue, so once the
                    # last one sent has landed all have (checked after the CPU is read, so
                    # that the check's reads are not counted).
                    setup.wait_landed([str(txs[-1].signatures[0])])
                    us = 1e6 * (cpu_seconds(node.pid) - before) / len(txs)
                    setup.wait_landed([str(tx.signatures[0]) for tx in txs])
                    rates[kind].setdefault(mode, []).append(rate)
                    server_us[kind].setdefault(mode, []).append(us)
                    if kind == list(kinds)[-1]:
                        sent += txs
                    print(
                        f"{kind:<6} http {mode:<11} {rate:8.0f} tx/s  "
                        f"({args.count} x {size} B), server {us:5.0f} us CPU a transaction"
                    )
    setup = nodes[list(kinds)[-1]][2]
    in_process = litesvm_rate(setup, sent)
    print(f"litesvm in-process {in_process:8.0f} tx/s  ({len(sent)} same transactions)")
    simulated = simulation_us(setup, sent) if args.blocks and not args.skip_preflight else 0.0
    summary: dict[str, object] = {
        "transactions_per_mode": args.count,
        "transaction_bytes": size,
        "ledger": args.ledger,
        "skip_preflight": args.skip_preflight,
        "weight_account_bytes": WEIGHT_HEADER_SIZE + section,
        "litesvm_in_process_tx_per_s": round(in_process),
        "rounds": args.rounds,
        **{f"http_{mode}_tx_per_s": round(mean(r)) for mode, r in rates["today"].items()},
        **{f"server_{mode}_us_per_tx": round(mean(us)) for mode, us in server_us["today"].items()},
    }
    if args.blocks:
        today = sum(sum(us) for us in server_us["today"].values())
        blocks = sum(sum(us) for us in server_us["blocks"].values())
        for mode in MODES:
            ratio = sum(server_us["blocks"][mode]) / sum(server_us["today"][mode])
            print(f"blocks/today CPU a transaction, {mode:<11} {ratio:5.2f}x")
            summary[f"blocks_server_{mode}_us_per_tx"] = round(mean(server_us["blocks"][mode]))
        print(f"blocks/today CPU a transaction, all modes  {blocks / today:5.2f}x")
        summary["blocks_cpu_ratio"] = round(blocks / today, 3)
        runs = sum(len(us) for us in server_us["today"].values())
        floor = (today + runs * simulated) / today
        print(f"floor (default + a {simulated:.0f} us simulation a transaction) {floor:5.2f}x")
        summary["simulation_us_per_tx"] = round(simulated)
        summary["blocks_cpu_floor"] = round(floor, 3)
    print(json.dumps(summary))
    if args.record and args.blocks:
        record_blocks(args, server_us, blocks / today, floor)
    elif args.record:
        record_throughput(args, rates, server_us, in_process, size)
    return 0


if __name__ == "__main__":
    sys.exit(main())
