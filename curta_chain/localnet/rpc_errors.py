"""JSON-RPC error objects the localnet answers with, coded as the validator codes them.

A method handler raises ``RpcMethodError``; the server turns it into the ``error`` member
of the response. The codes are JSON-RPC 2.0's own (-32700..-32603) and the validator's
custom ones (agave ``rpc-client-api`` ``custom_error``).
"""

from typing import Any

from curta_chain.constants import SEND_TRANSACTION_PREFLIGHT_FAILURE

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
BLOCK_CLEANED_UP = -32001
BLOCK_NOT_AVAILABLE = -32004
NO_SNAPSHOT = -32008
MIN_CONTEXT_SLOT_NOT_REACHED = -32016
UNSUPPORTED_TRANSACTION_VERSION = -32015
PROVIDER_BATCH_SIZE_EXCEEDED = 7701
"""A provider's refusal of a batch longer than the plan allows (Syndica's code and wording)."""
PROVIDER_RATE_LIMITED = 7429
"""A provider's refusal past the plan's requests a second (Syndica's), sent with HTTP 429."""


class RpcMethodError(Exception):
    """A JSON-RPC error answer: ``code``, one-line ``message`` and optional ``data``."""

    def __init__(self, code: int, message: str, data: Any = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_json(self) -> dict[str, Any]:
        """Return the ``error`` member of a JSON-RPC response."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


__all__ = [
    "BLOCK_CLEANED_UP",
    "BLOCK_NOT_AVAILABLE",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "MIN_CONTEXT_SLOT_NOT_REACHED",
    "NO_SNAPSHOT",
    "PARSE_ERROR",
    "SEND_TRANSACTION_PREFLIGHT_FAILURE",
    "UNSUPPORTED_TRANSACTION_VERSION",
    "RpcMethodError",
    "invalid_params",
]


def invalid_params(detail: str) -> RpcMethodError:
    """Return the -32602 error the validator gives for parameters it cannot use."""
    return RpcMethodError(INVALID_PARAMS, detail)
