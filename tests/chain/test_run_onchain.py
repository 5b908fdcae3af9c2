"""``curta-chain run MODEL --on-chain`` on the localnet: the program's tokens equal the file's."""

import asyncio
import base64
import json
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import processes
import pytest
from solders.compute_budget import set_compute_unit_limit
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.system_program import TransferParams, transfer

from curta_chain import program
from curta_chain.artifact import Artifact
from curta_chain.chain.accounts import require_model
from curta_chain.chain.context import ChainContext
from curta_chain.chain.keys import ClusterScope, run_keypair
from curta_chain.chain.plan import NewAccount
from curta_chain.chain.rent import rent_exempt_minimum
from curta_chain.chain.rpc import RpcClient
from curta_chain.chain.sender import Sender
from curta_chain.chain.specs import TxSpec
from curta_chain.chain.transport import HttpTransport
from curta_chain.cli import main
from curta_chain.cli.keypairs import load_keypair, write_keypair
from curta_chain.constants import LOCALNET_PROGRAM_ID, MAX_COMPUTE_UNITS
from curta_chain.errors import ProgramError
from curta_chain.inference import IntModel, SamplingSettings, Tokenizer, generate, plan_run
from curta_chain.onchain.pipeline import PIPELINE_BLOCKS
from curta_chain.onchain.run import run_on_chain
from curta_chain.onchain.run_account import RunAccount, opened_run_data
from curta_chain.onchain.schedule import STEP_BUDGET, STEP_OVERHEAD

PROMPT = "Once upon a time"
STEPS = 32
PROGRAM_ID = Pubkey.from_string(LOCALNET_PROGRAM_ID)
PROCESSED = {"commitment": "processed"}


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
    assert on_chain["max_step_compute_units"] <= STEP_BUDGET + STEP_OVERHEAD
    assert on_chain["transactions_per_token"] <= 2
    # Rerunning finds the finished run on chain and sends nothing.
    again = cli_json(capsys, "run", model, *args, *chain, "--on-chain")
    assert again["generated_ids"] == from_file["generated_ids"] and again["transactions"] == 0


def rpc(url: str, method: str, params: list) -> dict:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return httpx.post(url, json=body, timeout=30).json()["result"]


def run_steps(url: str, run: Pubkey, commitment: str = "processed") -> int:
    """The run account's count of steps (0 while it does not exist)."""
    params = [str(run), {"encoding": "base64", "commitment": commitment}]
    value = rpc(url, "getAccountInfo", params)["value"]
    return 0 if value is None else RunAccount.from_bytes(base64.b64decode(value["data"][0])).steps


def the_run(url: str, keypair: Path, model: str, capacity: int) -> Pubkey:
    """The address ``run --on-chain`` derives for this payer, model and greedy prompt."""
    scope = ClusterScope(rpc(url, "getGenesisHash", []), PROGRAM_ID)
    settings = SamplingSettings(0, 0, 0)
    run = run_keypair(
        load_keypair(keypair), scope, Pubkey.from_string(model), PROMPT.encode(), capacity, settings
    )
    return run.pubkey()


def test_a_killed_run_resumes_from_the_chain_after_a_stranger_s_short_step(
    capsys, localnet, fund, sealed_model
):
    model, artifact, chain, keypair = sealed_model
    args = ["--prompt", PROMPT, "--steps", "40", "--temperature", "0"]
    # A cluster whose blocks take two of the run's steps: 8 in flight (PIPELINE_BLOCKS
    # blocks' worth), well below the run's 64 steps, so the kill leaves it unfinished.
    limit = ["--account-cu-limit", str(2 * MAX_COMPUTE_UNITS)]
    command = [sys.executable, "-m", "curta_chain", "run", model, *args, *chain, "--on-chain"]
    process = processes.start([*command, *limit], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    capacity = len(cli_json(capsys, "run", str(artifact), *args)["prompt_ids"]) + 40
    run = the_run(localnet.url, keypair, model, capacity)
    # Counted at the commitment the resumed run reads at, so it sees at least as many.
    steps = 0
    while steps < 12 and process.poll() is None:
        steps = run_steps(localnet.url, run, "confirmed")
    process.kill()
    process.wait()
    assert steps >= 12, "the run finished before the kill"
    # A stranger's step naming section zero alone is refused, the run unchanged.
    stranger = fund(localnet.url, 1)
    short = program.step(
        PROGRAM_ID, run, Pubkey.from_string(model), [section_zero(localnet.url, model)], 7
    )

    async def step_short() -> None:
        client = RpcClient(HttpTransport(localnet.url), "confirmed")
        try:
            await Sender(client, stranger).send(
                [TxSpec((set_compute_unit_limit(MAX_COMPUTE_UNITS), short))]
            )
        finally:
            await client.aclose()

    before = run_steps(localnet.url, run, "confirmed")
    with pytest.raises(ProgramError, match="MissingWeightAccount"):
        asyncio.run(step_short())
    assert run_steps(localnet.url, run, "confirmed") == before
    resumed = cli_json(capsys, "run", model, *args, *chain, "--on-chain")
    assert resumed["resumed_from_step"] >= steps
    from_file = cli_json(capsys, "run", str(artifact), *args)
    assert resumed["generated_ids"] == from_file["generated_ids"]


def section_zero(url: str, model: str) -> Pubkey:
    async def read() -> Pubkey:
        client = RpcClient(HttpTransport(url), "confirmed")
        try:
            account = await require_model(client, PROGRAM_ID, Pubkey.from_string(model))
            return account.sections[0].weight_account
        finally:
            await client.aclose()

    return asyncio.run(read())


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
        (
            [model, "--account-cu-limit", "0"],
            "error: --account-cu-limit 0: expected a positive count of compute units\n",
        ),
    ]
    for source, message in cases:
        capsys.readouterr()
        code = main(["run", *source, "--prompt", PROMPT, "--on-chain", *chain])
        out, err = capsys.readouterr()
        assert (code, out, err) == (1, "", message)
    assert rpc(localnet.url, "getBalance", [payer])["value"] == balance


def test_a_bot_stepping_a_live_run_does_not_break_it(localnet, fund, sealed_model, stories260k):
    model, _, _, keypair = sealed_model
    payer, bot_payer = load_keypair(keypair), fund(localnet.url, 10)
    settings = SamplingSettings(0, 0, 0)
    address = Pubkey.from_string(model)
    pieces: list[bytes] = []
    model260k, tokenizer = IntModel.from_artifact(stories260k), Tokenizer.from_artifact(stories260k)
    plan = plan_run(model260k, tokenizer, PROMPT, 12)
    run = the_run(localnet.url, keypair, model, len(plan.prompt_ids) + 12)
    bot_steps: list[int] = []
    bot_landed = threading.Event()

    async def bot() -> None:
        """Watch for the run account, then step it with every weight account, as a bot would."""
        client = RpcClient(HttpTransport(localnet.url), "processed")
        try:
            account = await require_model(client, PROGRAM_ID, address)
            weights = [slot.weight_account for slot in account.sections]
            sender = Sender(client, bot_payer)
            while (await client.account(run)) is None:
                await asyncio.sleep(0)
            for label in range(10**6, 10**6 + 8):
                spec = TxSpec(
                    (
                        set_compute_unit_limit(MAX_COMPUTE_UNITS),
                        program.step(PROGRAM_ID, run, address, weights, label),
                    )
                )
                try:
                    await sender.send([spec], commitment="processed")
                except ProgramError as exc:
                    assert exc.name == "RunFinished"
                    return
                bot_steps.append(label)
                bot_landed.set()
        finally:
            bot_landed.set()  # a bot that failed must not hold the run up
            await client.aclose()

    def on_piece(piece: bytes) -> None:
        # The first piece comes once the run is open: hold the run's loop there until the
        # bot (its own thread and loop) has landed a step, so the bot's steps always come
        # between the run's, whatever the machine's load.
        if not pieces:
            assert bot_landed.wait(120), "the bot never stepped the open run"
        pieces.append(piece)

    async def work() -> object:
        client = RpcClient(HttpTransport(localnet.url), "confirmed")
        try:
            ctx = ChainContext(client, PROGRAM_ID, payer)
            # A cluster whose blocks take two of the run's steps: 8 in flight (of 30), so
            # the bot's steps land between the run's.
            return await run_on_chain(
                ctx,
                address,
                PROMPT,
                12,
                settings,
                on_piece=on_piece,
                account_cu_limit=2 * MAX_COMPUTE_UNITS,
            )
        finally:
            await client.aclose()

    crank = threading.Thread(target=lambda: asyncio.run(bot()))
    crank.start()
    try:
        result = asyncio.run(work())
    finally:
        crank.join(120)
    want = list(generate(model260k, plan, settings))
    assert bot_steps, "the bot never landed a step"
    assert result.generated == want
    assert b"".join(pieces) == tokenizer.decode([*plan.prompt_ids[1:], *want])
    assert len(result.step_units) + len(bot_steps) == result.steps
    # Steps of the run's that landed after the bot's had finished it: at most one window.
    assert result.refused_steps <= 2 * PIPELINE_BLOCKS


def test_close_run_gives_the_rent_back_and_a_prefunded_address_runs_again(
    capsys, localnet, fund, sealed_model
):
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
    assert done["transactions"] == done["step_transactions"] + 2  # openRun, closeRun
    signatures = done["transactions"] + 1
    assert before - after == 5_000 * signatures, done
    # Someone funds the closed run's public address (with the least a validator lets a new
    # account hold: its rent-exempt minimum): the same command runs again.
    rival = fund(localnet.url, 1)
    send_lamports(localnet.url, rival, run, rent_exempt_minimum(0))
    again = cli_json(capsys, "run", model, *args, *chain, "--on-chain", "--close-run")
    assert again["run"] == done["run"] and again["generated_ids"] == done["generated_ids"]
    assert again["closed"] and run_steps(localnet.url, run) == 0


def send_lamports(url: str, payer, to: Pubkey, lamports: int) -> None:
    async def send() -> None:
        client = RpcClient(HttpTransport(url), "confirmed")
        try:
            move = transfer(
                TransferParams(from_pubkey=payer.pubkey(), to_pubkey=to, lamports=lamports)
            )
            await Sender(client, payer).send([TxSpec((move,))])
        finally:
            await client.aclose()

    asyncio.run(send())


def test_runs_lists_an_unfinished_run_and_close_run_ends_it_for_its_opener_only(
    capsys, localnet, fund, tmp_path, sealed_model, stories260k
):
    model, _, chain, keypair = sealed_model
    payer, address = load_keypair(keypair), Pubkey.from_string(model)
    run = Keypair()
    capacity, text, settings = 12, PROMPT.encode(), SamplingSettings(0, 0, 0)
    size = len(opened_run_data(stories260k.config, address, payer.pubkey(), capacity, text))
    rent = rent_exempt_minimum(size)

    async def open_only() -> None:
        client = RpcClient(HttpTransport(localnet.url), "confirmed")
        try:
            account = await require_model(client, PROGRAM_ID, address)
            txs = ChainContext(client, PROGRAM_ID, payer).transactions
            spec = txs.open_run(
                run,
                NewAccount(run.pubkey(), size, rent),
                address,
                account.sections[0].weight_account,
                capacity,
                text,
                settings,
                stories260k.config,
            )
            await Sender(client, payer).send([spec])
        finally:
            await client.aclose()

    asyncio.run(open_only())
    (listed,) = cli_json(capsys, "runs", *chain)["runs"]
    assert (listed["run"], listed["model"], listed["state"]) == (
        str(run.pubkey()),
        model,
        "tokenizing",
    )
    assert (listed["rent_lamports"], listed["steps"], listed["capacity"]) == (rent, 0, capacity)
    capsys.readouterr()
    assert main(["runs", *chain]) == 0
    assert "1 run of" in capsys.readouterr().out
    # A stranger cannot close it: one line, nothing spent.
    stranger = tmp_path / "stranger.json"
    write_keypair(fund(localnet.url, 1), stranger)
    who = str(load_keypair(stranger).pubkey())
    balance = rpc(localnet.url, "getBalance", [who, PROCESSED])["value"]
    code = main(["close-run", str(run.pubkey()), "-u", localnet.url, "-k", str(stranger)])
    out, err = capsys.readouterr()
    assert (code, out) == (1, "")
    assert err == (
        f"error: run {run.pubkey()} was opened by {payer.pubkey()}: only its opener closes it "
        "(pass its keypair with -k); nothing was sent\n"
    )
    assert rpc(localnet.url, "getBalance", [who, PROCESSED])["value"] == balance
    # Its opener can, unfinished as it is: the rent comes back, and says so.
    before = rpc(localnet.url, "getBalance", [str(payer.pubkey()), PROCESSED])["value"]
    closed = cli_json(capsys, "close-run", str(run.pubkey()), *chain)
    assert closed["closed"] and closed["lamports_returned"] == rent
    after = rpc(localnet.url, "getBalance", [str(payer.pubkey()), PROCESSED])["value"]
    assert after - before == rent - 5_000
    assert cli_json(capsys, "runs", *chain)["runs"] == []
    code = main(["close-run", str(run.pubkey()), *chain])
    assert (code, capsys.readouterr().err) == (
        1,
        f"error: run {run.pubkey()}: no such account (closed already?)\n",
    )
