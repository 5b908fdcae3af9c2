"""Signers and recipients as the Solana CLI takes them.

A signer (``-k/--keypair``, ``--fee-payer``, ``keygen pubkey``) is one of:

- a keypair file in the Solana CLI's JSON format (``PATH`` or ``file://PATH``);
- ``prompt://`` (or ``ASK``): a BIP39 seed phrase and its passphrase, typed at the terminal
  without echo. ``prompt://?key=ACCOUNT[/CHANGE]`` derives ``m/44'/501'/ACCOUNT'/CHANGE'``
  and ``prompt://?full-path=m/44/501/0/0`` any path (every index hardened, as ed25519
  requires); with neither, the keypair is the seed's first 32 bytes, as
  ``solana-keygen new`` makes it;
- ``stdin``: a keypair's JSON array read from standard input;
- ``usb://ledger``: a hardware wallet. curta-chain has no Ledger transport, so it says
  whether a Ledger is plugged in at all and that it cannot sign with it.

A recipient (``airdrop``'s, ``close --recipient``) is a base58 address, or any signer,
whose public key is taken.
"""

import getpass
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlparse

from curta_chain.cli.keypairs import (
    keypair_files,
    keypair_from_json,
    load_keypair,
    missing_keypair,
)
from curta_chain.cli.solana_config import CliConfig, keypair_path
from curta_chain.errors import KeypairError

if TYPE_CHECKING:
    from solders.keypair import Keypair
    from solders.pubkey import Pubkey

SOLANA_COIN_TYPE = 501
"""SLIP-44 coin type of Solana: ``prompt://?key=A/C`` derives m/44'/501'/A'/C'."""
LEDGER_USB_VENDOR = "2c97"
"""The USB vendor id of Ledger devices."""
USB_DEVICES = Path("/sys/bus/usb/devices")


NO_TERMINAL = (
    "no terminal to read the seed phrase from; run this at a terminal, or use a keypair "
    "file (-k FILE) or stdin"
)


def _prompt_terminal(prompt: str) -> str:
    """Read a line from the terminal without echo (the seed phrase and passphrase).

    getpass would fall back to reading stdin with the secret echoed (and a warning);
    a seed phrase is read from a terminal or not at all.
    """
    try:
        with open("/dev/tty", "r+b", buffering=0):
            pass
    except OSError as exc:
        raise KeypairError(NO_TERMINAL) from exc
    try:
        return getpass.getpass(prompt)
    except EOFError as exc:
        raise KeypairError("the terminal closed before the seed phrase was entered") from exc
    except OSError as exc:
        raise KeypairError(
            f"cannot read from the terminal: {exc.strerror or type(exc).__name__}"
        ) from exc


class Signers:
    """Resolves signer arguments, each once: a seed phrase is asked for a single time.

    Args:
        config: the Solana CLI config (its ``keypair_path`` is the default signer).
        skip_seed_phrase_validation: accept a seed phrase that is not valid BIP39 English.
        ask: reads a secret from the terminal (injected for tests).
        stdin: reads standard input (injected for tests).
    """

    def __init__(
        self,
        config: CliConfig | None = None,
        *,
        skip_seed_phrase_validation: bool = False,
        ask: Callable[[str], str] = _prompt_terminal,
        stdin: Callable[[], str] = lambda: sys.stdin.read(),
    ):
        self._config = config or CliConfig()
        self._skip_validation = skip_seed_phrase_validation
        self._ask = ask
        self._stdin = stdin
        self._resolved: dict[str, Keypair] = {}

    def default_path(self) -> Path:
        """The signer used when none is named: the config's keypair, else the CLI default."""
        return keypair_path(None, self._config)

    def keypair(self, spec: str | None, what: str = "--keypair") -> "Keypair":
        """Return the keypair ``spec`` names (None: the default keypair file).

        Raises:
            KeypairError: the signer cannot be read, or (``usb://``) cannot be reached.
        """
        key = spec or str(self.default_path())
        if key not in self._resolved:
            if spec is None and not Path(key).exists():
                # No -k and no default keypair: a keypair in this folder is the likely one.
                raise KeypairError(missing_keypair(Path(key), keypair_files(Path.cwd())))
            self._resolved[key] = self._load(key, what)
        return self._resolved[key]

    def pubkey(self, spec: str | None, what: str) -> "Pubkey":
        """Return the address ``spec`` names: a base58 address, else a signer's public key."""
        from solders.pubkey import Pubkey

        if spec and not Path(spec).expanduser().exists():
            try:
                return Pubkey.from_string(spec)
            except ValueError:
                pass
            if not _is_signer_scheme(spec):
                raise KeypairError(
                    f"{what} {spec}: neither a base58 address nor a keypair file (no such file)"
                )
        return self.keypair(spec, what).pubkey()

    def _load(self, spec: str, what: str) -> "Keypair":
        if spec == "ASK" or spec.startswith("prompt:"):
            return self._from_seed_phrase(spec, what)
        if spec == "stdin":
            return keypair_from_json(self._stdin(), f"{what} stdin")
        if spec.startswith("usb:"):
            raise KeypairError(f"{what} {spec}: {ledger_unreachable()}")
        if spec.startswith("file:"):
            spec = spec.removeprefix("file:").removeprefix("//")
        elif "://" in spec:
            scheme = spec.split("://", 1)[0]
            raise KeypairError(
                f"{what} {spec}: unknown signer scheme {scheme}://; expected a keypair file, "
                f"prompt://, stdin or usb://ledger"
            )
        return load_keypair(Path(spec).expanduser())

    def _from_seed_phrase(self, spec: str, what: str) -> "Keypair":
        path = derivation_path(spec, what)
        name = what.lstrip("-")
        phrase = self._ask(f"[{name}] seed phrase: ")
        passphrase = self._ask(
            f"[{name}] If this seed phrase has an associated passphrase, enter it now. "
            f"Otherwise, press ENTER to continue: "
        )
        return keypair_from_seed_phrase(
            phrase, passphrase, path, validate=not self._skip_validation, what=f"{what} {spec}"
        )


def _is_signer_scheme(spec: str) -> bool:
    """Whether ``spec`` names a signer other than a file path (prompt://, stdin, usb://)."""
    return spec in ("ASK", "stdin") or "://" in spec or spec.startswith(("prompt:", "usb:"))


def derivation_path(spec: str, what: str = "--keypair") -> str | None:
    """The derivation path a ``prompt://`` signer asks for, or None for none.

    Raises:
        KeypairError: the query is neither ``key=A[/C]`` nor ``full-path=m/...``.
    """
    if spec == "ASK":
        return None
    query = parse_qs(urlparse(spec).query, keep_blank_values=True)
    unknown = set(query) - {"key", "full-path"}
    if unknown or len(query) > 1 or any(len(v) != 1 for v in query.values()):
        raise KeypairError(
            f"{what} {spec}: expected prompt://, prompt://?key=ACCOUNT[/CHANGE] or "
            f"prompt://?full-path=m/44/501/ACCOUNT/CHANGE"
        )
    if "key" in query:
        indexes = query["key"][0].split("/")
        if not 1 <= len(indexes) <= 2:
            raise KeypairError(f"{what} {spec}: key= takes ACCOUNT or ACCOUNT/CHANGE")
        return _hardened(["44", str(SOLANA_COIN_TYPE), *indexes], what, spec)
    if "full-path" in query:
        parts = query["full-path"][0].split("/")
        if parts[0] != "m":
            raise KeypairError(f"{what} {spec}: full-path= must start with m/")
        return _hardened(parts[1:], what, spec)
    return None


def _hardened(indexes: list[str], what: str, spec: str) -> str:
    out = []
    for index in indexes:
        digits = index.rstrip("'")
        if not digits.isdigit() or int(digits) >= 2**31:
            raise KeypairError(f"{what} {spec}: {index!r} is not a derivation index")
        out.append(f"{int(digits)}'")
    return "m/" + "/".join(out)


def keypair_from_seed_phrase(
    phrase: str,
    passphrase: str = "",
    path: str | None = None,
    *,
    validate: bool = True,
    what: str = "seed phrase",
) -> "Keypair":
    """The keypair of a BIP39 seed phrase, as the Solana CLI derives it.

    Without ``path`` it is the first 32 bytes of the BIP39 seed (``solana-keygen new``);
    with one, the SLIP-10 ed25519 key at that path.

    Raises:
        KeypairError: ``validate`` and the phrase is not valid BIP39 English.
    """
    from mnemonic import Mnemonic
    from solders.keypair import Keypair

    words = " ".join(phrase.lower().split())
    if validate and not Mnemonic("english").check(words):
        raise KeypairError(
            f"{what}: not a valid BIP39 seed phrase (an unknown word, a wrong word count or "
            f"a bad checksum)"
        )
    seed = Mnemonic.to_seed(words, passphrase)
    if path is None:
        return Keypair.from_seed(seed[:32])
    return Keypair.from_seed_and_derivation_path(seed, path)


def new_seed_phrase(words: int = 12) -> str:
    """A fresh BIP39 English seed phrase of ``words`` words (12, 15, 18, 21 or 24)."""
    from mnemonic import Mnemonic

    return Mnemonic("english").generate(strength=words * 32 // 3)


def ledger_unreachable(devices: Path = USB_DEVICES) -> str:
    """Why ``usb://ledger`` cannot sign here, in one clause."""
    plugged = False
    try:
        for vendor in devices.glob("*/idVendor"):
            if vendor.read_text().strip().lower() == LEDGER_USB_VENDOR:
                plugged = True
                break
    except OSError:
        pass
    if plugged:
        return (
            "a Ledger is plugged in, but curta-chain cannot sign with a hardware wallet; "
            "use a keypair file or prompt://"
        )
    return (
        "no Ledger can be reached from this machine (no USB device of vendor 2c97), and "
        "curta-chain cannot sign with a hardware wallet anyway; use a keypair file or prompt://"
    )
