"""Program errors: the IDL's error table, and the custom code inside a runtime or RPC error."""

from __future__ import annotations

from functools import cache
from typing import Any

from solders.transaction_status import InstructionErrorCustom, TransactionErrorInstructionError

from curta_chain.errors import ProgramError
from curta_chain.program.idl import load_idl


@cache
def _error_table() -> dict[int, tuple[str, str]]:
    return {err.code: (err.name, err.msg or err.name) for err in load_idl().errors or []}


def error_name(code: int) -> str | None:
    """The IDL's name for a custom error code, or None when the IDL has none."""
    entry = _error_table().get(code)
    return entry[0] if entry else None


def program_error(code: int) -> ProgramError:
    """The named ProgramError for a custom error code the curta program returned.

    Args:
        code: the custom code (6000 and up for the program's own errors).

    Returns:
        A ``ProgramError`` with ``.code``, ``.name`` (from the IDL) and a one-line message.
    """
    entry = _error_table().get(code)
    if entry is None:
        return ProgramError(f"curta program error {code}: not in the IDL", code=code)
    name, msg = entry
    return ProgramError(f"curta program error {code} {name}: {msg}", code=code, name=name)


def custom_error_code(error: Any) -> int | None:
    """Find the custom error code in a transaction error, or None when there is none.

    Accepts solders' ``TransactionErrorInstructionError`` (LiteSVM's
    ``FailedTransactionMetadata.err()``, RPC responses), anything carrying one as ``.err``
    (a ``FailedTransactionMetadata``, a simulation or preflight-failure result), and the JSON
    form an RPC node sends (``{"InstructionError": [0, {"Custom": 6005}]}``).

    Args:
        error: the transaction error in any of those forms.

    Returns:
        The custom code, or None.
    """
    if isinstance(error, InstructionErrorCustom):
        return error.code
    if isinstance(error, TransactionErrorInstructionError):
        inner = error.err
        return inner.code if isinstance(inner, InstructionErrorCustom) else None
    inner = getattr(error, "err", None)
    if inner is not None:
        return custom_error_code(inner() if callable(inner) else inner)
    if isinstance(error, dict):
        pair = error.get("InstructionError")
        if isinstance(pair, list | tuple) and len(pair) == 2 and isinstance(pair[1], dict):
            code = pair[1].get("Custom")
            return code if isinstance(code, int) else None
    return None
