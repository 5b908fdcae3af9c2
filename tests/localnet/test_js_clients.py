"""The localnet as real JavaScript clients see it: @solana/web3.js 1.99, @solana/kit 8 and
@coral-xyz/anchor 0.32 (with our IDL), each run by node against a localnet this test starts.

The suites are in ``tests/localnet/js`` (``bash scripts/setup.sh`` runs ``npm ci`` there).
Each runs every method and subscription its client exposes, at each commitment where one
applies, and compares the answers with the shapes of Solana's JSON-RPC documentation.
The localnet runs on a manual clock: a suite asks for slots to pass (``@@{"advance": n}``
on stdout) and this test moves the clock and answers "ok", so nothing sleeps against
slot durations. Each suite also runs once against the busy mode's blocks
(``BusyOptions(blocks=True)``, no loss): the web3.js and kit suites' sends then move the
clock one slot to their block (``landed()``); Anchor's ``.rpc()`` waits for its
confirmation inside the call, so for it a producer thread moves the clock one slot
whenever the leader has something queued (a state, not a time).
"""

import json
import subprocess
import threading
from pathlib import Path
from typing import Any

import processes
import pytest
from localnet_helpers import advance_slots
from node_packages import require_node_packages
from reference_client import Client
from solana.rpc.commitment import Processed
from solana.rpc.models import TxOpts
from solders.hash import Hash
from solders.instruction import Instruction
from solders.keypair import Keypair
from solders.message import Message
from solders.pubkey import Pubkey
from solders.system_program import (
    CreateAccountParams,
    create_account,
    create_lookup_table,
    create_nonce_account,
    extend_lookup_table,
)
from solders.transaction import VersionedTransaction
from spl.token.instructions import (
    approve,
    create_associated_token_account,
    get_associated_token_address,
    initialize_mint,
    mint_to,
)
from spl.token.models import ApproveParams, InitializeMintParams, MintToParams

from curta_chain.constants import LOCALNET_PROGRAM_ID
from curta_chain.localnet import BusyOptions, ManualClock, start_in_thread
from curta_chain.localnet.busy import NOT_BUSY
from curta_chain.localnet.parsed_programs import MEMO_PROGRAMS, TOKEN_PROGRAM
from curta_chain.localnet.parsed_tokens import MINT_SIZE
from curta_chain.program import IDL_PATH

JS = Path(__file__).parent / "js"
SUITE_TIMEOUT = 240.0
"""Seconds one client suite may take (it normally takes a few)."""
SOL = 10**9


def _send(
    client: Client, payer: Keypair, instructions: list, *signers: Keypair, skip: bool = False
) -> str:
    blockhash = client.get_latest_blockhash().value.blockhash  # the client's: processed
    message = Message.new_with_blockhash(instructions, payer.pubkey(), blockhash)
    tx = VersionedTransaction(message, [payer, *signers])
    # TxOpts preflights at finalized unless told: a bank that knows no processed blockhash.
    opts = TxOpts(skip_preflight=skip, preflight_commitment=Processed)
    return str(client.send_transaction(tx, opts=opts).value)


def build_world(url: str, ws_url: str, clock: ManualClock, blocks: bool) -> dict[str, Any]:
    """Set up what the suites read: a payer, a memo, a token mint and account, a delegate,
    a lookup table and a durable nonce account, all finalized.

    The airdrop, the memo and the token transactions share one block (with ``blocks``, the
    memo and token ones skip preflight: the airdrop funding them runs first in that block).
    """
    client = Client(url, "processed")
    payer = Keypair()
    airdrop = str(client.request_airdrop(payer.pubkey(), 100 * SOL).value)
    memo = _send(client, payer, [Instruction(MEMO_PROGRAMS[0], b"curta world", [])], skip=blocks)
    mint, holder, delegate = Keypair(), Keypair(), Keypair()
    token_account = get_associated_token_address(holder.pubkey(), mint.pubkey())
    rent = client.get_minimum_balance_for_rent_exemption(MINT_SIZE).value
    token = _send(
        client,
        payer,
        [
            create_account(
                CreateAccountParams(
                    from_pubkey=payer.pubkey(),
                    to_pubkey=mint.pubkey(),
                    lamports=rent,
                    space=MINT_SIZE,
                    owner=TOKEN_PROGRAM,
                )
            ),
            initialize_mint(
                InitializeMintParams(
                    decimals=6,
                    program_id=TOKEN_PROGRAM,
                    mint=mint.pubkey(),
                    mint_authority=payer.pubkey(),
                )
            ),
            create_associated_token_account(payer.pubkey(), holder.pubkey(), mint.pubkey()),
            mint_to(
                MintToParams(
                    program_id=TOKEN_PROGRAM,
                    mint=mint.pubkey(),
                    dest=token_account,
                    mint_authority=payer.pubkey(),
                    amount=1_500_000,
                )
            ),
            approve(
                ApproveParams(
                    program_id=TOKEN_PROGRAM,
                    source=token_account,
                    delegate=delegate.pubkey(),
                    owner=holder.pubkey(),
                    amount=500_000,
                )
            ),
        ],
        mint,
        holder,
        skip=blocks,
    )
    if blocks:
        advance_slots(clock, 1)
    slot = client.get_slot().value
    create, table = create_lookup_table(
        {"authority_address": payer.pubkey(), "payer_address": payer.pubkey(), "recent_slot": 0}
    )
    looked_up = [Pubkey.new_unique(), Pubkey.new_unique()]
    extend = extend_lookup_table(
        {
            "lookup_table_address": table,
            "authority_address": payer.pubkey(),
            "payer_address": payer.pubkey(),
            "new_addresses": looked_up,
        }
    )
    _send(client, payer, [create, extend])
    nonce = Keypair()
    _send(
        client,
        payer,
        list(create_nonce_account(payer.pubkey(), nonce.pubkey(), payer.pubkey(), 2 * SOL)),
        nonce,
    )
    advance_slots(clock, 34 if blocks else 33)
    return {
        "blocks": blocks,
        "url": url,
        "wsUrl": ws_url,
        "payer": list(bytes(payer)),
        "airdrop": airdrop,
        "memo": memo,
        "tokenSignature": token,
        "slot": slot,
        "mint": str(mint.pubkey()),
        "holder": str(holder.pubkey()),
        "delegate": str(delegate.pubkey()),
        "tokenAccount": str(token_account),
        "lookupTable": str(table),
        "lookedUp": [str(key) for key in looked_up],
        "nonce": str(nonce.pubkey()),
        "programId": LOCALNET_PROGRAM_ID,
        "idl": str(IDL_PATH),
        "genesisHash": str(client.get_genesis_hash().value),
        "blockhash": str(Hash.default()),
    }


def run_suite(script: str, blocks: bool = False) -> dict[str, dict[str, Any]]:
    """Run ``js/<script>`` against a fresh localnet; return each check's outcome by name."""
    clock = ManualClock()
    handle = start_in_thread(now=clock, busy=BusyOptions(blocks=True) if blocks else NOT_BUSY)
    moving = threading.Lock()  # the suite's advances and the producer's move one clock
    done = threading.Event()

    def advance(slots: int) -> None:
        with moving:
            advance_slots(clock, slots)

    def produce() -> None:
        while not done.wait(0.02):
            if handle.call(lambda localnet: bool(localnet.leader and localnet.leader.queue)):
                advance(1)

    producer = threading.Thread(target=produce, daemon=True)
    try:
        world = build_world(handle.url, handle.ws_url or "", clock, blocks)
        if blocks and script == "anchor.mjs":
            producer.start()
        process = processes.start(
            ["node", str(JS / script), json.dumps(world)],
            cwd=JS,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert process.stdin is not None and process.stdout is not None
        checks: dict[str, dict[str, Any]] = {}
        other: list[str] = []
        finished = False
        for line in process.stdout:
            if not line.startswith("@@"):
                other.append(line)
                continue
            message = json.loads(line[2:])
            if "advance" in message:
                advance(message["advance"])
                process.stdin.write("ok\n")
                process.stdin.flush()
            elif "check" in message:
                checks[message["check"]] = message
            elif message.get("done"):
                finished = True
        processes.wait(process, SUITE_TIMEOUT)
        assert finished, f"{script} did not finish: {''.join(other)[-3000:]}"
        checks["(client output)"] = {"ok": True, "output": other}
        return checks
    finally:
        done.set()
        if producer.is_alive():
            producer.join()
        handle.stop()


SUITES = (
    ("web3.mjs", False),
    ("kit.mjs", False),
    ("anchor.mjs", False),
    ("web3.mjs", True),
    ("kit.mjs", True),
    ("anchor.mjs", True),
)


@pytest.mark.parametrize(
    ("script", "blocks"), SUITES, ids=[f"{s}{'-blocks' if b else ''}" for s, b in SUITES]
)
def test_js_client_suite(script, blocks):
    require_node_packages(JS, "@solana/web3.js")
    checks = run_suite(script, blocks)
    output = checks.pop("(client output)")["output"]
    failed = {name: check["error"] for name, check in checks.items() if not check["ok"]}
    assert not failed, "\n\n".join(f"{name}: {error}" for name, error in failed.items())
    assert len(checks) >= 5
    # A resubscribe loop or a refused ping would show here as console errors.
    errors = [line for line in output if "error" in line.lower()]
    assert len(errors) < 5, "".join(errors[:20])
