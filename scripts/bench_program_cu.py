"""Measure the compute units each curta instruction consumes in LiteSVM (the real runtime).

Prints Markdown tables. The numbers are the program's own line in the runtime log
("Program <id> consumed N of M compute units"), so system-program instructions in the same
transaction are not counted. No instruction loops over the weight accounts any more, so the
section count changes only createModel's cost (it checks each length). sealStep is measured
with one weight account and with two (a step sent at a section's end names both).

Inference (``--inference``): the matvec kernel's compute units per multiply-accumulate,
built from ``programs/curta/src/matvec.c`` with the program's own flags into a harness
(marginal: the difference between two matrix sizes, over the MACs added), and the same
figure for a whole classifier step of the program; openRun, step and closeRun; and the
step transactions a token takes on stories260K (real weights) and on a stories15M-shaped
model (synthetic weights, the real 32,000-token vocabulary), each run mirrored step by step.

``--calibrate`` builds the program with ``-DCALIBRATE`` (each phase of a step logs its real
compute units beside its estimate), runs both models, and prints per kind of phase the
largest real / estimated ratio; it exits 1 when one passes 1 (refit the cost model).

``--step-time`` times, in this process's LiteSVM (the engine the localnet executes every
transaction with), each step of a stories260K run and of a stories15M-shaped token, and 15
seal steps, a transfer before each as the baseline in the same run; only its table runs then.

``--record`` appends the instruction table to docs/numbers/program_cu.jsonl; with
``--inference``, the inference tables instead (inference_cu_matvec, _instructions and
_tokens.jsonl); with ``--step-time``, that table to docs/numbers/step_time.jsonl
(scripts/numbers_page.py renders them).

Usage: .venv/bin/python scripts/bench_program_cu.py [--inference] [--calibrate] [--record]
       .venv/bin/python scripts/bench_program_cu.py --step-time [--record]
"""

from __future__ import annotations

import os
import re
import sys

from solders.instruction import Instruction
from solders.keypair import Keypair
from solders.litesvm import LiteSVM
from solders.message import Message
from solders.pubkey import Pubkey
from solders.system_program import CreateAccountParams, create_account
from solders.transaction import Transaction

from curta_chain.constants import (
    HASH_CHUNK_SIZE,
    LOCALNET_PROGRAM_ID,
    MAX_SECTIONS,
    WEIGHT_HEADER_SIZE,
)
from curta_chain.localnet.current_bank import reuse_freed_memory
from curta_chain.program import (
    MAX_WRITE_PAYLOAD,
    MODEL_ACCOUNT_SIZE,
    PROGRAM_BINARY,
    begin_sealing,
    bind_weight_account,
    close_model,
    close_weight_account,
    create_model,
    reopen,
    seal_step,
    write_weights,
)

PROGRAM_ID = Pubkey.from_string(LOCALNET_PROGRAM_ID)
_CONSUMED = re.compile(rf"Program {PROGRAM_ID} consumed (\d+) of")


class _Bench:
    def __init__(self) -> None:
        reuse_freed_memory()  # as the localnet's process does
        self.svm = LiteSVM()
        self.svm.add_program(PROGRAM_ID, PROGRAM_BINARY.read_bytes())
        self.authority = Keypair()
        self.svm.airdrop(self.authority.pubkey(), 10**13)

    def units(self, ixs: list[Instruction], signers: list[Keypair] = ()) -> int:
        """Send; return the compute units the curta program consumed (it must succeed)."""
        tx = Transaction(
            [self.authority, *signers],
            Message(ixs, self.authority.pubkey()),
            self.svm.latest_blockhash(),
        )
        meta = self.svm.send_transaction(tx)
        self.svm.expire_blockhash()  # the same instructions again are another transaction
        if hasattr(meta, "err"):
            raise RuntimeError(f"{meta.err()}: {meta.meta().logs()}")
        return sum(int(m.group(1)) for line in meta.logs() if (m := _CONSUMED.match(line)))

    def new_account(self, kp: Keypair, size: int) -> Instruction:
        params = CreateAccountParams(
            from_pubkey=self.authority.pubkey(),
            to_pubkey=kp.pubkey(),
            lamports=self.svm.minimum_balance_for_rent_exemption(size),
            space=size,
            owner=PROGRAM_ID,
        )
        return create_account(params)

    def model(self, lengths: list[int], declared: bytes = bytes(32)) -> tuple[Keypair, int]:
        model = Keypair()
        ix = create_model(PROGRAM_ID, self.authority.pubkey(), model.pubkey(), declared, lengths)
        return model, self.units([self.new_account(model, MODEL_ACCOUNT_SIZE), ix], [model])

    def bind(self, model: Keypair, lengths: list[int]) -> tuple[list[Keypair], int]:
        weights, used = [], 0
        for index, length in enumerate(lengths):
            weight = Keypair()
            ix = bind_weight_account(
                PROGRAM_ID, self.authority.pubkey(), model.pubkey(), weight.pubkey(), index
            )
            used = self.units([self.new_account(weight, WEIGHT_HEADER_SIZE + length), ix], [weight])
            weights.append(weight)
        return weights, used


def measure() -> list[tuple[str, int]]:
    """Run each instruction once in LiteSVM and return (label, compute units) rows."""
    bench = _Bench()
    auth = bench.authority.pubkey()
    rows: list[tuple[str, int]] = []
    lengths = [2 * HASH_CHUNK_SIZE, 3 * 1000]
    model, used = bench.model(lengths)
    address = model.pubkey()
    rows.append(("createModel (2 sections)", used))
    weights, used = bench.bind(model, lengths)
    rows.append(("bindWeightAccount", used))
    keys = [w.pubkey() for w in weights]
    for size in (1_000, MAX_WRITE_PAYLOAD):
        ix = write_weights(PROGRAM_ID, auth, keys[0], 0, os.urandom(size))
        rows.append((f"writeWeights ({size:,} bytes)", bench.units([ix])))
    rows.append(("beginSealing", bench.units([begin_sealing(PROGRAM_ID, auth, address)])))
    step = seal_step(PROGRAM_ID, address, keys[:1], 0)
    rows.append((f"sealStep ({HASH_CHUNK_SIZE:,} bytes, entering a section)", bench.units([step])))
    step = seal_step(PROGRAM_ID, address, keys, 1)
    rows.append((f"sealStep ({HASH_CHUNK_SIZE:,} bytes, two accounts)", bench.units([step])))
    step = seal_step(PROGRAM_ID, address, keys, 2)
    label = "sealStep (3,000 bytes, the second of two accounts, last: compare, Failed)"
    rows.append((label, bench.units([step])))
    for index, label in enumerate(("reopen (one weight account)", "reopen (the last one)")):
        ix = reopen(PROGRAM_ID, auth, address, keys[index], index)
        rows.append((label, bench.units([ix])))
    ix = close_weight_account(PROGRAM_ID, auth, address, keys[0], 0)
    rows.append(("closeWeightAccount", bench.units([ix])))
    bench.units([close_weight_account(PROGRAM_ID, auth, address, keys[1], 1)])
    rows.append(("closeModel", bench.units([close_model(PROGRAM_ID, auth, address)])))

    model, used = bench.model([1_000] * MAX_SECTIONS)
    rows.append((f"createModel ({MAX_SECTIONS} sections)", used))
    return rows


def step_time() -> int:
    """Print (and with --record, record) the execution time of steps and seal steps."""
    from bench_inference import step_times

    timed = step_times()
    baseline = timed[0].median
    columns = [
        "transaction",
        "compute units",
        "median ms (CPU ms)",
        "range ms",
        "× a transfer",
        "M units/s",
    ]
    rows = [
        [
            t.label,
            f"{t.units:,}",
            f"{1e3 * t.median:.2f} ({1e3 * t.median_cpu:.2f})",
            f"{1e3 * min(t.seconds):.2f} to {1e3 * max(t.seconds):.2f}",
            f"{t.median / baseline:,.0f}×",
            f"{t.units / t.median / 1e6:,.0f}",
        ]
        for t in timed
    ]
    print("| " + " | ".join(columns) + " |")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print(f"(load average {', '.join(f'{x:.2f}' for x in os.getloadavg())})")
    if "--record" in sys.argv[1:]:
        from numbers_page import record

        record(
            "step_time",
            "Execution time of a step",
            ".venv/bin/python scripts/bench_program_cu.py --step-time --record",
            columns,
            rows,
            "solders' LiteSVM `send_transaction` of each transaction, timed in one process: the "
            "localnet executes every transaction with this call (its HTTP and block machinery "
            "add about 1 ms a transaction, see the localnet's CPU a transaction). The steps of "
            "a greedy 32-token stories260K run and of a stories15M-shaped token, and 15 seal "
            "steps of a 1 MB section, a transfer timed before each as the baseline.",
        )
    return 0


def main() -> int:
    if "--step-time" in sys.argv[1:]:
        return step_time()
    rows = measure()
    print("| instruction | compute units |")
    print("| --- | ---: |")
    for label, units in rows:
        print(f"| {label} | {units:,} |")
    inference = "--inference" in sys.argv[1:]
    if "--record" in sys.argv[1:] and not inference:
        from numbers_page import record

        record(
            "program_cu",
            "Compute units per instruction",
            ".venv/bin/python scripts/bench_program_cu.py --record",
            ["instruction", "compute units"],
            [[label, f"{units:,}"] for label, units in rows],
            "The program's own \"consumed\" log line in solders' LiteSVM; compute units do not "
            "depend on the machine. A seal step's limit is 40,000 units.",
            "No instruction loops over the weight accounts: only createModel's cost grows with "
            "the section count.",
        )
    if inference:
        from bench_inference import print_inference

        print_inference(record_them="--record" in sys.argv[1:])
    if "--calibrate" in sys.argv[1:]:
        from bench_inference import print_calibration

        return print_calibration()
    return 0


if __name__ == "__main__":
    sys.exit(main())
