"""The localnet plays Agave 4.3: v1 transactions, size limits, feature gates, SIMD-0500, SIMD-0525.

Every expected message is the one agave 4.3.2's rpc.rs, runtime and loader give (the crates'
sources are cited in docs/localnet.md). The localnet runs in-process over real HTTP, or as
the ``curta-chain localnet`` process where the command line is what is tested.
"""

import base64
import time
from collections.abc import Iterator

import based58
import pytest
from localnet_helpers import (
    PROCESSED_PREFLIGHT,
    balance,
    latest_blockhash,
    result,
    rpc,
    transfer_tx,
)
from solders.hash import Hash
from solders.instruction import Instruction
from solders.keypair import Keypair
from solders.message import Message, MessageV1, TransactionConfig, to_bytes_versioned
from solders.pubkey import Pubkey
from solders.system_program import CreateAccountParams, create_account
from solders.transaction import VersionedTransaction

from curta_chain.chain import loader
from curta_chain.localnet import BusyOptions, Localnet, LocalnetHandle, ManualClock, start_in_thread
from curta_chain.localnet.busy import BUSY_BACKGROUND_LOAD
from curta_chain.localnet.features import DISABLE_SBPF_V0_DEPLOYMENT, ENABLE_TX_V1
from curta_chain.localnet.rpc_errors import RpcMethodError
from curta_chain.localnet.transaction_methods import send_transaction
from curta_chain.program import shipped_program
from curta_chain.protocol.features import ENABLE_SBPF_V3, FEATURE_IDS, FEATURE_PROGRAM_ID

MEMO = Pubkey.from_string("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr")
TYPE = "solana_transaction::versioned::VersionedTransaction"
CONFIG = TransactionConfig(
    priority_fee=1_234, compute_unit_limit=200_000, loaded_accounts_data_size_limit=1 << 20
)
"""A v1 budget that runs a memo or a transfer: agave 4.3 gives an unset limit 0."""


def v1(
    payer: Keypair,
    blockhash: Hash,
    instructions: list[Instruction],
    config: TransactionConfig = CONFIG,
    signers: tuple[Keypair, ...] = (),
) -> VersionedTransaction:
    legacy = Message.new_with_blockhash(instructions, payer.pubkey(), blockhash)
    message = MessageV1(legacy.header, config, blockhash, legacy.account_keys, legacy.instructions)
    return VersionedTransaction(message, [payer, *signers])


def memo(text: bytes) -> Instruction:
    return Instruction(MEMO, text, [])


def sized(build, size: int) -> VersionedTransaction:
    """The transaction ``build(memo_bytes)`` makes that is exactly ``size`` bytes."""
    length = size - len(bytes(build(b"")))
    tx = build(b"a" * length)
    # A legacy instruction's data length is a compact-u16: two bytes from 128 on.
    tx = build(b"a" * (length - (len(bytes(tx)) - size)))
    assert len(bytes(tx)) == size
    return tx


def send(url: str, tx: VersionedTransaction, encoding: str = "base64", **config) -> dict:
    """Send ``tx``, its preflight at confirmed, where ``latest_blockhash`` is taken."""
    raw = bytes(tx)
    text = base64.b64encode(raw).decode() if encoding == "base64" else based58.b58encode(raw)
    text = text if isinstance(text, str) else text.decode()
    config = {"encoding": encoding, "preflightCommitment": "confirmed", **config}
    return rpc(url, "sendTransaction", [text, config])


def status(url: str, signature: str) -> dict | None:
    return result(url, "getSignatureStatuses", [[signature]])["value"][0]


def wait_confirmed(url: str, signature: str) -> dict:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = status(url, signature)
        if found is not None and found["confirmationStatus"] in ("confirmed", "finalized"):
            return found
        time.sleep(0.05)
    raise AssertionError(f"{signature} not confirmed")


def fund(url: str) -> Keypair:
    payer = Keypair()
    signature = result(url, "requestAirdrop", [str(payer.pubkey()), 10**11])
    wait_confirmed(url, signature)
    return payer


@pytest.fixture
def no_v1() -> Iterator[LocalnetHandle]:
    handle = start_in_thread(deactivate_features=(ENABLE_TX_V1,))
    try:
        yield handle
    finally:
        handle.stop()


# -- v1 transactions ---------------------------------------------------------------------


def test_a_v1_transaction_lands_and_pays_its_inline_priority_fee(localnet):
    url = localnet.url
    payer, to = fund(localnet.url), Keypair().pubkey()
    before = balance(url, payer.pubkey())
    transfer = transfer_tx(payer, to, 10**6, latest_blockhash(url))
    legacy = transfer.message
    message = MessageV1(
        legacy.header, CONFIG, legacy.recent_blockhash, legacy.account_keys, legacy.instructions
    )
    tx = VersionedTransaction(message, [payer])
    signature = send(url, tx)["result"]
    assert signature == str(tx.signatures[0])
    assert status(url, signature)["err"] is None
    # The signature fee and the priority fee, which a v1 message states in lamports.
    assert before - balance(url, payer.pubkey()) == 10**6 + 5_000 + 1_234
    assert balance(url, to) == 10**6
    encoded = base64.b64encode(to_bytes_versioned(message)).decode()
    fee = result(url, "getFeeForMessage", [encoded, {"commitment": "processed"}])["value"]
    assert fee == 5_000 + 1_234
    # A rebroadcast of it is a duplicate, as a legacy one's is: refused at preflight,
    # answered and dropped without.
    again = send(url, tx)["error"]
    assert again["data"]["err"] == "AlreadyProcessed"
    assert send(url, tx, skipPreflight=True)["result"] == signature
    assert before - balance(url, payer.pubkey()) == 10**6 + 5_000 + 1_234


def test_v1_without_a_budget_is_held_to_agave_4_3s_zero_limits(localnet):
    url = localnet.url
    payer = fund(url)
    blockhash = latest_blockhash(url)
    # No loaded-data limit: 0, and the payer alone is more.
    answer = send(url, v1(payer, blockhash, [memo(b"x")], TransactionConfig()))["error"]
    assert answer["code"] == -32002
    assert answer["message"] == (
        "Transaction simulation failed: Transaction exceeded max loaded accounts data size cap"
    )
    # A loaded-data limit but no compute-unit limit: 0 units, the memo cannot run.
    config = TransactionConfig(loaded_accounts_data_size_limit=1 << 20)
    answer = send(url, v1(payer, blockhash, [memo(b"y")], config))["error"]
    assert answer["data"]["err"]["InstructionError"][0] == 0
    assert answer["data"]["logs"][0] == f"Program {MEMO} invoke [1]"
    # Its limit is the one it states, not LiteSVM's default for its instructions.
    config = TransactionConfig(compute_unit_limit=100, loaded_accounts_data_size_limit=1 << 20)
    answer = send(url, v1(payer, blockhash, [memo(b"y")], config))["error"]
    assert answer["message"] == (
        "Transaction simulation failed: Error processing Instruction 0: Computational budget "
        "exceeded"
    )
    assert answer["data"]["err"] == {"InstructionError": [0, "ComputationalBudgetExceeded"]}
    assert f"Program {MEMO} consumed 100 of 100 compute units" in answer["data"]["logs"]
    # A legacy memo after them gets its own (default) budget again.
    legacy = VersionedTransaction(
        Message.new_with_blockhash([memo(b"z")], payer.pubkey(), blockhash), [payer]
    )
    assert "result" in send(url, legacy)


def test_v1_is_refused_as_unsupported_while_its_feature_is_deactivated(no_v1):
    url = no_v1.url
    payer = fund(url)
    blockhash = latest_blockhash(url)
    tx = v1(payer, blockhash, [memo(b"v1")])
    answer = send(url, tx)["error"]
    assert answer["code"] == -32002
    assert answer["message"] == "Transaction simulation failed: Transaction version is unsupported"
    assert answer["data"]["err"] == "UnsupportedVersion"
    assert answer["data"]["logs"] == [] and answer["data"]["unitsConsumed"] == 0
    simulated = result(
        url, "simulateTransaction", [base64.b64encode(bytes(tx)).decode(), {"encoding": "base64"}]
    )
    assert simulated["value"]["err"] == "UnsupportedVersion"
    # Without preflight the node answers the signature and drops it (agave's sigverify does):
    # a legacy transaction sent after it lands, it never does.
    assert send(url, tx, skipPreflight=True)["result"] == str(tx.signatures[0])
    legacy = transfer_tx(payer, Keypair().pubkey(), 10**6, blockhash)
    wait_confirmed(url, send(url, legacy, skipPreflight=True)["result"])
    assert status(url, str(tx.signatures[0])) is None
    feature = result(url, "getAccountInfo", [str(ENABLE_TX_V1), {"encoding": "base64"}])
    assert feature["value"] is None


# -- size limits ------------------------------------------------------------------------


def test_size_limits_are_the_validators_with_its_messages(localnet):
    url = localnet.url
    payer = fund(url)
    blockhash = latest_blockhash(url)

    def legacy(text: bytes) -> VersionedTransaction:
        message = Message.new_with_blockhash([memo(text)], payer.pubkey(), blockhash)
        return VersionedTransaction(message, [payer])

    def version1(text: bytes) -> VersionedTransaction:
        return v1(payer, blockhash, [memo(text)])

    assert "result" in send(url, sized(legacy, 1_232))
    for encoding in ("base64", "base58"):
        answer = send(url, sized(legacy, 1_233), encoding)["error"]
        assert answer["code"] == -32602
        encoded_length = len(based58.b58encode(bytes(sized(legacy, 1_233))))
        if encoding == "base58" and encoded_length > 1_683:
            assert answer["message"] == (
                f"base58 encoded {TYPE} too large: {encoded_length} bytes "
                "(max: encoded/raw 1683/1232)"
            )
        else:
            assert answer["message"] == f"decoded {TYPE} too large: 1233 bytes (max: 1232 bytes)"

    landed = send(url, sized(version1, 4_096))["result"]
    assert status(url, landed)["err"] is None
    answer = send(url, sized(version1, 4_097))["error"]
    assert answer == {
        "code": -32602,
        "message": f"decoded {TYPE} too large: 4097 bytes (max: 4096 bytes)",
    }
    # base64 past 4,096 bytes: refused before decoding (5,464 characters at most).
    too_long = "gQ" + "A" * 5_463
    answer = rpc(url, "sendTransaction", [too_long, {"encoding": "base64"}])["error"]
    assert answer["message"] == (
        f"base64 encoded {TYPE} too large: 5465 bytes (max: encoded/raw 5464/4096)"
    )
    # base58 stays at one packet, v1 or not.
    answer = send(url, sized(version1, 2_000), "base58")["error"]
    length = len(based58.b58encode(bytes(sized(version1, 2_000))))
    assert answer["message"] == (
        f"base58 encoded {TYPE} too large: {length} bytes (max: encoded/raw 1683/1232)"
    )


# -- getTransaction / getBlock ----------------------------------------------------------


def test_get_transaction_and_get_block_answer_for_v1_in_every_encoding(localnet):
    url = localnet.url
    payer = fund(url)
    tx = v1(payer, latest_blockhash(url), [memo(b"hello v1")])
    signature = send(url, tx)["result"]
    slot = wait_confirmed(url, signature)["slot"]
    keys = [str(key) for key in tx.message.account_keys]
    config = {
        "priorityFee": 1_234,
        "computeUnitLimit": 200_000,
        "loadedAccountsDataSizeLimit": 1 << 20,
        "heapSize": None,
    }
    newer = (
        "Transaction version (1) is not supported by the requesting client. Please try the "
        'request again with the following configuration parameter: "maxSupportedTransactionVersion"'
        ": 1"
    )
    base58_refused = "base58 encoding is not supported with maxSupportedTransactionVersion >= 1"
    memo_program = result(url, "getAccountInfo", [str(MEMO), {"encoding": "base64"}])["value"]
    assert memo_program["owner"] != str(loader.LOADER_V3)  # no program data to load
    memo_pages = -(-(2 * 64 + memo_program["space"]) // (32 * 1024))

    def get(method: str, target, encoding: str, max_version: int | None) -> dict:
        options = {"encoding": encoding, "commitment": "confirmed"}
        if max_version is not None:
            options["maxSupportedTransactionVersion"] = max_version
        return rpc(url, method, [target, options])

    for method, target in (("getTransaction", signature), ("getBlock", slot)):
        for encoding in ("json", "jsonParsed", "base64", "base58"):
            for max_version in (None, 0):
                assert get(method, target, encoding, max_version)["error"] == {
                    "code": -32015,
                    "message": newer,
                }
        assert get(method, target, "base58", 1)["error"] == {
            "code": -32602,
            "message": base58_refused,
        }
        answers = {
            encoding: get(method, target, encoding, 1)["result"]
            for encoding in ("json", "jsonParsed", "base64")
        }
        if method == "getBlock":
            answers = {
                encoding: next(
                    item
                    for item in block["transactions"]
                    if signature in str(item["transaction"])
                    or (
                        isinstance(item["transaction"], list)
                        and base64.b64decode(item["transaction"][0]) == bytes(tx)
                    )
                )
                for encoding, block in answers.items()
            }
        for answer in answers.values():
            assert answer["version"] == 1
            assert answer["meta"]["fee"] == 5_000 + 1_234
            assert answer["meta"]["err"] is None
            # agave's cost: a signature, the payer written, 8 bytes of data, the memo's
            # units, 8 a 32 KiB page of the payer and the memo program (its ELF inside).
            units = answer["meta"]["computeUnitsConsumed"]
            assert answer["meta"]["costUnits"] == 720 + 300 + 8 // 4 + units + 8 * memo_pages
            assert ("transactionIndex" in answer) == (method == "getTransaction")
        assert answers["base64"]["transaction"] == [base64.b64encode(bytes(tx)).decode(), "base64"]
        raw = answers["json"]["transaction"]["message"]
        assert raw == {
            "header": {
                "numRequiredSignatures": 1,
                "numReadonlySignedAccounts": 0,
                "numReadonlyUnsignedAccounts": 1,
            },
            "accountKeys": keys,
            "recentBlockhash": str(tx.message.recent_blockhash),
            "instructions": [
                {
                    "programIdIndex": 1,
                    "accounts": [],
                    "data": based58.b58encode(b"hello v1").decode(),
                    "stackHeight": 1,
                }
            ],
            "transactionConfig": config,
        }
        parsed = answers["jsonParsed"]["transaction"]["message"]
        assert parsed["accountKeys"] == [
            {"pubkey": keys[0], "signer": True, "writable": True, "source": "transaction"},
            {"pubkey": keys[1], "signer": False, "writable": False, "source": "transaction"},
        ]
        assert parsed["instructions"] == [
            {"program": "spl-memo", "programId": str(MEMO), "parsed": "hello v1", "stackHeight": 1}
        ]
        assert parsed["transactionConfig"] == config
        assert "addressTableLookups" not in raw and "addressTableLookups" not in parsed


# -- feature gates ----------------------------------------------------------------------


def feature_account(url: str, feature: Pubkey) -> dict | None:
    return result(url, "getAccountInfo", [str(feature), {"encoding": "base64"}])["value"]


def test_every_feature_has_its_genesis_account_until_deactivated(localnet_process, tmp_path):
    unknown = Keypair().pubkey()
    flags = (
        "--deactivate-feature",
        str(ENABLE_TX_V1),
        "--deactivate-feature",
        str(DISABLE_SBPF_V0_DEPLOYMENT),
        "--deactivate-feature",
        str(unknown),
    )
    node = localnet_process(tmp_path / "ledger", extra=flags)
    url = node.url
    active = feature_account(url, FEATURE_IDS[ENABLE_SBPF_V3])
    assert active is not None
    assert active["owner"] == str(FEATURE_PROGRAM_ID)
    assert base64.b64decode(active["data"][0]) == b"\x01" + bytes(8)  # active since slot 0
    assert feature_account(url, ENABLE_TX_V1) is None
    assert feature_account(url, DISABLE_SBPF_V0_DEPLOYMENT) is None
    warning = f"Feature {unknown} set for deactivation is not a known Feature public key"
    assert f"warning: {warning}\n" in node.output
    # The ledger keeps the genesis: a restart without the flags has them off still, and one
    # with other flags says they are ignored, as solana-test-validator does.
    node.stop()
    node.extra = ("--deactivate-feature", str(FEATURE_IDS[ENABLE_SBPF_V3]))
    node.start()
    assert feature_account(url, ENABLE_TX_V1) is None
    assert feature_account(url, FEATURE_IDS[ENABLE_SBPF_V3]) is not None
    assert "--deactivate-feature argument ignored, ledger already exists\n" in node.output
    node.stop()
    node.extra = ()
    node.start()
    assert feature_account(url, DISABLE_SBPF_V0_DEPLOYMENT) is None
    assert feature_account(url, FEATURE_IDS[ENABLE_SBPF_V3]) is not None


def test_a_deactivate_feature_that_is_no_pubkey_is_one_line(capsys):
    from curta_chain.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["localnet", "--port", "0", "--deactivate-feature", "not-a-key"])
    assert exited.value.code == 2
    assert capsys.readouterr().err.strip() == (
        "error: curta-chain localnet: argument --deactivate-feature: not-a-key: expected a "
        "base58 public key (see --help)"
    )


# -- SIMD-0500 ----------------------------------------------------------------------------


def deploy(url: str, payer: Keypair, elf: bytes) -> dict:
    """Write ``elf`` to a buffer (v1 writes) and send DeployWithMaxDataLen; its answer."""
    buffer, program = Keypair(), Keypair()
    blockhash = latest_blockhash(url)
    rent = result(url, "getMinimumBalanceForRentExemption", [37 + len(elf)])
    allocate = create_account(
        CreateAccountParams(
            from_pubkey=payer.pubkey(),
            to_pubkey=buffer.pubkey(),
            lamports=rent,
            space=37 + len(elf),
            owner=loader.LOADER_V3,
        )
    )
    initialize = loader.initialize_buffer(buffer.pubkey(), payer.pubkey())
    assert "result" in send(url, v1(payer, blockhash, [allocate, initialize], signers=(buffer,)))
    # The loader reads at most one packet of instruction data: 1,100 bytes a Write, three
    # Writes a v1 transaction.
    chunk, per_transaction = 1_100, 3
    for start in range(0, len(elf), chunk * per_transaction):
        writes = [
            loader.write(buffer.pubkey(), payer.pubkey(), at, elf[at : at + chunk])
            for at in range(start, min(start + chunk * per_transaction, len(elf)), chunk)
        ]
        tx = v1(payer, blockhash, writes)
        assert len(bytes(tx)) <= 4_096
        assert "result" in send(url, tx), start
    program_rent = result(url, "getMinimumBalanceForRentExemption", [36])
    create = create_account(
        CreateAccountParams(
            from_pubkey=payer.pubkey(),
            to_pubkey=program.pubkey(),
            lamports=program_rent,
            space=36,
            owner=loader.LOADER_V3,
        )
    )
    deploy_ix = loader.deploy_with_max_data_len(
        payer.pubkey(), program.pubkey(), buffer.pubkey(), payer.pubkey(), len(elf)
    )
    message = Message.new_with_blockhash([create, deploy_ix], payer.pubkey(), blockhash)
    return send(url, VersionedTransaction(message, [payer, program]))


def test_simd_0500_refuses_to_deploy_sbpf_v0_and_takes_v3(localnet):
    url = localnet.url
    payer = fund(url)
    refused = deploy(url, payer, shipped_program("sbpf-v0").elf)["error"]
    assert refused["code"] == -32002
    assert refused["message"] == (
        "Transaction simulation failed: Error processing Instruction 1: invalid account data "
        "for instruction"
    )
    assert refused["data"]["err"] == {"InstructionError": [1, "InvalidAccountData"]}
    # solana-sbpf 0.23's ElfError::UnsupportedSBPFVersion, logged by the loader.
    assert refused["data"]["logs"][-2:] == [
        "Detected sbpf_version required by the executable which are not enabled",
        f"Program {loader.LOADER_V3} failed: invalid account data for instruction",
    ]
    assert "result" in deploy(url, payer, shipped_program("sbpf-v3").elf)


def test_with_simd_0500_deactivated_sbpf_v0_deploys():
    handle = start_in_thread(deactivate_features=(DISABLE_SBPF_V0_DEPLOYMENT,))
    try:
        url = handle.url
        assert feature_account(url, DISABLE_SBPF_V0_DEPLOYMENT) is None
        assert "result" in deploy(url, fund(url), shipped_program("sbpf-v0").elf)
    finally:
        handle.stop()


# -- SIMD-0525 ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("slot_ms", "block", "account"),
    [
        (400, 100_000_000, 40_000_000),
        (350, 87_500_000, 35_000_000),
        (300, 75_000_000, 30_000_000),
        (250, 62_500_000, 25_000_000),
        (200, 50_000_000, 20_000_000),
    ],
)
def test_slot_ms_scales_the_limits_as_simd_0525s_table(slot_ms, block, account):
    busy = BusyOptions.busy().at_slot_ms(slot_ms)
    assert (busy.block_cu_limit, busy.account_cu_limit) == (block, account)
    assert busy.background_load == BUSY_BACKGROUND_LOAD * slot_ms // 400


@pytest.mark.parametrize(("slot_ms", "per_account", "per_block"), [(200, 14, 35), (400, 15, 36)])
def test_shorter_slots_hold_fewer_units_a_block_and_an_account(slot_ms, per_account, per_block):
    # Each transfer asks 1,400,000 units: it reserves 1,417,708 (720 + 2 x 300 + 4 data
    # units + 1,400,000 + 16,384 for 64 MiB of loaded data). At 200 ms a writable account
    # holds 14 (20 M), a block 35 (50 M); at 400 ms 15 and 36 are all there is.
    from solders.compute_budget import set_compute_unit_limit

    clock = ManualClock()
    seconds = slot_ms / 1000
    busy = BusyOptions(blocks=True).at_slot_ms(slot_ms)
    localnet = Localnet(now=clock, slot_duration=seconds, busy=busy)
    payers = [Keypair() for _ in range(3)]
    for payer in payers:
        localnet.airdrop(payer.pubkey(), 10**11)
    while localnet.leader is not None and localnet.leader.queue:
        clock.advance(seconds)
        localnet.tick()

    def next_block() -> list[str]:
        clock.advance(seconds)
        return [details.signature for details in localnet.history.block(localnet.tick())]

    def sends(payer: Keypair, count: int) -> list[str]:
        blockhash = Hash.from_string(localnet.clock.blockhash(localnet.tick()))
        limit = (set_compute_unit_limit(1_400_000),)
        return [
            send_transaction(localnet, [base64.b64encode(bytes(tx)).decode(), PROCESSED_PREFLIGHT])
            for tx in (
                transfer_tx(payer, Keypair().pubkey(), 10**6 + n, blockhash, limit)
                for n in range(count)
            )
        ]

    one_payer = sends(payers[0], 15)
    assert len(next_block()) == per_account
    next_block()
    assert all(localnet.status(signature) is not None for signature in one_payer)
    many = [signature for payer in payers for signature in sends(payer, 12)]
    assert len(next_block()) == per_block
    next_block()
    assert all(localnet.status(signature) is not None for signature in many)
    localnet.close()


def test_the_busy_line_says_the_scaled_limits(localnet_process):
    node = localnet_process(extra=("--profile", "busy", "--slot-ms", "200"))
    line = next(text for text in node.output if text.startswith("Busy cluster:"))
    assert line.startswith(
        "Busy cluster: blocks of 50,000,000 CU, 20,000,000 CU and 100 writes per account; "
        "background load 25,000,000 CU a block;"
    )


def test_feature_reads_find_v3_enabled_and_v0_deployment_off(localnet):
    url = localnet.url
    for feature in (FEATURE_IDS[ENABLE_SBPF_V3], DISABLE_SBPF_V0_DEPLOYMENT, ENABLE_TX_V1):
        account = feature_account(url, feature)
        assert account is not None and account["lamports"] == result(
            url, "getMinimumBalanceForRentExemption", [9]
        )
    owned = result(
        url,
        "getProgramAccounts",
        [str(FEATURE_PROGRAM_ID), {"encoding": "base64", "dataSlice": {"offset": 0, "length": 0}}],
    )
    assert {item["pubkey"] for item in owned} >= {
        str(ENABLE_TX_V1),
        str(DISABLE_SBPF_V0_DEPLOYMENT),
    }


# -- v1 in the busy mode and the ledger ---------------------------------------------------


def test_a_v1_transaction_waits_for_its_block_and_lands_in_it(clock):
    localnet = Localnet(now=clock, busy=BusyOptions(blocks=True, seed=3))
    payer = Keypair()
    localnet.airdrop(payer.pubkey(), 10**11)
    while localnet.leader is not None and localnet.leader.queue:
        clock.advance(0.4)
        localnet.tick()
    blockhash = Hash.from_string(localnet.clock.blockhash(localnet.tick()))
    before = localnet.svm.get_balance(payer.pubkey())
    tx = v1(payer, blockhash, [memo(b"in a block")])
    signature = send_transaction(
        localnet, [base64.b64encode(bytes(tx)).decode(), PROCESSED_PREFLIGHT]
    )
    assert localnet.status(signature) is None  # queued for the next block
    clock.advance(0.4)
    slot = localnet.tick()
    assert [details.signature for details in localnet.history.block(slot)] == [signature]
    assert localnet.status(signature) == (slot, None)
    assert before - localnet.svm.get_balance(payer.pubkey()) == 5_000 + 1_234
    # Preflight in the busy mode holds a v1 transaction to its own budget too.
    starved = v1(
        payer,
        blockhash,
        [memo(b"no units")],
        TransactionConfig(compute_unit_limit=100, loaded_accounts_data_size_limit=1 << 20),
    )
    with pytest.raises(RpcMethodError, match="Computational budget exceeded"):
        send_transaction(localnet, [base64.b64encode(bytes(starved)).decode(), PROCESSED_PREFLIGHT])
    localnet.close()


def test_a_v1_transaction_survives_a_kill_9_and_restart(localnet_process, tmp_path):
    node = localnet_process(tmp_path / "ledger")
    url = node.url
    payer, to = fund(url), Keypair().pubkey()
    transfer = transfer_tx(payer, to, 10**6, latest_blockhash(url)).message
    message = MessageV1(
        transfer.header,
        CONFIG,
        transfer.recent_blockhash,
        transfer.account_keys,
        transfer.instructions,
    )
    tx = VersionedTransaction(message, [payer])
    signature = send(url, tx)["result"]
    slot = wait_confirmed(url, signature)["slot"]
    node.restart()  # kill -9, then replay the log
    assert status(url, signature)["slot"] == slot
    assert balance(url, to) == 10**6
    answer = result(
        url,
        "getTransaction",
        [
            signature,
            {"encoding": "base64", "maxSupportedTransactionVersion": 1, "commitment": "confirmed"},
        ],
    )
    assert answer["version"] == 1 and answer["meta"]["fee"] == 5_000 + 1_234
    assert answer["transaction"][0] == base64.b64encode(bytes(tx)).decode()
