"""The embedded localnet: Solana's JSON-RPC served over HTTP from LiteSVM.

Modules, from the chain outwards:

- ``chain``: ``Localnet``, the chain model (LiteSVM, slots, fees, the faucet), in layers:
  ``current_bank`` (sysvars, reads, the owner index), ``execution`` (running a
  transaction, its results), ``simulation`` (simulating one) and ``block_production``
  (the busy mode's sending and blocks); a send returns ``outcomes`` values (``Landed``,
  ``Refused``, ``Queued``), never JSON-RPC errors;
- ``bank_history`` (what "confirmed" and "finalized" reads see), ``tx_history``
  (statuses, transaction details, blocks, signatures by address), ``owner_index``;
- ``ledger`` (the crash-safe log and snapshots; it owns ``durable_seq``) and
  ``persistence`` (restore and snapshot capture between chain and ledger);
- the RPC layer: ``params``, ``codec``, jsonParsed (``parsed``, ``parsed_tokens``,
  ``parsed_programs``, ``parsed_instructions``), the ``*_methods`` modules and their
  table ``methods``, ``pubsub``;
- ``server`` (JSON-RPC over HTTP, group commit) and ``lifecycle`` (``serve``,
  ``start_in_thread``: one way to open, serve and close).

``serve`` runs it on a port until Ctrl-C; ``start_in_thread`` runs it in the background
for tests and returns a ``LocalnetHandle`` with ``url``, ``ws_url`` and ``stop()``.
JSON-RPC is served on the port, the PubSub websocket on the port + 1, as a validator
does. ``curta-chain localnet`` is the command-line front of ``serve``. ``busy`` is the
busy-cluster mode (``BusyOptions``: blocks, the leader's order, limits, loss, providers),
off by default; docs/localnet.md describes it.
"""

from curta_chain.localnet.busy import BusyOptions
from curta_chain.localnet.clock import ManualClock
from curta_chain.localnet.lifecycle import (
    LocalnetHandle,
    LocalnetOptions,
    serve,
    start_in_thread,
)
from curta_chain.localnet.node import Localnet
from curta_chain.localnet.outcomes import Landed, Queued, Refused

__all__ = [
    "BusyOptions",
    "Landed",
    "Localnet",
    "LocalnetHandle",
    "LocalnetOptions",
    "ManualClock",
    "Queued",
    "Refused",
    "serve",
    "start_in_thread",
]
