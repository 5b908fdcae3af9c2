"""On-chain inference's numbers, for scripts/bench_program_cu.py --inference.

- The matvec kernel in compute units per multiply-accumulate: ``programs/curta/src/matvec.c``
  compiled with the program's flags and linked with a harness entrypoint, run in LiteSVM
  on rows of 288 and 768 columns; the marginal cost of the rows added between two sizes.
- openRun, a step, closeRun, and the step transactions per token, from runs of the shipped
  program in LiteSVM, each step checked against the mirror (``onchain.mirror``).

The ratio printed beside CU/MAC is against 25 CU/MAC, a published Rust INT8 matvec's.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import struct
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from build_program import CFLAGS, CLANG, PROGRAM_DIR, WARNINGS
from sbpf_linker import link
from solders.account import Account
from solders.compute_budget import set_compute_unit_limit
from solders.instruction import AccountMeta, Instruction
from solders.keypair import Keypair
from solders.litesvm import LiteSVM
from solders.message import Message
from solders.pubkey import Pubkey
from solders.system_program import CreateAccountParams, TransferParams, create_account, transfer
from solders.transaction import Transaction

from curta_chain.artifact import Artifact, ModelConfig, weights_hash
from curta_chain.artifact.convert import convert_llama2c_bytes
from curta_chain.artifact.llama2c import HEADER_SIZE as LLAMA2C_HEADER_SIZE
from curta_chain.artifact.llama2c import parse_header, tensor_shapes
from curta_chain.artifact.synthetic import STORIES15M, llama2c_checkpoint_bytes
from curta_chain.constants import (
    HASH_CHUNK_SIZE,
    LOCALNET_PROGRAM_ID,
    MAX_COMPUTE_UNITS,
    WEIGHT_HEADER_SIZE,
)
from curta_chain.onchain.mirror import RunMirror
from curta_chain.onchain.run_account import (
    RUN_HEADER_SIZE,
    PromptKind,
    RunAccount,
    RunState,
    batch_lanes,
    run_account_size,
)
from curta_chain.onchain.schedule import STEP_BUDGET
from curta_chain.program import (
    MODEL_ACCOUNT_SIZE,
    PROGRAM_BINARY,
    ModelAccount,
    ModelState,
    SectionSlot,
    WeightHeader,
    begin_sealing,
    bind_weight_account,
    close_run,
    create_model,
    open_run,
    seal_step,
    step,
)

PROGRAM_ID = Pubkey.from_string(LOCALNET_PROGRAM_ID)
ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "llama2c"
PUBLISHED_RUST_CU_PER_MAC = 25
PROMPT_13 = b"Once upon a time there was a little girl named Lily"
"""A prompt of 13 tokens (the opening token included) in the Llama 2 vocabulary."""
HARNESS = r"""
typedef unsigned char uint8_t;
typedef unsigned long uint64_t;
typedef long int64_t;
typedef struct {
  const uint8_t *rows;
  uint64_t row_bytes;
  uint64_t count;
  uint64_t columns;
  uint64_t init;
} RowSpan;
void row_sums(const RowSpan *span, const uint64_t *x, uint64_t *out);
/* One account: [u64 rows][u64 row bytes][x: row bytes - 8 i64][the rows][rows i64 out]. */
uint64_t entrypoint(uint8_t *input) {
  uint8_t *data = input + 8 + 88;
  uint64_t rows = *(uint64_t *)data, row_bytes = *(uint64_t *)(data + 8);
  uint64_t *x = (uint64_t *)(data + 16);
  uint8_t *matrix = data + 16 + 8 * (row_bytes - 8);
  RowSpan span = {matrix + 8, row_bytes, rows, row_bytes - 8, 0};
  row_sums(&span, x, (uint64_t *)(matrix + rows * row_bytes));
  return 0;
}
"""


def kernel_program() -> bytes:
    """matvec.c and the harness, compiled with the program's flags and linked."""
    with tempfile.TemporaryDirectory(prefix="curta-kernel-") as tmp:
        harness = Path(tmp) / "harness.c"
        harness.write_text(HARNESS)
        objects = []
        for source in (PROGRAM_DIR / "src" / "matvec.c", harness):
            obj = Path(tmp) / (source.stem + ".o")
            subprocess.run(
                [CLANG, *CFLAGS, *WARNINGS, "-mcpu=v2", "-c", str(source), "-o", str(obj)],
                check=True,
            )
            objects.append(obj.read_bytes())
        return link(objects, ["matvec.c", "harness.c"])


def kernel_units(program: bytes, rows: int, columns: int, rng: np.random.Generator) -> int:
    """Compute units of one row_sums call over ``rows`` random rows (the result checked)."""
    row_bytes = -(-(columns + 8) // 8) * 8
    x = np.zeros(row_bytes - 8, np.int64)
    x[:columns] = rng.integers(-(2**31), 2**31, columns)
    matrix = np.full((rows, row_bytes), 128, np.uint8)
    matrix[:, :8] = 0
    matrix[:, 8 : 8 + columns] = rng.integers(1, 256, (rows, columns))
    data = struct.pack("<QQ", rows, row_bytes) + x.tobytes() + matrix.tobytes() + bytes(8 * rows)
    svm = LiteSVM()
    svm.add_program(PROGRAM_ID, program)
    account, payer = Pubkey.new_unique(), Keypair()
    svm.set_account(account, Account(10**9, data, PROGRAM_ID, False, 0))
    svm.airdrop(payer.pubkey(), 10**9)
    ix = Instruction(PROGRAM_ID, b"", [AccountMeta(account, False, True)])
    meta = svm.send_transaction(_tx(svm, payer, [set_compute_unit_limit(MAX_COMPUTE_UNITS), ix]))
    if hasattr(meta, "err"):
        raise RuntimeError(f"kernel harness failed: {meta.err()}")
    out = np.frombuffer(bytes(svm.get_account(account).data)[-8 * rows :], np.int64)
    want = (matrix[:, 8:].astype(np.int64) * x[None, :]).sum(axis=1)
    if not (out == want).all():
        raise RuntimeError("the kernel's sums differ from numpy's")
    return meta.compute_units_consumed() - 150  # the compute-budget instruction


def kernel_rows() -> list[tuple[str, float]]:
    """Marginal compute units per MAC of the kernel, for rows of 288 and 768 columns."""
    program, rng, out = kernel_program(), np.random.default_rng(1), []
    for columns in (288, 768):
        low, high = 96, 288
        extra = kernel_units(program, high, columns, rng) - kernel_units(program, low, columns, rng)
        label = f"matvec kernel, {columns} columns (marginal)"
        out.append((label, extra / ((high - low) * columns)))
    return out


def _tx(svm: LiteSVM, payer: Keypair, ixs: list[Instruction], signers=()) -> Transaction:
    return Transaction([payer, *signers], Message(ixs, payer.pubkey()), svm.latest_blockhash())


@dataclass
class _Chain:
    svm: LiteSVM
    payer: Keypair
    model: Pubkey
    weights: list[Pubkey]

    logs: list[list[str]] = dataclasses.field(default_factory=list)

    @classmethod
    def sealed(cls, artifact: Artifact, program: bytes | None = None) -> _Chain:
        """A LiteSVM with the program and ``artifact`` installed as a sealed model."""
        svm = LiteSVM()
        svm.add_program(PROGRAM_ID, program or PROGRAM_BINARY.read_bytes())
        payer, model = Keypair(), Pubkey.new_unique()
        svm.airdrop(payer.pubkey(), 10**13)
        weights = [Pubkey.new_unique() for _ in artifact.sections]
        for index, (key, section) in enumerate(zip(weights, artifact.sections, strict=True)):
            header = WeightHeader(model, payer.pubkey(), index, True, len(section)).to_bytes()
            _set(svm, key, header + section)
        declared = weights_hash(artifact.sections)
        count = len(artifact.sections)
        chunks = sum(-(-len(s) // HASH_CHUNK_SIZE) for s in artifact.sections)
        lengths = [len(s) for s in artifact.sections]
        slots = tuple(SectionSlot(k, n) for k, n in zip(weights, lengths, strict=True))
        account = ModelAccount(
            payer.pubkey(), declared, declared, ModelState.SEALED, count, count, count,
            count, 0, chunks, slots, 1,
        )  # fmt: skip
        _set(svm, model, account.to_bytes())
        return cls(svm, payer, model, weights)

    def send(self, ixs: list[Instruction], signers=()) -> int:
        meta = self.svm.send_transaction(_tx(self.svm, self.payer, ixs, signers))
        if hasattr(meta, "err"):
            raise RuntimeError(f"{meta.err()}: {meta.meta().logs()[-3:]}")
        self.logs.append(list(meta.logs()))
        return meta.compute_units_consumed() - 150


def _set(svm: LiteSVM, key: Pubkey, data: bytes) -> None:
    lamports = svm.minimum_balance_for_rent_exemption(len(data))
    svm.set_account(key, Account(lamports, data, PROGRAM_ID, False, 0))


@dataclass
class RunStats:
    """One run: openRun's units, each step's units and position, closeRun's units."""

    open_units: int
    steps: list[tuple[int, int, int]]  # (position before, units, tokens chosen)
    close_units: int
    prompt_tokens: int
    classifier_mac_units: float


def run_stats(
    artifact: Artifact,
    prompt: bytes | list[int],
    capacity: int,
    position: int = 0,
    program: bytes | None = None,
    logs: list[list[str]] | None = None,
    sampling: tuple[int, int, int] = (0, 0, 0),
) -> RunStats:
    """Open a run, crank it with the mirror checking every step, close it.

    With ``position``, the run (opened from that many + 1 token ids) is first moved there,
    its earlier keys and values left zero: a step's slices depend on the position, not on
    the values, so the token computed there takes the steps and units it would in a run.
    With ``program`` (another build) and ``logs``, each step's log lines are appended there.
    ``sampling`` is (temperature, top-p, seed), Q16 as openRun takes them (greedy by default).
    """
    chain = _Chain.sealed(artifact, program)
    run, open_units = _open_run(chain, artifact, prompt, capacity, sampling)
    data = bytes(chain.svm.get_account(run.pubkey()).data)
    if position:
        header = dataclasses.replace(RunAccount.from_bytes(data), position=position)
        data = header.to_bytes() + data[RUN_HEADER_SIZE:]
        _set(chain.svm, run.pubkey(), data)
    mirror = RunMirror(artifact, data)
    steps, classifier = [], []
    classifier_phase = 2 + 9 * artifact.config.n_layers
    while mirror.header.state != RunState.FINISHED:
        before = mirror.header
        plan = mirror.plan()
        keys = [chain.weights[0], *(chain.weights[i] for i in plan.sections)]
        ix = step(PROGRAM_ID, run.pubkey(), chain.model, keys, before.steps)
        units = chain.send([set_compute_unit_limit(MAX_COMPUTE_UNITS), ix])
        if logs is not None:
            logs.append(chain.logs[-1])
        mirror.advance(plan)
        mirror.compare(bytes(chain.svm.get_account(run.pubkey()).data), before)
        steps.append((before.position, units, len(plan.logged)))
        after = mirror.header
        if before.phase == after.phase == classifier_phase and after.cursor > before.cursor:
            classifier.append(units / ((after.cursor - before.cursor) * artifact.config.dim))
    close_units = chain.send([close_run(PROGRAM_ID, chain.payer.pubkey(), run.pubkey())])
    prompt_tokens = mirror.header.prompt_tokens
    mac = float(np.median(classifier)) if classifier else float("nan")
    return RunStats(open_units, steps, close_units, prompt_tokens, mac)


def stories260k() -> Artifact:
    """stories260K with the first 512 entries of the Llama 2 tokenizer (tests/conftest.py)."""
    tokenizer = (DATA / "tokenizer.bin").read_bytes()
    pos = 4
    for _ in range(512):
        pos += 8 + struct.unpack_from("<I", tokenizer, pos + 4)[0]
    checkpoint = (DATA / "stories260K.bin").read_bytes()
    return convert_llama2c_bytes(checkpoint, tokenizer[:pos], "stories260K.bin", "tok512.bin")


def stories15m() -> Artifact:
    """A stories15M-shaped checkpoint (synthetic weights) with the real 32,000 tokens."""
    checkpoint = llama2c_checkpoint_bytes(STORIES15M, seed=15)
    tokenizer = (DATA / "tokenizer.bin").read_bytes()
    return convert_llama2c_bytes(checkpoint, tokenizer, "stories15M-shaped", "tokenizer.bin")


def loud(checkpoint: bytes, tokenizer: bytes, norm_gain: float, weight_gain: float = 1) -> Artifact:
    """A llama2.c checkpoint's artifact with its normalization weights times ``norm_gain`` and
    its matrices times ``weight_gain``: large activations (a batch's plan then cuts its
    columns into several segments, or runs them plain) and, loud enough, saturated ones."""
    config, shared = parse_header(checkpoint, "checkpoint")
    values = np.frombuffer(checkpoint, "<f4", offset=LLAMA2C_HEADER_SIZE).copy()
    at = 0
    for name, shape in tensor_shapes(config, shared):
        size = int(np.prod(shape))
        if "normalization" in name:
            values[at : at + size] *= norm_gain
        elif name != "rotary tables":
            values[at : at + size] *= weight_gain
        at += size
    louder = checkpoint[:LLAMA2C_HEADER_SIZE] + values.tobytes()
    return convert_llama2c_bytes(louder, tokenizer, "a loud checkpoint", "tokenizer")


def loud_stories15m(norm_gain: float, weight_gain: float = 1) -> Artifact:
    """``stories15m``, loud (``loud``)."""
    tokenizer = (DATA / "tokenizer.bin").read_bytes()
    return loud(llama2c_checkpoint_bytes(STORIES15M, seed=15), tokenizer, norm_gain, weight_gain)


def per_token(stats: RunStats) -> list[int]:
    """Step transactions of each generated token (the position that chose it)."""
    counts: dict[int, int] = {}
    for position, _, _ in stats.steps:
        if position >= stats.prompt_tokens - 1:
            counts[position] = counts.get(position, 0) + 1
    return list(counts.values())


Table = tuple[list[str], list[list[str]]]
"""A table's header and its rows, each cell formatted as docs/numbers.md shows it."""


def _mean_transactions(stats: RunStats) -> tuple[list[int], float]:
    """Step transactions of each generated token, and the compute units a token."""
    counts = per_token(stats)
    units = sum(u for p, u, _ in stats.steps if p >= stats.prompt_tokens - 1)
    return counts, units / len(counts)


def inference_tables() -> dict[str, Table]:
    """Run the kernel and the models; the matvec, instruction and per-token tables.

    Keyed by their docs/numbers/ benchmark: inference_cu_matvec, inference_cu_instructions,
    inference_cu_tokens.
    """
    (_, k288), (_, k768) = kernel_rows()
    tiny = stories260k()
    small = run_stats(tiny, b"Once upon a time", 18 + 32)
    small_late = {p: run_stats(tiny, [1] * (p + 1), p + 2, position=p) for p in (255, 510)}
    model = stories15m()
    large = run_stats(model, [1], 2)
    late = {p: run_stats(model, [1] * (p + 1), p + 2, position=p) for p in (127, 254)}
    rust = PUBLISHED_RUST_CU_PER_MAC
    mac = large.classifier_mac_units
    matvec = [
        [
            "the kernel, rows of 288 / 768 columns (marginal, built from `src/matvec.c`)",
            f"**{k288:.2f}** / {k768:.2f}",
            f"{rust / k288:.1f}× fewer",
        ],
        [
            "a whole classifier step of the program (scales, stores, checks included)",
            f"{mac:.2f}",
            f"{rust / mac:.1f}× fewer",
        ],
    ]
    runs = [small, *small_late.values(), large, *late.values()]
    largest = max(u for stats in runs for _, u, _ in stats.steps)
    instructions = [
        [
            "openRun, stories260K / stories15M-shaped (tokenizer and tables checked)",
            f"{small.open_units:,} / {large.open_units:,}",
        ],
        [f"step, largest (budget {STEP_BUDGET:,} estimated)", f"{largest:,}"],
        ["closeRun", f"{small.close_units:,}"],
    ]
    counts, units = _mean_transactions(small)
    tokens = [
        [
            f"stories260K, {len(counts)} tokens after a prompt of {small.prompt_tokens} tokens",
            f"max **{max(counts)}**, mean {np.mean(counts):.2f}",
            f"{units / 1e6:.2f} M",
        ]
    ]
    for name, group, bold in (
        ("stories260K", small_late, False),
        ("stories15M-shaped", {0: large, **late}, True),
    ):
        each = [_mean_transactions(stats) for stats in group.values()]
        shown = [f"{max(c)}" for c, _ in each]
        if bold:
            shown[0] = f"**{shown[0]}**"
        tokens.append(
            [
                f"{name}, the token at position {' / '.join(map(str, group))}",
                " / ".join(shown),
                " / ".join(f"{u / 1e6:.3g} M" for _, u in each),
            ]
        )
    return {
        "inference_cu_matvec": (
            ["matvec", "CU per multiply-accumulate", f"vs {rust} (a published Rust INT8 matvec)"],
            matvec,
        ),
        "inference_cu_instructions": (["instruction", "CU"], instructions),
        "inference_cu_tokens": (
            ["model", "step transactions per token", "CU per token"],
            tokens,
        ),
    }


PROMPT_IDS = [1, *range(300, 312)]
"""Thirteen token ids every vocabulary here has (stories260K's is 512)."""
GENERATED = 9


def macs_a_token(config: ModelConfig) -> int:
    """A generated token's multiply-accumulates: every layer's matrices, then the classifier."""
    dim, kv, hidden = config.dim, config.kv_dim, config.hidden_dim
    layer = dim * (2 * dim + 2 * kv) + 3 * dim * hidden
    return config.n_layers * layer + config.vocab_size * dim


def run_figures(artifact: Artifact) -> list[float]:
    """A greedy 13-token prompt, then 1 and 9 new tokens: the step transactions a prompt
    position takes (those before the last, two a batch), those a generated token takes and
    its compute units a MAC (the 9-token run less the 1-token one, over 8 tokens)."""
    one = run_stats(artifact, PROMPT_IDS, len(PROMPT_IDS) + 1)
    nine = run_stats(artifact, PROMPT_IDS, len(PROMPT_IDS) + GENERATED)
    prompt = sum(1 for position, _, _ in one.steps if position < len(PROMPT_IDS) - 1)
    tokens = GENERATED - 1
    units = sum(u for _, u, _ in nine.steps) - sum(u for _, u, _ in one.steps)
    return [
        prompt / (len(PROMPT_IDS) - 1),
        (len(nine.steps) - len(one.steps)) / tokens,
        units / tokens / macs_a_token(artifact.config),
    ]


def runs_table() -> Table:
    """Per model, a 13-token prompt and 9 new tokens: transactions and units (``run_figures``)."""
    rows = []
    for name, artifact in (("stories15M-shaped", stories15m()), ("stories260K", stories260k())):
        prompt, token, mac = run_figures(artifact)
        rows.append([name, f"**{prompt:.2f}**", f"**{token:.2f}**", f"**{mac:.3f}**"])
    columns = [
        "model (greedy, a 13-token prompt, 9 new tokens)",
        "step transactions a prompt position",
        "a generated token",
        "CU per MAC over a generated token",
    ]
    return columns, rows


def print_inference(record_them: bool = False) -> None:
    """Print the inference tables; with ``record_them``, append them to docs/numbers/."""
    tables = {**inference_tables(), "inference_cu_runs": runs_table()}
    for columns, rows in tables.values():
        print("\n| " + " | ".join(columns) + " |")
        print("| --- |" + " ---: |" * (len(columns) - 1))
        for row in rows:
            print("| " + " | ".join(row) + " |")
    digest = hashlib.sha256(PROGRAM_BINARY.read_bytes()).hexdigest()[:16]
    print(f"(program sha256 {digest}...; measured in solders' LiteSVM)")
    if not record_them:
        return
    from numbers_page import record

    command = ".venv/bin/python scripts/bench_program_cu.py --inference --record"
    titles = {
        "inference_cu_matvec": "Inference on chain: the matrix kernel",
        "inference_cu_instructions": "Inference on chain: the run's instructions",
        "inference_cu_tokens": "Inference on chain: transactions and units a token",
        "inference_cu_runs": "Inference on chain: a prompt read in batches, then new tokens",
    }
    summaries = {
        "inference_cu_matvec": "In solders' LiteSVM, the program's build (sha256 "
        f"`{digest}`...); compute units do not depend on the machine. Every step checked "
        "against the mirror (`onchain.mirror`).",
        "inference_cu_instructions": "",
        "inference_cu_tokens": "stories260K with its real weights; the stories15M shape with "
        "synthetic weights and the real 32,000-token vocabulary. A late token: the run moved "
        "to that position, its earlier keys and values left zero (a step's slices depend on "
        "the position, not the values).",
        "inference_cu_runs": "Token ids 1 and 300 to 311, greedy. A prompt position: the steps "
        "before the prompt's last position (its positions two at a time, a batch each), over "
        "its 12 positions. A generated token: the run with 9 new tokens less the one with 1, "
        "over 8 tokens; its compute units over its multiply-accumulates (15,187,968 on the "
        "stories15M shape).",
    }
    notes = {
        "inference_cu_tokens": "Attention grows with the position; on stories260K (head size 8) "
        "it outweighs the matrices late in its 512-token context."
    }
    for bench, (columns, rows) in tables.items():
        record(
            bench,
            titles[bench],
            command,
            columns,
            rows,
            summaries[bench],
            notes.get(bench, ""),
        )


LOG_CALL_UNITS = 100
"""What one sol_log_compute_units_ costs: taken off each phase's measured span."""
_REMAINING = re.compile(r"Program consumption: (\d+) units remaining")
_LAYER_PHASES = ("norm", "qkv rows", "rotary", "attention", "output rows", "norm",
                 "gate/up rows", "SwiGLU", "down rows")  # fmt: skip


def _phase_kind(state: int, sample_pass: int, phase: int, layers: int, batch: bool) -> str:
    if state == 0:
        return ("tokenizer characters", "tokenizer pairs", "tokenizer merges")[min(phase, 2)]
    if phase == 0:
        return "embedding"
    if phase <= 9 * layers:
        kind = _LAYER_PHASES[(phase - 1) % 9]
        return f"{kind}, batch of two" if batch else kind
    kind = ("norm", "classifier rows", "sampling")[min(phase - 1 - 9 * layers, 2)]
    return f"{kind} pass {sample_pass}" if kind == "sampling" else kind


def calibration_ratios(
    logs: list[list[str]], layers: int, prompt_tokens: int
) -> dict[str, tuple[float, int]]:
    """Per phase kind: the largest real / estimated compute units, and how many phases.

    The calibration build logs, around every phase a step runs, the compute units left
    (before and after) and its state, phase and estimate, then a batch's plan (step.c,
    ``CALIBRATE``).
    """
    out: dict[str, tuple[float, int]] = {}
    for lines in logs:
        left: list[int] = []  # a phase that did not fit logs the first count only
        plan_next = False  # each phase's line is followed by its plan's
        for line in lines:
            if m := _REMAINING.match(line):
                left.append(int(m.group(1)))
            elif line.startswith("Program log: 0x") and (plan_next := not plan_next):
                packed, phase, _, _, estimate = (
                    int(v, 16) for v in line.split(": ")[1].split(", ")
                )
                real = left[-2] - left[-1] - LOG_CALL_UNITS
                state, position = (packed >> 8) & 0xFF, packed >> 16
                batch = state == 1 and batch_lanes(position, prompt_tokens) == 2
                kind = _phase_kind(state, packed & 0xFF, phase, layers, batch)
                ratio, count = out.get(kind, (0.0, 0))
                out[kind] = (max(ratio, real / estimate), count + 1)
    return out


def step_overheads(program: bytes, artifact: Artifact) -> dict[int, int]:
    """A run's first step, on the calibration build, with the sections it reads and with all:
    per count of accounts named, the step's units besides its phases' (at most: the logging's
    own bookkeeping is counted in)."""
    out = {}
    for every in (False, True):
        chain = _Chain.sealed(artifact, program)
        run, _ = _open_run(chain, artifact, [1, 300], 3, (0, 0, 0))
        mirror = RunMirror(artifact, bytes(chain.svm.get_account(run.pubkey()).data))
        sections = range(1, len(chain.weights)) if every else mirror.plan().sections
        keys = [chain.weights[0], *(chain.weights[i] for i in sections)]
        ix = step(PROGRAM_ID, run.pubkey(), chain.model, keys, 0)
        units = chain.send([set_compute_unit_limit(MAX_COMPUTE_UNITS), ix])
        lines = chain.logs[-1]
        counts = [int(m.group(1)) for line in lines if (m := _REMAINING.match(line))]
        phases = sum(
            counts[i] - counts[i + 1] - LOG_CALL_UNITS for i in range(0, len(counts) - 1, 2)
        )
        logs = len(counts) + sum(1 for line in lines if line.startswith("Program log: 0x"))
        out[2 + len(keys)] = units - phases - LOG_CALL_UNITS * logs
    return out


def print_calibration() -> int:
    """Build with -DCALIBRATE, run both models (greedy, sampled, late, loud), print the ratios.

    Returns 1 when a phase ever cost more than its estimate: the cost model needs a refit.
    """
    from build_program import build_one

    from curta_chain.program import BUILDS

    program, _ = build_one(BUILDS[0], ("-DCALIBRATE",))  # the v0 build the localnet runs
    ratios: dict[str, tuple[float, int]] = {}
    small, large, nucleus, greedy = stories260k(), stories15m(), (58_982, 58_982, 7), (0, 0, 0)
    for artifact, prompt, capacity, sampling, position in (
        (small, b"Once upon a time there was a little girl", 80, greedy, 0),
        (small, b"Once upon a time", 40, nucleus, 0),
        (small, [1] * 511, 512, greedy, 510),  # attention at the end of the context
        (large, b"Once upon a time", 8, greedy, 0),
        (large, PROMPT_13, 14, greedy, 0),  # batches of two through the prompt
        (large, [1], 3, nucleus, 0),
        (large, [1] * 255, 256, greedy, 254),
        (loud_stories15m(64, 100), [1, 300, 400], 5, nucleus, 0),  # plain, saturated rows
    ):
        logs: list[list[str]] = []
        stats = run_stats(artifact, prompt, capacity, position, program, logs, sampling)
        layers = artifact.config.n_layers
        for kind, (ratio, count) in calibration_ratios(logs, layers, stats.prompt_tokens).items():
            old_ratio, old_count = ratios.get(kind, (0.0, 0))
            ratios[kind] = (max(old_ratio, ratio), old_count + count)
    print("\n| phase | phases measured | largest real / estimated compute units |")
    print("| --- | ---: | ---: |")
    for kind, (ratio, count) in sorted(ratios.items()):
        print(f"| {kind} | {count:,} | {ratio:.3f} |")
    return int(max(ratio for ratio, _ in ratios.values()) > 1)


@dataclass
class Timed:
    """How long solders' LiteSVM took to execute one kind of transaction, in this process."""

    label: str
    units: int
    """Median compute units of the transactions timed."""
    seconds: list[float]
    """Wall time of each."""
    cpu: list[float]
    """This process's CPU time during each (moves less with the machine's load)."""

    @property
    def median(self) -> float:
        return float(np.median(self.seconds))

    @property
    def median_cpu(self) -> float:
        return float(np.median(self.cpu))


Sample = tuple[float, float, int]
"""One transaction's wall time, CPU time and compute units."""


def _timed_send(svm: LiteSVM, tx: Transaction) -> Sample:
    """Execute ``tx``; its wall and CPU time in send_transaction and the units it consumed."""
    started, cpu = time.perf_counter(), time.process_time()
    meta = svm.send_transaction(tx)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    if hasattr(meta, "err"):
        raise RuntimeError(f"{meta.err()}: {meta.meta().logs()[-3:]}")
    return seconds, cpu, meta.compute_units_consumed()


def _timed(label: str, samples: list[Sample]) -> Timed:
    units = int(np.median([u for _, _, u in samples]))
    return Timed(label, units, [s for s, _, _ in samples], [c for _, c, _ in samples])


def _begin_sealing(chain: _Chain, model: Keypair, weight: Keypair, length: int) -> None:
    """Create ``model`` with a first section of ``length`` bytes in ``weight`` (and a small
    second one: a model has two at least) and begin sealing."""
    payer = chain.payer.pubkey()

    def new(key: Keypair, size: int) -> Instruction:
        lamports = chain.svm.minimum_balance_for_rent_exemption(size)
        params = CreateAccountParams(
            from_pubkey=payer,
            to_pubkey=key.pubkey(),
            lamports=lamports,
            space=size,
            owner=PROGRAM_ID,
        )
        return create_account(params)

    lengths = [length, 1_000]
    ix = create_model(PROGRAM_ID, payer, model.pubkey(), bytes(32), lengths)
    chain.send([new(model, MODEL_ACCOUNT_SIZE), ix], [model])
    for index, (key, size) in enumerate(zip((weight, Keypair()), lengths, strict=True)):
        ix = bind_weight_account(PROGRAM_ID, payer, model.pubkey(), key.pubkey(), index)
        chain.send([new(key, WEIGHT_HEADER_SIZE + size), ix], [key])
    chain.send([begin_sealing(PROGRAM_ID, payer, model.pubkey())])


def _open_run(
    chain: _Chain,
    artifact: Artifact,
    prompt: bytes | list[int],
    capacity: int,
    sampling: tuple[int, int, int],
) -> tuple[Keypair, int]:
    """Create and open a run account of ``capacity`` on ``chain``; return it and openRun's units."""
    run = Keypair()
    kind = PromptKind.TEXT if isinstance(prompt, bytes) else PromptKind.TOKENS
    size = run_account_size(artifact.config, capacity, kind, len(prompt))
    create = create_account(
        CreateAccountParams(
            from_pubkey=chain.payer.pubkey(),
            to_pubkey=run.pubkey(),
            lamports=chain.svm.minimum_balance_for_rent_exemption(size),
            space=size,
            owner=PROGRAM_ID,
        )
    )
    ix = open_run(
        PROGRAM_ID, chain.payer.pubkey(), run.pubkey(), chain.model, chain.weights[0],
        capacity, prompt, *sampling,
    )  # fmt: skip
    return run, chain.send([set_compute_unit_limit(MAX_COMPUTE_UNITS), create, ix], [run])


def _timed_run(
    artifact: Artifact, prompt: bytes, capacity: int, baseline: list[Sample]
) -> tuple[_Chain, list[Sample]]:
    """Open a greedy run of ``artifact`` on its own chain and time each of its steps, a
    transfer (appended to ``baseline``) timed before each."""
    chain = _Chain.sealed(artifact)
    run, _ = _open_run(chain, artifact, prompt, capacity, (0, 0, 0))
    mirror = RunMirror(artifact, bytes(chain.svm.get_account(run.pubkey()).data))
    steps: list[Sample] = []
    while mirror.header.state != RunState.FINISHED:
        plan = mirror.plan()
        keys = [chain.weights[0], *(chain.weights[i] for i in plan.sections)]
        ix = step(PROGRAM_ID, run.pubkey(), chain.model, keys, mirror.header.steps)
        tx = _tx(chain.svm, chain.payer, [set_compute_unit_limit(MAX_COMPUTE_UNITS), ix])
        baseline.append(_transfer(chain, len(baseline)))
        steps.append(_timed_send(chain.svm, tx))
        mirror.advance(plan)
    return chain, steps


def _transfer(chain: _Chain, nonce: int) -> Sample:
    """Time a lamport transfer to a new account (``nonce`` makes each transaction distinct)."""
    params = TransferParams(
        from_pubkey=chain.payer.pubkey(), to_pubkey=Pubkey.new_unique(), lamports=10**6 + nonce
    )
    return _timed_send(chain.svm, _tx(chain.svm, chain.payer, [transfer(params)]))


def step_times(seal_steps: int = 15) -> list[Timed]:
    """Time run steps (stories260K, 32 tokens; a stories15M-shaped token), seal steps and
    transfers, interleaved in one process.

    The localnet executes each transaction with this same LiteSVM (``send_transaction``), so
    these are its execution times, without the HTTP and block machinery around them. A
    transfer before every measured transaction is the baseline: the machine is shared, and
    its load falls on both alike.
    """
    baseline: list[Sample] = []
    chain, small = _timed_run(stories260k(), b"Once upon a time", 18 + 32, baseline)
    _, large = _timed_run(stories15m(), b"Once", 4, baseline)
    # A first section of seal_steps + 1 chunks, sealing: each step hashes 65,536 bytes.
    model, weight = Keypair(), Keypair()
    _begin_sealing(chain, model, weight, (seal_steps + 1) * HASH_CHUNK_SIZE)
    seals: list[Sample] = []
    for index in range(seal_steps):
        baseline.append(_transfer(chain, len(baseline)))
        ix = seal_step(PROGRAM_ID, model.pubkey(), [weight.pubkey()], index)
        seals.append(_timed_send(chain.svm, _tx(chain.svm, chain.payer, [ix])))
    return [
        _timed("transfer (the baseline)", baseline),
        _timed("stories260K step over 1 M units", [t for t in small if t[2] >= 1_000_000]),
        _timed("stories260K step, all of a 32-token run", small),
        _timed("stories15M-shaped step over 1 M units", [t for t in large if t[2] >= 1_000_000]),
        _timed(f"sealStep ({HASH_CHUNK_SIZE:,} bytes)", seals),
    ]
