"""Parsing JSON-RPC parameters the way the validator does, with its error messages.

A ``null`` reads as absent wherever the validator's parameter is optional: a null
configuration object, a null field inside one (``{"commitment": null}``), a null
optional positional parameter. Reads without a ``commitment`` default to "finalized",
the validator's default.
"""

from typing import Any

from solders.pubkey import Pubkey
from solders.signature import Signature

from curta_chain.constants import COMMITMENTS
from curta_chain.localnet.node import Localnet
from curta_chain.localnet.rpc_errors import (
    MIN_CONTEXT_SLOT_NOT_REACHED,
    RpcMethodError,
    invalid_params,
)

SOLANA_CORE_VERSION = "2.2.0"
"""What getVersion reports: the agave line of solders 0.26's LiteSVM. solders 0.29's runs
Agave 4.1 crates; the localnet answers as 2.2 until it plays Agave 4's rules."""
Params = list[Any]


def required(params: Params, index: int, name: str) -> Any:
    """Return parameter ``index``, or raise -32602 naming the missing ``name``."""
    if len(params) <= index:
        raise invalid_params(f"Invalid params: missing parameter `{name}`")
    return params[index]


def optional(params: Params, index: int) -> Any:
    """Return optional parameter ``index``, None when absent or null."""
    return params[index] if len(params) > index else None


def config_at(params: Params, index: int) -> dict[str, Any]:
    """Return the configuration object at ``index`` ({} when absent), null fields dropped."""
    config = optional(params, index)
    if config is None:
        return {}
    if not isinstance(config, dict):
        raise invalid_params("Invalid params: configuration must be an object")
    return {key: value for key, value in config.items() if value is not None}


def commitment_param(config: dict[str, Any], default: str = "finalized") -> str:
    """Return the ``commitment`` of ``config`` (the validator's default: finalized)."""
    commitment = config.get("commitment", default)
    if commitment not in COMMITMENTS:
        raise invalid_params(
            f"Invalid params: unknown variant `{commitment}`, expected one of "
            "`processed`, `confirmed`, `finalized`"
        )
    return commitment


def pubkey_param(value: Any) -> Pubkey:
    """Parse a base58 public key parameter as the validator does."""
    if not isinstance(value, str):
        raise invalid_params("Invalid params: invalid type: expected a base58 public key string")
    try:
        return Pubkey.from_string(value)
    except ValueError as exc:
        raise invalid_params("Invalid param: Invalid") from exc


def signature_param(value: Any) -> str:
    """Check a base58 signature parameter; return it unchanged."""
    if not isinstance(value, str):
        raise invalid_params("Invalid params: invalid type: expected a base58 signature string")
    try:
        Signature.from_string(value)
    except ValueError as exc:
        raise invalid_params("Invalid param: Invalid") from exc
    return value


def uint_param(value: Any, name: str) -> int:
    """Check that ``value`` is an unsigned integer."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise invalid_params(f"Invalid params: `{name}` must be an unsigned integer")
    return value


def context_slot(localnet: Localnet, config: dict[str, Any], default: str = "finalized") -> int:
    """Return the slot of the bank at the config's commitment, honouring ``minContextSlot``."""
    slot = localnet.commitment_slot(commitment_param(config, default))
    min_slot = config.get("minContextSlot")
    if min_slot is not None and uint_param(min_slot, "minContextSlot") > slot:
        raise RpcMethodError(
            MIN_CONTEXT_SLOT_NOT_REACHED,
            "Minimum context slot has not been reached",
            {"contextSlot": slot},
        )
    return slot


def with_context(slot: int, value: Any) -> dict[str, Any]:
    """Wrap ``value`` in the validator's ``{context, value}`` response object."""
    return {"context": {"slot": slot, "apiVersion": SOLANA_CORE_VERSION}, "value": value}


def data_slice_param(config: dict[str, Any]) -> dict[str, int] | None:
    """Return the ``dataSlice`` of ``config``, checked, or None."""
    data_slice = config.get("dataSlice")
    if data_slice is None:
        return None
    if not isinstance(data_slice, dict):
        raise invalid_params("Invalid params: `dataSlice` must be {offset, length}")
    return {
        "offset": uint_param(data_slice.get("offset"), "dataSlice.offset"),
        "length": uint_param(data_slice.get("length"), "dataSlice.length"),
    }


def account_encoding_param(config: dict[str, Any], default: str) -> str:
    """Return the account ``encoding`` of ``config``, checked."""
    encoding = config.get("encoding", default)
    if encoding not in ("binary", "base58", "base64", "base64+zstd", "jsonParsed"):
        raise invalid_params(f"Invalid params: unknown variant `{encoding}`")
    return encoding
