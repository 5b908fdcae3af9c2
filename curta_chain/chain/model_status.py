"""What a model holds on chain: its state, its accounts' lamports, and its sections' progress.

``read_status`` reads the model and the headers of its weight accounts in one batch (and,
given the artifact, every section's bytes, to count those already uploaded) and returns a
``ModelStatus``: typed, with ``to_json()`` as ``VerifyReport`` has. ``model_balances`` is
a model's whole balance (the model and every bound weight account), which ``models`` lists
and ``seal`` says is locked for good.
"""

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from solders.pubkey import Pubkey

from curta_chain.artifact import Artifact
from curta_chain.artifact.hashing import weights_hash
from curta_chain.chain.accounts import ZERO_KEY, binding_problem, read_model, read_section
from curta_chain.chain.rpc import AccountInfo, RpcClient
from curta_chain.constants import WEIGHT_HEADER_SIZE
from curta_chain.errors import AccountError
from curta_chain.program import ModelAccount, ModelState, WeightHeader


@dataclass(frozen=True)
class SectionStatus:
    """One section slot: its account, what that holds, and how far it has come."""

    index: int
    length: int
    weight_account: Pubkey | None
    """None while no weight account is bound to the slot."""
    lamports: int
    frozen: bool | None
    """None when the account is unbound or its header cannot be read."""
    bytes_matching: int | None
    """Bytes equal to the artifact's (None without the artifact)."""
    bytes_sealed: int
    """Bytes the on-chain hash has covered so far."""

    def to_json(self) -> dict[str, object]:
        """The section as JSON."""
        return {
            "index": self.index,
            "length": self.length,
            "weight_account": None if self.weight_account is None else str(self.weight_account),
            "lamports": self.lamports,
            "frozen": self.frozen,
            "bytes_matching": self.bytes_matching,
            "bytes_sealed": self.bytes_sealed,
        }


@dataclass(frozen=True)
class ModelStatus:
    """A model as the chain holds it."""

    address: Pubkey
    program_id: Pubkey
    model: ModelAccount
    model_lamports: int
    sections: tuple[SectionStatus, ...]
    artifact_hash_matches: bool | None
    """Whether the artifact's hash is the declared one (None without the artifact)."""
    chain_hash_matches: bool | None = None
    """Without the artifact, for an uploading model with every section bound: whether the
    chain's bytes hash to the declared hash, i.e. the upload is complete (else None)."""

    @property
    def state(self) -> ModelState:
        """The model's state."""
        return self.model.state

    @property
    def lamports(self) -> int:
        """The whole balance: the model account and every bound weight account."""
        return self.model_lamports + sum(s.lamports for s in self.sections)

    @property
    def bound(self) -> int:
        """How many weight accounts are bound."""
        return sum(1 for s in self.sections if s.weight_account is not None)

    @property
    def uploaded(self) -> bool | None:
        """Whether every byte is uploaded (None when that is not known).

        With the artifact: every byte matches it; without: the chain's bytes hash to the
        declared hash.
        """
        if any(s.bytes_matching is None for s in self.sections):
            return self.chain_hash_matches
        return all(s.bytes_matching == s.length for s in self.sections)

    def to_json(self) -> dict[str, object]:
        """The status as JSON (the model's fields, the balance, each section)."""
        fields = self.model.to_json()
        fields.pop("sections")
        return {
            "model": str(self.address),
            "program": str(self.program_id),
            **fields,
            "total_chunks": self.model.total_chunks,
            "lamports": self.lamports,
            "model_lamports": self.model_lamports,
            "artifact_hash_matches": self.artifact_hash_matches,
            "uploaded": self.uploaded,
            "sections": [s.to_json() for s in self.sections],
        }


def _header(info: AccountInfo | None, program_id: Pubkey) -> WeightHeader | None:
    """The weight header ``info`` holds, if it is one of ``program_id``'s that decodes."""
    if info is None or info.owner != program_id:
        return None
    with contextlib.suppress(AccountError):
        return WeightHeader.from_bytes(info.data)
    return None


def bytes_sealed(model: ModelAccount) -> list[int]:
    """Per section, the bytes the on-chain hash has covered (all of them once sealed)."""
    if model.state == ModelState.SEALED:
        return [slot.length for slot in model.sections]
    if model.state != ModelState.SEALING:
        return [0 for _ in model.sections]
    return [
        slot.length
        if index < model.cursor_section
        else min(model.cursor_offset, slot.length)
        if index == model.cursor_section
        else 0
        for index, slot in enumerate(model.sections)
    ]


async def read_status(
    client: RpcClient, program_id: Pubkey, address: Pubkey, artifact: Artifact | None = None
) -> ModelStatus:
    """Read the model at ``address``, its accounts' lamports and headers.

    Given the artifact (with the model's section lengths), count per section the bytes
    on chain that equal it.

    Raises:
        AccountError: no account at ``address``, or not a curta model of ``program_id``.
    """
    model = await read_model(client, program_id, address)
    if model is None:
        raise AccountError(f"{address}: no such account on {client.url}")
    bound = [slot.weight_account for slot in model.sections if slot.weight_account != ZERO_KEY]
    infos = dict(
        zip(
            [address, *bound],
            await client.accounts([address, *bound], head=WEIGHT_HEADER_SIZE),
            strict=True,
        )
    )
    same = artifact is not None and [len(s) for s in artifact.sections] == [
        slot.length for slot in model.sections
    ]
    headers = [
        _header(infos.get(slot.weight_account), program_id)
        if slot.weight_account != ZERO_KEY
        else None
        for slot in model.sections
    ]
    # A section is read only where its weight account agrees it is this slot's, this long.
    agrees = [
        header is not None and binding_problem(address, index, slot, header) is None
        for index, (slot, header) in enumerate(zip(model.sections, headers, strict=True))
    ]

    async def matching(index: int) -> int | None:
        slot = model.sections[index]
        if not same or artifact is None:
            return None
        if slot.weight_account == ZERO_KEY:
            return 0
        if not agrees[index]:
            return None
        chain = await read_section(client, slot.weight_account, slot.length)
        ours = np.frombuffer(bytes(artifact.sections[index]), dtype=np.uint8)
        return int(np.count_nonzero(np.frombuffer(chain, dtype=np.uint8) == ours))

    counts = await asyncio.gather(*(matching(i) for i in range(len(model.sections))))
    sections = []
    for index, (slot, count, sealed) in enumerate(
        zip(model.sections, counts, bytes_sealed(model), strict=True)
    ):
        account = None if slot.weight_account == ZERO_KEY else slot.weight_account
        info = infos.get(account) if account is not None else None
        header = headers[index]
        frozen = None if header is None else header.frozen
        sections.append(
            SectionStatus(
                index, slot.length, account, info.lamports if info else 0, frozen, count, sealed
            )
        )
    chain_hash_matches = None
    if artifact is None and model.state == ModelState.UPLOADING and all(agrees):
        # No artifact to compare with: the declared hash says whether the upload is done.
        chain = await asyncio.gather(
            *(read_section(client, s.weight_account, s.length) for s in model.sections)
        )
        chain_hash_matches = weights_hash(chain) == model.declared_hash
    model_info = infos[address]
    return ModelStatus(
        address,
        program_id,
        model,
        model_info.lamports if model_info else 0,
        tuple(sections),
        None if artifact is None else artifact.weights_hash() == model.declared_hash,
        chain_hash_matches,
    )


async def model_balances(
    client: RpcClient, models: Sequence[tuple[ModelAccount, int]]
) -> list[int]:
    """Each model's whole balance: its own lamports (given) and its bound weight accounts'."""
    bound = [
        [slot.weight_account for slot in model.sections if slot.weight_account != ZERO_KEY]
        for model, _ in models
    ]
    flat = [key for keys in bound for key in keys]
    infos = await client.accounts(flat, head=0) if flat else []
    lamports = iter(info.lamports if info else 0 for info in infos)
    return [
        own + sum(next(lamports) for _ in keys)
        for (_, own), keys in zip(models, bound, strict=True)
    ]
