"""How long a transaction is on the wire, for every version, and the most payload one carries.

A signed transaction is its signatures and its message: a legacy or v0 one writes a
compact-u16 count, the 64-byte signatures, then the message (a v0 message starts with its
version byte and ends with its address-table lookups); a v1 one (SIMD-0385) writes its
message, then the signatures. Sizes are measured by serializing the transaction with
every required signature in place (zeros), so each version's own layout counts, never an
estimate of it. A legacy or v0 transaction is at most 1,232 bytes, a v1 one 4,096.

``largest_payload`` is the one sizer the client's builders use: given how to build a
message around ``n`` payload bytes, the most bytes that keep every version asked for within
its limit.
"""

from collections.abc import Callable

from solders.message import Message, MessageV0, MessageV1
from solders.signature import Signature
from solders.transaction import VersionedTransaction

from curta_chain.protocol.limits import MAX_TRANSACTION_SIZE, MAX_V1_TRANSACTION_SIZE

__all__ = ["AnyMessage", "largest_payload", "size_limit", "transaction_size"]

AnyMessage = Message | MessageV0 | MessageV1
"""A transaction's message, of any version."""


def size_limit(message: AnyMessage) -> int:
    """The most bytes a signed transaction of ``message`` may take on the wire."""
    return MAX_V1_TRANSACTION_SIZE if isinstance(message, MessageV1) else MAX_TRANSACTION_SIZE


def transaction_size(message: AnyMessage) -> int:
    """The serialized size of ``message`` signed by every signer it requires."""
    signatures = [Signature.default()] * message.header.num_required_signatures
    return len(bytes(VersionedTransaction.populate(message, signatures)))


def largest_payload(*builds: Callable[[bytes], AnyMessage]) -> int:
    """The most bytes each of ``builds`` carries within its transaction's size limit.

    Args:
        builds: each builds a message around the payload it is given (``bytes(n)``); with
            several (the same transaction as legacy and as v0, say), the smallest room
            among them, so that any of them may be sent.

    Returns:
        The largest payload length that keeps every build's transaction within its limit.
        A length prefix that grows with the payload (a compact-u16 past 127) is allowed
        for: the result is stepped down until it fits.
    """
    best = []
    for build in builds:
        empty = build(b"")
        limit = size_limit(empty)
        payload = limit - transaction_size(empty)
        while payload > 0 and transaction_size(build(bytes(payload))) > limit:
            payload -= 1
        best.append(payload)
    return min(best)
