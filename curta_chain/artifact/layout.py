"""Where everything sits in a CURTAW01 artifact: constants, configuration, canonical layout.

Both the encoder and the decoder take their positions from here, so the file has exactly
one layout: the decoder compares what a header says with what this module computes. The
other languages read this module's constants through generated files, never by hand:
``scripts/gen_layout.py`` writes ``programs/curta/layout.h`` (the program's C) and
``sdk/js/src/layout.generated.ts`` (the TypeScript SDK) from them, each constant under the
name it has here.
"""

from dataclasses import dataclass
from typing import Final

from curta_chain.constants import MAX_SECTION_SIZE

TAG: Final = b"CURTAW01"
HEADER_SIZE: Final = 4_096
FRACTION_BITS: Final = 24
"""Fixed point of scales, normalization weights, rotary values and 1/sqrt(head size)."""
EXP_FRACTION_BITS: Final = 30
SILU_FRACTION_BITS: Final = 16
TABLE_ENTRIES: Final = 4_097
"""Entries of the exponential and of the SiLU table."""
EXP_STEPS_PER_UNIT: Final = 256
SILU_STEPS_PER_UNIT: Final = 128
SILU_RANGE: Final = 16
ROTARY_BASE: Final = 10_000.0
MAX_TOKEN_LENGTH: Final = 128
SPLIT_WEIGHT_COUNT: Final = 1_000_000
"""A model with this many matrix weights or more gets one section per layer."""
ROW_PREFIX: Final = 8
"""A row starts with its u32 scale and four zero bytes."""
WEIGHT_BIAS: Final = 128
"""A stored weight byte is the int8 weight plus this."""
TOKEN_ENTRY_SIZE: Final = 16
SECTION_ENTRY_SIZE: Final = 16
"""A section table entry: the section's u64 offset, then its u64 length."""
SECTION_LENGTH_OFFSET: Final = 8
"""The length's place in its section table entry."""
DESCRIPTOR_SIZE: Final = 24
DESCRIPTOR_FORMAT: Final = "<IIIIQ"
"""A matrix descriptor's fields (``MatrixDescriptor``'s, in order), little-endian."""

# Header byte offsets.
CONFIG_OFFSET: Final = 8
SECTION_COUNT_OFFSET: Final = 36
BLOCK_OFFSETS_OFFSET: Final = 40
INV_SQRT_OFFSET: Final = 68
HEADER_FIELDS_END: Final = 72
SECTION_TABLE_OFFSET: Final = 128
MATRIX_TABLE_OFFSET: Final = 512

CONFIG_FIELDS: Final = (
    # (attribute, header byte, lowest, highest)
    ("dim", 8, 1, 512),
    ("hidden_dim", 12, 1, 2_048),
    ("n_layers", 16, 1, 16),
    ("n_heads", 20, 1, 16),
    ("n_kv_heads", 24, 1, 16),
    ("vocab_size", 28, 259, 65_536),
    ("seq_len", 32, 1, 512),
)
MAX_HEAD_SIZE: Final = 64

BLOCKS: Final = (
    # (identifier, name in messages), in the order of the header's block offsets
    ("NORM", "normalization coefficients"),
    ("ROTARY", "rotary coefficients"),
    ("EXP", "exponential table"),
    ("SILU", "SiLU table"),
    ("TOKEN_ENTRIES", "tokenizer entries"),
    ("SORTED_IDS", "sorted token ids"),
    ("TOKEN_STRINGS", "token strings"),
)
"""Section zero's seven blocks."""
BLOCK_NAMES: Final = tuple(name for _, name in BLOCKS)
MODEL_MATRICES: Final = (("EMBEDDING", "token embedding"), ("CLASSIFIER", "classifier"))
"""The matrix table's first two entries, before every layer's."""
LAYER_MATRICES: Final = (
    # (identifier, name in messages), in the matrix table's order within a layer
    ("QUERY", "query"),
    ("KEY", "key"),
    ("VALUE", "value"),
    ("OUTPUT", "attention output"),
    ("GATE", "ffn gate"),
    ("DOWN", "ffn down"),
    ("UP", "ffn up"),
)
"""A layer's matrices: layer ``l``'s matrix ``k`` is entry ``2 + 7 l + k`` of the table."""
LAYER_MATRIX_NAMES: Final = tuple(name for _, name in LAYER_MATRICES)
MATRICES_PER_LAYER: Final = len(LAYER_MATRICES)


def round_up(value: int, multiple: int) -> int:
    """Return ``value`` rounded up to a multiple of ``multiple``."""
    return -(-value // multiple) * multiple


def row_bytes(columns: int) -> int:
    """Return the stored length of a row of ``columns`` weights: columns plus 8, to 8."""
    return round_up(columns + ROW_PREFIX, 8)


@dataclass(frozen=True)
class ModelConfig:
    """The seven numbers that shape a model (header bytes 8 to 35)."""

    dim: int
    hidden_dim: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    vocab_size: int
    seq_len: int

    @property
    def head_size(self) -> int:
        """Dimension per attention head."""
        return self.dim // self.n_heads

    @property
    def kv_dim(self) -> int:
        """The key and value dimension: dim × kv heads / heads."""
        return self.dim * self.n_kv_heads // self.n_heads

    @property
    def matrix_weight_count(self) -> int:
        """The count the section split is decided by (the embedding counted once)."""
        d, h, k = self.dim, self.hidden_dim, self.kv_dim
        return d * self.vocab_size + self.n_layers * (2 * d * d + 2 * d * k + 3 * d * h)

    @property
    def section_count(self) -> int:
        """2 for a small model, one more per layer for a large one."""
        if self.matrix_weight_count < SPLIT_WEIGHT_COUNT:
            return 2
        return self.n_layers + 2

    @property
    def matrix_count(self) -> int:
        """Embedding, classifier and seven matrices per layer."""
        return 2 + MATRICES_PER_LAYER * self.n_layers

    def problem(self) -> tuple[str, str] | None:
        """Return ``(field, what is wrong)`` for the first rule the config breaks, or None."""
        for name, _, low, high in CONFIG_FIELDS:
            value = getattr(self, name)
            if not low <= value <= high:
                return name, f"{value}, expected {low} to {high}"
        if self.dim % self.n_heads:
            return "n_heads", f"{self.n_heads} does not divide dimension {self.dim}"
        if self.n_kv_heads > self.n_heads or self.n_heads % self.n_kv_heads:
            return "n_kv_heads", f"{self.n_kv_heads} is not a divisor of heads {self.n_heads}"
        if self.head_size % 2 or self.head_size > MAX_HEAD_SIZE:
            return "n_heads", f"head size {self.head_size} is not even and at most {MAX_HEAD_SIZE}"
        return None

    def to_json(self) -> dict[str, int]:
        """Return the configuration as a JSON object."""
        return {name: getattr(self, name) for name, *_ in CONFIG_FIELDS}


@dataclass(frozen=True)
class MatrixDescriptor:
    """One 24-byte entry of the matrix table."""

    section: int
    columns: int
    rows: int
    row_bytes: int
    offset: int

    @property
    def size(self) -> int:
        """The matrix's length in bytes."""
        return self.rows * self.row_bytes

    @property
    def end(self) -> int:
        """The offset just past the matrix in its section."""
        return self.offset + self.size


def matrix_name(index: int) -> str:
    """Return a readable name for matrix ``index``, e.g. ``layer 2 key``."""
    if index < len(MODEL_MATRICES):
        return MODEL_MATRICES[index][1]
    layer, kind = divmod(index - len(MODEL_MATRICES), MATRICES_PER_LAYER)
    return f"layer {layer} {LAYER_MATRIX_NAMES[kind]}"


def matrix_shapes(config: ModelConfig) -> list[tuple[int, int]]:
    """Return ``(rows, columns)`` of every matrix in table order."""
    d, h, k, v = config.dim, config.hidden_dim, config.kv_dim, config.vocab_size
    layer = [(d, d), (k, d), (k, d), (d, d), (h, d), (d, h), (h, d)]
    return [(v, d), (v, d)] + layer * config.n_layers


def plan_matrices(config: ModelConfig, tied: bool) -> tuple[MatrixDescriptor, ...]:
    """Return the canonical descriptors: matrices packed in table order within their section.

    Section 1 holds the embedding and the classifier (stored once when ``tied``, its
    descriptor then a copy of the embedding's), and, in a two-section file, every layer;
    otherwise layer ``l`` fills section ``2 + l``.
    """
    split = config.section_count > 2
    ends: dict[int, int] = {}
    out: list[MatrixDescriptor] = []
    for index, (rows, columns) in enumerate(matrix_shapes(config)):
        if index == 1 and tied:
            out.append(out[0])
            continue
        section = 2 + (index - 2) // MATRICES_PER_LAYER if split and index >= 2 else 1
        desc = MatrixDescriptor(section, columns, rows, row_bytes(columns), ends.get(section, 0))
        ends[section] = desc.end
        out.append(desc)
    return tuple(out)


def matrix_section_lengths(config: ModelConfig, tied: bool) -> list[int]:
    """Return the lengths of sections 1 and up: each ends with its last matrix."""
    lengths = [0] * (config.section_count - 1)
    for desc in plan_matrices(config, tied):
        lengths[desc.section - 1] = max(lengths[desc.section - 1], desc.end)
    return lengths


def plan_blocks(config: ModelConfig) -> tuple[int, ...]:
    """Return the offsets of section zero's seven blocks: back to back after the header."""
    v = config.vocab_size
    sizes = (
        (2 * config.n_layers + 1) * config.dim * 4,
        config.seq_len * config.head_size * 4,
        TABLE_ENTRIES * 4,
        TABLE_ENTRIES * 4,
        TOKEN_ENTRY_SIZE * v,
        4 * v,
    )
    offsets = [HEADER_SIZE]
    for size in sizes:
        offsets.append(offsets[-1] + size)
    return tuple(offsets)


def oversized_matrix_section(config: ModelConfig, tied: bool) -> tuple[int, int] | None:
    """Return ``(section, length)`` of the first matrix section over the limit, or None."""
    for index, length in enumerate(matrix_section_lengths(config, tied), start=1):
        if length > MAX_SECTION_SIZE:
            return index, length
    return None
