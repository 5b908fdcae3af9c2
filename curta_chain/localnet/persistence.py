"""Between the chain and its ledger folder: restore at start-up, capture snapshots.

Start-up loads the newest snapshot into LiteSVM (accounts, the owner index, statuses) and
replays the log records written after it at the slots they first landed in. A snapshot
captures every indexed account and every status; the server writes it (``Ledger``'s
``write_snapshot``) once the segment it closes is durable.
"""

import json
from typing import Protocol

from solders.account import Account
from solders.litesvm import LiteSVM
from solders.pubkey import Pubkey

from curta_chain.errors import LocalnetError
from curta_chain.localnet.clock import SlotClock
from curta_chain.localnet.ledger import RECORD_TRANSACTION, Ledger, Snapshot, SnapshotAccount
from curta_chain.localnet.tx_history import TransactionHistory


class Persisted(Protocol):
    """What restoring and snapshotting read and write of a chain (``Localnet`` has it all).

    A protocol rather than ``Localnet`` itself, so that this module, which ``Localnet``
    calls at start-up, does not import it back.
    """

    @property
    def svm(self) -> LiteSVM:
        """The LiteSVM the chain's accounts live in."""

    @property
    def history(self) -> TransactionHistory:
        """The statuses a snapshot saves and a restore puts back."""

    @property
    def clock(self) -> SlotClock:
        """The slot clock, held at or after the last restored slot."""

    @property
    def ledger(self) -> Ledger | None:
        """The ledger folder a snapshot rotates, if any."""

    def track_restored(self, pubkey: Pubkey, owner: Pubkey) -> None:
        """Index an account put back from a snapshot."""

    def replay(self, raw: bytes, slot: int) -> None:
        """Apply a transaction from the log at the slot it first landed in."""

    def tick(self) -> int:
        """Bring the chain to the current slot; return it."""

    def indexed_accounts(self) -> list[Pubkey]:
        """Return the accounts a snapshot saves."""


def restore(localnet: Persisted, ledger: Ledger) -> None:
    """Load the newest snapshot of ``ledger`` and replay the log after it into ``localnet``.

    Raises:
        LocalnetError: a snapshot or log record is damaged or of an unknown kind.
    """
    snapshot = ledger.load_snapshot()
    after = 0
    last_slot = 0
    if snapshot is not None:
        after, last_slot = snapshot.segment, snapshot.last_slot
        # An upgradeable program loads from its program data when it is set: data first.
        for item in sorted(snapshot.accounts, key=lambda a: a.executable):
            pubkey = Pubkey.from_bytes(item.pubkey)
            owner = Pubkey.from_bytes(item.owner)
            account = Account(item.lamports, item.data, owner, item.executable, item.rent_epoch)
            localnet.svm.set_account(pubkey, account)
            localnet.track_restored(pubkey, owner)
        for sig, (slot, err) in snapshot.statuses.items():
            localnet.history.restore_status(sig, slot, json.loads(err) if err is not None else None)
    for kind, slot, payload in ledger.replay(after):
        if kind != RECORD_TRANSACTION:
            raise LocalnetError(f"{ledger.folder}: unknown log record kind {kind}")
        localnet.replay(payload, slot)
        last_slot = max(last_slot, slot)
    # Slots keep counting from where the chain was, even if the wall clock says less.
    localnet.clock.hold_at_least(last_slot + 1)


def begin_snapshot(localnet: Persisted) -> Snapshot:
    """Close the current log segment and capture the state it ends with.

    The caller writes the snapshot (``ledger.write_snapshot``) once every record of the
    closed segment is durable, possibly off the loop thread.

    Raises:
        LocalnetError: the localnet has no ledger.
    """
    ledger = localnet.ledger
    if ledger is None:
        raise LocalnetError("this localnet has no ledger to snapshot")
    # Ticking first: a block it produces belongs to the closed segment and to this state.
    last_slot = localnet.tick()
    segment = ledger.rotate()
    accounts = []
    for pubkey in localnet.indexed_accounts():
        account = localnet.svm.get_account(pubkey)
        if account is not None and account.lamports:
            accounts.append(
                SnapshotAccount(
                    bytes(pubkey),
                    account.lamports,
                    bytes(account.owner),
                    account.executable,
                    account.rent_epoch,
                    account.data,
                )
            )
    statuses = {
        sig: (slot, json.dumps(err) if err is not None else None)
        for sig, (slot, err, _) in localnet.history.statuses.items()
    }
    return Snapshot(segment, last_slot, accounts, statuses)
