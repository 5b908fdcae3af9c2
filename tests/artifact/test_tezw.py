import struct

import numpy as np
import pytest

from curta_chain.artifact import ModelConfig, convert_tezw, decode_artifact
from curta_chain.artifact.convert import convert_tezw_bytes
from curta_chain.artifact.quantize import row_weights
from curta_chain.artifact.synthetic import tezw_bytes
from curta_chain.artifact.tezw import parse_tezw
from curta_chain.errors import CheckpointError


@pytest.fixture(scope="module")
def tezw_default() -> bytes:
    return tezw_bytes(seed=4)


@pytest.fixture(scope="module")
def tezw_artifact(tezw_default):
    return convert_tezw_bytes(tezw_default, "tiny.tezw")


def test_the_default_configuration_is_8_660_008_bytes(tezw_default):
    assert len(tezw_default) == 8_660_008
    assert tezw_default[:4] == b"TZ2W"


def test_it_converts_with_259_tokens_kv_heads_equal_heads_and_a_tied_classifier(tezw_artifact):
    assert tezw_artifact.config == ModelConfig(128, 512, 4, 4, 4, 259, 128)
    assert tezw_artifact.tied
    # 128 × 259 + 4 × (4 × 128² + 3 × 128 × 512) = 1,081,728 weights: one section per layer.
    assert len(tezw_artifact.sections) == 6
    assert decode_artifact(tezw_artifact.data).encode() == tezw_artifact.data


def test_byte_b_is_id_b_plus_3_and_the_specials_are_zero(tezw_artifact, tezw_default):
    tokens = tezw_artifact.tokens()
    assert tokens[:3] == (b"<unk>", b"\n<s>\n", b"\n</s>\n")
    assert tokens[3 + 0x41] == b"A" and tokens[258] == b"\xff"
    assert set(tezw_artifact.score_keys().tolist()) == {0x8000_0000}  # every score 0.0
    wte = np.frombuffer(tezw_default, "<f8", count=256 * 128, offset=40).reshape(256, 128)
    q = row_weights(tezw_artifact.stored_rows(0), 128)
    assert not q[:3].any()
    scale = np.abs(wte).max(axis=1, keepdims=True) / 127
    assert np.all(np.abs(q[3:] * scale - wte) <= scale / 2 * (1 + 1e-9))


def test_swiglu_matrices_map_gate_up_down(tezw_default):
    model = parse_tezw(tezw_default, "t")
    dim, ffn = 128, 512
    layer0 = 40 + 8 * (256 * dim + dim)
    wgate = layer0 + 8 * (2 * dim + 4 * dim * dim)
    wval, wproj = wgate + 8 * ffn * dim, wgate + 16 * ffn * dim
    assert model.w1[0, 0, 0] == struct.unpack_from("<d", tezw_default, wgate)[0]
    assert model.w3[0, 0, 0] == struct.unpack_from("<d", tezw_default, wval)[0]
    assert model.w2[0, 0, :2].tolist() == list(struct.unpack_from("<2d", tezw_default, wproj))
    assert model.w2.shape == (4, dim, ffn)
    rms2 = layer0 + 8 * (dim + 4 * dim * dim)
    assert model.ffn_norm[0, 0] == struct.unpack_from("<d", tezw_default, rms2)[0]
    assert model.final_norm[0] == struct.unpack_from("<d", tezw_default, 40 + 8 * 256 * dim)[0]


def test_the_reserved_bytes_are_ignored(tezw_default, tezw_artifact):
    other = tezw_default[:32] + struct.pack("<d", 3.5) + tezw_default[40:]
    assert convert_tezw_bytes(other, "t").data == tezw_artifact.data


def test_a_small_tezw_file_gets_two_sections(tmp_path):
    path = tmp_path / "small.tezw"
    path.write_bytes(tezw_bytes(n_layer=1, n_head=2, dim=16, max_seq=8, ffn_dim=32, seed=1))
    artifact = convert_tezw(path)
    assert len(artifact.sections) == 2
    assert artifact.config.n_kv_heads == 2


def _header(data: bytes, offset: int, value: int) -> bytes:
    out = bytearray(data)
    struct.pack_into("<i", out, offset, value)
    return bytes(out)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda d: d[:-8],
            r"8,660,000 bytes, but its header \(4 layers, dim 128, .*\) says 8,660,008",
        ),
        (lambda d: d + bytes(8), r"8,660,016 bytes, but its header .* says 8,660,008"),
        (lambda d: _header(d, 8, 3), r"8,660,008 bytes, but its header \(3 layers"),
        (lambda d: d[:20], r"not a TEZW v2 file"),
        (lambda d: _header(d, 4, 1), r"byte 4 \(version\): 1, expected 2"),
        (lambda d: _header(d, 20, 512), r"byte 20 \(vocab_sz\): 512, expected 256"),
        (lambda d: _header(d, 16, 0), r"byte 16 \(dim\): 0, expected 1 to 512"),
        (lambda d: _header(d, 12, 3), r"byte 12 \(n_head\): 3 does not divide dimension 128"),
        (lambda d: _header(d, 28, -1), r"byte 28 \(ffn_dim\): -1, expected 1 to 2048"),
        (lambda d: _header(d, 24, 600), r"byte 24 \(max_seq\): 600, expected 1 to 512"),
        (
            lambda d: d[:1000] + struct.pack("<d", float("inf")) + d[1008:],
            r"byte 1,000 \(double 120\): inf, expected a finite float",
        ),
    ],
)
def test_refusals(tezw_default, mutate, message):
    with pytest.raises(CheckpointError, match=message):
        convert_tezw_bytes(mutate(tezw_default), "t.tezw")


def test_a_normalization_weight_that_rounds_to_128_is_refused(tezw_default):
    final_norm = 40 + 8 * 256 * 128
    edge = (
        tezw_default[:final_norm] + struct.pack("<d", 128 - 2**-26) + tezw_default[final_norm + 8 :]
    )
    with pytest.raises(CheckpointError, match=r"t: final normalization weight 0 is 128, expected"):
        convert_tezw_bytes(edge, "t")
    below = tezw_default[:final_norm] + struct.pack("<d", -128.0) + tezw_default[final_norm + 8 :]
    assert convert_tezw_bytes(below, "t").norm_weights()[-128] == -(2**31)
