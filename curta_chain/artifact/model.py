"""``Artifact``: a decoded, validated CURTAW01 file and typed views of what it holds."""

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from curta_chain.artifact.encode import ArtifactParts, encode_parts
from curta_chain.artifact.hashing import weights_hash
from curta_chain.artifact.layout import (
    BLOCK_NAMES,
    TOKEN_ENTRY_SIZE,
    MatrixDescriptor,
    ModelConfig,
    matrix_name,
)


@dataclass(frozen=True)
class Artifact:
    """A CURTAW01 artifact that passed every rule of the spec.

    Build one with ``decode_artifact`` or ``read_artifact``; the array accessors return
    read-only numpy views of ``data``.

    Attributes:
        config: the model's shape.
        data: the whole file.
        section_lengths: each section's length, section zero (with the header) first.
        matrices: the matrix table, in table order.
        blocks: the offsets of section zero's seven blocks (``BLOCK_NAMES`` order).
        inv_sqrt_head_size: 1/sqrt(head size) with 24 fractional bits.
        source: where the bytes came from, for messages (not compared).
    """

    config: ModelConfig
    data: bytes
    section_lengths: tuple[int, ...]
    matrices: tuple[MatrixDescriptor, ...]
    blocks: tuple[int, ...]
    inv_sqrt_head_size: int
    source: str = field(default="<bytes>", compare=False)

    @cached_property
    def sections(self) -> tuple[bytes, ...]:
        """Each section's bytes, section zero first, copied from ``data`` when first read.

        A run from a file reads ``data`` in place and never copies them.
        """
        starts = self.section_starts
        return tuple(
            self.data[a : a + n] for a, n in zip(starts, self.section_lengths, strict=True)
        )

    @property
    def section_starts(self) -> tuple[int, ...]:
        """Where each section starts in ``data``: they follow one another from byte 0."""
        return tuple(sum(self.section_lengths[:i]) for i in range(len(self.section_lengths)))

    @property
    def tied(self) -> bool:
        """The classifier shares the embedding's bytes."""
        return self.matrices[0] == self.matrices[1]

    def _section0(self, index: int, dtype: str, count: int) -> np.ndarray:
        return np.frombuffer(self.data, dtype=dtype, count=count, offset=self.blocks[index])

    def norm_weights(self) -> np.ndarray:
        """Return the (2 × layers + 1) × dim normalization weights, int32."""
        return self._section0(0, "<i4", (2 * self.config.n_layers + 1) * self.config.dim)

    def rotary(self) -> np.ndarray:
        """Return the seq_len × head_size rotary values, int32 (cos, sin per pair)."""
        return self._section0(1, "<i4", self.config.seq_len * self.config.head_size)

    def exp_table(self) -> np.ndarray:
        """Return the exponential table, uint32."""
        return self._section0(2, "<u4", (self.blocks[3] - self.blocks[2]) // 4)

    def silu_table(self) -> np.ndarray:
        """Return the SiLU table, int32."""
        return self._section0(3, "<i4", (self.blocks[4] - self.blocks[3]) // 4)

    def token_entries(self) -> np.ndarray:
        """Return the (vocab, 4) u32 entries: score key, length, offset, zero."""
        count = self.config.vocab_size * TOKEN_ENTRY_SIZE // 4
        return self._section0(4, "<u4", count).reshape(-1, 4)

    def score_keys(self) -> np.ndarray:
        """Return each token's u32 score key."""
        return self.token_entries()[:, 0]

    def tokens(self) -> tuple[bytes, ...]:
        """Return the bytes of every token, by id."""
        entries = self.token_entries()
        return tuple(
            self.data[offset : offset + length]
            for length, offset in zip(entries[:, 1].tolist(), entries[:, 2].tolist(), strict=True)
        )

    def sorted_ids(self) -> np.ndarray:
        """Return the token ids sorted by their bytes, u32."""
        return self._section0(5, "<u4", self.config.vocab_size)

    def stored_rows(self, index: int) -> np.ndarray:
        """Return matrix ``index`` as a (rows, row length) uint8 view of its stored rows."""
        desc = self.matrices[index]
        start = self.section_starts[desc.section] + desc.offset
        rows = np.frombuffer(self.data, dtype=np.uint8, count=desc.size, offset=start)
        return rows.reshape(desc.rows, desc.row_bytes)

    def parts(self) -> ArtifactParts:
        """Return what the artifact holds, apart from where it sits."""
        return ArtifactParts(
            config=self.config,
            tied=self.tied,
            norm=self.norm_weights(),
            rotary=self.rotary(),
            exp=self.exp_table(),
            silu=self.silu_table(),
            inv_sqrt_head_size=self.inv_sqrt_head_size,
            score_keys=self.score_keys(),
            tokens=self.tokens(),
            matrices=tuple(self.stored_rows(i) for i in range(len(self.matrices))),
        )

    def encode(self) -> bytes:
        """Lay the artifact's parts out again: equals ``data`` for every valid artifact."""
        return encode_parts(self.parts())

    def weights_hash(self) -> bytes:
        """Return the 32-byte weights hash of the sections."""
        return weights_hash(self.sections)

    def to_json(self) -> dict[str, Any]:
        """Return the configuration, sections, blocks, matrix table and hash as JSON."""
        config = self.config
        offset = 0
        sections = []
        for index, length in enumerate(self.section_lengths):
            sections.append({"index": index, "offset": offset, "length": length})
            offset += length
        return {
            "source": self.source,
            "format": "CURTAW01",
            "file_size": len(self.data),
            "config": config.to_json(),
            "head_size": config.head_size,
            "kv_dim": config.kv_dim,
            "matrix_weights": config.matrix_weight_count,
            "tied_classifier": self.tied,
            "inv_sqrt_head_size": self.inv_sqrt_head_size,
            "sections": sections,
            "blocks": dict(zip(BLOCK_NAMES, self.blocks, strict=True)),
            "matrices": [
                {
                    "index": i,
                    "name": matrix_name(i),
                    "section": m.section,
                    "rows": m.rows,
                    "columns": m.columns,
                    "row_bytes": m.row_bytes,
                    "offset": m.offset,
                }
                for i, m in enumerate(self.matrices)
            ],
            "weights_hash": self.weights_hash().hex(),
        }
