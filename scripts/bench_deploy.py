"""Deploy the shipped program on a fresh embedded localnet, with legacy and with v1 writes.

Each version deploys the build the localnet's features choose to its own program address,
paid by its own payer, through the library `curta-chain deploy` calls (plan, then deploy,
over HTTP). Prints a line per version, then as its last line one JSON object:
  legacy, v1        each: build, elf_bytes, write_transactions, transactions (all the
                    deploy sent: buffer, writes, deploy), write_chunk, seconds (the deploy,
                    not its plan)
  v1_over_legacy    v1's transactions and seconds over legacy's

    .venv/bin/python scripts/bench_deploy.py [--repeat 3] [--record]

With --repeat N each version deploys N times (to N addresses) and the fastest is kept.
"""

import argparse
import asyncio
import json
import sys
import time
from dataclasses import asdict, dataclass

from bench_publish import airdrop, free_port, start_localnet
from solders.keypair import Keypair

from curta_chain.chain.context import ChainContext
from curta_chain.chain.deploy import deploy, plan_deploy
from curta_chain.chain.features import select_build
from curta_chain.chain.rpc import RpcClient
from curta_chain.chain.specs import Budget
from curta_chain.chain.transport import HttpTransport


@dataclass(frozen=True)
class DeployRun:
    """What one deploy sent, and how long it took."""

    build: str
    elf_bytes: int
    write_transactions: int
    transactions: int
    write_chunk: int
    seconds: float


async def deployed(url: str, version: str) -> DeployRun:
    """Deploy once with ``version`` buffer writes."""
    client = RpcClient(HttpTransport(url), "confirmed")
    try:
        payer, program = Keypair(), Keypair()
        await airdrop(client, payer.pubkey(), 10)
        build = (await select_build(client)).program
        ctx = ChainContext(client, program.pubkey(), payer, budget=Budget(tx_version=version))
        plan = await plan_deploy(ctx, program, build, final=False)
        assert plan.tx_version == version, f"asked for {version}, planned {plan.tx_version}"
        started = time.perf_counter()
        result = await deploy(ctx, program, plan)
        seconds = time.perf_counter() - started
        assert result.transactions == plan.transactions
        return DeployRun(
            build.name,
            len(build.elf),
            len(plan.writes),
            result.transactions,
            plan.chunk,
            round(seconds, 3),
        )
    finally:
        await client.aclose()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3, help="deploys per version (fastest kept)")
    parser.add_argument(
        "--record", action="store_true", help="append the results to docs/numbers/deploy.jsonl"
    )
    args = parser.parse_args()
    port = free_port()
    proc = start_localnet(port)
    url = f"http://127.0.0.1:{port}"
    try:
        runs = {
            version: min(
                (asyncio.run(deployed(url, version)) for _ in range(args.repeat)),
                key=lambda run: run.seconds,
            )
            for version in ("legacy", "v1")
        }
    finally:
        proc.terminate()
        proc.wait()
    for version, run in runs.items():
        print(
            f"{version:>6}: {run.build} ({run.elf_bytes:,} bytes) in {run.transactions} "
            f"transactions ({run.write_transactions} writes of up to {run.write_chunk:,} "
            f"bytes), {run.seconds:.3f} s"
        )
    legacy, v1 = runs["legacy"], runs["v1"]
    ratio = {
        "transactions": round(v1.transactions / legacy.transactions, 3),
        "seconds": round(v1.seconds / legacy.seconds, 3),
    }
    print(
        f"v1 over legacy: {ratio['transactions']} x the transactions, {ratio['seconds']} x the time"
    )
    out = {version: asdict(run) for version, run in runs.items()}
    print(json.dumps({**out, "v1_over_legacy": ratio}))
    if args.record:
        from numbers_page import record

        rows = [
            [
                version,
                f"{run.build} ({run.elf_bytes:,} bytes)",
                f"{run.transactions} ({run.write_transactions} writes of up to "
                f"{run.write_chunk:,} bytes)",
                f"{run.seconds:.2f} s",
            ]
            for version, run in runs.items()
        ]
        rows.append(
            [
                "v1 over legacy",
                "",
                f"**{ratio['transactions']:.3f}×**",
                f"**{ratio['seconds']:.2f}×**",
            ]
        )
        record(
            "deploy",
            "Deploying the program: legacy and v1 buffer writes",
            " ".join([".venv/bin/python scripts/bench_deploy.py", *sys.argv[1:]]),
            ["buffer writes", "build", "transactions", "time"],
            rows,
            "`deploy` of the shipped program on a fresh `curta-chain localnet` process (ideal, "
            "400 ms slots), each version to its own address by its own payer, in one run; "
            f"the fastest of {args.repeat} deploys each.",
        )


if __name__ == "__main__":
    main()
