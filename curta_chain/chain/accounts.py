"""Reading curta accounts from a node: the model, weight headers and section bytes."""

import asyncio
import base64

from solders.pubkey import Pubkey

from curta_chain.chain.rpc import AccountInfo, RpcClient
from curta_chain.constants import WEIGHT_HEADER_SIZE
from curta_chain.errors import AccountError
from curta_chain.program import MODEL_ACCOUNT_SIZE, ModelAccount, SectionSlot, WeightHeader
from curta_chain.program.accounts import MODEL_AUTHORITY_OFFSET, model_discriminator

ZERO_KEY = Pubkey.default()


async def read_model(client: RpcClient, program_id: Pubkey, address: Pubkey) -> ModelAccount | None:
    """Return the model at ``address``, or None if no account is there.

    Raises:
        AccountError: an account is there but it is not a curta model of ``program_id``.
    """
    found = await read_model_account(client, program_id, address)
    return None if found is None else found[0]


async def read_model_account(
    client: RpcClient, program_id: Pubkey, address: Pubkey
) -> tuple[ModelAccount, AccountInfo] | None:
    """Like ``read_model``, with the account as read (its raw data)."""
    info = await client.account(address)
    if info is None:
        return None
    if info.owner != program_id:
        raise AccountError(
            f"{address} is not a curta model: owned by {info.owner}, expected {program_id}"
        )
    try:
        return ModelAccount.from_bytes(info.data), info
    except AccountError as exc:
        raise AccountError(f"{address} is not a curta model: {exc}") from exc


async def require_model(client: RpcClient, program_id: Pubkey, address: Pubkey) -> ModelAccount:
    """Like ``read_model``, but a missing account is an error."""
    model = await read_model(client, program_id, address)
    if model is None:
        raise AccountError(f"{address}: no such account on {client.url}")
    return model


async def read_weight_header(
    client: RpcClient, program_id: Pubkey, address: Pubkey
) -> WeightHeader:
    """Return weight account ``address``'s header.

    Raises:
        AccountError: the account is missing, not the program's, or not a weight account.
    """
    header, _ = await read_weight_head(client, program_id, address)
    return header


async def read_weight_head(
    client: RpcClient, program_id: Pubkey, address: Pubkey
) -> tuple[WeightHeader, AccountInfo]:
    """Like ``read_weight_header``, with the header's bytes as read."""
    (info,) = await client.accounts([address], head=WEIGHT_HEADER_SIZE)
    if info is None:
        raise AccountError(f"weight account {address} does not exist")
    if info.owner != program_id:
        raise AccountError(f"{address} is not a weight account: owned by {info.owner}")
    try:
        return WeightHeader.from_bytes(info.data), info
    except AccountError as exc:
        raise AccountError(f"{address} is not a weight account: {exc}") from exc


def binding_problem(
    address: Pubkey, index: int, slot: SectionSlot, header: WeightHeader
) -> str | None:
    """Why the weight account of ``address``'s slot ``index`` is not bound to it (None: it is).

    Its header must name this model, this slot and the slot's length: a section is read only
    where the model and its weight account agree on what it is.
    """
    if (header.model, header.section_index, header.section_length) == (address, index, slot.length):
        return None
    return (
        f"weight account {slot.weight_account} is bound to section {header.section_index} of "
        f"{header.model} ({header.section_length:,} bytes), not to section {index} of "
        f"{address} ({slot.length:,} bytes)"
    )


async def read_section(client: RpcClient, address: Pubkey, length: int) -> bytes:
    """Return the ``length`` section bytes held after weight account ``address``'s header."""
    return await client.account_data(address, WEIGHT_HEADER_SIZE, length)


async def read_bound_sections(
    client: RpcClient, program_id: Pubkey, address: Pubkey, model: ModelAccount
) -> list[bytes]:
    """Read every section of ``model`` from its weight accounts, checking each binding.

    Raises:
        AccountError: a slot is unbound, or its account is not bound to this model and slot.
    """
    for index, slot in enumerate(model.sections):
        if slot.weight_account == ZERO_KEY:
            raise AccountError(f"model {address}: section {index} has no weight account bound")
    headers = await asyncio.gather(
        *(read_weight_header(client, program_id, s.weight_account) for s in model.sections)
    )
    for index, (slot, header) in enumerate(zip(model.sections, headers, strict=True)):
        problem = binding_problem(address, index, slot, header)
        if problem is not None:
            raise AccountError(problem)
    return list(
        await asyncio.gather(
            *(read_section(client, s.weight_account, s.length) for s in model.sections)
        )
    )


async def find_models(
    client: RpcClient, program_id: Pubkey, authority: Pubkey | None = None
) -> list[tuple[Pubkey, ModelAccount, int]]:
    """Every model of ``program_id`` (of ``authority`` only, if given): address, model, lamports.

    One getProgramAccounts call, filtered on the node by size, discriminator and authority,
    as ``solana program show --buffers`` finds a buffer authority's buffers.
    """
    filters: list[dict[str, object]] = [
        {"dataSize": MODEL_ACCOUNT_SIZE},
        {
            "memcmp": {
                "offset": 0,
                "bytes": base64.b64encode(model_discriminator()).decode(),
                "encoding": "base64",
            }
        },
    ]
    if authority is not None:
        filters.append({"memcmp": {"offset": MODEL_AUTHORITY_OFFSET, "bytes": str(authority)}})
    found = []
    for address, info in await client.program_accounts(program_id, filters):
        try:
            found.append((address, ModelAccount.from_bytes(info.data), info.lamports))
        except AccountError:
            continue  # the filters matched bytes that do not decode: not a model after all
    return sorted(found, key=lambda item: str(item[0]))
