/*
 * kernel.h: the multiply-accumulate macros the hot loops share (matvec.c, attend.c).
 *
 * OPAQUE (inference.h) is an empty asm statement that shapes clang's code: matvec.c
 * explains why each use is there. Every macro here is one statement (do { } while (0)).
 */
#ifndef KERNEL_H
#define KERNEL_H

#include "inference.h"

/* One multiply-accumulate of element k of pointer p into sum s, with the activation v in
 * scope: the loaded element (not v) is the multiply's destination, and the add stays in
 * its own sum, in order. The product has the sum's type: matvec.c's sums are unsigned
 * (a batch's packed lanes wrap modulo 2^64 by design), attend.c's signed. */
#define MAC(s, p, k)                                                                           \
  do {                                                                                         \
    __typeof__(s) t = (p)[k];                                                                  \
    OPAQUE(t);                                                                                 \
    t *= v;                                                                                    \
    (s) += t;                                                                                  \
    OPAQUE(s);                                                                                 \
  } while (0)

/* Three MACs sharing one load of x[k]: into sums s0, s1, s2 from pointers p0, p1, p2. */
#define COLUMN3(k, p0, p1, p2)                                                                 \
  do {                                                                                         \
    __typeof__(s0) v = x[k];                                                                   \
    MAC(s0, p0, k);                                                                            \
    MAC(s1, p1, k);                                                                            \
    MAC(s2, p2, k);                                                                            \
  } while (0)

#endif
