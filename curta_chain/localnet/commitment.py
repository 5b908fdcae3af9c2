"""How confirmed a landed transaction is: the one rule statuses, reads and PubSub share.

As on a single-node validator: "processed" within its own slot, "confirmed" once that
slot is over (the node's own vote), "finalized" once ``FINALIZED_DEPTH`` (32) slots are
on top of it. ``Localnet.commitment_slot`` is the same rule seen from the reading side.
"""

from typing import Any

from curta_chain.constants import COMMITMENT_RANK, FINALIZED_DEPTH


def confirmation(landed_slot: int, current_slot: int) -> dict[str, Any]:
    """Return ``confirmations`` and ``confirmationStatus`` of a status at ``current_slot``."""
    depth = current_slot - landed_slot
    if depth >= FINALIZED_DEPTH:
        return {"confirmations": None, "confirmationStatus": "finalized"}
    return {
        "confirmations": depth,
        "confirmationStatus": "processed" if depth == 0 else "confirmed",
    }


def reached(landed_slot: int, current_slot: int, commitment: str) -> bool:
    """Whether a transaction of ``landed_slot`` has reached ``commitment`` by now."""
    status = confirmation(landed_slot, current_slot)["confirmationStatus"]
    return COMMITMENT_RANK[status] >= COMMITMENT_RANK[commitment]
