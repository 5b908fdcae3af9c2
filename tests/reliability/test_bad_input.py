"""A catalogue of malformed inputs, each through the real ``curta-chain`` process.

Every case runs ``python -m curta_chain ...`` as a subprocess (the installed entry, so "no
traceback" is about the process a user runs) with ``HOME`` set to an empty folder of the
test, against one embedded localnet over HTTP. Each must end with exit code 1, nothing on
stdout, exactly one line on stderr that starts ``error: `` and names the file, field,
offset or option at fault, no ``Traceback``; the work folder (inputs, outputs, the home
folder) byte for byte unchanged; the payer's balance unchanged and no account created
under the curta program.
"""

import base64
import hashlib
import json
import os
import re
import struct
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from attacker import CURTA, STANDIN, V0_DEPLOYS, deploy_program, on_chain
from fault_proxy import FaultProxy, record
from reference_client import Client
from solana.rpc.commitment import Confirmed
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.system_program import CreateAccountParams, create_account
from solders.transaction import Transaction

from curta_chain.artifact import Artifact, decode_artifact
from curta_chain.artifact.layout import BLOCK_NAMES
from curta_chain.artifact.synthetic import tezw_bytes
from curta_chain.chain import loader, specs
from curta_chain.chain.keys import buffer_keypair, default_program_keypair
from curta_chain.chain.plan import NewAccount
from curta_chain.chain.rent import rent_exempt_minimum
from curta_chain.chain.sender import Sender
from curta_chain.chain.specs import TxSpec
from curta_chain.cli.keypairs import write_keypair
from curta_chain.cli.solana_config import record_program_id
from curta_chain.constants import LAMPORTS_PER_SOL, LOCALNET_PROGRAM_ID
from curta_chain.errors import ArtifactError
from curta_chain.localnet import LocalnetHandle, start_in_thread
from curta_chain.program import MODEL_ACCOUNT_SIZE

PROGRAM_ID = Pubkey.from_string(LOCALNET_PROGRAM_ID)
SYSTEM = "11111111111111111111111111111111"
DEVNET_GENESIS = "EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG"
MAINNET_GENESIS = "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d"


@dataclass(frozen=True)
class World:
    """What every case may name: one localnet, a funded payer, the good inputs."""

    url: str
    genesis_hash: str
    payer: Keypair
    not_a_model: Pubkey
    """A program-owned account of a model's size that holds zeros, not a model."""
    artifact: bytes
    checkpoint: bytes
    tokenizer: bytes
    standin: Keypair
    """The keypair of a stand-in program deployed on the localnet (not a shipped build)."""
    foreign: Keypair
    """The keypair of a curta program someone else deployed (and may upgrade)."""
    devnet_url: str
    """The localnet behind a proxy that claims devnet's genesis hash: not a localnet."""
    greedy_url: str
    """The localnet behind a proxy that asks 300 times the rent."""
    mainnet_url: str
    """The localnet behind a proxy that claims mainnet-beta's genesis hash."""


@dataclass(frozen=True)
class Ctx:
    """One case's folder: ``work`` holds the inputs (and is where outputs would go)."""

    world: World
    work: Path
    home: Path

    def file(self, name: str, data: bytes) -> Path:
        path = self.work / name
        path.write_bytes(data)
        return path

    def art(self) -> Path:
        """The good artifact, written into the work folder."""
        return self.file("model.curta", self.world.artifact)

    def keypair(self) -> Path:
        """The payer's keypair file, written into the work folder."""
        path = self.work / "id.json"
        if not path.exists():
            write_keypair(self.world.payer, path)
        return path

    def chain(self, *argv: object, keypair: bool = True, url: str | None = None) -> list[str]:
        """A chain command's argv, with the localnet's URL and (by default) the payer."""
        extra = ["-u", url or self.world.url] + (["-k", str(self.keypair())] if keypair else [])
        return [str(a) for a in argv] + extra

    def standin_keypair(self) -> Path:
        """The stand-in program's keypair file, written into the work folder."""
        path = self.work / "standin.json"
        write_keypair(self.world.standin, path)
        return path

    def program_keypair(self, keypair: Keypair) -> Path:
        """A program's keypair file, written into the work folder."""
        path = self.work / "program.json"
        write_keypair(keypair, path)
        return path

    def payers_buffer_taken(self) -> None:
        """Put a buffer of someone else's at the address the payer's deploy would use."""
        payer = self.world.payer
        program = default_program_keypair(payer, self.world.genesis_hash).pubkey()
        buffer = buffer_keypair(payer, self.world.genesis_hash, program, CURTA)
        size = loader.BUFFER_METADATA_SIZE + len(CURTA.elf)
        funding = NewAccount(buffer.pubkey(), size, rent_exempt_minimum(size))
        create = specs.new_account(payer.pubkey(), funding, loader.LOADER_V3)
        init = loader.initialize_buffer(buffer.pubkey(), Keypair().pubkey())
        spec = TxSpec((*create, init), (buffer,))
        on_chain(self.world.url, lambda client: Sender(client, payer).send([spec]))

    def config_naming_standin(self) -> Path:
        """A Solana CLI config that records the stand-in as this localnet's program."""
        path = self.work / "config.yml"
        record_program_id(path, self.world.genesis_hash, str(self.world.standin.pubkey()))
        return path


def patch(data: bytes, offset: int, fmt: str, value: object) -> bytes:
    """``data`` with ``struct.pack(fmt, value)`` written at ``offset``."""
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, value)
    return bytes(out)


# stories260K as converted: section zero is 68,536 bytes, the matrices section 288,704.
S1 = 68_536
BLOCKS = (4_096, 6_912, 23_296, 39_684, 56_072, 64_264, 66_312)


def descriptor(index: int, field: int) -> int:
    """Header byte of matrix descriptor ``index``'s field at ``field`` (0 section ... 16)."""
    return 512 + 24 * index + field


def bad_artifact(
    mutate: Callable[[bytes], bytes], command: str = "hash"
) -> Callable[[Ctx], list[str]]:
    """A case that hands ``command`` the good artifact changed by ``mutate``."""

    def prepare(ctx: Ctx) -> list[str]:
        path = ctx.file("bad.curta", mutate(ctx.world.artifact))
        if command == "publish":
            return ctx.chain("publish", path)
        if command == "verify":
            return ctx.chain("verify", ctx.world.not_a_model, path, keypair=False)
        if command == "seal":
            return ctx.chain("seal", ctx.world.not_a_model, path)
        return [command, str(path)]

    return prepare


def bad_checkpoint(mutate: Callable[[bytes], bytes]) -> Callable[[Ctx], list[str]]:
    def prepare(ctx: Ctx) -> list[str]:
        checkpoint = ctx.file("ckpt.bin", mutate(ctx.world.checkpoint))
        tokenizer = ctx.file("tok.bin", ctx.world.tokenizer)
        return ["convert", str(checkpoint), str(tokenizer), "-o", str(ctx.work / "out.curta")]

    return prepare


def bad_tokenizer(mutate: Callable[[bytes], bytes]) -> Callable[[Ctx], list[str]]:
    def prepare(ctx: Ctx) -> list[str]:
        checkpoint = ctx.file("ckpt.bin", ctx.world.checkpoint)
        tokenizer = ctx.file("tok.bin", mutate(ctx.world.tokenizer))
        return ["convert", str(checkpoint), str(tokenizer), "-o", str(ctx.work / "out.curta")]

    return prepare


TEZW = tezw_bytes(n_layer=1, n_head=2, dim=16, max_seq=8, ffn_dim=32)


def bad_tezw(mutate: Callable[[bytes], bytes]) -> Callable[[Ctx], list[str]]:
    def prepare(ctx: Ctx) -> list[str]:
        source = ctx.file("model.tezw", mutate(TEZW))
        return ["convert", str(source), "-o", str(ctx.work / "out.curta")]

    return prepare


def bad_keypair(text: bytes | None) -> Callable[[Ctx], list[str]]:
    """``publish`` with a keypair file holding ``text`` (None: a folder in its place)."""

    def prepare(ctx: Ctx) -> list[str]:
        path = ctx.work / "bad-id.json"
        if text is None:
            path.mkdir()
        else:
            path.write_bytes(text)
        return ["publish", str(ctx.art()), "-u", ctx.world.url, "-k", str(path)]

    return prepare


def bad_config(text: bytes | None, where: str = "-C") -> Callable[[Ctx], list[str]]:
    """``publish`` reading a Solana CLI config holding ``text`` (None: a folder)."""

    def prepare(ctx: Ctx) -> list[str]:
        if where == "-C":
            path = ctx.work / "config.yml"
        else:  # the default place, found through HOME
            path = ctx.home / ".config" / "solana" / "cli" / "config.yml"
            path.parent.mkdir(parents=True)
        if text is None:
            path.mkdir()
        else:
            path.write_bytes(text)
        argv = ["publish", str(ctx.art()), "-k", str(ctx.keypair())]
        return argv + (["-C", str(path)] if where == "-C" else [])

    return prepare


def with_url(url: str, *extra: str) -> Callable[[Ctx], list[str]]:
    """``publish`` to ``url`` with the payer."""
    return lambda ctx: ["publish", str(ctx.art()), "-u", url, "-k", str(ctx.keypair()), *extra]


def mismatched_keypair_json() -> bytes:
    """A 64-byte array whose public half is not the secret's: a corrupted keypair."""
    pair = list(bytes(Keypair()))
    pair[40] ^= 0xFF
    return json.dumps(pair).encode()


Case = tuple[Callable[[Ctx], list[str]], str]

CASES: dict[str, Case] = {
    # -- artifacts: every header field, the tables, the file's length ----------------------
    "artifact tag": (
        bad_artifact(lambda d: b"CURTAW02" + d[8:], "publish"),
        r"bad.curta: byte 0 \(tag\): CURTAW02, expected CURTAW01",
    ),
    "artifact dim": (
        bad_artifact(lambda d: patch(d, 8, "<I", 1024), "publish"),
        r"bad.curta: header byte 8 \(dim\): 1024",
    ),
    "artifact hidden dim": (
        bad_artifact(lambda d: patch(d, 12, "<I", 0)),
        r"bad.curta: header byte 12 \(hidden_dim\): 0",
    ),
    "artifact layers": (
        bad_artifact(lambda d: patch(d, 16, "<I", 17), "inspect"),
        r"bad.curta: header byte 16 \(n_layers\): 17",
    ),
    "artifact heads": (
        bad_artifact(lambda d: patch(d, 20, "<I", 7)),
        r"bad.curta: header byte 20 \(n_heads\): 7 does not divide dimension 64",
    ),
    "artifact kv heads": (
        bad_artifact(lambda d: patch(d, 24, "<I", 3), "verify"),
        r"bad.curta: header byte 24 \(n_kv_heads\): 3",
    ),
    "artifact vocabulary": (
        bad_artifact(lambda d: patch(d, 28, "<I", 258)),
        r"bad.curta: header byte 28 \(vocab_size\): 258",
    ),
    "artifact context": (
        bad_artifact(lambda d: patch(d, 32, "<I", 513), "seal"),
        r"bad.curta: header byte 32 \(seq_len\): 513",
    ),
    "artifact section count out of range": (
        bad_artifact(lambda d: patch(d, 36, "<I", 19)),
        r"bad.curta: header byte 36 \(section count\): 19, expected 2 to 18",
    ),
    "artifact section count disagrees": (
        bad_artifact(lambda d: patch(d, 36, "<I", 3), "publish"),
        r"bad.curta: header byte 36 \(section count\): 3, expected 2",
    ),
    **{
        f"artifact {name} offset": (
            bad_artifact(lambda d, i=i: patch(d, 40 + 4 * i, "<I", BLOCKS[i] + 8)),
            rf"bad.curta: header byte {40 + 4 * i} \({name} offset\): {BLOCKS[i] + 8:,}, "
            rf"expected {BLOCKS[i]:,}",
        )
        for i, name in enumerate(BLOCK_NAMES)
    },
    "artifact block offset into the header": (
        bad_artifact(lambda d: patch(d, 40, "<I", 100)),
        r"bad.curta: header byte 40 \(normalization coefficients offset\): 100 points into the "
        r"header",
    ),
    "artifact inv sqrt": (
        bad_artifact(lambda d: patch(d, 68, "<I", 0), "publish"),
        r"bad.curta: header byte 68 \(inverse square root of the head size\): 0, expected",
    ),
    "artifact unused header byte": (
        bad_artifact(lambda d: patch(d, 100, "<B", 1)),
        r"bad.curta: byte 100 \(unused header\): 0x01, expected zero",
    ),
    "artifact section 1 offset": (
        bad_artifact(lambda d: patch(d, 144, "<Q", S1 + 8), "publish"),
        rf"bad.curta: header byte 144 \(section 1 offset\): {S1 + 8:,}, expected {S1:,}",
    ),
    "artifact section 1 length": (
        bad_artifact(lambda d: patch(d, 152, "<Q", 11_000_000)),
        r"bad.curta: header byte 152 \(section 1 length\): 11,000,000, expected 1 to 10,483,712",
    ),
    "artifact unused section table entry": (
        bad_artifact(lambda d: patch(d, 160, "<Q", 5)),
        r"bad.curta: byte 160 \(unused section table\): 0x05, expected zero",
    ),
    "artifact descriptor section": (
        bad_artifact(lambda d: patch(d, descriptor(2, 0), "<I", 0), "verify"),
        rf"header byte {descriptor(2, 0)} \(matrix 2 \(layer 0 query\) section\): 0, expected 1",
    ),
    "artifact descriptor columns": (
        bad_artifact(lambda d: patch(d, descriptor(3, 4), "<I", 65)),
        rf"header byte {descriptor(3, 4)} \(matrix 3 \(layer 0 key\) columns\): 65, expected 64",
    ),
    "artifact descriptor rows": (
        bad_artifact(lambda d: patch(d, descriptor(7, 8), "<I", 63)),
        rf"header byte {descriptor(7, 8)} \(matrix 7 \(layer 0 ffn down\) rows\): 63",
    ),
    "artifact descriptor row length": (
        bad_artifact(lambda d: patch(d, descriptor(7, 12), "<I", 180)),
        rf"header byte {descriptor(7, 12)} \(matrix 7 \(layer 0 ffn down\) row length\): 180, "
        r"expected 184",
    ),
    "artifact descriptor offset": (
        bad_artifact(lambda d: patch(d, descriptor(2, 16), "<Q", 36_868)),
        rf"header byte {descriptor(2, 16)} \(matrix 2 \(layer 0 query\) offset\): 36,868, "
        r"not a multiple of 8",
    ),
    "artifact descriptor past the section": (
        bad_artifact(lambda d: patch(d, descriptor(8, 16), "<Q", 288_000), "publish"),
        rf"header byte {descriptor(8, 16)} \(matrix 8 .*\): bytes 288,000 to .* cross the end "
        r"of section 1",
    ),
    "artifact unused matrix table": (
        bad_artifact(lambda d: patch(d, 4_000, "<B", 9)),
        r"bad.curta: byte 4,000 \(unused matrix table\): 0x09, expected zero",
    ),
    "artifact row scale zero": (
        bad_artifact(lambda d: patch(d, S1, "<I", 0)),
        rf"bad.curta: byte {S1:,} \(matrix 0 \(token embedding\) row 0 scale\): 0",
    ),
    "artifact weight byte -128": (
        bad_artifact(lambda d: patch(d, S1 + 72 + 8, "<B", 0), "publish"),
        rf"byte {S1 + 80:,} \(matrix 0 \(token embedding\) row 1 weight 0\): 0, a weight of -128",
    ),
    "artifact row padding": (
        bad_artifact(lambda d: patch(d, S1 + 63_072 + 8 + 172, "<B", 0)),
        r"\(matrix 7 \(layer 0 ffn down\) row 0 padding\): 0, expected 128",
    ),
    "artifact token entry reserved": (
        bad_artifact(lambda d: patch(d, BLOCKS[4] + 12, "<I", 1)),
        r"\(token 0 bytes 12 to 15\): 1, expected zero",
    ),
    "artifact token length": (
        bad_artifact(lambda d: patch(d, BLOCKS[4] + 16 * 5 + 4, "<I", 129)),
        r"\(token 5 length\): 129, expected at most 128",
    ),
    "artifact sorted token ids": (
        bad_artifact(lambda d: patch(d, BLOCKS[5], "<I", 511), "inspect"),
        rf"byte {BLOCKS[5]:,} \(sorted token id 0\): 511, expected",
    ),
    "artifact truncated by a byte": (
        bad_artifact(lambda d: d[:-1], "publish"),
        r"bad.curta: the sections end at byte 357,240 but the file is 357,239 bytes \(truncated\)",
    ),
    "artifact padded by a byte": (
        bad_artifact(lambda d: d + b"\0", "verify"),
        r"the file is 357,241 bytes \(1 trailing bytes\)",
    ),
    "artifact shorter than its header": (
        bad_artifact(lambda d: d[:4_000], "publish"),
        r"bad.curta: 4,000 bytes, shorter than the 4,096-byte header",
    ),
    "artifact empty": (
        bad_artifact(lambda d: b""),
        r"bad.curta: 0 bytes, shorter than the 4,096-byte header",
    ),
    "artifact is a checkpoint": (
        lambda ctx: ctx.chain("publish", ctx.file("ckpt.bin", ctx.world.checkpoint)),
        r"ckpt.bin: this is a llama2.c checkpoint, not a CURTAW01 artifact: run "
        r"`curta-chain convert .*ckpt.bin TOKENIZER -o OUT.curta` first$",
    ),
    "artifact path absent": (
        lambda ctx: ctx.chain("publish", ctx.work / "absent.curta"),
        r"absent.curta: cannot read: No such file or directory",
    ),
    "artifact path is a folder": (
        lambda ctx: ["inspect", str(ctx.work)],
        r": cannot read: Is a directory",
    ),
    # -- llama2.c checkpoints and tokenizers --------------------------------------------------
    "checkpoint truncated": (
        bad_checkpoint(lambda c: c[:-4]),
        r"ckpt.bin: 1,056,536 bytes, expected 1,056,540 for this header \(truncated\)",
    ),
    "checkpoint trailing bytes": (
        bad_checkpoint(lambda c: c + bytes(4)),
        r"ckpt.bin: 1,056,544 bytes, .*\(4 trailing bytes\)",
    ),
    "checkpoint NaN": (
        bad_checkpoint(lambda c: patch(c, 28 + 400, "<f", float("nan"))),
        r"ckpt.bin: byte 428 \(token embedding, float 100\): nan, expected a finite float",
    ),
    "checkpoint config out of range": (
        bad_checkpoint(lambda c: patch(c, 0, "<i", 0)),
        r"ckpt.bin: header byte 0 \(dim\): 0",
    ),
    "checkpoint shorter than its header": (
        bad_checkpoint(lambda c: c[:20]),
        r"ckpt.bin: 20 bytes",
    ),
    "checkpoint given to inspect": (
        lambda ctx: ["inspect", str(ctx.file("ckpt.bin", ctx.world.checkpoint))],
        r"ckpt.bin: this is a llama2.c checkpoint, not a CURTAW01 artifact: run `curta-chain "
        r"convert",
    ),
    "tokenizer truncated": (
        bad_tokenizer(lambda t: t[:-3]),
        r"tok.bin: truncated at byte [\d,]+ in token 511, expected 512 tokens",
    ),
    "tokenizer with more tokens than the model": (
        # stories260K (tests/data/llama2c) with the 32,000-token tokenizer.bin: these bytes follow.
        bad_tokenizer(lambda t: t + struct.pack("<fI", 0.0, 3) + b"abc"),
        r"tok.bin: 11 bytes after token 511 at byte [\d,]+, expected exactly 512 tokens "
        r"\(the checkpoint's vocabulary\); if its first 512 are the model's, add "
        r"--cut-tokenizer to the convert command to keep those$",
    ),
    "tokenizer longest length 0": (
        bad_tokenizer(lambda t: patch(t, 0, "<I", 0)),
        r"tok.bin: byte 0 \(longest token length\): 0, expected 1 to 128",
    ),
    "tokenizer absent": (
        lambda ctx: [
            "convert",
            str(ctx.file("ckpt.bin", ctx.world.checkpoint)),
            str(ctx.work / "tok.bin"),
            "-o",
            str(ctx.work / "out.curta"),
        ],
        r"tok.bin: cannot read: No such file or directory",
    ),
    "convert output in a missing folder": (
        lambda ctx: [
            "convert",
            str(ctx.file("ckpt.bin", ctx.world.checkpoint)),
            str(ctx.file("tok.bin", ctx.world.tokenizer)),
            "-o",
            str(ctx.work / "missing" / "out.curta"),
        ],
        r"missing/out.curta: cannot write: No such file or directory",
    ),
    # -- TEZW v2 files ----------------------------------------------------------------------
    "tezw version": (
        bad_tezw(lambda t: patch(t, 4, "<i", 3)),
        r"model.tezw: byte 4 \(version\): 3, expected 2",
    ),
    "tezw vocabulary": (
        bad_tezw(lambda t: patch(t, 20, "<i", 300)),
        r"model.tezw: byte 20 \(vocab_sz\): 300, expected 256",
    ),
    "tezw heads": (
        bad_tezw(lambda t: patch(t, 12, "<i", 3)),
        r"model.tezw: byte 12 \(n_head\): 3",
    ),
    "tezw truncated": (
        bad_tezw(lambda t: t[:-8]),
        r"model.tezw: 53,664 bytes, but its header .* says 53,672",
    ),
    "tezw infinite double": (
        bad_tezw(lambda t: patch(t, 40 + 8 * 5, "<d", float("inf"))),
        r"model.tezw: byte 80 \(double 5\): inf, expected a finite float",
    ),
    "tezw with a tokenizer": (
        lambda ctx: [
            "convert",
            str(ctx.file("model.tezw", TEZW)),
            str(ctx.file("tok.bin", ctx.world.tokenizer)),
            "-o",
            str(ctx.work / "out.curta"),
        ],
        r"model.tezw: a TEZW file carries its own byte vocabulary; leave out the TOKENIZER",
    ),
    # -- keypair files ------------------------------------------------------------------------
    "keypair not JSON": (
        bad_keypair(b"not json"),
        r"bad-id.json: not a keypair: expected a JSON array of 64 bytes",
    ),
    "keypair 63 bytes": (
        bad_keypair(json.dumps([1] * 63).encode()),
        r"bad-id.json: not a keypair: expected a JSON array of 64 bytes",
    ),
    "keypair value over 255": (
        bad_keypair(json.dumps([256] * 64).encode()),
        r"bad-id.json: not a keypair: expected a JSON array of 64 bytes",
    ),
    "keypair halves disagree": (
        bad_keypair(mismatched_keypair_json()),
        r"bad-id.json: not a keypair: its public key does not match its secret",
    ),
    "keypair is a folder": (
        bad_keypair(None),
        r"bad-id.json: cannot read the keypair: ",
    ),
    "keypair file is binary": (
        bad_keypair(bytes(range(128, 256))),
        r"bad-id.json: not a keypair: expected a JSON array of 64 bytes, found binary data "
        r"\(byte 0 is 0x80\)$",
    ),
    "keypair absent": (
        lambda ctx: [
            "publish",
            str(ctx.art()),
            "-u",
            ctx.world.url,
            "-k",
            str(ctx.work / "no.json"),
        ],
        r"no.json: no such keypair file",
    ),
    "keypair default absent": (
        lambda ctx: ["publish", str(ctx.art()), "-u", ctx.world.url],
        r"\.config/solana/id.json: no such keypair file",
    ),
    # -- the Solana CLI config ----------------------------------------------------------------
    "config is a folder": (
        bad_config(None),
        r"config.yml: cannot read the Solana CLI config: ",
    ),
    "config not UTF-8": (
        bad_config(b"json_rpc_url: \xff\xfe\n"),
        r"config.yml: cannot read the Solana CLI config: ",
    ),
    "config malformed line": (
        bad_config(b"json_rpc_url=http://127.0.0.1:8899\n"),
        r"config.yml:1: expected 'key: value', found 'json_rpc_url=http://127.0.0.1:8899'",
    ),
    "config bad commitment": (
        bad_config(b"commitment: final\n", where="home"),
        r"commitment 'final': expected one of processed, confirmed, finalized",
    ),
    "config bad URL": (
        bad_config(b"json_rpc_url: localhostt\n", where="home"),
        r"--url 'localhostt': expected localhost, devnet, testnet, mainnet-beta or an http",
    ),
    # -- URLs and options ---------------------------------------------------------------------
    "url scheme": (
        with_url("ftp://127.0.0.1:8899"),
        r"--url 'ftp://127.0.0.1:8899': expected localhost, devnet",
    ),
    "url without host": (with_url("http://"), r"--url 'http://': expected"),
    "url https to a node that speaks HTTP": (
        lambda ctx: with_url(ctx.world.url.replace("http://", "https://"))(ctx),
        r"https://127.0.0.1:\d+: the node speaks HTTP, not HTTPS: try http://127.0.0.1:\d+$",
    ),
    "url port": (
        with_url("http://127.0.0.1:88a9"),
        r"--url 'http://127.0.0.1:88a9': malformed port",
    ),
    "url nobody listens": (
        with_url("http://127.0.0.1:9", "--rpc-timeout", "0.5"),
        r"http://127.0.0.1:9: connection refused: no RPC node is listening there",
    ),
    "rpc timeout zero": (
        lambda ctx: ctx.chain("publish", ctx.art(), "--rpc-timeout", "0"),
        r"--rpc-timeout 0.0: expected a positive number of seconds",
    ),
    "compute unit price negative": (
        lambda ctx: ctx.chain("publish", ctx.art(), "--with-compute-unit-price", "-1"),
        r"--with-compute-unit-price -1: expected a count 0 to 18446744073709551615",
    ),
    "rpc rate zero": (
        lambda ctx: ctx.chain("publish", ctx.art(), "--rpc-rps", "0"),
        r"--rpc-rps 0.0: expected a positive number of calls a second",
    ),
    "rpc batch zero": (
        lambda ctx: ctx.chain("seal", ctx.world.not_a_model, "--rpc-batch", "0"),
        r"--rpc-batch 0: expected a count of calls 1 to 10000",
    ),
    "compute unit price neither auto nor a count": (
        lambda ctx: ctx.chain("publish", ctx.art(), "--with-compute-unit-price", "high"),
        r"--with-compute-unit-price high: expected a count 0 to 18446744073709551615, or auto",
    ),
    "compute unit price cap without a price": (
        lambda ctx: ctx.chain("publish", ctx.art(), "--max-compute-unit-price", "10"),
        r"--max-compute-unit-price caps --with-compute-unit-price \(auto or a price\): give one",
    ),
    "compute unit price over its cap": (
        lambda ctx: ctx.chain(
            "publish",
            ctx.art(),
            "--with-compute-unit-price",
            "1001",
            "--max-compute-unit-price",
            "1000",
        ),
        r"--with-compute-unit-price 1,001 is above --max-compute-unit-price 1,000: nothing was "
        r"sent",
    ),
    "compute unit price over u64": (
        lambda ctx: ctx.chain("seal", ctx.world.not_a_model, "--with-compute-unit-price", 2**64),
        r"--with-compute-unit-price 18446744073709551616: expected a count 0 to",
    ),
    "program id": (
        lambda ctx: ctx.chain("publish", ctx.art(), "--program-id", "curta"),
        r"--program-id 'curta': not a base58 Solana address",
    ),
    "airdrop zero": (
        lambda ctx: ctx.chain("airdrop", "0"),
        r"airdrop 0.0: expected a positive amount of SOL, 1 to 18,446,744,073,709,551,615 lamp",
    ),
    "airdrop infinite": (
        lambda ctx: ctx.chain("airdrop", "inf"),
        r"airdrop inf: expected a positive amount of SOL",
    ),
    "airdrop over u64 lamports": (
        lambda ctx: ctx.chain("airdrop", "2e10"),
        r"airdrop 20000000000.0: expected a positive amount of SOL",
    ),
    "airdrop under a lamport": (
        lambda ctx: ctx.chain("airdrop", "1e-12"),
        r"airdrop 1e-12: expected a positive amount of SOL",
    ),
    "airdrop on mainnet-beta, known by its genesis hash": (
        lambda ctx: ctx.chain("airdrop", "1", url=ctx.world.mainnet_url),
        r"http://127.0.0.1:\d+ is mainnet-beta \(by its genesis hash\): it has no faucet$",
    ),
    # -- model addresses ----------------------------------------------------------------------
    "model not base58": (
        lambda ctx: ctx.chain("seal", "0OIl"),
        r"model '0OIl': not a base58 Solana address",
    ),
    "model is a wallet": (
        lambda ctx: ctx.chain("seal", ctx.world.payer.pubkey()),
        rf"is not a curta model: owned by {SYSTEM}, expected {LOCALNET_PROGRAM_ID}",
    ),
    "model holds zeros": (
        lambda ctx: ctx.chain("close", ctx.world.not_a_model),
        r"is not a curta model: model account: discriminator 0000000000000000 at offset 0",
    ),
    "model is the program": (
        lambda ctx: ctx.chain("verify", LOCALNET_PROGRAM_ID, ctx.art(), keypair=False),
        rf"{LOCALNET_PROGRAM_ID} is not a curta model: owned by ",
    ),
    "model does not exist": (
        lambda ctx: ctx.chain("close", Keypair().pubkey()),
        r": no such account on http://127.0.0.1:\d+",
    ),
    # -- the program a command trusts -----------------------------------------------------
    "trust a wallet as the program": (
        lambda ctx: ctx.chain("publish", ctx.art(), "--program-id", ctx.world.payer.pubkey()),
        r"program \w+ is not an executable program \(owned by the System Program: a wallet\); "
        r"deploy the shipped program with `curta-chain deploy`, or pass --program-id ADDRESS",
    ),
    "trust a program id with no account": (
        lambda ctx: ctx.chain(
            "status", Keypair().pubkey(), "--program-id", Keypair().pubkey(), keypair=False
        ),
        r"program \w+: no such account on http://127.0.0.1:\d+; deploy the shipped program",
    ),
    "trust a stand-in program": (
        lambda ctx: ctx.chain(
            "seal", Keypair().pubkey(), "--program-id", ctx.world.standin.pubkey()
        ),
        rf"holds {len(STANDIN.elf):,} bytes with sha256 {STANDIN.sha256}, not a build shipped "
        r"with curta-chain \(sbpf-v0 [0-9a-f]{64}, sbpf-v3 [0-9a-f]{64}\); "
        r"refusing it \(--program-hash names a build",
    ),
    "trust a stand-in named in the config": (
        lambda ctx: ctx.chain("close", Keypair().pubkey(), "-C", ctx.config_naming_standin()),
        rf"sha256 {STANDIN.sha256}, not a build shipped .*\(program id from curta_program_ids in "
        r".*config.yml\)$",
    ),
    "trust no program id off the localnet": (
        lambda ctx: ctx.chain("publish", ctx.art(), url=ctx.world.devnet_url),
        rf"no curta program is known for the cluster at http://127.0.0.1:\d+ \(genesis "
        rf"{DEVNET_GENESIS}; it runs on this machine, but no `curta-chain localnet` of this "
        r"user recorded its genesis hash, so it is treated as a real cluster\): deploy one "
        r"with `curta-chain deploy -u http://127.0.0.1:\d+`, or pass --program-id ADDRESS",
    ),
    "trust a builtin as the program": (
        lambda ctx: ctx.chain("close", Keypair().pubkey(), "--program-id", SYSTEM),
        rf"program {SYSTEM} is owned by NativeLoader1111111111111111111111111111111, not by a BPF "
        r"loader curta-chain checks",
    ),
    "trust a malformed program hash": (
        lambda ctx: ctx.chain("seal", ctx.world.not_a_model, "--program-hash", "ab"),
        r"--program-hash 'ab': expected a SHA-256 as 64 hex digits",
    ),
    "trust a malformed cross-check URL": (
        lambda ctx: ctx.chain(
            "verify", ctx.world.not_a_model, ctx.art(), "--cross-check", "ftp://x", keypair=False
        ),
        r"--cross-check 'ftp://x': expected localhost, devnet, testnet, mainnet-beta or an http",
    ),
    "trust a cross-check of the same node": (
        lambda ctx: ctx.chain(
            "verify",
            ctx.world.not_a_model,
            ctx.art(),
            "--cross-check",
            ctx.world.url,
            keypair=False,
        ),
        r"--cross-check http://127.0.0.1:\d+: that is the node -u reads \(http://127.0.0.1:\d+\); "
        r"a cross-check reads every account again from a second, independent node",
    ),
    "trust a cross-check of the same node by another name": (
        lambda ctx: ctx.chain(
            "verify",
            ctx.world.not_a_model,
            ctx.art(),
            "--cross-check",
            ctx.world.url.replace("127.0.0.1", "localhost") + "/",
            keypair=False,
        ),
        r"--cross-check http://localhost:\d+/: that is the node -u reads \(http://127.0.0.1:\d+\)",
    ),
    # -- spending (with --output json: the plan and its cost are not printed) --------------
    "spend with no terminal off the localnet": (
        lambda ctx: ctx.chain(
            "publish",
            ctx.art(),
            "--program-id",
            LOCALNET_PROGRAM_ID,
            "--output",
            "json",
            url=ctx.world.devnet_url,
        ),
        r"http://127.0.0.1:\d+ is not a localnet and there is no terminal to confirm spending "
        r"2.52\d+ SOL on publishing \w+: pass --yes to spend it; nothing was sent",
    ),
    "spend what a node inflates": (
        lambda ctx: ctx.chain("publish", ctx.art(), url=ctx.world.greedy_url),
        r"http://127.0.0.1:\d+ asks [\d,]+ lamports to make [\d,]+ bytes rent-exempt; the "
        r"runtime's formula gives [\d,]+: refusing a node that asks for more; nothing was sent",
    ),
    "spend more than the payer has on a deploy": (
        lambda ctx: [
            *ctx.chain("deploy", "-C", ctx.work / "config.yml", "--output", "json", keypair=False),
            "-k",
            str(ctx.file("poor.json", json.dumps(list(bytes(Keypair()))).encode())),
        ],
        r"payer \w+ has 0.000000000 SOL; deploying needs 0\.\d+ SOL \(short by 0\.\d+ "
        r"SOL\); nothing was sent",
    ),
    "spend more than the payer has, in a deploy dry run": (
        lambda ctx: [
            *ctx.chain(
                "deploy", "--dry-run", "-C", ctx.work / "c.yml", "--output", "json", keypair=False
            ),
            "-k",
            str(ctx.file("poor.json", json.dumps(list(bytes(Keypair()))).encode())),
        ],
        r"payer \w+ has 0.000000000 SOL; deploying needs 0\.\d+ SOL \(short by 0\.\d+ "
        r"SOL\); nothing was sent$",
    ),
    "spend more than the payer has, in a publish dry run": (
        lambda ctx: [
            *ctx.chain("publish", ctx.art(), "--dry-run", "--output", "json", keypair=False),
            "-k",
            str(ctx.file("poor.json", json.dumps(list(bytes(Keypair()))).encode())),
        ],
        r"payer \w+ has 0.000000000 SOL; publishing costs 2\.\d+ SOL \(short by 2\.\d+ "
        r"SOL\); nothing was sent$",
    ),
    # -- deploy ---------------------------------------------------------------------------
    "deploy with a missing program keypair": (
        lambda ctx: ctx.chain("deploy", "--program-keypair", ctx.work / "absent.json"),
        r"absent.json: no such keypair file",
    ),
    "deploy where someone else's buffer is": (
        lambda ctx: (ctx.payers_buffer_taken(), ctx.chain("deploy", "-C", ctx.work / "c.yml"))[1],
        r"buffer \w+ holds [\d,]+ bytes owned by BPFLoaderUpgradeab1e11111111111111111111111, not "
        r"a [\d,]+-byte buffer of \w+ for this build; close it with `solana program close \w+`",
    ),
    "deploy --final over someone else's upgrade authority": (
        lambda ctx: ctx.chain(
            "deploy",
            "--final",
            "--program-keypair",
            ctx.program_keypair(ctx.world.foreign),
            "-C",
            ctx.work / "c.yml",
        ),
        r"program \w+ can be upgraded by \w+, not by \w+: only \w+ can make it final",
    ),
    "deploy onto another program": (
        lambda ctx: ctx.chain(
            "deploy", "--program-keypair", ctx.standin_keypair(), "-C", ctx.work / "c.yml"
        ),
        rf"program \w+ already holds other bytes \(sha256 {STANDIN.sha256}\); deploy to "
        r"another address with --program-keypair",
    ),
}


ROWS = {
    "artifact": "bad input: a malformed artifact (every header field, tables, length, path)",
    "checkpoint": "bad input: a bad llama2.c checkpoint or tokenizer, or output folder",
    "tokenizer": "bad input: a bad llama2.c checkpoint or tokenizer, or output folder",
    "convert": "bad input: a bad llama2.c checkpoint or tokenizer, or output folder",
    "tezw": "bad input: a bad TEZW file",
    "keypair": "bad input: a keypair file that is not a keypair",
    "config": "bad input: an unreadable or malformed Solana CLI config",
    "url": "bad input: a bad URL or option value",
    "rpc": "bad input: a bad URL or option value",
    "compute": "bad input: a bad URL or option value",
    "program": "bad input: a bad URL or option value",
    "airdrop": "bad input: a bad URL or option value",
    "model": "bad input: a model address that is not a model",
    "trust": "bad input: a program id that is not a shipped build, or none off the localnet",
    "spend": "bad input: spending unconfirmed, inflated by the node, or beyond the payer",
    "deploy": "bad input: a deploy onto another program or with a missing keypair",
}
"""docs/reliability.md's table rows (scripts/reliability_report.py), by the first word of a case."""


@pytest.fixture(scope="module")
def world(stories260k: Artifact, stories260k_bytes: bytes, tok512_bytes: bytes) -> Iterator[World]:
    handle: LocalnetHandle = start_in_thread(deactivate_features=V0_DEPLOYS)
    proxies: list[FaultProxy] = []
    try:
        client = Client(handle.url)
        payer = Keypair()
        airdrop = client.request_airdrop(payer.pubkey(), 10 * LAMPORTS_PER_SOL).value
        client.confirm_transaction(airdrop, Confirmed)
        holder = Keypair()
        rent = client.get_minimum_balance_for_rent_exemption(MODEL_ACCOUNT_SIZE).value
        create = create_account(
            CreateAccountParams(
                from_pubkey=payer.pubkey(),
                to_pubkey=holder.pubkey(),
                lamports=rent,
                space=MODEL_ACCOUNT_SIZE,
                owner=PROGRAM_ID,
            )
        )
        blockhash = client.get_latest_blockhash().value.blockhash
        tx = Transaction.new_signed_with_payer([create], payer.pubkey(), [payer, holder], blockhash)
        client.confirm_transaction(client.send_transaction(tx).value, Confirmed)
        standin, foreign = Keypair(), Keypair()
        deploy_program(handle.url, payer, STANDIN, standin)
        other = Keypair()
        airdrop = client.request_airdrop(other.pubkey(), 10 * LAMPORTS_PER_SOL).value
        client.confirm_transaction(airdrop, Confirmed)
        deploy_program(handle.url, other, CURTA, foreign)  # other is its upgrade authority
        airdrop = client.request_airdrop(payer.pubkey(), 10 * LAMPORTS_PER_SOL).value
        client.confirm_transaction(airdrop, Confirmed)
        for edits in (
            {"getGenesisHash": lambda _: DEVNET_GENESIS},
            {"getMinimumBalanceForRentExemption": lambda lamports: lamports * 300},
            {"getGenesisHash": lambda _: MAINNET_GENESIS},
        ):
            proxies.append(FaultProxy(handle.url, edits=edits).start())
        yield World(
            url=handle.url,
            genesis_hash=handle.genesis_hash,
            payer=payer,
            not_a_model=holder.pubkey(),
            artifact=stories260k.data,
            checkpoint=stories260k_bytes,
            tokenizer=tok512_bytes,
            standin=standin,
            foreign=foreign,
            devnet_url=proxies[0].url,
            greedy_url=proxies[1].url,
            mainnet_url=proxies[2].url,
        )
    finally:
        for proxy in proxies:
            proxy.stop()
        handle.stop()


def snapshot(folder: Path) -> dict[str, tuple[str, int, str]]:
    """Every entry under ``folder``: kind, mode and content digest (files)."""
    out = {}
    for path in sorted(folder.rglob("*")):
        stat = path.lstat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""
        out[str(path.relative_to(folder))] = (
            "file" if path.is_file() else "dir",
            stat.st_mode,
            digest,
        )
    return out


def chain_state(world: World) -> tuple[int, list[tuple[str, int, str]]]:
    """The payer's balance and every account the curta program owns (address, lamports, data).

    Read at "confirmed", where the world was set up: a finalized read would change under
    the test as the world's own transactions are finalized.
    """
    client = Client(world.url, "confirmed")
    balance = client.get_balance(world.payer.pubkey()).value
    accounts = client.get_program_accounts(PROGRAM_ID, encoding="base64").value
    owned = sorted(
        (str(a.pubkey), a.account.lamports, base64.b64encode(bytes(a.account.data)).decode())
        for a in accounts
    )
    return balance, owned


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_one_line_and_changes_nothing(case: str, world: World, tmp_path: Path):
    prepare, pattern = CASES[case]
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    ctx = Ctx(world, work, home)
    argv = prepare(ctx)
    files_before, chain_before = snapshot(tmp_path), chain_state(world)

    result = subprocess.run(
        [sys.executable, "-m", "curta_chain", *argv],
        capture_output=True,
        text=True,
        cwd=work,
        env={**os.environ, "HOME": str(home)},
        timeout=60,
    )

    assert result.returncode == 1, (result.returncode, result.stderr)
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    assert re.search(pattern, result.stderr), result.stderr
    assert snapshot(tmp_path) == files_before
    assert chain_state(world) == chain_before
    record(ROWS[case.split()[0]], lost_lamports=0, resent_bytes=0)


def test_the_catalogue_is_at_least_thirty_cases():
    assert len(CASES) >= 30


def test_an_inverse_square_root_one_unit_off_is_a_rounding_choice(stories260k: Artifact):
    # 1/sqrt(8) × 2^24 = 5,931,641.97...: a converter may store either neighbour.
    assert struct.unpack_from("<I", stories260k.data, 68) == (5_931_642,)
    for value in (5_931_641, 5_931_643):
        assert decode_artifact(patch(stories260k.data, 68, "<I", value)).inv_sqrt_head_size == value
    with pytest.raises(ArtifactError, match=r"header byte 68 .*: 5,931,644, expected 5,931,642"):
        decode_artifact(patch(stories260k.data, 68, "<I", 5_931_644))
