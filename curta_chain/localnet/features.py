"""The localnet's feature gates: every one active at genesis but those deactivated.

As ``solana-test-validator`` (agave 4.3) builds its genesis: every feature it knows active
from slot 0, each with its account (``Feature { activated_at: Some(0) }``, owned by the
Feature program), except the ids given to ``--deactivate-feature``, which get no account.
The localnet knows the features of its runtime (solders' LiteSVM) and ``enable_tx_v1``
(SIMD-0385), which it enforces itself at its door because LiteSVM does not. A deactivated
id the localnet does not know is ignored with the validator's warning.

The set is fixed at genesis: a ledger keeps it (``meta.json``), and a restart on an
existing ledger ignores ``--deactivate-feature``, as the validator does.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

from solders.account import Account
from solders.litesvm import FeatureSet
from solders.pubkey import Pubkey

from curta_chain.protocol.features import DISABLE_SBPF_V0, FEATURE_IDS, FEATURE_PROGRAM_ID
from curta_chain.protocol.features import ENABLE_TX_V1 as ENABLE_TX_V1_NAME

ENABLE_TX_V1 = FEATURE_IDS[ENABLE_TX_V1_NAME]
"""agave 4.3's ``enable_tx_v1`` (SIMD-0385): inactive, a v1 transaction is refused with
``UnsupportedVersion`` (preflight) or dropped (sigverify)."""
DISABLE_SBPF_V0_DEPLOYMENT = FEATURE_IDS[DISABLE_SBPF_V0]
"""agave's ``disable_sbpf_v0_v1_v2_deployment`` (SIMD-0500): active, loader v3 refuses to
deploy, upgrade or finalize an SBPF v0, v1 or v2 program (InvalidAccountData)."""
RAISE_CPI_NESTING_LIMIT_TO_8 = Pubkey.from_string("6TkHkRmP7JZy1fdM6fg5uXn76wChQBWGokHBJzrLB3mj")
"""agave's ``raise_cpi_nesting_limit_to_8`` (SIMD-0268): part of the compute budget the
localnet gives LiteSVM for v1 transactions (``ComputeBudget(simd_0268_active)``)."""
BEFORE_AGAVE_4: frozenset[Pubkey] = frozenset({DISABLE_SBPF_V0_DEPLOYMENT, ENABLE_TX_V1})
"""What a ledger written before the localnet played Agave 4 ran without (its meta.json
names no deactivated features)."""
ACTIVE_FEATURE = b"\x01" + bytes(8)
"""bincode ``Feature { activated_at: Some(0) }``."""


@dataclass(frozen=True)
class Features:
    """The features of one chain: which are active, and which were asked off."""

    deactivated: frozenset[Pubkey]
    """The known features deactivated at genesis."""

    @classmethod
    def at_genesis(cls, deactivate: Iterable[Pubkey]) -> tuple["Features", list[Pubkey]]:
        """Every known feature but ``deactivate``; also returns the unknown ids asked off."""
        known = _known_set()
        asked = list(dict.fromkeys(deactivate))
        return cls(frozenset(k for k in asked if k in known)), [k for k in asked if k not in known]

    def is_active(self, feature: Pubkey) -> bool:
        """Whether ``feature`` is active (known and not deactivated)."""
        return feature not in self.deactivated and feature in _known_set()

    @property
    def active(self) -> list[Pubkey]:
        """Every active feature, in the runtime's order, then ``enable_tx_v1``."""
        return [k for k in known_features() if k not in self.deactivated]

    def runtime(self) -> FeatureSet:
        """LiteSVM's feature set for this chain (``enable_tx_v1`` is the localnet's own)."""
        active = FeatureSet.all_enabled().active
        inactive = {key for key in self.deactivated if active.pop(key, None) is not None}
        return FeatureSet(active, inactive)

    def accounts(self, lamports: int) -> list[tuple[Pubkey, Account]]:
        """The feature account of each active feature, holding ``lamports`` (rent-exempt)."""
        return [
            (key, Account(lamports, ACTIVE_FEATURE, FEATURE_PROGRAM_ID, False, 0))
            for key in self.active
        ]


ALL_ACTIVE = Features(frozenset())
"""Every feature active: the localnet's genesis without ``--deactivate-feature``."""


@cache
def known_features() -> tuple[Pubkey, ...]:
    """The features the localnet knows: its runtime's, then ``enable_tx_v1``."""
    return (*FeatureSet.all_enabled().active, ENABLE_TX_V1)


@cache
def _known_set() -> frozenset[Pubkey]:
    return frozenset(known_features())


def unknown_feature_warning(feature: Pubkey) -> str:
    """The validator's warning for a ``--deactivate-feature`` id it does not know."""
    return f"Feature {feature} set for deactivation is not a known Feature public key"
