import hashlib

import pytest

from curta_chain.artifact import hash_steps, weights_hash
from curta_chain.constants import HASH_CHUNK_SIZE


def naive_chain(sections):
    running = bytes(32)
    for section in sections:
        for start in range(0, len(section), HASH_CHUNK_SIZE):
            running = hashlib.sha256(running + section[start : start + HASH_CHUNK_SIZE]).digest()
    return running


@pytest.mark.parametrize(
    "lengths",
    [[1], [HASH_CHUNK_SIZE], [HASH_CHUNK_SIZE + 1], [4096, 3 * HASH_CHUNK_SIZE - 5, 17]],
)
def test_chain_matches_the_spec_written_naively(lengths):
    sections = [bytes((i * 7 + n) % 251 for i in range(n)) for n in lengths]
    assert weights_hash(sections) == naive_chain(sections)


def test_chunks_restart_at_each_section_and_end_at_its_end():
    sections = [bytes(HASH_CHUNK_SIZE + 10), b"\x01" * 5]
    steps = list(hash_steps(sections))
    assert [(s.section, s.offset, s.length) for s in steps] == [
        (0, 0, HASH_CHUNK_SIZE),
        (0, HASH_CHUNK_SIZE, 10),
        (1, 0, 5),
    ]
    first = hashlib.sha256(bytes(32) + bytes(HASH_CHUNK_SIZE)).digest()
    assert steps[0].running == first
    assert steps[1].running == hashlib.sha256(first + bytes(10)).digest()
    assert steps[-1].running == weights_hash(sections)
    # Concatenating the sections is a different chain: the split is part of the hash.
    assert weights_hash([b"".join(sections)]) != weights_hash(sections)


def test_hash_steps_can_continue_from_a_running_hash():
    sections = [bytes(range(256)) * 600]
    steps = list(hash_steps(sections))
    resumed = list(hash_steps([sections[0][HASH_CHUNK_SIZE:]], running=steps[0].running))
    assert resumed[-1].running == steps[-1].running


def test_memoryviews_and_bytearrays_hash_like_bytes():
    data = bytes(range(256)) * 1000
    assert weights_hash([memoryview(data), bytearray(data)]) == weights_hash([data, data])


def test_no_sections_is_the_zero_hash():
    assert weights_hash([]) == bytes(32)
    assert list(hash_steps([b""])) == []


def test_artifact_hash_is_the_chain_over_its_sections(stories260k):
    assert stories260k.weights_hash() == naive_chain([bytes(s) for s in stories260k.sections])
