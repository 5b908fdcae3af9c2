"""Feature gates: the Feature program, the gates this project reads, and their account.

A feature gate is an account at the feature's id, owned by the Feature program, whose data
is bincode ``Feature { activated_at: Option<u64> }``: ``[0]`` while activation is only
requested, ``[1, slot as u64 LE]`` once active (agave ``feature-gate-interface``). A cluster
that never heard of a feature has no account there. Features are named as agave's
``feature-set`` crate names them; ``FEATURE_IDS`` is the one place their ids are written.

- ``enable_sbpf_v3_deployment_and_execution`` (SIMD-0178, 0189, 0377): the cluster deploys
  and runs SBPF v3. Its id here is Agave 4's; Agave 2's id of that name enabled an older,
  incompatible v3.
- ``disable_sbpf_v0_v1_v2_deployment`` (SIMD-0500): the cluster refuses to deploy v0 (it
  still runs deployed v0 programs).
- ``enable_tx_v1`` (SIMD-0385, with SIMD-0296's 4,096 bytes): the cluster takes v1
  transactions.
"""

import struct
from collections.abc import Mapping
from typing import Final

from solders.pubkey import Pubkey

__all__ = [
    "DISABLE_SBPF_V0",
    "ENABLE_SBPF_V3",
    "ENABLE_TX_V1",
    "FEATURE",
    "FEATURE_IDS",
    "FEATURE_PROGRAM_ID",
]

FEATURE_PROGRAM_ID: Final = Pubkey.from_string("Feature111111111111111111111111111111111111")
"""The owner of every feature account."""
ENABLE_SBPF_V3: Final = "enable_sbpf_v3_deployment_and_execution"
DISABLE_SBPF_V0: Final = "disable_sbpf_v0_v1_v2_deployment"
ENABLE_TX_V1: Final = "enable_tx_v1"
FEATURE_IDS: Final[Mapping[str, Pubkey]] = {
    ENABLE_SBPF_V3: Pubkey.from_string("5cC3foj77CWun58pC51ebHFUWavHWKarWyR5UUik7dnC"),
    DISABLE_SBPF_V0: Pubkey.from_string("B8JJXCy5amZyWG9r7EnUYLwzXSXTxG7GZ1qZ1qggo83g"),
    ENABLE_TX_V1: Pubkey.from_string("txv1aq4pp281K9um3tnPgkfX8UqtFT6wcVW3hNezGLL"),
}
"""Feature name -> id, for the gates this project reads."""
FEATURE: Final = struct.Struct("<BQ")
"""An active ``Feature``: the Option's tag (1), then the activation slot."""
