"""What a transaction does on chain, read back: how a send learns what landed without a status.

A node may deliver every transaction and still answer ``getSignatureStatuses`` with null
(a node that hides statuses, or one whose cache forgot them). Before the sender signs a
transaction again (its blockhash expired unseen) or gives up, and after a few sends of one
that stays unseen, it reads the transaction's effect on chain, as a resume does: the bytes
a write put, the account a creation made, the count a seal or run step moved. The caller
of ``Sender.send`` says how, with one of these, each index-aligned with its specs:

- ``Written``: each spec writes bytes at an offset of an account. One read of an account
  shows every write into the span it covers (pieces less than ``NEARBY`` apart share one).
- ``ReadBack``: each spec leaves an account in a state a predicate recognises (created,
  bound, reopened, sealing).
- ``Counted``: the specs are interchangeable steps (seal, run) and the chain counts them; as
  many as the count grew by beyond those already known landed are taken as landed (which
  ones, it cannot tell: ``exact`` is False).
"""

from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from solders.pubkey import Pubkey

from curta_chain.chain.rpc import AccountInfo, RpcClient
from curta_chain.errors import ChainError

NEARBY = 64 * 1024
"""Bytes between two pieces of an account below which one read covers both."""


class Effects(Protocol):
    """Reads which of a send's transactions took effect on chain."""

    @property
    def exact(self) -> bool:
        """Whether it tells which transactions landed (else only how many)."""
        ...

    async def landed(self, indices: Sequence[int], known: int) -> list[bool]:
        """For each spec index in ``indices``: whether its effect is on chain.

        ``known`` is how many of the send's transactions are already known to have
        landed (a status seen, or an effect found before).
        """
        ...


@dataclass(frozen=True)
class Written:
    """Specs that each write ``data`` at ``offset`` of ``account`` (the index's piece)."""

    client: RpcClient
    pieces: Sequence[tuple[Pubkey, int, bytes]]
    exact: bool = True

    async def landed(self, indices: Sequence[int], known: int) -> list[bool]:
        """Whether each piece's bytes are on chain: one read per run of nearby pieces."""
        found: dict[int, bool] = {}
        for account, start, end, group in self._spans(indices):
            try:
                held = await self.client.account_data(account, start, end - start)
            except ChainError:
                held = b""  # not there (yet): none of its writes landed
            for i in group:
                _, offset, data = self.pieces[i]
                found[i] = held[offset - start : offset - start + len(data)] == data
        return [found[i] for i in indices]

    def _spans(self, indices: Sequence[int]) -> list[tuple[Pubkey, int, int, list[int]]]:
        """The pieces ``indices`` as spans of an account to read: nearby ones share one."""
        by_account: dict[Pubkey, list[int]] = defaultdict(list)
        for index in sorted(indices, key=lambda i: self.pieces[i][1]):
            by_account[self.pieces[index][0]].append(index)
        spans: list[tuple[Pubkey, int, int, list[int]]] = []
        for account, group in by_account.items():
            for index in group:
                _, offset, data = self.pieces[index]
                last = spans[-1] if spans else None
                if last is not None and last[0] == account and offset - last[2] <= NEARBY:
                    spans[-1] = (account, last[1], max(last[2], offset + len(data)), last[3])
                    last[3].append(index)
                else:
                    spans.append((account, offset, offset + len(data), [index]))
        return spans


@dataclass(frozen=True)
class ReadBack:
    """Specs that each leave ``addresses[i]`` in a state ``holds(i, account)`` recognises."""

    client: RpcClient
    addresses: Sequence[Pubkey]
    holds: Callable[[int, AccountInfo | None], bool]
    head: int = 4096
    """The bytes of each account ``holds`` needs."""
    exact: bool = True

    async def landed(self, indices: Sequence[int], known: int) -> list[bool]:
        """Read each account (100 a call) and ask ``holds``."""
        accounts = await self.client.accounts([self.addresses[i] for i in indices], self.head)
        return [self.holds(i, info) for i, info in zip(indices, accounts, strict=True)]


@dataclass(frozen=True)
class Counted:
    """Interchangeable steps the chain counts: ``count()`` was ``before`` when they went."""

    count: Callable[[], Awaitable[int]]
    before: int
    exact: bool = False

    async def landed(self, indices: Sequence[int], known: int) -> list[bool]:
        """The first as many of ``indices`` as the count grew by beyond ``known``."""
        grown = await self.count() - self.before - known
        return [n < grown for n in range(len(indices))]


def created(client: RpcClient, addresses: Sequence[Pubkey], owner: Pubkey) -> ReadBack:
    """Specs that each create ``addresses[i]``, ``owner``'s once created."""
    return ReadBack(client, addresses, lambda _, info: info is not None and info.owner == owner, 0)


def closed(client: RpcClient, addresses: Sequence[Pubkey]) -> ReadBack:
    """Specs that each close ``addresses[i]`` (no account there once closed)."""
    return ReadBack(client, addresses, lambda _, info: info is None, 0)
