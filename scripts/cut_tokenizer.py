"""Write the first N entries of a llama2.c tokenizer file as a tokenizer of its own.

stories260K was trained with its own 512-token tokenizer (llama2.c's tok512.bin), which is
not among the reference files; the first 512 entries of the Llama 2 tokenizer.bin (ids 0-2
special, 3-258 bytes, then the best merges) are a valid tokenizer of that size, so the
model converts and runs, though the text it decodes is not meaningful. The header's
longest-token length is recomputed for the entries kept.

    python scripts/cut_tokenizer.py tokenizer.bin 512 tok512.bin
"""

import struct
import sys
from pathlib import Path

from curta_chain.fsutil import atomic_write


def cut(data: bytes, count: int) -> bytes:
    pos, entries, longest = 4, [], 0
    for _ in range(count):
        _score, length = struct.unpack_from("<fI", data, pos)
        entries.append(data[pos : pos + 8 + length])
        longest = max(longest, length)
        pos += 8 + length
    return struct.pack("<I", longest) + b"".join(entries)


def main() -> None:
    if len(sys.argv) != 4 or not sys.argv[2].isdigit():
        raise SystemExit("usage: python scripts/cut_tokenizer.py SOURCE COUNT TARGET")
    source, count, target = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    atomic_write(target, cut(Path(source).read_bytes(), count))


if __name__ == "__main__":
    main()
