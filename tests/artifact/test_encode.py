import dataclasses

import numpy as np
import pytest

import curta_chain.artifact as artifact_package
from curta_chain.artifact import ModelConfig, encode_parts
from curta_chain.errors import ArtifactError


def test_all_names_the_public_api():
    public = {
        name
        for name in dir(artifact_package)
        if not name.startswith("_") and not isinstance(getattr(artifact_package, name), type(np))
    }
    assert set(artifact_package.__all__) == public


def test_parts_round_trip(stories260k):
    assert encode_parts(stories260k.parts()) == stories260k.data


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda p: {"config": dataclasses.replace(p.config, n_heads=7)},
            r"^cannot encode: n_heads: 7 does not divide dimension 64$",
        ),
        (lambda p: {"tokens": p.tokens[:-1]}, r"^cannot encode: 511 tokens, expected 512$"),
        (
            lambda p: {"norm": p.norm[:-1]},
            r"^cannot encode: the normalization block has 703 values, expected 704$",
        ),
        (
            lambda p: {"matrices": (*p.matrices[:2], p.matrices[2][:-1], *p.matrices[3:])},
            r"^cannot encode: matrix 2 \(layer 0 query\) is \(63, 72\), expected \(64, 72\)$",
        ),
    ],
)
def test_encode_refuses_parts_that_do_not_fit(stories260k, change, message):
    parts = stories260k.parts()
    with pytest.raises(ArtifactError, match=message):
        encode_parts(dataclasses.replace(parts, **change(parts)))


def test_encode_refuses_a_section_over_the_limit(stories260k):
    config = ModelConfig(512, 8, 1, 8, 8, 65_536, 8)
    tokens = tuple(i.to_bytes(2, "little") for i in range(65_536))
    parts = dataclasses.replace(
        stories260k.parts(),
        config=config,
        tied=True,
        tokens=tokens,
        score_keys=np.zeros(65_536, dtype=np.uint32),
    )
    with pytest.raises(ArtifactError, match=r"section 1 would be 34,078,720 bytes, more than"):
        encode_parts(parts)
