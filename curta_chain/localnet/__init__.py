"""The embedded localnet: Solana's JSON-RPC served over HTTP from LiteSVM.

``Localnet`` is the chain (LiteSVM with the curta program preloaded at
``LOCALNET_PROGRAM_ID``, a faucet, validator-like slots, blockhashes, status cache and an
optional crash-safe ledger). ``serve`` runs it on a port until Ctrl-C; ``start_in_thread``
runs it in the background for tests and returns a ``LocalnetHandle`` with ``url``,
``ws_url`` and ``stop()``. JSON-RPC is served on the port, the PubSub websocket on the
port + 1, as a validator does. ``curta-chain localnet`` is the command-line front of
``serve``.
"""

from curta_chain.localnet.server import LocalnetHandle, serve, start_in_thread
from curta_chain.localnet.state import Localnet

__all__ = ["Localnet", "LocalnetHandle", "serve", "start_in_thread"]
