"""Publishing, planned without the network: addresses, what to create, what to write.

Everything here is a pure function of the artifact, the authority's keypair and what the
chain already holds, so a plan can be built, printed and tested before anything is sent.

Addresses are derived (``keys.py``): rerunning ``publish`` with the same artifact and
keypair finds the same model from the chain alone. Someone who sends lamports to an
address once it is known cannot block it: an address that holds lamports and no data is
allocated and assigned with its own signature (``specs.new_account``).
"""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from solders.pubkey import Pubkey

from curta_chain.chain.features import TxVersion
from curta_chain.chain.keys import ClusterScope


@dataclass(frozen=True)
class NewAccount:
    """An account to create: its size, its rent, and the lamports it already holds.

    ``existing`` is non-zero when someone sent lamports to the address before it was
    created: it is then allocated and assigned with its own signature (``create_account``
    would fail on it) and topped up by ``transfer`` lamports.
    """

    address: Pubkey
    size: int
    rent: int
    existing: int = 0

    @property
    def transfer(self) -> int:
        """What the payer sends: what the rent needs beyond what the address holds."""
        return max(0, self.rent - self.existing)

    def to_json(self) -> dict[str, object]:
        """The account as JSON values."""
        return {
            "address": str(self.address),
            "size": self.size,
            "rent": self.rent,
            "existing_lamports": self.existing,
        }


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
    scope: ClusterScope
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
    new_accounts: tuple[NewAccount, ...]
    """The model (first, when created) and each created weight account, in that order."""
    fee_lamports: int
    tx_version: TxVersion = "legacy"
    """The writes' format: "v1" (up to 4,096 bytes) where the cluster takes it, else "legacy"."""

    @property
    def rent_lamports(self) -> int:
        """Lamports the payer puts into new accounts."""
        return sum(account.transfer for account in self.new_accounts)

    @property
    def prefunded(self) -> tuple[NewAccount, ...]:
        """New accounts whose address already holds lamports (someone sent them)."""
        return tuple(account for account in self.new_accounts if account.existing)

    def new_account(self, address: Pubkey) -> NewAccount:
        """The planned creation of ``address``."""
        return next(account for account in self.new_accounts if account.address == address)

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
            "transaction_version": self.tx_version,
            "transactions": self.transactions,
            "rent_lamports": self.rent_lamports,
            "fee_lamports": self.fee_lamports,
            "new_accounts": [account.to_json() for account in self.new_accounts],
        }
