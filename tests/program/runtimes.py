"""The runtimes the program is tried in, behind one interface, and what tests do in them.

- ``SoldersRuntime``: solders 0.29's LiteSVM (Agave 4.1, solana-sbpf 0.21), in-process.
- ``NodeRuntime``: npm ``litesvm`` 1.5 (Agave 4.3, solana-sbpf 0.23) in a Node process that
  ``tests/litesvm_node/runner.mjs`` drives; its ``node_modules`` come from ``npm ci`` there.

Python builds and signs every transaction with the package's own builders, so the lifecycle
is written once and the same kind of transactions run in both. Features are named, never
identified by a bare id: ``Runtime.feature(name)`` gives the id from
``curta_chain.chain.features`` only when this runtime's feature set has it, so a test that
turns a feature off or expects its effect follows whichever runtime version it runs on.

``Session`` is a payer in a runtime: it signs and sends, creates accounts, deploys an ELF
through the upgradeable loader (InitializeBuffer, Write, DeployWithMaxDataLen) and reads
the curta accounts back. ``publish`` and ``seal`` put a model on chain there by real
transactions, as ``curta-chain publish`` and ``seal`` do.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import struct
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from solders.account import Account
from solders.hash import Hash
from solders.instruction import AccountMeta, Instruction
from solders.keypair import Keypair
from solders.litesvm import FeatureSet, LiteSVM
from solders.message import Message
from solders.pubkey import Pubkey
from solders.system_program import ID as SYSTEM_PROGRAM
from solders.system_program import CreateAccountParams, create_account
from solders.sysvar import CLOCK, RENT
from solders.transaction import Transaction
from svm_errors import custom_error_code

from curta_chain.artifact import hash_steps
from curta_chain.constants import WEIGHT_HEADER_SIZE
from curta_chain.program import (
    MAX_WRITE_PAYLOAD,
    MODEL_ACCOUNT_SIZE,
    ModelAccount,
    ModelState,
    begin_sealing,
    bind_weight_account,
    create_model,
    error_name,
    seal_step,
    shipped_program,
    write_weights,
)
from curta_chain.protocol.features import FEATURE_IDS

NODE_RUNNER_DIR = Path(__file__).resolve().parents[1] / "litesvm_node"
NODE = shutil.which("node")
LOADER_V3 = Pubkey.from_string("BPFLoaderUpgradeab1e11111111111111111111111")
BUFFER_METADATA = 37  # UpgradeableLoaderState::Buffer: tag (4) + Option<authority> (33)
PROGRAM_ACCOUNT = 36  # UpgradeableLoaderState::Program: tag (4) + programdata address (32)
PROGRAMDATA_METADATA = 45  # ::ProgramData: tag (4) + slot (8) + Option<authority> (33)
WRITE_CHUNK = 900
"""ELF bytes per loader Write: the transaction stays under 1,232 bytes."""
PAYER_LAMPORTS = 10_000 * 10**9
FEATURES = dict(FEATURE_IDS)
"""Every feature the tests name: the client's (``FEATURE_IDS``)."""


def node_runner_missing() -> str | None:
    """Why the Node runtime cannot start here (None when it can)."""
    if NODE is None:
        return "node is not installed (.ci/run apt-installs nodejs npm)"
    if not (NODE_RUNNER_DIR / "node_modules" / "litesvm").is_dir():
        return f"run `npm ci` in {NODE_RUNNER_DIR} (scripts/setup.sh does)"
    return None


@dataclass
class Outcome:
    """What one transaction did in a runtime."""

    ok: bool
    error: str | None
    code: int | None
    units: int
    logs: list[str]

    @property
    def name(self) -> str | None:
        """The IDL name of the program's custom error, if it returned one."""
        return error_name(self.code) if self.code is not None else None

    def program_units(self, program_id: Pubkey) -> int:
        """The compute units ``program_id`` itself consumed (its "consumed N of M" lines)."""
        pattern = re.compile(rf"Program {program_id} consumed (\d+) of")
        return sum(int(m.group(1)) for line in self.logs if (m := pattern.match(line)))


@dataclass(frozen=True)
class AccountState:
    lamports: int
    owner: Pubkey
    executable: bool
    data: bytes


class Runtime:
    """One chain: what tests need from a runtime, whichever it is."""

    name: str
    known_features: frozenset[Pubkey]

    def feature(self, name: str) -> Pubkey | None:
        """The id of the feature ``name`` in this runtime, or None when it has no such feature."""
        feature_id = FEATURES[name]
        return feature_id if feature_id in self.known_features else None

    def blockhash(self) -> Hash:
        raise NotImplementedError

    def send(self, tx: Transaction) -> Outcome:
        raise NotImplementedError

    def account(self, key: Pubkey) -> AccountState | None:
        raise NotImplementedError

    def airdrop(self, key: Pubkey, lamports: int) -> None:
        raise NotImplementedError

    def add_program(self, program_id: Pubkey, elf: bytes) -> None:
        raise NotImplementedError

    def minimum_balance(self, size: int) -> int:
        raise NotImplementedError

    def slot(self) -> int:
        raise NotImplementedError

    def warp(self, slot: int) -> None:
        raise NotImplementedError

    def set_account(self, key: Pubkey, owner: Pubkey, data: bytes) -> None:
        """Put an account (rent-exempt, not executable) straight into the runtime's state."""
        raise NotImplementedError

    def close(self) -> None:
        """Release the runtime (the Node process)."""


def _without(runtime: Runtime, names: Iterable[str]) -> str:
    """ ", without a, b" for the named features this runtime has (and so turned off)."""
    off = [name for name in names if runtime.feature(name) is not None]
    return f", without {', '.join(off)}" if off else ""


class SoldersRuntime(Runtime):
    """solders' LiteSVM (Agave 4.1) with every feature on except those named."""

    def __init__(self, without: Iterable[str] = ()) -> None:
        active = FeatureSet.all_enabled().active
        self.known_features = frozenset(active)
        off = {fid for name in without if (fid := self.feature(name)) is not None}
        for fid in off:
            active.pop(fid)
        features = FeatureSet(active, off)
        self.name = "solders LiteSVM (Agave 4.1)" + _without(self, without)
        svm = LiteSVM.default().with_feature_set(features).with_builtins()
        svm._inner.set_precompiles()  # as LiteSVM() does; the wrapper has no with_ for it
        self.svm = svm.with_sysvars().with_lamports(10**18).with_transaction_history(0)

    def blockhash(self) -> Hash:
        return self.svm.latest_blockhash()

    def send(self, tx: Transaction) -> Outcome:
        meta = self.svm.send_transaction(tx)
        if hasattr(meta, "err"):
            inner = meta.meta()
            err = meta.err()
            return Outcome(
                False,
                str(err),
                custom_error_code(err),
                inner.compute_units_consumed(),
                list(inner.logs()),
            )
        return Outcome(True, None, None, meta.compute_units_consumed(), list(meta.logs()))

    def account(self, key: Pubkey) -> AccountState | None:
        account = self.svm.get_account(key)
        if account is None:
            return None
        return AccountState(
            account.lamports, account.owner, account.executable, bytes(account.data)
        )

    def airdrop(self, key: Pubkey, lamports: int) -> None:
        self.svm.airdrop(key, lamports)

    def add_program(self, program_id: Pubkey, elf: bytes) -> None:
        self.svm.add_program(program_id, elf)

    def minimum_balance(self, size: int) -> int:
        return self.svm.minimum_balance_for_rent_exemption(size)

    def slot(self) -> int:
        return self.svm.get_clock().slot

    def warp(self, slot: int) -> None:
        self.svm.warp_to_slot(slot)

    def set_account(self, key: Pubkey, owner: Pubkey, data: bytes) -> None:
        lamports = self.minimum_balance(len(data))
        self.svm.set_account(key, Account(lamports, data, owner, False, 0))


class NodeRuntimeError(RuntimeError):
    """The Node runner refused a request or died."""


class NodeRuntime(Runtime):
    """npm ``litesvm`` 1.5 (Agave 4.3) in a Node process: ``features`` is "mainnet" or "all"."""

    def __init__(self, features: str, without: Iterable[str] = ()) -> None:
        assert NODE is not None, node_runner_missing()
        self.process = subprocess.Popen(
            [NODE, str(NODE_RUNNER_DIR / "runner.mjs")],
            cwd=NODE_RUNNER_DIR,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self._next = 0
        known = self._call("init", features="all", deactivate=[])["known"]
        self.known_features = frozenset(Pubkey.from_string(k) for k in known)
        off = [str(fid) for name in without if (fid := self.feature(name)) is not None]
        self._call("init", features=features, deactivate=off)
        label = "every feature" if features == "all" else "its mainnet features"
        self.name = f"npm litesvm 1.5 (Agave 4.3), {label}" + _without(self, without)

    def _call(self, op: str, **args: object) -> object:
        assert self.process.stdin is not None and self.process.stdout is not None
        self._next += 1
        self.process.stdin.write(json.dumps({"id": self._next, "op": op, **args}) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise NodeRuntimeError(f"the Node runner exited ({self.process.wait()}) during {op}")
        answer = json.loads(line)
        if "error" in answer:
            raise NodeRuntimeError(f"{op}: {answer['error']}")
        return answer["result"]

    def blockhash(self) -> Hash:
        return Hash.from_string(self._call("blockhash"))

    def send(self, tx: Transaction) -> Outcome:
        result = self._call("send", tx=base64.b64encode(bytes(tx)).decode())
        return Outcome(
            result["ok"], result["error"], result["custom"], result["units"], result["logs"]
        )

    def account(self, key: Pubkey) -> AccountState | None:
        result = self._call("account", address=str(key))
        if result is None:
            return None
        return AccountState(
            int(result["lamports"]),
            Pubkey.from_string(result["owner"]),
            result["executable"],
            base64.b64decode(result["data"]),
        )

    def airdrop(self, key: Pubkey, lamports: int) -> None:
        self._call("airdrop", address=str(key), lamports=str(lamports))

    def add_program(self, program_id: Pubkey, elf: bytes) -> None:
        self._call("add_program", address=str(program_id), elf=base64.b64encode(elf).decode())

    def minimum_balance(self, size: int) -> int:
        return int(self._call("minimum_balance", size=size))

    def slot(self) -> int:
        return int(self._call("slot"))

    def warp(self, slot: int) -> None:
        self._call("warp", slot=str(slot))

    def set_account(self, key: Pubkey, owner: Pubkey, data: bytes) -> None:
        lamports = str(self.minimum_balance(len(data)))
        encoded = base64.b64encode(data).decode()
        self._call(
            "set_account", address=str(key), lamports=lamports, owner=str(owner), data=encoded
        )

    def close(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            self.process.wait(timeout=30)


@dataclass
class Deployment:
    """The end of a deploy: the program id, and the DeployWithMaxDataLen transaction's outcome."""

    program_id: Pubkey
    outcome: Outcome


@dataclass
class Session:
    """A funded payer in a runtime: signs, sends, creates accounts, deploys programs."""

    runtime: Runtime
    payer: Keypair = field(default_factory=Keypair)

    def __post_init__(self) -> None:
        self.runtime.airdrop(self.payer.pubkey(), PAYER_LAMPORTS)

    def send(self, ixs: Sequence[Instruction], signers: Sequence[Keypair] = ()) -> Outcome:
        everyone = [self.payer, *[s for s in signers if s.pubkey() != self.payer.pubkey()]]
        message = Message(list(ixs), self.payer.pubkey())
        return self.runtime.send(Transaction(everyone, message, self.runtime.blockhash()))

    def must(self, ixs: Sequence[Instruction], signers: Sequence[Keypair] = ()) -> Outcome:
        outcome = self.send(ixs, signers)
        assert outcome.ok, (self.runtime.name, outcome.error, outcome.logs)
        return outcome

    def new_account(self, key: Pubkey, size: int, owner: Pubkey) -> Instruction:
        return create_account(
            CreateAccountParams(
                from_pubkey=self.payer.pubkey(),
                to_pubkey=key,
                lamports=self.runtime.minimum_balance(size),
                space=size,
                owner=owner,
            )
        )

    def next_slot(self) -> None:
        """Move to the next slot: a deployed program runs from the slot after its deploy."""
        self.runtime.warp(self.runtime.slot() + 1)

    def deploy(self, elf: bytes) -> Deployment:
        """Deploy ``elf`` through the upgradeable loader; the buffer steps must succeed."""
        payer = self.payer.pubkey()
        buffer, program = Keypair(), Keypair()
        initialize = Instruction(
            LOADER_V3,
            struct.pack("<I", 0),
            [AccountMeta(buffer.pubkey(), False, True), AccountMeta(payer, False, False)],
        )
        size = BUFFER_METADATA + len(elf)
        self.must([self.new_account(buffer.pubkey(), size, LOADER_V3), initialize], [buffer])
        for offset in range(0, len(elf), WRITE_CHUNK):
            chunk = elf[offset : offset + WRITE_CHUNK]
            write = Instruction(
                LOADER_V3,
                struct.pack("<IIQ", 1, offset, len(chunk)) + chunk,
                [AccountMeta(buffer.pubkey(), False, True), AccountMeta(payer, True, False)],
            )
            self.must([write])
        programdata = programdata_address(program.pubkey())
        deploy = Instruction(
            LOADER_V3,
            struct.pack("<IQ", 2, len(elf)),
            [
                AccountMeta(payer, True, True),
                AccountMeta(programdata, False, True),
                AccountMeta(program.pubkey(), False, True),
                AccountMeta(buffer.pubkey(), False, True),
                AccountMeta(RENT, False, False),
                AccountMeta(CLOCK, False, False),
                AccountMeta(SYSTEM_PROGRAM, False, False),
                AccountMeta(payer, True, False),
            ],
        )
        create = self.new_account(program.pubkey(), PROGRAM_ACCOUNT, LOADER_V3)
        outcome = self.send([create, deploy], [program])
        if outcome.ok:
            self.next_slot()
        return Deployment(program.pubkey(), outcome)


def programdata_address(program_id: Pubkey) -> Pubkey:
    """Where the upgradeable loader keeps ``program_id``'s ELF."""
    return Pubkey.find_program_address([bytes(program_id)], LOADER_V3)[0]


def install(session: Session, build_name: str) -> Pubkey:
    """Deploy a shipped build; the program id. Where SIMD-0500 refuses new v0 deployments,
    the v0 build is added directly, as a program deployed before it (which still runs)."""
    elf = shipped_program(build_name).elf
    deployment = session.deploy(elf)
    if deployment.outcome.ok:
        session.next_slot()
        return deployment.program_id
    program_id = Pubkey.new_unique()
    session.runtime.add_program(program_id, elf)
    return program_id


@dataclass(frozen=True)
class OnChain:
    """A model published in a runtime: its account and its weight accounts, slot by slot."""

    model: Pubkey
    weights: list[Pubkey]

    @property
    def keys(self) -> list[Pubkey]:
        return [self.model, *self.weights]


def publish(session: Session, program_id: Pubkey, sections: Sequence[bytes]) -> OnChain:
    """Create, bind and write ``sections`` (their hash declared), then begin sealing."""
    authority = session.payer.pubkey()
    model = Keypair()
    weights = [Keypair() for _ in sections]
    lengths = [len(section) for section in sections]
    declared = list(hash_steps(sections))[-1].running
    create = create_model(program_id, authority, model.pubkey(), declared, lengths)
    session.must(
        [session.new_account(model.pubkey(), MODEL_ACCOUNT_SIZE, program_id), create], [model]
    )
    for index, (weight, section) in enumerate(zip(weights, sections, strict=True)):
        account = session.new_account(
            weight.pubkey(), WEIGHT_HEADER_SIZE + len(section), program_id
        )
        bind = bind_weight_account(program_id, authority, model.pubkey(), weight.pubkey(), index)
        session.must([account, bind], [weight])
        for offset in range(0, len(section), MAX_WRITE_PAYLOAD):
            piece = section[offset : offset + MAX_WRITE_PAYLOAD]
            session.must([write_weights(program_id, authority, weight.pubkey(), offset, piece)])
    session.must([begin_sealing(program_id, authority, model.pubkey())])
    return OnChain(model.pubkey(), [w.pubkey() for w in weights])


def model_state(runtime: Runtime, key: Pubkey) -> ModelAccount:
    return ModelAccount.from_bytes(runtime.account(key).data)


def seal(session: Session, program_id: Pubkey, published: OnChain) -> ModelAccount:
    """Crank the seal to its end, one step per chunk naming the cursor's account."""
    model = model_state(session.runtime, published.model)
    while model.state == ModelState.SEALING:
        weight = published.weights[model.cursor_section]
        session.must([seal_step(program_id, published.model, [weight], model.chunks_hashed)])
        model = model_state(session.runtime, published.model)
    return model


def publish_and_seal(session: Session, program_id: Pubkey, sections: Sequence[bytes]) -> OnChain:
    """``publish`` then ``seal``; the model must end sealed."""
    published = publish(session, program_id, sections)
    assert seal(session, program_id, published).state == ModelState.SEALED
    return published
