/*
 * attend.c: the two product loops of attention, shaped like the matvec kernel (matvec.c
 * explains OPAQUE and the source-order build; kernel.h holds the MAC macros both share).
 *
 * key_dots: for each cached position t, q . key[t] over the head's elements. Three
 * positions share each load of q[i]: 1 + 3 x 3 instructions per 3 multiply-accumulates,
 * the elements unrolled by eight (or two: a head size is even).
 *
 * value_sums: for each of the head's elements i, sum over t of w[t] x value[t][i]. Four
 * elements share each load of w[t] and one pointer into value row t (immediate offsets
 * 0, 8, 16, 24): 1 + 4 x 3 instructions and two pointer steps per 4 MACs.
 */
#include "../kernel.h"

void key_dots(const CacheSpan *c, const int64_t *q, int64_t *dots) {
  const int64_t *keys = c->rows;
  uint64_t stride = c->stride, positions = c->positions, head_size = c->head_size;
  /* Eight elements a round when the head size allows (every stories model's does). */
  uint64_t round = head_size % 8 ? 2 : 8;
  uint64_t t = 0;
  for (; t + 3 <= positions; t += 3) {
    const int64_t *k0 = keys + t * stride;
    const int64_t *k1 = k0 + stride;
    const int64_t *k2 = k1 + stride;
    OPAQUE(k1);
    OPAQUE(k2);
    const int64_t *x = q, *end = q + head_size;
    int64_t s0 = 0, s1 = 0, s2 = 0;
    if (round == 8) {
      do {
        COLUMN3(0, k0, k1, k2);
        COLUMN3(1, k0, k1, k2);
        COLUMN3(2, k0, k1, k2);
        COLUMN3(3, k0, k1, k2);
        COLUMN3(4, k0, k1, k2);
        COLUMN3(5, k0, k1, k2);
        COLUMN3(6, k0, k1, k2);
        COLUMN3(7, k0, k1, k2);
        x += 8;
        k0 += 8;
        k1 += 8;
        k2 += 8;
      } while (x != end);
    } else {
      do {
        COLUMN3(0, k0, k1, k2);
        COLUMN3(1, k0, k1, k2);
        x += 2;
        k0 += 2;
        k1 += 2;
        k2 += 2;
      } while (x != end);
    }
    dots[t] = s0;
    dots[t + 1] = s1;
    dots[t + 2] = s2;
  }
  for (; t < positions; t++) {
    const int64_t *k0 = keys + t * stride;
    const int64_t *x = q, *end = q + head_size;
    int64_t s0 = 0;
    do {
      int64_t v = x[0];
      MAC(s0, k0, 0);
      v = x[1];
      MAC(s0, k0, 1);
      x += 2;
      k0 += 2;
    } while (x != end);
    dots[t] = s0;
  }
}

void value_sums(const CacheSpan *c, const int64_t *w, int64_t *out) {
  const int64_t *values = c->rows;
  uint64_t stride = c->stride, positions = c->positions, head_size = c->head_size;
  uint64_t i = 0;
  for (; i + 4 <= head_size; i += 4) {
    const int64_t *row = values + i;
    const int64_t *x = w, *end = w + positions;
    int64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    do {
      int64_t v = x[0];
      MAC(s0, row, 0);
      MAC(s1, row, 1);
      MAC(s2, row, 2);
      MAC(s3, row, 3);
      x += 1;
      row += stride;
    } while (x != end);
    out[i] = s0;
    out[i + 1] = s1;
    out[i + 2] = s2;
    out[i + 3] = s3;
  }
  if (i < head_size) { /* the last 2 of a head size that is 2 mod 4 */
    const int64_t *row = values + i;
    const int64_t *x = w, *end = w + positions;
    int64_t s0 = 0, s1 = 0;
    do {
      int64_t v = x[0];
      MAC(s0, row, 0);
      MAC(s1, row, 1);
      x += 1;
      row += stride;
    } while (x != end);
    out[i] = s0;
    out[i + 1] = s1;
  }
}
