import pytest
from curta_svm import Chain


@pytest.fixture
def chain() -> Chain:
    return Chain()
