"""Changing a model on chain behind the CLI's back, for tests: one instruction at a time.

And ``next_slot``: waiting for the node's next slot (a program deployed or upgraded runs
from the slot after), instead of sleeping a slot's length.
"""

import asyncio

from solders.instruction import Instruction
from solders.keypair import Keypair
from solders.pubkey import Pubkey

from curta_chain import program
from curta_chain.chain.rpc import RpcClient
from curta_chain.chain.sender import Sender
from curta_chain.chain.specs import TxSpec
from curta_chain.chain.transport import HttpTransport
from curta_chain.constants import LOCALNET_PROGRAM_ID

PROGRAM_ID = Pubkey.from_string(LOCALNET_PROGRAM_ID)


def next_slot(url: str) -> None:
    """Return once the node's processed slot is past the one it is at now."""

    async def run() -> None:
        client = RpcClient(HttpTransport(url), "processed")
        try:
            now = await client.call("getSlot", [{"commitment": "processed"}])
            while await client.call("getSlot", [{"commitment": "processed"}]) <= now:
                await asyncio.sleep(0.05)
        finally:
            await client.aclose()

    asyncio.run(run())


def land(url: str, authority: Keypair, ix: Instruction) -> None:
    """Land one transaction of ``ix``, signed and paid by ``authority``."""

    async def run():
        client = RpcClient(HttpTransport(url))
        try:
            await Sender(client, authority).send([TxSpec((ix,))])
        finally:
            await client.aclose()

    asyncio.run(run())


def write_bytes_on_chain(url: str, authority: Keypair, account: Pubkey, offset: int, data: bytes):
    """Land one writeWeights transaction: how a byte gets changed on chain."""
    land(
        url, authority, program.write_weights(PROGRAM_ID, authority.pubkey(), account, offset, data)
    )


def begin_sealing_on_chain(url: str, authority: Keypair, model: Pubkey) -> None:
    """Land beginSealing directly, without the CLI's check of the artifact."""
    land(url, authority, program.begin_sealing(PROGRAM_ID, authority.pubkey(), model))
