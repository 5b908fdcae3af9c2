"""Random and mutated instructions against the real program: nothing succeeds that should not.

Two phases over one chain that holds a model in every state:

* an outsider signs alone: the only instruction that may succeed is a seal step (anyone
  may crank), and it may change nothing but the model it advances and the weight account
  it freezes on entering a section;
* the authority signs too: successes are allowed, but each must be a canonical IDL encoding
  and leave every model consistent: the invariants written in ``programs/curta/curta.h``
  (slots and headers, bound and frozen counts, frozen flags against the seal cursor).

In both phases the sealed model and its weight accounts never change. Signature checks are
off (the runtime still takes signers from the message header, so the program's checks are
real) so that a transaction costs no signing.
"""

import os
import random

from anchorpy.coder.instruction import InstructionCoder
from curta_svm import PROGRAM_ID, Chain, Published
from solders.instruction import AccountMeta, Instruction
from solders.keypair import Keypair
from solders.message import Message
from solders.pubkey import Pubkey
from solders.signature import Signature
from solders.transaction import Transaction

from curta_chain.constants import WEIGHT_HEADER_SIZE
from curta_chain.program import (
    MODEL_ACCOUNT_SIZE,
    ModelAccount,
    ModelState,
    WeightHeader,
    begin_sealing,
    bind_weight_account,
    close_model,
    close_weight_account,
    create_model,
    custom_error_code,
    error_name,
    load_idl,
    reopen,
    seal_step,
    write_weights,
)

ROUNDS_PER_PHASE = 5_200
SEAL_STEP = bytes(seal_step(PROGRAM_ID, PROGRAM_ID, PROGRAM_ID).data)


class World:
    def __init__(self) -> None:
        self.chain = Chain()
        chain = self.chain
        self.uploading = chain.publish([os.urandom(2_000), os.urandom(300)])
        self.sealed = chain.publish([os.urandom(1_000), os.urandom(70_000)])
        chain.begin(self.sealed)
        assert chain.seal(self.sealed).state == ModelState.SEALED
        self.sealing = chain.publish([os.urandom(200_000), os.urandom(100)])
        chain.begin(self.sealing)
        self.failed = chain.publish([os.urandom(100), os.urandom(100)], declared=bytes(32))
        chain.begin(self.failed)
        assert chain.seal(self.failed).state == ModelState.FAILED
        self.partial = chain.publish([bytes(64), bytes(128), bytes(32)], bind=False, write=False)
        chain.must(
            chain.bind_ixs(self.partial.model.pubkey(), self.partial.weights[1], 1, 128),
            [self.partial.weights[1]],
        )
        # Half reopened after a failed seal, and half closed after one.
        self.reopening = chain.publish([os.urandom(100), os.urandom(100)], declared=bytes(32))
        self.closing = chain.publish([os.urandom(100), os.urandom(100)], declared=bytes(32))
        auth = chain.authority.pubkey()
        for pub, half in ((self.reopening, reopen), (self.closing, close_weight_account)):
            chain.begin(pub)
            assert chain.seal(pub).state == ModelState.FAILED
            chain.must([half(PROGRAM_ID, auth, pub.model.pubkey(), pub.weight_keys[0], 0)])
        # Fresh program-owned accounts a bind could take, and one fresh model account.
        self.fresh = [Keypair() for _ in range(3)]
        sizes = (WEIGHT_HEADER_SIZE + 64, WEIGHT_HEADER_SIZE + 32, MODEL_ACCOUNT_SIZE)
        for kp, size in zip(self.fresh, sizes, strict=True):
            chain.must([chain.new_account(kp, size)], [kp])
        self.models = [
            self.uploading,
            self.sealed,
            self.sealing,
            self.failed,
            self.partial,
            self.reopening,
            self.closing,
        ]
        self.outsider = chain.funded()
        self.blockhash = chain.svm.latest_blockhash()
        self.refusals: dict[str, int] = {}
        chain.svm = chain.svm.with_sigverify(False)
        self.sealed_keys = [self.sealed.model.pubkey(), *self.sealed.weight_keys]
        self.sealed_state = self.snapshot(self.sealed_keys)
        self.sealed_later: dict[Pubkey, tuple[list, list]] = {}
        self.pool = [
            chain.authority.pubkey(),
            self.outsider.pubkey(),
            Pubkey.default(),
            PROGRAM_ID,
            Keypair().pubkey(),
            *[kp.pubkey() for kp in self.fresh],
        ]
        for pub in self.models:
            self.pool += [pub.model.pubkey(), *pub.weight_keys]

    def snapshot(self, keys):
        out = []
        for key in keys:
            a = self.chain.svm.get_account(key)
            out.append(None if a is None else (a.lamports, bytes(a.data), a.owner))
        return out

    def templates(self, rng: random.Random) -> Instruction:
        """A well-formed instruction for a random model of the world (closing is rare)."""
        pub: Published = rng.choice(self.models)
        auth = self.chain.authority.pubkey()
        m, w = pub.model.pubkey(), pub.weight_keys
        slot = rng.randrange(len(w))
        kind = rng.choices(range(8), weights=[40, 5, 10, 25, 10, 5, 2, 1])[0]
        if kind == 0:
            length = len(pub.sections[slot])
            size = min(rng.choice([0, 1, 100, 1000]), length)
            offset = rng.randrange(length - size + 1)
            return write_weights(PROGRAM_ID, auth, w[slot], offset, os.urandom(size))
        if kind == 1:
            return bind_weight_account(PROGRAM_ID, auth, m, rng.choice(self.fresh).pubkey(), slot)
        if kind == 2:
            return begin_sealing(PROGRAM_ID, auth, m)
        if kind == 3:
            return seal_step(PROGRAM_ID, m, w[slot])
        if kind == 4:
            return reopen(PROGRAM_ID, auth, m, w[slot], slot)
        if kind == 5:
            return create_model(PROGRAM_ID, auth, self.fresh[2].pubkey(), os.urandom(32), [1, 2])
        if kind == 6:
            return close_weight_account(PROGRAM_ID, auth, m, w[slot], slot)
        return close_model(PROGRAM_ID, auth, m)

    def mutate(self, ix: Instruction, rng: random.Random, signers: set[Pubkey]) -> Instruction:
        data = bytearray(ix.data)
        metas = [(m.pubkey, m.is_signer, m.is_writable) for m in ix.accounts]
        for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
            op = rng.randrange(9)
            if op == 0 and data:
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
            elif op == 1 and data:
                data[rng.randrange(len(data))] = rng.randrange(256)
            elif op == 2:
                del data[rng.randrange(len(data) + 1) :]
            elif op == 3:
                data += os.urandom(rng.randrange(1, 16))
            elif op == 4 and metas:
                i = rng.randrange(len(metas))
                metas[i] = (rng.choice(self.pool), rng.random() < 0.5, rng.random() < 0.5)
            elif op == 5 and metas:
                i = rng.randrange(len(metas))
                metas[i] = (metas[i][0], not metas[i][1], metas[i][2])
            elif op == 6 and metas:
                i = rng.randrange(len(metas))
                metas[i] = (metas[i][0], metas[i][1], not metas[i][2])
            elif op == 7 and metas:
                metas.insert(rng.randrange(len(metas) + 1), rng.choice(metas))
            elif op == 8 and metas:
                del metas[rng.randrange(len(metas))]
        if rng.random() < 0.05:
            data = bytearray(os.urandom(rng.randrange(40)))
        # Only keys this phase may sign for can be marked as signers.
        accounts = [AccountMeta(k, s and k in signers, w) for k, s, w in metas]
        return Instruction(PROGRAM_ID, bytes(data), accounts)

    def send(self, ix: Instruction, payer: Pubkey) -> bool:
        """Send unsigned (sigverify is off); count each refusal's name; True when it landed."""
        message = Message.new_with_blockhash([ix], payer, self.blockhash)
        signatures = [Signature.default()] * message.header.num_required_signatures
        meta = self.chain.svm.send_transaction(Transaction.populate(message, signatures))
        if not hasattr(meta, "err"):
            return True
        code = custom_error_code(meta.err())
        name = error_name(code) if code is not None else str(meta.err()).split("(")[0]
        self.refusals[name] = self.refusals.get(name, 0) + 1
        return False

    def check_models(self) -> None:
        svm = self.chain.svm
        for pub in self.models:
            account = svm.get_account(pub.model.pubkey())
            if account is None or not account.data:
                for key in pub.weight_keys:
                    gone = svm.get_account(key)
                    assert gone is None or gone.owner != PROGRAM_ID or not gone.data
                continue
            model = ModelAccount.from_bytes(bytes(account.data))
            bound = [s for s in model.sections if s.weight_account != Pubkey.default()]
            assert model.bound_count == len(bound)  # I1
            frozen = {}
            for index, slot in enumerate(model.sections):
                if slot.weight_account == Pubkey.default():
                    continue
                header = WeightHeader.from_bytes(bytes(svm.get_account(slot.weight_account).data))
                assert (header.model, header.section_index, header.section_length) == (
                    pub.model.pubkey(),
                    index,
                    slot.length,
                )
                assert header.authority == model.authority
                frozen[index] = header.frozen
            assert model.frozen_count == sum(frozen.values())  # I2
            every_slot_bound = len(frozen) == model.section_count
            if model.state == ModelState.UPLOADING:  # I3
                assert model.frozen_count == 0 and model.chunks_hashed == 0
            if model.state == ModelState.SEALING:  # I4
                entered = [
                    i < model.cursor_section
                    or (i == model.cursor_section and model.cursor_offset > 0)
                    for i in range(model.section_count)
                ]
                assert every_slot_bound and list(frozen.values()) == entered
            if model.state in (ModelState.SEALED, ModelState.FAILED):  # I5, I6
                assert every_slot_bound
            if model.state == ModelState.SEALED:
                assert model.running_hash == model.declared_hash
                keys = [pub.model.pubkey(), *pub.weight_keys]
                if pub.model.pubkey() not in self.sealed_later:
                    self.sealed_later[pub.model.pubkey()] = (keys, self.snapshot(keys))
        for keys, state in self.sealed_later.values():
            assert self.snapshot(keys) == state, "a model sealed during the fuzz changed"


def canonical(data: bytes) -> bool:
    coder = InstructionCoder(load_idl())
    try:
        decoded = coder.parse(data)
    except Exception:
        return False
    return coder.build(decoded) == data


def test_fuzz_nothing_succeeds_that_should_not():
    rng = random.Random(20_261_130)
    world = World()
    chain = world.chain
    outsider = world.outsider.pubkey()
    cranked = {world.sealing.model.pubkey(), *world.sealing.weight_keys}
    sent = successes = 0

    for _ in range(ROUNDS_PER_PHASE):
        ix = world.mutate(world.templates(rng), rng, {outsider})
        before = world.snapshot(world.pool)
        sent += 1
        if world.send(ix, outsider):
            successes += 1
            assert bytes(ix.data) == SEAL_STEP, ix
            after = world.snapshot(world.pool)
            changed = {k for k, a, b in zip(world.pool, before, after, strict=True) if a != b}
            assert changed <= cranked | {outsider}, changed
        assert world.snapshot(world.sealed_keys) == world.sealed_state

    # Phase two restarts the world now and then: closing models would otherwise empty it.
    worlds = [world]
    for round_ in range(ROUNDS_PER_PHASE):
        if round_ and round_ % 1_300 == 0:
            world = World()
            worlds.append(world)
        chain, outsider = world.chain, world.outsider.pubkey()
        ix = world.mutate(world.templates(rng), rng, {chain.authority.pubkey(), outsider})
        sent += 1
        if world.send(ix, rng.choice([chain.authority.pubkey(), outsider])):
            successes += 1
            assert canonical(bytes(ix.data)), ix
            world.check_models()
            assert world.snapshot(world.sealed_keys) == world.sealed_state
    assert sent >= 10_000
    # The program itself refused most of them, for many different reasons.
    refusals: dict[str, int] = {}
    for each in worlds:
        for name, count in each.refusals.items():
            refusals[name] = refusals.get(name, 0) + count
        each.check_models()
        assert each.snapshot(each.sealed_keys) == each.sealed_state
    named = {name for name in refusals if name in {e.name for e in load_idl().errors}}
    assert len(named) >= 15, refusals
    # The mutator is not so wild that nothing valid gets through.
    assert successes >= 100, refusals
    print(f"fuzz: {sent} sent, {successes} landed, refusals {sorted(refusals.items())}")
