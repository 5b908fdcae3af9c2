"""A thin harness over solders' LiteSVM (the real runtime) with the shipped curta program.

LiteSVM does not count loaded account data (SIMD-0186), so ``Chain.send`` does: it measures
every transaction before it runs, as a validator would, and fails the test on one over the
64 MiB a validator allows (each ``Result`` carries its ``loaded`` bytes).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from solders.account import Account
from solders.instruction import Instruction
from solders.keypair import Keypair
from solders.litesvm import LiteSVM
from solders.message import Message
from solders.pubkey import Pubkey
from solders.system_program import CreateAccountParams, create_account
from solders.transaction import Transaction
from svm_errors import custom_error_code

from curta_chain.constants import (
    HASH_CHUNK_SIZE,
    LOCALNET_PROGRAM_ID,
    MAX_LOADED_ACCOUNTS_DATA_SIZE,
    WEIGHT_HEADER_SIZE,
)
from curta_chain.localnet.loaded_data import loaded_accounts_data_size
from curta_chain.program import (
    MODEL_ACCOUNT_SIZE,
    PROGRAM_BINARY,
    ModelAccount,
    ModelState,
    SectionSlot,
    WeightHeader,
    begin_sealing,
    bind_weight_account,
    close_model,
    close_weight_account,
    create_model,
    error_name,
    reopen,
    seal_step,
    write_weights,
)

PROGRAM_ID = Pubkey.from_string(LOCALNET_PROGRAM_ID)
CU_LIMIT = 1_400_000


def weights_hash(sections: Sequence[bytes]) -> bytes:
    """The CURTAW01 weights hash: one sha256 chain over 64 KiB chunks, cut at section ends."""
    running = bytes(32)
    for section in sections:
        for start in range(0, len(section), HASH_CHUNK_SIZE):
            running = hashlib.sha256(running + section[start : start + HASH_CHUNK_SIZE]).digest()
    return running


@dataclass
class Result:
    """What a transaction did: ok, the named custom error, compute units, logs, loaded bytes."""

    ok: bool
    error: str | None
    code: int | None
    units: int
    logs: list[str]
    raw_error: object = None
    loaded: int = 0


@dataclass
class Published:
    """A model created and bound (and possibly written) in the SVM."""

    model: Keypair
    weights: list[Keypair]
    sections: list[bytes]

    @property
    def weight_keys(self) -> list[Pubkey]:
        return [w.pubkey() for w in self.weights]


class Chain:
    """One in-process chain with the curta program at LOCALNET_PROGRAM_ID."""

    def __init__(self) -> None:
        self.svm = LiteSVM().with_transaction_history(0)
        self.svm.add_program(PROGRAM_ID, PROGRAM_BINARY.read_bytes())
        self.authority = Keypair()
        self.svm.airdrop(self.authority.pubkey(), 10_000 * 10**9)
        self.loaded_sizes: list[int] = []
        """The loaded account data of every transaction sent, in order."""

    def funded(self, sol: int = 100) -> Keypair:
        kp = Keypair()
        self.svm.airdrop(kp.pubkey(), sol * 10**9)
        return kp

    def send(
        self,
        ixs: Sequence[Instruction],
        signers: Sequence[Keypair] = (),
        payer: Keypair | None = None,
    ) -> Result:
        payer = payer or self.authority
        everyone = [payer, *[s for s in signers if s.pubkey() != payer.pubkey()]]
        message = Message(list(ixs), payer.pubkey())
        tx = Transaction(everyone, message, self.svm.latest_blockhash())
        loaded = loaded_accounts_data_size(message, self.svm.get_account)
        assert loaded <= MAX_LOADED_ACCOUNTS_DATA_SIZE, f"a validator refuses {loaded:,} bytes"
        self.loaded_sizes.append(loaded)
        meta = self.svm.send_transaction(tx)
        if hasattr(meta, "err"):
            err = meta.err()
            code = custom_error_code(err)
            inner = meta.meta()
            name = error_name(code) if code is not None else None
            units, logs = inner.compute_units_consumed(), list(inner.logs())
            return Result(False, name, code, units, logs, err, loaded)
        units, logs = meta.compute_units_consumed(), list(meta.logs())
        return Result(True, None, None, units, logs, None, loaded)

    def must(self, ixs: Sequence[Instruction], signers: Sequence[Keypair] = ()) -> Result:
        result = self.send(ixs, signers)
        assert result.ok, (result.raw_error, result.logs)
        return result

    def create_model_ixs(
        self,
        model: Keypair,
        declared: bytes,
        lengths: Sequence[int],
        size: int = MODEL_ACCOUNT_SIZE,
    ) -> list[Instruction]:
        lamports = self.svm.minimum_balance_for_rent_exemption(size)
        return [
            create_account(
                CreateAccountParams(
                    from_pubkey=self.authority.pubkey(),
                    to_pubkey=model.pubkey(),
                    lamports=lamports,
                    space=size,
                    owner=PROGRAM_ID,
                )
            ),
            create_model(PROGRAM_ID, self.authority.pubkey(), model.pubkey(), declared, lengths),
        ]

    def new_account(self, kp: Keypair, size: int, owner: Pubkey = PROGRAM_ID) -> Instruction:
        return create_account(
            CreateAccountParams(
                from_pubkey=self.authority.pubkey(),
                to_pubkey=kp.pubkey(),
                lamports=self.svm.minimum_balance_for_rent_exemption(size),
                space=size,
                owner=owner,
            )
        )

    def bind_ixs(
        self, model: Pubkey, weight: Keypair, index: int, length: int
    ) -> list[Instruction]:
        return [
            self.new_account(weight, WEIGHT_HEADER_SIZE + length),
            bind_weight_account(PROGRAM_ID, self.authority.pubkey(), model, weight.pubkey(), index),
        ]

    def publish(
        self,
        sections: Sequence[bytes],
        declared: bytes | None = None,
        write: bool = True,
        bind: bool = True,
    ) -> Published:
        """Create the model, bind every slot, and write every byte (1,000 bytes per write)."""
        sections = [bytes(s) for s in sections]
        model = Keypair()
        declared = weights_hash(sections) if declared is None else declared
        self.must(self.create_model_ixs(model, declared, [len(s) for s in sections]), [model])
        weights = [Keypair() for _ in sections]
        if bind:
            for index, (weight, section) in enumerate(zip(weights, sections, strict=True)):
                self.must(self.bind_ixs(model.pubkey(), weight, index, len(section)), [weight])
        published = Published(model, weights, sections)
        if write:
            for weight, section in zip(weights, sections, strict=True):
                self.write_all(weight.pubkey(), section)
        return published

    def write_all(self, weight: Pubkey, section: bytes, step: int = 1000) -> None:
        for start in range(0, len(section), step):
            chunk = section[start : start + step]
            if any(chunk):
                ix = write_weights(PROGRAM_ID, self.authority.pubkey(), weight, start, chunk)
                self.must([ix])

    def begin(self, published: Published) -> Result:
        auth, model = self.authority.pubkey(), published.model.pubkey()
        return self.must([begin_sealing(PROGRAM_ID, auth, model)])

    def seal(self, published: Published) -> ModelAccount:
        """Crank seal steps until the model leaves the Sealing state."""
        while self.model(published.model.pubkey()).state == ModelState.SEALING:
            self.seal_step(published)
        return self.model(published.model.pubkey())

    def seal_step(self, published: Published) -> Result:
        """Hash the next chunk, naming the weight account of the cursor's section."""
        model = published.model.pubkey()
        weight = published.weight_keys[self.model(model).cursor_section]
        return self.must([seal_step(PROGRAM_ID, model, [weight], 0)])

    def reopen_all(self, published: Published) -> ModelAccount:
        """Reopen every weight account of a failed model, one transaction each."""
        auth, model = self.authority.pubkey(), published.model.pubkey()
        for index, key in enumerate(published.weight_keys):
            self.must([reopen(PROGRAM_ID, auth, model, key, index)])
        return self.model(model)

    def close_all(self, published: Published) -> None:
        """Close every bound weight account, one transaction each, then the model."""
        auth, model = self.authority.pubkey(), published.model.pubkey()
        for index, slot in enumerate(self.model(model).sections):
            if slot.weight_account != Pubkey.default():
                self.must(
                    [close_weight_account(PROGRAM_ID, auth, model, slot.weight_account, index)]
                )
        self.must([close_model(PROGRAM_ID, auth, model)])

    def install_sealed(self, sections: Sequence[bytes]) -> Published:
        """Put a sealed model and its frozen weight accounts straight into the SVM's state.

        For tests of what runs on a sealed model; ``publish`` and ``seal`` cover how one
        gets there. The accounts are byte for byte what publishing and sealing leave.
        """
        sections = [bytes(s) for s in sections]
        model, weights = Keypair(), [Keypair() for _ in sections]
        declared = weights_hash(sections)
        for index, (weight, section) in enumerate(zip(weights, sections, strict=True)):
            authority = self.authority.pubkey()
            header = WeightHeader(model.pubkey(), authority, index, True, len(section))
            self.set_program_account(weight.pubkey(), header.to_bytes() + section)
        chunks = sum(-(-len(section) // HASH_CHUNK_SIZE) for section in sections)
        sealed = ModelAccount(
            authority=self.authority.pubkey(),
            declared_hash=declared,
            running_hash=declared,
            state=ModelState.SEALED,
            section_count=len(sections),
            bound_count=len(sections),
            frozen_count=len(sections),
            cursor_section=len(sections),
            cursor_offset=0,
            chunks_hashed=chunks,
            sections=tuple(
                SectionSlot(w.pubkey(), len(s)) for w, s in zip(weights, sections, strict=True)
            ),
            seal_slot=1,
        )
        self.set_program_account(model.pubkey(), sealed.to_bytes())
        return Published(model, weights, sections)

    def set_program_account(self, key: Pubkey, data: bytes) -> None:
        """Set a rent-exempt account owned by the program holding ``data``."""
        lamports = self.svm.minimum_balance_for_rent_exemption(len(data))
        self.svm.set_account(key, Account(lamports, data, PROGRAM_ID, False, 0))

    def model(self, key: Pubkey) -> ModelAccount:
        return ModelAccount.from_bytes(bytes(self.svm.get_account(key).data))

    def header(self, key: Pubkey) -> WeightHeader:
        return WeightHeader.from_bytes(bytes(self.svm.get_account(key).data))

    def snapshot(self, keys: Sequence[Pubkey]) -> list[object]:
        return [self.svm.get_account(k) for k in keys]
