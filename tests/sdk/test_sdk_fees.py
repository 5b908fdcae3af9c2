"""The page's fees and rent are the CLI's, computed from the message and the size alone.

sdk/js/src/fees.ts is a port of ``protocol.compute_budget.transaction_fee`` and
``chain.rent.rent_exempt_minimum``: here both price the same messages (legacy, v0 and v1;
with and without a compute-unit limit and price; builtin and other programs' default
limits; precompiles' signatures; compute-budget instructions the runtime refuses) and the
same account sizes, and the SDK's must give the Python's every time.
"""

import json
import subprocess
from pathlib import Path

from solders.compute_budget import (
    request_heap_frame,
    set_compute_unit_limit,
    set_compute_unit_price,
)
from solders.hash import Hash
from solders.instruction import Instruction
from solders.message import Message, MessageV0, MessageV1, TransactionConfig, to_bytes_versioned
from solders.pubkey import Pubkey
from solders.system_program import TransferParams, transfer

from curta_chain.chain.rent import rent_exempt_minimum
from curta_chain.protocol.compute_budget import (
    COMPUTE_BUDGET_PROGRAM_ID,
    set_loaded_accounts_data_size_limit,
    transaction_fee,
)

SCRIPT = Path(__file__).parent / "fees.mjs"
ED25519 = Pubkey.from_string("Ed25519SigVerify111111111111111111111111111")
SECP256R1 = Pubkey.from_string("Secp256r1SigVerify1111111111111111111111111")


def _messages() -> list[Message | MessageV0 | MessageV1]:
    payer, other, program = Pubkey.new_unique(), Pubkey.new_unique(), Pubkey.new_unique()
    pay = transfer(TransferParams(from_pubkey=payer, to_pubkey=other, lamports=5))
    cosigned = transfer(TransferParams(from_pubkey=other, to_pubkey=payer, lamports=7))
    custom = Instruction(program, b"\x01\x02", [])
    raw = lambda data: Instruction(COMPUTE_BUDGET_PROGRAM_ID, data, [])  # noqa: E731
    legacy = [
        [pay],
        [pay, cosigned],  # two signers
        [set_compute_unit_limit(1_400_000), pay],
        [set_compute_unit_limit(200_000), set_compute_unit_price(1), pay],
        [set_compute_unit_limit(1_400_000), set_compute_unit_price(10**12), custom],
        [set_compute_unit_price(3), pay, custom],  # default limit: builtins 3,000, others 200,000
        [set_compute_unit_price(10**6), *[custom] * 9],  # the default passes 1,400,000
        [set_compute_unit_limit(2_000_000), set_compute_unit_price(7), pay],  # capped
        [set_compute_unit_price(5), set_compute_unit_price(6), pay],  # duplicate: no priority
        [raw(b"\x03\x01"), pay],  # a price that does not decode
        [raw(b"\x00"), pay],  # the retired tag
        [raw(b""), pay],
        [request_heap_frame(33 * 1024 + 1), set_compute_unit_price(9), pay],  # a bad heap frame
        [request_heap_frame(64 * 1024), set_compute_unit_price(9), pay],
        [set_loaded_accounts_data_size_limit(1 << 20), set_compute_unit_price(11), pay],
        [raw(b"\x03" + (10**9).to_bytes(8, "little") + b"tail"), pay],  # bytes past the value
        [Instruction(ED25519, bytes([3, 0]), []), pay],  # precompiles' signatures count
        [Instruction(SECP256R1, bytes([2]), []), Instruction(ED25519, b"", []), pay],
    ]
    out: list[Message | MessageV0 | MessageV1] = [
        Message.new_with_blockhash(ixs, payer, Hash.new_unique()) for ixs in legacy
    ]
    out += [MessageV0.try_compile(payer, ixs, [], Hash.new_unique()) for ixs in legacy[2:9]]
    for fee in (None, 0, 12_345):
        config = TransactionConfig(priority_fee=fee, compute_unit_limit=50_000)
        out.append(MessageV1.try_compile(payer, [pay, cosigned], Hash.new_unique(), config))
    config = TransactionConfig(priority_fee=99)  # its compute-budget instructions configure nothing
    out.append(
        MessageV1.try_compile(
            payer, [set_compute_unit_price(10**9), pay], Hash.new_unique(), config
        )
    )
    out.append(
        MessageV1.try_compile(
            payer, [Instruction(ED25519, b"\x04", []), pay], Hash.new_unique(), config
        )
    )
    return out


def test_the_sdk_prices_messages_and_rent_as_the_cli_does(sdk):
    messages = _messages()
    sizes = [0, 1, 165, 856, 2_048, 1_234_567, 10_485_760]
    cases = {"messages": [to_bytes_versioned(m).hex() for m in messages], "sizes": sizes}
    done = subprocess.run(
        ["node", str(SCRIPT)], input=json.dumps(cases), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout)
    assert [int(fee) for fee in got["fees"]] == [transaction_fee(m) for m in messages]
    assert [int(rent) for rent in got["rents"]] == [rent_exempt_minimum(n) for n in sizes]
    # The cases reach what they are for: priority fees, refused budgets and precompiles.
    fees = [transaction_fee(m) for m in messages]
    assert len(set(fees)) > 10 and max(fees) > 10**9 and 5_000 in fees
    assert max(got["signatures"]) >= 4
