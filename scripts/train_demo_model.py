"""Train the demo model: corpus, tokenizer and a llama2.c model, on CPU, from one seed.

    .venv/bin/pip install -r scripts/train_demo_model.requirements.txt
    .venv/bin/python scripts/train_demo_model.py [-o curta_chain/demo] [--seed 23] ...

Three stages, as llama2.c makes its models (docs/demo-model.md):

1. a corpus of short children's stories from ``demo_corpus`` (one a line, from the seed);
2. a 512-token sentencepiece BPE tokenizer with byte fallback, trained with the options of
   llama2.c's ``tinystories.py train_vocab``, written as llama2.c's ``tokenizer.bin`` the
   way its ``tokenizer.py`` exports (``▁`` as a space, byte tokens kept as ``<0xXX>``, the
   opening and closing tokens as ``\\n<s>\\n`` and ``\\n</s>\\n``);
3. a model of llama2.c's architecture (``model.py``: RMSNorm, rotary positions, grouped
   key/value heads, a SwiGLU feed-forward, the classifier tied to the embedding), trained
   with PyTorch on every story encoded with the opening token before it, as
   ``tinystories.py pretokenize`` does, and written in ``export.py``'s legacy (version 0)
   format.

It writes ``model.bin`` and ``tokenizer.bin`` to the output folder, and its working files
(the corpus, sentencepiece's model) to ``--work``. Progress goes to stderr.
"""

import argparse
import math
import struct
import sys
import time
from pathlib import Path

import numpy as np
import sentencepiece as spm
import torch
import torch.nn.functional as F
from demo_corpus import stories  # scripts/, on the path as the script's folder
from torch import nn

from curta_chain.artifact.layout import ModelConfig
from curta_chain.fsutil import atomic_write

ROPE_THETA = 10000.0
NORM_EPS = 1e-5


def log(message: str) -> None:
    """Say what the training does, on stderr, at once."""
    print(message, file=sys.stderr, flush=True)


# -- tokenizer -----------------------------------------------------------------------------


def train_tokenizer(corpus: Path, prefix: Path, vocab_size: int, threads: int) -> Path:
    """Train sentencepiece on ``corpus`` with train_vocab's options; return the .model path.

    train_vocab's ``self_test_sample_size=0`` is left out: sentencepiece 0.2 ignores it
    and warns.
    """
    spm.SentencePieceTrainer.train(
        input=str(corpus),
        model_prefix=str(prefix),
        model_type="bpe",
        vocab_size=vocab_size,
        input_format="text",
        character_coverage=1.0,
        num_threads=threads,
        split_digits=True,
        allow_whitespace_only_pieces=True,
        byte_fallback=True,
        unk_surface=r" \342\201\207 ",
        normalization_rule_name="identity",
        minloglevel=2,
    )
    return prefix.with_suffix(".model")


def tokenizer_bin(sp: spm.SentencePieceProcessor) -> bytes:
    """Return llama2.c's tokenizer.bin of ``sp``: max length, then (score, length, bytes)."""
    pieces: list[bytes] = []
    scores: list[float] = []
    for i in range(sp.vocab_size()):
        text = sp.id_to_piece(i)
        if i == sp.bos_id():
            text = "\n<s>\n"
        elif i == sp.eos_id():
            text = "\n</s>\n"
        pieces.append(text.replace("\u2581", " ").encode("utf-8"))
        scores.append(sp.get_score(i))
    out = [struct.pack("<I", max(len(p) for p in pieces))]
    for piece, score in zip(pieces, scores, strict=True):
        out.append(struct.pack("<fI", score, len(piece)) + piece)
    return b"".join(out)


# -- model (llama2.c's model.py, reduced to what training and export need) -----------------


def rotary(head_size: int, seq_len: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Return llama2.c's rotary cos and sin tables, (seq_len, head_size / 2) each."""
    freqs = 1.0 / (ROPE_THETA ** (torch.arange(0, head_size, 2).float() / head_size))
    angles = torch.outer(torch.arange(seq_len).float(), freqs)
    return torch.cos(angles), torch.sin(angles)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate each (even, odd) pair of ``x`` (batch, seq, heads, head) by its position."""
    even, odd = x[..., 0::2], x[..., 1::2]
    c, s = cos[None, :, None, :], sin[None, :, None, :]
    return torch.stack((even * c - odd * s, even * s + odd * c), dim=-1).flatten(-2)


class RMSNorm(nn.Module):
    """x / rms(x) times a learned weight."""

    def __init__(self, dim: int):
        """A weight of ones."""
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Normalize the last dimension."""
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + NORM_EPS) * self.weight


class Block(nn.Module):
    """One layer: attention with grouped key/value heads, then a SwiGLU feed-forward."""

    def __init__(self, shape: ModelConfig):
        """The layer's seven matrices and two norms, named as llama2.c's."""
        super().__init__()
        d, head = shape.dim, shape.dim // shape.n_heads
        self.n_heads, self.n_kv_heads, self.head = shape.n_heads, shape.n_kv_heads, head
        self.attention_norm, self.ffn_norm = RMSNorm(d), RMSNorm(d)
        self.wq = nn.Linear(d, shape.n_heads * head, bias=False)
        self.wk = nn.Linear(d, shape.n_kv_heads * head, bias=False)
        self.wv = nn.Linear(d, shape.n_kv_heads * head, bias=False)
        self.wo = nn.Linear(shape.n_heads * head, d, bias=False)
        self.w1 = nn.Linear(d, shape.hidden_dim, bias=False)
        self.w2 = nn.Linear(shape.hidden_dim, d, bias=False)
        self.w3 = nn.Linear(d, shape.hidden_dim, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        """Residual attention, then residual feed-forward."""
        b, t, _ = x.shape
        h = self.attention_norm(x)
        q = rotate(self.wq(h).view(b, t, self.n_heads, self.head), cos, sin)
        k = rotate(self.wk(h).view(b, t, self.n_kv_heads, self.head), cos, sin)
        v = self.wv(h).view(b, t, self.n_kv_heads, self.head)
        group = self.n_heads // self.n_kv_heads
        k, v = k.repeat_interleave(group, dim=2), v.repeat_interleave(group, dim=2)
        a = F.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True
        )
        x = x + self.wo(a.transpose(1, 2).reshape(b, t, -1))
        h = self.ffn_norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class Transformer(nn.Module):
    """llama2.c's Transformer with the classifier tied to the token embedding."""

    def __init__(self, shape: ModelConfig):
        """Initialize as llama2.c does: normal(0, 0.02), output projections scaled down."""
        super().__init__()
        self.shape = shape
        self.tok_embeddings = nn.Embedding(shape.vocab_size, shape.dim)
        self.layers = nn.ModuleList(Block(shape) for _ in range(shape.n_layers))
        self.norm = RMSNorm(shape.dim)
        cos, sin = rotary(shape.dim // shape.n_heads, shape.seq_len)
        self.register_buffer("freqs_cos", cos, persistent=False)
        self.register_buffer("freqs_sin", sin, persistent=False)
        for name, p in self.named_parameters():
            if p.dim() == 2:
                std = (
                    0.02 / math.sqrt(2 * shape.n_layers)
                    if name.endswith(("wo.weight", "w2.weight"))
                    else 0.02
                )
                nn.init.normal_(p, mean=0.0, std=std)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Return the logits of every position."""
        t = tokens.shape[1]
        x = self.tok_embeddings(tokens)
        for layer in self.layers:
            x = layer(x, self.freqs_cos[:t], self.freqs_sin[:t])
        return self.norm(x) @ self.tok_embeddings.weight.T


def legacy_checkpoint(model: Transformer) -> bytes:
    """Return export.py's version-0 file: the header, then every tensor in llama2.c's order."""
    s = model.shape
    # A positive vocabulary size says the classifier is the embedding (it is tied).
    header = struct.pack(
        "<7i", s.dim, s.hidden_dim, s.n_layers, s.n_heads, s.n_kv_heads, s.vocab_size, s.seq_len
    )
    tensors = [model.tok_embeddings.weight]
    for name in ("attention_norm", "wq", "wk", "wv", "wo", "ffn_norm", "w1", "w2", "w3"):
        tensors += [getattr(layer, name).weight for layer in model.layers]
    tensors += [model.norm.weight, model.freqs_cos, model.freqs_sin]
    body = b"".join(
        t.detach().float().contiguous().numpy().astype("<f4").tobytes() for t in tensors
    )
    return header + body


def load_legacy(model: Transformer, data: bytes) -> None:
    """Set ``model``'s weights from a ``legacy_checkpoint`` of the same shape."""
    s = model.shape
    want = struct.pack(
        "<7i", s.dim, s.hidden_dim, s.n_layers, s.n_heads, s.n_kv_heads, s.vocab_size, s.seq_len
    )
    if data[:28] != want:
        raise SystemExit(f"--resume: the checkpoint's header is not {s}")
    floats = torch.from_numpy(np.frombuffer(data, dtype="<f4", offset=28).copy())
    at = 0
    tensors = [model.tok_embeddings.weight]
    for name in ("attention_norm", "wq", "wk", "wv", "wo", "ffn_norm", "w1", "w2", "w3"):
        tensors += [getattr(layer, name).weight for layer in model.layers]
    with torch.no_grad():
        for t in [*tensors, model.norm.weight]:
            t.copy_(floats[at : at + t.numel()].view_as(t))
            at += t.numel()


# -- training ------------------------------------------------------------------------------


def learning_rate(step: int, steps: int, peak: float, warmup: int) -> float:
    """Linear warm-up, then a cosine down to a tenth of the peak (llama2.c's schedule)."""
    if step < warmup:
        return peak * (step + 1) / warmup
    ratio = (step - warmup) / max(1, steps - warmup)
    return peak / 10 + 0.5 * (1 + math.cos(math.pi * ratio)) * (peak - peak / 10)


def train(model: Transformer, data: np.ndarray, args: argparse.Namespace) -> float:
    """Train on random windows of ``data``; return the mean loss of the last 20 steps."""
    generator = torch.Generator().manual_seed(args.seed)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    other = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.1}, {"params": other, "weight_decay": 0.0}],
        lr=args.lr,
        betas=(0.9, 0.95),
    )
    tokens = torch.from_numpy(data.astype(np.int64))
    seq = model.shape.seq_len
    recent: list[float] = []
    started = time.monotonic()
    for step in range(args.steps):
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, args.steps, args.lr, args.warmup)
        starts = torch.randint(0, len(tokens) - seq - 1, (args.batch,), generator=generator)
        window = torch.stack([tokens[i : i + seq + 1] for i in starts.tolist()])
        logits = model(window[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), window[:, 1:].reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        recent = [*recent, loss.item()][-20:]
        if step % args.log_every == 0 or step == args.steps - 1:
            elapsed = time.monotonic() - started
            log(f"step {step}/{args.steps} loss {loss.item():.3f} ({elapsed:.0f} s)")
    return sum(recent) / len(recent)


def main(argv: list[str] | None = None) -> int:
    """Make the corpus, the tokenizer and the model; write model.bin and tokenizer.bin."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-o", "--output", type=Path, default=Path("curta_chain/demo"))
    p.add_argument("--work", type=Path, default=Path("out/train_demo"), help="working files")
    p.add_argument("--seed", type=int, default=23, help="the corpus's and the training's")
    p.add_argument("--stories", type=int, default=6000)
    p.add_argument("--vocab", type=int, default=512)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--hidden", type=int, default=172)
    p.add_argument("--layers", type=int, default=5)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--kv-heads", type=int, default=4)
    p.add_argument("--seq-len", type=int, default=256)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--steps", type=int, default=160)
    p.add_argument("--lr", type=float, default=4e-3)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--threads", type=int, default=2, help="torch's and sentencepiece's")
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--resume", type=Path, help="start from this model.bin's weights (same shape)")
    args = p.parse_args(argv)

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    args.work.mkdir(parents=True, exist_ok=True)
    args.output.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()

    corpus = args.work / "corpus.txt"
    texts = list(stories(args.seed, args.stories))
    atomic_write(corpus, "".join(t + "\n" for t in texts).encode())
    log(f"corpus: {len(texts)} stories, {corpus.stat().st_size:,} bytes ({corpus})")

    model_file = train_tokenizer(corpus, args.work / f"tok{args.vocab}", args.vocab, args.threads)
    sp = spm.SentencePieceProcessor(model_file=str(model_file))
    atomic_write(args.output / "tokenizer.bin", tokenizer_bin(sp))
    ids: list[int] = []
    for text in texts:
        ids.append(sp.bos_id())
        ids.extend(sp.encode(text))
    data = np.array(ids, dtype=np.uint16)
    log(f"tokenizer: {sp.vocab_size()} tokens; corpus is {len(data):,} tokens")

    shape = ModelConfig(
        args.dim, args.hidden, args.layers, args.heads, args.kv_heads, sp.vocab_size(), args.seq_len
    )
    model = Transformer(shape)
    if args.resume:
        load_legacy(model, args.resume.read_bytes())
    count = sum(p.numel() for p in model.parameters())
    log(f"model: {shape}, {count:,} parameters; training {args.steps} steps of {args.batch}")
    loss = train(model, data, args)
    atomic_write(args.output / "model.bin", legacy_checkpoint(model))
    log(f"done in {time.monotonic() - started:.0f} s: final loss {loss:.3f}; wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
