"""The localnet's chain model: LiteSVM plus the bookkeeping a validator does and LiteSVM does not.

``Localnet`` owns one ``LiteSVM`` and adds: slots and blockhashes that advance with a clock
(``SlotClock``), the 150-block blockhash window, fees, the faucet, and the views each
commitment level reads (``BankHistory``), the transaction history (``TransactionHistory``)
and an index of accounts by owner. It is built in layers, each a module: the current bank
(``current_bank``: sysvars, reads, the owner index), execution and its results
(``execution``), simulation (``simulation``), the busy mode's sending and blocks
(``block_production``), and here what ties them to time: the slot clock, the faucet,
sending. Persistence (ledger replay and snapshots) is in ``persistence``; what a send
returns is in ``outcomes``.

LiteSVM is not thread-safe; a ``Localnet`` must be used from one thread (the server's
event loop).
"""

import hashlib
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from solders.account import Account
from solders.clock import MAX_PROCESSING_AGE
from solders.compute_budget import set_compute_unit_limit
from solders.epoch_schedule import EpochSchedule
from solders.hash import Hash
from solders.instruction import Instruction
from solders.keypair import Keypair
from solders.litesvm import LiteSVM
from solders.message import Message
from solders.pubkey import Pubkey
from solders.system_program import ID as SYSTEM_PROGRAM_ID
from solders.system_program import TransferParams, transfer
from solders.transaction import VersionedTransaction

from curta_chain.constants import (
    FINALIZED_DEPTH,
    LAMPORTS_PER_SOL,
    LOCALNET_PROGRAM_ID,
    MAX_COMPUTE_UNITS,
)
from curta_chain.errors import LocalnetError
from curta_chain.localnet.block_production import BlockProduction
from curta_chain.localnet.busy import NOT_BUSY, BusyOptions
from curta_chain.localnet.clock import SLOT_SECONDS, SlotClock
from curta_chain.localnet.current_bank import new_svm
from curta_chain.localnet.features import BEFORE_AGAVE_4, Features
from curta_chain.localnet.ledger import Ledger
from curta_chain.localnet.outcomes import Refused, SendOutcome
from curta_chain.localnet.parsed import GENESIS_ACCOUNTS
from curta_chain.localnet.persistence import restore
from curta_chain.localnet.programs import program_data
from curta_chain.program.builds import find_program_binary
from curta_chain.protocol.compute_budget import (
    LAMPORTS_PER_SIGNATURE,
    priority_fee,
    transaction_fee,
)
from curta_chain.protocol.loader import LOADER_V3, programdata_address

FAUCET_SEED = b"curta-chain localnet faucet"
IDENTITY_SEED = b"curta-chain localnet identity"
VOTE_SEED = b"curta-chain localnet vote account"
FAUCET_LAMPORTS = 500_000_000 * LAMPORTS_PER_SOL
DEFAULT_SNAPSHOT_BYTES = 16 * 1024 * 1024
"""Log bytes after which a snapshot is taken: bounds a restart's replay to about 13,000
writes, some 10 s when every write goes to a 10 MiB account (LiteSVM copies it)."""


STAKE_PROGRAM = Pubkey.from_string("Stake11111111111111111111111111111111111111")
_GET_MINIMUM_DELEGATION = (13).to_bytes(4, "little")


class Localnet(BlockProduction):
    """A Solana chain in-process: LiteSVM with the curta program preloaded and a faucet.

    Args:
        ledger: a folder to persist the chain in (None: memory only).
        reset: start a new chain in ``ledger``, deleting the old one.
        slot_duration: seconds per slot (a validator's 0.4 s by default).
        program_binary: the program to preload at ``LOCALNET_PROGRAM_ID``; by default
            the packaged ``curta.so`` when there is one.
        snapshot_bytes: log bytes after which ``snapshot_due`` turns true.
        now: the time source slots are counted from (``time.time``; tests pass a
            ``ManualClock``).
        busy: the busy-cluster behaviours (``busy``; none by default).
        deactivate_features: feature ids to deactivate at genesis, as
            ``solana-test-validator --deactivate-feature`` takes them; an existing ledger
            keeps the set it was started with.
        genesis_seed: the 32 bytes a memory-only chain's genesis hash and blockhashes come
            from (random by default; a ledger keeps its own). Two chains given one derive the
            same addresses for one authority, so tests compare them account for account.

    Raises:
        LocalnetError: the ledger cannot be opened or replayed, or the program not loaded.
    """

    def __init__(
        self,
        ledger: Path | None = None,
        reset: bool = False,
        slot_duration: float = SLOT_SECONDS,
        program_binary: Path | None = None,
        snapshot_bytes: int = DEFAULT_SNAPSHOT_BYTES,
        now: Callable[[], float] = time.time,
        busy: BusyOptions = NOT_BUSY,
        deactivate_features: Iterable[Pubkey] = (),
        genesis_seed: bytes | None = None,
    ):
        binary = program_binary if program_binary is not None else find_program_binary()
        program = binary.read_bytes() if binary is not None else None
        self.program_binary = binary
        self.program_id = Pubkey.from_string(LOCALNET_PROGRAM_ID)
        self.faucet = Keypair.from_seed(hashlib.sha256(FAUCET_SEED).digest())
        self.identity = Keypair.from_seed(hashlib.sha256(IDENTITY_SEED).digest()).pubkey()
        self.vote_account = Keypair.from_seed(hashlib.sha256(VOTE_SEED).digest()).pubkey()
        self.snapshot_bytes = snapshot_bytes
        features, self.unknown_features = Features.at_genesis(deactivate_features)
        """``unknown_features``: the ids asked off that no feature has (ignored)."""
        self.deactivation_ignored = False
        """Whether features were asked off on an existing ledger, whose genesis holds."""

        # Slot 0 is the genesis bank, rooted from the start: a new chain starts at slot 1.
        def genesis_time() -> float:
            return now() - slot_duration

        opened: Ledger | None = None
        if ledger is not None:
            sha = hashlib.sha256(program).hexdigest() if program is not None else None
            asked = tuple(sorted(str(key) for key in features.deactivated))
            opened = Ledger(
                ledger,
                reset=reset,
                program_sha256=sha,
                now=genesis_time,
                deactivated_features=asked,
            )
            stored = opened.meta.deactivated_features
            if not opened.created:
                kept = BEFORE_AGAVE_4 if stored is None else map(Pubkey.from_string, stored)
                self.deactivation_ignored = bool(features.deactivated or self.unknown_features)
                features = Features(frozenset(kept))
        self.features = features
        try:
            super().__init__(self._new_svm(program), busy)
        except BaseException:
            if opened is not None:
                opened.close()
            raise
        self.ledger = opened
        self.svm.set_account(
            self.faucet.pubkey(), Account(FAUCET_LAMPORTS, b"", SYSTEM_PROGRAM_ID, False, 0)
        )
        self.endpoints: tuple[str | None, str | None] = (None, None)
        """host:port of the JSON-RPC and PubSub servers, once they listen."""
        self._stake_minimum: int | None = None
        preloaded = [self.program_id, programdata_address(self.program_id)]
        self._genesis = frozenset([*GENESIS_ACCOUNTS, *preloaded, *features.active])
        self._track([*self._genesis, self.faucet.pubkey()])

        if self.ledger is None:
            seed = genesis_seed or hashlib.sha256(Keypair().secret()).digest()
            self.clock = SlotClock(seed, genesis_time(), slot_duration, now)
        else:
            meta = self.ledger.meta
            seed = meta.genesis_hash
            self.clock = SlotClock(meta.genesis_hash, meta.genesis_time, slot_duration, now)
            try:
                restore(self, self.ledger)
            except BaseException:
                self.ledger.close()
                raise
        # Each chain's own, random, and kept by its ledger across restarts: what the user's
        # record of the localnets they started names (``curta_chain.user_data``), so that no
        # other process can pass for one of them. It also seeds every blockhash.
        self.genesis_hash = str(Hash(seed))
        self._observed = True  # replayed transactions are history, not news
        self.banks.clear()  # what was restored reads the same at every level
        self.tick()

    def _new_svm(self, program: bytes | None) -> LiteSVM:
        """Return LiteSVM with the runtime settings of this chain and the program loaded."""
        # Signatures are checked in send_transaction; LiteSVM's own blockhash check only
        # knows its latest hash, so the 150-block window is enforced here instead.
        svm = new_svm(self.features).with_sigverify(False).with_blockhash_check(False)
        svm.with_transaction_history(0)
        # solana-test-validator's genesis: 432,000-slot epochs from slot 0, no warmup.
        svm.set_epoch_schedule(EpochSchedule.without_warmup())
        if program is not None:
            try:
                svm.add_program(self.program_id, program)
            except Exception as exc:  # LiteSVM raises its own error types for a bad ELF
                raise LocalnetError(
                    f"{self.program_binary}: LiteSVM cannot load the program: {exc}"
                ) from exc
            # As solana-test-validator (agave 4.2) loads --bpf-program: upgradeable (v3), a
            # 36-byte program account and its program data, deployed at slot 0 with the
            # default address as upgrade authority (LiteSVM writes its own slot and none).
            data = program_data(0, Pubkey.default(), program)
            lamports = svm.minimum_balance_for_rent_exemption(len(data))
            svm.set_account(
                programdata_address(self.program_id),
                Account(lamports, data, LOADER_V3, False, 0),
            )
        return svm

    # -- time -------------------------------------------------------------------------

    def tick(self) -> int:
        """Bring LiteSVM's clock and the commitment views to the current slot; return it."""
        slot = self.clock.current_slot()
        if slot != self._clock_slot:
            if self.leader is not None and self.leader.queue:
                self._produce(slot)
            self.set_slot(slot)
            self.banks.advance(slot)
        return slot

    def commitment_slot(self, commitment: str) -> int:
        """Return the slot whose end the bank of ``commitment`` shows.

        processed: the current slot; confirmed: the one before (a single node votes a
        slot as soon as it is over); finalized: 32 slots before the current one.
        """
        slot = self.tick()
        if commitment == "processed":
            return slot
        if commitment == "confirmed":
            return max(slot - 1, 0)
        return max(slot - FINALIZED_DEPTH, 0)

    def stake_minimum_delegation(self) -> int:
        """Return the stake program's minimum delegation (asked of the program itself)."""
        if self._stake_minimum is None:
            instruction = Instruction(STAKE_PROGRAM, _GET_MINIMUM_DELEGATION, [])
            blockhash = Hash.from_string(self.clock.blockhash(self.tick()))
            message = Message.new_with_blockhash([instruction], self.faucet.pubkey(), blockhash)
            result = self.svm.simulate_transaction(VersionedTransaction(message, [self.faucet]))
            meta = result.meta()
            data = meta.return_data().data
            self._stake_minimum = int.from_bytes(bytes(data), "little")
        return self._stake_minimum

    # -- writes -----------------------------------------------------------------------

    def send_transaction(
        self, raw: bytes, tx: VersionedTransaction, preflight_slot: int | None
    ) -> SendOutcome:
        """Process a transaction as a validator's sendTransaction would.

        With a preflight (``preflight_slot``: the slot of the bank of its commitment,
        ``commitment_slot``), a transaction that would fail is ``Refused`` and changes
        nothing; its blockhash must be known to that bank, but its state is simulated in
        the newest one. Without a preflight (None), one that fails at execution lands with
        its error and pays its fee; one that could never land (bad signature, unknown
        blockhash) is refused. In the busy mode (``busy``), one accepted is ``Queued``:
        lost at the drop rate, else left to the leader's next blocks (or, without blocks,
        run at once).
        """
        if not self.busy.changes_sending:
            return self._send_now(raw, tx, preflight_slot)
        return self._accept(self.tick(), raw, tx, preflight_slot)

    def _send_now(
        self, raw: bytes, tx: VersionedTransaction, preflight_slot: int | None
    ) -> SendOutcome:
        slot = self.tick()
        signature = str(tx.signatures[0])
        # solders copies the message on each access: once is enough.
        message = tx.message
        accounts = self._accounts_of(message)
        payer_before = self.svm.get_account(accounts.keys[0])
        priority = priority_fee(message)
        fee = transaction_fee(message, priority)
        refusal = self._refusal_before_execution(
            tx, message, signature, accounts, payer_before, fee, preflight_slot
        )
        if refusal is not None:
            return refusal
        preflight = preflight_slot is not None
        return self._run(raw, tx, message, accounts, payer_before, priority, slot, preflight)

    def indexed_accounts(self) -> list[Pubkey]:
        """Return the accounts a snapshot saves.

        Every indexed account but the genesis programs and sysvars, which every start
        creates anew.
        """
        return [key for key in self._owners if key not in self._genesis]

    def airdrop(self, pubkey: Pubkey, lamports: int) -> SendOutcome:
        """Send ``lamports`` from the faucet to ``pubkey`` in a real transfer transaction.

        Two equal requests in one slot would sign the same transaction: the faucet then
        signs with an older (still valid) blockhash, and past those adds a compute-unit
        limit that changes nothing but the signature, so every request lands. As agave's
        RPC sends the faucet's transaction, it goes without a preflight: a transfer the
        runtime refuses (less than a new account's rent-exempt minimum) lands failed,
        ``InsufficientFundsForRent``, its fee paid by the faucet. Only a faucet that cannot
        pay at all is ``Refused`` (agave's faucet refuses a request over its caps).
        """
        slot = self.tick()
        payer = self.faucet.pubkey()
        held = self.svm.get_account(payer)
        if held is None or held.lamports < lamports + LAMPORTS_PER_SIGNATURE:
            return Refused("", "InsufficientFundsForFee", [], 0)
        instruction = transfer(
            TransferParams(from_pubkey=payer, to_pubkey=pubkey, lamports=lamports)
        )
        hashes = min(slot, MAX_PROCESSING_AGE) + 1
        attempt = 0
        while True:
            blockhash = Hash.from_string(self.clock.blockhash(slot - attempt % hashes))
            variant = attempt // hashes
            extra = [set_compute_unit_limit(MAX_COMPUTE_UNITS - variant)] if variant else []
            message = Message.new_with_blockhash([*extra, instruction], payer, blockhash)
            tx = VersionedTransaction(message, [self.faucet])
            signature = str(tx.signatures[0])
            queued = self.leader is not None and signature in self.leader.queue
            if signature not in self.history.statuses and not queued:
                break
            attempt += 1
        if not self.busy.changes_sending:
            return self._send_now(bytes(tx), tx, preflight_slot=None)
        # The faucet is the localnet's own: its transfers go through blocks, first in
        # theirs, and are never lost.
        return self._accept(self.tick(), bytes(tx), tx, preflight_slot=None, faucet=True)

    # -- ledger -----------------------------------------------------------------------

    @property
    def snapshot_due(self) -> bool:
        """Whether the log has grown enough since the last snapshot to take another."""
        return self.ledger is not None and self.ledger.segment_bytes >= self.snapshot_bytes

    def close(self) -> None:
        """Flush the log (unless writing it failed) and release the ledger folder."""
        if self.ledger is not None:
            if self.ledger.failure is None:
                self.ledger.flush()
            self.ledger.close()
            self.ledger = None
