"""Connecting to a cluster: which one it is, and checking the program to trust there.

Every chain command starts here, before it sends anything. The cluster is known by its
genesis hash, and a local test cluster by its loopback URL and the genesis hash this user's
localnet recorded (``cluster.is_local_cluster``). Which program id to use is the caller's to
say (the command line takes ``--program-id``, else what ``deploy`` recorded in the Solana
CLI config, else on a local test cluster the program it preloads:
``cli.solana_config.resolve_program_id``), or the chain's: ``connect_to_owner`` takes the
program that owns a given account. Either way the program account is read and its bytes
must be a shipped build (or a hash the user names); anything else is refused with one
line.
"""

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from solders.pubkey import Pubkey
from solders.system_program import ID as SYSTEM_PROGRAM_ID

from curta_chain.chain.cluster import is_local_cluster
from curta_chain.chain.loader import LOADER_V2, LOADER_V3
from curta_chain.chain.program_check import DeployedProgram, check_program, read_program
from curta_chain.chain.rpc import RpcClient
from curta_chain.constants import LOCALNET_PROGRAM_ID
from curta_chain.errors import AccountError, ConfigError, ProgramCheckError

LOCALNET_PROGRAM = Pubkey.from_string(LOCALNET_PROGRAM_ID)

_HASH = re.compile(r"[0-9a-fA-F]{64}")


@dataclass(frozen=True)
class Connection:
    """A cluster and the checked curta program on it."""

    client: RpcClient
    genesis_hash: str
    program: DeployedProgram
    program_source: str
    """Where the program id came from (the flag, the config key, the local cluster, the
    owner of an account)."""
    note: str | None = None
    """Why the program is not the one first named (the model belongs to another)."""

    @property
    def program_id(self) -> Pubkey:
        """The checked program's id."""
        return self.program.program_id

    @property
    def localnet(self) -> bool:
        """Whether this is a local test cluster this user started (no real money)."""
        return is_local_cluster(self.client.url, self.genesis_hash)


def parse_program_hashes(values: Sequence[str]) -> tuple[str, ...]:
    """Check each ``--program-hash``: 64 hex digits (a SHA-256); return them lower-cased.

    Raises:
        ConfigError: a value is not a SHA-256 in hex.
    """
    for value in values:
        if not _HASH.fullmatch(value):
            raise ConfigError(f"--program-hash {value!r}: expected a SHA-256 as 64 hex digits")
    return tuple(v.lower() for v in values)


def is_address(text: str) -> bool:
    """Whether ``text`` is a base58 Solana address."""
    try:
        Pubkey.from_string(text)
    except ValueError:
        return False
    return True


def parse_address(text: str, what: str) -> Pubkey:
    """Parse a base58 address, naming ``what`` in the error.

    Raises:
        ConfigError: ``text`` is not a 32-byte base58 address.
    """
    try:
        return Pubkey.from_string(text)
    except ValueError as exc:
        raise ConfigError(f"{what} {text!r}: not a base58 Solana address") from exc


async def connect(
    client: RpcClient,
    program_id: Callable[[str], tuple[str, str]],
    trusted_hashes: Sequence[str] = (),
) -> Connection:
    """Find the cluster's program, read it, and refuse it unless it is a shipped build.

    Args:
        client: the cluster's RPC client.
        program_id: given the cluster's genesis hash, the program id to use there and where
            it came from ("--program-id", the config key, the embedded localnet).
        trusted_hashes: ``--program-hash`` values: builds trusted besides the shipped ones.

    Raises:
        ConfigError: no program id is known for this cluster, or it is malformed.
        ProgramCheckError: the program is missing, not executable, or not a trusted build.
    """
    genesis_hash = await client.genesis_hash()
    text, source = program_id(genesis_hash)
    address = parse_address(text, "--program-id" if source == "--program-id" else source)
    try:
        program = await read_program(client, address)
        check_program(program, trusted_hashes)
    except ProgramCheckError as exc:
        if source == "--program-id":
            raise
        raise ProgramCheckError(f"{exc} (program id from {source})") from exc
    return Connection(client, genesis_hash, program, source)


async def connect_to_owner(
    client: RpcClient, address: Pubkey, trusted_hashes: Sequence[str] = ()
) -> Connection:
    """Take the program from the chain: the owner of ``address``, checked as ``connect`` does.

    What verify needs when no program id is named: whoever owns the model is the program
    to check, and it must be executable and hold a shipped build (or a trusted hash).

    Raises:
        AccountError: there is no account at ``address``.
        ProgramCheckError: its owner is not an executable program of a shipped build.
    """
    genesis_hash = await client.genesis_hash()
    (info,) = await client.accounts([address], head=0)
    if info is None:
        raise AccountError(f"{address}: no such account on {client.url}")
    if info.owner == SYSTEM_PROGRAM_ID:
        raise AccountError(
            f"{address} is not a curta model: owned by the System Program (a wallet)"
        )
    (owner,) = await client.accounts([info.owner], head=0)
    if owner is None or not owner.executable or owner.owner not in (LOADER_V2, LOADER_V3):
        raise AccountError(
            f"{address} is not a curta model: owned by {info.owner}, not by a program a BPF "
            "loader deployed"
        )
    source = f"the owner of {address}"
    try:
        program = await read_program(client, info.owner)
        check_program(program, trusted_hashes)
    except ProgramCheckError as exc:
        raise ProgramCheckError(f"{exc} ({source})") from exc
    return Connection(client, genesis_hash, program, source)


async def follow_owner(
    connection: Connection, address: Pubkey, trusted_hashes: Sequence[str] = ()
) -> Connection | None:
    """The connection to act on ``address`` through, when its owner is another trusted program.

    A model published under one shipped build (the localnet's preloaded program) stays
    readable, sealable, closable and runnable after another is deployed and recorded: only
    its owner can act on it. Returns None when the account is missing, owned by the
    connection's program, or owned by anything but a program holding a shipped build (or a
    trusted hash): the command then fails as it would.
    """
    (info,) = await connection.client.accounts([address], head=0)
    if info is None or info.owner == connection.program_id:
        return None
    try:
        program = await read_program(connection.client, info.owner)
        check_program(program, trusted_hashes)
    except ProgramCheckError:
        return None
    return replace(
        connection,
        program=program,
        program_source=f"the owner of {address}",
        note=f"{address} belongs to program {info.owner} (a shipped build), not "
        f"{connection.program_id}: using that program",
    )


async def listed_programs(
    connection: Connection, trusted_hashes: Sequence[str] = ()
) -> list[Connection]:
    """The connections a list of models or runs reads: this one, and the preloaded program.

    On the embedded localnet with another program recorded (after a deploy), what was
    published or run before the deploy stays under the program the localnet preloads, and
    a list that left it out would hide it; elsewhere, only the connection's program.
    """
    if not connection.localnet or connection.program_id == LOCALNET_PROGRAM:
        return [connection]
    try:
        program = await read_program(connection.client, LOCALNET_PROGRAM)
        check_program(program, trusted_hashes)
    except ProgramCheckError:
        return [connection]
    preloaded = replace(
        connection, program=program, program_source="the embedded localnet", note=None
    )
    return [connection, preloaded]
