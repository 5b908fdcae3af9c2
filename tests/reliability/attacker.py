"""What an attacker does with his own keys, over HTTP: deploy, upgrade, rewrite, drain.

The attacker uses the same library a user does (``curta_chain.chain.deploy``) to put his
stand-in program (``standin/standin.c``: it accepts every curta instruction, and on its
magic prefix rewrites or drains any account it owns) on the chain, upgrades a program he
holds the upgrade authority of, and sends the stand-in's rewrite and drain instructions.
"""

import asyncio
import struct
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

from chain_helpers import next_slot
from solders.instruction import AccountMeta, Instruction
from solders.keypair import Keypair
from solders.pubkey import Pubkey

from curta_chain.chain import loader, specs
from curta_chain.chain.context import ChainContext
from curta_chain.chain.deploy import deploy, plan_deploy
from curta_chain.chain.plan import NewAccount
from curta_chain.chain.rent import rent_exempt_minimum
from curta_chain.chain.rpc import RpcClient
from curta_chain.chain.sender import Sender
from curta_chain.chain.specs import TxSpec
from curta_chain.chain.transport import HttpTransport
from curta_chain.localnet.features import DISABLE_SBPF_V0_DEPLOYMENT
from curta_chain.program import ShippedProgram, shipped_program

STANDIN = ShippedProgram("stand-in", Path(__file__).with_name("standin") / "standin.so", 0)
"""The attacker's program, in the shape ``deploy`` takes a build."""
CURTA = shipped_program("sbpf-v3")
"""The build ``deploy`` takes on the localnet, which enables SBPF v3."""
V0_DEPLOYS = (DISABLE_SBPF_V0_DEPLOYMENT,)
"""Deactivate these (SIMD-0500) for a localnet that deploys the stand-in, an SBPF v0 ELF."""
MAGIC = b"STANDIN!"
T = TypeVar("T")


def on_chain(url: str, work: Callable[[RpcClient], Awaitable[T]]) -> T:
    """Run ``work`` with a fresh RPC client (made inside the event loop, as it must be)."""

    async def run() -> T:
        client = RpcClient(HttpTransport(url))
        try:
            return await work(client)
        finally:
            await client.aclose()

    return asyncio.run(run())


def deploy_program(
    url: str, payer: Keypair, build: ShippedProgram, program: Keypair | None = None
) -> Pubkey:
    """Deploy ``build`` (upgradeable, ``payer`` the authority) and wait a slot for it to load."""
    program = program or Keypair()

    async def work(client: RpcClient) -> Pubkey:
        ctx = ChainContext(client, program.pubkey(), payer)
        await deploy(ctx, program, await plan_deploy(ctx, program, build, False))
        return program.pubkey()

    address = on_chain(url, work)
    next_slot(url)  # deployed code runs from the next slot on
    return address


def upgrade_program(url: str, authority: Keypair, program_id: Pubkey, elf: bytes) -> None:
    """Replace ``program_id``'s bytes with ``elf``: a buffer, its writes, Upgrade."""
    buffer = Keypair()
    size = loader.BUFFER_METADATA_SIZE + len(elf)
    payer = authority.pubkey()
    funding = NewAccount(buffer.pubkey(), size, rent_exempt_minimum(size))
    create = specs.new_account(payer, funding, loader.LOADER_V3)
    chunk = loader.max_write_chunk()
    txs = [
        [TxSpec((*create, loader.initialize_buffer(buffer.pubkey(), payer)), (buffer,))],
        [
            TxSpec((loader.write(buffer.pubkey(), payer, at, elf[at : at + chunk]),))
            for at in range(0, len(elf), chunk)
        ],
        [TxSpec((loader.upgrade(program_id, buffer.pubkey(), payer, payer),))],
    ]

    async def work(client: RpcClient) -> None:
        sender = Sender(client, authority)
        for batch in txs:
            await sender.send(batch)

    on_chain(url, work)
    next_slot(url)  # the upgraded code runs from the next slot on


def rewrite(
    url: str, payer: Keypair, standin: Pubkey, account: Pubkey, at: int, data: bytes
) -> None:
    """Have the stand-in write ``data`` into ``account`` (which it owns) at offset ``at``."""
    chunk = 900
    txs = [
        TxSpec(
            (
                Instruction(
                    standin,
                    MAGIC + b"\x01" + struct.pack("<Q", at + i) + data[i : i + chunk],
                    [AccountMeta(account, False, True)],
                ),
            )
        )
        for i in range(0, len(data), chunk)
    ]
    on_chain(url, lambda client: Sender(client, payer).send(txs))


def drain(url: str, payer: Keypair, standin: Pubkey, account: Pubkey) -> None:
    """Have the stand-in move every lamport of ``account`` to the payer."""
    ix = Instruction(
        standin,
        MAGIC + b"\x02",
        [AccountMeta(account, False, True), AccountMeta(payer.pubkey(), False, True)],
    )
    on_chain(url, lambda client: Sender(client, payer).send([TxSpec((ix,))]))


def new_owned_account(url: str, payer: Keypair, owner: Pubkey, size: int) -> Pubkey:
    """Create an account of ``size`` zero bytes owned by ``owner``; return its address."""
    account = Keypair()
    funding = NewAccount(account.pubkey(), size, rent_exempt_minimum(size))
    create = specs.new_account(payer.pubkey(), funding, owner)
    on_chain(url, lambda client: Sender(client, payer).send([TxSpec(create, (account,))]))
    return account.pubkey()
