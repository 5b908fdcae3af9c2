/*
 * matvec.c: the int8 row-times-vector kernel, the hot loop of inference.
 *
 * A stored row is a u32 scale, 4 zero bytes, then one byte per column (the int8 weight
 * + 128), padded with 128s to a multiple of 8: row_bytes - 8 weight bytes. The kernel
 * returns, per row, sum(stored byte * x) over those bytes; x holds the activations as
 * i64 (no sign extension in the loop) and is zero past the real columns, so the padding
 * adds nothing. The caller subtracts 128 * sum(x) and applies the scale.
 *
 * SBPF charges one compute unit per instruction and has no multiply-accumulate, so a
 * MAC is at best a byte load, a multiply and an add. Three rows share each activation
 * load: per column 1 + 3 x 3 instructions for 3 MACs. The column loop is unrolled 32
 * times with immediate offsets, and pays 4 pointer increments and a branch per 96 MACs:
 * about 3.4 compute units per MAC (scripts/bench_program_cu.py measures it).
 *
 * That needs 10 registers (3 row pointers, the activation pointer and end, 3 sums, the
 * activation and one product), which is all BPF has, so the code is shaped for clang:
 * - the build schedules in source order (-pre-RA-sched=source in scripts/build_program.py);
 * - OPAQUE(v) is an empty asm statement: it emits nothing, and only tells clang that v may
 *   have changed. On a loaded weight it makes the weight (not the shared activation) the
 *   multiply's destination, so the activation is not copied before each multiply; on a sum
 *   it keeps the adds in order, each into its own sum; on the row pointers it stops loop
 *   strength reduction from rebuilding rows 1 and 2 from row 0 on every iteration.
 * No instruction comes from the asm, so the SBPF v0 and v3 builds share this source.
 */
#include "../kernel.h"

/* Column k of the three rows (w0, w1, w2), and of the one row w0. */
#define ROWS3(k) COLUMN3(k, w0, w1, w2)

#define ROW1(k)                                                                                \
  do {                                                                                         \
    int64_t v = x[k];                                                                          \
    MAC(s0, w0, k);                                                                            \
  } while (0)

/* Eight consecutive columns from k: 8 statements in one. */
#define EIGHT(column, k)                                                                       \
  do {                                                                                         \
    column(k);                                                                                 \
    column(k + 1);                                                                             \
    column(k + 2);                                                                             \
    column(k + 3);                                                                             \
    column(k + 4);                                                                             \
    column(k + 5);                                                                             \
    column(k + 6);                                                                             \
    column(k + 7);                                                                             \
  } while (0)

/* Three consecutive rows whose weight bytes start at w0; n (a multiple of 8) columns. */
static void sums3(const uint8_t *w0, uint64_t row_bytes, const int64_t *x, uint64_t n,
                  int64_t *out) {
  const uint8_t *w1 = w0 + row_bytes;
  const uint8_t *w2 = w1 + row_bytes;
  OPAQUE(w1);
  OPAQUE(w2);
  const int64_t *end32 = x + (n & ~(uint64_t)31);
  const int64_t *end = x + n;
  int64_t s0 = 0, s1 = 0, s2 = 0;
  if (x != end32) {
    do {
      EIGHT(ROWS3, 0);
      EIGHT(ROWS3, 8);
      EIGHT(ROWS3, 16);
      EIGHT(ROWS3, 24);
      x += 32;
      w0 += 32;
      w1 += 32;
      w2 += 32;
    } while (x != end32);
  }
  if (x != end) {
    do {
      EIGHT(ROWS3, 0);
      x += 8;
      w0 += 8;
      w1 += 8;
      w2 += 8;
    } while (x != end);
  }
  out[0] = s0;
  out[1] = s1;
  out[2] = s2;
}

/* One row: the rows left over after the triples. */
static int64_t sums1(const uint8_t *w0, const int64_t *x, uint64_t n) {
  const int64_t *end = x + n;
  int64_t s0 = 0;
  do {
    EIGHT(ROW1, 0);
    x += 8;
    w0 += 8;
  } while (x != end);
  return s0;
}

void row_sums(const uint8_t *rows, uint64_t row_bytes, uint64_t count, const int64_t *x,
              int64_t *out) {
  /* A row is at least 16 bytes (8 of header, 1 to 8 columns): n >= 8 and a multiple of 8. */
  uint64_t n = row_bytes - ROW_PREFIX;
  uint64_t r = 0;
  for (; r + 3 <= count; r += 3) {
    sums3(rows + r * row_bytes + ROW_PREFIX, row_bytes, x, n, out + r);
  }
  for (; r < count; r++) {
    out[r] = sums1(rows + r * row_bytes + ROW_PREFIX, x, n);
  }
}
