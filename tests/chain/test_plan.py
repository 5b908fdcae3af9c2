import os

from solders.keypair import Keypair

from curta_chain.chain.plan import (
    WritePiece,
    differing_pieces,
    interleave,
    model_keypair,
    weight_keypair,
)


def test_derived_addresses_are_stable_and_distinct():
    authority, other = Keypair(), Keypair()
    h = bytes(range(32))
    assert model_keypair(authority, h) == model_keypair(authority, h)
    assert model_keypair(authority, h) != model_keypair(other, h)
    assert model_keypair(authority, h) != model_keypair(authority, bytes(32))
    weights = {weight_keypair(authority, h, i).pubkey() for i in range(18)}
    assert len(weights) == 18
    assert model_keypair(authority, h).pubkey() not in weights


def test_a_new_account_needs_only_its_nonzero_pieces():
    section = bytearray(10_000)
    section[0] = 1
    section[5_500] = 2
    pieces = differing_pieces(3, bytes(section), None, 1_000)
    assert pieces == [WritePiece(3, 0, 1_000), WritePiece(3, 5_000, 1_000)]


def test_only_differing_pieces_are_rewritten_and_the_tail_is_short():
    local = os.urandom(2_500)
    chain = bytearray(local)
    assert differing_pieces(0, local, bytes(chain), 1_000) == []
    chain[2_499] ^= 0xFF
    assert differing_pieces(0, local, bytes(chain), 1_000) == [WritePiece(0, 2_000, 500)]


def test_interleave_alternates_accounts():
    a = [WritePiece(0, i, 1) for i in range(3)]
    b = [WritePiece(1, i, 1) for i in range(1)]
    assert [p.section for p in interleave([a, b])] == [0, 1, 0, 0]
