"""A hostile chain: foreign signers, replays, reordered and swapped transactions, over HTTP.

One embedded localnet serves the whole module. An owner publishes stories260K with the
real ``publish`` (left uploading) and a set of small models in every state; an attacker
holds funds and a model of his own. Each refusal case is sent twice: once with preflight
(``sender.send_checked``), which must raise the program's error named from the IDL and
charge nobody, and once without (the ``Sender``, as publish sends), where the transaction
lands, fails with the same named error, and its fee payer pays exactly the fee. In both,
every model and weight account keeps its lamports, owner and bytes. The last tests have the
owner seal and verify stories260K after all of it, and the owner's run go on to its end:
each lands every attack itself first (so it also stands alone), and they are the only tests
that change the victims.

Runs take part too: the owner publishes and seals another copy of stories260K, the attacker
a tiny model, and each opens runs of theirs (the owner's: one under way, one finished, one
closed). Steps the attacker cranks naming an
account twice, on a finished or closed run, with another model's accounts, or missing the
section their slice needs, and closes by anyone but the opener, are refused the same way and
change no account; afterwards the owner's run goes on to the end, every step mirrored.
"""

import asyncio
import hashlib
import os
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
from fault_proxy import record
from solders.hash import Hash
from solders.instruction import AccountMeta, Instruction
from solders.keypair import Keypair
from solders.message import Message
from solders.pubkey import Pubkey
from solders.system_program import CreateAccountParams, create_account
from solders.transaction import Transaction

from curta_chain import program
from curta_chain.artifact import Artifact, ModelConfig, hash_steps
from curta_chain.artifact.convert import convert_llama2c_bytes
from curta_chain.artifact.synthetic import llama2c_checkpoint_bytes, llama2c_tokenizer_bytes
from curta_chain.chain.context import ChainContext
from curta_chain.chain.keys import model_keypair, weight_keypair
from curta_chain.chain.plan import NewAccount
from curta_chain.chain.publish import plan_publish, publish
from curta_chain.chain.refusals import send_checked
from curta_chain.chain.rpc import RpcClient
from curta_chain.chain.seal import seal
from curta_chain.chain.sender import Sender, wait_for_signature
from curta_chain.chain.specs import Budget, Transactions, TxSpec
from curta_chain.chain.transport import HttpTransport
from curta_chain.chain.verify import verify
from curta_chain.cli import main
from curta_chain.cli.keypairs import write_keypair
from curta_chain.constants import (
    LAMPORTS_PER_SOL,
    LOCALNET_PROGRAM_ID,
    MAX_COMPUTE_UNITS,
    WEIGHT_HEADER_SIZE,
)
from curta_chain.errors import ChainError, ProgramError, RpcCallError
from curta_chain.localnet import start_in_thread
from curta_chain.onchain.mirror import RunMirror
from curta_chain.onchain.run_account import PromptKind, RunState, run_account_size
from curta_chain.program import ModelAccount, ModelState

PROGRAM_ID = Pubkey.from_string(LOCALNET_PROGRAM_ID)
BUDGET = Budget()
T = TypeVar("T")


def on_chain(
    url: str, work: Callable[[RpcClient], Awaitable[T]], commitment: str = "confirmed"
) -> T:
    """Run ``work`` with a fresh RPC client (made inside the event loop, as it must be)."""

    async def run() -> T:
        client = RpcClient(HttpTransport(url), commitment)
        try:
            return await work(client)
        finally:
            await client.aclose()

    return asyncio.run(run())


@dataclass
class Model:
    """A model the test made: its keypair and its weight accounts' keypairs."""

    key: Keypair
    weights: list[Keypair]
    lengths: list[int]

    @property
    def address(self) -> Pubkey:
        return self.key.pubkey()

    @property
    def accounts(self) -> list[Pubkey]:
        return [w.pubkey() for w in self.weights]


@dataclass
class World:
    """The module's chain: who holds what, and every key whose account must not change."""

    url: str
    owner: Keypair
    attacker: Keypair
    art: Artifact
    models: dict[str, Model] = field(default_factory=dict)
    runs: dict[str, Keypair] = field(default_factory=dict)
    tiny: dict[str, Artifact] = field(default_factory=dict)
    mirror: RunMirror | None = None
    """The mirror of the owner's run R1, which only the last test advances."""

    def watched(self) -> list[Pubkey]:
        keys = [self.owner.pubkey(), self.attacker.pubkey()]
        for model in self.models.values():
            keys += [model.address, *model.accounts]
        return keys + [run.pubkey() for run in self.runs.values()]


async def land(client: RpcClient, payer: Keypair, specs_: Sequence[TxSpec]) -> None:
    """Send as publish does (no preflight, pipelined) and wait for every one to confirm."""
    await Sender(client, payer).send(specs_)


async def make_model(
    sender: Sender,
    sections: Sequence[bytes],
    bind: Sequence[int] | None = None,
    declared: bytes | None = None,
    state: ModelState = ModelState.UPLOADING,
) -> Model:
    """Create, bind (all slots unless ``bind`` says which), write and drive to ``state``.

    ``sender``'s payer is the authority; one sender serves a whole set-up, as one run would.
    """
    client, authority = sender.client, sender.payer
    lengths = [len(s) for s in sections]
    declared = declared if declared is not None else list(hash_steps(sections))[-1].running
    model = Model(Keypair(), [Keypair() for _ in sections], lengths)
    rent = await client.rent_exempt_minimum(program.MODEL_ACCOUNT_SIZE)
    funding = NewAccount(model.address, program.MODEL_ACCOUNT_SIZE, rent)
    create = txs(authority).create_model(model.key, declared, lengths, funding)
    await sender.send([create])
    bound = range(len(sections)) if bind is None else bind
    binds = []
    for i in bound:
        rent = await client.rent_exempt_minimum(WEIGHT_HEADER_SIZE + lengths[i])
        funding = NewAccount(model.accounts[i], WEIGHT_HEADER_SIZE + lengths[i], rent)
        binds.append(txs(authority).bind(model.address, model.weights[i], i, funding))
    await sender.send(binds)
    writes = [
        TxSpec((program.write_weights(PROGRAM_ID, authority.pubkey(), w.pubkey(), at, s[at:end]),))
        for w, s in ((model.weights[i], sections[i]) for i in bound)
        for at in range(0, len(s), 900)
        for end in [min(at + 900, len(s))]
        if any(s[at:end])  # a new account is zeros already
    ]
    await sender.send(writes)
    if state != ModelState.UPLOADING:
        begin = program.begin_sealing(PROGRAM_ID, authority.pubkey(), model.address)
        await sender.send([TxSpec((begin,))])
    # A sealing model has its first chunk hashed: the seal has entered (frozen) section 0.
    steps = 1 if state == ModelState.SEALING else 0
    if state in (ModelState.SEALED, ModelState.FAILED):
        steps = len(list(hash_steps(sections)))
    for index, step in enumerate(list(hash_steps(sections))[:steps]):
        account = model.accounts[step.section]
        spec = txs(authority).seal_step(model.address, [account], index)
        await sender.send([spec])
    assert (await read(client, model.address)).state == state
    return model


def txs(authority: Keypair, budget: Budget = BUDGET) -> Transactions:
    """The curta transactions of ``authority``, who also pays."""
    return Transactions(PROGRAM_ID, authority.pubkey(), authority.pubkey(), budget)


async def read(client: RpcClient, address: Pubkey) -> ModelAccount:
    info = await client.account(address)
    assert info is not None
    return ModelAccount.from_bytes(info.data)


def airdrop(url: str, sol: float) -> Keypair:
    keypair = Keypair()

    async def work(client: RpcClient) -> None:
        signature = await client.request_airdrop(keypair.pubkey(), int(sol * LAMPORTS_PER_SOL))
        await wait_for_signature(client, signature)

    on_chain(url, work)
    return keypair


SMALL = [os.urandom(3_000), os.urandom(500)]
"""The small models' sections: two slots, one chunk each."""
TINY = ModelConfig(
    dim=16, hidden_dim=32, n_layers=1, n_heads=2, n_kv_heads=1, vocab_size=259, seq_len=16
)
"""A model a run can run, small enough to publish in a few dozen writes."""
RUN_PROMPT = b"hello"


def tiny_artifact(seed: int) -> Artifact:
    checkpoint = llama2c_checkpoint_bytes(TINY, seed)
    tokenizer = llama2c_tokenizer_bytes(TINY.vocab_size, seed)
    return convert_llama2c_bytes(checkpoint, tokenizer, f"tiny{seed}.bin", "tok.bin")


def with_hostile_exp_table(artifact: Artifact) -> list[bytes]:
    """The sections with exponential table entry 0 at 2^32 - 1, as issue 19's attacker sealed
    them: a softmax weight of 2^24 indexed the nucleus histogram 8,191 buckets deep."""
    zero = bytearray(artifact.sections[0])
    exp_block = int.from_bytes(zero[40 + 4 * 2 : 40 + 4 * 3], "little")
    zero[exp_block : exp_block + 4] = (2**32 - 1).to_bytes(4, "little")
    return [bytes(zero), *artifact.sections[1:]]


def step_spec(model: Model, run: Pubkey, sections: Sequence[int], expected: int) -> TxSpec:
    keys = [model.accounts[0], *(model.accounts[i] for i in sections)]
    ix = program.step(PROGRAM_ID, run, model.address, keys, expected)
    return TxSpec((*BUDGET_RUN.instructions(MAX_COMPUTE_UNITS), ix))


BUDGET_RUN = Budget(limit_compute=True)


async def open_run(
    sender: Sender, model: Model, art: Artifact, prompt: bytes | list[int], capacity: int
) -> tuple[Keypair, RunMirror]:
    """Create and open a run of ``model`` (the sender's payer opens it); its mirror."""
    run, opener = Keypair(), sender.payer
    kind = PromptKind.TEXT if isinstance(prompt, bytes) else PromptKind.TOKENS
    size = run_account_size(art.config, capacity, kind, len(prompt))
    rent = await sender.client.rent_exempt_minimum(size)
    create = create_account(
        CreateAccountParams(
            from_pubkey=opener.pubkey(), to_pubkey=run.pubkey(), lamports=rent, space=size,
            owner=PROGRAM_ID,
        )
    )  # fmt: skip
    ix = program.open_run(
        PROGRAM_ID, opener.pubkey(), run.pubkey(), model.address, model.accounts[0], capacity,
        prompt,
    )  # fmt: skip
    await sender.send([TxSpec((*BUDGET_RUN.instructions(MAX_COMPUTE_UNITS), create, ix), (run,))])
    info = await sender.client.account(run.pubkey())
    assert info is not None
    return run, RunMirror(art, info.data)


async def crank(
    sender: Sender, model: Model, run: Keypair, mirror: RunMirror, steps: int | None = None
) -> None:
    """Step ``run`` (the sender's payer cranks) ``steps`` times or to its end, mirrored."""
    done = 0
    while mirror.header.state != RunState.FINISHED and (steps is None or done < steps):
        before = mirror.header
        plan = mirror.plan()
        await sender.send([step_spec(model, run.pubkey(), plan.sections, before.steps)])
        mirror.advance(plan)
        info = await sender.client.account(run.pubkey())
        assert info is not None
        mirror.compare(info.data, before)
        done += 1


@pytest.fixture(scope="module")
def world(stories260k: Artifact) -> Iterator[World]:
    """The owner's models, by role, and the attacker's.

    A: stories260K, published by ``publish``, uploading (the victim). B: A's section
    lengths, all zeros, bound, uploading. S, S2: small, the same lengths, sealing with the
    seal in section 1 (section 0 frozen). D: small, sealed. F: small, failed. U: small, slot
    1 unbound. The attacker's C (sealing like S) and CU (slot 1 unbound). Runnable: R
    (stories260K, the owner's), RA (tiny, the attacker's) and RH (tiny with a hostile
    exponential table, sealed by the attacker: openRun refuses it).
    """
    handle = start_in_thread()
    try:
        world = World(handle.url, airdrop(handle.url, 100), airdrop(handle.url, 100), stories260k)

        async def build(client: RpcClient) -> None:
            owner, attacker = world.owner, world.attacker
            owner_sends, attacker_sends = Sender(client, owner), Sender(client, attacker)
            # The victim: stories260K through the real publish path, left uploading.
            ctx = ChainContext(client, PROGRAM_ID, owner, sender=owner_sends)
            plan = await plan_publish(ctx, stories260k)
            await publish(ctx, stories260k, plan)
            world.models["A"] = Model(
                model_keypair(owner, plan.weights_hash, plan.scope),
                [weight_keypair(owner, plan.weights_hash, plan.scope, i) for i in range(2)],
                list(plan.section_lengths),
            )
            zeros_like_a = [bytes(n) for n in plan.section_lengths]
            m = world.models
            m["B"] = await make_model(owner_sends, zeros_like_a, declared=bytes(32))
            m["S"] = await make_model(owner_sends, SMALL, state=ModelState.SEALING)
            m["S2"] = await make_model(owner_sends, SMALL, state=ModelState.SEALING)
            m["D"] = await make_model(owner_sends, SMALL, state=ModelState.SEALED)
            m["F"] = await make_model(
                owner_sends, SMALL, declared=bytes(32), state=ModelState.FAILED
            )
            m["U"] = await make_model(owner_sends, SMALL, bind=[0])
            m["C"] = await make_model(attacker_sends, SMALL, state=ModelState.SEALING)
            m["CU"] = await make_model(attacker_sends, SMALL, bind=[0])
            # Runnable models and their runs: R (the owner's) and RA (the attacker's).
            world.tiny = {"R": stories260k, "RA": tiny_artifact(2), "RH": tiny_artifact(3)}
            for name, sender in (("R", owner_sends), ("RA", attacker_sends)):
                sections = list(world.tiny[name].sections)
                m[name] = await make_model(sender, sections, state=ModelState.SEALED)
            # RH: the attacker's model sealed with a hostile exponential table.
            hostile = with_hostile_exp_table(world.tiny["RH"])
            m["RH"] = await make_model(attacker_sends, hostile, state=ModelState.SEALED)
            r, ra = world.tiny["R"], world.tiny["RA"]
            run, mirror = await open_run(owner_sends, m["R"], r, RUN_PROMPT, 12)
            await crank(owner_sends, m["R"], run, mirror, steps=1)  # tokenized, running
            assert mirror.header.state == RunState.RUNNING
            world.runs["R1"], world.mirror = run, mirror
            world.runs["R2"], done = await open_run(owner_sends, m["R"], r, [1], 2)
            await crank(owner_sends, m["R"], world.runs["R2"], done)
            world.runs["R3"], _ = await open_run(owner_sends, m["R"], r, [1], 3)
            close_r3 = program.close_run(PROGRAM_ID, owner.pubkey(), world.runs["R3"].pubkey())
            await owner_sends.send([TxSpec((close_r3,))])
            world.runs["A1"], _ = await open_run(attacker_sends, m["RA"], ra, RUN_PROMPT, 12)

        on_chain(handle.url, build)
        yield world
    finally:
        handle.stop()


# -- the refusal table ---------------------------------------------------------------------


@dataclass(frozen=True)
class Attack:
    """Instructions, who pays for them, and the other keys that sign them."""

    payer: Keypair
    instructions: tuple[Instruction, ...]
    signers: tuple[Keypair, ...] = ()


def unsigned(ix: Instruction, index: int) -> Instruction:
    """``ix`` with account ``index`` no longer a signer: naming a key without its signature."""
    accounts = list(ix.accounts)
    meta = accounts[index]
    accounts[index] = AccountMeta(meta.pubkey, False, meta.is_writable)
    return Instruction(ix.program_id, ix.data, accounts)


def fresh_account(payer: Keypair, new: Keypair, length: int, rent: int) -> Instruction:
    """Create ``new`` as a program-owned account sized for a section of ``length`` bytes."""
    return create_account(
        CreateAccountParams(
            from_pubkey=payer.pubkey(),
            to_pubkey=new.pubkey(),
            lamports=rent,
            space=WEIGHT_HEADER_SIZE + length,
            owner=PROGRAM_ID,
        )
    )


Make = Callable[[dict[str, Model], Pubkey], Instruction]


def by_attacker(make: Make) -> Callable[[World], Attack]:
    """The attacker pays, signs and is ``me`` in ``make(models, me)``."""
    return lambda w: Attack(w.attacker, (make(w.models, w.attacker.pubkey()),))


def by_owner(make: Make) -> Callable[[World], Attack]:
    """The owner pays, signs and is ``me``: a mistake or a reordering, not a theft."""
    return lambda w: Attack(w.owner, (make(w.models, w.owner.pubkey()),))


def as_owner_unsigned(make: Make, index: int = 0) -> Callable[[World], Attack]:
    """The attacker pays and names the owner as account ``index`` without its signature."""
    return lambda w: Attack(w.attacker, (unsigned(make(w.models, w.owner.pubkey()), index),))


def bind_fresh(payer: str, model: str, slot: int) -> Callable[[World], Attack]:
    """Create a fresh program-owned account and bind it into ``model``'s ``slot``."""

    def attack(w: World) -> Attack:
        who, new, m = getattr(w, payer), Keypair(), w.models[model]
        create = fresh_account(who, new, m.lengths[slot], LAMPORTS_PER_SOL)
        bind = program.bind_weight_account(PROGRAM_ID, who.pubkey(), m.address, new.pubkey(), slot)
        return Attack(who, (create, bind), (new,))

    return attack


def bind_bound(source: str) -> Callable[[World], Attack]:
    """The owner binds ``source``'s (already bound) section-1 account into U's free slot 1."""

    def attack(w: World) -> Attack:
        u, other = w.models["U"], w.models[source]
        ix = program.bind_weight_account(
            PROGRAM_ID, w.owner.pubkey(), u.address, other.accounts[1], 1
        )
        return Attack(w.owner, (ix,), (other.weights[1],))

    return attack


RunMake = Callable[[World, Pubkey], Instruction]


def run_attack(
    payer: str, make: RunMake, unsigned_at: int | None = None
) -> Callable[[World], Attack]:
    """``payer`` ("owner" or "attacker") pays and is ``me`` in ``make(world, me)``; with
    ``unsigned_at``, the attacker pays and names the owner there without its signature."""

    def attack(w: World) -> Attack:
        if unsigned_at is not None:
            return Attack(w.attacker, (unsigned(make(w, w.owner.pubkey()), unsigned_at),))
        who = getattr(w, payer)
        return Attack(who, (make(w, who.pubkey()),))

    return attack


def run_step(
    model: str,
    run: str,
    sections: Sequence[int] = (1,),
    expected: int | None = None,
    weights: str | None = None,
) -> RunMake:
    """A step of ``run`` naming ``model`` and ``weights``' (default the model's) sections."""

    def make(w: World, me: Pubkey) -> Instruction:
        accounts = w.models[weights or model].accounts
        keys = [accounts[0], *(accounts[i] for i in sections)]
        count = expected if expected is not None else (w.mirror.header.steps if run == "R1" else 0)
        return program.step(P, w.runs[run].pubkey(), w.models[model].address, keys, count)

    return make


def open_on(model: str, section_zero: str | None = None) -> Callable[[World], Attack]:
    """The owner creates a fresh run account and opens a run of ``model`` on it."""

    def attack(w: World) -> Attack:
        run, m = Keypair(), w.models[model]
        config = w.tiny.get(model, w.art).config
        size = run_account_size(config, 8, PromptKind.TEXT, len(RUN_PROMPT))
        create = create_account(
            CreateAccountParams(
                from_pubkey=w.owner.pubkey(), to_pubkey=run.pubkey(), lamports=LAMPORTS_PER_SOL,
                space=size, owner=PROGRAM_ID,
            )
        )  # fmt: skip
        zero = w.models[section_zero or model].accounts[0]
        ix = program.open_run(P, w.owner.pubkey(), run.pubkey(), m.address, zero, 8, RUN_PROMPT)
        return Attack(w.owner, (create, ix), (run,))

    return attack


P = PROGRAM_ID
write, begin = program.write_weights, program.begin_sealing


def step(program_id: Pubkey, model: Pubkey, weight: Pubkey) -> Instruction:
    """sealStep naming one weight account."""
    return program.seal_step(program_id, model, [weight], 0)


reopen, close, bind = program.reopen, program.close_model, program.bind_weight_account
close_weight = program.close_weight_account

Cases = dict[str, tuple[Callable[[World], Attack], str]]

FOREIGN_SIGNER: Cases = {
    "attacker writes into the owner's weight account": (
        by_attacker(lambda m, me: write(P, me, m["A"].accounts[0], 0, b"evil")),
        "WrongAuthority",
    ),
    "attacker writes naming the owner without its signature": (
        as_owner_unsigned(lambda m, me: write(P, me, m["A"].accounts[1], 8, b"evil")),
        "MissingSignature",
    ),
    "attacker begins sealing the owner's model": (
        by_attacker(lambda m, me: begin(P, me, m["A"].address)),
        "WrongAuthority",
    ),
    "attacker begins sealing naming the owner without its signature": (
        as_owner_unsigned(lambda m, me: begin(P, me, m["A"].address)),
        "MissingSignature",
    ),
    "attacker reopens the owner's failed model": (
        by_attacker(lambda m, me: reopen(P, me, m["F"].address, m["F"].accounts[0], 0)),
        "WrongAuthority",
    ),
    "attacker closes the owner's weight account to himself": (
        by_attacker(lambda m, me: close_weight(P, me, m["A"].address, m["A"].accounts[0], 0)),
        "WrongAuthority",
    ),
    "attacker closes the owner's failed model's weight account to himself": (
        by_attacker(lambda m, me: close_weight(P, me, m["F"].address, m["F"].accounts[1], 1)),
        "WrongAuthority",
    ),
    "attacker closes the owner's model account to himself": (
        by_attacker(lambda m, me: close(P, me, m["A"].address)),
        "WrongAuthority",
    ),
    "attacker closes the owner's weight account naming the owner without its signature": (
        as_owner_unsigned(lambda m, me: close_weight(P, me, m["A"].address, m["A"].accounts[0], 0)),
        "MissingSignature",
    ),
    "attacker binds his account into the owner's free slot": (
        bind_fresh("attacker", "U", 1),
        "WrongAuthority",
    ),
    "attacker binds the owner's weight account into his own model": (
        by_attacker(lambda m, me: unsigned(bind(P, me, m["CU"].address, m["S"].accounts[1], 1), 2)),
        "MissingSignature",
    ),
    "attacker cranks the owner's seal with his own weight account": (
        by_attacker(lambda m, me: step(P, m["S"].address, m["C"].accounts[1])),
        "WrongWeightAccount",
    ),
    "owner writes into the attacker's weight account": (
        by_owner(lambda m, me: write(P, me, m["CU"].accounts[0], 0, b"x")),
        "WrongAuthority",
    ),
    "attacker closes the owner's run to himself": (
        run_attack("attacker", lambda w, me: program.close_run(P, me, w.runs["R1"].pubkey())),
        "WrongOpener",
    ),
    "attacker closes the owner's run naming the owner without its signature": (
        run_attack("attacker", lambda w, me: program.close_run(P, me, w.runs["R1"].pubkey()), 0),
        "MissingSignature",
    ),
}

OUT_OF_ORDER: Cases = {
    "begin sealing before every slot is bound": (
        by_owner(lambda m, me: begin(P, me, m["U"].address)),
        "UnboundSlot",
    ),
    "begin sealing twice": (
        by_owner(lambda m, me: begin(P, me, m["S"].address)),
        "ModelNotUploading",
    ),
    "write into a section the seal has entered": (
        by_owner(lambda m, me: write(P, me, m["S"].accounts[0], 0, b"late")),
        "WeightAccountFrozen",
    ),
    "write into a sealed model": (
        by_owner(lambda m, me: write(P, me, m["D"].accounts[1], 0, b"late")),
        "WeightAccountFrozen",
    ),
    "write into a failed model before reopening it": (
        by_owner(lambda m, me: write(P, me, m["F"].accounts[0], 0, b"late")),
        "WeightAccountFrozen",
    ),
    "write past the section's end": (
        by_owner(lambda m, me: write(P, me, m["A"].accounts[0], m["A"].lengths[0] - 2, b"abc")),
        "WriteOutOfBounds",
    ),
    "seal step before begin sealing": (
        by_owner(lambda m, me: step(P, m["A"].address, m["A"].accounts[0])),
        "ModelNotSealing",
    ),
    "seal step naming the section the cursor has left": (
        by_attacker(lambda m, me: step(P, m["S"].address, m["S"].accounts[0])),
        "WrongWeightAccount",
    ),
    "seal step after the last": (
        by_attacker(lambda m, me: step(P, m["D"].address, m["D"].accounts[1])),
        "ModelNotSealing",
    ),
    "reopen a model that is sealing": (
        by_owner(lambda m, me: reopen(P, me, m["S"].address, m["S"].accounts[0], 0)),
        "ModelNotFailed",
    ),
    "reopen a sealed model": (
        by_owner(lambda m, me: reopen(P, me, m["D"].address, m["D"].accounts[0], 0)),
        "ModelSealed",
    ),
    "reopen a slot the model does not have": (
        by_owner(lambda m, me: reopen(P, me, m["F"].address, m["F"].accounts[0], 2)),
        "SectionIndexOutOfRange",
    ),
    "close a sealed model's weight account": (
        by_owner(lambda m, me: close_weight(P, me, m["D"].address, m["D"].accounts[0], 0)),
        "ModelSealed",
    ),
    "close a sealed model": (
        by_owner(lambda m, me: close(P, me, m["D"].address)),
        "ModelSealed",
    ),
    "close a model while weight accounts are bound": (
        by_owner(lambda m, me: close(P, me, m["B"].address)),
        "WeightAccountsStillBound",
    ),
    "close an unbound slot": (
        by_owner(lambda m, me: close_weight(P, me, m["U"].address, m["U"].accounts[0], 1)),
        "UnboundSlot",
    ),
    "bind a second account into a bound slot": (bind_fresh("owner", "B", 0), "SlotAlreadyBound"),
    "open a run of a model that is still uploading": (open_on("A", "R"), "ModelNotSealed"),
    "open a run of a model sealed with a hostile exponential table": (
        open_on("RH"),
        "BadArtifact",
    ),
    "step a run naming its matrix section twice": (
        run_attack("attacker", run_step("R", "R1", sections=(1, 1))),
        "DuplicateAccount",
    ),
    "step a run naming section zero twice": (
        run_attack("attacker", run_step("R", "R1", sections=(0,))),
        "DuplicateAccount",
    ),
    "step a run without the section its phase needs": (
        run_attack("attacker", run_step("R", "R1", sections=())),
        "MissingWeightAccount",
    ),
    "step a finished run": (
        run_attack("attacker", run_step("R", "R2", expected=1)),
        "RunFinished",
    ),
    "step a closed run": (
        run_attack("attacker", run_step("R", "R3", expected=0)),
        "RunClosed",
    ),
}

SWAPPED: Cases = {
    "seal step of S with S2's account (same lengths, both sealing)": (
        by_attacker(lambda m, me: step(P, m["S"].address, m["S2"].accounts[1])),
        "WrongWeightAccount",
    ),
    "reopen F naming S's weight account": (
        by_owner(lambda m, me: reopen(P, me, m["F"].address, m["S"].accounts[0], 0)),
        "WrongWeightAccount",
    ),
    "reopen F naming its own weight account of the other slot": (
        by_owner(lambda m, me: reopen(P, me, m["F"].address, m["F"].accounts[1], 0)),
        "WrongWeightAccount",
    ),
    "close A naming B's weight account of the same slot (same lengths)": (
        by_owner(lambda m, me: close_weight(P, me, m["A"].address, m["B"].accounts[0], 0)),
        "WrongWeightAccount",
    ),
    "close B naming A's section 1 account": (
        by_owner(lambda m, me: close_weight(P, me, m["B"].address, m["A"].accounts[1], 1)),
        "WrongWeightAccount",
    ),
    "close A naming its model as the weight account": (
        by_owner(lambda m, me: close_weight(P, me, m["A"].address, m["A"].address, 0)),
        "DuplicateAccount",
    ),
    "bind S2's bound account into U's free slot (same length)": (
        bind_bound("S2"),
        "AccountNotFresh",
    ),
    "bind B's bound account into U's free slot (another length)": (
        bind_bound("B"),
        "WrongAccountSize",
    ),
    "step the owner's run naming the attacker's model": (
        run_attack("attacker", run_step("RA", "R1")),
        "RunOfAnotherModel",
    ),
    "step the owner's run with the attacker's model's weight accounts": (
        run_attack("attacker", run_step("R", "R1", weights="RA")),
        "WeightAccountOfAnotherModel",
    ),
    "step the owner's run naming a sealed model's weight account as its section": (
        run_attack("attacker", run_step("R", "R1", weights="D")),
        "WeightAccountOfAnotherModel",
    ),
    "step the attacker's run naming the owner's model": (
        run_attack("attacker", run_step("R", "A1", expected=0)),
        "RunOfAnotherModel",
    ),
    "open a run of R naming RA's section zero": (open_on("R", "RA"), "WrongWeightAccount"),
}

CASES: Cases = {**FOREIGN_SIGNER, **OUT_OF_ORDER, **SWAPPED}
ROWS = {
    "hostile: another keypair writes, begins, reopens, closes or binds; closes a run": (
        FOREIGN_SIGNER
    ),
    "hostile: instructions out of order (runs: stale, early, finished, closed)": OUT_OF_ORDER,
    "hostile: weight accounts swapped between models (runs of another model)": SWAPPED,
}
"""docs/reliability.md's table rows (scripts/reliability_report.py), by the cases each counts."""


REPLAYED = "hostile: a landed transaction replayed (all 8 instructions, with and without preflight)"
RESIGNED = "hostile: create or create-and-bind signed afresh for an existing account"
TAMPERED = "hostile: a signed transaction with its data changed"
FOREIGN_CLI = "hostile: close or seal through the CLI with another keypair"
AFTERWARDS = "hostile: after all of it, the victim seals (a stranger cranks) and verifies"


def row_of(case: str) -> str:
    return next(row for row, cases in ROWS.items() if case in cases)


# -- running an attack ---------------------------------------------------------------------


def snapshot(world: World) -> dict[str, tuple[int, str, str]]:
    """Every watched account: lamports, owner and a digest of its data."""

    async def work(client: RpcClient) -> dict[str, tuple[int, str, str]]:
        keys = world.watched()
        out = {}
        for key, info in zip(keys, await client.accounts(keys, head=0), strict=True):
            data = await client.account(key) if info is not None else None
            out[str(key)] = (
                (0, "", "")
                if data is None
                else (data.lamports, str(data.owner), hashlib.sha256(data.data).hexdigest())
            )
        return out

    # Processed: a landed refusal raises as soon as the node has it, and its fee counts.
    return on_chain(world.url, work, "processed")


def sign(attack: Attack, blockhash: Hash) -> Transaction:
    message = Message.new_with_blockhash(attack.instructions, attack.payer.pubkey(), blockhash)
    return Transaction([attack.payer, *attack.signers], message, blockhash)


@pytest.mark.parametrize("mode", ["preflight", "landed"])
@pytest.mark.parametrize("case", list(CASES))
def test_refused_with_its_named_error_and_nothing_changes(world: World, case: str, mode: str):
    build, name = CASES[case]
    attack = build(world)
    before = snapshot(world)

    async def work(client: RpcClient) -> tuple[BaseException, int]:
        blockhash, _ = await client.latest_blockhash()
        tx = sign(attack, blockhash)
        fee = await client.fee_for_message(tx.message)
        with pytest.raises(ProgramError) as refused:
            if mode == "preflight":
                await send_checked(client, bytes(tx))
            else:  # as the sender sends: it lands, fails in the program and pays its fee
                await wait_for_signature(client, await send_raw(client, bytes(tx), False))
        return refused.value, fee

    error, fee = on_chain(world.url, work)
    assert isinstance(error, ProgramError)
    assert error.name == name, str(error)
    assert program.error_name(error.code or 0) == name
    after = snapshot(world)
    payer = str(attack.payer.pubkey())
    if mode == "landed":
        lamports, owner, data = before[payer]
        before[payer] = (lamports - fee, owner, data)
    assert after == before
    record(row_of(case), lost_lamports=0, resent_bytes=0, refused_fee=fee * (mode == "landed"))


# -- replayed and tampered transactions ----------------------------------------------------


async def send_raw(client: RpcClient, wire: bytes, preflight: bool) -> str:
    """Send signed bytes as they are: with preflight through ``send_checked``, else skipped."""
    if preflight:
        return await send_checked(client, wire)
    return await client.send_transaction(wire, preflight=False)


async def landed(
    client: RpcClient, payer: Keypair, *instructions: Instruction, signers=()
) -> bytes:
    """Sign, send with preflight, wait for it; return the transaction's bytes for replay."""
    blockhash, _ = await client.latest_blockhash()
    tx = Transaction([payer, *signers], Message(instructions, payer.pubkey()), blockhash)
    signature = await send_checked(client, bytes(tx))
    await wait_for_signature(client, signature)
    return bytes(tx)


async def chain_view(client: RpcClient, keys: Sequence[Pubkey]) -> list[Any]:
    """Lamports, owner and bytes of each key (None where absent), as processed."""
    reader = RpcClient(HttpTransport(client.url), "processed")
    try:
        infos = [await reader.account(key) for key in keys]
    finally:
        await reader.aclose()
    return [None if i is None else (i.lamports, i.owner, i.data) for i in infos]


def test_every_lifecycle_transaction_replayed_is_already_processed_and_runs_once(world: World):
    owner = world.owner
    sealed, failed = (Keypair(), [Keypair(), Keypair()]), (Keypair(), [Keypair(), Keypair()])
    sections = [os.urandom(2_000), os.urandom(700)]
    lengths = [len(s) for s in sections]
    declared = list(hash_steps(sections))[-1].running
    keys = [owner.pubkey()]
    for model, weights in (sealed, failed):
        keys += [model.pubkey(), *(w.pubkey() for w in weights)]

    async def publish_and_seal(client: RpcClient, model: Keypair, weights, declared) -> list:
        """Create, bind, write, begin and seal, one landed transaction each; their bytes."""
        me = owner.pubkey()
        rent = await client.rent_exempt_minimum(program.MODEL_ACCOUNT_SIZE)
        funding = NewAccount(model.pubkey(), program.MODEL_ACCOUNT_SIZE, rent)
        spec = txs(owner).create_model(model, declared, lengths, funding)
        wires = [await landed(client, owner, *spec.instructions, signers=[model])]
        for i, weight in enumerate(weights):
            rent = await client.rent_exempt_minimum(WEIGHT_HEADER_SIZE + lengths[i])
            funding = NewAccount(weight.pubkey(), WEIGHT_HEADER_SIZE + lengths[i], rent)
            spec = txs(owner).bind(model.pubkey(), weight, i, funding)
            wires.append(await landed(client, owner, *spec.instructions, signers=[weight]))
        # Two writes to the same bytes: the first is overwritten, then replayed below.
        first = await landed(client, owner, write(P, me, weights[0].pubkey(), 0, b"stale"))
        wires.append(first)
        for i, section in enumerate(sections):
            for at in range(0, len(section), 900):
                piece = section[at : at + 900]
                wires.append(
                    await landed(client, owner, write(P, me, weights[i].pubkey(), at, piece))
                )
        wires.append(await landed(client, owner, begin(P, me, model.pubkey())))
        for weight in weights:  # one chunk per section
            wires.append(await landed(client, owner, step(P, model.pubkey(), weight.pubkey())))
        return wires

    async def work(client: RpcClient) -> None:
        me = owner.pubkey()
        wires = await publish_and_seal(client, *sealed, declared)
        assert (await read(client, sealed[0].pubkey())).state == ModelState.SEALED
        wires += await publish_and_seal(client, *failed, bytes(32))
        address, accounts = failed[0].pubkey(), [w.pubkey() for w in failed[1]]
        assert (await read(client, address)).state == ModelState.FAILED
        for i, account in enumerate(accounts):
            wires.append(await landed(client, owner, reopen(P, me, address, account, i)))
        assert (await read(client, address)).state == ModelState.UPLOADING
        for i, account in enumerate(accounts):
            wires.append(await landed(client, owner, close_weight(P, me, address, account, i)))
        wires.append(await landed(client, owner, close(P, me, address)))
        assert await client.account(address) is None

        before = await chain_view(client, keys)
        statuses = await client.signature_statuses([_signature(w) for w in wires])
        for wire in wires:
            with pytest.raises(ChainError, match="AlreadyProcessed"):
                await send_raw(client, wire, preflight=True)
            assert await send_raw(client, wire, preflight=False) == _signature(wire)
        assert await client.signature_statuses([_signature(w) for w in wires]) == statuses
        assert await chain_view(client, keys) == before
        head = await client.account_data(sealed[1][0].pubkey(), WEIGHT_HEADER_SIZE, 5)
        assert head == sections[0][:5]
        for _ in wires:
            record(REPLAYED, lost_lamports=0, resent_bytes=0)

    on_chain(world.url, work)


def _signature(wire: bytes) -> str:
    return str(Transaction.from_bytes(wire).signatures[0])


def test_the_same_steps_signed_afresh_are_refused_and_no_rent_is_taken_twice(world: World):
    owner = world.owner
    sections = [os.urandom(1_000), os.urandom(300)]
    lengths = [len(s) for s in sections]

    async def work(client: RpcClient) -> None:
        declared = list(hash_steps(sections))[-1].running
        built = await make_model(Sender(client, owner), sections, declared=declared, bind=[0])
        rent = await client.rent_exempt_minimum(program.MODEL_ACCOUNT_SIZE)
        # A compute-unit limit makes these other transactions than the landed ones: the
        # same instructions under the same blockhash would be the same signature.
        fresh = txs(owner, Budget(limit_compute=True))
        funding = NewAccount(built.address, program.MODEL_ACCOUNT_SIZE, rent)
        again = fresh.create_model(built.key, declared, lengths, funding)
        rent_w = await client.rent_exempt_minimum(WEIGHT_HEADER_SIZE + lengths[0])
        funding = NewAccount(built.accounts[0], WEIGHT_HEADER_SIZE + lengths[0], rent_w)
        rebind = fresh.bind(built.address, built.weights[0], 0, funding)
        keys = [owner.pubkey(), built.address, *built.accounts]
        for spec in (again, rebind):
            before = await chain_view(client, keys)
            blockhash, _ = await client.latest_blockhash()
            tx = Transaction(
                [owner, *spec.signers], Message(spec.instructions, owner.pubkey()), blockhash
            )
            fee = await client.fee_for_message(tx.message)
            with pytest.raises(ChainError) as refused:
                await land(client, owner, [spec])
            # The System Program refuses to create an account twice: AccountAlreadyInUse.
            index = len(spec.instructions) - 2
            assert str(refused.value) == (
                f"instruction {index} failed: custom program error 0, not a curta program error"
            )
            after = await chain_view(client, keys)
            lamports, *rest = before[0]
            assert after == [(lamports - fee, *rest), *before[1:]]
            record(RESIGNED, lost_lamports=0, resent_bytes=0, refused_fee=fee)

    on_chain(world.url, work)


def test_a_tampered_transaction_is_dropped_by_signature_check(world: World):
    owner = world.owner
    target = world.models["A"].accounts[0]

    async def work(client: RpcClient) -> None:
        blockhash, _ = await client.latest_blockhash()
        ix = write(P, owner.pubkey(), target, 0, b"good")
        tx = Transaction([owner], Message([ix], owner.pubkey()), blockhash)
        wire = bytearray(bytes(tx))
        wire[wire.rindex(b"good") : wire.rindex(b"good") + 4] = b"evil"
        before = await chain_view(client, [owner.pubkey(), target])
        # agave's preflight reports the failed check as a failed simulation (-32002).
        with pytest.raises(ChainError, match="transaction failed: SignatureFailure") as refused:
            await send_raw(client, bytes(wire), preflight=True)
        node_said = refused.value.__cause__
        assert isinstance(node_said, RpcCallError) and node_said.code == -32002
        signature = await send_raw(client, bytes(wire), preflight=False)
        assert await client.signature_statuses([signature]) == [None]
        assert await chain_view(client, [owner.pubkey(), target]) == before
        record(TAMPERED, lost_lamports=0, resent_bytes=0)

    on_chain(world.url, work)


# -- through the CLI, and the victim afterwards -------------------------------------------


def test_the_cli_with_another_keypair_stops_before_spending(world: World, capsys, tmp_path: Path):
    path = tmp_path / "attacker.json"
    write_keypair(world.attacker, path)
    # B: uploading, the owner's, and no test ever changes it.
    a, owner = world.models["B"].address, world.owner.pubkey()
    before = snapshot(world)
    expected = {
        "close": f"error: model {a} belongs to {owner}; pass its keypair\n",
        "seal": f"error: model {a} is still uploading and only its authority {owner} can begin "
        "sealing; pass its keypair with -k\n",
    }
    for command, message in expected.items():
        capsys.readouterr()
        code = main([command, str(a), "-u", world.url, "-k", str(path)])
        out, err = capsys.readouterr()
        assert (code, out, err) == (1, "", message)
    assert snapshot(world) == before
    for _ in expected:
        record(FOREIGN_CLI, lost_lamports=0, resent_bytes=0)


async def land_every_attack(client: RpcClient, world: World) -> None:
    """Land every case of the refusal table, all at once: each is refused by its name.

    What the last test comes after, whatever ran before it (or did not). It returns once
    every refusal is confirmed, so the fees they cost show in confirmed balances.
    """
    blockhash, _ = await client.latest_blockhash()
    expected: dict[str, str] = {}
    for build, name in CASES.values():
        expected[await send_raw(client, bytes(sign(build(world), blockhash)), False)] = name
    signatures = list(expected)
    while True:
        statuses = await client.signature_statuses(signatures)
        if all(s is not None and s.confirmation in ("confirmed", "finalized") for s in statuses):
            break
        await asyncio.sleep(0.05)
    refused = [program.transaction_error(s.err) for s in statuses if s is not None]
    assert [getattr(e, "name", None) for e in refused] == list(expected.values())


RUN_AFTERWARDS = "hostile: after all of it, the owner's run goes on to its end, mirrored"


def test_after_every_attack_the_run_ends_and_the_victim_seals_while_a_stranger_cranks(
    world: World,
):
    # The only test that changes the victims (A sealed, R1 finished): it comes last.
    a, mirror = world.models["A"], world.mirror
    assert mirror is not None

    async def work(client: RpcClient) -> None:
        await land_every_attack(client, world)
        info = await client.account(world.runs["R1"].pubkey())
        assert info is not None
        mirror.compare(info.data, mirror.header)  # nothing the attacks did changed it
        # The attacker may crank it too (anyone may): he can only compute the same tokens.
        await crank(Sender(client, world.attacker), world.models["R"], world.runs["R1"], mirror)
        assert mirror.header.state == RunState.FINISHED
        record(RUN_AFTERWARDS, lost_lamports=0, resent_bytes=0)

        model = await read(client, a.address)
        assert (model.state, model.bound_count, model.chunks_hashed) == (ModelState.UPLOADING, 2, 0)
        # Nothing the attacks did left a byte to rewrite: a rerun of publish plans nothing.
        plan = await plan_publish(ChainContext(client, P, world.owner), world.art)
        assert (plan.model, plan.transactions) == (a.address, 0)
        # The owner begins sealing; the attacker cranks every step (sealStep is open to
        # anyone) and can only produce the hash the bytes give.
        owner_before = await client.balance(world.owner.pubkey())
        await land(client, world.owner, [TxSpec((begin(P, world.owner.pubkey(), a.address),))])
        result = await seal(ChainContext(client, P, world.attacker), a.address, world.art)
        assert result.state == ModelState.SEALED
        assert result.running_hash == world.art.weights_hash()
        assert await client.balance(world.owner.pubkey()) == owner_before - 5_000
        report = await verify(client, P, a.address, world.art)
        assert report.ok, report.differences
        record(AFTERWARDS, lost_lamports=0, resent_bytes=0)

    on_chain(world.url, work)


def test_a_reseal_after_a_reopen_within_one_slot_is_not_taken_for_a_replay():
    # Slots of 1 s: without each sender starting on a fresh blockhash (sender.py), the
    # second begin sealing here would be signed under the first one's blockhash, be the same
    # transaction, and be taken for its replay: the seal would stop with the model still
    # uploading ("the model is uploading ... 2 chunks remain").
    handle = start_in_thread(slot_duration=1.0)
    try:

        async def work(client: RpcClient) -> None:
            owner = Keypair()
            signature = await client.request_airdrop(owner.pubkey(), 10 * LAMPORTS_PER_SOL)
            await wait_for_signature(client, signature)
            sections = [os.urandom(1_000), os.urandom(300)]
            model = await make_model(Sender(client, owner), sections)
            first, me = sections[0][:1], owner.pubkey()
            flipped = bytes([first[0] ^ 1])
            await land(client, owner, [TxSpec((write(P, me, model.accounts[0], 0, flipped),))])
            ctx = ChainContext(client, P, owner)
            assert (await seal(ctx, model.address)).state == ModelState.FAILED
            fix = [
                TxSpec((reopen(P, me, model.address, w, i),)) for i, w in enumerate(model.accounts)
            ]
            await land(client, owner, [*fix, TxSpec((write(P, me, model.accounts[0], 0, first),))])
            assert (await seal(ctx, model.address)).state == ModelState.SEALED

        async def run() -> None:
            client = RpcClient(HttpTransport(handle.url), "processed")
            try:
                await work(client)
            finally:
                await client.aclose()

        asyncio.run(run())
    finally:
        handle.stop()
