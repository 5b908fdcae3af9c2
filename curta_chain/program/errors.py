"""Program errors: the IDL's error table, and a failed transaction translated through it.

As Anchor's clients translate their programs' errors: a custom error code the IDL names
becomes a ``ProgramError`` carrying that name, chained ``from`` the RPC error it came in.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

from curta_chain.constants import SEND_TRANSACTION_PREFLIGHT_FAILURE
from curta_chain.errors import ChainError, ProgramError, RpcCallError
from curta_chain.program.idl import load_idl


@cache
def _error_table() -> dict[int, tuple[str, str]]:
    return {err.code: (err.name, err.msg) for err in load_idl().errors}


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


def transaction_error(err: Any, logs: Sequence[str] = ()) -> ChainError:
    """Turn a TransactionError as JSON (from a status or a preflight) into our error.

    A custom error of the curta program becomes the ``ProgramError`` named in the IDL. A
    custom code the IDL does not name comes from another program of the transaction (the
    System Program's 0 is AccountAlreadyInUse), so it is not called a curta error.
    """
    if isinstance(err, dict) and "InstructionError" in err:
        index, inner = err["InstructionError"]
        if isinstance(inner, dict) and "Custom" in inner:
            code = int(inner["Custom"])
            if error_name(code) is not None:
                return program_error(code)
            return ProgramError(
                f"instruction {index} failed: custom program error {code}, not a curta "
                f"program error{f' ({logs[-1]})' if logs else ''}",
                code=code,
            )
        return ProgramError(f"instruction {index} failed: {inner}", name=str(inner))
    detail = f" ({logs[-1]})" if logs else ""
    return ChainError(f"transaction failed: {err}{detail}")


def preflight_error(exc: RpcCallError) -> ChainError | None:
    """The error a failed preflight stands for (-32002 with the TransactionError in ``data``).

    Returns:
        The translated error, or None when ``exc`` is no preflight failure (the node
        refused the transaction for another reason: keep ``exc``).
    """
    data = exc.data if isinstance(exc.data, dict) else {}
    if exc.code == SEND_TRANSACTION_PREFLIGHT_FAILURE and data.get("err") is not None:
        return transaction_error(data["err"], data.get("logs") or ())
    return None
