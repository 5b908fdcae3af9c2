"""A JSON-RPC batch of transactions lets other clients' calls in between its transactions.

A client interrupted with Ctrl-C leaves its last batch running on the node; rerun, it reads
at once (its connect must not wait for that whole batch, as a validator answers reads
while it executes transactions).
"""

import threading

import httpx
from localnet_helpers import CONFIRMED_PREFLIGHT, b64, latest_blockhash, result, transfer_tx
from solders.keypair import Keypair


def test_a_batch_of_transactions_lets_other_calls_in(localnet, fund):
    """A client rerun after Ctrl-C reads at once, while its old batch still runs."""
    payer = fund(localnet.url, 10)
    blockhash = latest_blockhash(localnet.url)
    batch = [
        {"jsonrpc": "2.0", "id": i, "method": "sendTransaction",
         "params": [b64(transfer_tx(payer, Keypair().pubkey(), 1_000_000 + i, blockhash)),
                    CONFIRMED_PREFLIGHT]}
        for i in range(400)
    ]  # fmt: skip
    count = [{"commitment": "processed"}]
    before = result(localnet.url, "getTransactionCount", count)
    answers: list[int] = []
    sending = threading.Thread(
        target=lambda: answers.append(len(httpx.post(localnet.url, json=batch, timeout=300).json()))
    )
    sending.start()
    # Reads while the batch runs: one is answered with part of the batch landed (without
    # the yield between its transactions, a read waits for all 400 or comes before).
    seen = set()
    while sending.is_alive():
        seen.add(result(localnet.url, "getTransactionCount", count) - before)
    sending.join()
    assert answers == [400]
    assert any(0 < landed < 400 for landed in seen), sorted(seen)
