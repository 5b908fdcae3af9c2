"""``curta-chain keygen``: make and read keypairs, as ``solana-keygen`` does.

``keygen new`` writes a fresh keypair in the Solana CLI's JSON format and prints its seed
phrase (BIP39, English): the same phrase given to ``solana-keygen recover`` or to
``prompt://`` gives the same keypair. ``keygen pubkey`` prints a signer's address and
``keygen recover`` writes the keypair of a seed phrase typed at the terminal.
"""

import argparse
from pathlib import Path

from curta_chain.cli.options import add_config_options, add_output_option, emit, signers_for

WORD_COUNTS = (12, 15, 18, 21, 24)
_RULE = "=" * 68


def register(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add ``keygen new``, ``keygen pubkey`` and ``keygen recover``."""
    keygen = subparsers.add_parser(
        "keygen",
        help="make a keypair, or show a signer's address (as solana-keygen)",
        description="Make and read keypairs in the Solana CLI's format.",
    )
    commands = keygen.add_subparsers(dest="keygen_command", required=True, metavar="COMMAND")

    new = commands.add_parser(
        "new",
        help="write a new keypair and print its seed phrase",
        description="Write a new keypair (Solana CLI JSON format, owner-only permissions) and "
        "print the BIP39 seed phrase that recovers it.",
    )
    _add_outfile(new)
    add_config_options(new)
    new.add_argument(
        "--no-outfile", action="store_true", help="print the keypair's JSON instead of a file"
    )
    new.add_argument("--force", action="store_true", help="overwrite the file if it exists")
    new.add_argument(
        "--word-count",
        type=int,
        choices=WORD_COUNTS,
        default=12,
        help="words in the seed phrase (default 12)",
    )
    new.add_argument(
        "--no-bip39-passphrase",
        action="store_true",
        help="do not ask for a BIP39 passphrase (it is not asked off a terminal either)",
    )
    new.add_argument("-s", "--silent", action="store_true", help="print nothing")
    add_output_option(new)
    new.set_defaults(run=_new)

    pubkey = commands.add_parser(
        "pubkey",
        help="print a signer's address",
        description="Print the address of a signer: a keypair file, prompt://, stdin.",
    )
    pubkey.add_argument(
        "signer",
        metavar="SIGNER",
        nargs="?",
        help="keypair file, prompt:// or stdin (default: the config's keypair)",
    )
    add_config_options(pubkey)
    add_output_option(pubkey)
    pubkey.set_defaults(run=_pubkey)

    recover = commands.add_parser(
        "recover",
        help="write the keypair of a seed phrase",
        description="Ask for a seed phrase (and passphrase) and write its keypair.",
    )
    recover.add_argument(
        "signer",
        metavar="prompt://",
        nargs="?",
        default="prompt://",
        help="prompt:// with an optional ?key=ACCOUNT/CHANGE or ?full-path=m/... "
        "(default prompt://)",
    )
    _add_outfile(recover)
    recover.add_argument("--force", action="store_true", help="overwrite the file if it exists")
    add_config_options(recover)
    add_output_option(recover)
    recover.set_defaults(run=_recover)


def _add_outfile(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o",
        "--outfile",
        type=Path,
        metavar="FILE",
        help="where to write the keypair (default: the config's keypair_path, else "
        "~/.config/solana/id.json)",
    )


def _outfile(args: argparse.Namespace) -> Path:
    from curta_chain.errors import ConfigError

    path = args.outfile or signers_for(args).default_path()
    if path.exists() and not args.force:
        raise ConfigError(f"{path}: refusing to overwrite it without --force")
    # Missing folders are made, as solana-keygen makes them (~/.config/solana on a new machine).
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError as exc:
        raise ConfigError(f"{path.parent}: not a folder (a file has that name)") from exc
    except OSError as exc:
        raise ConfigError(f"{path.parent}: cannot create the folder: {exc.strerror}") from exc
    return path


def _new(args: argparse.Namespace) -> int:
    import getpass
    import json
    import sys

    from curta_chain.cli.keypairs import write_keypair
    from curta_chain.cli.signers import keypair_from_seed_phrase, new_seed_phrase

    path = None if args.no_outfile else _outfile(args)
    passphrase = ""
    if not args.no_bip39_passphrase and sys.stdin.isatty() and not args.silent:
        print("For added security, enter a BIP39 passphrase", file=sys.stderr)
        print(
            "NOTE! This passphrase improves the security of the seed phrase, NOT of the "
            "keypair file itself, which is stored as plain text",
            file=sys.stderr,
        )
        passphrase = getpass.getpass("BIP39 Passphrase (empty for none): ")
    phrase = new_seed_phrase(args.word_count)
    keypair = keypair_from_seed_phrase(phrase, passphrase)
    if path is not None:
        write_keypair(keypair, path)
    result = {
        "pubkey": str(keypair.pubkey()),
        "outfile": str(path) if path else None,
        "seed_phrase": phrase,
        "bip39_passphrase": bool(passphrase),
    }
    if path is None and not emit(args, {**result, "keypair": list(bytes(keypair))}):
        print(json.dumps(list(bytes(keypair))))
        return 0
    if args.silent or emit(args, result):
        return 0
    print(f"Wrote new keypair to {path}")
    print(_RULE)
    print(f"pubkey: {keypair.pubkey()}")
    print(_RULE)
    with_passphrase = " and your BIP39 passphrase" if passphrase else ""
    print(f"Save this seed phrase{with_passphrase} to recover your new keypair:")
    print(phrase)
    print(_RULE)
    return 0


def _pubkey(args: argparse.Namespace) -> int:
    keypair = signers_for(args).keypair(args.signer, "signer")
    if not emit(args, {"pubkey": str(keypair.pubkey())}):
        print(keypair.pubkey())
    return 0


def _recover(args: argparse.Namespace) -> int:
    from curta_chain.cli.keypairs import write_keypair
    from curta_chain.errors import ConfigError

    if not (args.signer == "ASK" or args.signer.startswith("prompt:")):
        raise ConfigError(f"recover {args.signer}: expected prompt:// (a seed phrase)")
    path = _outfile(args)
    keypair = signers_for(args).keypair(args.signer, "recover")
    write_keypair(keypair, path)
    if not emit(args, {"pubkey": str(keypair.pubkey()), "outfile": str(path)}):
        print(f"Wrote recovered keypair to {path}")
        print(f"pubkey: {keypair.pubkey()}")
    return 0
