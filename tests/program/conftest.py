from collections.abc import Iterator

import pytest
from curta_svm import Chain
from node_packages import require_node_packages
from runtimes import NODE_RUNNER_DIR, NodeRuntime, Runtime


@pytest.fixture
def chain() -> Chain:
    return Chain()


def _node(features: str) -> Iterator[Runtime]:
    require_node_packages(NODE_RUNNER_DIR, "litesvm")
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
