/*
 * host_matvec.c: the host build's row_sums, in place of src/matvec.c (whose four-row loop
 * is SBPF assembly, kernel_asm.h, and cannot compile for the host). The same function
 * (inference.h): out[r] = init + the sum over the span of stored byte x x[j], modulo 2^64,
 * for any 64-bit words x (one position's activations, or a batch's two packed in a word,
 * rows.c): with AVX2 where the CPU has it, else in portable C.
 *
 * The AVX2 kernel cuts every word into 16-bit pieces with a weight each, X = sum of
 * 2^shift x piece (mod 2^64), so that the sum is the pieces' sums, shifted and added
 * modulo 2^64: exact for any word. A word is first two signed 32-bit halves, X = h0 +
 * 2^32 h1 (h0 its low 32 bits as a signed value, h1 the rest), then each half of the
 * vector, by the largest of its values, into 0 pieces (all zero: one position's h1), 1
 * (within [-2^15, 2^15)), 2 (within [-2^30, 2^30): lo = h & (2^15 - 1), hi = h >> 15) or
 * 3 (lo, mid = (h >> 15) & (2^15 - 1), top = h >> 30 in -2..1). vpmaddwd multiplies 16
 * zero-extended stored bytes by 16 pieces and adds adjacent pairs into 8 i32 lanes: a pair
 * is at most 2 x 255 x 2^15 = 16,711,680, and a span of at most 2,048 columns (the
 * format's widest row) gives a lane 128 pairs, at most 2,139,095,040 < 2^31: no lane
 * wraps. The lanes are added in i64, shifted by their piece's weight and added modulo 2^64.
 */
#include <string.h>

#include "../inference.h"

#define PIECE_BITS 15
#define PIECE_MASK ((1 << PIECE_BITS) - 1)
#define MAX_PIECES 6      /* three a half */
#define MAX_COLUMNS 2048  /* 128 pairs a lane: below 2^31 (above) */
#define LANE_SHIFT 32

_Static_assert(MAX_HIDDEN_DIM <= MAX_COLUMNS && MAX_DIM <= MAX_COLUMNS,
               "every row of the format fits the AVX2 kernel's bound");

/* The portable kernel: four rows at a time, then one, each column's word loaded once. */
static void row_sums_c(const RowSpan *span, const uint64_t *x, uint64_t *out) {
  uint64_t row_bytes = span->row_bytes, n = span->columns, r = 0;
  for (; r + 4 <= span->count; r += 4) {
    const uint8_t *w0 = span->rows + r * row_bytes, *w1 = w0 + row_bytes,
                  *w2 = w1 + row_bytes, *w3 = w2 + row_bytes;
    uint64_t s0 = span->init, s1 = s0, s2 = s0, s3 = s0;
    for (uint64_t j = 0; j < n; j++) {
      uint64_t v = x[j];
      s0 += w0[j] * v;
      s1 += w1[j] * v;
      s2 += w2[j] * v;
      s3 += w3[j] * v;
    }
    out[r] = s0;
    out[r + 1] = s1;
    out[r + 2] = s2;
    out[r + 3] = s3;
  }
  for (; r < span->count; r++) {
    const uint8_t *w = span->rows + r * row_bytes;
    uint64_t s = span->init;
    for (uint64_t j = 0; j < n; j++) {
      s += w[j] * x[j];
    }
    out[r] = s;
  }
}

#if defined(__x86_64__)
#include <immintrin.h>
#define AVX2 __attribute__((target("avx2")))

/* The pieces of the last vector cut (zero past its columns up to a multiple of 16), one
 * set for the process: the host runs one phase at a time (native.py holds a lock around
 * each call). */
static int16_t pieces[MAX_PIECES][MAX_COLUMNS] __attribute__((aligned(32)));
static uint64_t shifts[MAX_PIECES]; /* each piece's weight: 2^shift */
static uint64_t piece_count;

/* The words the pieces were cut from: a phase's rows come in several calls with the same
 * vector (rows.c: its matrices, its chunks), which is compared rather than cut again. */
static uint64_t cut_source[MAX_COLUMNS];
static uint64_t cut_columns; /* 0: nothing cut */

static int32_t half_of(uint64_t word, uint64_t half) {
  int32_t h0 = (int32_t)(uint32_t)word;
  /* word - h0 is a multiple of 2^32 (mod 2^64): h1 its upper half, as a signed value. */
  return half ? (int32_t)(uint32_t)((word - (uint64_t)(int64_t)h0) >> LANE_SHIFT) : h0;
}

/* The pieces a half of x[0..n) needs: 0 to 3 (the file's comment). */
static uint64_t pieces_needed(const uint64_t *x, uint64_t n, uint64_t half) {
  uint32_t any = 0, past15 = 0, past30 = 0;
  for (uint64_t j = 0; j < n; j++) {
    int32_t h = half_of(x[j], half);
    any |= (uint32_t)h;
    /* h >> k is 0 or -1 exactly when h lies in [-2^k, 2^k). */
    past15 |= (uint32_t)((h >> PIECE_BITS) + 1) > 1;
    past30 |= (uint32_t)((h >> (2 * PIECE_BITS)) + 1) > 1;
  }
  return past30 ? 3 : past15 ? 2 : any ? 1 : 0;
}

/* Cut x[0..n) into pieces, unless it is the vector cut last. */
static void cut(const uint64_t *x, uint64_t n) {
  if (n == cut_columns && memcmp(x, cut_source, n * sizeof(uint64_t)) == 0) {
    return;
  }
  uint64_t padded = (n + 15) & ~(uint64_t)15;
  piece_count = 0;
  for (uint64_t half = 0; half < 2; half++) {
    uint64_t count = pieces_needed(x, n, half), first = piece_count;
    for (uint64_t k = 0; k < count; k++) {
      shifts[first + k] = half * LANE_SHIFT + k * PIECE_BITS;
    }
    for (uint64_t j = 0; j < n; j++) {
      int32_t h = half_of(x[j], half);
      if (count == 1) {
        pieces[first][j] = (int16_t)h;
      } else if (count == 2) {
        pieces[first][j] = (int16_t)(h & PIECE_MASK);
        pieces[first + 1][j] = (int16_t)(h >> PIECE_BITS);
      } else if (count == 3) {
        pieces[first][j] = (int16_t)(h & PIECE_MASK);
        pieces[first + 1][j] = (int16_t)((h >> PIECE_BITS) & PIECE_MASK);
        pieces[first + 2][j] = (int16_t)(h >> (2 * PIECE_BITS));
      }
    }
    for (uint64_t k = first; k < first + count; k++) {
      memset(pieces[k] + n, 0, (padded - n) * sizeof(int16_t));
    }
    piece_count += count;
  }
  memcpy(cut_source, x, n * sizeof(uint64_t));
  cut_columns = n;
}

/* 16 stored bytes from w (8 when `half`: a span's last 8 columns), zero-extended to i16. */
AVX2 static inline __m256i weights16(const uint8_t *w, bool half) {
  const __m128i *p = (const __m128i *)w;
  return _mm256_cvtepu8_epi16(half ? _mm_loadl_epi64(p) : _mm_loadu_si128(p));
}

/* The sum of the 8 i32 lanes of a, in i64. */
AVX2 static inline int64_t lanes(__m256i a) {
  __m256i wide = _mm256_add_epi64(_mm256_cvtepi32_epi64(_mm256_castsi256_si128(a)),
                                  _mm256_cvtepi32_epi64(_mm256_extracti128_si256(a, 1)));
  __m128i pair = _mm_add_epi64(_mm256_castsi256_si128(wide), _mm256_extracti128_si256(wide, 1));
  return _mm_cvtsi128_si64(pair) + _mm_extract_epi64(pair, 1);
}

/* ROWS rows from w (row_bytes apart) times PIECES pieces, 16 columns a round: each row's
 * weights loaded once, each piece once a round; ROWS x PIECES sums in registers. */
#define ROWS_TIMES_PIECES(ROWS, PIECES)                                                        \
  AVX2 static void rows##ROWS##_##PIECES(const uint8_t *w, uint64_t row_bytes, uint64_t n,     \
                                         uint64_t init, uint64_t *out) {                       \
    __m256i acc[ROWS][PIECES];                                                                 \
    _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++) {                                   \
      _Pragma("GCC unroll 8") for (int p = 0; p < PIECES; p++) {                               \
        acc[r][p] = _mm256_setzero_si256();                                                    \
      }                                                                                        \
    }                                                                                          \
    uint64_t k = 0;                                                                            \
    for (; k + 16 <= n; k += 16) {                                                             \
      ROUND(ROWS, PIECES, false);                                                              \
    }                                                                                          \
    if (k < n) { /* 8 columns left: n is a multiple of 8 */                                    \
      ROUND(ROWS, PIECES, true);                                                               \
    }                                                                                          \
    _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++) {                                   \
      uint64_t s = init;                                                                       \
      _Pragma("GCC unroll 8") for (int p = 0; p < PIECES; p++) {                               \
        s += (uint64_t)lanes(acc[r][p]) << shifts[p];                                          \
      }                                                                                        \
      out[r] = s;                                                                              \
    }                                                                                          \
  }

/* Columns k.. (16, or 8 when `half`) of each row into its sums, a piece at a time. */
#define ROUND(ROWS, PIECES, half)                                                              \
  _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++) {                                     \
    __m256i b = weights16(w + r * row_bytes + k, half);                                        \
    _Pragma("GCC unroll 8") for (int p = 0; p < PIECES; p++) {                                 \
      __m256i x = _mm256_load_si256((const __m256i *)(pieces[p] + k));                         \
      acc[r][p] = _mm256_add_epi32(acc[r][p], _mm256_madd_epi16(b, x));                        \
    }                                                                                          \
  }

/* Four rows a call while the sums and pieces fit the 16 registers, else two; then one. */
ROWS_TIMES_PIECES(4, 1)
ROWS_TIMES_PIECES(4, 2)
ROWS_TIMES_PIECES(2, 3)
ROWS_TIMES_PIECES(2, 4)
ROWS_TIMES_PIECES(2, 5)
ROWS_TIMES_PIECES(2, 6)
ROWS_TIMES_PIECES(1, 1)
ROWS_TIMES_PIECES(1, 2)
ROWS_TIMES_PIECES(1, 3)
ROWS_TIMES_PIECES(1, 4)
ROWS_TIMES_PIECES(1, 5)
ROWS_TIMES_PIECES(1, 6)

typedef void (*RowsKernel)(const uint8_t *, uint64_t, uint64_t, uint64_t, uint64_t *);
static const RowsKernel MANY[MAX_PIECES + 1] = {0, rows4_1, rows4_2, rows2_3,
                                                rows2_4, rows2_5, rows2_6};
static const RowsKernel ONE[MAX_PIECES + 1] = {0, rows1_1, rows1_2, rows1_3,
                                               rows1_4, rows1_5, rows1_6};
static const uint64_t MANY_ROWS[MAX_PIECES + 1] = {0, 4, 4, 2, 2, 2, 2};

AVX2 static void row_sums_avx2(const RowSpan *span, const uint64_t *x, uint64_t *out) {
  cut(x, span->columns);
  uint64_t count = span->count, row_bytes = span->row_bytes, n = span->columns, r = 0;
  if (piece_count == 0) { /* every word zero */
    for (; r < count; r++) {
      out[r] = span->init;
    }
    return;
  }
  uint64_t step = MANY_ROWS[piece_count];
  for (; r + step <= count; r += step) {
    MANY[piece_count](span->rows + r * row_bytes, row_bytes, n, span->init, out + r);
  }
  for (; r < count; r++) {
    ONE[piece_count](span->rows + r * row_bytes, row_bytes, n, span->init, out + r);
  }
}
#endif

void row_sums(const RowSpan *span, const uint64_t *x, uint64_t *out) {
#if defined(__x86_64__)
  if (host_avx2() && span->columns <= MAX_COLUMNS) {
    row_sums_avx2(span, x, out);
    return;
  }
#endif
  row_sums_c(span, x, out);
}

/* row_sums for the tests (tests/inference/test_host_kernels.py): the same call, exported. */
__attribute__((visibility("default"))) void curta_host_row_sums(const uint8_t *rows,
                                                                uint64_t row_bytes,
                                                                uint64_t count,
                                                                uint64_t columns, uint64_t init,
                                                                const uint64_t *x,
                                                                uint64_t *out) {
  RowSpan span = {rows, row_bytes, count, columns, init};
  row_sums(&span, x, out);
}
