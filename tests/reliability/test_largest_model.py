"""Models over 64 MiB on a localnet that holds every transaction to a validator's limit.

A validator loads at most 64 MiB of account data for one transaction (SIMD-0186), and the
localnet refuses what loads more, as a validator does. Attack 2 of issue 9: a model of seven
full sections (73 MB) could never be sealed, reopened or closed, since each of those named
every weight account; its 511 SOL of rent stayed locked. Now each names one or two: the
same model closes with every lamport of rent back, and the largest model the spec allows
(18 sections, 79 MB) goes through publish, a failed seal, reopen, a good seal and verify
over HTTP, some 22,000 transactions (its writes v1), every one accepted by the limit.
"""

import asyncio
import os
import time
from pathlib import Path

import pytest
from solders.instruction import AccountMeta, Instruction
from solders.keypair import Keypair
from solders.pubkey import Pubkey

from curta_chain import program
from curta_chain.artifact import Artifact
from curta_chain.chain.close import close
from curta_chain.chain.context import ChainContext
from curta_chain.chain.plan import NewAccount
from curta_chain.chain.publish import plan_publish, publish
from curta_chain.chain.rpc import RpcClient
from curta_chain.chain.seal import seal
from curta_chain.chain.sender import Sender, wait_for_signature
from curta_chain.chain.specs import Transactions, TxSpec
from curta_chain.chain.transport import HttpTransport
from curta_chain.chain.verify import verify
from curta_chain.constants import (
    LAMPORTS_PER_SOL,
    LOCALNET_PROGRAM_ID,
    MAX_SECTION_SIZE,
    WEIGHT_HEADER_SIZE,
)
from curta_chain.errors import ChainError
from curta_chain.localnet import start_in_thread
from curta_chain.program import ModelAccount, ModelState

P = Pubkey.from_string(LOCALNET_PROGRAM_ID)

SIGNATURE_FEE = 5_000


def run(url: str, work) -> object:
    async def main():
        client = RpcClient(HttpTransport(url), "confirmed")
        try:
            return await work(client)
        finally:
            await client.aclose()

    return asyncio.run(main())


async def funded(client: RpcClient, sol: int) -> Keypair:
    owner = Keypair()
    signature = await client.request_airdrop(owner.pubkey(), sol * LAMPORTS_PER_SOL)
    await wait_for_signature(client, signature)
    return owner


async def read(client: RpcClient, address: Pubkey) -> ModelAccount:
    info = await client.account(address)
    assert info is not None
    return ModelAccount.from_bytes(info.data)


def test_attack_2_a_model_over_64_mib_no_longer_locks_its_rent():
    handle = start_in_thread()
    lengths = [MAX_SECTION_SIZE] * 7

    async def work(client: RpcClient) -> None:
        owner = await funded(client, 600)
        sender = Sender(client, owner)
        # A refusal is seen as soon as it is processed: its fee shows there first.
        processed = RpcClient(client.transport, "processed")
        model, weights = Keypair(), [Keypair() for _ in lengths]
        txs = Transactions(P, owner.pubkey(), owner.pubkey())
        rent_model = await client.rent_exempt_minimum(program.MODEL_ACCOUNT_SIZE)
        funding = NewAccount(model.pubkey(), program.MODEL_ACCOUNT_SIZE, rent_model)
        await sender.send([txs.create_model(model, bytes(32), lengths, funding)])
        size = WEIGHT_HEADER_SIZE + MAX_SECTION_SIZE
        rent_weight = await client.rent_exempt_minimum(size)
        await sender.send(
            [
                txs.bind(model.pubkey(), w, i, NewAccount(w.pubkey(), size, rent_weight))
                for i, w in enumerate(weights)
            ]
        )
        rent = rent_model + 7 * rent_weight
        assert rent > 510 * LAMPORTS_PER_SOL
        me, address = owner.pubkey(), model.pubkey()
        accounts = [w.pubkey() for w in weights]

        # The old beginSealing, reopen and closeModel named every weight account: 73 MB of
        # data. Such a transaction lands failed before running and pays its fee.
        before = await processed.balance(me)
        every = [AccountMeta(k, False, True) for k in accounts]
        begin = program.begin_sealing(P, me, address)
        old = Instruction(P, begin.data, [*begin.accounts, *every])
        with pytest.raises(ChainError) as refused:
            await Sender(client, owner).send([TxSpec((old,))])
        assert str(refused.value) == "transaction failed: MaxLoadedAccountsDataSizeExceeded"
        assert await processed.balance(me) == before - SIGNATURE_FEE
        assert (await read(client, address)).state == ModelState.UPLOADING

        # Now: begin (the model alone), two seal steps (a weight account each), then close,
        # one weight account a transaction: every lamport of rent comes back.
        await sender.send([TxSpec((begin,))])
        for index in range(2):
            await sender.send([txs.seal_step(address, [accounts[0]], index)])
        assert (await read(client, address)).frozen_count == 1
        before = await processed.balance(me)
        result = await close(ChainContext(client, P, owner), address)
        assert (result.closed_accounts, result.transactions) == (8, 8)
        assert await processed.balance(me) == before + rent - 8 * SIGNATURE_FEE
        assert result.lamports_returned == rent - 8 * SIGNATURE_FEE
        assert [await client.account(k) for k in (address, *accounts)] == [None] * 8

    try:
        run(handle.url, work)
    finally:
        handle.stop()


def test_the_largest_model_end_to_end_over_the_localnet(largest: Artifact, localnet_process):
    node = localnet_process()
    timings: dict[str, float] = {}

    async def work(client: RpcClient) -> None:
        owner = await funded(client, 1_000)
        ctx = ChainContext(client, P, owner)
        started = time.monotonic()
        plan = await plan_publish(ctx, largest)
        assert len(plan.section_lengths) == 18 and plan.create_model
        published = await publish(ctx, largest, plan)
        timings["publish"] = time.monotonic() - started
        address = plan.model

        # One byte of the last section changes on chain: the seal fails and names its chunk.
        last = plan.section_lengths[17] - 1
        flipped = bytes([largest.sections[17][last] ^ 1])
        write = program.write_weights(P, owner.pubkey(), plan.weight_accounts[17], last, flipped)
        await Sender(client, owner).send([TxSpec((write,))])
        started = time.monotonic()
        failed = await seal(ctx, address, largest, check_upload=False)
        timings["failed seal"] = time.monotonic() - started
        assert failed.state == ModelState.FAILED
        assert failed.first_bad_chunk is not None and failed.first_bad_chunk.section == 17

        # publish again: 18 reopens (one weight account each) and the one write that differs.
        started = time.monotonic()
        again = await plan_publish(ctx, largest)
        assert (again.reopen_sections, len(again.writes)) == (tuple(range(18)), 1)
        await publish(ctx, largest, again)
        sealed = await seal(ctx, address, largest)
        timings["reopen and seal"] = time.monotonic() - started
        assert sealed.state == ModelState.SEALED
        assert sealed.running_hash == largest.weights_hash()

        started = time.monotonic()
        report = await verify(client, P, address, largest)
        timings["verify"] = time.monotonic() - started
        assert report.ok, report.differences
        assert published.transactions == plan.transactions > 20_000  # v1 writes of 3,864 bytes
        print(
            f"largest model over the localnet: {plan.transactions:,} publish transactions; "
            + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in timings.items())
        )

    client_cpu = time.process_time()
    run(node.url, work)
    # CPU seconds of the client (this process) and of the localnet process, for the report:
    # on a shared machine they say more than the wall clock.
    ticks = os.sysconf("SC_CLK_TCK")
    fields = Path(f"/proc/{node.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    node_cpu = (int(fields[11]) + int(fields[12])) / ticks
    print(f"CPU: client {time.process_time() - client_cpu:.1f} s, localnet {node_cpu:.1f} s")
