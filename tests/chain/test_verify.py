"""verify: its byte ranges (pure), then reports of models in-process, and the CLI's lines.

A model is published and sealed in the localnet in this process, then verified against
its own artifact and against one that differs in a few bytes of section 1 (the same
lengths and configuration): the ranges are listed, the first ``limit`` of them, all counted,
and the CLI says how many it left out.
"""

import re
from pathlib import Path

import pytest
from inprocess import LocalnetTransport
from solders.keypair import Keypair

from curta_chain.artifact import Artifact, decode_artifact
from curta_chain.chain.publish import plan_publish, publish
from curta_chain.chain.seal import seal
from curta_chain.chain.verify import _byte_ranges, verify
from curta_chain.chain.verify_report import Difference
from curta_chain.cli.read_commands import _print_verify
from curta_chain.errors import AccountError
from curta_chain.program import ModelState
from curta_chain.reporting import NullReporter


def test_byte_ranges_merge_runs_list_the_first_and_count_them_all():
    chain = bytes(100)
    local = bytearray(chain)
    for i in (3, 4, 5, 10, 50, 51, 99):
        local[i] = 1
    listed, count, size = _byte_ranges(2, chain, bytes(local), None)
    assert [(d.section, d.offset, d.length) for d in listed] == [
        (2, 3, 3),
        (2, 10, 1),
        (2, 50, 2),
        (2, 99, 1),
    ]
    assert (count, size) == (4, 7)
    listed, count, size = _byte_ranges(2, chain, bytes(local), 1)
    assert [(d.offset, d.length) for d in listed] == [(3, 3)] and (count, size) == (4, 7)
    assert _byte_ranges(0, chain, chain, None) == ([], 0, 0)
    listed, count, size = _byte_ranges(0, chain, bytes(local), 0)
    assert (listed, count, size) == ([], 4, 7)


def test_byte_ranges_compare_only_the_common_bytes():
    listed, count, size = _byte_ranges(0, b"\0\0\1", b"\0\1", None)
    assert [(d.offset, d.length) for d in listed] == [(1, 1)] and (count, size) == (1, 1)
    assert (
        str(listed[0])
        == "bytes section 0 offset 1 length 1: the chain's bytes differ from the artifact's"
    )


def altered(artifact: Artifact, offsets: list[int]) -> Artifact:
    """``artifact`` with the bytes of section 1 at ``offsets`` changed (still a valid one)."""
    data = bytearray(artifact.data)
    start = len(artifact.sections[0])
    for offset in offsets:
        data[start + offset] ^= 0x55
    return decode_artifact(bytes(data), "altered")


async def sealed_model(node: LocalnetTransport, artifact: Artifact):
    ctx = node.context(node.fund())
    plan = await plan_publish(ctx, artifact)
    await publish(ctx, artifact, plan)
    assert (await seal(ctx, plan.model, artifact)).state == ModelState.SEALED
    return ctx, plan.model


@pytest.mark.asyncio
async def test_a_sealed_model_verifies_against_its_artifact(node, tiny):
    ctx, model = await sealed_model(node, tiny)
    report = await verify(ctx.client, ctx.program_id, model, tiny)
    assert report.ok and report.differences == () and report.state == "sealed"
    assert report.chain_hash == report.declared_hash == report.artifact_hash
    assert report.program.build is not None and not report.program.upgradeable


@pytest.mark.asyncio
async def test_another_artifact_lists_its_ranges_first_limit_then_counts_them_all(
    node, tiny, capsys
):
    ctx, model = await sealed_model(node, tiny)
    other = altered(tiny, [10, 20, 4_000, 4_001, 4_002])
    report = await verify(ctx.client, ctx.program_id, model, other, listed_ranges=2)
    assert not report.ok
    kinds = [d.kind for d in report.differences]
    assert kinds == ["declared-hash", "bytes", "bytes"]  # the cause first, then the ranges
    assert (report.differing_ranges, report.listed_ranges, report.differing_bytes) == (3, 2, 5)
    ranges = [(d.section, d.offset, d.length) for d in report.differences if d.kind == "bytes"]
    assert ranges == [(1, 10, 1), (1, 20, 1)]
    every = await verify(ctx.client, ctx.program_id, model, other, listed_ranges=None)
    assert every.listed_ranges == 3

    _print_verify(Lines(), report, Path("other.curta"), ctx.client.url)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"NOT verified {model}: 1 problem, 3 differing byte ranges (5 bytes)"
    assert "and 1 more differing byte range: --all-differences lists them" in out
    assert (
        out[-1] == "trusted node   inprocess://localnet (one node: --cross-check URL adds another)"
    )


class Lines(NullReporter):
    def line(self, text: str) -> None:
        print(text)


@pytest.mark.asyncio
async def test_an_unsealed_model_and_a_foreign_account_are_reported(node, tiny):
    ctx = node.context(node.fund())
    plan = await plan_publish(ctx, tiny)
    await publish(ctx, tiny, plan)
    report = await verify(ctx.client, ctx.program_id, plan.model, tiny)
    assert [str(d) for d in report.differences] == ["state: the model is uploading, not sealed"]
    assert not report.ok
    with pytest.raises(AccountError, match="no such account"):
        await verify(ctx.client, ctx.program_id, Keypair().pubkey(), tiny)


def test_a_difference_prints_where_it_is():
    assert str(Difference("hash", "no")) == "hash: no"
    assert str(Difference("account", "gone", 3)) == "account section 3: gone"
    difference = Difference("bytes", "x", 1, 5, 2)
    assert re.fullmatch(r"bytes section 1 offset 5 length 2: x", str(difference))
    assert difference.to_json() == {
        "kind": "bytes",
        "section": 1,
        "offset": 5,
        "length": 2,
        "detail": "x",
    }
