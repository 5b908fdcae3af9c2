"""Talking to a cluster: transport, RPC, sender; program check, deploy, publish, seal, verify."""
