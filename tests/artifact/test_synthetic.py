from curta_chain.artifact import ModelConfig, decode_artifact
from curta_chain.artifact.llama2c import parse_checkpoint
from curta_chain.artifact.synthetic import (
    STORIES15M,
    llama2c_checkpoint_bytes,
    llama2c_tokenizer_bytes,
    synthetic_artifact,
)
from curta_chain.artifact.tokenizer import parse_llama2c_tokenizer

SMALL = ModelConfig(32, 64, 2, 4, 2, 300, 16)


def test_the_same_seed_builds_the_same_artifact():
    first = synthetic_artifact(SMALL, seed=3)
    assert synthetic_artifact(SMALL, seed=3).data == first.data
    assert synthetic_artifact(SMALL, seed=4).data != first.data
    assert decode_artifact(first.data).config == SMALL


def test_synthetic_files_are_valid_llama2c_files():
    checkpoint = llama2c_checkpoint_bytes(SMALL, seed=1, shared_classifier=False)
    assert parse_checkpoint(checkpoint, "c").classifier is not None
    tokens = parse_llama2c_tokenizer(llama2c_tokenizer_bytes(300), 300, "t").tokens
    assert len(set(tokens)) == 300 and tokens[3] == b"<0x00>"


def test_stories15m_checkpoint_has_the_real_files_size(stories15m_checkpoint):
    # 28 header bytes and 15,215,968 floats, as llama2.c's stories15M.bin (60,816,028 bytes).
    assert len(stories15m_checkpoint) == 60_816_028
    assert STORIES15M.section_count == 8
