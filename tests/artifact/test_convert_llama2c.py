import math
import struct

import numpy as np

from curta_chain.artifact import ModelConfig, decode_artifact
from curta_chain.artifact.layout import HEADER_SIZE, TAG, plan_matrices
from curta_chain.artifact.llama2c import parse_checkpoint
from curta_chain.artifact.quantize import row_scales, row_weights
from curta_chain.artifact.tokenizer import parse_llama2c_tokenizer, scores_from_keys


def test_stories260k_converts_to_two_sections(stories260k):
    assert stories260k.config == ModelConfig(64, 172, 5, 8, 4, 512, 512)
    assert stories260k.data[:8] == TAG
    assert len(stories260k.sections) == 2
    assert stories260k.tied
    assert len(stories260k.sections[1]) == plan_matrices(stories260k.config, True)[-1].end
    assert b"".join(stories260k.sections) == stories260k.data
    assert len(stories260k.sections[0]) % 8 == 0


def test_decode_then_encode_is_byte_identical(stories260k, stories15m, split_untied):
    for artifact in (stories260k, stories15m, split_untied):
        again = decode_artifact(artifact.data, "again")
        assert again.encode() == artifact.data
        assert again.weights_hash() == artifact.weights_hash()


def _check_matrices(artifact, model):
    for index, weights in enumerate(model.matrices()):
        rows = artifact.stored_rows(index)
        w = np.asarray(weights, dtype=np.float64)
        q = row_weights(rows, w.shape[1])
        assert q.min() >= -127 and q.max() <= 127
        scale = np.abs(w).max(axis=1) / 127
        assert np.array_equal(row_scales(rows), np.maximum(np.rint(scale * 2**24), 1))
        step = np.where(scale > 0, scale, 1.0)[:, None]
        assert np.all(np.abs(q * step - w) <= step / 2 * (1 + 1e-9)), index
        assert np.all(rows[:, 4:8] == 0) and np.all(rows[:, 8 + w.shape[1] :] == 128)


def test_every_dequantized_weight_is_within_half_a_step(stories260k, stories260k_bytes):
    _check_matrices(stories260k, parse_checkpoint(stories260k_bytes, "s"))


def test_normalization_and_tables_within_one_unit(stories260k, stories260k_bytes):
    model = parse_checkpoint(stories260k_bytes, "s")
    norm = stories260k.norm_weights().astype(np.float64) / 2**24
    exact = np.concatenate(
        [np.stack([model.attn_norm, model.ffn_norm], axis=1).reshape(-1), model.final_norm]
    )
    assert np.all(np.abs(norm - exact) * 2**24 <= 1)
    # Layer 1's attention normalization sits after layer 0's two blocks.
    assert np.allclose(norm[128:192], model.attn_norm[1], atol=2**-24)
    assert stories260k.inv_sqrt_head_size == round(2**24 / math.sqrt(8))
    rotary = stories260k.rotary()
    assert abs(rotary[5 * 8 + 2] - math.cos(5 / 10_000 ** (2 / 8)) * 2**24) <= 1
    assert abs(stories260k.exp_table()[256] - math.exp(-1) * 2**30) <= 1
    assert abs(stories260k.silu_table()[2_048 + 128] - 1 / (1 + math.exp(-1)) * 2**16) <= 1


def test_tokenizer_is_stored_with_keys_sorted_ids_and_strings(stories260k, tok512_bytes):
    vocabulary = parse_llama2c_tokenizer(tok512_bytes, 512, "tok512.bin")
    tokens = stories260k.tokens()
    assert tokens == vocabulary.tokens
    assert scores_from_keys(stories260k.score_keys()).tolist() == vocabulary.scores.tolist()
    ids = stories260k.sorted_ids().tolist()
    assert sorted(ids) == list(range(512))
    assert [tokens[i] for i in ids] == sorted(tokens)
    entries = stories260k.token_entries()
    assert entries[0].tolist() == [0x8000_0000, 5, stories260k.blocks[6], 0]
    assert stories260k.data[entries[4, 2] : entries[4, 2] + entries[4, 1]] == b"<0x01>"


def test_stories15m_shapes_make_eight_sections(stories15m, stories15m_checkpoint):
    lengths = [len(s) for s in stories15m.sections]
    assert lengths[1:] == [9_472_000] + [1_019_136] * 6
    assert stories15m.tied
    layer_sections = [m.section for m in stories15m.matrices[2:]]
    assert layer_sections == [s for s in range(2, 8) for _ in range(7)]
    assert all(m.offset % 8 == 0 for m in stories15m.matrices)
    _check_matrices(stories15m, parse_checkpoint(stories15m_checkpoint, "15m"))


def test_an_own_classifier_is_stored_after_the_embedding(split_untied, split_untied_checkpoint):
    assert split_untied.config == ModelConfig(64, 128, 2, 4, 2, 16_000, 32)
    assert not split_untied.tied
    embedding, classifier = split_untied.matrices[:2]
    assert (classifier.section, classifier.offset) == (1, embedding.end)
    # q and o: 64 rows of 72 bytes; k and v: 32 rows; gate and up: 128 rows; down: 64 of 136.
    layer = 2 * 64 * 72 + 2 * 32 * 72 + 2 * 128 * 72 + 64 * 136
    assert [len(s) for s in split_untied.sections[1:]] == [2 * 16_000 * 72, layer, layer]
    model = parse_checkpoint(split_untied_checkpoint, "split")
    assert model.classifier is not None
    _check_matrices(split_untied, model)


def test_section_zero_holds_the_header_and_its_blocks(stories260k):
    header_fields = struct.unpack_from("<7I", stories260k.data, 40)
    assert header_fields == stories260k.blocks
    assert stories260k.blocks[0] == HEADER_SIZE
    assert stories260k.to_json()["blocks"]["token strings"] == stories260k.blocks[6]


def test_artifacts_compare_by_content_not_by_source(stories260k):
    assert decode_artifact(stories260k.data, "elsewhere.curta") == stories260k
