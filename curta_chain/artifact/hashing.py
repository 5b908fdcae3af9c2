"""The weights hash: one SHA-256 chain over chunks of at most 65,536 bytes.

``running = sha256(running || chunk)``, starting from 32 zero bytes and carried from one
section to the next; the chunks start again at each section, whose last chunk ends where
the section ends. Chunks are hashed in place through memoryviews, so the
chain costs one pass over the bytes plus one 32-byte update per chunk.
"""

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from curta_chain.constants import HASH_CHUNK_SIZE

Buffer = bytes | bytearray | memoryview

INITIAL_HASH = bytes(32)


@dataclass(frozen=True)
class HashStep:
    """The chain after one chunk: what one on-chain seal step must produce.

    Attributes:
        section: index of the section the chunk belongs to.
        offset: the chunk's first byte within that section.
        length: the chunk's length (65,536 except at a section's end).
        running: the running hash after this chunk.
    """

    section: int
    offset: int
    length: int
    running: bytes


def hash_steps(sections: Sequence[Buffer], running: bytes = INITIAL_HASH) -> Iterator[HashStep]:
    """Yield the running hash after every chunk of every section, in order.

    Args:
        sections: the sections' bytes, section zero first.
        running: the hash to continue from (32 zero bytes for a fresh chain).

    Yields:
        One ``HashStep`` per chunk; an empty section yields none.
    """
    sha256 = hashlib.sha256
    for index, section in enumerate(sections):
        view = memoryview(section).cast("B")
        for offset in range(0, len(view), HASH_CHUNK_SIZE):
            chunk = view[offset : offset + HASH_CHUNK_SIZE]
            step = sha256(running)
            step.update(chunk)
            running = step.digest()
            yield HashStep(index, offset, len(chunk), running)


def weights_hash(sections: Sequence[Buffer]) -> bytes:
    """Return the 32-byte weights hash of ``sections``: the last step's running hash."""
    running = INITIAL_HASH
    for step in hash_steps(sections):
        running = step.running
    return running
