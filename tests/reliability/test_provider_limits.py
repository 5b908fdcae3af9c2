"""What a provider does that the localnet does not: refuse an oversized batch call by call,
bill a history search per status, forget statuses a run long past sent.

- ``publish`` of stories260K through a provider that takes batches of 16 finishes,
  whichever way it refuses a larger batch (the sender's first burst is 32 sends: HTTP 413,
  an error object for the batch, or a list of one alike error per call): each halves it.
- The publish path polls the status cache: no getSignatureStatuses of its asks
  ``searchTransactionHistory``; a signature the cache no longer holds (a rerun's) is still
  found, by one history search.
"""

import asyncio

import pytest
from fault_proxy import FaultProxy, Provider, fund, rpc, run_plain
from solders.keypair import Keypair

from curta_chain.chain.rpc import RpcClient
from curta_chain.chain.sender import FIRST_BURST
from curta_chain.chain.signature_statuses import wait_for_signature
from curta_chain.chain.transport import HttpTransport
from curta_chain.constants import LAMPORTS_PER_SOL
from curta_chain.localnet import LocalnetHandle

MAX_BATCH = FIRST_BURST // 2
"""The provider's cap: under the sender's first burst of sends, which goes as one batch."""
PUBLISH_DEADLINE = 120.0
"""Seconds a publish of stories260K may take through the limited provider (clean: ~3 s)."""


@pytest.mark.parametrize("refusal", ["per-call", "error", "413"])
def test_publish_halves_every_form_of_batch_refusal_and_finishes(
    localnet: LocalnetHandle, tmp_path, stories260k_file, refusal
):
    proxy = FaultProxy(localnet.url, provider=Provider(max_batch=MAX_BATCH, batch_refusal=refusal))
    proxy.start()
    try:
        keypair = fund(localnet.url, Keypair(), 20 * LAMPORTS_PER_SOL, tmp_path)
        via = ("-u", proxy.url, "-k", str(keypair))
        done = run_plain("publish", str(stories260k_file), *via, timeout=PUBLISH_DEADLINE)
    finally:
        proxy.stop()
    assert done.returncode == 0, done.stderr
    assert proxy.injected["batch refused"] > 0
    # The normal path polls the status cache alone: no ledger search per poll.
    assert proxy.status_polls > 0 and proxy.history_searches == 0


def test_a_signature_gone_from_the_status_cache_is_found_in_history(
    localnet: LocalnetHandle,
):
    proxy = FaultProxy(localnet.url, provider=Provider(forget_statuses=True)).start()
    try:
        signature = rpc(localnet.url, "requestAirdrop", str(Keypair().pubkey()), 10**9)

        async def landed(url: str, timeout: float) -> None:
            client = RpcClient(HttpTransport(url))
            try:
                await wait_for_signature(client, signature, timeout)
            finally:
                await client.aclose()

        asyncio.run(landed(localnet.url, 60.0))  # confirmed, as the node's cache says
        # Through a node whose cache forgot it: polls see nothing; one search finds it.
        asyncio.run(landed(proxy.url, 0.5))
    finally:
        proxy.stop()
    assert proxy.status_polls > 0 and proxy.history_searches == 1
