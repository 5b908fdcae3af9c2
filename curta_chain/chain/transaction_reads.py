"""What a node says about transactions: their statuses, and landed ones read back.

``TransactionReads`` is the part of ``rpc.RpcClient`` that asks about transactions rather
than accounts: signature statuses from the node's status cache (or, asked for, its ledger's
history), and landed transactions read back whole (getSignaturesForAddress, then
getTransaction) with their fee payer and compute units, waiting for a node that has not
indexed one yet.
"""

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from solders.pubkey import Pubkey

from curta_chain.chain.jsonrpc import JsonRpc
from curta_chain.constants import MAX_SIGNATURE_STATUSES
from curta_chain.errors import ChainError, RpcCallError, RpcError

SIGNATURES_PER_PAGE = 1_000
"""getSignaturesForAddress's most signatures an answer."""


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


class TransactionReads(JsonRpc):
    """Signature statuses and landed transactions (the client's reads of transactions)."""

    commitment: str
    """The commitment reads are made at (``RpcClient`` sets it)."""
    status_slot: int = 0
    """The slot the last statuses were read at (their answers' context)."""

    async def signature_statuses(
        self, signatures: Sequence[str], search_history: bool = False
    ) -> list[SignatureStatus | None]:
        """Return the status of each signature (None where the node has not seen it).

        The node answers from its status cache (the last few hundred slots), which is what
        a poll of transactions in flight needs. ``search_history`` also searches the ledger,
        a lookup per signature the cache lacks that providers bill as such: only for a
        signature the cache may no longer hold (see ``statuses.StatusPoller.search``).
        """
        config = {"searchTransactionHistory": True} if search_history else {}
        calls = [
            (
                "getSignatureStatuses",
                [list(signatures[i : i + MAX_SIGNATURE_STATUSES]), *([config] if config else [])],
            )
            for i in range(0, len(signatures), MAX_SIGNATURE_STATUSES)
        ]
        out: list[SignatureStatus | None] = []
        for (_, (asked, *_)), result in zip(calls, await self._batch_or_raise(calls), strict=True):
            context = result.get("context") if isinstance(result, dict) else None
            slot = context.get("slot") if isinstance(context, dict) else None
            if isinstance(slot, int):
                self.status_slot = slot
            values = result.get("value") if isinstance(result, dict) else None
            if not isinstance(values, list) or len(values) != len(asked):
                raise RpcError(
                    f"{self.url}: getSignatureStatuses answered no list of {len(asked)} statuses"
                )
            for value in values:
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

    async def compute_units(self, signatures: Sequence[str]) -> list[int]:
        """Return the compute units each landed transaction consumed (getTransaction).

        Raises:
            ChainError: a transaction was still unknown after ``LAG_WAIT`` seconds.
        """
        answers = await self._landed(signatures, self.commitment)
        return [int(answer["meta"]["computeUnitsConsumed"]) for answer in answers]

    async def _landed(self, signatures: Sequence[str], commitment: str) -> list[dict[str, Any]]:
        """Each of ``signatures``' getTransaction answer, every one with its meta.

        A transaction the node has not indexed yet (it answers null for one that landed:
        a node behind the one that listed or confirmed it, as behind a load balancer) is
        asked again until it has.

        Raises:
            ChainError: a transaction was still unknown after ``LAG_WAIT`` seconds.
        """
        out: dict[int, dict[str, Any]] = {}
        todo = list(range(len(signatures)))
        deadline = time.monotonic() + self.lag_wait
        config: dict[str, object] = {"encoding": "json", "commitment": commitment}
        config["maxSupportedTransactionVersion"] = 1  # v1 (a run's opening, publish's writes)
        while todo:
            answers = await self.batch([("getTransaction", [signatures[i], config]) for i in todo])
            missing = []
            for index, answer in zip(todo, answers, strict=True):
                if isinstance(answer, RpcCallError):
                    raise answer
                meta = answer.get("meta") if isinstance(answer, dict) else None
                if meta is None or not isinstance(meta.get("computeUnitsConsumed"), int):
                    missing.append(index)
                else:
                    out[index] = answer
            if missing and time.monotonic() > deadline:
                raise ChainError(
                    f"{self.url}: transaction {signatures[missing[0]]} could not be read back "
                    f"in {self.lag_wait:.0f} s"
                )
            if missing:
                self.lag_waits += 1
                await asyncio.sleep(self.lag_poll)
            todo = missing
        return [out[i] for i in range(len(signatures))]

    async def signatures_for(
        self, address: Pubkey, since_slot: int, failed: bool = False, min_context_slot: int = 0
    ) -> list[str]:
        """The signatures of the transactions naming ``address`` that landed from ``since_slot``.

        Oldest first, at confirmed commitment (getSignaturesForAddress, page by page);
        without error, or with ``failed`` those that landed with one. ``min_context_slot``:
        answered from a slot at least that late.
        """
        signatures: list[str] = []
        before: str | None = None
        while True:
            config: dict[str, Any] = {"commitment": "confirmed", "limit": SIGNATURES_PER_PAGE}
            if before is not None:
                config["before"] = before
            if min_context_slot:
                config["minContextSlot"] = min_context_slot
            page = await self.call("getSignaturesForAddress", [str(address), config])
            signatures += [
                item["signature"]
                for item in page
                if item["slot"] >= since_slot and (item.get("err") is not None) == failed
            ]
            if len(page) < SIGNATURES_PER_PAGE or page[-1]["slot"] < since_slot:
                break
            before = page[-1]["signature"]
        signatures.reverse()
        return signatures

    async def landed_transactions(
        self, address: Pubkey, since_slot: int, failed: bool = False
    ) -> list[Landed]:
        """Every transaction that landed without error naming ``address`` from ``since_slot``.

        Oldest first, each with its fee payer and compute units (``signatures_for``, then
        getTransaction at confirmed commitment, the lowest that answers it). With
        ``failed``, those that landed with an error instead (each paid its fee).

        Raises:
            ChainError: a transaction the node listed was still unknown to it after
                ``LAG_WAIT`` seconds.
        """
        signatures = await self.signatures_for(address, since_slot, failed)
        out: list[Landed] = []
        for signature, answer in zip(
            signatures, await self._landed(signatures, "confirmed"), strict=True
        ):
            payer = answer["transaction"]["message"]["accountKeys"][0]
            units = answer["meta"]["computeUnitsConsumed"]
            out.append(Landed(signature, int(answer["slot"]), payer, units))
        return out
