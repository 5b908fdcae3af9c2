"""convert, inspect and hash through the real CLI entry; every refusal leaves no file."""

import json
import re
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from curta_chain.artifact import read_artifact
from curta_chain.artifact.synthetic import tezw_bytes
from curta_chain.cli import main


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_convert_inspect_hash(capsys, tmp_path, inputs_dir, stories260k):
    out_file = tmp_path / "s.curta"
    code, out, err = run(
        capsys, "convert", inputs_dir / "stories260K.bin", inputs_dir / "tok512.bin", "-o", out_file
    )
    assert (code, err) == (0, "")
    digest = stories260k.weights_hash().hex()
    assert out.splitlines() == [
        f"wrote {out_file}: 357,240 bytes",
        "sections (2): 68,536, 288,704",
        f"weights hash: {digest}",
    ]
    assert out_file.read_bytes() == stories260k.data

    code, out, _ = run(capsys, "hash", out_file)
    assert code == 0 and out.splitlines()[-1] == digest

    code, out, _ = run(capsys, "inspect", out_file)
    assert code == 0
    assert "dim            64" in out and "vocab_size     512" in out
    assert "tied to the embedding" in out
    assert "  7 layer 0 ffn down" in out
    assert out.splitlines()[-1] == f"weights hash   {digest}"

    code, out, _ = run(capsys, "inspect", out_file, "--output", "json")
    report = json.loads(out)
    assert report["config"]["n_kv_heads"] == 4
    assert [s["length"] for s in report["sections"]] == [68_536, 288_704]
    assert report["matrices"][7]["row_bytes"] == 184
    assert report["weights_hash"] == digest


def test_convert_a_tezw_file_without_a_tokenizer(capsys, tmp_path):
    source = tmp_path / "tiny.tezw"
    source.write_bytes(tezw_bytes(seed=2))
    code, out, _ = run(capsys, "convert", source, "-o", tmp_path / "tiny.curta")
    assert code == 0
    assert "sections (6): " in out
    assert read_artifact(tmp_path / "tiny.curta").config.vocab_size == 259


def test_a_refusal_through_the_installed_entry_point_is_one_line(tmp_path):
    bad = tmp_path / "bad.curta"
    bad.write_bytes(b"CURTAW01" + bytes(10))
    result = subprocess.run(
        [sys.executable, "-m", "curta_chain", "hash", str(bad)], capture_output=True, text=True
    )
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == f"error: {bad}: 18 bytes, shorter than the 4,096-byte header\n"


def _float_at(data: bytes, index: int, value: float) -> bytes:
    out = bytearray(data)
    struct.pack_into("<f", out, 28 + 4 * index, value)
    return bytes(out)


def _int_at(data: bytes, offset: int, value: int) -> bytes:
    out = bytearray(data)
    struct.pack_into("<i", out, offset, value)
    return bytes(out)


def _tokens(data: bytes, count: int) -> bytes:
    pos = 4
    for _ in range(count):
        pos += 8 + struct.unpack_from("<I", data, pos + 4)[0]
    return data[:pos]


def _long_token(tok512: bytes, longest: int) -> bytes:
    # Token 511 is the last: give it 129 bytes.
    head = _tokens(tok512, 511)
    return struct.pack("<I", longest) + head[4:] + struct.pack("<fI", -1.0, 129) + b"x" * 129


EMB = 512 * 64  # stories260K's embedding floats: the attention norms follow
CHECKPOINT_CASES = {
    "truncated": (
        lambda c: c[:-4],
        r"stories260K.bin: 1,056,536 bytes, expected 1,056,540 for this header \(truncated\)",
    ),
    "trailing bytes": (lambda c: c + bytes(4), r"1,056,544 bytes, .* \(4 trailing bytes\)"),
    "non-finite float": (
        lambda c: _float_at(c, 100, float("nan")),
        r"stories260K.bin: byte 428 \(token embedding, float 100\): nan, expected a finite float",
    ),
    "infinite norm": (
        lambda c: _float_at(c, EMB + 3, float("-inf")),
        r"byte 131,112 \(attention normalization, float 3\): -inf",
    ),
    "config out of range": (
        lambda c: _int_at(c, 12, 7),
        r"stories260K.bin: header byte 12 \(n_heads\): 7 does not divide dimension 64",
    ),
    "shared vocabulary with a classifier": (
        lambda c: c + bytes(4 * 512 * 64),
        r"holds a classifier of 131,072 bytes .* positive vocabulary 512 says it is shared",
    ),
    "own classifier missing": (
        lambda c: _int_at(c, 20, -512),
        r"ends before the classifier that the negative vocabulary -512 announces",
    ),
    "embedding too large for a section": (
        lambda c: struct.pack("<7i", 512, 2048, 16, 8, 8, 65_536, 512),
        r"the embedding \(65,536 rows of 512 columns\) need 34,078,720 bytes, more than the "
        r"10,483,712",
    ),
    "embedding and classifier too large": (
        lambda c: struct.pack("<7i", 512, 2048, 16, 8, 8, -12_000, 512),
        r"the embedding and classifier \(12,000 rows of 512 columns\) need 12,480,000 bytes",
    ),
    "normalization weight out of range": (
        lambda c: _float_at(c, EMB, 200.0),
        r"stories260K.bin: layer 0 attention normalization weight 0 is 200, expected -128 to",
    ),
    "final normalization weight out of range": (
        lambda c: _float_at(c, 259_968 + 63, -128.5),
        r"final normalization weight 63 is -128.5, expected -128 to 128",
    ),
    "weight too large for the scale": (
        lambda c: _float_at(c, 0, 40_000.0),
        r"token embedding: row 0 holds \|w\| = 40000, expected below 32,512",
    ),
}


@pytest.fixture
def workdir(tmp_path: Path, inputs_dir: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    for name in ("stories260K.bin", "tok512.bin"):
        (folder / name).write_bytes((inputs_dir / name).read_bytes())
    return folder


def refused(capsys, folder: Path, argv, pattern: str) -> None:
    before = sorted(p.name for p in folder.iterdir())
    code, out, err = run(capsys, *argv)
    assert code == 1 and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert re.search(pattern, err), err
    assert sorted(p.name for p in folder.iterdir()) == before  # nothing written, no temp file


@pytest.mark.parametrize("case", list(CHECKPOINT_CASES))
def test_convert_refuses_a_bad_checkpoint(capsys, workdir, case):
    mutate, pattern = CHECKPOINT_CASES[case]
    checkpoint = workdir / "stories260K.bin"
    checkpoint.write_bytes(mutate(checkpoint.read_bytes()))
    argv = ["convert", checkpoint, workdir / "tok512.bin", "-o", workdir / "out.curta"]
    refused(capsys, workdir, argv, pattern)


TOKENIZER_CASES = {
    "fewer tokens than the vocabulary": (
        lambda t, full: _tokens(full, 511),
        r"tok512.bin: truncated at byte [\d,]+ in token 511, expected 512 tokens",
    ),
    "more tokens than the vocabulary": (
        lambda t, full: _tokens(full, 513),
        r"tok512.bin: \d+ bytes after token 511 at byte [\d,]+, expected exactly 512 tokens",
    ),
    "token longer than 128 bytes": (
        lambda t, full: _long_token(t, 128),
        r"\(length of token 511\): 129, expected at most 128, the format's limit",
    ),
    "token longer than the file's own limit": (
        lambda t, full: _long_token(t, 27),
        r"\(length of token 511\): 129, expected at most 27, the file's longest token length",
    ),
    "longest-token field over 128": (
        lambda t, full: struct.pack("<I", 200) + t[4:],
        r"tok512.bin: byte 0 \(longest token length\): 200, expected 1 to 128",
    ),
}


@pytest.mark.parametrize("case", list(TOKENIZER_CASES))
def test_convert_refuses_a_bad_tokenizer(capsys, workdir, data_dir, case):
    mutate, pattern = TOKENIZER_CASES[case]
    tokenizer = workdir / "tok512.bin"
    full = (data_dir / "tokenizer.bin").read_bytes()
    tokenizer.write_bytes(mutate(tokenizer.read_bytes(), full))
    argv = ["convert", workdir / "stories260K.bin", tokenizer, "-o", workdir / "out.curta"]
    refused(capsys, workdir, argv, pattern)


def test_convert_keeps_an_existing_output_when_it_refuses(capsys, workdir):
    out_file = workdir / "out.curta"
    out_file.write_bytes(b"the old artifact")
    (workdir / "tok512.bin").write_bytes(b"\x01")
    argv = ["convert", workdir / "stories260K.bin", workdir / "tok512.bin", "-o", out_file]
    refused(capsys, workdir, argv, r"tok512.bin: 1 bytes, truncated before the 4-byte header")
    assert out_file.read_bytes() == b"the old artifact"


def test_convert_argument_refusals(capsys, workdir):
    tezw = workdir / "t.tezw"
    tezw.write_bytes(tezw_bytes(n_layer=1, n_head=2, dim=16, max_seq=8, ffn_dim=32))
    out_file = workdir / "out.curta"
    refused(
        capsys,
        workdir,
        ["convert", tezw, workdir / "tok512.bin", "-o", out_file],
        r"t.tezw: a TEZW file carries its own byte vocabulary; leave out the TOKENIZER",
    )
    refused(
        capsys,
        workdir,
        ["convert", workdir / "stories260K.bin", "-o", out_file],
        r"stories260K.bin: a llama2.c checkpoint needs its TOKENIZER file",
    )
    refused(
        capsys,
        workdir,
        ["convert", workdir / "absent.bin", workdir / "tok512.bin", "-o", out_file],
        r"absent.bin: cannot read: No such file or directory",
    )
    refused(
        capsys,
        workdir,
        ["convert", workdir / "stories260K.bin", workdir / "tok512.bin", "-o", workdir / "no/x"],
        r"no/x: cannot write: No such file or directory",
    )


def test_convert_refuses_a_tezw_file_whose_size_disagrees(capsys, workdir):
    tezw = workdir / "t.tezw"
    tezw.write_bytes(tezw_bytes(n_layer=1, n_head=2, dim=16, max_seq=8, ffn_dim=32)[:-8])
    refused(
        capsys,
        workdir,
        ["convert", tezw, "-o", workdir / "out.curta"],
        r"t.tezw: 53,664 bytes, but its header \(1 layers, dim 16, vocab 256, ffn_dim 32\) "
        r"says 53,672",
    )


def test_inspect_and_hash_refuse_a_broken_artifact(capsys, workdir, stories260k):
    broken = bytearray(stories260k.data)
    broken[100] = 1
    path = workdir / "broken.curta"
    path.write_bytes(bytes(broken))
    for command in (["inspect", path], ["inspect", path, "--output", "json"], ["hash", path]):
        refused(capsys, workdir, command, r"broken.curta: byte 100 \(unused header\): 0x01")
    refused(capsys, workdir, ["hash", workdir / "gone.curta"], r"gone.curta: cannot read")
    refused(
        capsys,
        workdir,
        ["inspect", workdir / "stories260K.bin"],
        r"stories260K.bin: this is a llama2.c checkpoint, not a CURTAW01 artifact: run "
        r"`curta-chain convert .*stories260K.bin TOKENIZER -o OUT.curta` first",
    )
