"""Solana JSON-RPC: the shapes of the requests curta-chain makes and of their answers.

``RpcClient`` builds each request body, hands it to a transport (which alone owns HTTP)
and turns the answer into plain Python values or a ``CurtaError``. Batches go out as one
JSON-RPC batch request, which a validator answers in one round trip. An error object the
node answers with is an ``RpcCallError``; what a failed transaction means to our program is
the program layer's to say (``program.transaction_error``), as anchorpy translates errors in
its program namespace, not in its RPC client.

Every RPC call curta-chain makes goes through here, so a provider's limits and a lagging
node are handled in one place:

- A batch goes out in pieces of the provider's learnt batch size (``ProviderLimits``); a
  piece the provider refuses (HTTP 413 or 400, an error object for the whole batch, or an
  answer that is no list) halves that size and is sent again as two; at size one, calls go
  out alone, outside any batch (providers that take no batches at all).
- A node behind the slot a read asks for (``minContextSlot``: the slot of the last
  transaction this client saw land) answers -32016; the read waits for it, up to
  ``LAG_WAIT`` seconds, and never reports the old state. ``landed(slot)`` is how the
  sender tells the client that reads must now be at least that new.
"""

import asyncio
import base64
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from solders.hash import Hash
from solders.message import Message
from solders.pubkey import Pubkey

from curta_chain.chain.transport import BatchRefusedError, ProviderLimits
from curta_chain.constants import MAX_SIGNATURE_STATUSES
from curta_chain.errors import ChainError, RpcCallError, RpcError

MAX_ACCOUNTS_PER_CALL = 100
"""getMultipleAccounts answers at most 100 keys."""
SIGNATURES_PER_PAGE = 1_000
"""getSignaturesForAddress's most signatures an answer."""
ACCOUNT_SLICE = 1 << 20
"""Bytes of account data read per request: keeps each JSON answer small."""
MIN_CONTEXT_SLOT_NOT_REACHED = -32016
"""The node is behind the ``minContextSlot`` a read asked for."""
LAG_WAIT = 60.0
"""Seconds a read waits for a node behind the slot it needs before giving up."""
LAG_POLL = 0.2
"""Seconds between two tries of a read the node is behind for."""
MAX_PRIORITIZATION_ADDRESSES = 128
"""getRecentPrioritizationFees takes at most 128 accounts."""


class Transport(Protocol):
    """Anything that POSTs a JSON-RPC payload and returns the decoded answer."""

    url: str

    async def post(self, payload: dict[str, Any] | list[dict[str, Any]]) -> Any:
        """Send ``payload``; return the decoded JSON answer."""

    async def aclose(self) -> None:
        """Release connections."""


@dataclass(frozen=True)
class AccountInfo:
    """An account as the node reports it."""

    owner: Pubkey
    lamports: int
    data: bytes
    executable: bool = False


@dataclass(frozen=True)
class Landed:
    """A transaction that landed: its signature, slot, fee payer and compute units."""

    signature: str
    slot: int
    fee_payer: str
    compute_units: int


@dataclass(frozen=True)
class SignatureStatus:
    """One answer of getSignatureStatuses for a signature the node knows."""

    slot: int
    confirmation: str | None
    err: Any


class RpcClient:
    """Typed Solana JSON-RPC calls over an injected transport."""

    def __init__(
        self,
        transport: Transport,
        commitment: str = "confirmed",
        min_context_slot: int | None = None,
    ):
        self.transport = transport
        self.url = transport.url
        self.commitment = commitment
        self.sends = 0
        """sendTransaction requests posted through this client (so: might have landed)."""
        self.min_context_slot = min_context_slot
        """Account reads ask the node to answer from at least this slot (``minContextSlot``)."""
        self.context_slot = 0
        """The highest slot an account read was answered at."""
        limits = getattr(transport, "limits", None)
        self.limits: ProviderLimits = limits if limits is not None else ProviderLimits()
        """The provider's batch size (and, in the transport, its rate)."""
        self.lag_waits = 0
        """Reads the node was behind for, and that waited."""
        self.lag_wait = LAG_WAIT
        """Seconds a read waits for a node behind the slot it needs."""
        self.lag_poll = LAG_POLL
        self._genesis_hash: str | None = None
        self._next_id = 0

    def landed(self, slot: int) -> None:
        """A transaction landed at ``slot``: every later read must see at least that slot."""
        if slot > (self.min_context_slot or 0):
            self.min_context_slot = slot

    def _request(self, method: str, params: list[Any]) -> dict[str, Any]:
        self._next_id += 1
        return {"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params}

    async def call(self, method: str, params: list[Any]) -> Any:
        """Make one call and return its ``result``.

        Raises:
            RpcCallError: the node answered with an error object.
            RpcError: the node gave no usable answer.
        """
        deadline = time.monotonic() + self.lag_wait
        while True:
            answer = await self.transport.post(self._request(method, params))
            try:
                return _result(method, answer)
            except RpcCallError as exc:
                if exc.code != MIN_CONTEXT_SLOT_NOT_REACHED or time.monotonic() > deadline:
                    raise
            self.lag_waits += 1
            await asyncio.sleep(self.lag_poll)

    async def batch(self, calls: Sequence[tuple[str, list[Any]]]) -> list[Any]:
        """Make several calls in JSON-RPC batches; each item is a result or RpcCallError.

        The calls go out in pieces of the provider's batch size, at once; a node behind a
        read's ``minContextSlot`` is waited for (see the module's docstring).
        """
        if not calls:
            return []
        out: list[Any] = [None] * len(calls)
        todo = list(range(len(calls)))
        deadline = time.monotonic() + self.lag_wait
        while True:
            results = await self._pieces([calls[i] for i in todo])
            behind = []
            for index, result in zip(todo, results, strict=True):
                out[index] = result
                if isinstance(result, RpcCallError) and result.code == MIN_CONTEXT_SLOT_NOT_REACHED:
                    behind.append(index)
            if not behind or time.monotonic() > deadline:
                return out
            self.lag_waits += 1
            todo = behind
            await asyncio.sleep(self.lag_poll)

    async def _pieces(self, calls: Sequence[tuple[str, list[Any]]]) -> list[Any]:
        """Post ``calls`` in pieces of at most the provider's batch size, concurrently."""
        size = self.limits.batch
        if len(calls) > size:
            parts = await asyncio.gather(
                *(self._pieces(calls[i : i + size]) for i in range(0, len(calls), size))
            )
            return [result for part in parts for result in part]
        if size == 1 and len(calls) == 1:
            # A provider that takes no batches: the call goes out alone.
            method, params = calls[0]
            try:
                return [_result(method, await self.transport.post(self._request(method, params)))]
            except RpcCallError as exc:
                return [exc]
        requests = [self._request(method, params) for method, params in calls]
        try:
            answers = await self.transport.post(requests)
        except BatchRefusedError:
            answers = None
        if not isinstance(answers, list):
            # Refused as a whole (an error object, HTTP 413 or 400, or no list): halve it;
            # a single call then goes out alone, outside a batch.
            self.limits.refused(len(calls))
            return await self._pieces(calls)
        by_id = {a.get("id"): a for a in answers if isinstance(a, dict)}
        out: list[Any] = []
        for (method, _), request in zip(calls, requests, strict=True):
            answer = by_id.get(request["id"])
            if answer is None:
                raise RpcError(f"{self.url}: the batch answer lacks request {request['id']}")
            try:
                out.append(_result(method, answer))
            except RpcCallError as exc:
                out.append(exc)
        return out

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

    async def fee_for_message(self, message: Message) -> int:
        """Return the fee the cluster charges for ``message``."""
        encoded = base64.b64encode(bytes(message)).decode()
        result = await self.call("getFeeForMessage", [encoded, {"commitment": self.commitment}])
        if result["value"] is None:
            raise RpcError(f"{self.url}: getFeeForMessage: the blockhash is unknown to the node")
        return int(result["value"])

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

        Raises:
            ChainError: the account is missing or shorter than asked.
        """
        calls = [
            (
                "getAccountInfo",
                [
                    str(pubkey),
                    self._read_config(
                        dataSlice={
                            "offset": start,
                            "length": min(ACCOUNT_SLICE, offset + length - start),
                        }
                    ),
                ],
            )
            for start in range(offset, offset + length, ACCOUNT_SLICE)
        ]
        parts: list[bytes] = []
        for i in range(0, len(calls), 8):
            for result in await self._batch_or_raise(calls[i : i + 8]):
                self._note_slot(result)
                info = _account(result["value"])
                if info is None:
                    raise ChainError(f"account {pubkey} does not exist")
                parts.append(info.data)
        data = b"".join(parts)
        if len(data) != length:
            raise ChainError(
                f"account {pubkey}: expected {length} bytes at {offset}, got {len(data)}"
            )
        return data

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

    async def signature_statuses(self, signatures: Sequence[str]) -> list[SignatureStatus | None]:
        """Return the status of each signature (None where the node has not seen it)."""
        calls = [
            (
                "getSignatureStatuses",
                [
                    list(signatures[i : i + MAX_SIGNATURE_STATUSES]),
                    {"searchTransactionHistory": True},
                ],
            )
            for i in range(0, len(signatures), MAX_SIGNATURE_STATUSES)
        ]
        out: list[SignatureStatus | None] = []
        for result in await self._batch_or_raise(calls):
            for value in result["value"]:
                out.append(
                    None
                    if value is None
                    else SignatureStatus(
                        slot=int(value["slot"]),
                        confirmation=value.get("confirmationStatus"),
                        err=value.get("err"),
                    )
                )
        return out

    async def prioritization_fees(self, writable: Sequence[Pubkey]) -> list[int]:
        """Return what recent slots paid to write ``writable``, one price per slot.

        Prices are micro-lamports per compute unit; the node takes the first 128 accounts.
        """
        keys = [str(k) for k in writable[:MAX_PRIORITIZATION_ADDRESSES]]
        result = await self.call("getRecentPrioritizationFees", [keys])
        if not isinstance(result, list):
            raise RpcError(f"{self.url}: getRecentPrioritizationFees: expected a list")
        return [int(item["prioritizationFee"]) for item in result if isinstance(item, dict)]

    async def compute_units(self, signatures: Sequence[str]) -> list[int]:
        """Return the compute units each landed transaction consumed (getTransaction).

        A transaction the node has not indexed yet (it answers null for one that landed:
        a node behind the one that confirmed it) is asked again until it has.

        Raises:
            ChainError: a transaction's units were still unknown after ``LAG_WAIT`` seconds.
        """
        out: dict[int, int] = {}
        todo = list(range(len(signatures)))
        deadline = time.monotonic() + self.lag_wait
        config = {"encoding": "json", "commitment": self.commitment}
        config["maxSupportedTransactionVersion"] = 0
        while todo:
            answers = await self.batch([("getTransaction", [signatures[i], config]) for i in todo])
            missing = []
            for index, answer in zip(todo, answers, strict=True):
                if isinstance(answer, RpcCallError):
                    raise answer
                meta = answer.get("meta") if isinstance(answer, dict) else None
                if meta is None or "computeUnitsConsumed" not in meta:
                    missing.append(index)
                else:
                    out[index] = int(meta["computeUnitsConsumed"])
            if missing and time.monotonic() > deadline:
                raise ChainError(
                    f"{self.url}: the compute units of {signatures[missing[0]]} could not be "
                    f"read back in {self.lag_wait:.0f} s"
                )
            if missing:
                self.lag_waits += 1
                await asyncio.sleep(self.lag_poll)
            todo = missing
        return [out[i] for i in range(len(signatures))]

    async def landed_transactions(self, address: Pubkey, since_slot: int) -> list[Landed]:
        """Every transaction that landed without error naming ``address`` from ``since_slot``.

        Oldest first, each with its fee payer and compute units (getSignaturesForAddress,
        then getTransaction at confirmed commitment, the lowest that answers it).

        Raises:
            RpcError: a transaction the node listed has no meta.
        """
        signatures: list[str] = []
        before: str | None = None
        while True:
            config: dict[str, Any] = {"commitment": "confirmed", "limit": SIGNATURES_PER_PAGE}
            if before is not None:
                config["before"] = before
            page = await self.call("getSignaturesForAddress", [str(address), config])
            signatures += [
                item["signature"]
                for item in page
                if item["slot"] >= since_slot and item.get("err") is None
            ]
            if len(page) < SIGNATURES_PER_PAGE or page[-1]["slot"] < since_slot:
                break
            before = page[-1]["signature"]
        signatures.reverse()
        config = {"encoding": "json", "commitment": "confirmed"}
        answers = await self._batch_or_raise([("getTransaction", [s, config]) for s in signatures])
        out: list[Landed] = []
        for signature, answer in zip(signatures, answers, strict=True):
            meta = answer.get("meta") if isinstance(answer, dict) else None
            if meta is None or not isinstance(meta.get("computeUnitsConsumed"), int):
                raise RpcError(f"{self.url}: transaction {signature} has no meta")
            payer = answer["transaction"]["message"]["accountKeys"][0]
            out.append(Landed(signature, int(answer["slot"]), payer, meta["computeUnitsConsumed"]))
        return out

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

    async def _batch_or_raise(self, calls: Sequence[tuple[str, list[Any]]]) -> list[Any]:
        results = await self.batch(calls)
        for result in results:
            if isinstance(result, RpcCallError):
                raise result
        return results

    async def aclose(self) -> None:
        """Close the transport."""
        await self.transport.aclose()


def _result(method: str, answer: Any) -> Any:
    if not isinstance(answer, dict):
        raise RpcError(f"{method}: expected a JSON-RPC answer, got {answer!r:.100}")
    if "error" in answer:
        raise RpcCallError(method, answer["error"] or {})
    if "result" not in answer:
        raise RpcError(f"{method}: the answer has neither result nor error")
    return answer["result"]


def _whole_batch_error(answer: Any) -> bool:
    """Whether ``answer`` is one error object answering a whole batch (a refused batch)."""
    return isinstance(answer, dict) and "error" in answer and "result" not in answer


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
