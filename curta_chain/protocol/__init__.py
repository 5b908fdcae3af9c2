"""Solana's own facts, below both the client and the test cluster.

The client (``curta_chain.chain``) and the localnet (``curta_chain.localnet``) never import
each other; what both need of Solana lives here, each kind in its own module:

- ``limits``: sizes and limits the runtime and the RPC enforce (accounts, transactions,
  compute, commitments, a block's compute);
- ``compute_budget``: how the runtime reads a transaction's compute-budget instructions,
  and the fee it charges;
- ``sizes``: how long a transaction of any version is on the wire, and the most payload
  one can carry;
- ``loader``: the BPF loaders' ids, their account layouts and the program-data address;
- ``features``: the feature gates the project reads, and the Feature account's layout.

Facts only: the codecs each side writes or reads stay on that side (the client decodes the
loader's accounts in ``chain.loader``, the localnet encodes its own in
``localnet.programs``), so a bug in one is not mirrored by the other. Nothing here imports
the client, the localnet or the curta program.
"""

__all__ = ["compute_budget", "features", "limits", "loader", "sizes"]
