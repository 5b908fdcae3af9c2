"""The Codama-generated instruction builders build what curta_chain's builders build: the
same data bytes and the same accounts, signers and writable flags, for every instruction
of the IDL (the program has run the Python ones in every chain test)."""

import json
import subprocess
from pathlib import Path

from solders.keypair import Keypair

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
