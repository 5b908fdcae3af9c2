"""The ``curta-chain`` command: parses arguments and calls the library, nothing more.

Each group of subcommands lives in its own module with a ``register(subparsers)``
function; this module wires them up and turns every ``CurtaError`` into one line on
stderr and a non-zero exit. The command modules import only the standard library and
``curta_chain.cli.options`` at module level, and the library inside each command's run
function, so ``curta-chain --help`` starts in a few tens of milliseconds
(``tests/cli/test_startup.py`` holds that line).

Options are never abbreviated (``--output`` is not ``--output-file``), and a mistyped
command or option is answered with the nearest real one. As with the Solana CLI, the
options every chain command shares (``-u``, ``-k``, ``-C``, ``--output``, ...) may come
before the command as well as after it (``global_options_last``).
"""

import argparse
import difflib
import os
import re
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any, NoReturn

import curta_chain.cli.artifact_commands as artifact_commands
import curta_chain.cli.chain_commands as chain_commands
import curta_chain.cli.deploy_commands as deploy_commands
import curta_chain.cli.keygen_command as keygen_command
import curta_chain.cli.localnet_command as localnet_command
import curta_chain.cli.read_commands as read_commands
import curta_chain.cli.run_account_commands as run_account_commands
import curta_chain.cli.run_command as run_command
import curta_chain.cli.web_command as web_command
from curta_chain import __version__
from curta_chain.errors import CurtaError

__all__ = ["build_parser", "global_options_last", "main"]

_COMMAND_MODULES = (
    artifact_commands,
    keygen_command,
    localnet_command,
    deploy_commands,
    chain_commands,
    read_commands,
    run_command,
    run_account_commands,
    web_command,
)

_INVALID_CHOICE = re.compile(r"argument (?P<arg>[^:]+): invalid choice: '(?P<value>[^']*)'")


class _Parser(argparse.ArgumentParser):
    """argparse with no abbreviations, one-line usage errors and "did you mean" hints."""

    def __init__(self, *args: Any, **kwargs: Any):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        """Print the usage error as one line, with the nearest valid word if there is one."""
        self.exit(2, f"error: {self.prog}: {self._suggest(message)} (see --help)\n")

    def _suggest(self, message: str) -> str:
        match = _INVALID_CHOICE.match(message)
        if match:
            choices = self._choices_of(match["arg"])
            near = difflib.get_close_matches(match["value"], choices, n=1)
            what = "command" if match["arg"] == "COMMAND" else f"choice for {match['arg']}"
            listed = ", ".join(choices)
            hint = f"; did you mean {near[0]!r}?" if near else f"; expected one of {listed}"
            longer = self._longer_options(match["arg"])
            if longer and not near:
                hint += f" (or did you mean {' or '.join(longer)}?)"
            return f"no {what} {match['value']!r}{hint}"
        return message

    def _choices_of(self, name: str) -> list[str]:
        # argparse names an option's action by all its option strings joined with "/".
        for action in self._actions:
            if name in (action.metavar, action.dest, "/".join(action.option_strings)):
                return [str(c) for c in action.choices or ()]
        return []

    def _longer_options(self, name: str) -> list[str]:
        """Other options whose names begin with ``name`` (``--output-file`` for ``--output``)."""
        if not name.startswith("-"):
            return []
        return sorted(
            {
                "/".join(action.option_strings)
                for action in self._actions
                if any(o != name and o.startswith(name) for o in action.option_strings)
            }
        )

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """Parse; a subcommand refuses what it does not know itself, naming its nearest option.

        argparse would hand a subcommand's leftovers up to the top-level parser, whose
        error ("unrecognized arguments") knows nothing of the subcommand's options; and it
        would complain of a missing required argument before an unknown option that was
        meant to be it (``--promt hi``). So a leaf command checks its options first.
        """
        if self._subcommand and self._subparsers is None and args is not None:
            unknown = self._first_unknown_option(list(args))
            if unknown is not None:
                self.error(self._unrecognized([unknown]))
        parsed, extras = super().parse_known_args(args, namespace or argparse.Namespace())
        if extras and self._subcommand:
            self.error(self._unrecognized(extras))
        return parsed, extras

    _subcommand = False

    def _first_unknown_option(self, args: list[str]) -> str | None:
        """The first word that looks like an option and is none of this command's."""
        words = iter(args)
        for word in words:
            if word == "--":
                return None
            if not word.startswith("-") or word == "-" or self._negative_number_matcher.match(word):
                continue
            name = word.split("=", 1)[0]
            action = self._option_string_actions.get(name)
            if action is None and not word.startswith("--"):
                action = self._option_string_actions.get(word[:2])  # -kFILE, -ojson
                if action is not None:
                    continue
            if action is None:
                return word
            if "=" not in word and action.nargs != 0:
                next(words, None)  # the option's value, whatever it looks like
        return None

    def _unrecognized(self, extras: list[str]) -> str:
        for extra in extras:
            if extra.startswith("-"):
                name = extra.split("=", 1)[0]
                hint = self._nearest_option(name)
                if hint:
                    return f"unrecognized option {extra!r}; {hint}"
        return f"unrecognized arguments: {' '.join(extras)}"

    def _nearest_option(self, name: str) -> str | None:
        """A hint for a mistyped option: llama2.c's -z, a prefix, then the nearest spelling."""
        options = list(self._option_string_actions)
        if name == "-z":
            return f"llama2.c's -z is the tokenizer: {_NO_TOKENIZER_FLAG}"
        longer = sorted(o for o in options if o.startswith(name) and len(name) > 2)
        if len(longer) == 1:
            return f"did you mean {longer[0]!r}?"
        near = difflib.get_close_matches(name, options, n=1)
        return f"did you mean {near[0]!r}?" if near else None


# run takes llama2.c's -i -n -t -p -s itself (run_command.py); its -z has no counterpart.
_NO_TOKENIZER_FLAG = "the artifact holds its tokenizer (`curta-chain convert` puts it there)"


class _SubcommandParser(_Parser):
    _subcommand = True


GLOBAL_OPTIONS_WITH_VALUE = frozenset(
    {
        "-u",
        "--url",
        "-k",
        "--keypair",
        "--fee-payer",
        "--commitment",
        "--program-id",
        "--program-hash",
        "-C",
        "--config",
        "--output",
        "--rpc-timeout",
        "--rpc-rps",
        "--rpc-batch",
        "--with-compute-unit-price",
        "--max-compute-unit-price",
    }
)
"""The shared options that take a value, which the Solana CLI takes before the command."""
GLOBAL_FLAGS = frozenset({"-y", "--yes", "--skip-seed-phrase-validation"})


def global_options_last(argv: Sequence[str]) -> list[str]:
    """Move the shared options given before the command to after it.

    ``curta-chain -u URL --output json models`` is ``curta-chain models -u URL --output
    json``: each command declares these options itself, so they are parsed (and refused by
    a command that has none) where they would be after it. Words from the command on are
    kept as they are; options go before a ``--``, if there is one.
    """
    leading: list[str] = []
    words = list(argv)
    while words:
        word = words[0]
        name = word.split("=", 1)[0]
        if name in GLOBAL_FLAGS:
            leading.append(words.pop(0))
        elif name in GLOBAL_OPTIONS_WITH_VALUE:
            leading.append(words.pop(0))
            if "=" not in word and words:
                leading.append(words.pop(0))
        elif word[:2] in GLOBAL_OPTIONS_WITH_VALUE and not word.startswith("--"):
            leading.append(words.pop(0))  # -uURL, -kFILE, -Cconfig.yml
        else:
            break
    if not leading or not words:
        return [*leading, *words]
    end = words.index("--") if "--" in words else len(words)
    return [*words[:end], *leading, *words[end:]]


def build_parser() -> argparse.ArgumentParser:
    """Return the parser with every subcommand registered."""
    parser = _Parser(
        prog="curta-chain",
        description="Publish a CURTAW01 model artifact to Solana and verify it from the chain. "
        "Chain commands take the Solana CLI's options (-u, -k, --commitment, -C, --output) "
        "and its config file; as with the Solana CLI, they may come before the command "
        "(curta-chain -u devnet models) or after it.",
    )
    parser.add_argument("--version", action="version", version=f"curta-chain {__version__}")
    subparsers = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=_SubcommandParser
    )
    for module in _COMMAND_MODULES:
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the process exit code."""
    from curta_chain.cli.options import Interrupted

    _ctrl_c_stops()
    words = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(global_options_last(words))
    try:
        return int(args.run(args) or 0)
    except CurtaError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:
        hint = exc.resume_hint if isinstance(exc, Interrupted) else None
        print(f"error: interrupted{f'; {hint}' if hint else ''}", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader (`| head`) left: stop quietly, as Unix tools do.
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - keeps interpreter exit quiet
        return 141


def _ctrl_c_stops() -> None:
    """Make Ctrl-C stop the command, whatever the shell that started it ignored.

    A process inherits an ignored SIGINT (a background job, ``nohup``, a CI runner), and
    Python then installs no handler of its own: Ctrl-C would never reach a long-running
    ``localnet``, ``web`` or a wait. The CLI installs Python's own handler (a
    ``KeyboardInterrupt``), which also lets the processes it starts (the validator) take
    Ctrl-C by default. Only the main thread may set a handler; elsewhere nothing changes.
    """
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)


if __name__ == "__main__":
    sys.exit(main())
