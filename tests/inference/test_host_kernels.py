"""The host's row_sums (programs/curta/host/host_matvec.c) against numpy, modulo 2^64.

The program's kernel (src/matvec.c) is SBPF assembly, so the host build stands in for it
with its own: AVX2, or portable C. Both must give the program's integers for any 64-bit
words, one position's activations or a batch's two packed in a word (rows.c). Each case
here is checked through both, against numpy's wrapping uint64 arithmetic, with the last
row's span ending at an unreadable page (a kernel that read past its columns would crash).
"""

import ctypes
import mmap

import numpy as np
import pytest

from curta_chain.inference import native

U64 = np.uint64
PAGE = mmap.PAGESIZE
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]


class GuardedRows:
    """``count`` rows ``row_bytes`` apart whose last span ends where an unreadable page begins."""

    def __init__(self, rows: np.ndarray, row_bytes: int, columns: int):
        count = rows.shape[0]
        size = (count - 1) * row_bytes + columns
        pages = -(-size // PAGE)
        self.map = mmap.mmap(-1, (pages + 1) * PAGE)
        base = ctypes.addressof(ctypes.c_char.from_buffer(self.map))
        assert _libc.mprotect(base + pages * PAGE, PAGE, 0) == 0, ctypes.get_errno()
        self.start = pages * PAGE - size
        view = np.frombuffer(self.map, dtype=np.uint8, count=pages * PAGE)
        for r in range(count):
            at = self.start + r * row_bytes
            view[at : at + columns] = rows[r]
        self.address = base + self.start
        del view

    def close(self) -> None:
        base = ctypes.addressof(ctypes.c_char.from_buffer(self.map))
        _libc.mprotect(base + (len(self.map) // PAGE - 1) * PAGE, PAGE, 3)  # read and write
        self.map.close()


def kernel(lib, rows: np.ndarray, row_bytes: int, init: int, x: np.ndarray) -> list[int]:
    count, columns = rows.shape
    guarded = GuardedRows(rows, row_bytes, columns)
    try:
        words = np.ascontiguousarray(x, dtype=U64)
        out = (ctypes.c_uint64 * count)()
        lib.curta_host_row_sums(
            ctypes.c_void_p(guarded.address),
            ctypes.c_uint64(row_bytes),
            ctypes.c_uint64(count),
            ctypes.c_uint64(columns),
            ctypes.c_uint64(init),
            words.ctypes.data_as(ctypes.c_void_p),
            out,
        )
        return list(out)
    finally:
        guarded.close()


def expected(rows: np.ndarray, init: int, x: np.ndarray) -> list[int]:
    with np.errstate(over="ignore"):
        sums = (rows.astype(U64) * x.astype(U64)[None, :]).sum(axis=1, dtype=U64) + U64(init)
    return [int(v) for v in sums]


def words(rng: np.random.Generator, kind: str, n: int) -> np.ndarray:
    """n 64-bit words of one kind: what each piece count of the AVX2 kernel takes."""

    def signed(bits: int) -> np.ndarray:
        return rng.integers(-(1 << bits), 1 << bits, n, dtype=np.int64)

    def pair(low: np.ndarray, high: np.ndarray) -> np.ndarray:  # rows.c's X = x0 + 2^32 x1
        return ((high.astype(U64) << U64(32)) + low.astype(U64)).view(U64)

    if kind == "zero":
        return np.zeros(n, dtype=U64)
    if kind in ("i15", "i30", "i32"):  # one position: a signed value in a word
        return signed({"i15": 15, "i30": 30, "i32": 31}[kind]).view(U64)
    if kind == "extremes":  # the ends of i32, and the range's edges
        edges = [-(1 << 31), (1 << 31) - 1, -(1 << 30), (1 << 30) - 1, 1 << 15, -(1 << 15) - 1]
        edges += [-(1 << 15), (1 << 15) - 1, 0, -1]
        return rng.choice(np.array(edges, dtype=np.int64), n).view(U64)
    if kind == "pair i30":
        return pair(signed(30), signed(30))
    if kind == "pair i15 i30":
        return pair(signed(30), signed(15))
    if kind == "pair i32":
        return pair(signed(31), signed(31))
    return rng.integers(0, 1 << 64, n, dtype=U64, endpoint=False)  # "any": every bit


KINDS = ["zero", "i15", "i30", "i32", "extremes", "pair i30", "pair i15 i30", "pair i32", "any"]


@pytest.fixture(params=["avx2", "portable"])
def lib(request, native_path):
    lib = native._load(native_path)
    lib.curta_host_row_sums.restype = None
    if request.param == "avx2" and not lib.curta_host_use_avx2(1):
        pytest.skip("this CPU has no AVX2: the portable kernel is the one that runs")
    if request.param == "portable":
        lib.curta_host_use_avx2(0)
    yield lib
    lib.curta_host_use_avx2(1)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("columns", [8, 16, 24, 288, 2040, 2048])
def test_row_sums_are_the_wrapping_sums_for_any_words(lib, kind, columns):
    rng = np.random.default_rng(columns * 31 + KINDS.index(kind))
    for count in (1, 2, 3, 4, 5, 7, 9):  # the four-row and two-row blocks, and the rest
        rows = rng.integers(0, 256, (count, columns), dtype=np.uint8)
        x = words(rng, kind, columns)
        init = int(rng.integers(0, 1 << 64, dtype=U64, endpoint=False))
        row_bytes = columns + 8 * int(rng.integers(0, 3))  # a span inside longer rows
        assert kernel(lib, rows, row_bytes, init, x) == expected(rows, init, x)


def test_the_widest_bytes_and_words_do_not_wrap_a_lane(lib):
    # Every byte 255 and every piece at its largest magnitude: the i32 lanes' bound.
    for value in (-(1 << 31), (1 << 31) - 1, -(1 << 30), -(1 << 15)):
        rows = np.full((5, 2048), 255, dtype=np.uint8)
        x = np.full(2048, value, dtype=np.int64).view(U64)
        assert kernel(lib, rows, 2048, 0, x) == expected(rows, 0, x)


def test_a_vector_changed_in_place_is_cut_again(lib):
    # The AVX2 kernel keeps the pieces of the last vector: the same memory with new words
    # must not reuse them, nor a shorter span of the same words.
    rng = np.random.default_rng(7)
    rows = rng.integers(0, 256, (6, 64), dtype=np.uint8)
    x = words(rng, "i30", 64)
    assert kernel(lib, rows, 64, 0, x) == expected(rows, 0, x)
    x[5] ^= U64(1 << 20)
    assert kernel(lib, rows, 64, 0, x) == expected(rows, 0, x)
    x[:] = words(rng, "pair i32", 64)
    assert kernel(lib, rows, 64, 0, x) == expected(rows, 0, x)
    assert kernel(lib, rows[:, :56].copy(), 56, 0, x[:56]) == expected(rows[:, :56], 0, x[:56])
