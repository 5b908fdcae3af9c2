"""A hostile chain: foreign signers, replays, reordered and swapped transactions, over HTTP.

One embedded localnet serves the whole module. An owner publishes stories260K with the
real ``publish`` (left uploading) and a set of small models in every state; an attacker
holds funds and a model of his own. Each refusal case is sent twice: once with preflight
(``RpcClient.send_checked``), which must raise the program's error named from the IDL and
charge nobody, and once without (the ``Sender``, as publish sends), where the transaction
lands, fails with the same named error, and its fee payer pays exactly the fee. In both,
every model and weight account keeps its lamports, owner and bytes. The last test has the
owner seal and verify stories260K after all of it.
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
from curta_chain.artifact import Artifact, hash_steps
from curta_chain.chain import specs
from curta_chain.chain.cluster import write_keypair
from curta_chain.chain.plan import model_keypair, weight_keypair
from curta_chain.chain.publish import plan_publish, publish
from curta_chain.chain.rpc import RpcCallError, RpcClient
from curta_chain.chain.seal import seal
from curta_chain.chain.sender import Sender, TxSpec, wait_for_signature
from curta_chain.chain.transport import HttpTransport
from curta_chain.chain.verify import verify
from curta_chain.cli import main
from curta_chain.constants import LAMPORTS_PER_SOL, LOCALNET_PROGRAM_ID, WEIGHT_HEADER_SIZE
from curta_chain.errors import ChainError, ProgramError
from curta_chain.localnet import start_in_thread
from curta_chain.program import ModelAccount, ModelState

PROGRAM_ID = Pubkey.from_string(LOCALNET_PROGRAM_ID)
BUDGET = specs.Budget()
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

    def watched(self) -> list[Pubkey]:
        keys = [self.owner.pubkey(), self.attacker.pubkey()]
        for model in self.models.values():
            keys += [model.address, *model.accounts]
        return keys


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
    create = specs.create_model_spec(
        PROGRAM_ID, authority, model.key, declared, lengths, rent, BUDGET
    )
    await sender.send([create])
    bound = range(len(sections)) if bind is None else bind
    binds = []
    for i in bound:
        rent = await client.rent_exempt_minimum(WEIGHT_HEADER_SIZE + lengths[i])
        binds.append(
            specs.bind_spec(
                PROGRAM_ID, authority, model.address, model.weights[i], i, lengths[i], rent, BUDGET
            )
        )
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
        begin = program.begin_sealing(PROGRAM_ID, authority.pubkey(), model.address, model.accounts)
        await sender.send([TxSpec((begin,))])
    if state in (ModelState.SEALED, ModelState.FAILED):
        for index, step in enumerate(hash_steps(sections)):
            account = model.accounts[step.section]
            spec = specs.seal_step_spec(PROGRAM_ID, model.address, account, index, BUDGET)
            await sender.send([spec])
    assert (await read(client, model.address)).state == state
    return model


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


@pytest.fixture(scope="module")
def world(stories260k: Artifact) -> Iterator[World]:
    """The owner's models, by role, and the attacker's.

    A: stories260K, published by ``publish``, uploading (the victim). B: A's section
    lengths, all zeros, bound, uploading. S, S2: small, the same lengths, sealing. D: small,
    sealed. F: small, failed. U: small, slot 1 unbound. The attacker's C (sealing, S's
    lengths) and CU (slot 1 unbound).
    """
    handle = start_in_thread()
    try:
        world = World(handle.url, airdrop(handle.url, 100), airdrop(handle.url, 100), stories260k)

        async def build(client: RpcClient) -> None:
            owner, attacker = world.owner, world.attacker
            owner_sends, attacker_sends = Sender(client, owner), Sender(client, attacker)
            # The victim: stories260K through the real publish path, left uploading.
            plan = await plan_publish(client, PROGRAM_ID, owner, stories260k, BUDGET)
            await publish(client, PROGRAM_ID, owner, stories260k, plan, BUDGET, sender=owner_sends)
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


P = PROGRAM_ID
write, begin, step = program.write_weights, program.begin_sealing, program.seal_step
reopen, close, bind = program.reopen, program.close_model, program.bind_weight_account

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
        by_attacker(lambda m, me: begin(P, me, m["A"].address, m["A"].accounts)),
        "WrongAuthority",
    ),
    "attacker begins sealing naming the owner without its signature": (
        as_owner_unsigned(lambda m, me: begin(P, me, m["A"].address, m["A"].accounts)),
        "MissingSignature",
    ),
    "attacker reopens the owner's failed model": (
        by_attacker(lambda m, me: reopen(P, me, m["F"].address, m["F"].accounts)),
        "WrongAuthority",
    ),
    "attacker closes the owner's model to himself": (
        by_attacker(lambda m, me: close(P, me, m["A"].address, m["A"].accounts)),
        "WrongAuthority",
    ),
    "attacker closes the owner's failed model to himself": (
        by_attacker(lambda m, me: close(P, me, m["F"].address, m["F"].accounts)),
        "WrongAuthority",
    ),
    "attacker closes the owner's model naming the owner without its signature": (
        as_owner_unsigned(lambda m, me: close(P, me, m["A"].address, m["A"].accounts)),
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
        by_attacker(lambda m, me: step(P, m["S"].address, m["C"].accounts[0])),
        "WrongWeightAccount",
    ),
    "owner writes into the attacker's weight account": (
        by_owner(lambda m, me: write(P, me, m["CU"].accounts[0], 0, b"x")),
        "WrongAuthority",
    ),
}

OUT_OF_ORDER: Cases = {
    "begin sealing before every slot is bound": (
        by_owner(lambda m, me: begin(P, me, m["U"].address, m["U"].accounts[:1])),
        "UnboundSlot",
    ),
    "begin sealing naming an unbound slot's account": (
        by_owner(lambda m, me: begin(P, me, m["U"].address, m["U"].accounts)),
        "UnboundSlot",
    ),
    "begin sealing twice": (
        by_owner(lambda m, me: begin(P, me, m["S"].address, m["S"].accounts)),
        "ModelNotUploading",
    ),
    "write after begin sealing": (
        by_owner(lambda m, me: write(P, me, m["S"].accounts[0], 0, b"late")),
        "WeightAccountFrozen",
    ),
    "write into a sealed model": (
        by_owner(lambda m, me: write(P, me, m["D"].accounts[1], 0, b"late")),
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
    "seal step naming the next section's account": (
        by_attacker(lambda m, me: step(P, m["S"].address, m["S"].accounts[1])),
        "WrongWeightAccount",
    ),
    "seal step after the last": (
        by_attacker(lambda m, me: step(P, m["D"].address, m["D"].accounts[1])),
        "ModelNotSealing",
    ),
    "begin sealing with the weight accounts in swapped order": (
        by_owner(lambda m, me: begin(P, me, m["B"].address, m["B"].accounts[::-1])),
        "WrongWeightAccount",
    ),
    "reopen a model that is sealing": (
        by_owner(lambda m, me: reopen(P, me, m["S"].address, m["S"].accounts)),
        "ModelNotFailed",
    ),
    "reopen a sealed model": (
        by_owner(lambda m, me: reopen(P, me, m["D"].address, m["D"].accounts)),
        "ModelSealed",
    ),
    "close a sealed model": (
        by_owner(lambda m, me: close(P, me, m["D"].address, m["D"].accounts)),
        "ModelSealed",
    ),
    "bind a second account into a bound slot": (bind_fresh("owner", "B", 0), "SlotAlreadyBound"),
}

SWAPPED: Cases = {
    "begin sealing A with B's weight accounts (same lengths)": (
        by_owner(lambda m, me: begin(P, me, m["A"].address, m["B"].accounts)),
        "WrongWeightAccount",
    ),
    "begin sealing A with B's section 1 account": (
        by_owner(
            lambda m, me: begin(P, me, m["A"].address, [m["A"].accounts[0], m["B"].accounts[1]])
        ),
        "WrongWeightAccount",
    ),
    "seal step of S with S2's account (same lengths, both sealing)": (
        by_attacker(lambda m, me: step(P, m["S"].address, m["S2"].accounts[0])),
        "WrongWeightAccount",
    ),
    "reopen F with S's weight accounts": (
        by_owner(lambda m, me: reopen(P, me, m["F"].address, m["S"].accounts)),
        "WrongWeightAccount",
    ),
    "close A with B's weight accounts": (
        by_owner(lambda m, me: close(P, me, m["A"].address, m["B"].accounts)),
        "WrongWeightAccount",
    ),
    "close B with A's section 1 account": (
        by_owner(
            lambda m, me: close(P, me, m["B"].address, [m["B"].accounts[0], m["A"].accounts[1]])
        ),
        "WrongWeightAccount",
    ),
    "bind S2's bound account into U's free slot (same length)": (
        bind_bound("S2"),
        "AccountNotFresh",
    ),
    "bind B's bound account into U's free slot (another length)": (
        bind_bound("B"),
        "WrongAccountSize",
    ),
}

CASES: Cases = {**FOREIGN_SIGNER, **OUT_OF_ORDER, **SWAPPED}
ROWS = {
    "hostile: another keypair writes, begins, reopens, closes or binds": FOREIGN_SIGNER,
    "hostile: instructions out of order": OUT_OF_ORDER,
    "hostile: weight accounts swapped between models": SWAPPED,
}
"""The README table's rows (scripts/reliability_report.py), by the cases each counts."""


REPLAYED = "hostile: a landed transaction replayed (11 kinds, with and without preflight)"
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
                await client.send_checked(bytes(tx))
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
        return await client.send_checked(wire)
    return str(await client.call(*client.send_call(wire)))


async def landed(
    client: RpcClient, payer: Keypair, *instructions: Instruction, signers=()
) -> bytes:
    """Sign, send with preflight, wait for it; return the transaction's bytes for replay."""
    blockhash, _ = await client.latest_blockhash()
    tx = Transaction([payer, *signers], Message(instructions, payer.pubkey()), blockhash)
    signature = await client.send_checked(bytes(tx))
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
    model, weights = Keypair(), [Keypair(), Keypair()]
    sections = [os.urandom(2_000), os.urandom(700)]
    lengths = [len(s) for s in sections]
    declared = list(hash_steps(sections))[-1].running
    keys = [owner.pubkey(), model.pubkey(), *(w.pubkey() for w in weights)]

    async def work(client: RpcClient) -> None:
        me = owner.pubkey()
        rent = await client.rent_exempt_minimum(program.MODEL_ACCOUNT_SIZE)
        spec = specs.create_model_spec(P, owner, model, declared, lengths, rent, BUDGET)
        wires = [await landed(client, owner, *spec.instructions, signers=[model])]
        for i, weight in enumerate(weights):
            rent = await client.rent_exempt_minimum(WEIGHT_HEADER_SIZE + lengths[i])
            spec = specs.bind_spec(P, owner, model.pubkey(), weight, i, lengths[i], rent, BUDGET)
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
        accounts = [w.pubkey() for w in weights]
        wires.append(await landed(client, owner, begin(P, me, model.pubkey(), accounts)))
        for account in accounts:  # one chunk per section
            wires.append(await landed(client, owner, step(P, model.pubkey(), account)))
        assert (await read(client, model.pubkey())).state == ModelState.SEALED

        before = await chain_view(client, keys)
        statuses = await client.signature_statuses([_signature(w) for w in wires])
        for wire in wires:
            with pytest.raises(ChainError, match="AlreadyProcessed"):
                await send_raw(client, wire, preflight=True)
            assert await send_raw(client, wire, preflight=False) == _signature(wire)
        assert await client.signature_statuses([_signature(w) for w in wires]) == statuses
        assert await chain_view(client, keys) == before
        assert (await client.account_data(weights[0].pubkey(), WEIGHT_HEADER_SIZE, 5)) == (
            sections[0][:5]
        )
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
        fresh = specs.Budget(limit_compute=True)
        again = specs.create_model_spec(P, owner, built.key, declared, lengths, rent, fresh)
        rent_w = await client.rent_exempt_minimum(WEIGHT_HEADER_SIZE + lengths[0])
        rebind = specs.bind_spec(
            P, owner, built.address, built.weights[0], 0, lengths[0], rent_w, fresh
        )
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
        with pytest.raises(RpcCallError) as refused:
            await send_raw(client, bytes(wire), preflight=True)
        assert refused.value.code == -32003
        signature = await send_raw(client, bytes(wire), preflight=False)
        assert await client.signature_statuses([signature]) == [None]
        assert await chain_view(client, [owner.pubkey(), target]) == before
        record(TAMPERED, lost_lamports=0, resent_bytes=0)

    on_chain(world.url, work)


# -- through the CLI, and the victim afterwards -------------------------------------------


def test_the_cli_with_another_keypair_stops_before_spending(world: World, capsys, tmp_path: Path):
    path = tmp_path / "attacker.json"
    write_keypair(world.attacker, path)
    a, owner = world.models["A"].address, world.owner.pubkey()
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


def test_after_every_attack_the_owner_seals_and_verifies_while_a_stranger_cranks(world: World):
    a = world.models["A"]

    async def work(client: RpcClient) -> None:
        model = await read(client, a.address)
        assert (model.state, model.bound_count, model.chunks_hashed) == (ModelState.UPLOADING, 2, 0)
        # Nothing the attacks did left a byte to rewrite: a rerun of publish plans nothing.
        plan = await plan_publish(client, P, world.owner, world.art, BUDGET)
        assert (plan.model, plan.transactions) == (a.address, 0)
        # The owner begins sealing; the attacker cranks every step (sealStep is open to
        # anyone) and can only produce the hash the bytes give.
        owner_before = await client.balance(world.owner.pubkey())
        await land(
            client, world.owner, [TxSpec((begin(P, world.owner.pubkey(), a.address, a.accounts),))]
        )
        result = await seal(client, P, world.attacker, a.address, world.art)
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
            assert (await seal(client, P, owner, model.address)).state == ModelState.FAILED
            fix = (reopen(P, me, model.address, model.accounts),)
            await land(
                client, owner, [TxSpec(fix), TxSpec((write(P, me, model.accounts[0], 0, first),))]
            )
            assert (await seal(client, P, owner, model.address)).state == ModelState.SEALED

        async def run() -> None:
            client = RpcClient(HttpTransport(handle.url), "processed")
            try:
                await work(client)
            finally:
                await client.aclose()

        asyncio.run(run())
    finally:
        handle.stop()
