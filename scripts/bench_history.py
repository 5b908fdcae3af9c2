"""What keeping the confirmed and finalized views costs while a model is published.

Starts an embedded localnet in this process (real 400 ms slots), creates a curta model
with two 10 MiB weight accounts, then writes ``--megabytes`` of weights into them in
full-size writeWeights transactions (v1 by default, 3,864 bytes of weights each, as publish
sends on the localnet; ``--tx-version legacy``: 1,010), sent as JSON-RPC batches of 100
(as the publisher does), for ``--seconds`` at most. Every 0.2 s it samples the bank
history's bytes (the confirmed copies of recently written accounts plus the undo records
of the last 33 slots) and the process's peak RSS. It then times a 1 MiB account read at
each commitment. The last line printed is JSON.

    .venv/bin/python scripts/bench_history.py [--megabytes 16] [--seconds 120]
        [--tx-version v1|legacy] [--record]
"""

import argparse
import json
import resource
import sys
import threading
import time

import httpx
from bench_localnet import Setup, encode, request

from curta_chain.chain.specs import Budget
from curta_chain.constants import MAX_ACCOUNT_SIZE, WEIGHT_HEADER_SIZE
from curta_chain.localnet import start_in_thread

SECTION = MAX_ACCOUNT_SIZE - WEIGHT_HEADER_SIZE
BATCH = 100
MIB = 1024 * 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=16.0, help="weights to write")
    parser.add_argument("--seconds", type=float, default=120.0, help="stop writing after this")
    parser.add_argument(
        "--tx-version", default="v1", choices=["v1", "legacy"], help="the writes' format"
    )
    parser.add_argument(
        "--record", action="store_true", help="append the results to docs/numbers/history.jsonl"
    )
    args = parser.parse_args()
    payload = Budget().write_payload(args.tx_version)
    handle = start_in_thread()
    samples: list[tuple[float, int, int, int]] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            banks = handle.call(
                lambda localnet: (localnet.banks.base_bytes, localnet.banks.undo_bytes)
            )
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
            samples.append((time.monotonic(), banks[0], banks[1], rss))
            stop.wait(0.2)

    try:
        with httpx.Client(timeout=120) as http:
            setup = Setup(http, handle.url, SECTION, modes=("a", "b"))
            writes = int(args.megabytes * 1e6) // payload
            rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            started = time.monotonic()
            sent = 0
            for mode in ("a", "b"):
                remaining = min(writes - sent, SECTION // payload)
                txs = setup.writes(mode, remaining, version=args.tx_version)
                for start in range(0, len(txs), BATCH):
                    body = [
                        request(encode(tx), i) for i, tx in enumerate(txs[start : start + BATCH])
                    ]
                    answers = http.post(handle.url, json=body).json()
                    if any("error" in answer for answer in answers):
                        raise RuntimeError(f"a write was refused: {answers[0]}")
                    if time.monotonic() - started > args.seconds:
                        break
                sent += len(txs)
            elapsed = time.monotonic() - started
            time.sleep(14)  # 33 slots: everything written becomes finalized and is let go
            reads = {}
            weight = setup.weights["a"].pubkey()
            for commitment in ("processed", "confirmed", "finalized"):
                config = {
                    "encoding": "base64",
                    "commitment": commitment,
                    "dataSlice": {"offset": 0, "length": MIB},
                }
                begin = time.perf_counter()
                for _ in range(20):
                    http.post(
                        handle.url,
                        json={
                            "jsonrpc": "2.0",
                            "id": 1,
                            "method": "getAccountInfo",
                            "params": [str(weight), config],
                        },
                    ).raise_for_status()
                reads[commitment] = (time.perf_counter() - begin) / 20 * 1000
    finally:
        stop.set()
        handle.stop()
    peak = max(samples, key=lambda s: s[1] + s[2])
    summary = {
        "megabytes_written": round(sent * payload / 1e6, 1),
        "transactions": sent,
        "write_seconds": round(elapsed, 1),
        "weight_account_bytes": MAX_ACCOUNT_SIZE,
        "history_peak_bytes": peak[1] + peak[2],
        "history_peak_base_bytes": peak[1],
        "history_peak_undo_bytes": peak[2],
        "history_bytes_after_finalized": samples[-1][1] + samples[-1][2],
        "peak_rss_growth_bytes": max(s[3] for s in samples) - rss_before,
        "read_1mib_ms": {k: round(v, 2) for k, v in reads.items()},
    }
    print(f"wrote {summary['megabytes_written']} MB in {summary['write_seconds']} s")
    print(f"history peak: {peak[1] / MIB:.1f} MiB confirmed copies + {peak[2] / MIB:.1f} MiB undo")
    print(json.dumps(summary))
    if args.record:
        from numbers_page import record

        record(
            "history",
            "The commitment history",
            " ".join([".venv/bin/python scripts/bench_history.py", *sys.argv[1:]]),
            ["measure", "value"],
            [
                ["confirmed copies, peak", f"{peak[1] / MIB:.1f} MiB"],
                ["undo records, peak", f"{peak[2] / MIB:.1f} MiB"],
                [
                    "either, once finalized",
                    f"{summary['history_bytes_after_finalized'] / MIB:.1f} MiB",
                ],
                [
                    "a 1 MiB read of a final account at " + " / ".join(reads),
                    " / ".join(f"{ms:.1f}" for ms in reads.values()) + " ms",
                ],
            ],
            f"{summary['megabytes_written']} MB written into two 10 MiB weight accounts over "
            f"HTTP in {sent:,} {args.tx_version} transactions ({payload:,} bytes of weights "
            f"each), batches of 100, in {summary['write_seconds']} s, the localnet in-process.",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
