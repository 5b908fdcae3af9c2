"""The client and the IDL agree with the program: discriminators, layouts, errors, sizes."""

import hashlib
import json
import os
import re
import struct
from pathlib import Path

import pytest
from curta_svm import PROGRAM_ID, Chain
from solders.compute_budget import set_compute_unit_limit, set_compute_unit_price
from solders.hash import Hash
from solders.keypair import Keypair
from solders.message import Message
from solders.pubkey import Pubkey
from solders.transaction import Transaction
from solders.transaction_status import (
    InstructionErrorCustom,
    InstructionErrorFieldless,
    TransactionErrorInstructionError,
)
from svm_errors import custom_error_code

import curta_chain.program as program
from curta_chain.constants import (
    LOCALNET_PROGRAM_ID,
    MAX_SECTION_SIZE,
    MAX_TRANSACTION_SIZE,
    WEIGHT_HEADER_SIZE,
)
from curta_chain.errors import AccountError, InputError, ProgramError
from curta_chain.program import (
    IDL_PATH,
    MAX_WRITE_PAYLOAD,
    MODEL_ACCOUNT_SIZE,
    ModelAccount,
    ModelState,
    SectionSlot,
    WeightHeader,
    bind_weight_account,
    create_model,
    load_idl,
    max_write_payload,
    program_error,
    seal_step,
    write_weights,
)
from curta_chain.program.idl import coder

ROOT = Path(__file__).resolve().parents[2]
HEADER = "".join(
    (ROOT / "programs" / "curta" / name).read_text() for name in ("curta.h", "inference.h")
)


def c_constant(name: str) -> int:
    match = re.search(rf"#define {name} (0x[0-9a-f]+)UL", HEADER)
    assert match, name
    return int(match.group(1), 16)


def test_idl_is_one_file_reached_from_programs_idl():
    link = ROOT / "programs_idl" / "curta.json"
    assert link.is_symlink() and os.readlink(link) == "../curta_chain/program/curta.json"
    assert link.read_bytes() == IDL_PATH.read_bytes()


def test_idl_address_is_the_localnet_program_id():
    assert json.loads(IDL_PATH.read_text())["address"] == LOCALNET_PROGRAM_ID


def test_instruction_discriminators_match_the_program():
    raw = json.loads(IDL_PATH.read_text())["instructions"]
    assert [ix["name"] for ix in raw] == [ix.name for ix in load_idl().instructions]
    for ix, written in zip(load_idl().instructions, raw, strict=True):
        expected = hashlib.sha256(f"global:{ix.name}".encode()).digest()[:8]
        assert bytes(written["discriminator"]) == ix.discriminator == expected
        assert coder().instruction_discriminator(ix.name) == expected
        assert struct.unpack("<Q", expected)[0] == c_constant(f"IX_{ix.name.upper()}")


def test_account_discriminators_match_the_program():
    raw = {
        a["name"]: bytes(a["discriminator"]) for a in json.loads(IDL_PATH.read_text())["accounts"]
    }
    for name, c_name in [
        ("Model", "MODEL_DISCRIMINATOR"),
        ("WeightAccount", "WEIGHT_ACCOUNT_DISCRIMINATOR"),
        ("Run", "RUN_DISCRIMINATOR"),
    ]:
        digest = hashlib.sha256(f"account:{name}".encode()).digest()[:8]
        assert raw.pop(name) == coder().account_discriminator(name) == digest
        assert struct.unpack("<Q", digest)[0] == c_constant(c_name)
    assert raw == {}


def test_error_codes_and_names_match_the_program():
    in_c = {}
    for enum in ("enum CurtaError {", "enum InferenceError {"):
        body = HEADER[HEADER.index(enum) : HEADER.index("};", HEADER.index(enum))]
        in_c |= {
            int(code): "".join(part.capitalize() for part in name.split("_"))
            for name, code in re.findall(r"ERR_([A-Z_]+) = (\d+),", body)
        }
    in_idl = {err.code: err.name for err in load_idl().errors}
    assert in_c == in_idl
    # Each range is contiguous: the original 6000s, and inference's from 6100.
    for low, high in ((6000, 6100), (6100, 6200)):
        codes = sorted(code for code in in_idl if low <= code < high)
        assert codes == list(range(low, low + len(codes)))


def test_program_written_accounts_round_trip_through_the_codecs(chain: Chain):
    pub = chain.publish([os.urandom(100), os.urandom(70_000)], declared=bytes(range(32)))
    chain.svm.warp_to_slot(77)
    chain.begin(pub)
    for weight in pub.weight_keys:  # section 0 whole, then the first chunk of section 1
        chain.must([seal_step(PROGRAM_ID, pub.model.pubkey(), [weight], 0)])
    raw = bytes(chain.svm.get_account(pub.model.pubkey()).data)
    model = ModelAccount.from_bytes(raw)
    assert model.to_bytes() == raw
    assert model.state == ModelState.SEALING and model.cursor_section == 1
    assert (model.frozen_count, model.seal_slot) == (2, 77)
    assert raw[104:108] == bytes([1, 2, 2, 2])  # state, section, bound and frozen counts
    assert struct.unpack_from("<IIQ", raw, 112) == (1, 2, 65_536)
    assert raw[128:160] == bytes(pub.weight_keys[0])
    assert struct.unpack_from("<Q", raw, 160)[0] == 100
    assert struct.unpack_from("<Q", raw, 848)[0] == 77
    data = bytes(chain.svm.get_account(pub.weight_keys[1]).data)
    header = WeightHeader.from_bytes(data)
    assert header.to_bytes() == data[:WEIGHT_HEADER_SIZE]
    assert (header.section_index, header.frozen, header.section_length) == (1, True, 70_000)
    assert data[72:80] == struct.pack("<I?3x", 1, True)


def test_model_json_names_the_state():
    slot = SectionSlot(Pubkey.default(), 7)
    model = ModelAccount(
        Pubkey.default(),
        b"\1" * 32,
        bytes(32),
        ModelState.FAILED,
        2,
        1,
        1,
        0,
        0,
        0,
        (slot, slot),
        9,
    )
    assert model.to_json()["state"] == "failed"
    assert (model.to_json()["frozen_count"], model.to_json()["seal_slot"]) == (1, 9)
    assert ModelAccount.from_bytes(model.to_bytes()) == model
    assert len(model.to_bytes()) == MODEL_ACCOUNT_SIZE
    header = WeightHeader(Pubkey.default(), Pubkey.default(), 3, True, 9)
    assert WeightHeader.from_bytes(header.to_bytes()) == header
    assert header.to_json()["section_index"] == 3


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (bytes(855), "855 bytes"),
        (bytes(856), "discriminator"),
        (None, "ModelState"),
    ],
)
def test_model_decode_refuses(data, match):
    if data is None:
        good = ModelAccount(
            Pubkey.default(), bytes(32), bytes(32), ModelState.SEALED, 2, 0, 0, 0, 0, 0, (), 0
        )
        raw = bytearray(good.to_bytes())
        raw[104] = 9
        data = bytes(raw)
    with pytest.raises(AccountError, match=match if match != "ModelState" else "decode"):
        ModelAccount.from_bytes(data)


def test_weight_header_decode_refuses():
    with pytest.raises(AccountError, match="2047 bytes"):
        WeightHeader.from_bytes(bytes(2047))
    with pytest.raises(AccountError, match="discriminator"):
        WeightHeader.from_bytes(bytes(4096))


@pytest.mark.parametrize("length", [MAX_SECTION_SIZE + 1, 2**50, 2**64 - 1])
def test_a_section_longer_than_the_spec_allows_is_refused_at_decode(length: int):
    # A node that claims it is refused before anything is sized from the claim; the
    # spec's largest section still decodes.
    slot = SectionSlot(Keypair().pubkey(), 1_000)
    model = ModelAccount(
        Pubkey.default(), bytes(32), bytes(32), ModelState.SEALED, 3, 3, 0, 0, 0, 0,
        (slot, slot, SectionSlot(slot.weight_account, MAX_SECTION_SIZE)), 0,
    )  # fmt: skip
    assert ModelAccount.from_bytes(model.to_bytes()) == model
    raw = bytearray(model.to_bytes())
    struct.pack_into("<Q", raw, 160 + 40, length)  # slot 1's length
    with pytest.raises(AccountError) as refused:
        ModelAccount.from_bytes(bytes(raw))
    assert str(refused.value) == (
        f"model account: section 1 length {length:,} at offset 200 > 10,483,712 (the spec's "
        "largest section)"
    )
    header = WeightHeader(Pubkey.default(), Pubkey.default(), 0, False, MAX_SECTION_SIZE)
    assert WeightHeader.from_bytes(header.to_bytes()) == header
    raw = bytearray(header.to_bytes())
    struct.pack_into("<Q", raw, 80, length)
    with pytest.raises(AccountError) as refused:
        WeightHeader.from_bytes(bytes(raw))
    assert str(refused.value) == (
        f"weight account: section length {length:,} at offset 80 > 10,483,712 (the spec's "
        "largest section)"
    )


def test_a_slot_past_the_section_count_is_not_the_models():
    # Only the model's own slots are bounded: the rest of the array is not read.
    model = ModelAccount(
        Pubkey.default(), bytes(32), bytes(32), ModelState.SEALED, 1, 1, 0, 0, 0, 0,
        (SectionSlot(Keypair().pubkey(), 1_000),), 0,
    )  # fmt: skip
    raw = bytearray(model.to_bytes())
    struct.pack_into("<Q", raw, 160 + 40 * 5, 2**50)
    assert ModelAccount.from_bytes(bytes(raw)) == model


@pytest.mark.parametrize("size", [0, 1, 127, 128, 1000, MAX_WRITE_PAYLOAD, 70_000])
def test_fast_write_equals_the_idl_coder(size: int):
    data = os.urandom(size)
    a, w = Keypair().pubkey(), Keypair().pubkey()
    ix = write_weights(PROGRAM_ID, a, w, 123_456, data)
    want = coder().encode_instruction("write_weights", {"offset": 123_456, "data": data})
    assert bytes(ix.data) == want
    assert [(m.pubkey, m.is_signer, m.is_writable) for m in ix.accounts] == [
        (a, True, False),
        (w, False, True),
    ]


@pytest.mark.parametrize(
    "build",
    [
        lambda: create_model(PROGRAM_ID, PROGRAM_ID, PROGRAM_ID, bytes(32), [-1, 5]),
        lambda: create_model(PROGRAM_ID, PROGRAM_ID, PROGRAM_ID, bytes(31), [1, 5]),
        lambda: bind_weight_account(PROGRAM_ID, PROGRAM_ID, PROGRAM_ID, PROGRAM_ID, 2**32),
    ],
)
def test_builders_refuse_arguments_that_do_not_fit(build):
    with pytest.raises(InputError) as caught:
        build()
    assert "\n" not in str(caught.value)


def test_write_refuses_offsets_beyond_u32():
    with pytest.raises(InputError, match="u32"):
        write_weights(PROGRAM_ID, PROGRAM_ID, PROGRAM_ID, 2**32, b"")


def _signed_write(payload: int, budget: bool) -> Transaction:
    authority = Keypair()
    ixs = [write_weights(PROGRAM_ID, authority.pubkey(), Keypair().pubkey(), 0, bytes(payload))]
    if budget:
        ixs = [set_compute_unit_limit(20_000), set_compute_unit_price(1_000), *ixs]
    return Transaction([authority], Message(ixs, authority.pubkey()), Hash.new_unique())


@pytest.mark.parametrize("budget", [False, True])
def test_max_write_payload_fills_one_transaction(budget: bool):
    payload = max_write_payload(budget)
    assert len(bytes(_signed_write(payload, budget))) <= MAX_TRANSACTION_SIZE
    assert len(bytes(_signed_write(payload + 3, budget))) > MAX_TRANSACTION_SIZE
    assert MAX_WRITE_PAYLOAD == max_write_payload(False) >= 1000
    assert max_write_payload(True) >= 950


def test_a_full_write_transaction_lands(chain: Chain):
    pub = chain.publish([bytes(5_000), bytes(10)], write=False)
    data = os.urandom(MAX_WRITE_PAYLOAD)
    ix = write_weights(PROGRAM_ID, chain.authority.pubkey(), pub.weight_keys[0], 4, data)
    tx = Transaction(
        [chain.authority], Message([ix], chain.authority.pubkey()), chain.svm.latest_blockhash()
    )
    assert len(bytes(tx)) <= MAX_TRANSACTION_SIZE
    assert not hasattr(chain.svm.send_transaction(tx), "err")
    stored = bytes(chain.svm.get_account(pub.weight_keys[0]).data)
    assert stored[WEIGHT_HEADER_SIZE + 4 : WEIGHT_HEADER_SIZE + 4 + len(data)] == data


def test_program_error_names_codes_from_the_idl():
    err = program_error(6005)
    assert isinstance(err, ProgramError)
    assert (err.code, err.name) == (6005, "WrongAccountOwner")
    assert "\n" not in str(err) and "WrongAccountOwner" in str(err)
    unknown = program_error(42)
    assert (unknown.code, unknown.name) == (42, None)


def test_custom_error_code_reads_every_form(chain: Chain):
    ix = write_weights(PROGRAM_ID, chain.authority.pubkey(), chain.funded().pubkey(), 0, b"x")
    result = chain.send([ix])
    assert custom_error_code(result.raw_error) == 6005
    tx = Transaction(
        [chain.authority], Message([ix], chain.authority.pubkey()), chain.svm.latest_blockhash()
    )
    assert custom_error_code(chain.svm.send_transaction(tx)) == 6005  # FailedTransactionMetadata
    assert custom_error_code(chain.svm.simulate_transaction(tx)) == 6005
    assert (
        custom_error_code(TransactionErrorInstructionError(0, InstructionErrorCustom(6001))) == 6001
    )
    fieldless = TransactionErrorInstructionError(0, InstructionErrorFieldless.InvalidArgument)
    assert custom_error_code(fieldless) is None
    assert custom_error_code({"InstructionError": [1, {"Custom": 6022}]}) == 6022
    assert custom_error_code(InstructionErrorCustom(6003)) == 6003
    assert custom_error_code({"InstructionError": [1, "InvalidArgument"]}) is None
    assert custom_error_code("AccountInUse") is None


def test_all_is_complete():
    public = {
        name
        for name, value in vars(program).items()
        if not name.startswith("_")
        and getattr(value, "__module__", "").startswith("curta_chain.program")
    }
    public |= {
        "IDL_PATH",
        "PROGRAM_BINARY",
        "BUILDS",
        "MAX_WRITE_PAYLOAD",
        "MODEL_ACCOUNT_SIZE",
    }
    assert set(program.__all__) == public
    assert program.PROGRAM_BINARY.is_file()
