"""Fees are computed from the messages, exactly what the runtime charges; the node is a
cross-check whose figure is shown where it disagrees and never used."""

from typing import Any

import pytest
from inprocess import LocalnetTransport, published
from solders.hash import Hash

from curta_chain.chain.fees import estimate_fees, fee_of
from curta_chain.chain.publish import plan_publish, publish
from curta_chain.chain.specs import Budget, message
from curta_chain.protocol.compute_budget import transaction_fee
from curta_chain.reporting import NullReporter


class Notes(NullReporter):
    """A reporter that keeps its notes."""

    def __init__(self) -> None:
        self.notes: list[str] = []

    def note(self, text: str) -> None:
        """Keep it."""
        self.notes.append(text)


class LyingFees(LocalnetTransport):
    """The localnet, but getFeeForMessage says every message costs 10^12 lamports."""

    def forward(self, request: dict[str, Any]) -> Any:
        answer = super().forward(request)
        if request.get("method") == "getFeeForMessage" and "result" in answer:
            answer["result"]["value"] = 10**12
        return answer


@pytest.mark.asyncio
@pytest.mark.parametrize("version", ["auto", "legacy"])
@pytest.mark.parametrize("price", [None, 0, 1_234, 999_999])
async def test_a_publish_spends_exactly_its_planned_rent_and_fees(node, tiny, version, price):
    # v1 writes (auto) carry their priority fee inline, legacy ones as instructions; either
    # way the runtime (LiteSVM) charges what the messages say.
    budget = Budget(compute_unit_price=price, tx_version=version)
    authority = node.fund()
    before = node.localnet.svm.get_balance(authority.pubkey())
    ctx = node.context(authority, budget=budget)
    plan = await plan_publish(ctx, tiny)
    await publish(ctx, tiny, plan)
    assert before - node.localnet.svm.get_balance(authority.pubkey()) == plan.cost_lamports


@pytest.mark.asyncio
async def test_the_nodes_fee_is_a_cross_check_noted_where_it_disagrees(tiny):
    for transport, lies in ((LocalnetTransport(), False), (LyingFees(), True)):
        try:
            ctx, plan = await published(transport, tiny, Budget(compute_unit_price=7))
            specs = ctx.transactions.writes(plan, tiny.sections)[:2]
            kinds = [(specs[0], 3), (specs[1], 2)]
            notes = Notes()
            total = await estimate_fees(ctx.client, ctx.payer.pubkey(), kinds, notes)
            ours = [fee_of(spec, ctx.payer.pubkey()) for spec in specs]
            assert total == 3 * ours[0] + 2 * ours[1] > 0
            assert (notes.notes != []) == lies
            if lies:
                assert notes.notes[0].endswith(
                    f"says these transactions cost {5 * 10**12:,} lamports in fees "
                    f"(getFeeForMessage); computed from their messages, as validators charge: "
                    f"{total:,}, which is what the plan counts"
                )
            # Without a reporter the node is not asked at all.
            asked = transport.methods.count("getFeeForMessage")
            assert await estimate_fees(ctx.client, ctx.payer.pubkey(), kinds) == total
            assert transport.methods.count("getFeeForMessage") == asked
        finally:
            transport.localnet.close()


def test_a_fee_is_the_protocols_of_the_message(tiny):
    # fee_of is transaction_fee of the spec's message, paid by the payer.
    node = LocalnetTransport()
    try:
        authority = node.fund()
        ctx = node.context(authority, budget=Budget(compute_unit_price=5_000_000))
        spec = ctx.transactions.begin_sealing(authority.pubkey())
        expected = transaction_fee(message(spec, authority.pubkey(), Hash.default()))
        assert fee_of(spec, authority.pubkey()) == expected == 5_000 + 25_000
    finally:
        node.localnet.close()
