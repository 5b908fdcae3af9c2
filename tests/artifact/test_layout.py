import pytest

from curta_chain.artifact.layout import (
    DESCRIPTOR_SIZE,
    HEADER_SIZE,
    MATRIX_TABLE_OFFSET,
    SECTION_ENTRY_SIZE,
    SECTION_TABLE_OFFSET,
    ModelConfig,
    matrix_name,
    matrix_section_lengths,
    oversized_matrix_section,
    plan_blocks,
    plan_matrices,
    row_bytes,
)
from curta_chain.artifact.synthetic import LARGEST, STORIES15M
from curta_chain.constants import MAX_SECTION_SIZE, MAX_SECTIONS


def test_the_largest_tables_fit_the_header():
    assert SECTION_TABLE_OFFSET + SECTION_ENTRY_SIZE * MAX_SECTIONS <= MATRIX_TABLE_OFFSET
    assert MATRIX_TABLE_OFFSET + DESCRIPTOR_SIZE * (2 + 7 * 16) <= HEADER_SIZE


def test_the_largest_model_is_at_every_bound_with_the_largest_vocabulary_that_fits():
    assert LARGEST.problem() is None and LARGEST.section_count == MAX_SECTIONS
    assert (LARGEST.dim, LARGEST.hidden_dim, LARGEST.n_layers, LARGEST.seq_len) == (
        512,
        2_048,
        16,
        512,
    )
    assert LARGEST.head_size == 64  # the largest head size: as many heads as that allows
    assert oversized_matrix_section(LARGEST, tied=True) is None
    one_more = ModelConfig(**{**LARGEST.__dict__, "vocab_size": LARGEST.vocab_size + 1})
    assert oversized_matrix_section(one_more, tied=True) == (1, 10_483_720)
    assert MAX_SECTION_SIZE < 10_483_720


def test_row_length_is_columns_plus_eight_rounded_to_eight():
    assert row_bytes(288) == 296
    assert row_bytes(768) == 776
    assert row_bytes(172) == 184
    assert row_bytes(1) == 16


def test_stories15m_shapes_give_the_specs_numbers():
    assert STORIES15M.section_count == 8
    assert matrix_section_lengths(STORIES15M, tied=True) == [9_472_000] + [1_019_136] * 6


def test_small_models_have_two_sections_and_large_ones_one_per_layer():
    small = ModelConfig(64, 172, 5, 8, 4, 512, 512)
    assert small.matrix_weight_count == 259_328
    assert small.section_count == 2
    assert {d.section for d in plan_matrices(small, tied=True)} == {1}
    big = ModelConfig(64, 128, 2, 4, 2, 16_000, 32)
    assert big.section_count == 4
    sections = [d.section for d in plan_matrices(big, tied=False)]
    assert sections == [1, 1] + [2] * 7 + [3] * 7


def test_tied_classifier_descriptor_copies_the_embedding():
    plan = plan_matrices(STORIES15M, tied=True)
    assert plan[1] == plan[0]
    untied = plan_matrices(STORIES15M, tied=False)
    assert untied[1].offset == untied[0].end


def test_blocks_sit_back_to_back_after_the_header():
    blocks = plan_blocks(STORIES15M)
    assert blocks[0] == HEADER_SIZE
    assert blocks[1] - blocks[0] == 13 * 288 * 4
    assert blocks[2] - blocks[1] == 256 * 48 * 4
    assert blocks[3] - blocks[2] == blocks[4] - blocks[3] == 4_097 * 4
    assert blocks[5] - blocks[4] == 16 * 32_000
    assert blocks[6] - blocks[5] == 4 * 32_000


@pytest.mark.parametrize(
    ("config", "field"),
    [
        (ModelConfig(0, 8, 1, 1, 1, 259, 8), "dim"),
        (ModelConfig(8, 2049, 1, 1, 1, 259, 8), "hidden_dim"),
        (ModelConfig(8, 8, 17, 1, 1, 259, 8), "n_layers"),
        (ModelConfig(8, 8, 1, 3, 1, 259, 8), "n_heads"),
        (ModelConfig(8, 8, 1, 2, 3, 259, 8), "n_kv_heads"),
        (ModelConfig(8, 8, 1, 1, 1, 65_537, 8), "vocab_size"),
        (ModelConfig(8, 8, 1, 1, 1, 259, 513), "seq_len"),
        (ModelConfig(72, 8, 1, 8, 8, 259, 8), "n_heads"),  # head size 9: odd
        (ModelConfig(256, 8, 1, 2, 2, 259, 8), "n_heads"),  # head size 128: too big
    ],
)
def test_config_problems_name_the_field(config, field):
    assert config.problem()[0] == field


def test_matrix_names():
    assert [matrix_name(i) for i in (0, 1, 2, 8, 9)] == [
        "token embedding",
        "classifier",
        "layer 0 query",
        "layer 0 ffn up",
        "layer 1 query",
    ]
