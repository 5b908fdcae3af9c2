import base64

import based58
import zstandard
from localnet_helpers import PROCESSED, latest_blockhash, result, rpc, send_b64, transfer_tx
from reference_client import Client
from solana.rpc.models import DataSliceOpts, MemcmpOpts
from solders.keypair import Keypair
from solders.message import Message
from solders.pubkey import Pubkey
from solders.system_program import CreateAccountParams, create_account
from solders.transaction import VersionedTransaction

OWNER = Pubkey.from_string("Sysvar1111111111111111111111111111111111111")


def make_account(url: str, payer: Keypair, size: int, owner: Pubkey = OWNER) -> Pubkey:
    """Create a zero-filled account of ``size`` bytes owned by ``owner``."""
    account = Keypair()
    lamports = result(url, "getMinimumBalanceForRentExemption", [size])
    instruction = create_account(
        CreateAccountParams(
            from_pubkey=payer.pubkey(),
            to_pubkey=account.pubkey(),
            lamports=lamports,
            space=size,
            owner=owner,
        )
    )
    message = Message.new_with_blockhash([instruction], payer.pubkey(), latest_blockhash(url))
    assert "result" in send_b64(url, VersionedTransaction(message, [payer, account]))
    return account.pubkey()


def account_info(url: str, account: Pubkey, config: dict) -> dict:
    return result(url, "getAccountInfo", [str(account), {**config, **PROCESSED}])["value"]


def test_account_info_encodings_and_data_slice(localnet, funded_keypair):
    url = localnet.url
    account = make_account(url, funded_keypair, 300)
    for encoding in ("base64", "base64+zstd", "jsonParsed"):
        value = result(url, "getAccountInfo", [str(account), {"encoding": encoding, **PROCESSED}])[
            "value"
        ]
        assert value["owner"] == str(OWNER)
        assert value["space"] == 300
        data, tag = value["data"]
        raw = base64.b64decode(data)
        if tag == "base64+zstd":
            raw = zstandard.ZstdDecompressor().decompress(raw)
        assert raw == bytes(300)
    sliced = {"encoding": "base58", "dataSlice": {"offset": 290, "length": 100}, **PROCESSED}
    value = result(url, "getAccountInfo", [str(account), sliced])["value"]
    assert based58.b58decode(value["data"][0].encode()) == bytes(10)
    client_view = (
        Client(url, "processed")
        .get_account_info(account, data_slice=DataSliceOpts(offset=5, length=7))
        .value
    )
    assert client_view.data == bytes(7)
    assert client_view.owner == OWNER


def test_account_info_refusals(localnet, funded_keypair):
    url = localnet.url
    account = make_account(url, funded_keypair, 300)
    too_long = rpc(url, "getAccountInfo", [str(account), {"encoding": "base58", **PROCESSED}])[
        "error"
    ]
    assert too_long["code"] == -32600
    assert too_long["message"].startswith("Encoded binary (base 58) data should be less than 128")
    sliced = {"encoding": "jsonParsed", "dataSlice": {"offset": 0, "length": 1}, **PROCESSED}
    assert rpc(url, "getAccountInfo", [str(account), sliced])["error"]["code"] == -32600
    unknown = rpc(url, "getAccountInfo", [str(account), {"encoding": "hex"}])["error"]
    assert unknown["code"] == -32602
    missing = result(url, "getAccountInfo", [str(Pubkey.new_unique()), {"encoding": "base64"}])
    assert missing["value"] is None


def test_multiple_accounts(localnet, funded_keypair):
    url = localnet.url
    account = make_account(url, funded_keypair, 40)
    keys = [account, Pubkey.new_unique(), funded_keypair.pubkey()]
    values = Client(url, "processed").get_multiple_accounts(keys).value
    assert values[0].data == bytes(40)
    assert values[1] is None
    assert values[2].lamports > 0
    too_many = [str(Pubkey.new_unique()) for _ in range(101)]
    answer = rpc(url, "getMultipleAccounts", [too_many])["error"]
    assert answer == {"code": -32602, "message": "Too many inputs provided; max 100"}


def test_program_accounts_with_filters(localnet, funded_keypair):
    url = localnet.url
    owner = Pubkey.new_unique()
    small = make_account(url, funded_keypair, 16, owner)
    large = make_account(url, funded_keypair, 64, owner)
    make_account(url, funded_keypair, 64)  # another owner: never listed
    client = Client(url, "processed")
    everything = client.get_program_accounts(owner, encoding="base64").value
    assert sorted(str(item.pubkey) for item in everything) == sorted([str(small), str(large)])
    by_size = client.get_program_accounts(owner, encoding="base64", filters=[64]).value
    assert [item.pubkey for item in by_size] == [large]
    zero = based58.b58encode(bytes(4)).decode()
    by_bytes = client.get_program_accounts(
        owner, encoding="base64", filters=[MemcmpOpts(offset=12, bytes=zero)]
    ).value
    assert sorted(str(item.pubkey) for item in by_bytes) == sorted([str(small), str(large)])
    past_end = {"memcmp": {"offset": 14, "bytes": zero}}
    config = {"encoding": "base64", "filters": [past_end], "withContext": True, **PROCESSED}
    answer = result(url, "getProgramAccounts", [str(owner), config])
    assert [item["pubkey"] for item in answer["value"]] == [str(large)]
    sliced = {"encoding": "base64", "dataSlice": {"offset": 0, "length": 0}, **PROCESSED}
    for item in result(url, "getProgramAccounts", [str(owner), sliced]):
        assert item["account"]["data"] == ["", "base64"]


def test_program_accounts_refusals(localnet):
    url = localnet.url
    five = [{"dataSize": n} for n in range(5)]
    answer = rpc(url, "getProgramAccounts", [str(OWNER), {"filters": five}])["error"]
    assert answer == {"code": -32602, "message": "Too many filters provided; max 4"}
    bad = rpc(url, "getProgramAccounts", [str(OWNER), {"filters": [{"size": 1}]}])["error"]
    assert bad["code"] == -32602
    bad = {"filters": [{"memcmp": {"offset": 0, "bytes": "0OIl"}}]}
    assert rpc(url, "getProgramAccounts", [str(OWNER), bad])["error"]["code"] == -32602


def test_reads_see_every_write(localnet, funded_keypair):
    url = localnet.url
    account = make_account(url, funded_keypair, 10)
    first = result(url, "getAccountInfo", [str(account), {"encoding": "base64", **PROCESSED}])[
        "value"
    ]
    tx = transfer_tx(funded_keypair, account, 12_345, latest_blockhash(url))
    assert "result" in send_b64(url, tx)
    second = result(url, "getAccountInfo", [str(account), {"encoding": "base64", **PROCESSED}])[
        "value"
    ]
    assert second["lamports"] == first["lamports"] + 12_345
