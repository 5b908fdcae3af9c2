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

Runs of a sealed stories260K take part too: openRun, step (anyone may crank, so the outsider
may land one) and closeRun. Every run account must hold, after every transaction, exactly
what the mirror (``onchain.mirror``) computes from the instructions that landed on it.
"""

import random

from curta_svm import CU_LIMIT, PROGRAM_ID, Chain, Published
from solders.compute_budget import set_compute_unit_limit
from solders.instruction import AccountMeta, Instruction
from solders.keypair import Keypair
from solders.message import Message
from solders.pubkey import Pubkey
from solders.signature import Signature
from solders.transaction import Transaction
from svm_errors import custom_error_code

from curta_chain.artifact import Artifact
from curta_chain.constants import WEIGHT_HEADER_SIZE
from curta_chain.onchain.mirror import RunMirror
from curta_chain.onchain.run_account import PromptKind, opened_run_data, run_account_size
from curta_chain.program import (
    MODEL_ACCOUNT_SIZE,
    ModelAccount,
    ModelState,
    WeightHeader,
    begin_sealing,
    bind_weight_account,
    close_model,
    close_run,
    close_weight_account,
    create_model,
    error_name,
    load_idl,
    open_run,
    reopen,
    seal_step,
    step,
    write_weights,
)
from curta_chain.program.borsh import CodecError
from curta_chain.program.idl import coder

ROUNDS_PER_PHASE = 5_200
SEED = 20_261_130
"""Every random choice and byte comes from ``random.Random(SEED)``: a run is replayed by its
seed (the keypairs are fresh each run; no choice depends on their values)."""
SEAL_STEP = bytes(seal_step(PROGRAM_ID, PROGRAM_ID, [PROGRAM_ID], 0).data)[:8]
"""sealStep's discriminator: with any u64 label (which the program does not read)."""


RUN_PROMPT = b"Hi"
RUN_CAPACITY = 6


class Runs:
    """Runs of one sealed, runnable model, and what each run account must hold."""

    def __init__(self, chain: Chain, artifact: Artifact):
        self.chain, self.artifact = chain, artifact
        self.model = chain.install_sealed(artifact.sections)
        self.size = run_account_size(
            artifact.config, RUN_CAPACITY, PromptKind.TEXT, len(RUN_PROMPT)
        )
        self.expected: dict[Pubkey, RunMirror | None] = {}  # None: closed
        self.landed_count = 0
        self.fresh: list[Keypair] = []
        auth = chain.authority.pubkey()
        for prompt, capacity, cranks in (
            (RUN_PROMPT, RUN_CAPACITY, 0),
            ([1], 2, 99),
            ([1, 9], 4, 1),
        ):
            run = Keypair()
            kind = PromptKind.TEXT if isinstance(prompt, bytes) else PromptKind.TOKENS
            size = run_account_size(artifact.config, capacity, kind, len(prompt))
            ix = open_run(
                PROGRAM_ID, auth, run.pubkey(), self.model.model.pubkey(),
                self.model.weight_keys[0], capacity, prompt,
            )  # fmt: skip
            chain.must([chain.new_account(run, size), ix], [run])
            data = bytes(chain.svm.get_account(run.pubkey()).data)
            self.expected[run.pubkey()] = RunMirror(artifact, data)
            for _ in range(cranks):
                if not self.crank(run.pubkey()):
                    break
        for _ in range(2):  # fresh run accounts openRun may take
            kp = Keypair()
            chain.must([chain.new_account(kp, self.size)], [kp])
            self.fresh.append(kp)

    def crank(self, run: Pubkey) -> bool:
        mirror = self.expected[run]
        if mirror is None or mirror.header.state == 2:
            return False
        plan = mirror.plan()
        keys = [self.model.weight_keys[0], *(self.model.weight_keys[i] for i in plan.sections)]
        ix = step(PROGRAM_ID, run, self.model.model.pubkey(), keys, mirror.header.steps)
        self.chain.must([set_compute_unit_limit(CU_LIMIT), ix])
        mirror.advance(plan)
        return True

    def keys(self) -> list[Pubkey]:
        return [*self.expected, *(kp.pubkey() for kp in self.fresh)]

    def template(self, rng: random.Random, auth: Pubkey) -> Instruction:
        model, weights = self.model.model.pubkey(), self.model.weight_keys
        runs = list(self.expected)
        kind = rng.choices(range(3), weights=[8, 1, 1])[0]
        if kind == 0 or (kind == 1 and not self.fresh):
            # Any label; section zero first, then any of the others, in any order: a step
            # missing a section its slice needs is refused whole (MissingWeightAccount).
            others = [key for key in weights[1:] if rng.random() < 0.7]
            rng.shuffle(others)
            label = rng.randrange(2**64)
            return step(PROGRAM_ID, rng.choice(runs), model, [weights[0], *others], label)
        if kind == 1:
            run = rng.choice(self.fresh).pubkey()
            return open_run(
                PROGRAM_ID, auth, run, model, weights[0], RUN_CAPACITY, RUN_PROMPT,
                rng.choice([0, 65_536]), rng.choice([0, 58_982]), rng.randrange(2**64),
            )  # fmt: skip
        return close_run(PROGRAM_ID, auth, rng.choice(runs))

    def landed(self, ix: Instruction) -> None:
        """Advance the expectation of the run a landed instruction changed."""
        name, args = coder().decode_instruction(bytes(ix.data))
        run = ix.accounts[0].pubkey if name == "step" else ix.accounts[1].pubkey
        if name == "step":
            mirror = self.expected[run]
            sections = self.model.weight_keys
            available = {sections.index(m.pubkey) for m in ix.accounts[2:]}
            plan = mirror.plan(available)
            mirror.advance(plan)
        elif name == "close_run":
            self.expected[run] = None
        else:
            prompt = args["prompt"]
            text = prompt.fields["text"] if prompt.name == "Text" else prompt.fields["ids"]
            data = opened_run_data(
                self.artifact.config, ix.accounts[2].pubkey, ix.accounts[0].pubkey,
                args["capacity"], text, args["temperature"], args["top_p"], args["seed"],
            )  # fmt: skip
            self.expected[run] = RunMirror(self.artifact, data)
            self.fresh = [kp for kp in self.fresh if kp.pubkey() != run]

    def check(self) -> None:
        """Every run account holds what the mirror expects (nothing, once closed)."""
        for run, mirror in self.expected.items():
            account = self.chain.svm.get_account(run)
            if mirror is None:
                assert account is None or not account.data or account.owner != PROGRAM_ID
            else:
                mirror.compare(bytes(account.data), mirror.header)


class World:
    def __init__(self, artifact: Artifact, rng: random.Random) -> None:
        self.chain = Chain()
        chain = self.chain
        urandom = rng.randbytes
        self.uploading = chain.publish([urandom(2_000), urandom(300)])
        self.sealed = chain.publish([urandom(1_000), urandom(70_000)])
        chain.begin(self.sealed)
        assert chain.seal(self.sealed).state == ModelState.SEALED
        self.sealing = chain.publish([urandom(200_000), urandom(100)])
        chain.begin(self.sealing)
        self.failed = chain.publish([urandom(100), urandom(100)], declared=bytes(32))
        chain.begin(self.failed)
        assert chain.seal(self.failed).state == ModelState.FAILED
        self.partial = chain.publish([bytes(64), bytes(128), bytes(32)], bind=False, write=False)
        chain.must(
            chain.bind_ixs(self.partial.model.pubkey(), self.partial.weights[1], 1, 128),
            [self.partial.weights[1]],
        )
        # Half reopened after a failed seal, and half closed after one.
        self.reopening = chain.publish([urandom(100), urandom(100)], declared=bytes(32))
        self.closing = chain.publish([urandom(100), urandom(100)], declared=bytes(32))
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
        self.runs = Runs(chain, artifact)
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
        self.pool += [self.runs.model.model.pubkey(), *self.runs.model.weight_keys]
        self.pool += self.runs.keys()

    def snapshot(self, keys):
        out = []
        for key in keys:
            a = self.chain.svm.get_account(key)
            out.append(None if a is None else (a.lamports, bytes(a.data), a.owner))
        return out

    def templates(self, rng: random.Random) -> Instruction:
        """A well-formed instruction for a random model of the world (closing is rare)."""
        auth = self.chain.authority.pubkey()
        if rng.random() < 0.04:
            return self.runs.template(rng, auth)
        pub: Published = rng.choice(self.models)
        m, w = pub.model.pubkey(), pub.weight_keys
        slot = rng.randrange(len(w))
        kind = rng.choices(range(8), weights=[40, 5, 10, 25, 10, 5, 2, 1])[0]
        if kind == 0:
            length = len(pub.sections[slot])
            size = min(rng.choice([0, 1, 100, 1000]), length)
            offset = rng.randrange(length - size + 1)
            return write_weights(PROGRAM_ID, auth, w[slot], offset, rng.randbytes(size))
        if kind == 1:
            return bind_weight_account(PROGRAM_ID, auth, m, rng.choice(self.fresh).pubkey(), slot)
        if kind == 2:
            return begin_sealing(PROGRAM_ID, auth, m)
        if kind == 3:  # the slot's account, or it and the next slot's (a section's end)
            named = [w[slot]] if rng.random() < 0.5 else [w[slot], w[(slot + 1) % len(w)]]
            return seal_step(PROGRAM_ID, m, named, rng.randrange(2**64))
        if kind == 4:
            return reopen(PROGRAM_ID, auth, m, w[slot], slot)
        if kind == 5:
            return create_model(PROGRAM_ID, auth, self.fresh[2].pubkey(), rng.randbytes(32), [1, 2])
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
                data += rng.randbytes(rng.randrange(1, 16))
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
            data = bytearray(rng.randbytes(rng.randrange(40)))
        # Only keys this phase may sign for can be marked as signers.
        accounts = [AccountMeta(k, s and k in signers, w) for k, s, w in metas]
        return Instruction(PROGRAM_ID, bytes(data), accounts)

    def send(self, ix: Instruction, payer: Pubkey) -> bool:
        """Send unsigned (sigverify is off); count each refusal's name; True when it landed."""
        # A step needs more than the default 200,000 compute units.
        limit = set_compute_unit_limit(CU_LIMIT)
        message = Message.new_with_blockhash([limit, ix], payer, self.blockhash)
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
    try:
        name, args = coder().decode_instruction(data)
    except CodecError:
        return False
    return coder().encode_instruction(name, args) == data


def landed_run_instruction(world: World, ix: Instruction) -> bool:
    """True when a landed instruction was openRun, step or closeRun (then mirrored)."""
    if bytes(ix.data[:8]) not in RUN_SIGHASHES:
        return False
    world.runs.landed(ix)
    world.runs.landed_count += 1
    world.runs.check()
    return True


RUN_SIGHASHES = {
    coder().instruction_discriminator(name) for name in ("open_run", "step", "close_run")
}


def test_fuzz_nothing_succeeds_that_should_not(stories260k: Artifact):
    rng = random.Random(SEED)
    world = World(stories260k, rng)
    chain = world.chain
    outsider = world.outsider.pubkey()
    cranked = {world.sealing.model.pubkey(), *world.sealing.weight_keys, *world.runs.expected}
    successes = 0

    for _ in range(ROUNDS_PER_PHASE):
        ix = world.mutate(world.templates(rng), rng, {outsider})
        before = world.snapshot(world.pool)
        if world.send(ix, outsider):
            successes += 1
            seal = bytes(ix.data[:8]) == SEAL_STEP and len(ix.data) == len(SEAL_STEP) + 8
            assert seal or landed_run_instruction(world, ix), ix
            after = world.snapshot(world.pool)
            changed = {k for k, a, b in zip(world.pool, before, after, strict=True) if a != b}
            assert changed <= cranked | {outsider}, changed
        assert world.snapshot(world.sealed_keys) == world.sealed_state

    # Phase two restarts the world now and then: closing models would otherwise empty it.
    worlds = [world]
    for round_ in range(ROUNDS_PER_PHASE):
        if round_ and round_ % 1_300 == 0:
            world = World(stories260k, rng)
            worlds.append(world)
        chain, outsider = world.chain, world.outsider.pubkey()
        # The fresh run accounts may sign too, so that openRun can land.
        signers = {chain.authority.pubkey(), outsider, *(k.pubkey() for k in world.runs.fresh)}
        ix = world.mutate(world.templates(rng), rng, signers)
        if world.send(ix, rng.choice([chain.authority.pubkey(), outsider])):
            successes += 1
            assert canonical(bytes(ix.data)), ix
            landed_run_instruction(world, ix)
            world.check_models()
            assert world.snapshot(world.sealed_keys) == world.sealed_state
    # The program itself refused most of them, for many different reasons.
    refusals: dict[str, int] = {}
    for each in worlds:
        for name, count in each.refusals.items():
            refusals[name] = refusals.get(name, 0) + count
        each.check_models()
        each.runs.check()
        assert each.snapshot(each.sealed_keys) == each.sealed_state
    named = {name for name in refusals if name in {e.name for e in load_idl().errors}}
    assert len(named) >= 15, refusals
    assert refusals.get("MissingWeightAccount", 0) > 0, refusals  # short steps, refused whole
    # The mutator is not so wild that nothing valid gets through.
    assert successes >= 100, refusals
    assert sum(each.runs.landed_count for each in worlds) >= 10
    runs = sum(each.runs.landed_count for each in worlds)
    sent = 2 * ROUNDS_PER_PHASE
    print(f"fuzz: {sent} sent, {successes} landed ({runs} on runs), {sorted(refusals.items())}")
