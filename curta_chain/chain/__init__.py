"""Talking to a cluster: transport, RPC, sender; program check, deploy, publish, seal, verify."""

# The operations live in modules named for them (``publish.publish``, ``seal.seal``), so the
# package offers its modules; tests/test_exports.py checks that the list is complete.
__all__ = [
    "accounts",
    "close",
    "cluster",
    "context",
    "deploy",
    "features",
    "fees",
    "fetch",
    "flights",
    "jsonrpc",
    "keys",
    "loader",
    "model_status",
    "plan",
    "program_check",
    "publish",
    "refusals",
    "rent",
    "rpc",
    "seal",
    "sender",
    "session",
    "signature_statuses",
    "specs",
    "transport",
    "verify",
    "watch",
]
