"""The IDL-driven coder: every instruction and every account type round-trips, the builders
take their accounts from the IDL, and a malformed value or byte string is refused naming
where (no chain: the program itself runs these bytes in test_program_client and the
lifecycle tests)."""

import hashlib
import json
import random
import struct
from typing import Any

import pytest
from solders.pubkey import Pubkey

import curta_chain.program as program
from curta_chain.program import IDL_PATH, load_idl
from curta_chain.program.borsh import CodecError, EnumCodec, EnumValue
from curta_chain.program.idl import DISCRIMINATOR_SIZE, coder, parse_idl

RAW = json.loads(IDL_PATH.read_text())
TYPES = {t["name"]: t["type"] for t in RAW["types"]}
rng = random.Random(29)


def sample(idl_type: Any) -> Any:
    """A random value of ``idl_type``, as the coder takes and gives it."""
    if isinstance(idl_type, str):
        if idl_type == "bool":
            return rng.random() < 0.5
        if idl_type == "pubkey":
            return Pubkey(rng.randbytes(32))
        if idl_type == "bytes":
            return rng.randbytes(rng.randrange(0, 40))
        if idl_type == "string":
            return "héllo"[: rng.randrange(6)]
        bits = int(idl_type[1:])
        if idl_type[0] == "u":
            return rng.choice([0, 2**bits - 1, rng.randrange(2**bits)])
        return rng.choice([-(2 ** (bits - 1)), 2 ** (bits - 1) - 1, 0])
    ((kind, inner),) = idl_type.items()
    if kind == "array":
        element, count = inner
        return rng.randbytes(count) if element == "u8" else [sample(element) for _ in range(count)]
    if kind == "vec":
        return [sample(inner) for _ in range(rng.randrange(0, 5))]
    if kind == "option":
        return None if rng.random() < 0.5 else sample(inner)
    definition = TYPES[inner["name"]]
    if definition["kind"] == "struct":
        return {f["name"]: sample(f["type"]) for f in definition["fields"]}
    index = rng.randrange(len(definition["variants"]))
    variant = definition["variants"][index]
    fields = {f["name"]: sample(f["type"]) for f in variant.get("fields", [])}
    return EnumValue(index, variant["name"], fields)


INSTRUCTIONS = [ix["name"] for ix in RAW["instructions"]]
ACCOUNTS = [account["name"] for account in RAW["accounts"]]


def test_the_idl_is_the_current_anchor_format():
    assert RAW["metadata"]["spec"] == "0.1.0" and RAW["metadata"]["name"] == "curta"
    assert RAW["address"] == load_idl().address
    for ix in RAW["instructions"]:
        assert set(ix) <= {"name", "docs", "discriminator", "accounts", "args"}
        for account in ix["accounts"]:
            assert set(account) <= {"name", "docs", "writable", "signer"}
            assert all(account.get(flag, True) is True for flag in ("writable", "signer"))
    # Every account type has its layout among the types, as Anchor 0.30 writes them.
    assert set(ACCOUNTS) <= set(TYPES)
    assert "publicKey" not in IDL_PATH.read_text() and "isMut" not in IDL_PATH.read_text()


@pytest.mark.parametrize("name", INSTRUCTIONS)
def test_every_instruction_round_trips(name: str):
    spec = next(ix for ix in RAW["instructions"] if ix["name"] == name)
    for _ in range(20):
        args = {arg["name"]: sample(arg["type"]) for arg in spec["args"]}
        data = coder().encode_instruction(name, args)
        assert data[:DISCRIMINATOR_SIZE] == bytes(spec["discriminator"])
        assert data[:DISCRIMINATOR_SIZE] == hashlib.sha256(f"global:{name}".encode()).digest()[:8]
        assert coder().decode_instruction(data) == (name, args)


@pytest.mark.parametrize("name", ACCOUNTS)
def test_every_account_type_round_trips(name: str):
    size = coder().account_size(name)
    for _ in range(10):
        fields = sample({"defined": {"name": name}})
        data = coder().encode_account(name, fields)
        assert len(data) == size
        assert data[:DISCRIMINATOR_SIZE] == hashlib.sha256(f"account:{name}".encode()).digest()[:8]
        assert coder().decode_account(name, data) == fields
        # An account's data may run on past its layout (a weight account's section does).
        assert coder().decode_account(name, data + bytes(9)) == fields


@pytest.mark.parametrize(("name", "size"), [("Model", 856), ("WeightAccount", 2048), ("Run", 512)])
def test_account_sizes_are_the_programs(name: str, size: int):
    assert coder().account_size(name) == size


def test_enums_encode_as_their_variant_index_and_fields():
    prompt = coder().enum("Prompt")
    assert isinstance(prompt, EnumCodec)
    text = prompt.value("Text", {"text": b"hi"})
    assert coder().encode_type("Prompt", text) == b"\x00" + struct.pack("<I", 2) + b"hi"
    ids = prompt.value(1, {"ids": [7, 9]})
    assert coder().encode_type("Prompt", ids) == b"\x01" + struct.pack("<III", 2, 7, 9)
    assert coder().decode_type("Prompt", coder().encode_type("Prompt", ids)) == ids
    # A fieldless variant may be given by index or name, as the IntEnums are.
    for given in (program.ModelState.SEALED, 2, "Sealed"):
        assert coder().encode_type("ModelState", given) == b"\x02"


# Each builder with the accounts it is given, by the IDL's names, and its arguments.
KEYS = {name: Pubkey(bytes([i + 1]) * 32) for i, name in enumerate(
    ["authority", "model", "weight_account", "opener", "run", "section_zero"]
)}  # fmt: skip
PID = Pubkey(bytes([99]) * 32)
BUILT = {
    "create_model": lambda k: program.create_model(
        PID, k["authority"], k["model"], bytes(range(32)), [1, 2]
    ),
    "bind_weight_account": lambda k: program.bind_weight_account(
        PID, k["authority"], k["model"], k["weight_account"], 1
    ),
    "write_weights": lambda k: program.write_weights(
        PID, k["authority"], k["weight_account"], 5, b"abc"
    ),
    "begin_sealing": lambda k: program.begin_sealing(PID, k["authority"], k["model"]),
    "seal_step": lambda k: program.seal_step(PID, k["model"], [k["weight_account"]], 3),
    "reopen": lambda k: program.reopen(PID, k["authority"], k["model"], k["weight_account"], 1),
    "close_weight_account": lambda k: program.close_weight_account(
        PID, k["authority"], k["model"], k["weight_account"], 1
    ),
    "close_model": lambda k: program.close_model(PID, k["authority"], k["model"]),
    "open_run": lambda k: program.open_run(
        PID, k["opener"], k["run"], k["model"], k["section_zero"], 8, b"hi"
    ),
    "step": lambda k: program.step(PID, k["run"], k["model"], [k["section_zero"]], 4),
    "close_run": lambda k: program.close_run(PID, k["opener"], k["run"]),
}


def test_a_builder_for_every_instruction():
    assert set(BUILT) == set(INSTRUCTIONS)


@pytest.mark.parametrize("name", INSTRUCTIONS)
def test_builders_take_account_order_and_flags_from_the_idl(name: str):
    ix = BUILT[name](KEYS)
    spec = next(i for i in RAW["instructions"] if i["name"] == name)
    want = [
        (KEYS[a["name"]], a.get("signer", False), a.get("writable", False))
        for a in spec["accounts"]
    ]
    assert [(m.pubkey, m.is_signer, m.is_writable) for m in ix.accounts] == want
    assert ix.program_id == PID
    decoded_name, _ = coder().decode_instruction(bytes(ix.data))
    assert decoded_name == name


def test_remaining_accounts_repeat_the_flags_of_the_account_they_extend():
    extra = Pubkey(bytes([77]) * 32)
    seal = program.seal_step(PID, KEYS["model"], [KEYS["weight_account"], extra], 0)
    assert [(m.is_signer, m.is_writable) for m in seal.accounts] == [(False, True)] * 3
    step = program.step(PID, KEYS["run"], KEYS["model"], [KEYS["section_zero"], extra], 0)
    assert (step.accounts[-1].pubkey, step.accounts[-1].is_writable) == (extra, False)


@pytest.mark.parametrize(
    ("name", "args", "match"),
    [
        ("step", {"label": 2**64}, "label: 18446744073709551616 does not fit u64"),
        ("step", {"label": -1}, "label: -1 does not fit u64"),
        ("step", {}, r"fields missing \['label'\]"),
        ("step", {"label": 1, "other": 2}, r"unknown \['other'\]"),
        ("create_model", {"declared_hash": bytes(31), "section_lengths": []}, "31 bytes"),
        ("create_model", {"declared_hash": bytes(32), "section_lengths": [1, "2"]}, r"\[1\]"),
        ("open_run", {"capacity": 1, "temperature": 0, "top_p": 0, "seed": 0,
                      "prompt": EnumValue(5, "Poem")}, "prompt: variant 5"),
        ("nope", {}, "no instruction 'nope'"),
    ],
)  # fmt: skip
def test_encoding_refuses_a_value_that_does_not_fit_naming_it(name, args, match):
    with pytest.raises(CodecError, match=match):
        coder().encode_instruction(name, args)


def test_decoding_refuses_bytes_that_do_not_decode_naming_the_offset():
    step = coder().encode_instruction("step", {"label": 1})
    with pytest.raises(CodecError, match="8 bytes at offset 8, past the data's 12"):
        coder().decode_instruction(step[:12])
    with pytest.raises(CodecError, match="1 bytes left"):
        coder().decode_instruction(step + b"\0")
    with pytest.raises(CodecError, match="discriminator 0000000000000000 at offset 0"):
        coder().decode_instruction(bytes(16))
    model = bytearray(program.ModelAccount.from_bytes(program_model()).to_bytes())
    model[104] = 9
    with pytest.raises(CodecError, match="state: variant index 9 at offset 104"):
        coder().decode_account("Model", bytes(model))
    weight = bytearray(
        coder().encode_account("WeightAccount", sample({"defined": {"name": "WeightAccount"}}))
    )
    weight[76] = 2
    with pytest.raises(CodecError, match="frozen: bool byte 2 at offset 76"):
        coder().decode_account("WeightAccount", bytes(weight))
    vec = coder().encode_instruction(
        "create_model", {"declared_hash": bytes(32), "section_lengths": []}
    )
    with pytest.raises(CodecError, match="vec of 4294967295 items"):
        coder().decode_instruction(vec[:-4] + b"\xff\xff\xff\xff")


def program_model() -> bytes:
    slot = program.SectionSlot(Pubkey.default(), 7)
    return program.ModelAccount(
        Pubkey.default(), bytes(32), bytes(32), program.ModelState.SEALED,
        2, 2, 2, 0, 0, 0, (slot, slot), 0,
    ).to_bytes()  # fmt: skip


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda raw: raw["metadata"].update(spec="0.0.9"), "metadata.spec '0.0.9'"),
        (lambda raw: raw["metadata"].update(address="x"), "legacy Anchor IDL format"),
        (lambda raw: raw["instructions"][2].update(discriminator=[0] * 8),
         r"instructions\[2\]: discriminator 0000000000000000, expected"),
        (lambda raw: raw["accounts"][0].pop("discriminator"), r"accounts\[0\]: discriminator None"),
        (lambda raw: raw["types"][0]["type"]["fields"][0].update(type="publicKey"),
         "Model.authority: IDL type 'publicKey' is not one this coder reads"),
    ],
)  # fmt: skip
def test_an_idl_it_cannot_read_is_refused_naming_the_field(edit, match):
    raw = json.loads(IDL_PATH.read_text())
    edit(raw)
    with pytest.raises(CodecError, match=match):
        parse_idl(json.dumps(raw), "curta.json")
