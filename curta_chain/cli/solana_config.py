"""The Solana CLI's config file, URL monikers and commitment, as the CLI reads them.

The config file is ``~/.config/solana/cli/config.yml`` as the Solana CLI writes it: flat
``key: value`` lines (``json_rpc_url``, ``keypair_path``, ``commitment``). We read those
three keys ourselves rather than depend on a YAML library; other nested keys
(``address_labels``) are passed over.

curta-chain keeps one key of its own there, ``curta_program_ids``: a map from a cluster's
genesis hash to the curta program deployed on that cluster, which ``curta-chain deploy``
writes and every chain command reads::

    curta_program_ids:
      EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG: 5aF8...   # devnet

The Solana CLI reads the file with the key in it (it ignores keys it does not know), but
``solana config set`` rewrites the file without it; ``curta-chain deploy`` run again with
the same keypair finds the program on the chain and records it again.

Only the command line reads this file: the library takes URLs, commitments and program
ids as values (``chain.session.connect``).
"""

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from curta_chain.chain.cluster import is_local_cluster, is_loopback
from curta_chain.constants import (
    COMMITMENTS,
    LOCALNET_PORT,
    LOCALNET_PROGRAM_ID,
)
from curta_chain.errors import ConfigError
from curta_chain.fsutil import atomic_write

MONIKERS = {
    "localhost": f"http://127.0.0.1:{LOCALNET_PORT}",
    "devnet": "https://api.devnet.solana.com",
    "testnet": "https://api.testnet.solana.com",
    "mainnet-beta": "https://api.mainnet-beta.solana.com",
}
SHORT_MONIKERS = {"l": "localhost", "d": "devnet", "t": "testnet", "m": "mainnet-beta"}
DEFAULT_COMMITMENT = "confirmed"
PROGRAM_IDS_KEY = "curta_program_ids"
"""The config key under which ``deploy`` records each cluster's program (by genesis hash)."""


def default_config_path() -> Path:
    """Where the Solana CLI keeps its config."""
    return Path.home() / ".config" / "solana" / "cli" / "config.yml"


@dataclass(frozen=True)
class CliConfig:
    """The three settings curta-chain takes from the Solana CLI config."""

    json_rpc_url: str | None = None
    keypair_path: str | None = None
    commitment: str | None = None
    program_ids: tuple[tuple[str, str], ...] = ()
    """``curta_program_ids``: (genesis hash, program id) pairs."""
    path: Path | None = None
    """The file these settings came from (or would, when it does not exist yet)."""


def read_cli_config(path: Path | None = None, may_be_new: bool = False) -> CliConfig:
    """Read the Solana CLI config ``path`` (``-C``), else the default one.

    The default config may be missing (an empty config); a file named with ``-C`` may not,
    unless ``may_be_new`` (``deploy`` creates the file it records the program id in).

    Raises:
        ConfigError: the named file is missing, or a file cannot be read or a line is
            malformed.
    """
    named = path is not None
    path = path or default_config_path()
    text = _read_config_text(path)
    if text is None:
        if named and not may_be_new:
            raise ConfigError(f"{path}: no such Solana CLI config file (-C)")
        return CliConfig(path=path)
    values: dict[str, str] = {}
    program_ids: dict[str, str] = {}
    parent = ""
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split(" #", 1)[0].rstrip()
        if not line or line.lstrip().startswith("#") or line.startswith("---"):
            continue
        nested = line.startswith((" ", "\t"))
        if nested and parent != PROGRAM_IDS_KEY:
            continue
        key, value = _key_value(path, number, raw, line.strip())
        if nested:
            program_ids[key] = value
        else:
            values[key] = value
            parent = key
    return CliConfig(
        json_rpc_url=values.get("json_rpc_url") or None,
        keypair_path=values.get("keypair_path") or None,
        commitment=values.get("commitment") or None,
        program_ids=tuple(program_ids.items()),
        path=path,
    )


def _read_config_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the Solana CLI config: {exc}") from exc


def _key_value(path: Path, number: int, raw: str, line: str) -> tuple[str, str]:
    # YAML needs ": " (or a colon ending the line) between key and value.
    key, sep, value = (line + " ").partition(": ")
    if not sep or not key or any(c.isspace() for c in key):
        raise ConfigError(f"{path}:{number}: expected 'key: value', found {raw.strip()!r}")
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]
    return key.strip(), value


def resolve_program_id(
    flag: str | None, config: CliConfig, genesis_hash: str, url: str
) -> tuple[str, str]:
    """Return the program id to use on this cluster, and where it came from.

    ``--program-id``, else the config's ``curta_program_ids`` entry for this genesis hash,
    else, on a local test cluster this user started (``curta-chain localnet``, or
    ``--validator``: both preload it), the program it preloads. No other cluster has a
    built-in id.

    Raises:
        ConfigError: none of those gives an id.
    """
    if flag:
        return flag, "--program-id"
    recorded = dict(config.program_ids).get(genesis_hash)
    if recorded:
        return recorded, f"{PROGRAM_IDS_KEY} in {config.path}"
    if is_local_cluster(url, genesis_hash):
        return LOCALNET_PROGRAM_ID, "the local cluster's preloaded program"
    why = ""
    if is_loopback(url):
        why = (
            "; it runs on this machine, but no `curta-chain localnet` of this user recorded its "
            "genesis hash, so it is treated as a real cluster"
        )
    raise ConfigError(
        f"no curta program is known for the cluster at {url} (genesis {genesis_hash}{why}): "
        f"deploy one with `curta-chain deploy -u {url}`, or pass --program-id ADDRESS"
    )


def record_program_id(path: Path, genesis_hash: str, program_id: str) -> None:
    """Record ``program_id`` for the cluster ``genesis_hash`` in the config at ``path``.

    Every other line of the file is kept as it is; the ``curta_program_ids`` block is
    rewritten at the end. A missing file is created.

    Raises:
        ConfigError: the file cannot be read or written.
    """
    text = _read_config_text(path) or ""
    entries = dict(read_cli_config(path).program_ids) if text else {}
    entries[genesis_hash] = program_id
    kept: list[str] = []
    inside = False
    for raw in text.splitlines():
        if raw.startswith(f"{PROGRAM_IDS_KEY}:"):
            inside = True
            continue
        if inside and (raw.startswith((" ", "\t")) or not raw.strip()):
            continue
        inside = False
        kept.append(raw)
    block = [f"{PROGRAM_IDS_KEY}:", *(f"  {g}: {p}" for g, p in entries.items())]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, ("\n".join([*kept, *block]) + "\n").encode())
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write the Solana CLI config: {exc.strerror}") from exc


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


def keypair_path(path: str | None, config: CliConfig) -> Path:
    """Return ``-k``, else the config's keypair, else ``~/.config/solana/id.json``."""
    if path:
        return Path(path).expanduser()
    if config.keypair_path:
        return Path(config.keypair_path).expanduser()
    return Path.home() / ".config" / "solana" / "id.json"
