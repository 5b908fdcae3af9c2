"""Anchor's current TypeScript client reads our IDL, and its BorshCoder agrees with ours.

@coral-xyz/anchor (pinned in tests/localnet/js) parses programs_idl/curta.json, encodes
every instruction with random arguments to the bytes our coder makes, and decodes every
account type from our bytes to our values (tests/localnet/js/anchor_coder.mjs).
"""

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from solders.pubkey import Pubkey
from test_idl_coder import ACCOUNTS, INSTRUCTIONS, RAW, TYPES, sample

from curta_chain.program import IDL_PATH
from curta_chain.program.borsh import EnumValue
from curta_chain.program.idl import coder

JS = Path(__file__).resolve().parents[1] / "localnet" / "js"
SCRIPT = JS / "anchor_coder.mjs"


def anchor_missing() -> str | None:
    if shutil.which("node") is None:
        return "node is not installed (.ci/run apt-installs nodejs npm)"
    if not (JS / "node_modules" / "@coral-xyz" / "anchor").is_dir():
        return f"run `npm ci` in {JS} (.ci/run does)"
    return None


def to_json(idl_type: Any, value: Any) -> Any:
    """Our value as the script's JSON (integers as strings, bytes hex, enums by variant)."""
    if isinstance(value, Pubkey):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, bool | str) or value is None:
        return value
    if isinstance(value, int):
        return str(value)
    ((kind, inner),) = idl_type.items()
    if kind == "array":
        return [to_json(inner[0], v) for v in value]
    if kind == "vec":
        return [to_json(inner, v) for v in value]
    if kind == "option":
        return to_json(inner, value)
    definition = TYPES[inner["name"]]
    if definition["kind"] == "struct":
        return {f["name"]: to_json(f["type"], value[f["name"]]) for f in definition["fields"]}
    assert isinstance(value, EnumValue)
    variant = definition["variants"][value.index]
    fields = variant.get("fields", [])
    return {value.name: {f["name"]: to_json(f["type"], value.fields[f["name"]]) for f in fields}}


def test_anchor_ts_encodes_every_instruction_and_decodes_every_account_as_we_do():
    missing = anchor_missing()
    if missing and os.environ.get("CI"):
        pytest.fail(missing)
    if missing:
        pytest.skip(missing)
    instructions, want_data = [], []
    for name in INSTRUCTIONS:
        spec = next(ix for ix in RAW["instructions"] if ix["name"] == name)
        for _ in range(3):
            args = {arg["name"]: sample(arg["type"]) for arg in spec["args"]}
            shown = {arg["name"]: to_json(arg["type"], args[arg["name"]]) for arg in spec["args"]}
            instructions.append([name, shown])
            want_data.append(coder().encode_instruction(name, args).hex())
    accounts, want_fields = [], []
    for name in ACCOUNTS:
        for _ in range(3):
            fields = sample({"defined": {"name": name}})
            accounts.append([name, coder().encode_account(name, fields).hex()])
            want_fields.append(to_json({"defined": {"name": name}}, fields))
    cases = json.dumps({"instructions": instructions, "accounts": accounts})
    done = subprocess.run(
        ["node", str(SCRIPT), str(IDL_PATH), cases],
        cwd=JS, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert len(got["instructions"]) == 3 * len(INSTRUCTIONS) and got["instructions"] == want_data
    assert len(got["accounts"]) == 3 * len(ACCOUNTS) and got["accounts"] == want_fields
