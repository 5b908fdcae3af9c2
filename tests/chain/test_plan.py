import os

from solders.keypair import Keypair
from solders.pubkey import Pubkey

from curta_chain.chain.keys import ClusterScope, model_keypair, weight_keypair
from curta_chain.chain.plan import NewAccount, WritePiece, differing_pieces, interleave
from curta_chain.constants import LOCALNET_PROGRAM_ID

LOCAL = ClusterScope(
    "LocaLGenesis1111111111111111111111111111111", Pubkey.from_string(LOCALNET_PROGRAM_ID)
)
DEVNET = ClusterScope("EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG", LOCAL.program_id)


def test_derived_addresses_are_stable_and_distinct():
    authority, other = Keypair(), Keypair()
    h = bytes(range(32))
    assert model_keypair(authority, h, LOCAL) == model_keypair(authority, h, LOCAL)
    assert model_keypair(authority, h, LOCAL) != model_keypair(other, h, LOCAL)
    assert model_keypair(authority, h, LOCAL) != model_keypair(authority, bytes(32), LOCAL)
    weights = {weight_keypair(authority, h, LOCAL, i).pubkey() for i in range(18)}
    assert len(weights) == 18
    assert model_keypair(authority, h, LOCAL).pubkey() not in weights


def test_derived_addresses_differ_per_cluster_and_per_program():
    # An address seen on one cluster (or under one program) says nothing about the others.
    authority, h = Keypair(), bytes(range(32))
    other_program = ClusterScope(LOCAL.genesis_hash, Keypair().pubkey())
    models = {model_keypair(authority, h, s).pubkey() for s in (LOCAL, DEVNET, other_program)}
    weights = {weight_keypair(authority, h, s, 0).pubkey() for s in (LOCAL, DEVNET, other_program)}
    assert len(models) == len(weights) == 3


def test_a_prefunded_address_is_topped_up_by_the_difference_only():
    address = Keypair().pubkey()
    assert NewAccount(address, 848, 6_793_920).transfer == 6_793_920
    assert NewAccount(address, 848, 6_793_920, existing=890_880).transfer == 6_793_920 - 890_880
    assert NewAccount(address, 848, 6_793_920, existing=10**10).transfer == 0


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
