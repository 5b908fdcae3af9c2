import os
from collections.abc import Iterator

import pytest
from curta_svm import Chain
from runtimes import NodeRuntime, Runtime, node_runner_missing


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
