"""Talking to a cluster: RPC transport, the transaction sender, publish, seal and verify."""
