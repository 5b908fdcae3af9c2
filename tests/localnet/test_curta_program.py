"""The curta program preloaded in the localnet, driven over HTTP from create to sealed."""

import hashlib

import based58
from localnet_helpers import latest_blockhash, result, send_b64
from reference_client import Client
from solana.rpc.models import DataSliceOpts, MemcmpOpts
from solders.instruction import Instruction
from solders.keypair import Keypair
from solders.message import Message
from solders.pubkey import Pubkey
from solders.system_program import CreateAccountParams, create_account
from solders.transaction import VersionedTransaction

from curta_chain.chain import loader
from curta_chain.constants import LOCALNET_PROGRAM_ID, WEIGHT_HEADER_SIZE
from curta_chain.program import (
    MODEL_ACCOUNT_SIZE,
    ModelAccount,
    ModelState,
    begin_sealing,
    bind_weight_account,
    create_model,
    seal_step,
    write_weights,
)
from curta_chain.program.builds import find_program_binary

PROGRAM_ID = Pubkey.from_string(LOCALNET_PROGRAM_ID)


def send(url: str, payer: Keypair, instructions: list[Instruction], *signers: Keypair) -> dict:
    message = Message.new_with_blockhash(instructions, payer.pubkey(), latest_blockhash(url))
    return send_b64(url, VersionedTransaction(message, [payer, *signers]))


def new_account(url: str, payer: Keypair, account: Keypair, size: int) -> Instruction:
    lamports = result(url, "getMinimumBalanceForRentExemption", [size])
    params = CreateAccountParams(
        from_pubkey=payer.pubkey(),
        to_pubkey=account.pubkey(),
        lamports=lamports,
        space=size,
        owner=PROGRAM_ID,
    )
    return create_account(params)


def test_program_is_preloaded_as_the_test_validator_loads_it(localnet):
    """solana-test-validator's --bpf-program: upgradeable, deployed at slot 0, authority the
    default address; the program account holds 36 bytes, its program data the ELF."""
    url = localnet.url
    elf = preloaded_elf()
    info = Client(url, "processed").get_account_info(PROGRAM_ID).value
    assert info is not None and info.executable
    assert info.owner == loader.LOADER_V3 and len(info.data) == 36
    assert info.lamports == result(url, "getMinimumBalanceForRentExemption", [36])
    programdata = loader.programdata_address(PROGRAM_ID)
    parsed = result(url, "getAccountInfo", [str(PROGRAM_ID), {"encoding": "jsonParsed"}])
    assert parsed["value"]["data"]["parsed"] == {
        "type": "program",
        "info": {"programData": str(programdata)},
    }
    data = Client(url, "processed").get_account_info(programdata).value
    assert data is not None and not data.executable and data.owner == loader.LOADER_V3
    # UpgradeableLoaderState::ProgramData, spelt out: tag 3, slot 0, Some(the default
    # address), then the ELF. The client's own decoder reads the same.
    header = (3).to_bytes(4, "little") + (0).to_bytes(8, "little") + b"\x01" + bytes(32)
    assert data.data == header + elf
    assert loader.decode_state(data.data, "program data") == loader.ProgramDataState(
        0, Pubkey.default()
    )
    assert data.lamports == result(url, "getMinimumBalanceForRentExemption", [len(data.data)])


def test_a_program_error_lands_with_agaves_cost(localnet, funded_keypair):
    url, payer = localnet.url, funded_keypair
    message = Message.new_with_blockhash(
        [Instruction(PROGRAM_ID, bytes(8), [])], payer.pubkey(), latest_blockhash(url)
    )
    tx = VersionedTransaction(message, [payer])
    signature = send_b64(url, tx, skip_preflight=True)["result"]
    config = {"commitment": "confirmed"}
    answer = None
    while answer is None:  # confirmed once its slot is over
        answer = result(url, "getTransaction", [signature, config])
    meta = answer["meta"]
    assert meta["err"] == {"InstructionError": [0, {"Custom": 6001}]}
    rent = result(url, "getMinimumBalanceForRentExemption", [36])
    assert meta["preBalances"][1] == meta["postBalances"][1] == rent
    # Loaded: the payer, the program (36 bytes) and its program data (45 + the ELF), 64
    # bytes each on top; 8 units a 32 KiB page of that.
    loaded = 3 * 64 + 36 + 45 + len(preloaded_elf())
    pages = -(-loaded // (32 * 1024))
    units = meta["computeUnitsConsumed"]
    assert meta["costUnits"] == 720 + 300 + 8 // 4 + units + 8 * pages


def preloaded_elf() -> bytes:
    binary = find_program_binary()
    assert binary is not None
    return binary.read_bytes()


def test_publish_and_seal_a_model_over_rpc(localnet, funded_keypair):
    url, authority = localnet.url, funded_keypair
    sections = [bytes(range(250)) * 3, b"\x07" * 300]
    running = bytes(32)
    for section in sections:  # each section is one chunk here
        running = hashlib.sha256(running + section).digest()
    model = Keypair()
    create = [
        new_account(url, authority, model, MODEL_ACCOUNT_SIZE),
        create_model(PROGRAM_ID, authority.pubkey(), model.pubkey(), running, [750, 300]),
    ]
    assert "result" in send(url, authority, create, model)

    weights = [Keypair(), Keypair()]
    for index, (weight, section) in enumerate(zip(weights, sections, strict=True)):
        bind = [
            new_account(url, authority, weight, WEIGHT_HEADER_SIZE + len(section)),
            bind_weight_account(
                PROGRAM_ID, authority.pubkey(), model.pubkey(), weight.pubkey(), index
            ),
        ]
        assert "result" in send(url, authority, bind, weight)
        write = write_weights(PROGRAM_ID, authority.pubkey(), weight.pubkey(), 0, section)
        assert "result" in send(url, authority, [write])

    past_end = write_weights(PROGRAM_ID, authority.pubkey(), weights[0].pubkey(), 746, b"12345")
    refused = send(url, authority, [past_end])["error"]
    assert refused["code"] == -32002
    assert "custom program error: 0x17" in refused["message"]
    assert refused["data"]["logs"]

    client = Client(url, "processed")
    head = DataSliceOpts(offset=WEIGHT_HEADER_SIZE, length=16)
    written = client.get_account_info(weights[0].pubkey(), data_slice=head).value
    assert written.data == bytes(range(16))

    keys = [w.pubkey() for w in weights]
    begin = begin_sealing(PROGRAM_ID, authority.pubkey(), model.pubkey())
    assert "result" in send(url, authority, [begin])
    assert ModelAccount.from_bytes(client.get_account_info(model.pubkey()).value.data).seal_slot
    for key in keys:
        assert "result" in send(url, authority, [seal_step(PROGRAM_ID, model.pubkey(), [key], 0)])
    data = client.get_account_info(model.pubkey()).value.data
    decoded = ModelAccount.from_bytes(data)
    assert decoded.state == ModelState.SEALED
    assert decoded.running_hash == running

    mine = MemcmpOpts(offset=8, bytes=based58.b58encode(bytes(authority.pubkey())).decode())
    found = client.get_program_accounts(
        PROGRAM_ID, encoding="base64", filters=[MODEL_ACCOUNT_SIZE, mine]
    ).value
    assert [item.pubkey for item in found] == [model.pubkey()]
    everything = client.get_program_accounts(PROGRAM_ID, encoding="base64").value
    assert {item.pubkey for item in everything} == {model.pubkey(), *keys}
