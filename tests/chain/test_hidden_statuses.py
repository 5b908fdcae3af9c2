"""A node that delivers every transaction but reports no status for any, in this process.

``Hiding`` answers getSignatureStatuses with null for every signature (history searched or
not) and getTransaction with null: the sender must read what its transactions did on chain
before it signs one again or gives up, count what landed, say what the node reported and
what the chain shows, and stop re-signing what it cannot read back once that passes a tenth
of the fees it signed.
"""

from typing import Any

import pytest
from inprocess import LocalnetTransport, published
from solders.keypair import Keypair
from solders.system_program import TransferParams, transfer

from curta_chain.chain.effects import ReadBack
from curta_chain.chain.seal import seal, seal_cost
from curta_chain.chain.specs import TxSpec
from curta_chain.errors import SendGaveUpError
from curta_chain.program import ModelState
from curta_chain.reporting import NullReporter


class Hiding(LocalnetTransport):
    """Delivers everything; reports no status and no transaction for any signature."""

    def forward(self, request: dict[str, Any]) -> Any:
        answer = super().forward(request)
        method = request.get("method")
        if method == "getSignatureStatuses" and "result" in answer:
            answer["result"]["value"] = [None] * len(request["params"][0])
        if method == "getTransaction" and "result" in answer:
            answer["result"] = None
        return answer


class Notes(NullReporter):
    def __init__(self) -> None:
        self.notes: list[str] = []

    def note(self, text: str) -> None:
        self.notes.append(text)


def transfers(payer: Keypair, count: int) -> tuple[list[TxSpec], list[Any]]:
    """``count`` transfers, each creating a new account, and those accounts."""
    keys = [Keypair().pubkey() for _ in range(count)]
    specs = [
        TxSpec((transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=k, lamports=10**6)),))
        for k in keys
    ]
    return specs, keys


def paid(node: LocalnetTransport, payer: Keypair, before: int) -> int:
    return before - node.localnet.get_account(payer.pubkey()).lamports


@pytest.mark.asyncio
async def test_what_the_node_hides_is_read_on_chain_counted_and_said_never_signed_again():
    node, notes = Hiding(), Notes()
    payer = node.fund()
    before = node.localnet.get_account(payer.pubkey()).lamports
    sender = node.sender(payer, reporter=notes)
    specs, keys = transfers(payer, 5)
    created = ReadBack(sender.client, keys, lambda _, info: info is not None, 0)
    stats = await sender.send(specs, effects=created)
    assert (stats.confirmed, stats.hidden, stats.resigned) == (5, 5, 0)
    # Read on chain once the first resend (two copies, a loss seen) stayed unseen past its
    # wait: long before any blockhash expired.
    assert (stats.sent, stats.resent) == (5 + 2 * 5, 2 * 5)
    assert paid(node, payer, before) == 5 * (10**6 + 5_000)
    (note,) = notes.notes
    assert note.startswith("inprocess://localnet reported no status for 5 transactions that")
    assert "the chain shows landed" in note and "--cross-check URL" in note
    node.localnet.close()


@pytest.mark.asyncio
async def test_re_signing_what_nothing_can_read_back_stops_past_a_tenth_of_the_fees():
    node = Hiding()
    payer = node.fund()
    before = node.localnet.get_account(payer.pubkey()).lamports
    specs, _ = transfers(payer, 5)
    with pytest.raises(SendGaveUpError) as stopped:
        await node.sender(payer, resume_hint="rerun me").send(specs)
    message = str(stopped.value)
    assert message.startswith(
        "stopped: inprocess://localnet reported no status for 5 transactions whose blockhash "
        "expired, and their effect cannot be read on chain; signing them again would bring "
        "what re-signing costs to 0.000025000 SOL, over 10% of the plan's fees (0.000025000 SOL)"
    )
    assert "--cross-check URL" in message and message.endswith("; then rerun me")
    # Stopped before signing any again: each transfer landed once, one fee each.
    assert paid(node, payer, before) == 5 * (10**6 + 5_000)
    node.localnet.close()


@pytest.mark.asyncio
async def test_a_publish_and_its_seal_through_a_node_hiding_statuses_pay_the_plan(tiny):
    node = Hiding()
    ctx, plan = await published(node, tiny)
    payer = ctx.payer.pubkey()
    # Publishing paid exactly its plan: rent and one fee a transaction, nothing signed twice.
    assert ctx.sender is not None and ctx.sender.hidden.found > 0
    assert node.localnet.get_account(payer).lamports == 100 * 10**9 - plan.cost_lamports
    steps, fee = await seal_cost(ctx, plan.model)
    result = await seal(ctx, plan.model, tiny)
    assert result.state == ModelState.SEALED
    # Every step counted from the chain's own list, none twice.
    assert result.transactions == steps
    assert node.localnet.get_account(payer).lamports == 100 * 10**9 - plan.cost_lamports - fee
    node.localnet.close()
