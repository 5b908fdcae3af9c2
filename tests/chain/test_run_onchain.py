"""``curta-chain run MODEL --on-chain`` on the localnet: the program's tokens equal the file's."""

import asyncio
import base64
import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from solders.compute_budget import set_compute_unit_limit
from solders.pubkey import Pubkey

from curta_chain.artifact import Artifact
from curta_chain.chain.context import ChainContext
from curta_chain.chain.rpc import RpcClient
from curta_chain.chain.run_onchain import run_keypair, run_on_chain
from curta_chain.chain.sender import Sender
from curta_chain.chain.specs import TxSpec
from curta_chain.chain.transport import HttpTransport
from curta_chain.cli import main
from curta_chain.cli.keypairs import load_keypair, write_keypair
from curta_chain.constants import LOCALNET_PROGRAM_ID, MAX_COMPUTE_UNITS
from curta_chain.inference import IntModel, SamplingSettings, Tokenizer, generate, plan_run
from curta_chain.program import RunAccount

PROMPT = "Once upon a time"
STEPS = 32
PROGRAM_ID = Pubkey.from_string(LOCALNET_PROGRAM_ID)


def cli_json(capsys, *args: str) -> dict:
    capsys.readouterr()
    code = main([*args, "--output", "json-compact"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out.strip().splitlines()[-1])


@pytest.fixture
def sealed_model(capsys, localnet, fund, tmp_path: Path, stories260k: Artifact):
    keypair = tmp_path / "id.json"
    write_keypair(fund(localnet.url, 100), keypair)
    artifact = tmp_path / "stories260K.curta"
    artifact.write_bytes(stories260k.data)
    chain = ["-u", localnet.url, "-k", str(keypair)]
    model = cli_json(capsys, "publish", str(artifact), *chain)["model"]
    assert cli_json(capsys, "seal", model, *chain)["state"] == "sealed"
    return model, artifact, chain, keypair


@pytest.mark.parametrize(
    "sampling",
    [["--temperature", "0"], ["--temperature", "0.9", "--top-p", "0.9", "--seed", "2024"]],
    ids=["greedy", "seeded"],
)
def test_on_chain_tokens_equal_the_files(capsys, sealed_model, sampling):
    model, artifact, chain, _ = sealed_model
    args = ["--prompt", PROMPT, "--steps", str(STEPS), *sampling]
    from_file = cli_json(capsys, "run", str(artifact), *args)
    on_chain = cli_json(capsys, "run", model, *args, *chain, "--on-chain")
    assert on_chain["prompt_ids"] == from_file["prompt_ids"]
    assert on_chain["generated_ids"] == from_file["generated_ids"]
    assert on_chain["generated_text"] == from_file["generated_text"]
    assert on_chain["finish"] == ("end_token" if from_file["stop"] == "token" else "capacity")
    assert on_chain["tokens_generated_here"] == len(from_file["generated_ids"])
    assert on_chain["transactions"] == on_chain["step_transactions"] + 1  # openRun
    assert on_chain["max_step_compute_units"] < 1_300_000
    assert on_chain["transactions_per_token"] <= 2
    # Rerunning finds the finished run on chain and sends nothing.
    again = cli_json(capsys, "run", model, *args, *chain, "--on-chain")
    assert again["generated_ids"] == from_file["generated_ids"] and again["transactions"] == 0


def rpc(url: str, method: str, params: list) -> dict:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return httpx.post(url, json=body, timeout=30).json()["result"]


def run_steps(url: str, run: Pubkey) -> int:
    """The run account's count of steps (0 while it does not exist)."""
    params = [str(run), {"encoding": "base64", "commitment": "processed"}]
    value = rpc(url, "getAccountInfo", params)["value"]
    return 0 if value is None else RunAccount.from_bytes(base64.b64decode(value["data"][0])).steps


def test_a_killed_run_resumes_from_the_chain(capsys, localnet, sealed_model, tmp_path):
    model, artifact, chain, keypair = sealed_model
    args = ["--prompt", PROMPT, "--steps", "40", "--temperature", "0"]
    command = [sys.executable, "-m", "curta_chain", "run", model, *args, *chain, "--on-chain"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    capacity = len(cli_json(capsys, "run", str(artifact), *args)["prompt_ids"]) + 40
    payer, address = load_keypair(keypair), Pubkey.from_string(model)
    run = run_keypair(payer, address, PROMPT.encode(), capacity, SamplingSettings(0, 0, 0))
    deadline = time.monotonic() + 120
    steps = 0
    while steps < 12 and time.monotonic() < deadline and process.poll() is None:
        steps = run_steps(localnet.url, run.pubkey())
        time.sleep(0.05)
    process.kill()
    process.wait()
    assert steps >= 12, "the run did not get far enough before the kill"
    resumed = cli_json(capsys, "run", model, *args, *chain, "--on-chain")
    assert resumed["resumed_from_step"] >= 12
    from_file = cli_json(capsys, "run", str(artifact), *args)
    assert resumed["generated_ids"] == from_file["generated_ids"]


def test_bad_input_is_one_line_and_spends_nothing(capsys, localnet, fund, tmp_path, stories260k):
    keypair = tmp_path / "id.json"
    write_keypair(fund(localnet.url, 100), keypair)
    artifact = tmp_path / "stories260K.curta"
    artifact.write_bytes(stories260k.data)
    chain = ["-u", localnet.url, "-k", str(keypair)]
    model = cli_json(capsys, "publish", str(artifact), *chain)["model"]
    payer = str(load_keypair(keypair).pubkey())
    balance = rpc(localnet.url, "getBalance", [payer])["value"]
    cases = [
        (
            [str(artifact)],
            f"error: --on-chain runs a model on chain: '{artifact}' is not an address\n",
        ),
        (
            [model],
            f"error: model {model} is uploading, not sealed: a run on chain needs a sealed model\n",
        ),
    ]
    for source, message in cases:
        capsys.readouterr()
        code = main(["run", *source, "--prompt", PROMPT, "--on-chain", *chain])
        out, err = capsys.readouterr()
        assert (code, out, err) == (1, "", message)
    assert rpc(localnet.url, "getBalance", [payer])["value"] == balance


class RacingSender(Sender):
    """A sender that lets a rival land each step it is given at ``race_at`` first, as a
    killed invocation's last transaction would, landing after the rerun planned it."""

    rival: Sender | None = None
    race_at: tuple[int, ...] = ()
    calls: int = 0

    async def send(self, specs, progress=None, commitment=None):
        self.calls += 1
        if self.calls in self.race_at and self.rival is not None:
            limit = set_compute_unit_limit(MAX_COMPUTE_UNITS - 1)  # another signature
            rival = [TxSpec((limit, *s.instructions[1:]), s.signers) for s in specs]
            await self.rival.send(rival, commitment="processed")
        return await super().send(specs, progress, commitment)


def test_a_step_landed_by_another_sender_first_is_taken_in_stride(
    localnet, fund, sealed_model, stories260k
):
    model, _, _, keypair = sealed_model
    payer, rival = load_keypair(keypair), fund(localnet.url, 10)
    settings = SamplingSettings(0, 0, 0)
    pieces: list[bytes] = []

    async def work() -> object:
        client = RpcClient(HttpTransport(localnet.url), "confirmed")
        try:
            sender = RacingSender(client, payer)
            sender.rival, sender.race_at = Sender(client, rival), (3, 7, 8)
            ctx = ChainContext(client, PROGRAM_ID, payer, sender=sender)
            return await run_on_chain(
                ctx, Pubkey.from_string(model), PROMPT, 12, settings, on_piece=pieces.append
            )
        finally:
            await client.aclose()

    result = asyncio.run(work())
    model260k, tokenizer = IntModel.from_artifact(stories260k), Tokenizer.from_artifact(stories260k)
    plan = plan_run(model260k, tokenizer, PROMPT, 12)
    want = list(generate(model260k, plan, settings))
    assert result.generated == want
    assert b"".join(pieces) == tokenizer.decode([*plan.prompt_ids[1:], *want])
    assert len(result.step_units) == result.steps - 3  # three steps were the rival's


def test_close_run_gives_the_rent_back(capsys, localnet, sealed_model):
    model, _, chain, keypair = sealed_model
    args = ["--prompt", PROMPT, "--steps", "4", "--temperature", "0"]
    payer = str(load_keypair(keypair).pubkey())
    before = rpc(localnet.url, "getBalance", [payer, {"commitment": "processed"}])["value"]
    done = cli_json(capsys, "run", model, *args, *chain, "--on-chain", "--close-run")
    assert done["closed"]
    run = Pubkey.from_string(done["run"])
    assert run_steps(localnet.url, run) == 0  # the account is gone
    after = rpc(localnet.url, "getBalance", [payer, {"commitment": "processed"}])["value"]
    # Only fees were spent: a signature each for the steps and closeRun, two for openRun
    # (the payer's and the new run account's).
    signatures = done["transactions"] + 1 + 1
    assert before - after == 5_000 * signatures, done
