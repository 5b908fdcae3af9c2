"""Solana JSON-RPC: the typed requests curta-chain makes and the shapes of their answers.

``RpcClient`` builds each request's parameters and turns the answer into plain Python
values or a ``CurtaError``; the calls and batches themselves, sized to the provider and
patient with a lagging node, are ``jsonrpc.JsonRpc``'s, and what it asks about transactions
(statuses, landed ones read back) is ``transaction_reads.TransactionReads``'s, both of which
it extends. An error object
the node answers with is an ``RpcCallError``; what a failed transaction means to our
program is the program layer's to say (``program.transaction_error``), as Anchor's
clients translate errors in their program namespace, not in their RPC client.

Every RPC call curta-chain makes goes through here. Reads carry ``minContextSlot``: the
slot of the last transaction this client saw land; ``landed(slot)`` is how the sender tells
the client that reads must now be at least that new.
"""

import asyncio
import base64
import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from solders.hash import Hash
from solders.message import Message, MessageV1, to_bytes_versioned
from solders.pubkey import Pubkey

from curta_chain.chain.jsonrpc import Transport
from curta_chain.chain.transaction_reads import TransactionReads
from curta_chain.constants import MAX_ACCOUNT_SIZE, MAX_PRIORITIZATION_ADDRESSES
from curta_chain.errors import ChainError, RpcError

MAX_ACCOUNTS_PER_CALL = 100
"""getMultipleAccounts answers at most 100 keys."""
ACCOUNT_SLICE = 1 << 20
"""Bytes of account data read per request: keeps each JSON answer small."""
READS_AT_ONCE = 8
"""Slices of one account read asked for in one batch."""


@dataclass(frozen=True)
class AccountInfo:
    """An account as the node reports it."""

    owner: Pubkey
    lamports: int
    data: bytes
    executable: bool = False


@dataclass(frozen=True)
class Simulation:
    """What simulateTransaction says: the error (None: it would succeed) and the logs."""

    err: Any
    logs: tuple[str, ...]


class RpcClient(TransactionReads):
    """Typed Solana JSON-RPC calls over an injected transport."""

    def __init__(
        self,
        transport: Transport,
        commitment: str = "confirmed",
        min_context_slot: int | None = None,
    ):
        super().__init__(transport)
        self.commitment = commitment
        self.sends = 0
        """sendTransaction requests posted through this client (so: might have landed)."""
        self.min_context_slot = min_context_slot
        """Account reads ask the node to answer from at least this slot (``minContextSlot``)."""
        self.context_slot = 0
        """The highest slot an account read was answered at."""
        self._genesis_hash: str | None = None

    def landed(self, slot: int) -> None:
        """A transaction landed at ``slot``: every later read must see at least that slot."""
        if slot > (self.min_context_slot or 0):
            self.min_context_slot = slot

    # Reads.

    async def genesis_hash(self) -> str:
        """Return the cluster's genesis hash (base58); asked once per client."""
        if self._genesis_hash is None:
            self._genesis_hash = str(await self.call("getGenesisHash", []))
        return self._genesis_hash

    def _read_config(self, **extra: Any) -> dict[str, Any]:
        """The configuration of an account read: base64, our commitment, the context slot."""
        config: dict[str, Any] = {"encoding": "base64", "commitment": self.commitment, **extra}
        if self.min_context_slot is not None:
            config["minContextSlot"] = self.min_context_slot
        return config

    def _note_slot(self, result: dict[str, Any]) -> None:
        context = result.get("context")
        if isinstance(context, dict) and isinstance(context.get("slot"), int):
            self.context_slot = max(self.context_slot, context["slot"])

    async def latest_blockhash(self) -> tuple[Hash, int]:
        """Return the latest blockhash and the last block height at which it is valid."""
        value = (await self.call("getLatestBlockhash", [{"commitment": self.commitment}]))["value"]
        return Hash.from_string(value["blockhash"]), int(value["lastValidBlockHeight"])

    async def block_height(self) -> int:
        """Return the current block height."""
        return int(await self.call("getBlockHeight", [{"commitment": self.commitment}]))

    async def balance(self, pubkey: Pubkey) -> int:
        """Return ``pubkey``'s balance in lamports."""
        result = await self.call("getBalance", [str(pubkey), {"commitment": self.commitment}])
        return int(result["value"])

    async def rent_exempt_minimum(self, size: int) -> int:
        """Return the lamports that make an account of ``size`` bytes rent-exempt."""
        return int(await self.call("getMinimumBalanceForRentExemption", [size]))

    async def fee_for_message(self, message: Message | MessageV1) -> int:
        """Return the fee the cluster charges for ``message`` (legacy or v1)."""
        encoded = base64.b64encode(to_bytes_versioned(message)).decode()
        result = await self.call("getFeeForMessage", [encoded, {"commitment": self.commitment}])
        value = result.get("value") if isinstance(result, dict) else "no context"
        if value is None:
            raise RpcError(f"{self.url}: getFeeForMessage: the blockhash is unknown to the node")
        if not _is_u64(value):
            raise RpcError(f"{self.url}: getFeeForMessage: {value!r} is not a fee in lamports")
        return int(value)

    async def accounts(
        self, pubkeys: Sequence[Pubkey], head: int = 4096
    ) -> list[AccountInfo | None]:
        """Return each account's owner, lamports and first ``head`` bytes (None where absent).

        Use ``account_data`` to read past the head of a large account.
        """
        calls = [
            (
                "getMultipleAccounts",
                [
                    [str(k) for k in pubkeys[i : i + MAX_ACCOUNTS_PER_CALL]],
                    self._read_config(dataSlice={"offset": 0, "length": head}),
                ],
            )
            for i in range(0, len(pubkeys), MAX_ACCOUNTS_PER_CALL)
        ]
        out: list[AccountInfo | None] = []
        for result in await self._batch_or_raise(calls):
            self._note_slot(result)
            out.extend(_account(value) for value in result["value"])
        return out

    async def account(self, pubkey: Pubkey) -> AccountInfo | None:
        """Return the whole account (data included), or None if it does not exist."""
        result = await self.call("getAccountInfo", [str(pubkey), self._read_config()])
        self._note_slot(result)
        return _account(result["value"])

    async def account_at(self, pubkey: Pubkey, slot: int) -> AccountInfo | None:
        """Return the whole account as of a slot at least ``slot`` (a state the chain reached).

        For a mirror's compare after a landed transaction: a node behind ``slot`` is waited
        for (it answers -32016), and one that ignores ``minContextSlot`` and answers from an
        older slot is asked again, so the state is never older than ``slot``.

        Raises:
            RpcError: the node stayed behind ``slot`` for ``LAG_WAIT`` seconds.
        """
        deadline = time.monotonic() + self.lag_wait
        floor = max(slot, self.min_context_slot or 0)
        while True:
            result = await self.call(
                "getAccountInfo", [str(pubkey), {**self._read_config(), "minContextSlot": floor}]
            )
            self._note_slot(result)
            context = result.get("context") if isinstance(result, dict) else None
            answered_at = context.get("slot") if isinstance(context, dict) else None
            if not isinstance(answered_at, int) or answered_at >= slot:
                return _account(result["value"])
            if time.monotonic() > deadline:
                raise RpcError(
                    f"{self.url}: answered {pubkey} from slot {answered_at}, behind slot "
                    f"{slot}, for {self.lag_wait:.0f} s"
                )
            self.lag_waits += 1
            await asyncio.sleep(self.lag_poll)

    async def account_data(self, pubkey: Pubkey, offset: int, length: int) -> bytes:
        """Read ``length`` bytes of an account's data from ``offset``, in 1 MiB slices.

        The span is bounded before anything is asked: no account holds more than
        ``MAX_ACCOUNT_SIZE`` bytes, so a longer read (a length a node claimed) is refused at
        once. The slices' requests are made as they go, ``READS_AT_ONCE`` at a time, and each
        answer must be the slice asked for, never longer.

        Raises:
            ChainError: the span is past any account's size, or the account is missing or
                shorter than asked, or the node answered a slice longer than asked.
        """
        end = offset + length
        if offset < 0 or length < 0 or end > MAX_ACCOUNT_SIZE:
            raise ChainError(
                f"account {pubkey}: {length:,} bytes at {offset:,} is past the "
                f"{MAX_ACCOUNT_SIZE:,} bytes an account may hold"
            )
        data = bytearray()
        starts = iter(range(offset, end, ACCOUNT_SLICE))
        while group := list(itertools.islice(starts, READS_AT_ONCE)):
            sizes = [min(ACCOUNT_SLICE, end - start) for start in group]
            calls = [
                (
                    "getAccountInfo",
                    [str(pubkey), self._read_config(dataSlice={"offset": start, "length": size})],
                )
                for start, size in zip(group, sizes, strict=True)
            ]
            for size, result in zip(sizes, await self._batch_or_raise(calls), strict=True):
                self._note_slot(result)
                info = _account(result["value"])
                if info is None:
                    raise ChainError(f"account {pubkey} does not exist")
                if len(info.data) > size:
                    raise ChainError(
                        f"{self.url}: answered {len(info.data):,} bytes of account {pubkey} "
                        f"for a slice of {size:,}"
                    )
                data += info.data
                if len(info.data) < size:
                    raise ChainError(
                        f"account {pubkey}: expected {length} bytes at {offset}, got {len(data)}"
                    )
        return bytes(data)

    async def program_accounts(
        self, program_id: Pubkey, filters: Sequence[dict[str, Any]], head: int | None = None
    ) -> list[tuple[Pubkey, AccountInfo]]:
        """Return the accounts ``program_id`` owns that pass every getProgramAccounts filter.

        With ``head``, only each account's first ``head`` bytes of data are read.
        """
        extra: dict[str, Any] = {"filters": list(filters)}
        if head is not None:
            extra["dataSlice"] = {"offset": 0, "length": head}
        result = await self.call(
            "getProgramAccounts", [str(program_id), self._read_config(**extra)]
        )
        out = []
        for item in result:
            info = _account(item["account"])
            assert info is not None
            out.append((Pubkey.from_string(item["pubkey"]), info))
        return out

    async def prioritization_fees(self, writable: Sequence[Pubkey]) -> list[int]:
        """Return what recent slots paid to write ``writable``, one price per slot.

        Prices are micro-lamports per compute unit; the node takes the first 128 accounts.
        """
        keys = [str(k) for k in writable[:MAX_PRIORITIZATION_ADDRESSES]]
        result = await self.call("getRecentPrioritizationFees", [keys])
        if not isinstance(result, list):
            raise RpcError(f"{self.url}: getRecentPrioritizationFees: expected a list")
        prices = [item.get("prioritizationFee") for item in result if isinstance(item, dict)]
        if not all(_is_u64(price) for price in prices):
            raise RpcError(f"{self.url}: getRecentPrioritizationFees: a price is not a u64")
        return [price for price in prices if isinstance(price, int)]

    async def simulate(self, transaction: bytes, min_context_slot: int = 0) -> Simulation:
        """Simulate a transaction at the latest (processed) state, at least ``min_context_slot``.

        Its blockhash is replaced and its signatures are not checked (it need not be
        signed), so nothing about it is sent and nothing is spent.

        Raises:
            RpcCallError: the node could not simulate it (one behind the slot, say).
        """
        config: dict[str, Any] = {
            "encoding": "base64",
            "commitment": "processed",
            "replaceRecentBlockhash": True,
        }
        if min_context_slot:
            config["minContextSlot"] = min_context_slot
        answer = await self.call(
            "simulateTransaction", [base64.b64encode(transaction).decode(), config]
        )
        value = answer.get("value") if isinstance(answer, dict) else None
        if not isinstance(value, dict):
            raise RpcError(f"{self.url}: simulateTransaction: expected a value")
        return Simulation(value.get("err"), tuple(value.get("logs") or ()))

    # Writes.

    def send_call(self, transaction: bytes, preflight: bool = False) -> tuple[str, list[Any]]:
        """The sendTransaction call for a signed transaction (for ``batch``).

        Without ``preflight`` the node neither simulates it nor retries it: the sender
        watches statuses and re-signs itself.
        """
        config: dict[str, Any] = {"encoding": "base64"}
        if preflight:
            config["preflightCommitment"] = self.commitment
        else:
            config.update(skipPreflight=True, maxRetries=0)
        return "sendTransaction", [base64.b64encode(transaction).decode(), config]

    async def send_transaction(self, transaction: bytes, preflight: bool = True) -> str:
        """Send one signed transaction; return its signature.

        Raises:
            RpcCallError: the node refused it (-32002 carries a failed preflight's
                TransactionError and logs: ``program.preflight_error`` names it).
        """
        return str(await self.call(*self.send_call(transaction, preflight)))

    async def request_airdrop(self, pubkey: Pubkey, lamports: int) -> str:
        """Ask the node's faucet for ``lamports``; return the airdrop's signature."""
        return str(await self.call("requestAirdrop", [str(pubkey), lamports]))


def _account(value: dict[str, Any] | None) -> AccountInfo | None:
    if value is None:
        return None
    data, encoding = value["data"]
    if encoding != "base64":
        raise RpcError(f"unexpected account data encoding {encoding!r}")
    return AccountInfo(
        owner=Pubkey.from_string(value["owner"]),
        lamports=int(value["lamports"]),
        data=base64.b64decode(data),
        executable=bool(value.get("executable")),
    )


def _is_u64(value: object) -> bool:
    """Whether a node's number is a JSON integer 0 to 2^64 - 1 (lamports, prices)."""
    return type(value) is int and 0 <= value < 2**64
