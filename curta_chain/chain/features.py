"""Which shipped build a cluster takes, and which transactions, from its feature gates.

A validator builds its program runtime from its feature accounts (their layout and the ids
are Solana's: ``curta_chain.protocol.features``), so reading them tells a client what the
cluster will deploy and take.

Two gates decide which build ``deploy`` takes (``choose_build``):

- ``enable_sbpf_v3_deployment_and_execution``: the cluster deploys and runs SBPF v3, so
  ``deploy`` takes ``sbpf-v3``. A cluster that has only Agave 2's feature of that name (an
  older, incompatible v3) gets ``sbpf-v0``.
- ``disable_sbpf_v0_v1_v2_deployment``: the cluster refuses to deploy v0. With v3 not
  enabled either, no build can be deployed.

A third decides the transactions that gain from room (``choose_tx_version``):

- ``enable_tx_v1``: the cluster takes v1 transactions, so writes go as v1 (``--tx-version
  auto``, the default); a cluster without it refuses them, and gets legacy ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from curta_chain.chain.rpc import AccountInfo, RpcClient
from curta_chain.errors import ChainError
from curta_chain.program.builds import ShippedProgram, shipped_program
from curta_chain.protocol.features import (
    DISABLE_SBPF_V0,
    ENABLE_SBPF_V3,
    ENABLE_TX_V1,
    FEATURE,
    FEATURE_IDS,
    FEATURE_PROGRAM_ID,
)


def feature_activation(feature: str, account: AccountInfo | None) -> int | None:
    """The slot at which ``feature`` became active, or None while it is not active.

    Args:
        feature: the feature's name (for messages).
        account: the account at the feature's id, as the node reported it.

    Returns:
        The activation slot, or None: no account, an account the Feature program does not
        own (anyone may send lamports to the address), or activation still pending.

    Raises:
        ChainError: the Feature program owns the account but its data is not a ``Feature``.
    """
    if account is None or account.owner != FEATURE_PROGRAM_ID:
        return None
    data = account.data
    if data[:1] == b"\x00":
        return None
    if len(data) < FEATURE.size or data[0] != 1:
        raise ChainError(
            f"feature {feature} ({FEATURE_IDS[feature]}): account data {data[:9].hex()} is not "
            "a Feature (expected 00, or 01 and a u64 slot)"
        )
    return FEATURE.unpack_from(data)[1]


@dataclass(frozen=True)
class DeployChoice:
    """The build to deploy on a cluster, and the sentence that says why."""

    program: ShippedProgram
    reason: str


def choose_build(activations: Mapping[str, int | None]) -> DeployChoice:
    """Pick the build a cluster with these feature activations can deploy.

    Args:
        activations: the activation slot (None: not active) of ``ENABLE_SBPF_V3`` and
            ``DISABLE_SBPF_V0``; a missing name counts as not active.

    Returns:
        ``sbpf-v3`` where v3 deployment is enabled, else ``sbpf-v0``, with the reason.

    Raises:
        ChainError: the cluster deploys neither (v0 disabled and v3 not enabled).
    """
    v3_slot = activations.get(ENABLE_SBPF_V3)
    v0_off_slot = activations.get(DISABLE_SBPF_V0)
    if v3_slot is not None:
        why = f"is enabled on this cluster ({ENABLE_SBPF_V3} since slot {v3_slot})"
        return _choice("sbpf-v3", why)
    if v0_off_slot is not None:
        raise ChainError(
            f"this cluster deploys neither shipped build: {DISABLE_SBPF_V0} is active (since slot "
            f"{v0_off_slot}) and {ENABLE_SBPF_V3} is not"
        )
    return _choice("sbpf-v0", f"is not enabled on this cluster ({ENABLE_SBPF_V3} is not active)")


def _choice(build: str, v3_deployment: str) -> DeployChoice:
    program = shipped_program(build)
    reason = (
        f"SBPF v3 deployment {v3_deployment}: deploying the {build} build ({program.path.name})"
    )
    return DeployChoice(program, reason)


async def read_activations(rpc: RpcClient) -> dict[str, int | None]:
    """Read every gate in ``FEATURE_IDS`` from the cluster in one getMultipleAccounts.

    Returns:
        Feature name -> activation slot, None where not active.
    """
    names = list(FEATURE_IDS)
    accounts = await rpc.accounts([FEATURE_IDS[name] for name in names], head=FEATURE.size)
    return {
        name: feature_activation(name, account)
        for name, account in zip(names, accounts, strict=True)
    }


TxVersion = Literal["legacy", "v1"]
"""The format of the transactions that gain from room: v1 (4,096 bytes) or legacy (1,232)."""
TxVersionChoice = Literal["auto", "legacy", "v1"]
"""What a command asks for (``--tx-version``): auto is v1 where the cluster takes it."""


def choose_tx_version(requested: TxVersionChoice, v1_slot: int | None) -> TxVersion:
    """The transaction version to send, given ``enable_tx_v1``'s activation slot (or None).

    Raises:
        ChainError: v1 was asked for, and the cluster has not activated it (it would refuse
            every v1 transaction).
    """
    if requested == "legacy":
        return "legacy"
    if v1_slot is not None:
        return "v1"
    if requested == "v1":
        raise ChainError(
            f"v1 transactions were asked for, but this cluster has not activated "
            f"{ENABLE_TX_V1} ({FEATURE_IDS[ENABLE_TX_V1]}) and refuses them: use "
            "--tx-version auto or legacy"
        )
    return "legacy"


async def select_tx_version(rpc: RpcClient, requested: TxVersionChoice) -> TxVersion:
    """The version of the transactions that gain from room on the cluster ``rpc`` talks to.

    ``legacy`` reads nothing; ``auto`` and ``v1`` read the ``enable_tx_v1`` feature account.

    Raises:
        ChainError: v1 was asked for where it is not active, or the feature account is
            malformed.
        RpcError: the node did not answer.
    """
    if requested == "legacy":
        return "legacy"
    feature = FEATURE_IDS[ENABLE_TX_V1]
    (account,) = await rpc.accounts([feature], head=FEATURE.size)
    return choose_tx_version(requested, feature_activation(ENABLE_TX_V1, account))


async def select_build(rpc: RpcClient) -> DeployChoice:
    """The shipped build ``deploy`` should put on the cluster ``rpc`` talks to, and why.

    Raises:
        ChainError: the cluster deploys neither build, or a feature account is malformed.
        RpcError: the node did not answer.
    """
    return choose_build(await read_activations(rpc))
