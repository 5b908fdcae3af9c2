"""What every command shares, after the Solana CLI's conventions. New commands use these.

- ``add_output_option(parser)`` and ``emit(args, value)``: ``--output
  {display,json,json-compact}``; ``is_json(args)`` says which.
- ``make_reporter(args)``: the ``Reporter`` a command hands the library (progress, waits,
  notes and result lines, each where the output mode wants them).
- ``add_cluster_options(parser, keypair=..., fee_payer=..., program=...)`` and
  ``resolve(args)``: ``-u``, ``-k``, ``--fee-payer``, ``--commitment``, ``--program-id``,
  ``--program-hash``, ``-C``, ``--rpc-timeout``, ``--rpc-rps``, ``--rpc-batch`` and
  ``--output``, resolved against the
  Solana CLI config into a ``Cluster`` (which resolves signers, see ``signers.py``);
  ``add_yes_option`` for commands that spend, and ``confirm_spend``, which off a local test
  cluster this user started (``cluster.is_local_cluster``) asks ``Spend ...? [y/N]`` on the
  terminal before the first transaction (the plan and its cost printed first; ``--yes``
  skips it; with no terminal and no ``--yes`` the command stops before sending anything).
- ``cluster_runner.py`` runs a command's body against the cluster (``run_on_cluster``).

Nothing here imports solders, httpx or the program client at module level: ``curta-chain
--help`` must not pay for them.
"""

import argparse
import json
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import curta_chain.cli.solana_config as solana_config
from curta_chain.chain.cluster import is_local_cluster
from curta_chain.cli.console import ConsoleReporter
from curta_chain.cli.signers import Signers
from curta_chain.constants import COMMITMENTS, GIVE_UP_AFTER
from curta_chain.errors import ConfigError, NotConfirmedError
from curta_chain.reporting import Reporter, sol

if TYPE_CHECKING:
    from solders.keypair import Keypair
    from solders.pubkey import Pubkey

    from curta_chain.artifact import Artifact
    from curta_chain.chain.rpc import RpcClient
    from curta_chain.chain.session import Connection
    from curta_chain.chain.transport import ProviderLimits

OUTPUT_FORMATS = ("display", "json", "json-compact")
MAX_RPC_BATCH = 10_000
"""The most calls ``--rpc-batch`` puts in one request."""

_URL_HELP = (
    "URL for Solana's JSON RPC or moniker (or their first letter): "
    "[mainnet-beta, testnet, devnet, localhost] or [m, t, d, l] "
    "(default: the config's json_rpc_url, else localhost)"
)


def add_output_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--output {display,json,json-compact}`` (default display), as the Solana CLI."""
    parser.add_argument(
        "--output",
        choices=OUTPUT_FORMATS,
        default="display",
        help="display (for people, the default), json (pretty) or json-compact (one line)",
    )


def is_json(args: argparse.Namespace) -> bool:
    """Whether the command prints a JSON document instead of display text."""
    return getattr(args, "output", "display") in ("json", "json-compact")


def emit(args: argparse.Namespace, value: object) -> bool:
    """Print ``value`` as the command's JSON document if asked for JSON; say whether it did."""
    if not is_json(args):
        return False
    if args.output == "json":
        print(json.dumps(value, indent=2))
    else:
        print(json.dumps(value, separators=(",", ":")))
    return True


def make_reporter(args: argparse.Namespace, lines_to_stderr: bool = False) -> ConsoleReporter:
    """The reporter for this command's output mode.

    Display: result lines on stdout, progress and waits on stderr (a live line on a
    terminal, a line every few seconds elsewhere). JSON: stdout holds the document only;
    progress and waits still show on a terminal's stderr, and nothing is said to a pipe.
    ``lines_to_stderr``: stdout is the command's own product (``run``'s text), so even the
    result lines go to stderr.
    """
    if is_json(args):
        return ConsoleReporter(results=False, chatty_off_terminal=False)
    return ConsoleReporter(out=sys.stderr if lines_to_stderr else None)


def add_cluster_options(
    parser: argparse.ArgumentParser,
    keypair: bool = True,
    fee_payer: bool = False,
    program: bool = True,
) -> None:
    """Add the options of a command that talks to a cluster, ``--output`` included."""
    parser.add_argument("-u", "--url", metavar="URL_OR_MONIKER", help=_URL_HELP)
    if keypair:
        parser.add_argument(
            "-k",
            "--keypair",
            metavar="SIGNER",
            help="signer: a keypair file, prompt:// (seed phrase), stdin or usb://ledger "
            "(default: the config's keypair_path, else ~/.config/solana/id.json)",
        )
    if fee_payer:
        parser.add_argument(
            "--fee-payer",
            metavar="SIGNER",
            help="signer that pays the transaction fees (default: the -k keypair)",
        )
    parser.add_argument(
        "--commitment", choices=COMMITMENTS, help="default: confirmed, or the config's"
    )
    if program:
        add_program_options(parser)
    add_config_options(parser)
    parser.add_argument(
        "--rpc-timeout",
        type=float,
        default=GIVE_UP_AFTER,
        metavar="SECONDS",
        help="give up on a node that answered before and stopped, after this long "
        f"(default {GIVE_UP_AFTER:.0f}); one that never answers fails at once",
    )
    parser.add_argument(
        "--rpc-rps",
        type=float,
        metavar="N",
        help="send at most N calls a second to the node, each call of a batch counted "
        "(default: as fast as it answers, learning its rate from HTTP 429s)",
    )
    parser.add_argument(
        "--rpc-batch",
        type=int,
        metavar="N",
        help="put at most N calls in one JSON-RPC batch (default 128, halved each time the "
        "node refuses a batch)",
    )
    add_output_option(parser)


def add_program_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--program-id`` and ``--program-hash``."""
    parser.add_argument(
        "--program-id",
        metavar="ADDRESS",
        help="the curta program's address (default: the one `curta-chain deploy` recorded "
        "for this cluster in the config, or on a localnet this user started, the one it "
        "preloads)",
    )
    parser.add_argument(
        "--program-hash",
        action="append",
        default=[],
        metavar="SHA256",
        help="also trust a program whose deployed ELF has this SHA-256 (default: only the "
        "builds shipped with curta-chain)",
    )


def add_yes_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--yes``: spend on a cluster that is not a localnet without asking."""
    parser.add_argument(
        "-y",
        "--yes",
        action="store_true",
        help="off a localnet this user started, spend without asking for confirmation on "
        "the terminal",
    )


def confirm_spend(
    args: argparse.Namespace, url: str, genesis_hash: str, lamports: int, what: str
) -> None:
    """Return once spending ``lamports`` on ``what`` is confirmed (or needs no confirmation).

    No question is asked on a local test cluster this user started, or with ``--yes``.

    Raises:
        NotConfirmedError: the answer was not yes, or there is no terminal and no ``--yes``.
    """
    if is_local_cluster(url, genesis_hash) or args.yes:
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


def add_config_options(parser: argparse.ArgumentParser) -> None:
    """Add ``-C/--config`` and ``--skip-seed-phrase-validation``: what resolving signers needs."""
    parser.add_argument(
        "-C",
        "--config",
        type=Path,
        metavar="FILE",
        help="Solana CLI config file (default: ~/.config/solana/cli/config.yml)",
    )
    parser.add_argument(
        "--skip-seed-phrase-validation",
        action="store_true",
        help="accept a prompt:// seed phrase that is not valid BIP39 English",
    )


def signers_for(args: argparse.Namespace, config: solana_config.CliConfig | None = None) -> Signers:
    """The signer resolver for these options (the config's keypair is the default)."""
    return Signers(
        config or solana_config.read_cli_config(args.config),
        skip_seed_phrase_validation=getattr(args, "skip_seed_phrase_validation", False),
    )


@dataclass(frozen=True)
class Cluster:
    """What the shared options resolve to."""

    url: str
    commitment: str
    signers: Signers
    keypair_spec: str | None = None
    fee_payer_spec: str | None = None
    rpc_timeout: float = GIVE_UP_AFTER
    reporter: Reporter = field(default_factory=ConsoleReporter)
    program_id: str | None = None
    """``--program-id`` as given (None: from the config or the localnet)."""
    program_hashes: tuple[str, ...] = ()
    config: solana_config.CliConfig = field(default_factory=solana_config.CliConfig)
    rpc_rps: float | None = None
    """``--rpc-rps``: calls a second, set outright (None: learnt from the node's 429s)."""
    rpc_batch: int | None = None
    """``--rpc-batch``: calls per batch, set outright (None: learnt from refused batches)."""
    limits: "dict[str, ProviderLimits]" = field(default_factory=dict, compare=False)
    """Each URL's limits as learnt so far: every client of this command's run shares them."""

    def client(self, url: str | None = None, min_context_slot: int | None = None) -> "RpcClient":
        """A fresh RPC client for this cluster (create it inside the running event loop)."""
        from curta_chain.chain.rpc import RpcClient
        from curta_chain.chain.transport import HttpTransport, ProviderLimits

        url = url or self.url
        limits = self.limits.setdefault(url, ProviderLimits.fixed(self.rpc_rps, self.rpc_batch))
        transport = HttpTransport(
            url, give_up_after=self.rpc_timeout, reporter=self.reporter, limits=limits
        )
        return RpcClient(transport, self.commitment, min_context_slot)

    async def connect(self, client: "RpcClient") -> "Connection":
        """Find and check the curta program on this cluster (see ``session.connect``)."""
        from curta_chain.chain.session import connect

        def program_id(genesis_hash: str) -> tuple[str, str]:
            return solana_config.resolve_program_id(
                self.program_id, self.config, genesis_hash, client.url
            )

        with self.reporter.waiting(f"{self.url} to show the curta program"):
            connection = await connect(client, program_id, self.program_hashes)
        if connection.note:
            self.reporter.note(connection.note)
        return connection

    async def follow_owner(self, connection: "Connection", address: "Pubkey") -> "Connection":
        """The connection to the program that owns the model ``address`` (``session``).

        For every command on an existing model (a read, seal, close, a run on chain): a
        model published under one shipped build stays usable after another is deployed and
        recorded, since only its owner can act on it. With ``--program-id`` the named
        program is used, whoever owns the account.
        """
        from curta_chain.chain.session import follow_owner

        if self.program_id is not None:
            return connection
        followed = await follow_owner(connection, address, self.program_hashes)
        if followed is None:
            return connection
        if followed.note:
            self.reporter.note(followed.note)
        return followed

    async def listed_programs(self, connection: "Connection") -> list["Connection"]:
        """The connections a list of models or runs reads (``session.listed_programs``).

        With ``--program-id`` only the named program.
        """
        from curta_chain.chain.session import listed_programs

        if self.program_id is not None:
            return [connection]
        return await listed_programs(connection, self.program_hashes)

    def keypair(self) -> "Keypair":
        """The ``-k`` signer (the default keypair when none was named)."""
        return self.signers.keypair(self.keypair_spec, "--keypair")

    def fee_payer(self) -> "Keypair":
        """The ``--fee-payer`` signer, else the ``-k`` one."""
        if self.fee_payer_spec is None:
            return self.keypair()
        return self.signers.keypair(self.fee_payer_spec, "--fee-payer")


def resolve(args: argparse.Namespace, reporter: Reporter | None = None) -> Cluster:
    """Resolve the shared options against the Solana CLI config."""
    from curta_chain.chain.session import parse_program_hashes

    config = solana_config.read_cli_config(args.config, getattr(args, "config_may_be_new", False))
    program_id = getattr(args, "program_id", None)
    if program_id is not None:
        parse_pubkey(program_id, "--program-id")
    return Cluster(
        url=solana_config.resolve_url(args.url, config),
        commitment=solana_config.resolve_commitment(args.commitment, config),
        signers=signers_for(args, config),
        keypair_spec=getattr(args, "keypair", None),
        fee_payer_spec=getattr(args, "fee_payer", None),
        rpc_timeout=_positive(args.rpc_timeout, "--rpc-timeout"),
        reporter=reporter or make_reporter(args),
        program_id=program_id,
        program_hashes=parse_program_hashes(getattr(args, "program_hash", [])),
        config=config,
        rpc_rps=_optional_positive(getattr(args, "rpc_rps", None), "--rpc-rps", "calls a second"),
        rpc_batch=_batch(getattr(args, "rpc_batch", None)),
    )


MODEL_HELP = "the model account's address (publish prints it)"
ARTIFACT_HELP = "the CURTAW01 artifact file"


def add_model_and_artifact(parser: argparse.ArgumentParser, artifact_help: str) -> None:
    """Add ``MODEL`` and an optional ``ARTIFACT`` (seal, status)."""
    parser.add_argument("model", metavar="MODEL", help=MODEL_HELP)
    parser.add_argument("artifact", type=Path, nargs="?", metavar="ARTIFACT", help=artifact_help)


def read_artifact_file(path: Path) -> "Artifact":
    """Read and check the artifact at ``path`` (the artifact code loads only here)."""
    from curta_chain.artifact import read_artifact

    return read_artifact(path)


_TAKES_NO_KEYPAIR = ("verify", "status", "web", "convert", "inspect", "hash")
_TAKES_FEE_PAYER = ("publish", "seal", "close")
_TAKES_NO_PROGRAM = ("airdrop", "deploy", "web", "convert", "inspect", "hash")


def next_command(args: argparse.Namespace, *words: object) -> str:
    """A command line to run next, pasted as is: it repeats the cluster options given.

    Only the options this command was given (``-u``, ``-k``, ``--fee-payer``,
    ``--program-id``, ``-C``), each where the next command takes it, every word quoted
    for the shell.
    """
    command = str(words[0])
    line = ["curta-chain", *(str(w) for w in words)]
    given: list[tuple[str, object]] = [("-u", getattr(args, "url", None))]
    if command not in _TAKES_NO_KEYPAIR:
        given.append(("-k", getattr(args, "keypair", None)))
    if command in _TAKES_FEE_PAYER:
        given.append(("--fee-payer", getattr(args, "fee_payer", None)))
    if command not in _TAKES_NO_PROGRAM:
        given.append(("--program-id", getattr(args, "program_id", None)))
    given.append(("-C", getattr(args, "config", None)))
    for option, value in given:
        if value is not None:
            line += [option, str(value)]
    return shlex.join(line)


def resume_hint(args: argparse.Namespace, *words: object) -> str:
    """What an interrupted command says: the command that resumes it, pasted as is."""
    return f"rerun `{next_command(args, *words)}` to resume"


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a chain command; ``resume_hint`` is set when something was sent."""

    def __init__(self, resume_hint: str | None):
        super().__init__()
        self.resume_hint = resume_hint


def _positive(value: float, what: str) -> float:
    if not value > 0:
        raise ConfigError(f"{what} {value}: expected a positive number of seconds")
    return value


def _optional_positive(value: float | None, what: str, unit: str) -> float | None:
    if value is not None and not 0 < value < float("inf"):
        raise ConfigError(f"{what} {value}: expected a positive number of {unit}")
    return value


def _batch(value: int | None) -> int | None:
    if value is not None and not 1 <= value <= MAX_RPC_BATCH:
        raise ConfigError(f"--rpc-batch {value}: expected a count of calls 1 to {MAX_RPC_BATCH}")
    return value


def parse_pubkey(text: str, what: str) -> "Pubkey":
    """Parse a base58 address, naming ``what`` in the error (``session.parse_address``).

    Raises:
        ConfigError: ``text`` is not a 32-byte base58 address.
    """
    from curta_chain.chain.session import parse_address

    return parse_address(text, what)
