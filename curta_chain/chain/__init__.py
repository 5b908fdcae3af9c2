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
    "funds",
    "keys",
    "loaded_data",
    "loader",
    "plan",
    "program_check",
    "publish",
    "rent",
    "rpc",
    "run_onchain",
    "run_pipeline",
    "runs",
    "seal",
    "sender",
    "session",
    "specs",
    "status",
    "transport",
    "verify",
    "watch",
]
