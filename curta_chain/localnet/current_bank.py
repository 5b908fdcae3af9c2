"""LiteSVM as the bank the localnet serves: its sysvars, its reads, its owner index.

LiteSVM holds only the newest state, which is what "processed" reads; ``BankHistory``
keeps what the older commitment levels see, and this module picks between them. LiteSVM
copies an account's whole data on every read, so reads between two writes share one copy:
whatever writes to the ``svm`` calls ``_forget_reads`` after. The owner index
(``OwnerIndex``) answers getProgramAccounts without reading every account.
"""

import ctypes
import struct
from collections.abc import Iterable
from functools import cache

from solders.account import Account
from solders.clock import Clock
from solders.hash import Hash
from solders.litesvm import LiteSVM
from solders.pubkey import Pubkey
from solders.system_program import ID as SYSTEM_PROGRAM_ID

from curta_chain.localnet.bank_history import AccountState, BankHistory
from curta_chain.localnet.clock import SLOTS_PER_EPOCH, SlotClock
from curta_chain.localnet.features import ACTIVE_FEATURE, ALL_ACTIVE, Features
from curta_chain.localnet.loaded_data import AccountShape, account_shape
from curta_chain.localnet.owner_index import OwnerIndex
from curta_chain.localnet.parsed import CLOCK_SYSVAR, SYSVAR_OWNER

MAX_SLOT_HASHES = 512
"""Entries in the SlotHashes sysvar."""
READ_CACHE_BYTES = 64 * 1024 * 1024
"""Account data kept between writes, so slices of one 10 MiB account cost one copy."""


BUILTIN_ACCOUNT_NAMES: dict[Pubkey, bytes] = {
    SYSTEM_PROGRAM_ID: b"solana_system_program",
    Pubkey.from_string("Vote111111111111111111111111111111111111111"): b"solana_vote_program",
    Pubkey.from_string("BPFLoader1111111111111111111111111111111111"): b"solana_bpf_loader_program",
}
"""The builtins whose account LiteSVM names otherwise than agave 4.2's genesis (a builtin's
account data is its name): a transaction that names one loads those bytes (SIMD-0186)."""
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
"""mallopt's parameter numbers (glibc's malloc.h)."""


@cache
def reuse_freed_memory() -> None:
    """Make glibc's malloc keep big blocks it frees, for the next transaction to reuse.

    LiteSVM copies every account a transaction loads, several times; a 10 MiB weight account
    is above malloc's mmap threshold, so each copy mapped fresh pages and faulted on every
    one of them: a write into one cost 10 ms of CPU, 2-4 ms with the blocks kept (Agave
    links jemalloc, which keeps them too). Nothing is done where the C library is not glibc.
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return
    libc.mallopt(_M_MMAP_THRESHOLD, 32 << 20)  # glibc's largest: above any account
    libc.mallopt(_M_TRIM_THRESHOLD, 512 << 20)


def new_svm(features: Features = ALL_ACTIVE) -> LiteSVM:
    """LiteSVM as ``LiteSVM()`` makes it, with ``features`` and their accounts.

    The features active but those deactivated, the builtins, precompiles, sysvars and SPL
    programs, and a feature account for each active feature, as a validator's genesis has
    (builtin accounts named as agave names them, ``BUILTIN_ACCOUNT_NAMES``).
    The process's malloc keeps what it frees (``reuse_freed_memory``).
    """
    reuse_freed_memory()
    svm = LiteSVM.default().with_feature_set(features.runtime()).with_builtins().with_sysvars()
    # What ``LiteSVM()`` adds next; solders' wrapper has no ``with_`` method for it.
    svm._inner.set_precompiles()
    for key, name in BUILTIN_ACCOUNT_NAMES.items():
        builtin = svm.get_account(key)
        if builtin is not None:
            svm.set_account(
                key,
                Account(
                    builtin.lamports, name, builtin.owner, builtin.executable, builtin.rent_epoch
                ),
            )
    # The LiteSVM of solders 0.29 starts at slot 435,888,000; the localnet's genesis is slot
    # 0, which the preloaded program's ProgramData records as its deployment slot.
    svm.set_clock(
        Clock(slot=0, epoch_start_timestamp=0, epoch=0, leader_schedule_epoch=1, unix_timestamp=0)
    )
    lamports = max(svm.minimum_balance_for_rent_exemption(len(ACTIVE_FEATURE)), 1)
    for key, account in features.accounts(lamports):
        svm.set_account(key, account)
    return svm.with_default_programs()


def _state(account: Account | None) -> AccountState | None:
    if account is None or account.lamports == 0:
        return None
    return AccountState(
        account.lamports, account.owner, account.executable, account.rent_epoch, account.data
    )


def less_lamports(account: Account, charge: int) -> Account:
    """``account`` less ``charge`` lamports."""
    lamports = account.lamports - charge
    return Account(lamports, account.data, account.owner, account.executable, account.rent_epoch)


class CurrentBank:
    """The chain's accounts and sysvars now and at each commitment level.

    Args:
        svm: the LiteSVM the chain runs in.
    """

    clock: SlotClock
    """Slots and blockhashes; ``Localnet`` sets it, from its ledger or a new genesis."""

    def __init__(self, svm: LiteSVM):
        self.svm = svm
        self.banks = BankHistory(self._read_state)
        self._read_cache: dict[Pubkey, Account | None] = {}
        self._read_cache_bytes = 0
        self._owners = OwnerIndex()
        self._slot_hashes: list[tuple[int, Hash]] = []
        self._hashed_upto = -1
        self._clock_slot = -1
        self._rent_exempt: dict[int, int] = {}
        self._shapes: dict[Pubkey, tuple[int, AccountShape | None]] = {}
        """Address -> (lamports, shape) when last read (``loaded_shape``)."""

    # -- sysvars ----------------------------------------------------------------------

    def set_slot(self, slot: int) -> None:
        """Set LiteSVM's Clock and SlotHashes sysvars for ``slot``."""
        epoch = slot // SLOTS_PER_EPOCH
        self.svm.set_clock(
            Clock(
                slot=slot,
                epoch_start_timestamp=self.clock.unix_timestamp(epoch * SLOTS_PER_EPOCH),
                epoch=epoch,
                leader_schedule_epoch=epoch + 1,
                unix_timestamp=self.clock.unix_timestamp(slot),
            )
        )
        self._clock_slot = slot
        # SlotHashes lists the slots before this one, newest first, as a validator's does;
        # address lookup tables are created against it.
        first = max(self._hashed_upto + 1, slot - MAX_SLOT_HASHES)
        if first < slot:
            new = [(n, Hash(self.clock.blockhash_bytes(n))) for n in range(slot - 1, first - 1, -1)]
            self._slot_hashes = (new + self._slot_hashes)[:MAX_SLOT_HASHES]
            self._hashed_upto = slot - 1
            self.svm.set_slot_hashes(self._slot_hashes)

    def clock_state(self, slot: int) -> AccountState:
        """Return the Clock sysvar as the bank of ``slot`` held it."""
        epoch = slot // SLOTS_PER_EPOCH
        data = struct.pack(
            "<QqQQq",
            slot,
            self.clock.unix_timestamp(epoch * SLOTS_PER_EPOCH),
            epoch,
            epoch + 1,
            self.clock.unix_timestamp(slot),
        )
        return AccountState(self.rent_exempt_minimum(len(data)), SYSVAR_OWNER, False, 0, data)

    # -- reads ------------------------------------------------------------------------

    def get_account(self, pubkey: Pubkey) -> Account | None:
        """Return the account at ``pubkey`` now (processed); None if it has no lamports.

        LiteSVM copies an account's whole data on every read; reads between two writes
        share one copy (a client reading a 10 MiB account in 1 MiB slices, say).
        """
        if pubkey in self._read_cache:
            return self._read_cache[pubkey]
        account = self.svm.get_account(pubkey)
        if account is None or account.lamports == 0:
            account = None
        elif account.owner == SYSVAR_OWNER:
            # LiteSVM funds sysvars with 1 lamport; a validator keeps them rent-exempt.
            size = len(account.data)
            account = Account(
                max(account.lamports, self.rent_exempt_minimum(size)),
                account.data,
                account.owner,
                account.executable,
                account.rent_epoch,
            )
        size = len(account.data) if account is not None else 0
        if self._read_cache_bytes + size > READ_CACHE_BYTES:
            self._read_cache.clear()
            self._read_cache_bytes = 0
        self._read_cache[pubkey] = account
        self._read_cache_bytes += size
        return account

    def loaded_shape(self, pubkey: Pubkey) -> AccountShape | None:
        """Return what loading the account at ``pubkey`` counts now (``loaded_data``).

        Reading an account copies its data (10 MiB for a weight account), so each shape is
        kept and read again only once the account's balance changes: an account changes
        size by being created, closed or reallocated, and a program that grows an account
        pays its rent. (One shrunk, or grown on lamports it held already, keeps its old
        size here until its balance changes.)
        """
        lamports = self.svm.get_balance(pubkey) or 0
        if not lamports:
            return None
        kept = self._shapes.get(pubkey)
        if kept is not None and kept[0] == lamports:
            return kept[1]
        shape = account_shape(self.get_account(pubkey))
        self._shapes[pubkey] = (lamports, shape)
        return shape

    def _read_state(self, pubkey: Pubkey) -> AccountState | None:
        return _state(self.svm.get_account(pubkey))

    def account_at(self, pubkey: Pubkey, slot: int) -> Account | AccountState | None:
        """Return the account at the end of ``slot`` (``commitment_slot``'s answer)."""
        if slot < self._clock_slot:
            if pubkey == CLOCK_SYSVAR:
                return self.clock_state(slot)
            state = self.banks.view(pubkey, slot)
            if state is not BankHistory.LIVE:
                return state  # type: ignore[return-value]
        return self.get_account(pubkey)

    def balance_at(self, pubkey: Pubkey, slot: int) -> int:
        """Return the lamports of ``pubkey`` at the end of ``slot`` (0 if absent)."""
        if slot >= self._clock_slot or self.banks.view(pubkey, slot) is BankHistory.LIVE:
            return self.svm.get_balance(pubkey) or 0
        account = self.account_at(pubkey, slot)
        return account.lamports if account is not None else 0

    def program_accounts(
        self, owner: Pubkey, slot: int
    ) -> list[tuple[Pubkey, Account | AccountState]]:
        """Return every account ``owner`` owns at the end of ``slot``, ordered by address."""
        candidates = set(self._owners.owned_by(owner))
        if slot < self._clock_slot:
            candidates.update(self.banks.keys())
        found = []
        for pubkey in sorted(candidates, key=bytes):
            account = self.account_at(pubkey, slot)
            if account is not None and account.owner == owner:
                found.append((pubkey, account))
        return found

    def balances(self, slot: int) -> list[tuple[Pubkey, int]]:
        """Return (address, lamports) of every account with lamports at the end of ``slot``."""
        keys = set(self._owners) | set(self.banks.keys())
        found = [(key, self.balance_at(key, slot)) for key in keys]
        return [(key, lamports) for key, lamports in found if lamports]

    def rent_exempt_minimum(self, size: int) -> int:
        """Return the lamports that make an account of ``size`` bytes rent-exempt."""
        if size not in self._rent_exempt:
            self._rent_exempt[size] = self.svm.minimum_balance_for_rent_exemption(size)
        return self._rent_exempt[size]

    # -- after writes -----------------------------------------------------------------

    def _forget_reads(self) -> None:
        if self._read_cache:
            self._read_cache.clear()
            self._read_cache_bytes = 0

    def _track(self, keys: Iterable[Pubkey]) -> None:
        """Update the owner index for accounts a transaction may have changed.

        Reading an account copies its data, so a program-owned account already indexed
        (a 10 MiB weight account written 1 KB at a time) is only checked for having been
        closed; wallets and accounts seen for the first time are read in full, which is
        where owners change (create_account, assign).
        """
        for key in keys:
            known = self._owners.owner(key)
            if known is not None and known != SYSTEM_PROGRAM_ID:
                if not self.svm.get_balance(key):
                    self._owners.forget(key)
                continue
            account = self.get_account(key)
            if account is None:
                self._owners.forget(key)
            elif account.owner != known:
                self._owners.record(key, account.owner)

    def track_restored(self, pubkey: Pubkey, owner: Pubkey) -> None:
        """Index an account a snapshot restored."""
        self._owners.record(pubkey, owner)
