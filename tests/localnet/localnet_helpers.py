"""Small helpers the localnet tests share: raw JSON-RPC calls and transfer transactions."""

import base64
from typing import Any

import httpx
from solders.hash import Hash
from solders.keypair import Keypair
from solders.message import Message
from solders.pubkey import Pubkey
from solders.system_program import TransferParams, transfer
from solders.transaction import VersionedTransaction

from curta_chain.chain.rent import rent_exempt_minimum
from curta_chain.localnet import ManualClock
from curta_chain.localnet.clock import SLOT_SECONDS

RENT = rent_exempt_minimum(0)
"""The least a new account without data may be given: the runtime refuses a transfer that
would leave it below its rent-exempt minimum (InsufficientFundsForRent)."""


def rpc(url: str, method: str, params: list[Any] | None = None) -> dict[str, Any]:
    """POST one JSON-RPC request; return the whole response object."""
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or []}
    return httpx.post(url, json=body, timeout=30).json()


def result(url: str, method: str, params: list[Any] | None = None) -> Any:
    answer = rpc(url, method, params)
    assert "error" not in answer, answer
    return answer["result"]


def latest_blockhash(url: str) -> Hash:
    value = result(url, "getLatestBlockhash", [{"commitment": "confirmed"}])["value"]
    return Hash.from_string(value["blockhash"])


def transfer_tx(
    payer: Keypair, to: Pubkey, lamports: int, blockhash: Hash, extra: tuple = ()
) -> VersionedTransaction:
    instruction = transfer(
        TransferParams(from_pubkey=payer.pubkey(), to_pubkey=to, lamports=lamports)
    )
    message = Message.new_with_blockhash([instruction, *extra], payer.pubkey(), blockhash)
    return VersionedTransaction(message, [payer])


def b64(tx: VersionedTransaction) -> str:
    return base64.b64encode(bytes(tx)).decode()


def send_b64(
    url: str, tx: VersionedTransaction, skip_preflight: bool = False, preflight: str = "confirmed"
) -> dict[str, Any]:
    """Send ``tx``, its preflight in the bank of ``preflight`` (where ``latest_blockhash``
    takes its blockhash: a validator's preflight, finalized by default, knows no newer one)."""
    config = {
        "encoding": "base64",
        "skipPreflight": skip_preflight,
        "preflightCommitment": preflight,
    }
    return rpc(url, "sendTransaction", [b64(tx), config])


PROCESSED_PREFLIGHT = {"encoding": "base64", "preflightCommitment": "processed"}
"""A send's config when its blockhash is the newest bank's (``localnet.clock.blockhash(
localnet.tick())``, or ``getLatestBlockhash`` at processed): its preflight is in that bank."""

CONFIRMED_PREFLIGHT = {"encoding": "base64", "preflightCommitment": "confirmed"}
"""A send's config when its blockhash is ``latest_blockhash``'s (at confirmed)."""

PROCESSED = {"commitment": "processed"}
"""Reads right after a write: what the node has processed (a validator's default for reads
is finalized, 32 slots later)."""


def balance(url: str, pubkey: Pubkey, commitment: str = "processed") -> int:
    return result(url, "getBalance", [str(pubkey), {"commitment": commitment}])["value"]


def advance_slots(clock: ManualClock, slots: int) -> None:
    """Move ``clock`` forward by ``slots`` whole slots (the node sees it at once)."""
    clock.advance(slots * SLOT_SECONDS)
