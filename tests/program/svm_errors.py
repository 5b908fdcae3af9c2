"""The custom error code inside a LiteSVM or RPC transaction error (the tests' reader).

The library reads program errors from JSON-RPC answers only (``program.transaction_error``);
the program tests also read LiteSVM's own result objects, in every form they come in.
"""

from typing import Any

from solders.transaction_status import InstructionErrorCustom, TransactionErrorInstructionError


def custom_error_code(error: Any) -> int | None:
    """Find the custom error code in a transaction error, or None when there is none.

    Accepts solders' ``TransactionErrorInstructionError`` (LiteSVM's
    ``FailedTransactionMetadata.err()``, RPC responses), anything carrying one as ``.err``
    (a ``FailedTransactionMetadata``, a simulation or preflight-failure result), and the JSON
    form an RPC node sends (``{"InstructionError": [0, {"Custom": 6005}]}``).
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
