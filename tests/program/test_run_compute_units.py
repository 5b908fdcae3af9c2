"""Inference's compute units in the real runtime: the kernel, and a stories15M-shaped token."""

import shutil

import bench_inference
import pytest
from run_svm import STEP_CU_CEILING

from curta_chain.artifact import Artifact


@pytest.mark.skipif(shutil.which("clang-14") is None, reason="clang-14 builds the kernel harness")
def test_the_matvec_kernel_takes_at_most_4_compute_units_per_mac():
    for label, units in bench_inference.kernel_rows():
        print(f"{label}: {units:.3f} CU/MAC")
        assert 3 < units <= 4


def test_a_stories15m_token_takes_at_most_60_transactions(stories15m: Artifact):
    bench = bench_inference
    stats = bench.run_stats(stories15m, [1], 2)
    (count,) = bench.per_token(stats)
    print(f"{count} step transactions, classifier {stats.classifier_mac_units:.2f} CU/MAC")
    assert count <= 60
    assert max(units for _, units, _ in stats.steps) <= STEP_CU_CEILING
    assert stats.classifier_mac_units <= 4
