"""The upgradeable loader's instructions, byte for byte as agave's bincode reads them."""

import struct

from solders.keypair import Keypair
from solders.message import Message
from solders.sysvar import CLOCK, RENT
from solders.transaction import Transaction

from curta_chain.chain import loader
from curta_chain.constants import MAX_TRANSACTION_SIZE


def test_instructions_are_a_u32_tag_then_their_fields():
    payer, buffer, program = (Keypair().pubkey() for _ in range(3))
    assert bytes(loader.initialize_buffer(buffer, payer).data) == struct.pack("<I", 0)
    write = loader.write(buffer, payer, 1_010, b"abc")
    assert bytes(write.data) == struct.pack("<IIQ", 1, 1_010, 3) + b"abc"
    assert [(m.pubkey, m.is_signer, m.is_writable) for m in write.accounts] == [
        (buffer, False, True),
        (payer, True, False),
    ]
    deploy = loader.deploy_with_max_data_len(payer, program, buffer, payer, 15_152)
    assert bytes(deploy.data) == struct.pack("<IQ", 2, 15_152)
    assert [m.pubkey for m in deploy.accounts][:6] == [
        payer,
        loader.programdata_address(program),
        program,
        buffer,
        RENT,
        CLOCK,
    ]
    final = loader.set_upgrade_authority(program, payer, None)
    assert bytes(final.data) == struct.pack("<I", 4) and len(final.accounts) == 2
    assert len(loader.set_upgrade_authority(program, payer, buffer).accounts) == 3
    assert bytes(loader.upgrade(program, buffer, payer, payer).data) == struct.pack("<I", 3)


def test_a_full_write_fits_a_transaction_with_one_signer():
    payer, buffer = Keypair(), Keypair().pubkey()
    for budget in (False, True):
        chunk = loader.max_write_chunk(budget)
        ix = loader.write(buffer, payer.pubkey(), 0, bytes(chunk))
        tx = Transaction.new_unsigned(Message([ix], payer.pubkey()))
        assert len(bytes(tx)) <= MAX_TRANSACTION_SIZE
    assert loader.max_write_chunk(False) > 1_000 and loader.max_write_chunk(True) > 950
