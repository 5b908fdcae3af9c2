"""The ``curta-chain`` command: parses arguments and calls the library, nothing more.

Each group of subcommands lives in its own module with a ``register(subparsers)``
function; this module wires them up and turns every ``CurtaError`` into one line on
stderr and a non-zero exit.
"""

import argparse
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from curta_chain import __version__
from curta_chain.cli import artifact_commands, chain_commands, localnet_command, run_command
from curta_chain.errors import CurtaError

_COMMAND_MODULES = (artifact_commands, localnet_command, chain_commands, run_command)


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line, like every other error of ours."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {self.prog}: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """Return the parser with every subcommand registered."""
    parser = _Parser(
        prog="curta-chain",
        description="Publish a CURTAW01 model artifact to Solana and verify it from the chain.",
    )
    parser.add_argument("--version", action="version", version=f"curta-chain {__version__}")
    subparsers = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=_Parser
    )
    for module in _COMMAND_MODULES:
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the process exit code."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except CurtaError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader (`| head`) left: stop quietly, as Unix tools do.
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - keeps interpreter exit quiet
        return 141


if __name__ == "__main__":
    sys.exit(main())
