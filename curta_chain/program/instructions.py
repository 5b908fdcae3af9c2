"""Instruction builders for the curta program, encoded through the IDL's instruction coder.

Account order is the IDL's; "remaining" weight accounts follow the named ones. Writes are the
hot path (about 17,000 per model), so ``write_weights`` packs its bytes directly with the
precomputed Anchor sighash; a test proves the bytes equal the IDL coder's.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from functools import cache

from construct import ConstructError
from solders.compute_budget import set_compute_unit_limit, set_compute_unit_price
from solders.hash import Hash
from solders.instruction import AccountMeta, Instruction
from solders.message import Message, MessageV0
from solders.pubkey import Pubkey
from solders.signature import Signature
from solders.transaction import Transaction, VersionedTransaction

from curta_chain.constants import MAX_TRANSACTION_SIZE
from curta_chain.errors import InputError
from curta_chain.program.idl import instruction_coder

_U32_MAX = 0xFFFF_FFFF
_WRITE_SIGHASH: bytes = instruction_coder().sighashes["write_weights"]
_WRITE_HEAD = struct.Struct("<8sII")


def _meta(key: Pubkey, signer: bool = False, writable: bool = False) -> AccountMeta:
    return AccountMeta(key, is_signer=signer, is_writable=writable)


def _encode(name: str, args: dict) -> bytes:
    try:
        return instruction_coder().encode(name, args)
    except ConstructError as exc:
        shown = ", ".join(f"{key}={value!r}" for key, value in args.items())
        raise InputError(f"{name}({shown}): an argument does not fit its IDL type") from exc


def create_model(
    program_id: Pubkey,
    authority: Pubkey,
    model: Pubkey,
    declared_hash: bytes,
    section_lengths: Sequence[int],
) -> Instruction:
    """Build createModel; send it after a create_account of ``model`` (848 bytes, program-owned).

    Args:
        program_id: the curta program.
        authority: the publisher (signer).
        model: the fresh model account (signer, writable).
        declared_hash: the 32-byte weights hash the sealing must reproduce.
        section_lengths: each section's length in bytes.

    Returns:
        The instruction.

    Raises:
        InputError: the hash is not 32 bytes.
    """
    if len(declared_hash) != 32:
        raise InputError(f"declared hash: {len(declared_hash)} bytes, expected 32")
    data = _encode(
        "create_model",
        {"declared_hash": bytes(declared_hash), "section_lengths": list(section_lengths)},
    )
    return Instruction(program_id, data, [_meta(authority, True), _meta(model, True, True)])


def bind_weight_account(
    program_id: Pubkey, authority: Pubkey, model: Pubkey, weight_account: Pubkey, section_index: int
) -> Instruction:
    """Build bindWeightAccount; send it after a create_account of ``weight_account``.

    Args:
        program_id: the curta program.
        authority: the model's authority (signer).
        model: the model account (writable).
        weight_account: the fresh weight account, 2,048 + section length bytes (signer).
        section_index: the slot to bind.

    Returns:
        The instruction.
    """
    data = _encode("bind_weight_account", {"section_index": section_index})
    accounts = [
        _meta(authority, True),
        _meta(model, False, True),
        _meta(weight_account, True, True),
    ]
    return Instruction(program_id, data, accounts)


def write_weights(
    program_id: Pubkey, authority: Pubkey, weight_account: Pubkey, offset: int, data: bytes
) -> Instruction:
    """Build writeWeights: copy ``data`` into the section at ``offset``.

    Args:
        program_id: the curta program.
        authority: the model's authority (signer).
        weight_account: the section's weight account (writable).
        offset: the byte offset inside the section.
        data: the bytes to write.

    Returns:
        The instruction.

    Raises:
        InputError: the offset or length does not fit a u32.
    """
    if not 0 <= offset <= _U32_MAX or len(data) > _U32_MAX:
        raise InputError(f"write at offset {offset} of {len(data)} bytes: out of u32 range")
    payload = _WRITE_HEAD.pack(_WRITE_SIGHASH, offset, len(data)) + bytes(data)
    return Instruction(
        program_id, payload, [_meta(authority, True), _meta(weight_account, False, True)]
    )


def _with_weight_accounts(
    program_id: Pubkey, name: str, named: list[AccountMeta], weight_accounts: Sequence[Pubkey]
) -> Instruction:
    remaining = [_meta(key, False, True) for key in weight_accounts]
    return Instruction(program_id, _encode(name, {}), named + remaining)


def begin_sealing(
    program_id: Pubkey, authority: Pubkey, model: Pubkey, weight_accounts: Sequence[Pubkey]
) -> Instruction:
    """Build beginSealing: freeze every weight account and start the hash chain.

    Args:
        program_id: the curta program.
        authority: the model's authority (signer).
        model: the model account (writable).
        weight_accounts: every slot's weight account, in slot order.

    Returns:
        The instruction.
    """
    named = [_meta(authority, True), _meta(model, False, True)]
    return _with_weight_accounts(program_id, "begin_sealing", named, weight_accounts)


def seal_step(program_id: Pubkey, model: Pubkey, weight_account: Pubkey) -> Instruction:
    """Build sealStep: hash the next chunk of the section under the model's cursor.

    Args:
        program_id: the curta program.
        model: the model account (writable).
        weight_account: the weight account of the cursor's section (read-only).

    Returns:
        The instruction.
    """
    accounts = [_meta(model, False, True), _meta(weight_account)]
    return Instruction(program_id, _encode("seal_step", {}), accounts)


def reopen(
    program_id: Pubkey, authority: Pubkey, model: Pubkey, weight_accounts: Sequence[Pubkey]
) -> Instruction:
    """Build reopen: return a failed model to uploading and unfreeze its weight accounts.

    Args:
        program_id: the curta program.
        authority: the model's authority (signer).
        model: the model account (writable).
        weight_accounts: every slot's weight account, in slot order.

    Returns:
        The instruction.
    """
    named = [_meta(authority, True), _meta(model, False, True)]
    return _with_weight_accounts(program_id, "reopen", named, weight_accounts)


def close_model(
    program_id: Pubkey, authority: Pubkey, model: Pubkey, weight_accounts: Sequence[Pubkey]
) -> Instruction:
    """Build closeModel: close an unsealed model and its weight accounts, lamports to authority.

    Args:
        program_id: the curta program.
        authority: the model's authority (signer, writable: receives the lamports).
        model: the model account (writable).
        weight_accounts: every bound slot's weight account, in slot order.

    Returns:
        The instruction.
    """
    named = [_meta(authority, True, True), _meta(model, False, True)]
    return _with_weight_accounts(program_id, "close_model", named, weight_accounts)


def _transaction_size(
    instruction: Callable[[Pubkey, bytes], Instruction],
    payload: int,
    with_compute_budget: bool,
    versioned: bool,
    fee_payer: bool = False,
) -> int:
    """The serialized size of a transaction of ``instruction(signer, payload)``.

    The signer pays the fee, or with ``fee_payer`` someone else does and signs too.
    """
    signer = Pubkey(bytes([1] * 32))
    payer = Pubkey(bytes([4] * 32)) if fee_payer else signer
    instructions = [instruction(signer, bytes(payload))]
    if with_compute_budget:
        instructions = [set_compute_unit_limit(1), set_compute_unit_price(1), *instructions]
    signatures = [Signature.default()] * (2 if fee_payer else 1)
    if versioned:
        message = MessageV0.try_compile(payer, instructions, [], Hash.default())
        return len(bytes(VersionedTransaction.populate(message, signatures)))
    return len(bytes(Transaction.populate(Message(instructions, payer), signatures)))


def largest_payload(
    instruction: Callable[[Pubkey, bytes], Instruction],
    with_compute_budget: bool,
    fee_payer: bool = False,
) -> int:
    """The most bytes ``instruction(signer, data)`` carries in a 1,232-byte transaction.

    Measured by serializing real transactions, legacy and v0 alike, and taking the smaller:
    a sender may use either.

    Args:
        instruction: builds the instruction from its signer and its data.
        with_compute_budget: the transaction also carries SetComputeUnitLimit and
            SetComputeUnitPrice instructions.
        fee_payer: a fee payer other than the signer signs too (a key and a signature more).

    Returns:
        The largest ``data`` length that keeps the transaction within ``MAX_TRANSACTION_SIZE``.
    """
    best = []
    for versioned in (False, True):

        def size(payload: int, versioned: bool = versioned) -> int:
            return _transaction_size(
                instruction, payload, with_compute_budget, versioned, fee_payer
            )

        payload = MAX_TRANSACTION_SIZE - size(0)
        # The data's compact-u16 length prefix grows by a byte past 127: step down to fit.
        while size(payload) > MAX_TRANSACTION_SIZE:
            payload -= 1
        best.append(payload)
    return min(best)


@cache
def max_write_payload(with_compute_budget: bool = False, fee_payer: bool = False) -> int:
    """The most weight bytes one writeWeights transaction carries in 1,232 bytes.

    Args:
        with_compute_budget: the transaction also carries SetComputeUnitLimit and
            SetComputeUnitPrice instructions.
        fee_payer: a fee payer other than the authority signs too.

    Returns:
        The largest ``data`` length that keeps the transaction within ``MAX_TRANSACTION_SIZE``.
    """
    weight, program = Pubkey(bytes([2] * 32)), Pubkey(bytes([3] * 32))
    return largest_payload(
        lambda signer, data: write_weights(program, signer, weight, 0, data),
        with_compute_budget,
        fee_payer,
    )


MAX_WRITE_PAYLOAD: int = max_write_payload(False)
"""Weight bytes per writeWeights transaction with one signer and no compute-budget instructions."""
