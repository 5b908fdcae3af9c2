"""The sender against the localnet in this process: landing, expiry and re-signing, the
node's refusals, giving up, and what each ``send`` reports.

Transfers of a few lamports stand for any transaction; the curta program's own refusals
come in as named errors.
"""

import base64
from typing import Any

import pytest
from inprocess import PROGRAM_ID, LocalnetTransport
from solders.compute_budget import set_compute_unit_limit, set_compute_unit_price
from solders.keypair import Keypair
from solders.signature import Signature
from solders.system_program import TransferParams, transfer
from solders.transaction import Transaction

from curta_chain import program
from curta_chain.chain.blockhashes import FRESH_BLOCKHASH_WAIT
from curta_chain.chain.refusals import send_checked
from curta_chain.chain.rent import rent_exempt_minimum
from curta_chain.chain.rpc import RpcClient
from curta_chain.chain.sender import Sender
from curta_chain.chain.signature_statuses import StatusPoller, wait_for_signature
from curta_chain.chain.specs import Budget, TxSpec, sign
from curta_chain.constants import LAMPORTS_PER_SOL
from curta_chain.errors import (
    ChainError,
    InsufficientFundsError,
    ProgramError,
    RpcCallError,
    RpcError,
    SendGaveUpError,
)
from curta_chain.localnet.clock import MAX_PROCESSING_AGE

EXPIRY = MAX_PROCESSING_AGE + 2
"""Slots after which a blockhash taken now is expired."""


def transfers(payer: Keypair, count: int) -> list[TxSpec]:
    """``count`` transfers to new addresses, each its own transaction."""
    return [
        TxSpec(
            (
                transfer(
                    TransferParams(
                        from_pubkey=payer.pubkey(), to_pubkey=Keypair().pubkey(), lamports=10**6
                    )
                ),
            )
        )
        for _ in range(count)
    ]


def sent_to(node: LocalnetTransport) -> list[str]:
    """The sendTransaction requests the node was asked."""
    return [m for m in node.methods if m == "sendTransaction"]


@pytest.mark.asyncio
async def test_a_send_lands_every_spec_and_reports_only_itself(node):
    payer = node.fund()
    sender = node.sender(payer)
    first = await sender.send(transfers(payer, 5))
    second = await sender.send(transfers(payer, 3))
    assert (first.confirmed, first.sent, first.resigned) == (5, 5, 0)
    assert (second.confirmed, second.sent, second.resigned) == (3, 3, 0)
    assert len(set(first.signatures + second.signatures)) == 8
    assert second.last_signature == second.signatures[-1]
    statuses = await sender.client.signature_statuses(first.signatures + second.signatures)
    assert all(s is not None and s.confirmation in ("confirmed", "finalized") for s in statuses)
    assert sender.client.sends == 8


@pytest.mark.asyncio
async def test_the_window_and_batches_bound_what_is_in_flight(node):
    batches: list[int] = []

    class Counting(LocalnetTransport):
        async def post(self, payload: Any) -> Any:
            if isinstance(payload, list) and payload[0]["method"] == "sendTransaction":
                batches.append(len(payload))
            return await super().post(payload)

    counting = Counting()
    payer = counting.fund()
    stats = await counting.sender(payer, window=5, batch_size=2).send(transfers(payer, 12))
    assert stats.confirmed == 12
    assert max(batches) == 2 and sum(batches) == 12
    counting.localnet.close()


class Dropping(LocalnetTransport):
    """Answers a send with its signature but never delivers it; then its blockhash expires.

    ``drop`` is how many sendTransaction requests to lose (None: every one). Once a batch
    with a lost one is answered, the slots a blockhash lives pass.
    """

    def __init__(self, drop: int | None) -> None:
        super().__init__()
        self.drop, self.dropped, self.lost = drop, 0, False

    async def post(self, payload: Any) -> Any:
        answers = await super().post(payload)
        if self.lost:
            self.lost = False
            self.slots(EXPIRY)  # it would have had to land by now
        return answers

    def forward(self, request: dict[str, Any]) -> Any:
        losing = self.drop is None or self.dropped < self.drop
        if request["method"] != "sendTransaction" or not losing:
            return super().forward(request)
        self.dropped += 1
        self.lost = True
        wire = base64.b64decode(request["params"][0])
        signature = str(Transaction.from_bytes(wire).signatures[0])
        return {"jsonrpc": "2.0", "result": signature, "id": request["id"]}


@pytest.mark.asyncio
async def test_a_transaction_lost_before_the_node_is_signed_again_once_expired():
    node = Dropping(drop=2)
    payer = node.fund()
    stats = await node.sender(payer).send(transfers(payer, 3))
    # Three first sends; the two signed again are a lossy sender's tail: sent twice each.
    assert (stats.confirmed, stats.resigned, stats.sent, stats.resent) == (3, 2, 7, 2)
    # The lost signatures never landed: each transfer ran once.
    lost = await RpcClient(node).signature_statuses(stats.signatures)
    assert all(s is not None for s in lost)
    node.localnet.close()


@pytest.mark.asyncio
async def test_a_transaction_that_never_lands_is_given_up_on_after_lifetimes_without_progress():
    node = Dropping(drop=None)
    payer = node.fund()
    sender = node.sender(payer, max_expiries=2, resume_hint="rerun me")
    with pytest.raises(SendGaveUpError) as gave_up:
        await sender.send(transfers(payer, 1))
    assert str(gave_up.value).startswith(
        "gave up with 1 of 1 transaction not confirmed: nothing landed in 2 blockhash lifetimes ("
    )
    assert str(gave_up.value).endswith("; rerun me")
    # Each lost signing expired before the next: two lifetimes took two or three signings,
    # the first sent once, each after an expiry twice (a lossy sender's tail).
    assert node.dropped in (3, 5)
    node.localnet.close()


class LosingFirstSends(LocalnetTransport):
    """Answers the first ``lose`` sendTransaction calls but delivers none of them; time
    goes on one slot a request, so the blockhash stays valid for the resends."""

    def __init__(self, lose: int) -> None:
        super().__init__()
        self.lose = lose
        self.delivered: list[str] = []

    def forward(self, request: dict[str, Any]) -> Any:
        if request["method"] != "sendTransaction":
            return super().forward(request)
        wire = base64.b64decode(request["params"][0])
        signature = str(Transaction.from_bytes(wire).signatures[0])
        if self.lose > 0:
            self.lose -= 1
            return {"jsonrpc": "2.0", "result": signature, "id": request["id"]}
        self.delivered.append(signature)
        return super().forward(request)


@pytest.mark.asyncio
async def test_a_lost_send_is_resent_as_the_same_bytes_until_it_lands():
    node = LosingFirstSends(lose=6)
    payer = node.fund()
    before = node.localnet.get_account(payer.pubkey()).lamports
    stats = await node.sender(payer).send(transfers(payer, 3))
    assert (stats.confirmed, stats.resigned) == (3, 0)
    assert stats.resent == stats.sent - 3 >= 6 // 3
    # Every resend was one of the three signatures: three transfers, three fees.
    assert set(node.delivered) == set(stats.signatures)
    assert before - node.localnet.get_account(payer.pubkey()).lamports == 3 * (10**6 + 5_000)
    node.localnet.close()


@pytest.mark.asyncio
async def test_a_lost_tail_goes_again_two_slots_after_its_send_not_a_resend_interval_later():
    node = LosingFirstSends(lose=2)
    payer = node.fund()
    stats = await node.sender(payer, resend_interval=600.0).send(transfers(payer, 1))
    # Nothing else left to wait for: the resend came OVERDUE after the first send, and,
    # a loss now known, went twice: one copy lost, the other landed.
    assert (stats.confirmed, stats.sent, stats.resent, stats.resigned) == (1, 3, 2, 0)
    assert stats.seconds < 600.0
    assert node.delivered == stats.signatures
    node.localnet.close()


@pytest.mark.asyncio
async def test_a_lossy_senders_resends_go_twice_even_before_its_tail():
    node = LosingFirstSends(lose=6)
    payer = node.fund()
    stats = await node.sender(payer).send(transfers(payer, 10))
    # Six of ten lost: more than the tail, they came due once the resend wait passed
    # unseen, and went again twice each, so that none needed a third send.
    assert (stats.confirmed, stats.sent, stats.resent, stats.resigned) == (10, 22, 12, 0)
    assert set(node.delivered) == set(stats.signatures)
    node.localnet.close()


class Preflighting(LocalnetTransport):
    """A node that simulates every transaction, whatever ``skipPreflight`` says, in its
    newest (processed) bank: the one whose status cache holds what just landed.

    With ``twice``, each transaction is delivered twice (a retrying network): the second
    answer is the node's AlreadyProcessed. With ``expire_first``, the first batch of sends
    arrives after its blockhash expired: BlockhashNotFound.
    """

    def __init__(self, twice: bool = False, expire_first: bool = False) -> None:
        super().__init__()
        self.twice, self.expire_first = twice, expire_first
        self.errors: list[str] = []

    async def post(self, payload: Any) -> Any:
        sends = isinstance(payload, list) and payload[0]["method"] == "sendTransaction"
        if self.expire_first and sends:
            self.expire_first = False
            self.slots(EXPIRY)
        return await super().post(payload)

    def forward(self, request: dict[str, Any]) -> Any:
        if request["method"] == "sendTransaction":
            request["params"][1] = {"encoding": "base64", "preflightCommitment": "processed"}
            if self.twice:
                super().forward(request)
            out = super().forward(request)
            if "error" in out:
                self.errors.append(out["error"]["data"]["err"])
            return out
        return super().forward(request)


@pytest.mark.asyncio
async def test_already_processed_is_taken_as_sent():
    node = Preflighting(twice=True)
    payer = node.fund()
    stats = await node.sender(payer).send(transfers(payer, 4))
    assert (stats.confirmed, stats.resigned) == (4, 0)
    assert node.errors == ["AlreadyProcessed"] * 4
    node.localnet.close()


@pytest.mark.asyncio
async def test_an_unknown_blockhash_takes_a_fresh_one_and_sends_again():
    node = Preflighting(expire_first=True)
    payer = node.fund()
    stats = await node.sender(payer).send(transfers(payer, 3))
    # Expired unseen: a loss, so the three signed again are the tail and go twice each.
    assert (stats.confirmed, stats.resigned, stats.sent) == (3, 3, 9)
    assert node.errors == ["BlockhashNotFound"] * 3 + ["AlreadyProcessed"] * 3
    node.localnet.close()


@pytest.mark.asyncio
async def test_a_refused_preflight_is_the_program_error_chained_from_the_rpc_error():
    node = Preflighting()
    payer = node.fund()
    nowhere = Keypair().pubkey()  # no account: not the program's
    write = program.write_weights(PROGRAM_ID, payer.pubkey(), nowhere, 0, b"x")
    with pytest.raises(ProgramError) as refused:
        await node.sender(payer).send([TxSpec((write,))])
    assert refused.value.name == "WrongAccountOwner"
    assert isinstance(refused.value.__cause__, RpcCallError)
    assert refused.value.__cause__.code == -32002
    node.localnet.close()


@pytest.mark.asyncio
async def test_a_program_refusal_that_landed_is_named_from_the_idl(node):
    payer = node.fund()
    write = program.write_weights(PROGRAM_ID, payer.pubkey(), Keypair().pubkey(), 0, b"x")
    with pytest.raises(ProgramError) as refused:
        await node.sender(payer).send([TxSpec((write,))])
    assert (refused.value.name, refused.value.code) == ("WrongAccountOwner", 6005)
    assert str(refused.value).startswith("curta program error 6005 WrongAccountOwner: ")


@pytest.mark.asyncio
async def test_send_checked_names_the_program_error_and_a_failed_signature_check(node):
    payer = node.fund()
    client = RpcClient(node)
    blockhash, _ = await client.latest_blockhash()
    write = program.write_weights(PROGRAM_ID, payer.pubkey(), Keypair().pubkey(), 0, b"x")
    wire = bytes(sign(TxSpec((write,)), payer, blockhash))
    with pytest.raises(ProgramError, match="WrongAccountOwner"):
        await send_checked(client, wire)
    # The signature no longer verifies: agave's preflight reports it as a failed simulation
    # (-32002, err SignatureFailure), which is named like any other.
    with pytest.raises(ChainError, match="transaction failed: SignatureFailure") as garbled:
        await send_checked(client, wire[:-1] + bytes([wire[-1] ^ 1]))
    node_said = garbled.value.__cause__
    assert isinstance(node_said, RpcCallError) and node_said.code == -32002


@pytest.mark.asyncio
async def test_a_transaction_over_1232_bytes_is_refused_before_sending(node):
    payer = node.fund()
    write = program.write_weights(PROGRAM_ID, payer.pubkey(), Keypair().pubkey(), 0, bytes(1_200))
    with pytest.raises(
        ChainError, match=r"a legacy transaction is \d+ bytes, over the 1,232-byte limit"
    ):
        await node.sender(payer).send([TxSpec((write,))])
    assert sent_to(node) == []


@pytest.mark.asyncio
async def test_a_v1_transaction_over_4096_bytes_is_refused_before_sending(node):
    payer = node.fund()
    write = program.write_weights(PROGRAM_ID, payer.pubkey(), Keypair().pubkey(), 0, bytes(4_000))
    spec = Budget().spec(1_000, (write,), "v1")
    with pytest.raises(
        ChainError, match=r"a v1 transaction is \d+ bytes, over the 4,096-byte limit"
    ):
        await node.sender(payer).send([spec])
    assert sent_to(node) == []


class GoneAfter(LocalnetTransport):
    """A node that stops answering after ``sends`` sendTransaction batches."""

    def __init__(self, sends: int) -> None:
        super().__init__()
        self.sends = sends

    async def post(self, payload: Any) -> Any:
        if self.sends <= 0:
            raise RpcError(f"{self.url}: no usable answer for 60.0 s (last: connection refused)")
        if isinstance(payload, list) and payload[0]["method"] == "sendTransaction":
            self.sends -= 1
        return await super().post(payload)


@pytest.mark.asyncio
async def test_a_node_gone_after_a_send_is_a_give_up_that_says_how_to_resume():
    node = GoneAfter(sends=1)
    payer = node.fund()
    sender = node.sender(payer, batch_size=2, concurrency=1, resume_hint="rerun to resume")
    with pytest.raises(SendGaveUpError) as gave_up:
        await sender.send(transfers(payer, 4))
    assert str(gave_up.value) == (
        "gave up with 4 of 4 transactions not confirmed: inprocess://localnet: no usable "
        "answer for 60.0 s (last: connection refused); rerun to resume"
    )
    node.localnet.close()


@pytest.mark.asyncio
async def test_a_node_gone_before_anything_was_sent_is_no_give_up():
    node = GoneAfter(sends=0)
    payer = node.fund()
    with pytest.raises(RpcError) as failed:
        await node.sender(payer).send(transfers(payer, 1))
    assert not isinstance(failed.value, SendGaveUpError)
    node.localnet.close()


@pytest.mark.asyncio
async def test_a_node_whose_blockhash_never_changes_is_reported(node):
    payer = node.fund()
    node.tick = 0.0  # time stands still on the node
    ticks = iter(range(0, 10_000))
    sender = Sender(RpcClient(node), payer, poll_interval=0.0, clock=lambda: float(next(ticks)))
    with pytest.raises(RpcError, match="the blockhash did not change in 60 s"):
        await sender.send(transfers(payer, 1))
    assert FRESH_BLOCKHASH_WAIT == 60.0


@pytest.mark.asyncio
async def test_wait_for_signature_waits_for_the_commitment_and_times_out(node):
    client = RpcClient(node, "confirmed")
    who = Keypair().pubkey()
    await wait_for_signature(client, await client.request_airdrop(who, LAMPORTS_PER_SOL))
    assert await client.balance(who) == LAMPORTS_PER_SOL

    ticks = iter(range(0, 10_000))
    poller = StatusPoller(client, 0.0, lambda: float(next(ticks)))
    with pytest.raises(RpcError, match=r"^\w+ was not confirmed within 5 s$"):
        await poller.wait(str(Signature.new_unique()), "confirmed", 5.0)


@pytest.mark.asyncio
async def test_the_poller_raises_a_failed_transaction(node):
    payer = node.fund()
    write = program.write_weights(PROGRAM_ID, payer.pubkey(), Keypair().pubkey(), 0, b"x")
    client = RpcClient(node)
    blockhash, _ = await client.latest_blockhash()
    signature = await client.send_transaction(
        bytes(sign(TxSpec((write,)), payer, blockhash)), preflight=False
    )
    with pytest.raises(ProgramError, match="WrongAccountOwner"):
        await wait_for_signature(client, signature)
    with pytest.raises(ProgramError, match="WrongAccountOwner"):
        await StatusPoller(client).poll([signature], 0)
    reached, height = await StatusPoller(client).poll([str(Signature.new_unique())], 0)
    assert reached == [None] and height > 0


@pytest.mark.asyncio
async def test_a_payer_who_cannot_pay_the_fee_ends_the_wait_at_once(node):
    payer = Keypair()  # holds nothing: the node drops its transactions unseen
    sender = node.sender(payer, resume_hint="rerun me")
    with pytest.raises(InsufficientFundsError) as short:
        await sender.send(transfers(payer, 2))
    assert str(short.value) == (
        f"payer {payer.pubkey()} has 0.000000000 SOL, less than a transaction's fee "
        "(0.000005000 SOL): the node drops what it cannot charge; 2 transactions not "
        "confirmed; fund it, then rerun me"
    )
    # Found when the first resend was due (and not sent), long before the blockhash expired.
    assert node.methods.count("sendTransaction") == 2


@pytest.mark.asyncio
async def test_a_refusal_or_a_landed_failure_for_funds_is_said_at_once(node):
    preflighting = Preflighting()
    # A new account holds its rent-exempt minimum at least: this payer's cannot cover the
    # priority fee its transaction offers (1,000,000 units at 1 lamport each).
    payer = Keypair()
    preflighting.localnet.airdrop(payer.pubkey(), rent_exempt_minimum(0))
    pricey = [set_compute_unit_limit(1_000_000), set_compute_unit_price(1_000_000)]
    spec = TxSpec((*pricey, *transfers(payer, 1)[0].instructions))
    with pytest.raises(InsufficientFundsError) as short:
        await preflighting.sender(payer, resume_hint="rerun me").send([spec])
    assert str(short.value) == (
        "the node refused a transaction: the payer cannot pay the fee; fund the payer, "
        f"{payer.pubkey()}, then rerun me"
    )
    assert preflighting.errors == ["InsufficientFundsForFee"]
    preflighting.localnet.close()

    poor = node.fund(sol=0.001)  # pays the fee, not the transfer of 0.001 SOL
    with pytest.raises(InsufficientFundsError) as short:
        await node.sender(poor, resume_hint="rerun me").send(transfers(poor, 1))
    assert str(short.value) == (
        "a transaction failed: insufficient lamports for a transfer or an account's rent; "
        f"fund the payer, {poor.pubkey()}, then rerun me"
    )


class UnknownBlockhashFirst(LocalnetTransport):
    """Refuses the first sends of each blockhash with BlockhashNotFound, as a leader that
    has not seen it yet does (the client's node is ahead of the leader)."""

    def __init__(self, refusals: int) -> None:
        super().__init__()
        self.refusals = refusals
        self.refused: list[str] = []

    def forward(self, request: dict[str, Any]) -> Any:
        if request["method"] == "sendTransaction" and self.refusals > 0:
            self.refusals -= 1
            wire = base64.b64decode(request["params"][0])
            self.refused.append(str(Transaction.from_bytes(wire).signatures[0]))
            error = {
                "code": -32002,
                "message": "Transaction simulation failed: Blockhash not found",
                "data": {"err": "BlockhashNotFound", "logs": []},
            }
            return {"jsonrpc": "2.0", "error": error, "id": request["id"]}
        return super().forward(request)


@pytest.mark.asyncio
async def test_a_blockhash_the_leader_does_not_know_yet_is_waited_for_and_no_attempt():
    node = UnknownBlockhashFirst(refusals=4)
    payer = node.fund()
    stats = await node.sender(payer).send(transfers(payer, 2))
    assert (stats.confirmed, stats.resigned) == (2, 0)
    # The refused bytes went again unchanged, and they are what landed.
    assert set(stats.signatures) <= set(node.refused)
    assert stats.resent >= 2
    node.localnet.close()


class Forgetting(LocalnetTransport):
    """A node whose status cache holds nothing: getSignatureStatuses answers null for every
    signature unless it asks ``searchTransactionHistory``. Once sends were answered, the
    slots a blockhash lives pass (a sender that slept through them: a laptop's lid)."""

    def __init__(self) -> None:
        super().__init__()
        self.polls = self.searches = 0
        self.sent = False

    async def post(self, payload: Any) -> Any:
        answers = await super().post(payload)
        if self.sent:
            self.sent = False
            self.slots(EXPIRY)
        return answers

    def forward(self, request: dict[str, Any]) -> Any:
        if request["method"] == "sendTransaction":
            self.sent = True
        if request["method"] != "getSignatureStatuses":
            return super().forward(request)
        params = request["params"]
        searched = len(params) > 1 and params[1].get("searchTransactionHistory") is True
        self.searches += searched
        self.polls += not searched
        answer = super().forward(request)
        if not searched:
            answer["result"]["value"] = [None] * len(params[0])
        return answer


@pytest.mark.asyncio
async def test_polls_read_the_status_cache_and_an_expired_one_is_searched_once_in_history():
    node = Forgetting()
    payer = node.fund()
    stats = await node.sender(payer).send(transfers(payer, 3))
    # Unseen in the cache past their blockhash: one search of history found them landed,
    # so none was signed again (a second transfer each).
    assert (stats.confirmed, stats.resigned) == (3, 0)
    assert node.polls >= 1 and node.searches == 1
    node.localnet.close()
