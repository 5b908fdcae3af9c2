"""Every derived keypair: one derivation, scoped by role, cluster and program.

Addresses are derived, not stored: each account's keypair is seeded with
``sha256("curta-chain/<role>" NUL || owner secret || parts)``, each part prefixed with its
length (u32 LE). Every role's parts begin with the cluster's genesis hash, and those of
the program's accounts with the program id too, so the same command finds the same
accounts from the chain alone, nobody without the owner's secret can know an address
before it appears, and addresses differ on every cluster and under every program.

Roles:

- ``model`` and ``weight`` (publish): the weights hash, the scope, the section index.
- ``run`` (run --on-chain): the scope, the model, the prompt, the capacity and the
  sampling settings; the run account after step k is a function of these and k alone.
- ``program`` and ``deploy-buffer`` (deploy): the genesis hash; the buffer adds the
  program id and the build's hash.
"""

import hashlib
from dataclasses import dataclass

from solders.keypair import Keypair
from solders.pubkey import Pubkey

from curta_chain.inference import SamplingSettings
from curta_chain.program import ShippedProgram


@dataclass(frozen=True)
class ClusterScope:
    """Where derived addresses live: a cluster (by its genesis hash) and a program on it."""

    genesis_hash: str
    program_id: Pubkey

    def parts(self) -> tuple[bytes, bytes]:
        """The scope as derivation parts: the genesis hash, then the program id."""
        return self.genesis_hash.encode(), bytes(self.program_id)


def derive_keypair(owner: Keypair, role: str, *parts: bytes) -> Keypair:
    """A keypair only ``owner``'s secret can produce, for ``role`` and ``parts``."""
    digest = hashlib.sha256(f"curta-chain/{role}\0".encode() + owner.secret())
    for part in parts:
        digest.update(len(part).to_bytes(4, "little") + part)
    return Keypair.from_seed(digest.digest())


def model_keypair(authority: Keypair, weights_hash: bytes, scope: ClusterScope) -> Keypair:
    """The model account's keypair for this authority, artifact, cluster and program."""
    return derive_keypair(authority, "model", weights_hash, *scope.parts())


def weight_keypair(
    authority: Keypair, weights_hash: bytes, scope: ClusterScope, section: int
) -> Keypair:
    """Weight account ``section``'s keypair for this authority, artifact, cluster and program."""
    return derive_keypair(
        authority, "weight", weights_hash, *scope.parts(), section.to_bytes(4, "little")
    )


def run_keypair(
    payer: Keypair,
    scope: ClusterScope,
    model: Pubkey,
    prompt: bytes,
    capacity: int,
    settings: SamplingSettings,
) -> Keypair:
    """The run account's keypair for this payer, cluster, program, model and run arguments."""
    sampling = (
        settings.temperature.to_bytes(4, "little")
        + settings.top_p.to_bytes(4, "little")
        + settings.seed.to_bytes(8, "little")
    )
    return derive_keypair(
        payer,
        "run",
        *scope.parts(),
        bytes(model),
        prompt,
        capacity.to_bytes(4, "little"),
        sampling,
    )


def default_program_keypair(payer: Keypair, genesis_hash: str) -> Keypair:
    """The program keypair ``deploy`` uses without ``--program-keypair``.

    Derived from the payer's secret and the cluster, so a rerun deploys to the same address.
    """
    return derive_keypair(payer, "program", genesis_hash.encode())


def buffer_keypair(
    payer: Keypair, genesis_hash: str, program_id: Pubkey, build: ShippedProgram
) -> Keypair:
    """The buffer a deploy of ``build`` to ``program_id`` writes into (found again on rerun)."""
    return derive_keypair(
        payer, "deploy-buffer", genesis_hash.encode(), bytes(program_id), build.sha256.encode()
    )
