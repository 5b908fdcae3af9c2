"""Asking before real money is spent: off a localnet, a person confirms on the terminal.

The plan and its cost are printed first; then, on any cluster that is not the embedded
localnet (known by its genesis hash), the command asks ``Spend ...? [y/N]`` on the terminal
(stdin). ``--yes`` skips the question; with no terminal and no ``--yes`` the command stops
before sending anything.
"""

import argparse
import sys

from curta_chain.chain.cluster import is_localnet
from curta_chain.errors import NotConfirmedError
from curta_chain.reporting import sol


def confirm_spend(
    args: argparse.Namespace, url: str, genesis_hash: str, lamports: int, what: str
) -> None:
    """Return once spending ``lamports`` on ``what`` is confirmed (or needs no confirmation).

    No question is asked on the embedded localnet or with ``--yes``.

    Raises:
        NotConfirmedError: the answer was not yes, or there is no terminal and no ``--yes``.
    """
    if is_localnet(genesis_hash) or args.yes:
        return
    cost = sol(lamports)
    if not sys.stdin.isatty():
        raise NotConfirmedError(
            f"{url} is not a localnet and there is no terminal to confirm spending {cost} on "
            f"{what}: pass --yes to spend it; nothing was sent"
        )
    print(f"Spend {cost} on {what} on {url}? [y/N] ", end="", file=sys.stderr, flush=True)
    answer = sys.stdin.readline().strip().lower()
    if answer not in ("y", "yes"):
        raise NotConfirmedError(f"not confirmed ({answer or 'no answer'}): nothing was sent")
