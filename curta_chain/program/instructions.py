"""Instruction builders for the curta program, derived from the IDL.

Each builder names its accounts by their IDL names; ``build`` puts them in the IDL's order
with the IDL's signer and writable flags, and encodes the arguments through the IDL's
coder. The accounts an instruction takes beyond the IDL's (a second weight account for
sealStep, the other sections' for step: remaining accounts, which an Anchor IDL cannot
list) repeat the flags of the IDL account they extend. The authority's instructions name
one weight account each and sealStep at most two, so their transactions stay far below a
validator's 64 MiB of loaded account data; a step names the sections its slice needs.
Writes are the hot path (about 17,000 per 16 MB model), so ``write_weights`` packs its
bytes directly with the IDL's discriminator; a test proves the bytes equal the coder's. How
many bytes a write carries is ``write_payload``'s to say.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from typing import Any

from solders.instruction import AccountMeta, Instruction
from solders.pubkey import Pubkey

from curta_chain.errors import InputError
from curta_chain.program.borsh import CodecError
from curta_chain.program.idl import IdlAccountItem, coder, instruction_accounts

_U32_MAX = 0xFFFF_FFFF
_WRITE_DISCRIMINATOR: bytes = coder().instruction_discriminator("write_weights")
_WRITE_HEAD = struct.Struct("<8sII")
_WRITE_ACCOUNTS: tuple[IdlAccountItem, ...] = tuple(instruction_accounts("write_weights"))


def _meta(key: Pubkey, item: IdlAccountItem) -> AccountMeta:
    return AccountMeta(key, is_signer=item.signer, is_writable=item.writable)


def _item(name: str, account: str) -> IdlAccountItem:
    """The IDL's entry for ``account`` of instruction ``name`` (remaining accounts copy it)."""
    return next(item for item in instruction_accounts(name) if item.name == account)


def build(
    program_id: Pubkey,
    name: str,
    accounts: Mapping[str, Pubkey],
    args: Mapping[str, Any],
    remaining: Sequence[AccountMeta] = (),
) -> Instruction:
    """Build instruction ``name`` from the IDL: its accounts in order with their flags.

    Args:
        program_id: the curta program.
        name: the instruction's IDL name (snake_case).
        accounts: each account the IDL lists for it, by its IDL name.
        args: each argument, by its IDL name.
        remaining: accounts after the IDL's (as the program reads them).

    Returns:
        The instruction.

    Raises:
        InputError: an account or argument is missing or unknown, or an argument does not
            fit its IDL type (the message names it).
    """
    items = instruction_accounts(name)
    wanted = [item.name for item in items]
    if set(accounts) != set(wanted):
        raise InputError(f"{name}: accounts {sorted(accounts)}, expected {wanted}")
    try:
        data = coder().encode_instruction(name, args)
    except CodecError as exc:
        raise InputError(f"{name}: argument {exc}") from exc
    metas = [_meta(accounts[item.name], item) for item in items]
    return Instruction(program_id, data, [*metas, *remaining])


def create_model(
    program_id: Pubkey,
    authority: Pubkey,
    model: Pubkey,
    declared_hash: bytes,
    section_lengths: Sequence[int],
) -> Instruction:
    """Build createModel; send it after a create_account of ``model`` (856 bytes, program-owned).

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
    return build(
        program_id,
        "create_model",
        {"authority": authority, "model": model},
        {"declared_hash": bytes(declared_hash), "section_lengths": list(section_lengths)},
    )


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
    return build(
        program_id,
        "bind_weight_account",
        {"authority": authority, "model": model, "weight_account": weight_account},
        {"section_index": section_index},
    )


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
    payload = _WRITE_HEAD.pack(_WRITE_DISCRIMINATOR, offset, len(data)) + bytes(data)
    signer, weight = _WRITE_ACCOUNTS
    return Instruction(
        program_id, payload, [_meta(authority, signer), _meta(weight_account, weight)]
    )


def begin_sealing(program_id: Pubkey, authority: Pubkey, model: Pubkey) -> Instruction:
    """Build beginSealing: start the hash chain and record the slot; every slot must be bound.

    Nothing is frozen here: each weight account freezes when the seal enters its section.

    Args:
        program_id: the curta program.
        authority: the model's authority (signer).
        model: the model account (writable).

    Returns:
        The instruction.
    """
    return build(program_id, "begin_sealing", {"authority": authority, "model": model}, {})


def seal_step(
    program_id: Pubkey, model: Pubkey, weight_accounts: Sequence[Pubkey], label: int
) -> Instruction:
    """Build sealStep: hash the next chunk wherever the model's cursor is (anyone may send it).

    Args:
        program_id: the curta program.
        model: the model account (writable).
        weight_accounts: one weight account, or two of consecutive slots (a step sent at a
            section's end, whose cursor may be in either when it lands); the program uses
            the one of the cursor's slot. Writable: the step that enters a section freezes it.
        label: any u64; the program does not read it. Distinct labels make distinct
            transactions, so many steps can be in flight at once.

    Returns:
        The instruction.

    Raises:
        InputError: not one or two weight accounts, or a label that is not a u64.
    """
    if not 1 <= len(weight_accounts) <= 2:
        raise InputError(f"sealStep takes 1 or 2 weight accounts, not {len(weight_accounts)}")
    first, *others = weight_accounts
    flags = _item("seal_step", "weight_account")
    return build(
        program_id,
        "seal_step",
        {"model": model, "weight_account": first},
        {"label": label},
        [_meta(key, flags) for key in others],
    )


def _one_weight_account(
    program_id: Pubkey,
    name: str,
    authority: Pubkey,
    model: Pubkey,
    weight_account: Pubkey,
    section_index: int,
) -> Instruction:
    return build(
        program_id,
        name,
        {"authority": authority, "model": model, "weight_account": weight_account},
        {"section_index": section_index},
    )


def reopen(
    program_id: Pubkey,
    authority: Pubkey,
    model: Pubkey,
    weight_account: Pubkey,
    section_index: int,
) -> Instruction:
    """Build reopen: unfreeze one weight account of a failed model.

    The reopen of the last frozen weight account returns the model to uploading.

    Args:
        program_id: the curta program.
        authority: the model's authority (signer).
        model: the model account (writable).
        weight_account: the weight account bound in slot ``section_index`` (writable).
        section_index: its slot.

    Returns:
        The instruction.
    """
    return _one_weight_account(
        program_id, "reopen", authority, model, weight_account, section_index
    )


def close_weight_account(
    program_id: Pubkey,
    authority: Pubkey,
    model: Pubkey,
    weight_account: Pubkey,
    section_index: int,
) -> Instruction:
    """Build closeWeightAccount: close one weight account of an unsealed model, rent back.

    Args:
        program_id: the curta program.
        authority: the model's authority (signer, writable: receives the lamports).
        model: the model account (writable); it is closing from then on.
        weight_account: the weight account bound in slot ``section_index`` (writable).
        section_index: its slot.

    Returns:
        The instruction.
    """
    name = "close_weight_account"
    return _one_weight_account(program_id, name, authority, model, weight_account, section_index)


def close_model(program_id: Pubkey, authority: Pubkey, model: Pubkey) -> Instruction:
    """Build closeModel: close an unsealed model with no weight account bound, rent back.

    Args:
        program_id: the curta program.
        authority: the model's authority (signer, writable: receives the lamports).
        model: the model account (writable).

    Returns:
        The instruction.
    """
    return build(program_id, "close_model", {"authority": authority, "model": model}, {})


def open_run(
    program_id: Pubkey,
    opener: Pubkey,
    run: Pubkey,
    model: Pubkey,
    section_zero: Pubkey,
    capacity: int,
    prompt: bytes | Sequence[int],
    temperature: int = 0,
    top_p: int = 0,
    seed: int = 0,
) -> Instruction:
    """Build openRun; send it after a create_account of ``run`` (``run_account_size`` bytes).

    Args:
        program_id: the curta program.
        opener: who opens the run and gets its rent back on close (signer).
        run: the fresh run account (signer, writable).
        model: the sealed model.
        section_zero: the model's section-zero weight account.
        capacity: positions to compute (1 to the model's context).
        prompt: UTF-8 text as bytes (tokenized on chain), or token ids.
        temperature: Q16; 0 is greedy.
        top_p: Q16; 0 is off.
        seed: the sampling generator's seed.

    Returns:
        The instruction.

    Raises:
        InputError: an argument does not fit its IDL type.
    """
    prompts = coder().enum("Prompt")
    if isinstance(prompt, bytes | bytearray):
        value = prompts.value("Text", {"text": bytes(prompt)})
    else:
        value = prompts.value("Tokens", {"ids": [int(i) for i in prompt]})
    return build(
        program_id,
        "open_run",
        {"opener": opener, "run": run, "model": model, "section_zero": section_zero},
        {
            "capacity": capacity,
            "temperature": temperature,
            "top_p": top_p,
            "seed": seed,
            "prompt": value,
        },
    )


def step(
    program_id: Pubkey,
    run: Pubkey,
    model: Pubkey,
    weights: Sequence[Pubkey],
    label: int,
) -> Instruction:
    """Build step: advance the run by its next slice (anyone may send it, in any order).

    Args:
        program_id: the curta program.
        run: the run account (writable).
        model: the run's model.
        weights: section zero's weight account first, then any of the model's other weight
            accounts, each once, in any order: at least the sections the slice needs (the
            program refuses the whole step otherwise).
        label: any u64; the program does not read it. Distinct labels make distinct
            transactions, so many steps can be in flight at once.

    Returns:
        The instruction.
    """
    section_zero, *others = weights
    flags = _item("step", "section_zero")
    return build(
        program_id,
        "step",
        {"run": run, "model": model, "section_zero": section_zero},
        {"label": label},
        [_meta(key, flags) for key in others],
    )


def close_run(program_id: Pubkey, opener: Pubkey, run: Pubkey) -> Instruction:
    """Build closeRun: close the run, its lamports to the opener.

    Args:
        program_id: the curta program.
        opener: the run's opener (signer, writable: receives the lamports).
        run: the run account (writable).

    Returns:
        The instruction.
    """
    return build(program_id, "close_run", {"opener": opener, "run": run}, {})
