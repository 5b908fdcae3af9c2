"""BankHistory on its own: what each commitment sees, and that it keeps only what changed."""

import random

import pytest
from solders.pubkey import Pubkey

from curta_chain.localnet.bank_history import (
    BLOCK_BYTES,
    AccountState,
    BankHistory,
    changed_blocks,
)

OWNER = Pubkey.new_unique()
B = BLOCK_BYTES


class Chain:
    """A dict of accounts standing in for LiteSVM, written one slot at a time."""

    def __init__(self, depth: int = 32):
        self.accounts: dict[Pubkey, AccountState] = {}
        self.history = BankHistory(self.accounts.get, depth)
        self.slot = 1

    def write(self, key: Pubkey, data: bytes, lamports: int = 1) -> None:
        self.history.will_write(self.slot, [key])
        self.accounts[key] = AccountState(lamports, OWNER, False, 0, data)

    def close(self, key: Pubkey) -> None:
        self.history.will_write(self.slot, [key])
        del self.accounts[key]

    def next_slot(self, count: int = 1) -> None:
        self.slot += count
        self.history.advance(self.slot)

    def view(self, key: Pubkey, slot: int) -> AccountState | None:
        state = self.history.view(key, slot)
        return self.accounts.get(key) if state is BankHistory.LIVE else state


@pytest.mark.parametrize(
    ("size", "changes", "expected"),
    [
        (100, [], []),
        (100, [5], [(0, 100)]),
        (4 * BLOCK_BYTES, [BLOCK_BYTES + 3], [(BLOCK_BYTES, 2 * BLOCK_BYTES)]),
        (4 * BLOCK_BYTES, [0, BLOCK_BYTES, 3 * BLOCK_BYTES], [(0, 2 * BLOCK_BYTES), (1536, 2048)]),
        (2 * BLOCK_BYTES + 10, [2 * BLOCK_BYTES + 9], [(2 * BLOCK_BYTES, 2 * BLOCK_BYTES + 10)]),
        (
            2 * BLOCK_BYTES + 10,
            [BLOCK_BYTES, 2 * BLOCK_BYTES],
            [(BLOCK_BYTES, 2 * BLOCK_BYTES + 10)],
        ),
    ],
)
def test_changed_blocks(size, changes, expected):
    old = bytes(size)
    new = bytearray(old)
    for offset in changes:
        new[offset] = 1
    assert changed_blocks(old, bytes(new)) == expected


def test_each_level_sees_its_slot():
    chain = Chain()
    key = Pubkey.new_unique()
    chain.write(key, b"a" * 10)
    assert chain.view(key, chain.slot - 1) is None  # confirmed: not yet
    chain.next_slot()
    assert chain.view(key, chain.slot - 1).data == b"a" * 10
    chain.write(key, b"b" * 10, lamports=2)
    chain.next_slot()
    chain.write(key, b"c" * 10, lamports=3)
    assert [chain.view(key, s) for s in (0,)] == [None]
    assert chain.view(key, 1).data == b"a" * 10
    assert chain.view(key, 2).lamports == 2
    assert chain.view(key, chain.slot - 1).data == b"b" * 10  # confirmed
    assert chain.accounts[key].data == b"c" * 10  # processed


def test_a_closed_account_is_absent_only_from_then_on():
    chain = Chain()
    key = Pubkey.new_unique()
    chain.write(key, b"x")
    chain.next_slot()
    chain.close(key)
    chain.next_slot()
    assert chain.view(key, 1).data == b"x"
    assert chain.view(key, 2) is None


def test_only_changed_blocks_are_kept_and_the_window_forgets():
    chain = Chain(depth=4)
    big = Pubkey.new_unique()
    size = 10 * 1024 * 1024
    chain.write(big, bytes(size))
    chain.next_slot()
    rng = random.Random(7)
    for _ in range(3):
        data = bytearray(chain.accounts[big].data)
        for _ in range(10):  # ten 1,010-byte writes per slot
            offset = rng.randrange(size - 1010)
            data[offset : offset + 1010] = rng.randbytes(1010)
        chain.write(big, bytes(data))
        chain.next_slot()
    # One confirmed copy of the account, and at most 10 x 3 blocks per slot of undo.
    assert chain.history.base_bytes == size
    assert chain.history.undo_bytes <= 3 * 10 * 3 * BLOCK_BYTES + size
    chain.next_slot(10)
    assert chain.history.bytes == 0 and chain.history.keys() == []


def test_history_matches_a_full_copy_per_slot():
    """Random writes: every view equals the state a naive full copy per slot recorded."""
    rng = random.Random(13)
    chain = Chain(depth=6)
    keys = [Pubkey.new_unique() for _ in range(4)]
    snapshots: dict[int, dict[Pubkey, AccountState]] = {}
    for _ in range(40):
        for _ in range(rng.randrange(3)):
            key = rng.choice(keys)
            current = chain.accounts.get(key)
            if current is not None and rng.random() < 0.1:
                chain.close(key)
                continue
            size = len(current.data) if current and rng.random() < 0.8 else rng.randrange(1, 3000)
            data = bytearray(current.data if current and len(current.data) == size else bytes(size))
            offset = rng.randrange(size)
            data[offset] = rng.randrange(256)
            chain.write(key, bytes(data), rng.randrange(1, 10))
        snapshots[chain.slot] = dict(chain.accounts)
        chain.next_slot()
        for slot in range(max(chain.slot - 6, 1), chain.slot):
            for key in keys:
                assert chain.view(key, slot) == snapshots[slot].get(key), (slot, key)
