"""The same JSON-RPC requests to two nodes, their answers compared field by field.

``prepare(url, payer, artifact, folder)`` builds the same state on a node: the faucet funds
``payer`` (the same keypair everywhere), ``curta-chain publish`` puts a model on chain under
``LOCALNET_PROGRAM_ID`` (as a process), the faucet sends an airdrop below a new account's
rent-exempt minimum (it lands failed, ``InsufficientFundsForRent``, as agave's RPC sends it
without a preflight), and three transactions land: a transfer to a recipient derived from the
payer, a second one, and a call to the program that fails (its fee paid). Then every
request the client (``curta_chain/chain/rpc.py``), the SDK (``sdk/js/src/chain.ts``) and
the page (``sdk/js/web``) make, with the encodings, commitments, ``minContextSlot``,
``dataSlice`` and filters they pass, and the error
answers they must read (a bad signature, an unknown blockhash, an oversized transaction, a
program error, a slot not reached), is sent to both nodes (``probes``), and ``compare``
walks the two answers.

What must differ is allowed, and only that: slots, blockhashes, block heights and times,
a transaction's index in its block (``VOLATILE``: the value's type is compared, not the
value), the genesis hash and version.
Addresses and signatures differ between clusters too (each derived address includes the
genesis hash): each node's are replaced by names first (``Scenario.aliases``), in strings
and inside base64 account data, so that a model account's bytes compare equal where its
fields are.
"""

import base64
import hashlib
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from solders.hash import Hash
from solders.instruction import Instruction
from solders.keypair import Keypair
from solders.message import Message
from solders.pubkey import Pubkey
from solders.signature import Signature
from solders.system_program import TransferParams, transfer
from solders.transaction import Transaction

from curta_chain.constants import LAMPORTS_PER_SOL, LOCALNET_PROGRAM_ID, MAX_TRANSACTION_SIZE
from curta_chain.program import MODEL_ACCOUNT_SIZE
from curta_chain.program.accounts import MODEL_AUTHORITY_OFFSET, model_discriminator

PROGRAM = Pubkey.from_string(LOCALNET_PROGRAM_ID)
MISSING = Keypair.from_seed(hashlib.sha256(b"curta-chain conformance missing").digest())
"""An address that never holds an account."""
VOLATILE = frozenset(
    {
        "slot",
        "contextSlot",
        "blockhash",
        "recentBlockhash",
        "replacementBlockhash",
        "lastValidBlockHeight",
        "blockTime",
        "confirmations",
        "apiVersion",
        "transactionIndex",
    }
)
"""Keys whose values differ between any two nodes (and ``apiVersion``, the agave release a
node answers as: 2.2.0 for the embedded localnet): only their type is compared.
``transactionIndex`` counts the block's earlier transactions, the validator's own votes
among them, which land before or after a client's by chance (0 or 1 on the same node)."""
SMALL_AIRDROP = 1_000
"""Lamports of an airdrop to a new account: below its rent-exempt minimum (890,880)."""
FINALIZE_TIMEOUT = 120.0
"""Seconds the state may take to be finalized (32 slots)."""


def call(url: str, method: str, params: list[Any]) -> dict[str, Any]:
    """One JSON-RPC call; the whole answer (result or error)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    answer: dict[str, Any] = httpx.post(url, json=body, timeout=30).json()
    return answer


def result(url: str, method: str, params: list[Any]) -> Any:
    """One JSON-RPC call's result; a node's error is a test failure."""
    answer = call(url, method, params)
    assert "error" not in answer, f"{url} {method}: {answer['error']}"
    return answer["result"]


def wait_status(url: str, signature: str, level: str) -> dict[str, Any]:
    """Wait until ``signature``'s status reaches ``level``; return it."""
    rank = ["processed", "confirmed", "finalized"]
    deadline = time.monotonic() + FINALIZE_TIMEOUT
    while True:
        value = result(url, "getSignatureStatuses", [[signature]])["value"][0]
        if value and rank.index(value["confirmationStatus"]) >= rank.index(level):
            return dict(value)
        assert time.monotonic() < deadline, f"{signature} did not reach {level} on {url}"
        time.sleep(0.2)


@dataclass
class Scenario:
    """One node's state: its URL and the names of what differs only by cluster."""

    url: str
    payer: Keypair
    recipient: Keypair
    """Where the transfers go: derived from the payer, so the same on both nodes."""
    small: Keypair
    """Where the small airdrop goes: derived from the payer too."""
    model: str = ""
    weights: list[str] = field(default_factory=list)
    signatures: dict[str, str] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)
    """Address or signature -> the name both nodes' answers use for it."""

    def blockhash(self) -> Hash:
        """The node's latest blockhash (confirmed)."""
        value = result(self.url, "getLatestBlockhash", [{"commitment": "confirmed"}])["value"]
        return Hash.from_string(value["blockhash"])

    def signed(self, *instructions: Instruction, blockhash: Hash | None = None) -> bytes:
        """A transaction of ``instructions`` paid and signed by the payer."""
        message = Message.new_with_blockhash(
            list(instructions), self.payer.pubkey(), blockhash or self.blockhash()
        )
        return bytes(Transaction([self.payer], message, blockhash or self.blockhash()))

    def send(self, transaction: bytes, name: str, preflight: bool = True) -> str:
        """Send ``transaction``, wait until it is finalized; name its signature."""
        # Preflight in the bank the blockhash came from: a validator's finalized bank (the
        # default) does not know a confirmed blockhash yet (BlockhashNotFound).
        config: dict[str, Any] = {"encoding": "base64", "preflightCommitment": "confirmed"}
        config.update({} if preflight else {"skipPreflight": True})
        signature = str(
            result(self.url, "sendTransaction", [base64.b64encode(transaction).decode(), config])
        )
        wait_status(self.url, signature, "confirmed")
        self.signatures[name] = signature
        self.aliases[signature] = f"<{name}>"
        return signature


def pay(scenario: Scenario, lamports: int) -> Instruction:
    """A transfer from the payer to the fixed recipient."""
    params = TransferParams(
        from_pubkey=scenario.payer.pubkey(),
        to_pubkey=scenario.recipient.pubkey(),
        lamports=lamports,
    )
    return transfer(params)


def unknown_instruction() -> Instruction:
    """A call to the curta program with a discriminator it does not know: a program error."""
    return Instruction(PROGRAM, bytes(8), [])


def prepare(url: str, payer: Keypair, artifact: Path, folder: Path) -> Scenario:
    """Build the scenario's state on the node at ``url``; return once it is finalized."""
    recipient = Keypair.from_seed(hashlib.sha256(b"recipient" + bytes(payer)).digest())
    small = Keypair.from_seed(hashlib.sha256(b"small airdrop" + bytes(payer)).digest())
    scenario = Scenario(url, payer, recipient, small)
    airdrop = str(result(url, "requestAirdrop", [str(payer.pubkey()), 5 * LAMPORTS_PER_SOL]))
    wait_status(url, airdrop, "confirmed")
    scenario.aliases[airdrop] = "<airdrop>"
    # Below a new account's rent-exempt minimum: a signature, then a landed failure.
    small = str(result(url, "requestAirdrop", [str(scenario.small.pubkey()), SMALL_AIRDROP]))
    wait_status(url, small, "confirmed")
    scenario.signatures["small airdrop"] = small
    scenario.aliases[small] = "<small airdrop>"
    key = folder / "payer.json"
    key.write_text(json.dumps(list(bytes(payer))))
    command = [sys.executable, "-m", "curta_chain", "publish", str(artifact), "-u", url]
    command += ["-k", str(key), "--program-id", LOCALNET_PROGRAM_ID, "--yes"]
    done = subprocess.run(
        [*command, "--output", "json-compact"],
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    published = json.loads(done.stdout.strip().splitlines()[-1])
    scenario.model, scenario.weights = published["model"], list(published["weight_accounts"])
    scenario.aliases[scenario.model] = "<model>"
    for index, weight in enumerate(scenario.weights):
        scenario.aliases[weight] = f"<weight {index}>"
    for name, signature in published["signatures"].items():
        if isinstance(signature, str):
            scenario.aliases[signature] = f"<{name}>"
    scenario.send(scenario.signed(pay(scenario, 1_000_000)), "transfer")
    scenario.send(scenario.signed(pay(scenario, 2_000_000)), "second transfer")
    scenario.send(scenario.signed(unknown_instruction()), "program error", preflight=False)
    wait_status(url, scenario.signatures["program error"], "finalized")
    # A transaction signed by more than the payer (creating an account) has more signatures.
    config = {"encoding": "json", "commitment": "confirmed", "maxSupportedTransactionVersion": 1}
    answer = result(url, "getTransaction", [small, config])
    scenario.aliases[answer["transaction"]["message"]["accountKeys"][0]] = "<faucet>"
    for signature, name in list(scenario.aliases.items()):
        if len(signature) > 44:
            answer = result(url, "getTransaction", [signature, config])
            for index, other in enumerate(answer["transaction"]["signatures"][1:], 1):
                scenario.aliases[other] = f"{name[:-1]} signature {index}>"
    return scenario


@dataclass(frozen=True)
class Probe:
    """One request: a name (the same on both nodes), its method and parameters."""

    name: str
    method: str
    params: list[Any]
    volatile: bool = False
    """The whole result differs between nodes (a slot, a height, the genesis hash)."""
    summary: Callable[[Any], Any] | None = None
    """What of the result is compared, where its size depends on the node's age."""


def without_the_faucets_balance(result: Any) -> Any:
    """getTransaction of an airdrop but the faucet's balances (each node's faucet holds its own)."""
    if not isinstance(result, dict) or not isinstance(result.get("meta"), dict):
        return result
    meta = result["meta"]
    balances = {key: meta[key][1:] for key in ("preBalances", "postBalances") if key in meta}
    return {**result, "meta": {**meta, **balances}}


def fees_summary(result: Any) -> Any:
    """getRecentPrioritizationFees: one entry per recent slot (up to 150): the fees and keys."""
    return {
        "entries": bool(result),
        "fees": sorted({item["prioritizationFee"] for item in result}),
        "keys": sorted({",".join(sorted(item)) for item in result}),
    }


COMMITMENTS = ("processed", "confirmed", "finalized")


def probes(s: Scenario) -> Iterator[Probe]:
    """Every request to compare, in order, for scenario ``s`` (writes last)."""
    payer = str(s.payer.pubkey())
    accounts = [s.model, *s.weights, str(MISSING.pubkey())]
    yield Probe("getHealth", "getHealth", [])
    yield Probe("getSlot", "getSlot", [], volatile=True)
    yield Probe("getVersion", "getVersion", [], volatile=True)
    yield Probe("getGenesisHash", "getGenesisHash", [], volatile=True)
    yield Probe("rent 856", "getMinimumBalanceForRentExemption", [MODEL_ACCOUNT_SIZE])
    yield Probe("rent 0", "getMinimumBalanceForRentExemption", [0])
    for c in COMMITMENTS:
        config = {"commitment": c}
        yield Probe(f"getLatestBlockhash {c}", "getLatestBlockhash", [config])
        yield Probe(f"getBlockHeight {c}", "getBlockHeight", [config], volatile=True)
        yield Probe(f"getBalance {c}", "getBalance", [payer, config])
        read = {"encoding": "base64", "commitment": c, "minContextSlot": 1}
        yield Probe(f"getAccountInfo {c}", "getAccountInfo", [s.model, read])
        yield Probe(
            f"getAccountInfo slice {c}",
            "getAccountInfo",
            [s.weights[-1], {**read, "dataSlice": {"offset": 2_000, "length": 300}}],
        )
        yield Probe(
            f"getMultipleAccounts {c}",
            "getMultipleAccounts",
            [accounts, {**read, "dataSlice": {"offset": 0, "length": 4_096}}],
        )
    yield Probe("getAccountInfo missing", "getAccountInfo", [str(MISSING.pubkey())])
    yield Probe("getAccountInfo default", "getAccountInfo", [s.model, {"encoding": "base64"}])
    yield Probe(
        "getAccountInfo past the end",
        "getAccountInfo",
        [s.model, {"encoding": "base64", "dataSlice": {"offset": 10_000, "length": 8}}],
    )
    yield Probe(
        "getAccountInfo slot not reached",
        "getAccountInfo",
        [s.model, {"encoding": "base64", "commitment": "confirmed", "minContextSlot": 10**9}],
    )
    # This payer's models: a node holds other tests' models too (`curta-chain models`'s filter).
    models = [
        {"dataSize": MODEL_ACCOUNT_SIZE},
        {"memcmp": {"offset": MODEL_AUTHORITY_OFFSET, "bytes": payer}},
        {
            "memcmp": {
                "offset": 0,
                "bytes": base64.b64encode(model_discriminator()).decode(),
                "encoding": "base64",
            }
        },
    ]
    gpa = {"encoding": "base64", "commitment": "confirmed"}
    yield Probe(
        "getProgramAccounts models",
        "getProgramAccounts",
        [LOCALNET_PROGRAM_ID, {**gpa, "filters": models}],
    )
    yield Probe(
        "getProgramAccounts head",
        "getProgramAccounts",
        [LOCALNET_PROGRAM_ID, {**gpa, "filters": models, "dataSlice": {"offset": 0, "length": 64}}],
    )
    yield Probe(
        "getProgramAccounts nothing",
        "getProgramAccounts",
        [LOCALNET_PROGRAM_ID, {**gpa, "filters": [{"dataSize": 1}]}],
    )
    sigs = [s.signatures["transfer"], s.signatures["program error"], "1" * 64]
    yield Probe(
        "getSignatureStatuses history",
        "getSignatureStatuses",
        [sigs, {"searchTransactionHistory": True}],
    )
    yield Probe("getSignatureStatuses", "getSignatureStatuses", [sigs])
    recipient = str(s.recipient.pubkey())
    page = {"commitment": "confirmed", "limit": 1_000}
    yield Probe("getSignaturesForAddress", "getSignaturesForAddress", [recipient, page])
    yield Probe(
        "getSignaturesForAddress before",
        "getSignaturesForAddress",
        [recipient, {**page, "before": s.signatures["second transfer"]}],
    )
    as_json = {"encoding": "json", "commitment": "confirmed", "maxSupportedTransactionVersion": 1}
    for name in ("transfer", "program error", "create_model"):
        signature = next(sig for sig, alias in s.aliases.items() if alias == f"<{name}>")
        yield Probe(f"getTransaction {name}", "getTransaction", [signature, as_json])
    yield Probe("getTransaction unknown", "getTransaction", ["1" * 64, as_json])
    small = s.signatures["small airdrop"]
    yield Probe(
        "getSignatureStatuses small airdrop",
        "getSignatureStatuses",
        [[small], {"searchTransactionHistory": True}],
    )
    yield Probe(
        "getTransaction small airdrop",
        "getTransaction",
        [small, as_json],
        summary=without_the_faucets_balance,
    )
    yield Probe("getBalance small airdrop", "getBalance", [str(s.small.pubkey())])
    yield Probe(
        "getRecentPrioritizationFees",
        "getRecentPrioritizationFees",
        [[s.model, *s.weights]],
        summary=fees_summary,
    )
    blockhash = s.blockhash()
    message = Message.new_with_blockhash([pay(s, 3_000_000)], s.payer.pubkey(), blockhash)
    encoded = base64.b64encode(bytes(message)).decode()
    yield Probe("getFeeForMessage", "getFeeForMessage", [encoded, {"commitment": "confirmed"}])
    stale = Message.new_with_blockhash([pay(s, 3_000_000)], s.payer.pubkey(), Hash.new_unique())
    yield Probe(
        "getFeeForMessage unknown blockhash",
        "getFeeForMessage",
        [base64.b64encode(bytes(stale)).decode(), {"commitment": "confirmed"}],
    )

    def b64(transaction: bytes) -> str:
        # A send answers the transaction's first signature: name it, as the node's own.
        first = str(Signature.from_bytes(transaction[1:65]))
        s.aliases.setdefault(first, f"<sent {len(s.aliases)}>")
        return base64.b64encode(transaction).decode()

    simulate = {"encoding": "base64", "commitment": "processed", "replaceRecentBlockhash": True}
    yield Probe(
        "simulateTransaction",
        "simulateTransaction",
        [b64(s.signed(pay(s, 4_000_000), blockhash=blockhash)), simulate],
    )
    yield Probe(
        "simulateTransaction program error",
        "simulateTransaction",
        [
            b64(s.signed(unknown_instruction(), blockhash=blockhash)),
            {**simulate, "minContextSlot": 1},
        ],
    )
    preflight = {"encoding": "base64", "preflightCommitment": "confirmed"}
    skip = {"encoding": "base64", "skipPreflight": True, "maxRetries": 0}
    yield Probe(
        "sendTransaction program error",
        "sendTransaction",
        [b64(s.signed(unknown_instruction(), pay(s, 5_000_000), blockhash=blockhash)), preflight],
    )
    bad = bytearray(s.signed(pay(s, 6_000_000), blockhash=blockhash))
    bad[1 + 10] ^= 0xFF  # inside the first signature
    yield Probe("sendTransaction bad signature", "sendTransaction", [b64(bytes(bad)), preflight])
    yield Probe(
        "sendTransaction bad signature, no preflight", "sendTransaction", [b64(bytes(bad)), skip]
    )
    unknown = s.signed(pay(s, 7_000_000), blockhash=Hash.new_unique())
    yield Probe("sendTransaction unknown blockhash", "sendTransaction", [b64(unknown), preflight])
    # The preflight runs in the bank of preflightCommitment (finalized by default), which
    # does not know the confirmed blockhash yet: refused. At confirmed, or without a
    # preflight, the same blockhash is accepted.
    newer = s.signed(pay(s, 8_000_000), blockhash=blockhash)
    yield Probe(
        "sendTransaction blockhash newer than the preflight's bank",
        "sendTransaction",
        [b64(newer), {"encoding": "base64"}],
    )
    yield Probe(
        "sendTransaction preflight in the blockhash's bank",
        "sendTransaction",
        [b64(newer), preflight],
    )
    newer_again = s.signed(pay(s, 9_000_000), blockhash=blockhash)
    yield Probe(
        "sendTransaction blockhash newer than finalized, no preflight",
        "sendTransaction",
        [b64(newer_again), skip],
    )
    memo = Instruction(PROGRAM, bytes(MAX_TRANSACTION_SIZE), [])
    message = Message.new_with_blockhash([memo], s.payer.pubkey(), blockhash)
    large = bytes(Transaction([s.payer], message, blockhash))
    yield Probe("sendTransaction oversized", "sendTransaction", [b64(large), skip])
    yield Probe(
        "sendTransaction not base64", "sendTransaction", ["not base64!", {"encoding": "base64"}]
    )


@dataclass(frozen=True)
class Difference:
    """Where two answers to the same probe differ."""

    probe: str
    path: str
    ours: Any
    theirs: Any

    def __str__(self) -> str:
        return f"{self.probe}: {self.path}: ours {self.ours!r}, theirs {self.theirs!r}"


def _placeholder(name: str) -> bytes:
    return hashlib.sha256(name.encode()).digest()


def normalize(value: Any, aliases: dict[str, str]) -> Any:
    """``value`` with each node-specific address and signature replaced by its name.

    Base64 account data (``[data, "base64"]``) is decoded, each aliased address's 32 bytes
    replaced by bytes derived from its name, and encoded again.
    """
    if isinstance(value, str):
        return aliases.get(value, value)
    if isinstance(value, list):
        if len(value) == 2 and value[1] == "base64" and isinstance(value[0], str):
            data = base64.b64decode(value[0])
            for address, name in aliases.items():
                if len(address) >= 32 and len(address) <= 44:
                    data = data.replace(bytes(Pubkey.from_string(address)), _placeholder(name))
            return [base64.b64encode(data).decode(), "base64"]
        return [normalize(item, aliases) for item in value]
    if isinstance(value, dict):
        return {key: normalize(item, aliases) for key, item in value.items()}
    return value


def compare(probe: str, ours: Any, theirs: Any, path: str = "") -> list[Difference]:
    """Every place the two (normalized) answers differ, but for ``VOLATILE`` values."""
    key = path.rsplit(".", 1)[-1]
    if key in VOLATILE:
        same = type(ours) is type(theirs)
        return [] if same else [Difference(probe, path, type(ours).__name__, type(theirs).__name__)]
    if isinstance(ours, dict) and isinstance(theirs, dict):
        out = []
        for name in sorted(set(ours) | set(theirs)):
            where = f"{path}.{name}" if path else name
            if name not in ours or name not in theirs:
                out.append(
                    Difference(
                        probe, where, ours.get(name, "(absent)"), theirs.get(name, "(absent)")
                    )
                )
            else:
                out += compare(probe, ours[name], theirs[name], where)
        return out
    if isinstance(ours, list) and isinstance(theirs, list):
        if len(ours) != len(theirs):
            return [Difference(probe, f"{path}[len]", len(ours), len(theirs))]
        out = []
        for index, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            out += compare(probe, a, b, f"{path}[{index}]")
        return out
    if ours != theirs or type(ours) is not type(theirs):
        return [Difference(probe, path or "(answer)", ours, theirs)]
    return []


def answer_shape(answer: dict[str, Any]) -> Any:
    """An answer as compared: the result, or the error (its code, message and data)."""
    if "error" in answer:
        return {"error": answer["error"]}
    return {"result": answer.get("result")}


def conformance(
    ours: Scenario, theirs: Scenario, skip: Callable[[str], bool] = lambda _: False
) -> list[Difference]:
    """Send every probe to both nodes; every difference found."""
    found: list[Difference] = []
    for mine, other in zip(probes(ours), probes(theirs), strict=True):
        assert (mine.name, mine.method) == (other.name, other.method)
        if skip(mine.name):
            continue
        a = normalize(answer_shape(call(ours.url, mine.method, mine.params)), ours.aliases)
        b = normalize(answer_shape(call(theirs.url, other.method, other.params)), theirs.aliases)
        if mine.summary is not None and "result" in a and "result" in b:
            a["result"], b["result"] = mine.summary(a["result"]), mine.summary(b["result"])
        if mine.volatile and "result" in a and "result" in b:
            if type(a["result"]) is not type(b["result"]):
                found.append(Difference(mine.name, "result", a["result"], b["result"]))
            continue
        found += compare(mine.name, a, b)
    return found
