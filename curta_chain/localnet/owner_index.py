"""Which program owns each account transactions have touched.

LiteSVM cannot list accounts, yet getProgramAccounts must, and a snapshot must save every
account a transaction changed. The localnet therefore records each account a landed
transaction could write, with its owner; an account that is closed leaves the index.
"""

from collections.abc import Iterator

from solders.pubkey import Pubkey


class OwnerIndex:
    """Accounts by address and by owner."""

    def __init__(self) -> None:
        self._owner_of: dict[Pubkey, Pubkey] = {}
        self._by_owner: dict[Pubkey, set[Pubkey]] = {}

    def owner(self, key: Pubkey) -> Pubkey | None:
        """Return the owner recorded for ``key``, or None if it is not indexed."""
        return self._owner_of.get(key)

    def record(self, key: Pubkey, owner: Pubkey) -> None:
        """Record that ``owner`` owns ``key`` (replacing any earlier owner)."""
        self.forget(key)
        self._owner_of[key] = owner
        self._by_owner.setdefault(owner, set()).add(key)

    def forget(self, key: Pubkey) -> None:
        """Drop ``key`` (it was closed)."""
        owner = self._owner_of.pop(key, None)
        if owner is not None:
            self._by_owner[owner].discard(key)

    def owned_by(self, owner: Pubkey) -> list[Pubkey]:
        """Return the addresses ``owner`` owns, in byte order."""
        return sorted(self._by_owner.get(owner, ()), key=bytes)

    def __iter__(self) -> Iterator[Pubkey]:
        return iter(self._owner_of)

    def __len__(self) -> int:
        return len(self._owner_of)
