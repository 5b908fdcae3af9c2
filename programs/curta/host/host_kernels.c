/*
 * host_kernels.c: the host build's matrix-vector products, with AVX2 where the CPU has it.
 *
 * The same three functions as the program's src/matvec.c and src/attend.c, the same
 * integers: each is an exact sum of integer products, and integer addition in i64 gives
 * one result in any order (docs/inference.md bounds every partial sum). The build renames
 * the program's own versions (sbpf_row_sums, sbpf_key_dots, sbpf_value_sums) and these
 * call them where AVX2 is missing or an input is outside the range the vector code takes.
 *
 * row_sums: sum of stored byte (0..255) x activation. An activation x in [-2^30, 2^30) is
 * cut into two 16-bit pieces, lo = x & (2^15 - 1) (0..32,767) and hi = x >> 15
 * (-32,768..32,767), so x = hi x 2^15 + lo. vpmaddwd multiplies 16 zero-extended bytes by
 * 16 pieces and adds adjacent pairs into 8 i32 lanes: a pair is at most
 * 2 x 255 x 32,768 = 16,711,680, and a row of at most 2,048 columns gives a lane 128 pairs,
 * at most 2,139,095,040 < 2^31: no lane wraps. The lanes are added in i64 and the two
 * pieces joined: lo + hi x 2^15. An input with a value outside [-2^30, 2^30) (activations
 * of 16,384.0 or more, which saturating models reach) or a row over 2,048 columns goes to
 * the program's kernel.
 *
 * key_dots and value_sums: keys and queries lie within +-2^27 (rotary saturates them),
 * values within i32 (sat32) and softmax weights within 0..2^22, all held in i64 words:
 * vpmuldq multiplies the low 32 bits of each 64-bit lane, sign-extended, into an exact i64
 * product, four at a time, added in i64 as the program adds them (|q . k| <= 2^60,
 * |sum w x v| <= 2^62).
 */
#include <string.h>

#include "../inference.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define AVX2 __attribute__((target("avx2")))
#endif

#define PIECE_BITS 15
#define PIECE_MASK ((1L << PIECE_BITS) - 1)
#define PIECE_LIMIT (1L << 30) /* x in [-2^30, 2^30): hi = x >> 15 fits an i16 */
#define MAX_COLUMNS 2048       /* 128 pairs a lane: below 2^31 (above) */

/* The program's kernels, renamed by the build (host_build.py). */
void sbpf_row_sums(const uint8_t *rows, uint64_t row_bytes, uint64_t count, const int64_t *x,
                   int64_t *out);
void sbpf_key_dots(const CacheSpan *keys, const int64_t *q, int64_t *dots);
void sbpf_value_sums(const CacheSpan *values, const int64_t *w, int64_t *out);

static int avx2 = -1; /* unknown until the first call */

static int has_avx2(void) {
  if (avx2 < 0) {
#if defined(__x86_64__)
    __builtin_cpu_init();
    avx2 = __builtin_cpu_supports("avx2") ? 1 : 0;
#else
    avx2 = 0;
#endif
  }
  return avx2;
}

/* Run the program's own kernels (0) or, where the CPU has AVX2, these (1): the tests and
 * scripts/bench_run.py compare the two. Returns whether AVX2 kernels now run. */
__attribute__((visibility("default"))) int curta_host_use_avx2(int on) {
  avx2 = -1;
  if (on && has_avx2()) {
    return 1;
  }
  avx2 = 0;
  return 0;
}

#if defined(__x86_64__)

/* The two pieces of each activation (zero past n up to a multiple of 16), one set for the
 * process: the host runs one phase at a time (native.py holds a lock around each call). */
static int16_t piece_lo[MAX_COLUMNS] __attribute__((aligned(32)));
static int16_t piece_hi[MAX_COLUMNS] __attribute__((aligned(32)));

/* The activations the pieces were cut from: a matrix's rows come in chunks (forward.c's
 * ROWS_PER_CHUNK), each with the same vector, which is compared rather than cut again. */
static int64_t piece_source[MAX_COLUMNS];
static uint64_t piece_count;

/* Cut x[0..n) into the pieces; false when a value lies outside [-2^30, 2^30). */
static bool cut_pieces(const int64_t *x, uint64_t n) {
  if (n == piece_count && memcmp(x, piece_source, n * sizeof(int64_t)) == 0) {
    return true;
  }
  piece_count = 0;
  for (uint64_t i = 0; i < n; i++) {
    int64_t v = x[i];
    if (v < -PIECE_LIMIT || v >= PIECE_LIMIT) {
      return false;
    }
    piece_lo[i] = (int16_t)(v & PIECE_MASK);
    piece_hi[i] = (int16_t)(v >> PIECE_BITS);
  }
  for (uint64_t i = n; i < ((n + 15) & ~(uint64_t)15); i++) {
    piece_lo[i] = 0;
    piece_hi[i] = 0;
  }
  memcpy(piece_source, x, n * sizeof(int64_t));
  piece_count = n;
  return true;
}

/* 16 stored bytes from w (8 when `half`: a row's last 8 columns), zero-extended to i16. */
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

/* One multiply-accumulate of 16 columns of a row into its two piece sums. */
#define PIECES(w, al, ah)                                                                     \
  do {                                                                                         \
    __m256i b = (w);                                                                           \
    al = _mm256_add_epi32(al, _mm256_madd_epi16(b, xl));                                       \
    ah = _mm256_add_epi32(ah, _mm256_madd_epi16(b, xh));                                       \
  } while (0)

/* Four rows from w0 (row_bytes apart), n columns: the pieces are cut. */
AVX2 static void rows4(const uint8_t *w0, uint64_t row_bytes, uint64_t n, int64_t *out) {
  const uint8_t *w1 = w0 + row_bytes, *w2 = w1 + row_bytes, *w3 = w2 + row_bytes;
  __m256i l0 = _mm256_setzero_si256(), h0 = l0, l1 = l0, h1 = l0, l2 = l0, h2 = l0, l3 = l0,
          h3 = l0;
  uint64_t k = 0;
  for (; k + 16 <= n; k += 16) {
    __m256i xl = _mm256_load_si256((const __m256i *)(piece_lo + k));
    __m256i xh = _mm256_load_si256((const __m256i *)(piece_hi + k));
    PIECES(weights16(w0 + k, false), l0, h0);
    PIECES(weights16(w1 + k, false), l1, h1);
    PIECES(weights16(w2 + k, false), l2, h2);
    PIECES(weights16(w3 + k, false), l3, h3);
  }
  if (k < n) { /* 8 columns left (n is a multiple of 8); the pieces past n are zero */
    __m256i xl = _mm256_load_si256((const __m256i *)(piece_lo + k));
    __m256i xh = _mm256_load_si256((const __m256i *)(piece_hi + k));
    PIECES(weights16(w0 + k, true), l0, h0);
    PIECES(weights16(w1 + k, true), l1, h1);
    PIECES(weights16(w2 + k, true), l2, h2);
    PIECES(weights16(w3 + k, true), l3, h3);
  }
  out[0] = lanes(l0) + lanes(h0) * (1L << PIECE_BITS);
  out[1] = lanes(l1) + lanes(h1) * (1L << PIECE_BITS);
  out[2] = lanes(l2) + lanes(h2) * (1L << PIECE_BITS);
  out[3] = lanes(l3) + lanes(h3) * (1L << PIECE_BITS);
}

AVX2 static int64_t rows1(const uint8_t *w0, uint64_t n) {
  __m256i l0 = _mm256_setzero_si256(), h0 = l0;
  for (uint64_t k = 0; k < n; k += 16) {
    __m256i xl = _mm256_load_si256((const __m256i *)(piece_lo + k));
    __m256i xh = _mm256_load_si256((const __m256i *)(piece_hi + k));
    PIECES(weights16(w0 + k, k + 16 > n), l0, h0);
  }
  return lanes(l0) + lanes(h0) * (1L << PIECE_BITS);
}

/* The sum of the 4 i64 lanes of a. */
AVX2 static inline int64_t lanes64(__m256i a) {
  __m128i pair = _mm_add_epi64(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
  return _mm_cvtsi128_si64(pair) + _mm_extract_epi64(pair, 1);
}

#define LOAD4(p) _mm256_loadu_si256((const __m256i *)(p))

/* The four lanes' sums of a, b, c, d, in that order. */
AVX2 static inline __m256i sums4(__m256i a, __m256i b, __m256i c, __m256i d) {
  __m256i ab = _mm256_add_epi64(_mm256_unpacklo_epi64(a, b), _mm256_unpackhi_epi64(a, b));
  __m256i cd = _mm256_add_epi64(_mm256_unpacklo_epi64(c, d), _mm256_unpackhi_epi64(c, d));
  return _mm256_add_epi64(_mm256_permute2x128_si256(ab, cd, 0x20),
                          _mm256_permute2x128_si256(ab, cd, 0x31));
}

/* dots[t] = q . keys[t]: four positions share each load of q, four elements a product; a
 * head size that is 2 mod 4 ends with a pair added in scalar. */
AVX2 static void key_dots_avx2(const CacheSpan *c, const int64_t *q, int64_t *dots) {
  uint64_t head_size = c->head_size, wide = head_size & ~(uint64_t)3, stride = c->stride;
  uint64_t t = 0;
  for (; t + 4 <= c->positions; t += 4) {
    const int64_t *k0 = c->rows + t * stride, *k1 = k0 + stride, *k2 = k1 + stride,
                  *k3 = k2 + stride;
    __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
    for (uint64_t i = 0; i < wide; i += 4) {
      __m256i qi = LOAD4(q + i);
      s0 = _mm256_add_epi64(s0, _mm256_mul_epi32(LOAD4(k0 + i), qi));
      s1 = _mm256_add_epi64(s1, _mm256_mul_epi32(LOAD4(k1 + i), qi));
      s2 = _mm256_add_epi64(s2, _mm256_mul_epi32(LOAD4(k2 + i), qi));
      s3 = _mm256_add_epi64(s3, _mm256_mul_epi32(LOAD4(k3 + i), qi));
    }
    _mm256_storeu_si256((__m256i *)(dots + t), sums4(s0, s1, s2, s3));
    for (uint64_t i = wide; i < head_size; i++) {
      dots[t] += k0[i] * q[i];
      dots[t + 1] += k1[i] * q[i];
      dots[t + 2] += k2[i] * q[i];
      dots[t + 3] += k3[i] * q[i];
    }
  }
  for (; t < c->positions; t++) {
    const int64_t *k = c->rows + t * stride;
    __m256i s = _mm256_setzero_si256();
    for (uint64_t i = 0; i < wide; i += 4) {
      s = _mm256_add_epi64(s, _mm256_mul_epi32(LOAD4(k + i), LOAD4(q + i)));
    }
    int64_t dot = lanes64(s);
    for (uint64_t i = wide; i < head_size; i++) {
      dot += k[i] * q[i];
    }
    dots[t] = dot;
  }
}

/* out[i] = sum over t of w[t] x values[t][i]: 16 elements a pass over the positions, then
 * 4, then the last pair of a head size that is 2 mod 4 in scalar. */
AVX2 static void value_sums_avx2(const CacheSpan *c, const int64_t *w, int64_t *out) {
  uint64_t head_size = c->head_size, positions = c->positions, stride = c->stride;
  const int64_t *values = c->rows;
  uint64_t i = 0;
  for (; i + 16 <= head_size; i += 16) {
    __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
    for (uint64_t t = 0; t < positions; t++) {
      __m256i wt = _mm256_set1_epi64x(w[t]);
      const int64_t *v = values + t * stride + i;
      s0 = _mm256_add_epi64(s0, _mm256_mul_epi32(wt, LOAD4(v)));
      s1 = _mm256_add_epi64(s1, _mm256_mul_epi32(wt, LOAD4(v + 4)));
      s2 = _mm256_add_epi64(s2, _mm256_mul_epi32(wt, LOAD4(v + 8)));
      s3 = _mm256_add_epi64(s3, _mm256_mul_epi32(wt, LOAD4(v + 12)));
    }
    _mm256_storeu_si256((__m256i *)(out + i), s0);
    _mm256_storeu_si256((__m256i *)(out + i + 4), s1);
    _mm256_storeu_si256((__m256i *)(out + i + 8), s2);
    _mm256_storeu_si256((__m256i *)(out + i + 12), s3);
  }
  for (; i + 4 <= head_size; i += 4) {
    __m256i s0 = _mm256_setzero_si256();
    for (uint64_t t = 0; t < positions; t++) {
      s0 = _mm256_add_epi64(s0, _mm256_mul_epi32(_mm256_set1_epi64x(w[t]),
                                                 LOAD4(values + t * stride + i)));
    }
    _mm256_storeu_si256((__m256i *)(out + i), s0);
  }
  for (; i < head_size; i++) {
    int64_t s = 0;
    for (uint64_t t = 0; t < positions; t++) {
      s += w[t] * values[t * stride + i];
    }
    out[i] = s;
  }
}

/* All rows, four at a time: the pieces are cut. */
AVX2 static void rows_avx2(const uint8_t *rows, uint64_t row_bytes, uint64_t count, uint64_t n,
                           int64_t *out) {
  uint64_t r = 0;
  for (; r + 4 <= count; r += 4) {
    rows4(rows + r * row_bytes + ROW_PREFIX, row_bytes, n, out + r);
  }
  for (; r < count; r++) {
    out[r] = rows1(rows + r * row_bytes + ROW_PREFIX, n);
  }
}

#endif

void row_sums(const uint8_t *rows, uint64_t row_bytes, uint64_t count, const int64_t *x,
              int64_t *out) {
#if defined(__x86_64__)
  uint64_t n = row_bytes - ROW_PREFIX;
  if (has_avx2() && n <= MAX_COLUMNS && cut_pieces(x, n)) {
    rows_avx2(rows, row_bytes, count, n, out);
    return;
  }
#endif
  sbpf_row_sums(rows, row_bytes, count, x, out);
}

void key_dots(const CacheSpan *keys, const int64_t *q, int64_t *dots) {
#if defined(__x86_64__)
  if (has_avx2()) {
    key_dots_avx2(keys, q, dots);
    return;
  }
#endif
  sbpf_key_dots(keys, q, dots);
}

void value_sums(const CacheSpan *values, const int64_t *w, int64_t *out) {
#if defined(__x86_64__)
  if (has_avx2()) {
    value_sums_avx2(values, w, out);
    return;
  }
#endif
  sbpf_value_sums(values, w, out);
}
