"""Changing a model on chain behind the CLI's back, for tests: one instruction at a time."""

import asyncio

from solders.keypair import Keypair
from solders.pubkey import Pubkey

from curta_chain import program
from curta_chain.chain.rpc import RpcClient
from curta_chain.chain.sender import Sender, TxSpec
from curta_chain.chain.transport import HttpTransport
from curta_chain.constants import LOCALNET_PROGRAM_ID

PROGRAM_ID = Pubkey.from_string(LOCALNET_PROGRAM_ID)


def write_bytes_on_chain(url: str, authority: Keypair, account: Pubkey, offset: int, data: bytes):
    """Land one writeWeights transaction: how a byte gets changed on chain."""

    async def run():
        client = RpcClient(HttpTransport(url))
        try:
            ix = program.write_weights(PROGRAM_ID, authority.pubkey(), account, offset, data)
            await Sender(client, authority).send([TxSpec((ix,))])
        finally:
            await client.aclose()

    asyncio.run(run())


def begin_sealing_on_chain(url: str, authority: Keypair, model: Pubkey) -> None:
    """Land beginSealing directly, without the CLI's check of the artifact."""

    async def run():
        client = RpcClient(HttpTransport(url))
        try:
            info = await client.account(model)
            accounts = [
                s.weight_account for s in program.ModelAccount.from_bytes(info.data).sections
            ]
            ix = program.begin_sealing(PROGRAM_ID, authority.pubkey(), model, accounts)
            await Sender(client, authority).send([TxSpec((ix,))])
        finally:
            await client.aclose()

    asyncio.run(run())
