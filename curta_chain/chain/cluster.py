"""Solana CLI conventions: URL monikers, the CLI config file, keypair files, commitment.

The config file is ``~/.config/solana/cli/config.yml`` as the Solana CLI writes it: flat
``key: value`` lines (``json_rpc_url``, ``keypair_path``, ``commitment``). We read those
three keys ourselves rather than depend on a YAML library; nested keys
(``address_labels``) are passed over.
"""

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from curta_chain.errors import ConfigError, KeypairError

if TYPE_CHECKING:  # solders is imported when a keypair is read: `--help` stays fast.
    from solders.keypair import Keypair

MONIKERS = {
    "localhost": "http://127.0.0.1:8899",
    "devnet": "https://api.devnet.solana.com",
    "testnet": "https://api.testnet.solana.com",
    "mainnet-beta": "https://api.mainnet-beta.solana.com",
}
SHORT_MONIKERS = {"l": "localhost", "d": "devnet", "t": "testnet", "m": "mainnet-beta"}
COMMITMENTS = ("processed", "confirmed", "finalized")
DEFAULT_COMMITMENT = "confirmed"


def default_config_path() -> Path:
    """Where the Solana CLI keeps its config."""
    return Path.home() / ".config" / "solana" / "cli" / "config.yml"


@dataclass(frozen=True)
class CliConfig:
    """The three settings curta-chain takes from the Solana CLI config."""

    json_rpc_url: str | None = None
    keypair_path: str | None = None
    commitment: str | None = None


def read_cli_config(path: Path | None = None) -> CliConfig:
    """Read the Solana CLI config ``path`` (``-C``), else the default one.

    The default config may be missing (an empty config); a file named with ``-C`` may not.

    Raises:
        ConfigError: the named file is missing, or a file cannot be read or a line is
            malformed.
    """
    named = path is not None
    path = path or default_config_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        if named:
            raise ConfigError(f"{path}: no such Solana CLI config file (-C)") from exc
        return CliConfig()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the Solana CLI config: {exc}") from exc
    values: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split(" #", 1)[0].rstrip()
        if not line or line.startswith(("#", "---", " ", "\t")):
            continue
        # YAML needs ": " (or a colon ending the line) between key and value.
        key, sep, value = (line + " ").partition(": ")
        if not sep or not key or any(c.isspace() for c in key):
            raise ConfigError(f"{path}:{number}: expected 'key: value', found {raw.strip()!r}")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[key.strip()] = value
    return CliConfig(
        json_rpc_url=values.get("json_rpc_url") or None,
        keypair_path=values.get("keypair_path") or None,
        commitment=values.get("commitment") or None,
    )


def resolve_url(url: str | None, config: CliConfig) -> str:
    """Turn ``-u`` (a moniker or URL), else the config's URL, else localhost, into a URL.

    Raises:
        ConfigError: the value is neither a known moniker nor an http(s) URL.
    """
    value = url or config.json_rpc_url or "localhost"
    moniker = SHORT_MONIKERS.get(value, value)
    if moniker in MONIKERS:
        return MONIKERS[moniker]
    parsed = urlparse(value)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        names = ", ".join(MONIKERS)
        raise ConfigError(f"--url {value!r}: expected {names} or an http(s):// URL")
    try:
        parsed.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError as exc:
        raise ConfigError(f"--url {value!r}: malformed port") from exc
    return value


def resolve_commitment(commitment: str | None, config: CliConfig) -> str:
    """Return ``--commitment``, else the config's, else ``confirmed``.

    Raises:
        ConfigError: the value is not processed, confirmed or finalized.
    """
    value = commitment or config.commitment or DEFAULT_COMMITMENT
    if value not in COMMITMENTS:
        raise ConfigError(f"commitment {value!r}: expected one of {', '.join(COMMITMENTS)}")
    return value


def is_loopback(url: str) -> bool:
    """Whether ``url`` names this machine (a localnet, not a cluster)."""
    host = urlparse(url).hostname or ""
    return host in ("localhost", "::1") or host.startswith("127.")


def keypair_path(path: str | None, config: CliConfig) -> Path:
    """Return ``-k``, else the config's keypair, else ``~/.config/solana/id.json``."""
    if path:
        return Path(path).expanduser()
    if config.keypair_path:
        return Path(config.keypair_path).expanduser()
    return Path.home() / ".config" / "solana" / "id.json"


def load_keypair(path: Path) -> "Keypair":
    """Load a keypair in the Solana CLI's JSON format: an array of 64 byte values.

    Raises:
        KeypairError: the file is missing, unreadable or not such an array, or its public
            half does not match its secret half.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise KeypairError(
            f"{path}: no such keypair file; make one with `curta-chain keygen new -o {path}`"
        ) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise KeypairError(f"{path}: cannot read the keypair: {exc}") from exc
    return keypair_from_json(text, str(path))


def keypair_from_json(text: str, what: str) -> "Keypair":
    """Parse the Solana CLI's keypair JSON (an array of 64 bytes); ``what`` names the source.

    Raises:
        KeypairError: ``text`` is not such an array, or its halves do not match.
    """
    from solders.keypair import Keypair

    try:
        values = json.loads(text)
    except json.JSONDecodeError as exc:
        raise KeypairError(f"{what}: not a keypair: expected a JSON array of 64 bytes") from exc
    if (
        not isinstance(values, list)
        or len(values) != 64
        or not all(isinstance(v, int) and 0 <= v <= 255 for v in values)
    ):
        raise KeypairError(f"{what}: not a keypair: expected a JSON array of 64 bytes")
    try:
        return Keypair.from_bytes(bytes(values))
    except ValueError as exc:
        raise KeypairError(
            f"{what}: not a keypair: its public key does not match its secret"
        ) from exc


def write_keypair(keypair: "Keypair", path: Path) -> None:
    """Write ``keypair`` in the Solana CLI's JSON format, readable by its owner only."""
    from curta_chain.fsutil import atomic_write

    atomic_write(path, json.dumps(list(bytes(keypair))).encode())
    path.chmod(0o600)
