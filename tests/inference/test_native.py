"""The program's C built for the host: the numpy pass's tokens, and one line where it cannot be.

Every comparison runs the same plan through both: ``generate`` on the ``IntModel`` (numpy)
and on the ``NativeModel`` (the program's phases in C, with the host's AVX2 kernels or the
portable ones), token for token, on real files: stories260K, the demo model (grouped
key/value heads, sampled runs that end on a stop token), a stories15M-shaped model and
one layer at the format's largest shapes whose activations saturate (words of three
pieces a half in the AVX2 row kernel). A prompt of several tokens runs as the program
runs it, two positions a batch, their activations packed two to a word.
"""

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from curta_chain.artifact import Artifact, ModelConfig, convert_llama2c
from curta_chain.artifact.convert import convert_llama2c_bytes
from curta_chain.artifact.synthetic import (
    STORIES15M,
    llama2c_checkpoint_bytes,
    llama2c_tokenizer_bytes,
)
from curta_chain.cli import main
from curta_chain.demo import DEMO_MODEL, DEMO_TOKENIZER
from curta_chain.errors import BuildError, PromptError
from curta_chain.inference import (
    IntModel,
    SamplingSettings,
    Tokenizer,
    generate,
    host_build,
    native,
    plan_run,
)
from curta_chain.inference.host_build import LIBRARY, build_key, cache_root, library
from curta_chain.inference.native import NativeModel, fastest_model
from curta_chain.inference.run import RunPlan
from curta_chain.reporting import NullReporter

PROMPT = "Once upon a time"
GREEDY = SamplingSettings(temperature=0, top_p=0, seed=0)
NUCLEUS = SamplingSettings(temperature=65_536, top_p=58_982, seed=3)  # llama2.c's defaults
PLAIN = SamplingSettings(temperature=52_429, top_p=0, seed=11)  # T = 0.8, every id kept


@pytest.fixture(scope="module")
def demo() -> Artifact:
    return convert_llama2c(DEMO_MODEL, DEMO_TOKENIZER)


@pytest.fixture(scope="module")
def shape15m() -> Artifact:
    """stories15M's shapes, synthetic weights (the root conftest's ``stories15m``, whose
    ``tokenizer32k`` this folder's conftest takes for another fixture)."""
    checkpoint = llama2c_checkpoint_bytes(STORIES15M, seed=15)
    tokenizer = llama2c_tokenizer_bytes(STORIES15M.vocab_size, seed=15)
    return convert_llama2c_bytes(checkpoint, tokenizer, "15m.bin", "tok.bin")


@pytest.fixture
def portable_kernels(native_path: Path):
    """The portable kernels (host_matvec.c's C, src/attend.c's own) in place of the AVX2 ones."""
    lib = native._load(native_path)
    lib.curta_host_use_avx2(0)
    yield
    lib.curta_host_use_avx2(1)


def both(
    artifact: Artifact,
    path: Path,
    settings: SamplingSettings,
    tokens: int | None,
    steps: int | None = None,
):
    """The tokens of one plan (``plan_run``'s arguments) from numpy and from the C."""
    model = IntModel.from_artifact(artifact)
    plan = plan_run(model, Tokenizer.from_artifact(artifact), PROMPT, tokens, steps=steps)
    want = list(generate(model, plan, settings))
    got = list(generate(NativeModel.from_artifact(artifact, path), plan, settings))
    return want, got


@pytest.mark.parametrize("settings", [GREEDY, NUCLEUS, PLAIN], ids=["greedy", "top-p", "plain"])
@pytest.mark.parametrize(("name", "tokens"), [("stories260k", 80), ("demo", 80), ("shape15m", 8)])
def test_the_c_gives_numpys_tokens(request, native_path, name, tokens, settings):
    want, got = both(request.getfixturevalue(name), native_path, settings, tokens)
    assert got == want and (len(got) == tokens or got[-1] in (1, 2))


ODD_SHAPES = [
    # Head size 10 (2 mod 4: the attention kernels' scalar pair), one key/value head for
    # two; rows of 24 and 40 columns (8 past a multiple of 16: the half-width load).
    ModelConfig(dim=20, hidden_dim=40, n_layers=2, n_heads=2, n_kv_heads=1, vocab_size=300,
                seq_len=64),
    # Head size 18: a block of 16, then the pair.
    ModelConfig(dim=36, hidden_dim=52, n_layers=1, n_heads=2, n_kv_heads=2, vocab_size=301,
                seq_len=40),
]  # fmt: skip


@pytest.mark.parametrize("config", ODD_SHAPES, ids=["head10", "head18"])
def test_odd_shapes_take_every_edge_of_the_kernels(config, native_path):
    checkpoint = llama2c_checkpoint_bytes(config, seed=config.dim)
    tokenizer = llama2c_tokenizer_bytes(config.vocab_size, seed=config.dim)
    artifact = convert_llama2c_bytes(checkpoint, tokenizer, "odd.bin", "tok.bin")
    for settings in (GREEDY, NUCLEUS):
        want, got = both(artifact, native_path, settings, None, steps=0)  # to the context end
        assert got == want


def test_the_largest_shapes_saturate_to_the_same_tokens(widest, native_path):
    for settings in (GREEDY, NUCLEUS):
        want, got = both(widest, native_path, settings, 4)
        assert got == want


def test_runs_to_a_stop_token_and_to_the_context_end(demo, stories260k, native_path):
    for seed in (0, 2):  # sampled demo stories that end on token 1 (numpy's run says so)
        want, got = both(demo, native_path, SamplingSettings(65_536, 58_982, seed), None)
        assert got == want and got[-1] == 1 and len(got) < 200
    # T = 1.5: token 2 ends it 377 tokens in, past 380 positions of attention.
    want, got = both(stories260k, native_path, SamplingSettings(98_304, 0, 2), None, steps=0)
    assert got == want and got[-1] == 2 and len(got) == 377
    want, got = both(demo, native_path, GREEDY, None, steps=0)  # -n 0: to the context's end
    assert got == want and len(got) == 256 - 10 and got[-1] not in (1, 2)


@pytest.mark.usefixtures("portable_kernels")
def test_the_portable_kernels_give_the_same_tokens(stories260k, shape15m, widest, native_path):
    for artifact, tokens in ((stories260k, 40), (shape15m, 4), (widest, 3)):
        for settings in (GREEDY, NUCLEUS):
            want, got = both(artifact, native_path, settings, tokens)
            assert got == want


@pytest.mark.parametrize(
    ("ids", "tokens", "message"),
    [
        ((1, 512), 4, "token 1 is 512, outside the vocabulary 0 to 511"),
        ((), 4, "no tokens to run"),
        ((1, 2), 511, "511 new tokens after 2: expected 1 to 510"),
        ((1,), 0, "0 new tokens after 1: expected 1 to 511"),
    ],
)
def test_a_plan_that_does_not_fit_is_refused_before_the_c_reads_it(
    stories260k, native_path, ids, tokens, message
):
    model = NativeModel.from_artifact(stories260k, native_path)
    with pytest.raises(PromptError, match=message):
        next(generate(model, RunPlan(ids, tokens), GREEDY))


def run_cli(capsys, *args: str) -> tuple[dict, str]:
    capsys.readouterr()
    assert main(["run", *args, "--output", "json-compact"]) == 0
    out, err = capsys.readouterr()
    return json.loads(out), err


@pytest.fixture
def art260k(tmp_path, stories260k) -> Path:
    path = tmp_path / "stories260K.curta"
    path.write_bytes(stories260k.data)
    return path


def numpy_ids(artifact: Artifact, steps: str, seed: int) -> list[int]:
    model = IntModel.from_artifact(artifact)
    plan = plan_run(model, Tokenizer.from_artifact(artifact), PROMPT, None, steps=int(steps))
    return list(generate(model, plan, SamplingSettings(seed=seed)))


def numpy_text(artifact: Artifact, steps: str, seed: int) -> str:
    """What ``run`` prints on stdout for numpy's tokens: the prompt, then the text."""
    tokenizer = Tokenizer.from_artifact(artifact)
    ids = [*tokenizer.encode(PROMPT)[1:], *numpy_ids(artifact, steps, seed)]
    return tokenizer.decode(ids).decode("utf-8", errors="replace") + "\n"


def test_run_uses_the_c_and_says_nothing_of_it(capsys, art260k, stories260k, native_path):
    result, err = run_cli(capsys, str(art260k), "-i", PROMPT, "-n", "60", "-s", "5")
    assert result["forward_pass"] == "native"
    assert result["generated_ids"] == numpy_ids(stories260k, "60", 5)
    assert err == ""


def test_the_switch_asks_for_numpy(capsys, monkeypatch, art260k, stories260k):
    monkeypatch.setenv("CURTA_CHAIN_NATIVE", "0")
    result, err = run_cli(capsys, str(art260k), "-i", PROMPT, "-n", "30", "-s", "5")
    assert result["forward_pass"] == "numpy" and err == ""
    assert result["generated_ids"] == numpy_ids(stories260k, "30", 5)


def fake_compiler(folder: Path, script: str) -> Path:
    path = folder / "fakecc"
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.mark.parametrize(
    ("case", "says"),
    [
        ("no compiler", "no C compiler (cc, gcc, clang, clang-14 or $CC) on PATH"),
        ("CC names nothing", "CC='/nowhere/cc': no such program"),
        ("the build fails", "the C build failed (fakecc: error: no room); the compiler's output"),
        ("the library does not load", "does not load"),
    ],
)
def test_each_failure_is_one_line_then_numpy(
    request, capsys, monkeypatch, tmp_path, art260k, stories260k, case, says
):
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.delenv("CURTA_CHAIN_NATIVE", raising=False)
    if case == "no compiler":
        monkeypatch.delenv("CC", raising=False)
        monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    elif case == "CC names nothing":
        monkeypatch.setenv("CC", "/nowhere/cc")
    elif case == "the build fails":
        cc = fake_compiler(tmp_path, "echo 'fakecc: error: no room' >&2; exit 1")
        monkeypatch.setenv("CC", str(cc))
    else:  # a cached library that is not one (a disk that lost it half-written)
        cc = request.getfixturevalue("c_compiler")  # a skip where there is none
        folder = cache_root() / build_key(cc)
        folder.mkdir(parents=True)
        (folder / LIBRARY).write_bytes(b"not a shared object")
    capsys.readouterr()
    assert main(["run", str(art260k), "-i", PROMPT, "-n", "30", "-s", "5"]) == 0
    out, err = capsys.readouterr()
    *before, note, summary = err.splitlines()  # the note, then run's closing line
    assert before == (["building the program's C for this machine"] if "fails" in case else [])
    assert note.startswith("the native forward pass is unavailable: ") and says in note, err
    assert note.endswith("; running numpy's") and summary.startswith("13 tokens (")
    assert out == numpy_text(stories260k, "30", 5)
    if case == "the build fails":
        (log,) = cache.rglob("build.log")
        assert "fakecc: error: no room" in log.read_text() and str(log) in note
        assert not list(cache.rglob(LIBRARY))  # nothing half-built is left to load


@pytest.mark.usefixtures("c_compiler")
def test_a_fresh_cache_builds_once_then_finds_it(monkeypatch, tmp_path, capsys, stories260k):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    notes: list[str] = []

    class Notes(NullReporter):
        def note(self, text: str) -> None:
            notes.append(text)

    model = fastest_model(stories260k, Notes())
    assert isinstance(model, NativeModel) and notes == ["building the program's C for this machine"]
    built = model.library.stat().st_mtime_ns
    assert model.library.parent.parent == tmp_path / "cache" / "curta-chain" / "native"
    assert fastest_model(stories260k, Notes()).library == model.library
    assert notes == ["building the program's C for this machine"]  # found, not built again
    assert model.library.stat().st_mtime_ns == built
    assert host_build.main() == 0  # what scripts/setup.sh runs
    assert capsys.readouterr().out == f"native forward pass: {model.library}\n"


def test_a_changed_source_is_a_new_build(tmp_path, c_compiler):
    program = tmp_path / "curta"
    shutil.copytree(host_build.PROGRAM_DIR, program)
    cc = c_compiler
    before = build_key(cc, program)
    forward = program / "src" / "forward.c"
    forward.write_text(forward.read_text() + "\n")
    assert build_key(cc, program) != before


def test_a_checkout_without_the_c_says_so(tmp_path):
    with pytest.raises(BuildError, match="the program's C sources are not here"):
        library(os.environ, tmp_path)


def test_the_host_leaves_out_only_the_sources_it_cannot_compile(tmp_path, c_compiler):
    # Every program source is in the library but the ones the host replaces; each of those
    # does not compile here (SBPF assembly), and its stand-in exists.
    program = host_build.PROGRAM_DIR
    names = {str(name) for name in host_build.sources()}
    every = {f"src/{path.name}" for path in (program / "src").glob("*.c")}
    assert names & every == every - set(host_build.REPLACED)
    for source, stand_in in host_build.REPLACED.items():
        assert (program / stand_in).is_file() and stand_in in names
        argv = [*c_compiler, *host_build.CFLAGS, "-c", source, "-o", str(tmp_path / "out.o")]
        done = subprocess.run(argv, cwd=program, capture_output=True, text=True, check=False)
        assert done.returncode != 0, f"{source} compiles for the host: compile it as it is"
