"""Turn a llama2.c checkpoint and tokenizer, or a TEZW v2 file, into a CURTAW01 artifact."""

import os

import numpy as np

from curta_chain.artifact.decode import decode_artifact
from curta_chain.artifact.encode import ArtifactParts, encode_parts
from curta_chain.artifact.floats import FloatModel
from curta_chain.artifact.layout import ModelConfig, matrix_name, oversized_matrix_section
from curta_chain.artifact.llama2c import parse_checkpoint, parse_header
from curta_chain.artifact.model import Artifact
from curta_chain.artifact.quantize import quantize_matrix
from curta_chain.artifact.tables import (
    exp_table,
    inv_sqrt_head_size,
    rotary_table,
    silu_table,
    to_fixed,
)
from curta_chain.artifact.tezw import MAGIC, byte_vocabulary_tokens, parse_tezw
from curta_chain.artifact.tokenizer import Vocabulary, parse_llama2c_tokenizer, score_keys
from curta_chain.constants import MAX_SECTION_SIZE
from curta_chain.errors import CheckpointError, ConfigError
from curta_chain.fsutil import atomic_write

Path = str | os.PathLike[str]
I32_MIN, I32_MAX = -(2**31), 2**31 - 1


def _read(path: Path) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise CheckpointError(f"{path}: cannot read: {exc.strerror}") from exc


def _check_fits(source: str, config: ModelConfig, tied: bool) -> None:
    over = oversized_matrix_section(config, tied)
    if over:
        section, length = over
        what = f"section {section}'s matrices"
        if section == 1:
            what = "embedding" if tied else "embedding and classifier"
            what += f" ({config.vocab_size:,} rows of {config.dim} columns)"
        raise CheckpointError(
            f"{source}: the {what} need {length:,} bytes, more than the "
            f"{MAX_SECTION_SIZE:,} bytes of one section"
        )


def _norm_name(config: ModelConfig, index: int) -> str:
    layer, within = divmod(index, 2 * config.dim)
    if layer == config.n_layers:
        return f"final normalization weight {within}"
    kind, column = divmod(within, config.dim)
    return f"layer {layer} {('attention', 'ffn')[kind]} normalization weight {column}"


def build_parts(model: FloatModel, vocabulary: Vocabulary) -> ArtifactParts:
    """Quantize ``model`` and compute the tables: everything the artifact holds.

    Raises:
        CheckpointError: a normalization weight or a row scale does not fit its
            fixed-point field, or the matrices do not fit their sections.
    """
    config = model.config
    tied = model.classifier is None
    _check_fits(model.source, config, tied)
    norm = np.asarray(model.norm_weights(), dtype=np.float64)
    fixed = to_fixed(norm)
    outside = (fixed < I32_MIN) | (fixed > I32_MAX)
    if outside.any():
        index = int(np.argmax(outside))
        raise CheckpointError(
            f"{model.source}: {_norm_name(config, index)} is {norm[index]:.6g}, expected "
            "-128 to 128 (it is stored as an i32 with 24 fractional bits)"
        )
    stored: dict[int, np.ndarray] = {}
    for index, matrix in enumerate(model.matrices()):
        if index == 1 and tied:
            continue
        stored[index] = quantize_matrix(matrix, f"{model.source}: {matrix_name(index)}")
    return ArtifactParts(
        config=config,
        tied=tied,
        norm=fixed.astype(np.int32),
        rotary=rotary_table(config),
        exp=exp_table(),
        silu=silu_table(),
        inv_sqrt_head_size=inv_sqrt_head_size(config),
        score_keys=score_keys(vocabulary.scores),
        tokens=vocabulary.tokens,
        matrices=tuple(stored.get(index, stored[0]) for index in range(config.matrix_count)),
    )


def _encode(model: FloatModel, vocabulary: Vocabulary) -> Artifact:
    # Decoding our own output checks it against every rule before anyone writes it.
    data = encode_parts(build_parts(model, vocabulary))
    return decode_artifact(data, f"{model.source} (converted)")


def convert_llama2c_bytes(
    checkpoint: bytes,
    tokenizer: bytes,
    checkpoint_source: str,
    tokenizer_source: str,
    cut_tokenizer: bool = False,
) -> Artifact:
    """Convert a llama2.c checkpoint and tokenizer held in memory.

    ``cut_tokenizer``: a tokenizer of more tokens than the vocabulary gives its first ones.

    Raises:
        CheckpointError: either file breaks its format, or the model cannot be stored.
    """
    config, shared = parse_header(checkpoint, checkpoint_source)
    _check_fits(checkpoint_source, config, tied=shared)
    model = parse_checkpoint(checkpoint, checkpoint_source)
    vocabulary = parse_llama2c_tokenizer(
        tokenizer, config.vocab_size, tokenizer_source, cut_tokenizer
    )
    return _encode(model, vocabulary)


def convert_llama2c(
    checkpoint_path: Path, tokenizer_path: Path, cut_tokenizer: bool = False
) -> Artifact:
    """Convert a llama2.c checkpoint and its tokenizer file into an artifact.

    ``cut_tokenizer``: a tokenizer file of more tokens than the vocabulary gives its first.

    Raises:
        CheckpointError: either file cannot be read or breaks its format exactly
            (truncated, trailing bytes, non-finite float, config out of range, classifier
            size against the vocabulary's sign, tokenizer count or token length), or the
            embedding does not fit one section.
    """
    return convert_llama2c_bytes(
        _read(checkpoint_path),
        _read(tokenizer_path),
        str(checkpoint_path),
        str(tokenizer_path),
        cut_tokenizer,
    )


def convert_tezw_bytes(data: bytes, source: str) -> Artifact:
    """Convert a TEZW v2 file held in memory (see ``curta_chain.artifact.tezw``)."""
    model = parse_tezw(data, source)
    tokens = byte_vocabulary_tokens()
    vocabulary = Vocabulary(tokens, np.zeros(len(tokens), dtype=np.float32))
    return _encode(model, vocabulary)


def convert_tezw(path: Path) -> Artifact:
    """Convert a TEZW v2 file into an artifact with a 259-token byte vocabulary.

    Raises:
        CheckpointError: the file cannot be read, is not TEZW v2, disagrees in size with
            its header, holds a non-finite float or a shape the artifact cannot hold.
    """
    return convert_tezw_bytes(_read(path), str(path))


def is_tezw(path: Path) -> bool:
    """Return whether the file at ``path`` starts with the TEZW magic ``TZ2W``."""
    try:
        with open(path, "rb") as handle:
            return handle.read(len(MAGIC)) == MAGIC
    except OSError as exc:
        raise CheckpointError(f"{path}: cannot read: {exc.strerror}") from exc


def convert_file(
    input_path: Path, tokenizer_path: Path | None, cut_tokenizer: bool = False
) -> Artifact:
    """Convert a TEZW v2 file (detected by its magic) or a llama2.c checkpoint.

    ``cut_tokenizer``: a llama2.c tokenizer of more tokens than the vocabulary gives its first.

    Raises:
        ConfigError: a tokenizer is missing for a llama2.c checkpoint or given for TEZW.
        CheckpointError: the input files break their formats.
    """
    if is_tezw(input_path):
        if tokenizer_path is not None:
            raise ConfigError(
                f"{input_path}: a TEZW file carries its own byte vocabulary; "
                "leave out the TOKENIZER argument"
            )
        return convert_tezw(input_path)
    if tokenizer_path is None:
        raise ConfigError(f"{input_path}: a llama2.c checkpoint needs its TOKENIZER file")
    return convert_llama2c(input_path, tokenizer_path, cut_tokenizer)


def write_artifact(artifact: Artifact, path: Path) -> None:
    """Write the artifact's bytes to ``path`` atomically: all of it or nothing."""
    atomic_write(path, artifact.data)
