"""Publishing, planned without the network: addresses, what to create, what to write.

``plan_from_state`` makes the ``PublishPlan`` from a ``PublishState`` (what
``publish.read_state`` read from the chain) and the artifact alone.

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

from curta_chain import program
from curta_chain.artifact import Artifact
from curta_chain.chain.accounts import ZERO_KEY
from curta_chain.chain.features import TxVersion
from curta_chain.chain.keys import ClusterScope
from curta_chain.errors import AccountError
from curta_chain.program import ModelState


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


@dataclass(frozen=True)
class PublishState:
    """What the chain holds for one artifact and authority: all a plan is made from.

    ``read_state`` reads it; ``plan_from_state`` plans from it without the network.
    """

    scope: ClusterScope
    model_address: Pubkey
    derived_weights: tuple[Pubkey, ...]
    """Each section's derived weight account address (used where a slot is unbound)."""
    model: program.ModelAccount | None
    """The model at its derived address; None while nothing (or only lamports) is there."""
    sections: tuple[bytes | None, ...]
    """The chain's bytes of each section; None where nothing was read (a new account, or a
    model that takes no writes)."""
    frozen: tuple[int, ...]
    """A failed model's sections whose weight account is still frozen."""
    funding: tuple[NewAccount, ...]
    """The accounts a plan may create: each one's checked rent and the lamports it holds."""


def plan_from_state(
    state: PublishState,
    artifact: Artifact,
    authority: Pubkey,
    payload: int,
    tx_version: TxVersion = "legacy",
) -> PublishPlan:
    """Plan publishing ``artifact`` from what the chain holds; no network, fees left at 0.

    ``payload`` is the weight bytes one write carries (``Budget.write_payload``) in a
    ``tx_version`` transaction. The pieces are cut at ``payload`` whatever cut an earlier
    run made: what differs is found by comparing bytes, so a legacy run resumes as v1 and
    the other way round.

    Raises:
        AccountError: the model at the derived address is another authority's, declares
            another hash or other section lengths, or is being closed.
    """
    weights_hash = artifact.weights_hash()
    lengths = tuple(len(s) for s in artifact.sections)
    model, address = state.model, state.model_address
    if model is None:
        status, accounts, create = "new", state.derived_weights, tuple(range(len(lengths)))
        chain_sections: Sequence[bytes | None] = state.sections
    else:
        why = mismatch(address, model, authority, weights_hash, lengths)
        if why is not None:
            raise AccountError(why)
        if model.state == ModelState.CLOSING:
            raise AccountError(
                f"model {address} is being closed: finish `curta-chain close "
                f"{address}`, then publish again"
            )
        status = model.state.name.lower()
        accounts = tuple(
            slot.weight_account if slot.weight_account != ZERO_KEY else state.derived_weights[i]
            for i, slot in enumerate(model.sections)
        )
        create = tuple(i for i, s in enumerate(model.sections) if s.weight_account == ZERO_KEY)
        # Sealed is final, and a seal under way is left to finish (a failed one is reopened
        # by the next publish): neither takes writes.
        takes_writes = model.state in (ModelState.UPLOADING, ModelState.FAILED)
        chain_sections = state.sections if takes_writes else list(artifact.sections)
    writes = interleave(
        [
            differing_pieces(i, bytes(section), chain_sections[i], payload)
            for i, section in enumerate(artifact.sections)
        ]
    )
    created = ([address] if model is None else []) + [accounts[i] for i in create]
    funding = {account.address: account for account in state.funding}
    return PublishPlan(
        model=address,
        weights_hash=weights_hash,
        scope=state.scope,
        section_lengths=lengths,
        weight_accounts=accounts,
        state=status,
        create_model=model is None,
        reopen_sections=state.frozen
        if model is not None and model.state == ModelState.FAILED
        else (),
        create_sections=create,
        writes=tuple(writes),
        payload_per_write=payload,
        new_accounts=tuple(funding[a] for a in created),
        fee_lamports=0,
        tx_version=tx_version,
    )


def mismatch(
    address: Pubkey,
    model: program.ModelAccount,
    authority: Pubkey,
    weights_hash: bytes,
    lengths: tuple[int, ...],
) -> str | None:
    """Why the model at ``address`` is not this artifact's under ``authority`` (None: it is)."""
    if model.authority != authority:
        return f"model {address} belongs to {model.authority}, not to {authority}"
    if model.declared_hash != weights_hash:
        return (
            f"model {address} declares hash {model.declared_hash.hex()}, the artifact's is "
            f"{weights_hash.hex()}"
        )
    chain_lengths = tuple(slot.length for slot in model.sections)
    if chain_lengths != lengths:
        return (
            f"model {address} has section lengths {list(chain_lengths)}, "
            f"the artifact {list(lengths)}"
        )
    return None
