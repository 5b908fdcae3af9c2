"""The one transaction sizer: exact for legacy, v0 and v1, and the largest payload of each.

Sizes are compared with transactions signed for real (every signer's keypair), so a sizer
that measured a layout of its own would be caught; a payload is the largest when one byte
more no longer fits.
"""

import pytest
from solders.hash import Hash
from solders.instruction import AccountMeta, Instruction
from solders.keypair import Keypair
from solders.message import Message, MessageV0, MessageV1, TransactionConfig
from solders.pubkey import Pubkey
from solders.transaction import Transaction, VersionedTransaction

from curta_chain.protocol.limits import MAX_TRANSACTION_SIZE, MAX_V1_TRANSACTION_SIZE
from curta_chain.protocol.sizes import AnyMessage, largest_payload, size_limit, transaction_size

PAYER, COSIGNER = Keypair(), Keypair()
PROGRAM = Pubkey.new_unique()
BLOCKHASH = Hash.new_unique()


def build(version: str, cosigned: bool = False):
    payer = PAYER.pubkey()
    writable = Pubkey.new_unique()

    def message(data: bytes) -> AnyMessage:
        ix = Instruction(
            PROGRAM,
            data,
            [AccountMeta(writable, False, True)]
            + ([AccountMeta(COSIGNER.pubkey(), True, False)] if cosigned else []),
        )
        if version == "legacy":
            return Message.new_with_blockhash([ix], payer, BLOCKHASH)
        if version == "v0":
            return MessageV0.try_compile(payer, [ix], [], BLOCKHASH)
        config = TransactionConfig(compute_unit_limit=1_000)
        return MessageV1.try_compile(payer, [ix], BLOCKHASH, config)

    return message


def signed_size(message: AnyMessage) -> int:
    required = message.account_keys[: message.header.num_required_signatures]
    keypairs = [k for k in (PAYER, COSIGNER) if k.pubkey() in required]
    if isinstance(message, Message):
        return len(bytes(Transaction(keypairs, message, BLOCKHASH)))
    return len(bytes(VersionedTransaction(message, keypairs)))


@pytest.mark.parametrize("version", ["legacy", "v0", "v1"])
@pytest.mark.parametrize("cosigned", [False, True])
@pytest.mark.parametrize("payload", [0, 1, 127, 128, 900, 3_000])
def test_the_size_is_the_signed_transactions(version: str, cosigned: bool, payload: int):
    message = build(version, cosigned)(bytes(payload))
    assert transaction_size(message) == signed_size(message)


@pytest.mark.parametrize(
    ("version", "limit"),
    [
        ("legacy", MAX_TRANSACTION_SIZE),
        ("v0", MAX_TRANSACTION_SIZE),
        ("v1", MAX_V1_TRANSACTION_SIZE),
    ],
)
@pytest.mark.parametrize("cosigned", [False, True])
def test_the_largest_payload_fills_the_limit_and_no_more(version: str, limit: int, cosigned: bool):
    make = build(version, cosigned)
    assert size_limit(make(b"")) == limit
    payload = largest_payload(make)
    assert transaction_size(make(bytes(payload))) <= limit
    assert transaction_size(make(bytes(payload + 1))) > limit


def test_several_builds_get_the_room_of_the_tightest():
    legacy, v0 = build("legacy"), build("v0")
    both = largest_payload(legacy, v0)
    assert both == min(largest_payload(legacy), largest_payload(v0))
    assert largest_payload(v0) < largest_payload(legacy)  # its version byte and lookups
