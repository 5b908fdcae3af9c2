"""The CURTAW01 artifact: decode and validate, encode, hash, and convert into it.

The byte layout is ``docs/spec/curta-weight-format.md``. Where that spec is silent,
this package decides, once (each decision has a test under ``tests/artifact/``):

- Rounding: every float-to-integer step (weights, scales, tables, normalization weights)
  rounds to nearest with ties to even (IEEE's default, ``numpy.rint``), in float64. A
  weight is divided by the float scale ``max|w| / 127`` computed in float64, never by the
  stored fixed-point scale. A row of zeros stores scale 1 and all weights 0.
- Out-of-range floats are refused, not clamped: a row whose scale would not fit the u32
  field (|w| of about 32,512 or more) and a normalization weight outside [-128, 128).
- Layout: one canonical layout, so an artifact has exactly one encoding. Section zero's
  seven blocks sit back to back after the header, in the spec's order; the token strings
  end section zero, padded with zero bytes to a multiple of 8. Matrices are packed in
  table order from offset 0 of their section (a tied classifier stored once, its
  descriptor a copy of the embedding's), and each matrix section ends with its last
  matrix. The decoder refuses any other offsets or lengths.
- Sorted token ids: by token bytes (unsigned, shorter prefix first); identical strings
  keep ascending id order.
- The llama2.c tokenizer's leading u32 must be 1 to 128 and at least every token's
  length (llama2.c sizes its buffers by it); its scores must be finite.
- A model whose embedding (with its classifier when not tied) needs more bytes than one
  section holds is refused by ``convert`` with the byte count, before any quantization.
- The decoder checks structure and the integers' domains (scales at least 1, no weight
  byte 0, padding 128, zero fields, score keys of finite floats, strings in bounds).
  What the configuration alone fixes, it checks against the formulas within one unit
  (a conforming converter may round a transcendental's last bit differently): the
  header's inverse square root of the head size, and every entry of the rotary,
  exponential and SiLU tables. A wrong one would skew every output. The normalization
  weights are the model's own: any i32 is valid.
- TEZW choices are listed in ``curta_chain.artifact.tezw``.
"""

from curta_chain.artifact.convert import (
    convert_file,
    convert_llama2c,
    convert_tezw,
    write_artifact,
)
from curta_chain.artifact.decode import decode_artifact, read_artifact
from curta_chain.artifact.encode import ArtifactParts, encode_parts
from curta_chain.artifact.hashing import INITIAL_HASH, HashStep, hash_steps, weights_hash
from curta_chain.artifact.layout import HEADER_SIZE, TAG, MatrixDescriptor, ModelConfig
from curta_chain.artifact.model import Artifact

__all__ = [
    "HEADER_SIZE",
    "INITIAL_HASH",
    "TAG",
    "Artifact",
    "ArtifactParts",
    "HashStep",
    "MatrixDescriptor",
    "ModelConfig",
    "convert_file",
    "convert_llama2c",
    "convert_tezw",
    "decode_artifact",
    "encode_parts",
    "hash_steps",
    "read_artifact",
    "weights_hash",
    "write_artifact",
]
