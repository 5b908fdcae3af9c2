"""RpcClient: request shapes and answers, against the localnet in-process and canned answers.

The localnet gives real answers (slices of an account, statuses 256 a call, context slots);
a ``Canned`` transport gives the malformed ones no honest node sends.
"""

import base64
from typing import Any

import pytest
from inprocess import PROGRAM_ID, LocalnetTransport
from solders.hash import Hash
from solders.keypair import Keypair
from solders.message import Message
from solders.pubkey import Pubkey
from solders.signature import Signature
from solders.system_program import TransferParams, transfer
from solders.transaction import VersionedTransaction

from curta_chain.chain import rpc
from curta_chain.chain.fees import DEFAULT_MAX_COMPUTE_UNIT_PRICE as DEFAULT
from curta_chain.chain.fees import percentile, priced
from curta_chain.chain.loader import programdata_address
from curta_chain.chain.rent import rent_exempt_minimum
from curta_chain.chain.rpc import RpcClient
from curta_chain.chain.specs import AutoPrice, Budget
from curta_chain.chain.transport import BatchRefusedError
from curta_chain.constants import LAMPORTS_PER_SOL
from curta_chain.errors import ChainError, PriceCapError, RpcCallError, RpcError


class Canned:
    """A transport that answers each post with the next canned answer."""

    url = "canned://node"

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.posted: list[Any] = []

    async def post(self, payload: Any) -> Any:
        self.posted.append(payload)
        answer = self.answers.pop(0)
        return answer(payload) if callable(answer) else answer

    async def aclose(self) -> None:
        pass


def reversed_batch(payload: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A batch answered in reverse order (JSON-RPC allows any order)."""
    return [{"jsonrpc": "2.0", "id": r["id"], "result": r["method"]} for r in reversed(payload)]


@pytest.mark.asyncio
async def test_a_batch_is_matched_by_id_and_an_error_object_is_its_item():
    def answers(payload):
        out = reversed_batch(payload)
        out[0] = {"jsonrpc": "2.0", "id": out[0]["id"], "error": {"code": -32602, "message": "no"}}
        return out

    client = RpcClient(Canned(answers))
    results = await client.batch([("getSlot", []), ("getHealth", []), ("getVersion", [])])
    assert results[:2] == ["getSlot", "getHealth"]
    assert isinstance(results[2], RpcCallError) and results[2].code == -32602
    assert str(results[2]) == "getVersion: RPC error -32602: no"
    assert await client.batch([]) == []


@pytest.mark.asyncio
async def test_a_batch_answer_that_lacks_a_request_is_an_rpc_error():
    with pytest.raises(RpcError, match="the batch answer lacks request 1"):
        await RpcClient(Canned([])).batch([("getSlot", [])])


@pytest.mark.asyncio
async def test_a_batch_answered_by_no_list_goes_again_as_a_plain_call():
    node = Canned({"jsonrpc": "2.0", "id": 1, "result": 1}, lambda p: {**p, "result": 2})
    client = RpcClient(node)
    assert await client.batch([("getSlot", [])]) == [2]
    assert isinstance(node.posted[0], list) and isinstance(node.posted[1], dict)
    assert client.limits.batch == 1


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("answer", "error", "message"),
    [
        ("<html>", RpcError, "getSlot: expected a JSON-RPC answer, got '<html>'"),
        ({"jsonrpc": "2.0", "id": 1}, RpcError, "getSlot: the answer has neither result nor error"),
        (
            {"jsonrpc": "2.0", "id": 1, "error": {"code": -32005, "message": "behind"}},
            RpcCallError,
            "getSlot: RPC error -32005: behind",
        ),
        ({"jsonrpc": "2.0", "id": 1, "error": None}, RpcCallError, "getSlot: RPC error None: "),
    ],
)
async def test_a_call_turns_every_answer_into_a_result_or_our_error(answer, error, message):
    with pytest.raises(error) as raised:
        await RpcClient(Canned(answer)).call("getSlot", [])
    assert str(raised.value) == message


@pytest.mark.asyncio
async def test_account_data_is_read_in_slices_and_must_be_all_there(node, monkeypatch):
    monkeypatch.setattr(rpc, "ACCOUNT_SLICE", 1_000)
    client = RpcClient(node, "processed")
    # An account with data: the ProgramData of the program the localnet preloads (loader v3).
    program = programdata_address(PROGRAM_ID)
    whole = await client.account(program)
    assert whole is not None and len(whole.data) > 3_000
    before = node.methods.count("getAccountInfo")
    part = await client.account_data(program, 500, 2_600)
    assert part == whole.data[500:3_100]
    assert node.methods.count("getAccountInfo") - before == 3  # 1,000 + 1,000 + 600 bytes
    with pytest.raises(ChainError, match=r"expected 10 bytes at \d+, got 0"):
        await client.account_data(program, len(whole.data), 10)
    with pytest.raises(ChainError, match="does not exist"):
        await client.account_data(Keypair().pubkey(), 0, 10)


@pytest.mark.asyncio
async def test_statuses_go_256_and_accounts_100_a_call(node):
    client = RpcClient(node)
    before = node.methods.count("getSignatureStatuses")
    statuses = await client.signature_statuses([str(Signature.new_unique()) for _ in range(300)])
    assert statuses == [None] * 300
    assert node.methods.count("getSignatureStatuses") - before == 2
    before = node.methods.count("getMultipleAccounts")
    assert await client.accounts([Keypair().pubkey() for _ in range(150)]) == [None] * 150
    assert node.methods.count("getMultipleAccounts") - before == 2


@pytest.mark.asyncio
async def test_reads_keep_the_highest_context_slot_and_ask_for_a_minimum(node):
    client = RpcClient(node, "processed")
    client.lag_poll = 0.0
    payer = node.fund()
    await client.balance(payer.pubkey())
    assert client.context_slot == 0  # getBalance is no account read
    await client.account(payer.pubkey())
    seen = client.context_slot
    assert seen > 0
    # A node behind the slot a read needs is waited for (this one moves a slot a request).
    ahead = RpcClient(node, "processed", min_context_slot=seen + 5)
    ahead.lag_poll = 0.0
    assert (await ahead.account(payer.pubkey())) is not None
    assert ahead.lag_waits > 0 and ahead.context_slot >= seen + 5
    # ... for ``lag_wait`` seconds; then its refusal is the error.
    stuck = RpcClient(node, "processed", min_context_slot=seen + 1_000)
    stuck.lag_wait = 0.0
    with pytest.raises(RpcCallError, match="Minimum context slot has not been reached"):
        await stuck.account(payer.pubkey())
    # A landed transaction raises the floor; never lowers it.
    client.landed(seen + 3)
    client.landed(seen + 1)
    assert client.min_context_slot == seen + 3
    assert (await client.account_at(payer.pubkey(), seen + 6)) is not None
    assert client.context_slot >= seen + 6


class BehindOnTransactions(LocalnetTransport):
    """A load-balanced provider: a node ahead lists signatures, one behind answers
    getTransaction with null for its first ``misses`` asks."""

    def __init__(self, misses: int) -> None:
        super().__init__()
        self.misses = misses

    def forward(self, request: dict[str, Any]) -> Any:
        if request.get("method") == "getTransaction" and self.misses > 0:
            self.misses -= 1
            return {"jsonrpc": "2.0", "id": request["id"], "result": None}
        return super().forward(request)


@pytest.mark.asyncio
async def test_a_listed_transaction_a_node_behind_has_not_indexed_is_asked_again():
    node = BehindOnTransactions(misses=3)
    try:
        client = RpcClient(node, "confirmed")
        client.lag_poll = 0.0
        payer, to, rent = node.fund(), Keypair().pubkey(), rent_exempt_minimum(0)
        blockhash, _ = await client.latest_blockhash()
        tx = VersionedTransaction(
            Message.new_with_blockhash(
                # A new account gets its rent-exempt minimum at least (a validator's rule).
                [transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=to, lamports=rent))],
                payer.pubkey(),
                blockhash,
            ),
            [payer],
        )
        await client.send_transaction(bytes(tx))  # preflight at confirmed, as its blockhash
        node.slots(2)
        (landed,) = await client.landed_transactions(to, 0)
        assert landed.signature == str(tx.signatures[0])
        assert landed.fee_payer == str(payer.pubkey())
        assert landed.compute_units > 0 and client.lag_waits > 0 and node.misses == 0
        # ... for ``lag_wait`` seconds; then it is one error naming the transaction.
        node.misses = 1_000
        client.lag_wait = 0.0
        with pytest.raises(ChainError, match=f"{tx.signatures[0]} could not be read back"):
            await client.landed_transactions(to, 0)
    finally:
        node.localnet.close()


@pytest.mark.asyncio
async def test_the_genesis_hash_is_asked_once_and_fees_and_rent_come_from_the_node(node):
    client = RpcClient(node)
    assert await client.genesis_hash() == await client.genesis_hash()
    assert node.methods.count("getGenesisHash") == 1
    payer = node.fund()
    blockhash, last_valid = await client.latest_blockhash()
    assert last_valid > await client.block_height()
    ix = transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=payer.pubkey(), lamports=1))
    message = Message.new_with_blockhash([ix], payer.pubkey(), blockhash)
    assert await client.fee_for_message(message) == 5_000
    stale = Message.new_with_blockhash([ix], payer.pubkey(), Hash.new_unique())
    with pytest.raises(RpcError, match="getFeeForMessage: the blockhash is unknown to the node"):
        await client.fee_for_message(stale)
    assert await client.rent_exempt_minimum(0) == 890_880
    assert await client.balance(payer.pubkey()) == 100 * LAMPORTS_PER_SOL


@pytest.mark.asyncio
async def test_an_account_in_another_encoding_is_refused():
    value = {"data": ["AA==", "base58"], "owner": str(Pubkey.default()), "lamports": 1}
    answer = {"jsonrpc": "2.0", "id": 1, "result": {"context": {"slot": 1}, "value": value}}
    with pytest.raises(RpcError, match="unexpected account data encoding 'base58'"):
        await RpcClient(Canned(answer)).account(Pubkey.default())


def test_a_send_call_skips_preflight_and_retries_or_asks_for_it():
    client = RpcClient(Canned(), "confirmed")
    method, (encoded, config) = client.send_call(b"\1\2")
    assert (method, encoded) == ("sendTransaction", "AQI=")
    assert config == {"encoding": "base64", "skipPreflight": True, "maxRetries": 0}
    _, (_, config) = client.send_call(b"\1\2", preflight=True)
    assert config == {"encoding": "base64", "preflightCommitment": "confirmed"}


class Capped:
    """A provider that refuses batches over ``cap`` calls in the way ``refusal`` says."""

    url = "capped://node"

    def __init__(self, cap: int, refusal: str) -> None:
        self.cap, self.refusal = cap, refusal
        self.sizes: list[int] = []

    async def post(self, payload: Any) -> Any:
        size = len(payload) if isinstance(payload, list) else 0
        self.sizes.append(size)
        if size > self.cap or (size and self.cap == 0):
            if self.refusal == "status":
                raise BatchRefusedError("HTTP 413")
            if self.refusal == "error object":
                return {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "big"}}
            return {"message": "batch too large"}  # no list, no JSON-RPC at all
        if not size:
            return {"jsonrpc": "2.0", "id": payload["id"], "result": payload["method"]}
        return reversed_batch(payload)

    async def aclose(self) -> None:
        pass


@pytest.mark.asyncio
@pytest.mark.parametrize("refusal", ["status", "error object", "no list"])
@pytest.mark.parametrize("cap", [100, 7, 0])
async def test_a_refused_batch_is_halved_until_the_provider_takes_it(refusal, cap):
    node = Capped(cap, refusal)
    client = RpcClient(node)
    calls = [("getSlot", [i]) for i in range(300)]
    assert await client.batch(calls) == ["getSlot"] * 300
    learnt = client.limits.batch
    assert learnt <= max(cap, 1) and (cap == 0 or learnt > cap // 2)
    # Learnt for the rest of the run: the next batch is sent in pieces the provider takes.
    node.sizes.clear()
    assert await client.batch(calls[:50]) == ["getSlot"] * 50
    assert max(node.sizes) <= max(cap, 1) and len(node.sizes) == -(-50 // learnt)


@pytest.mark.asyncio
async def test_an_auto_price_is_a_percentile_of_recent_prices_under_its_cap():
    recent = [{"slot": n, "prioritizationFee": fee} for n, fee in enumerate([0, 0, 10, 50, 900])]
    node = Canned(*[lambda p: {**p, "result": recent}] * 3)
    client = RpcClient(node)
    accounts = [Keypair().pubkey() for _ in range(130)]
    auto = Budget(auto_price=AutoPrice(75))
    assert (await priced(client, auto, accounts)).compute_unit_price == 50
    # The node takes at most 128 accounts: the first ones are asked about.
    assert node.posted[0]["params"][0] == [str(k) for k in accounts[:128]]
    capped = await priced(client, Budget(auto_price=AutoPrice(100, cap=700)), accounts)
    assert (capped.compute_unit_price, capped.auto_price) == (700, None)
    assert (await priced(client, Budget(auto_price=AutoPrice(1)), accounts)).compute_unit_price == 0
    assert await priced(client, Budget(compute_unit_price=5), accounts) == Budget(
        compute_unit_price=5
    )
    assert percentile([], 75) == 0
    # Unresolved, an auto price already sizes the transactions as a priced one.
    assert auto.write_payload() == Budget(compute_unit_price=1).write_payload()


@pytest.mark.asyncio
async def test_an_auto_price_above_the_default_cap_is_refused_and_a_given_cap_caps_it():
    recent = [{"slot": n, "prioritizationFee": 10**12} for n in range(4)]
    node = Canned(*[lambda p: {**p, "result": recent}] * 2)
    client = RpcClient(node)
    accounts = [Keypair().pubkey()]
    with pytest.raises(PriceCapError, match=f"above the default cap of {DEFAULT:,} for"):
        await priced(client, Budget(auto_price=AutoPrice(75)), accounts)
    capped = await priced(client, Budget(auto_price=AutoPrice(75, cap=DEFAULT * 3)), accounts)
    assert capped.compute_unit_price == DEFAULT * 3


@pytest.mark.asyncio
@pytest.mark.parametrize("price", ["1000", -1, 2**64, True, 1.5, None])
async def test_a_price_that_is_no_u64_is_refused(price):
    recent = [{"slot": 0, "prioritizationFee": 5}, {"slot": 1, "prioritizationFee": price}]
    client = RpcClient(Canned(lambda p: {**p, "result": recent}))
    with pytest.raises(RpcError, match="getRecentPrioritizationFees: a price is not a u64"):
        await client.prioritization_fees([Keypair().pubkey()])


@pytest.mark.asyncio
@pytest.mark.parametrize("fee", ["5000", -5, 2**64, False])
async def test_a_fee_that_is_no_u64_is_refused(fee):
    answer = {"context": {"slot": 1}, "value": fee}
    client = RpcClient(Canned(lambda p: {**p, "result": answer}))
    message = Message([], Keypair().pubkey())
    with pytest.raises(RpcError, match="is not a fee in lamports"):
        await client.fee_for_message(message)


def refused_call_by_call(limit: int):
    """A provider that answers a batch over ``limit`` with one alike error per call."""

    def answer(payload: Any) -> Any:
        if isinstance(payload, list) and len(payload) > limit:
            message = f"batch size {len(payload)} over the limit of {limit}"
            why = {"code": -32600, "message": message}
            return [{"jsonrpc": "2.0", "id": r["id"], "error": why} for r in payload]
        return reversed_batch(payload) if isinstance(payload, list) else {**payload, "result": 0}

    return answer


@pytest.mark.asyncio
async def test_a_batch_refused_call_by_call_is_halved_and_sent_again():
    node = Canned(*[refused_call_by_call(2)] * 7)
    client = RpcClient(node)
    calls = [("getSlot", []), ("getHealth", []), ("getVersion", []), ("getSlot", [])]
    assert await client.batch(calls) == ["getSlot", "getHealth", "getVersion", "getSlot"]
    assert [len(p) for p in node.posted] == [4, 2, 2]
    assert client.limits.batch == 2 and client.limits.batches_refused == 1


@pytest.mark.asyncio
async def test_every_call_of_a_batch_failing_alike_for_its_own_reason_is_not_a_refusal():
    def answers(payload):
        why = {"code": -32602, "message": "Invalid param: WrongSize"}
        return [{"jsonrpc": "2.0", "id": r["id"], "error": why} for r in payload]

    client = RpcClient(Canned(answers))
    results = await client.batch([("getAccountInfo", ["x"]), ("getAccountInfo", ["y"])])
    assert all(isinstance(r, RpcCallError) and r.code == -32602 for r in results)
    assert client.limits.batches_refused == 0


@pytest.mark.asyncio
async def test_a_status_poll_reads_the_cache_and_only_a_search_asks_for_history():
    def statuses(payload):
        return [{"jsonrpc": "2.0", "id": r["id"], "result": {"context": {"slot": 1},
                 "value": [None] * len(r["params"][0])}} for r in payload]  # fmt: skip

    node = Canned(statuses, statuses)
    client = RpcClient(node)
    assert await client.signature_statuses(["a", "b"]) == [None, None]
    assert await client.signature_statuses(["a"], search_history=True) == [None]
    assert node.posted[0][0]["params"] == [["a", "b"]]
    assert node.posted[1][0]["params"] == [["a"], {"searchTransactionHistory": True}]


@pytest.mark.asyncio
async def test_a_read_past_any_accounts_size_is_refused_before_anything_is_asked():
    # A node that claims a section of 2^50 bytes: the read is refused at once, unasked.
    node = Canned()
    client = RpcClient(node)
    with pytest.raises(ChainError, match=r"past the 10,485,760 bytes an account may hold"):
        await client.account_data(Keypair().pubkey(), 2_048, 1 << 50)
    with pytest.raises(ChainError, match="past the"):
        await client.account_data(Keypair().pubkey(), -1, 10)
    assert node.posted == []


def _slices(payload: list[dict[str, Any]], extra: int = 0) -> list[dict[str, Any]]:
    """Each getAccountInfo slice answered with as many bytes as asked, plus ``extra``."""
    out = []
    for call in payload:
        size = call["params"][1]["dataSlice"]["length"] + extra
        value = {
            "owner": str(PROGRAM_ID),
            "lamports": 1,
            "executable": False,
            "data": [base64.b64encode(b"\1" * size).decode(), "base64"],
        }
        out.append(
            {"jsonrpc": "2.0", "id": call["id"], "result": {"context": {"slot": 1}, "value": value}}
        )
    return out


@pytest.mark.asyncio
async def test_a_large_read_asks_its_slices_as_it_goes_and_each_must_be_what_was_asked():
    # 10 slices: the first 8 asked together; a missing account ends it before the other 2.
    missing = lambda payload: [  # noqa: E731
        {"jsonrpc": "2.0", "id": c["id"], "result": {"context": {"slot": 1}, "value": None}}
        for c in payload
    ]
    node = Canned(missing)
    with pytest.raises(ChainError, match="does not exist"):
        await RpcClient(node).account_data(Keypair().pubkey(), 0, 10 * rpc.ACCOUNT_SLICE)
    assert [len(batch) for batch in node.posted] == [rpc.READS_AT_ONCE]
    node = Canned(_slices, _slices)
    data = await RpcClient(node).account_data(Keypair().pubkey(), 0, 10 * rpc.ACCOUNT_SLICE)
    assert data == b"\1" * (10 * rpc.ACCOUNT_SLICE)
    assert [len(batch) for batch in node.posted] == [rpc.READS_AT_ONCE, 2]
    # A node answering more than a slice asked for is refused, not believed.
    node = Canned(lambda payload: _slices(payload, extra=1))
    with pytest.raises(
        ChainError, match=r"answered 1,001 bytes of account \w+ for a slice of 1,000"
    ):
        await RpcClient(node).account_data(Keypair().pubkey(), 0, 1_000)
