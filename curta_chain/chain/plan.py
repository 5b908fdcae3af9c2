"""Publishing, planned without the network: addresses, what to create, what to write.

Everything here is a pure function of the artifact, the authority's keypair and what the
chain already holds, so a plan can be built, printed and tested before anything is spent.

Addresses are derived, not stored: the model's keypair is
``sha256("curta-chain/model" || authority secret || weights hash)`` and weight account
``i``'s is the same with ``"curta-chain/weight"`` and ``i`` (u32 LE). Rerunning ``publish``
with the same artifact and keypair therefore finds the same model from the chain alone,
and nobody without the authority's secret can claim those addresses first.
"""

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from solders.keypair import Keypair
from solders.pubkey import Pubkey


def derived_keypair(authority: Keypair, weights_hash: bytes, role: str, index: int = 0) -> Keypair:
    """Return the keypair of a model (``role="model"``) or of weight account ``index``."""
    seed = hashlib.sha256(
        f"curta-chain/{role}".encode()
        + authority.secret()
        + weights_hash
        + index.to_bytes(4, "little")
    ).digest()
    return Keypair.from_seed(seed)


def model_keypair(authority: Keypair, weights_hash: bytes) -> Keypair:
    """The model account's keypair for this authority and artifact."""
    return derived_keypair(authority, weights_hash, "model")


def weight_keypair(authority: Keypair, weights_hash: bytes, section: int) -> Keypair:
    """Weight account ``section``'s keypair for this authority and artifact."""
    return derived_keypair(authority, weights_hash, "weight", section)


@dataclass(frozen=True)
class WritePiece:
    """``length`` bytes of section ``section`` from ``offset``: one write transaction."""

    section: int
    offset: int
    length: int


def differing_pieces(
    section: int, local: bytes, chain: bytes | None, payload: int
) -> list[WritePiece]:
    """Split ``local`` into ``payload``-byte pieces and keep those the chain does not hold.

    ``chain`` is the account's current section bytes, or None for a new account, which
    the runtime fills with zeros (so all-zero pieces need no write).
    """
    length = len(local)
    count = -(-length // payload)
    padded = count * payload
    ours = np.zeros(padded, dtype=np.uint8)
    ours[:length] = np.frombuffer(local, dtype=np.uint8)
    theirs = np.zeros(padded, dtype=np.uint8)
    if chain is not None:
        theirs[:length] = np.frombuffer(chain, dtype=np.uint8)
    differs = (ours != theirs).reshape(count, payload).any(axis=1)
    return [
        WritePiece(section, int(i) * payload, min(payload, length - int(i) * payload))
        for i in np.flatnonzero(differs)
    ]


def interleave(groups: Sequence[Sequence[WritePiece]]) -> list[WritePiece]:
    """Round-robin the pieces of each section, so consecutive writes hit different accounts.

    A cluster's scheduler limits how much one block may write to one account; spreading
    the writes keeps every account's budget in use.
    """
    out: list[WritePiece] = []
    longest = max((len(g) for g in groups), default=0)
    for i in range(longest):
        out.extend(group[i] for group in groups if i < len(group))
    return out


@dataclass(frozen=True)
class PublishPlan:
    """What ``publish`` will do, and what it will cost, before anything is sent."""

    model: Pubkey
    weights_hash: bytes
    section_lengths: tuple[int, ...]
    weight_accounts: tuple[Pubkey, ...]
    state: str
    """The model's state now: "new" when it does not exist yet, else its on-chain state."""
    create_model: bool
    reopen_sections: tuple[int, ...]
    """A failed model's sections still frozen: each is reopened by its own transaction."""
    create_sections: tuple[int, ...]
    writes: tuple[WritePiece, ...]
    payload_per_write: int
    rent_lamports: int
    fee_lamports: int

    @property
    def write_bytes(self) -> int:
        """Weight bytes the writes carry."""
        return sum(piece.length for piece in self.writes)

    @property
    def reopen(self) -> bool:
        """Whether publish reopens a failed model before writing."""
        return bool(self.reopen_sections)

    @property
    def transactions(self) -> int:
        """Transactions publish sends: model, one per reopened or created account, writes."""
        return (
            int(self.create_model)
            + len(self.reopen_sections)
            + len(self.create_sections)
            + len(self.writes)
        )

    @property
    def cost_lamports(self) -> int:
        """Rent plus fees."""
        return self.rent_lamports + self.fee_lamports

    def to_json(self) -> dict[str, object]:
        """The plan as JSON values."""
        return {
            "model": str(self.model),
            "weights_hash": self.weights_hash.hex(),
            "state": self.state,
            "section_lengths": list(self.section_lengths),
            "weight_accounts": [str(k) for k in self.weight_accounts],
            "create_model": self.create_model,
            "reopen": self.reopen,
            "reopen_sections": list(self.reopen_sections),
            "create_sections": list(self.create_sections),
            "write_transactions": len(self.writes),
            "write_bytes": self.write_bytes,
            "payload_per_write": self.payload_per_write,
            "transactions": self.transactions,
            "rent_lamports": self.rent_lamports,
            "fee_lamports": self.fee_lamports,
        }
