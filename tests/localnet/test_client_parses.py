"""solana-py's Client parses every answer of the localnet (solders' response types)."""

import pytest
from solana.rpc.api import Client
from solders.keypair import Keypair
from solders.system_program import ID as SYSTEM_PROGRAM_ID

CALLS = {
    "getEpochInfo": lambda c, kp, sig: c.get_epoch_info(),
    "getTransactionCount": lambda c, kp, sig: c.get_transaction_count(),
    "getIdentity": lambda c, kp, sig: c.get_identity(),
    "getBlockTime": lambda c, kp, sig: c.get_block_time(0),
    "getBlockHeight": lambda c, kp, sig: c.get_block_height(),
    "getAccountInfo jsonParsed": lambda c, kp, sig: c.get_account_info_json_parsed(kp.pubkey()),
    "getMultipleAccounts jsonParsed": lambda c, kp, sig: c.get_multiple_accounts_json_parsed(
        [kp.pubkey()]
    ),
    "getProgramAccounts jsonParsed": lambda c, kp, sig: c.get_program_accounts_json_parsed(
        SYSTEM_PROGRAM_ID
    ),
    "getTransaction jsonParsed": lambda c, kp, sig: c.get_transaction(sig, "jsonParsed"),
    "getTransaction base64": lambda c, kp, sig: c.get_transaction(sig, "base64"),
    "getTransaction v0": lambda c, kp, sig: c.get_transaction(
        sig, max_supported_transaction_version=0
    ),
    "getSignatureStatuses": lambda c, kp, sig: c.get_signature_statuses([sig], True),
    "getGenesisHash": lambda c, kp, sig: c.get_genesis_hash(),
    "getVersion": lambda c, kp, sig: c.get_version(),
    "getLatestBlockhash": lambda c, kp, sig: c.get_latest_blockhash("finalized"),
    "getBalance": lambda c, kp, sig: c.get_balance(kp.pubkey(), "processed"),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_client_parses(localnet, name):
    client = Client(localnet.url, "processed")
    keypair = Keypair()
    signature = client.request_airdrop(keypair.pubkey(), 10**9).value
    answer = CALLS[name](client, keypair, signature)
    assert answer.value is not None if hasattr(answer, "value") else answer is not None
