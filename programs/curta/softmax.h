/*
 * softmax.h: a softmax weight through the artifact's exponential table, which attention
 * (forward.c) and the sampler (sample.c) both weigh with (docs/inference.md).
 */
#ifndef SOFTMAX_H
#define SOFTMAX_H

#include "inference.h"

#define EXP_STEP_BITS 8 /* a Q16 distance over the table's steps of 1/EXP_STEPS_PER_UNIT */
#define EXP_LIMIT (TABLE_ENTRIES - 1)
#define WEIGHT_BITS 22
_Static_assert(1 << (ACT_BITS - EXP_STEP_BITS) == EXP_STEPS_PER_UNIT, "256 steps per unit");

/* The softmax weight of a distance below the maximum (Q16, >= 0): Q22. */
static inline int64_t exp_weight(uint64_t distance, const uint32_t *table) {
  uint64_t i = distance >> EXP_STEP_BITS;
  if (i >= EXP_LIMIT) {
    return 0;
  }
  uint64_t f = distance & ((1 << EXP_STEP_BITS) - 1);
  int64_t mixed = (int64_t)(table[i] * ((1 << EXP_STEP_BITS) - f) + table[i + 1] * f);
  return round_shift(mixed, EXP_FRACTION_BITS + EXP_STEP_BITS - WEIGHT_BITS);
}

#endif
