"""Compute units of both shipped builds in both runtimes, from one lifecycle in each.

Runs the lifecycle of ``tests/program/lifecycle.py`` (deploy through the upgradeable
loader, create, bind, write, seal) with the SBPF v0 and v3 builds in solders 0.29's
LiteSVM (Agave 4.1) and in npm litesvm 1.5 (Agave 4.3), each with every feature on (v0
added directly: SIMD-0500 refuses its deployment). Prints a Markdown table
of each instruction's compute units (the program's own "consumed" log line) and the ratio
of v3 to v0 in the same runtime.

Usage: .venv/bin/python scripts/bench_runtimes_cu.py   (needs `npm ci` in tests/litesvm_node)
"""

from __future__ import annotations

import sys
from pathlib import Path

# The lifecycle and runtimes are the program tests' own harness: this benchmark runs them.
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "program"))

from lifecycle import Lifecycle, run_lifecycle  # noqa: E402
from runtimes import NodeRuntime, Session, SoldersRuntime, node_runner_missing  # noqa: E402
from solders.pubkey import Pubkey  # noqa: E402

from curta_chain.program import shipped_program  # noqa: E402


def _run(session: Session, build: str, deploy: bool = True) -> Lifecycle:
    elf = shipped_program(build).elf
    if deploy:
        deployment = session.deploy(elf)
        if not deployment.outcome.ok:
            raise RuntimeError(
                f"{session.runtime.name}: deploy of {build}: {deployment.outcome.error}"
            )
        return run_lifecycle(session, deployment.program_id)
    program_id = Pubkey.new_unique()
    session.runtime.add_program(program_id, elf)
    return run_lifecycle(session, program_id)


def measure() -> dict[str, Lifecycle]:
    """Column label -> the lifecycle measured there."""
    solders = SoldersRuntime()
    node = NodeRuntime("all")
    try:
        return {
            "Agave 4.1, v0": _run(Session(solders), "sbpf-v0", deploy=False),
            "Agave 4.1, v3": _run(Session(solders), "sbpf-v3"),
            "Agave 4.3, v0": _run(Session(node), "sbpf-v0", deploy=False),
            "Agave 4.3, v3": _run(Session(node), "sbpf-v3"),
        }
    finally:
        node.close()


def main() -> int:
    missing = node_runner_missing()
    if missing:
        print(f"error: {missing}", file=sys.stderr)
        return 1
    columns = measure()
    names = list(columns)
    print(f"| instruction | {' | '.join(names)} | v3 / v0 (Agave 4.3) |")
    print(f"| --- |{' ---: |' * (len(names) + 1)}")
    v0, v3 = columns["Agave 4.3, v0"].units, columns["Agave 4.3, v3"].units
    for label in v0:
        cells = " | ".join(f"{columns[name].units[label]:,}" for name in names)
        print(f"| {label} | {cells} | {v3[label] / v0[label]:.4f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
