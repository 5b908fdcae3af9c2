"""The Codama-generated instruction builders build what curta_chain's builders build: the
same data bytes and the same accounts, signers and writable flags, for every instruction
of the IDL (the program has run the Python ones in every chain test)."""

import json
import subprocess
from pathlib import Path

from solders.keypair import Keypair
from solders.system_program import (
    CreateAccountParams,
    TransferParams,
    create_account,
    transfer,
)

from curta_chain import program

SCRIPT = Path(__file__).parent / "instructions.mjs"


def test_the_generated_builders_build_the_python_instructions(sdk):
    program_id, authority, model, weight, run = (Keypair().pubkey() for _ in range(5))
    label, seed, offset, data, prompt = 2**64 - 3, 12_345, 70_000, bytes(range(40)), "héllo"
    declared, lengths, index = bytes(range(7, 39)), [100, 2**40 + 5, 1], 17
    keys = {
        "program": str(program_id), "authority": str(authority), "model": str(model),
        "weight": str(weight), "run": str(run), "label": str(label), "seed": str(seed),
        "offset": offset, "bytes": data.hex(), "prompt": prompt, "hash": declared.hex(),
        "lengths": [str(n) for n in lengths], "index": index,
    }  # fmt: skip
    done = subprocess.run(
        ["node", str(SCRIPT), json.dumps(keys)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    one_weight = (program_id, authority, model, weight, index)
    want = {
        "create_model": program.create_model(program_id, authority, model, declared, lengths),
        "bind_weight_account": program.bind_weight_account(*one_weight),
        "reopen": program.reopen(*one_weight),
        "close_weight_account": program.close_weight_account(*one_weight),
        "close_model": program.close_model(program_id, authority, model),
        "close_run": program.close_run(program_id, authority, run),
        "begin_sealing": program.begin_sealing(program_id, authority, model),
        "seal_step": program.seal_step(program_id, model, [weight], label),
        "step": program.step(program_id, run, model, [weight], label),
        "write_weights": program.write_weights(program_id, authority, weight, offset, data),
        "open_run": program.open_run(
            program_id, authority, run, model, weight, 12, prompt.encode(), 65_536, 58_982, seed
        ),
    }
    assert set(got) == set(want) == {ix.name for ix in program.load_idl().instructions}
    for name, ix in want.items():
        assert got[name]["data"] == bytes(ix.data).hex(), name
        metas = [[str(m.pubkey), m.is_signer, m.is_writable] for m in ix.accounts]
        assert got[name]["accounts"] == metas, name


RUN_SCRIPT = Path(__file__).parent / "run_instructions.mjs"


def test_the_page_s_run_transactions_hold_the_cli_s_instructions(sdk):
    """The opening (create the run account, openRun, fund the session key), a step naming
    several weight accounts and the closing (closeRun, the session's lamports back) are
    built of the instructions curta_chain and solders build for the same keys."""
    program_id, opener, run, model, session = (Keypair().pubkey() for _ in range(5))
    weights = [Keypair().pubkey() for _ in range(3)]
    size, rent, funding, back, label, seed = 98_304, 685_000_000, 1_111_111, 777, 2**63 + 1, 9
    keys = {
        "program": str(program_id), "opener": str(opener), "run": str(run), "model": str(model),
        "session": str(session), "weights": [str(w) for w in weights], "size": size,
        "rent": str(rent), "capacity": 30, "prompt": "Once upon a time", "temperature": 0,
        "topP": 0, "seed": str(seed), "funding": str(funding), "label": str(label),
        "back": str(back),
    }  # fmt: skip
    done = subprocess.run(
        ["node", str(RUN_SCRIPT), json.dumps(keys)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    create = create_account(
        CreateAccountParams(
            from_pubkey=opener, to_pubkey=run, lamports=rent, space=size, owner=program_id
        )
    )
    open_run = program.open_run(
        program_id, opener, run, model, weights[0], 30, b"Once upon a time", 0, 0, seed
    )
    fund = transfer(TransferParams(from_pubkey=opener, to_pubkey=session, lamports=funding))
    close = program.close_run(program_id, opener, run)
    back_ix = transfer(TransferParams(from_pubkey=session, to_pubkey=opener, lamports=back))
    want = {
        "open": [create, open_run, fund],
        "step": [program.step(program_id, run, model, weights, label)],
        "close": [close, back_ix],
    }
    for name, instructions in want.items():
        assert got[name] == [
            {
                "program": str(ix.program_id),
                "data": bytes(ix.data).hex(),
                "accounts": [[str(m.pubkey), m.is_signer, m.is_writable] for m in ix.accounts],
            }
            for ix in instructions
        ], name
