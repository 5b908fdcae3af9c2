"""The progress display on a real 80-column terminal (a pty): publish and seal a 16 MB model,
run one on chain.

Every frame the bar draws must fit in 79 columns (the 80th makes some terminals wrap), so
each redraw overwrites the last instead of scrolling a new line; a seal interrupted and
rerun says it resumed and ends with the bar full.

The localnet makes blocks (``--blocks``): a seal sends its steps many at once, and a block
takes at most 100 writes of the model account, so the seal is seen part way through.
"""

import json
import re
from collections.abc import Iterator

import pytest
from pty_helper import Terminal, curta

from curta_chain.cli import main
from curta_chain.cli.keypairs import write_keypair
from curta_chain.localnet import BusyOptions, LocalnetHandle, start_in_thread

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def frames(text: str) -> list[str]:
    return [f for f in re.split(r"[\r\n]", ANSI.sub("", text)) if f.strip()]


def bar_frames(text: str, label: str) -> list[str]:
    return [f for f in frames(text) if re.match(rf"{label} +\d+% ", f)]


@pytest.fixture
def blocks() -> Iterator[LocalnetHandle]:
    handle = start_in_thread(busy=BusyOptions(blocks=True))
    try:
        yield handle
    finally:
        handle.stop()


def test_publish_and_seal_on_an_80_column_terminal(blocks, fund, tmp_path, stories15m):
    localnet = blocks
    art, keypair = tmp_path / "m.curta", tmp_path / "id.json"
    art.write_bytes(stories15m.data)
    write_keypair(fund(localnet.url, 200), keypair)
    via = ["-u", localnet.url, "-k", str(keypair)]

    publish = Terminal(curta("publish", str(art), *via), columns=80, cwd=tmp_path)
    out = publish.finish()
    assert publish.process.returncode == 0, out
    uploads = bar_frames(out, "upload")
    assert len(uploads) >= 3, out  # redrawn on a timer, in place
    assert max(len(f) for f in uploads) <= 79
    # The bar itself gives way to the resend counts when 80 columns cannot hold both.
    assert uploads[-1].startswith("upload 100% ")
    # The bar's frames are joined by carriage returns: it added one line, not one a redraw.
    bar_text = ANSI.sub("", out)[out.index("upload") :]
    assert bar_text.split("\n", 1)[0].count("\r") >= len(uploads) - 1
    model = re.search(r"^Model: (\w+)", ANSI.sub("", out), re.MULTILINE)[1]

    seal = Terminal(curta("seal", model, *via), columns=80, cwd=tmp_path)
    seal.expect_match(r"seal +[2-9]\d% \[")  # the seal is a fifth of the way through
    seal.interrupt()
    out = seal.finish()
    assert seal.process.returncode == 130
    rerun = f"curta-chain seal {model} -u {localnet.url} -k {keypair}"  # pasted, it resumes
    assert f"error: interrupted; rerun `{rerun}` to resume" in ANSI.sub("", out)
    assert max(len(f) for f in bar_frames(out, "seal")) <= 79

    again = Terminal(curta("seal", model, *via), columns=80, cwd=tmp_path)
    out = again.finish()
    assert again.process.returncode == 0, out
    text = ANSI.sub("", out)
    resumed = r"resuming the seal at chunk \d+ of 256 \(section \d"
    assert any(re.match(resumed, f) for f in frames(out))
    seals = bar_frames(out, "seal")
    first = int(re.match(r"seal +(\d+)%", seals[0])[1])
    assert first >= 20  # the bar starts where the chain is
    assert seals[-1].startswith("seal 100% [##")
    assert max(len(f) for f in seals) <= 79
    assert f"sealed {model}" in text


def test_run_on_chain_shows_its_compute_units(capsys, localnet, fund, tmp_path, stories260k):
    art, keypair = tmp_path / "m.curta", tmp_path / "id.json"
    art.write_bytes(stories260k.data)
    write_keypair(fund(localnet.url, 100), keypair)
    via = ["-u", localnet.url, "-k", str(keypair)]
    assert main(["publish", str(art), *via, "--output", "json-compact"]) == 0
    model = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["model"]
    assert main(["seal", model, *via]) == 0
    capsys.readouterr()

    argv = curta("run", model, "--on-chain", "--prompt", "Once", "--steps", "8", *via)
    run = Terminal([*argv, "--temperature", "0"], columns=80, cwd=tmp_path)
    out = run.finish()
    assert run.process.returncode == 0, out
    bars = bar_frames(out, "run")
    assert bars and max(len(f) for f in bars) <= 79, out
    # The last frame: every step, the compute units the mirror gives them, the position.
    assert re.match(r"run 100% .* \d+/\d+ tx \d+(\.\d)?M CU", bars[-1]), bars[-1]
    assert "finished, position " in bars[-1], bars[-1]
