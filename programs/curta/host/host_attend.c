/*
 * host_attend.c: attention's two products for the host build, with AVX2 where the CPU has
 * it: the same functions as the program's src/attend.c (which the build compiles with its
 * key_dots and value_sums renamed sbpf_*, and these call where AVX2 is missing) and the
 * same integers, each an exact sum of integer products added in i64, which gives one
 * result in any order (docs/inference.md bounds every partial sum).
 *
 * Keys and queries lie within +-2^27 (rotary saturates them), values within i32 (sat32)
 * and softmax weights within 0..2^22, all held in i64 words: vpmuldq multiplies the low
 * 32 bits of each 64-bit lane, sign-extended, into an exact i64 product, four at a time,
 * added in i64 as the program adds them (|q . k| <= 2^60, |sum w x v| <= 2^62).
 */
#include "../inference.h"

/* The program's kernels, renamed by the build (host_build.py). */
void sbpf_key_dots(const CacheSpan *keys, const int64_t *q, int64_t *dots);
void sbpf_value_sums(const CacheSpan *values, const int64_t *w, int64_t *out);

#if defined(__x86_64__)
#include <immintrin.h>
#define AVX2 __attribute__((target("avx2")))

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

#endif

void key_dots(const CacheSpan *keys, const int64_t *q, int64_t *dots) {
#if defined(__x86_64__)
  if (host_avx2()) {
    key_dots_avx2(keys, q, dots);
    return;
  }
#endif
  sbpf_key_dots(keys, q, dots);
}

void value_sums(const CacheSpan *values, const int64_t *w, int64_t *out) {
#if defined(__x86_64__)
  if (host_avx2()) {
    value_sums_avx2(values, w, out);
    return;
  }
#endif
  sbpf_value_sums(values, w, out);
}
