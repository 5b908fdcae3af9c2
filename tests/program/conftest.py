import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from curta_svm import Chain
from runtimes import NodeRuntime, Runtime, node_runner_missing

# The linker and its checks are scripts beside the C source, not part of the package.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "programs" / "curta"))


@pytest.fixture
def chain() -> Chain:
    return Chain()


def _node(features: str) -> Iterator[Runtime]:
    missing = node_runner_missing()
    if missing and os.environ.get("CI"):  # .ci/run installs it: never skip the second runtime
        pytest.fail(missing)
    if missing:
        pytest.skip(missing)
    runtime = NodeRuntime(features)
    yield runtime
    runtime.close()


@pytest.fixture(scope="module")
def node_all() -> Iterator[Runtime]:
    """npm litesvm 1.5 (Agave 4.3) with every feature on, SIMD-0500 included."""
    yield from _node("all")


@pytest.fixture(scope="module")
def node_mainnet() -> Iterator[Runtime]:
    """npm litesvm 1.5 (Agave 4.3) with its bundled mainnet feature set."""
    yield from _node("mainnet")
