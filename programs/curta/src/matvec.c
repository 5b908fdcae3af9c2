/*
 * matvec.c: the int8 row-times-vector kernel, the hot loop of inference.
 *
 * A stored row is a u32 scale, 4 zero bytes, then one byte per column (the int8 weight
 * + 128), padded with 128s to a multiple of 8. The kernel returns, per row, a starting
 * value (the caller's: -128 x the sum of x folds the weights' bias in) plus the sum of
 * stored byte x activation over a span of those bytes (a multiple of 8 columns), modulo
 * 2^64: x holds the activations as 64-bit words (no sign extension in the loop) and is zero
 * past the real columns, so the padding adds nothing. One activation word may be two
 * lanes (a batch's two positions, rows.c): the sums are then the two lanes' sums packed the
 * same way, which is why they are unsigned and wrap.
 *
 * SBPF charges one compute unit per instruction and has no multiply-accumulate, so a MAC
 * is at best a byte load, a multiply and an add. Four rows share each activation load: per
 * column 1 + 4 x 3 instructions for 4 MACs, 3.25 a MAC. That takes all ten registers BPF
 * has (four row pointers, four sums, the activation and a product) and leaves none for a
 * pointer to the activations, so each chunk of up to KERNEL_CHUNK_ROUNDS rounds of
 * KERNEL_WIDE columns is first copied into the kernel's own stack frame, below the 512
 * bytes clang keeps to, and every column loads its activation from the frame pointer r10
 * and a fixed offset: the columns are unrolled in full, as assembly (kernel_asm.h, written
 * by scripts/gen_kernel.py: the assembler takes only literal offsets). No pointer moves
 * inside a chunk. A frame is 4 KiB in both SBPF v0 and v3 and the kernel calls nothing
 * while its chunk is there.
 *
 * The columns past the last whole round, and the rows past the last four, go through C:
 * three rows share each activation load from a pointer (1 + 3 x 3 instructions a column
 * and a round of 8 columns, as below). The step schedule's KERNEL_ROW and KERNEL_CALL
 * (schedule.h) count both.
 *
 * The C loops are shaped for clang: the build schedules in source order (-pre-RA-sched=
 * source in scripts/build_program.py), and OPAQUE(v), an empty asm statement, tells clang
 * only that v may have changed: on a loaded weight it makes the weight (not the shared
 * activation) the multiply's destination, on a sum it keeps the adds in order, on the row
 * pointers it stops loop strength reduction from rebuilding rows 1 and 2 from row 0.
 */
#include "../kernel.h"
#include "../kernel_asm.h"

#define STR_(x) #x
#define STR(x) STR_(x)
#define CHUNK (KERNEL_CHUNK_ROUNDS * KERNEL_WIDE) /* columns the frame holds */
#define SLOT(offset) ((KERNEL_FRAME_X - (offset)) / 8) /* a frame word's index from its bottom */

_Static_assert(KERNEL_FRAME_END >= KERNEL_SLOT_STEP + 8 && KERNEL_SLOT_ROUNDS >= 512 + 8,
               "the chunk and the loop's words sit below the 512 bytes of the frame clang uses");
_Static_assert(KERNEL_FRAME_X <= 4096, "the chunk is inside the kernel's 4 KiB frame");

/* Column k of the three rows (w0, w1, w2), and of the one row w0. */
#define ROWS3(k) COLUMN3(k, w0, w1, w2)

#define ROW1(k)                                                                                \
  do {                                                                                         \
    uint64_t v = x[k];                                                                         \
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

/* Columns of rows for the C loops: `count` rows `row_bytes` apart from `rows`, `columns`
 * (a multiple of 8, at least 8) from x. */
typedef struct {
  const uint8_t *rows;
  uint64_t row_bytes;
  uint64_t count;
  const uint64_t *x;
  uint64_t columns;
} Columns;

/* The C loops: triples of rows, then one at a time; each sum starts at out[r] (add) or at
 * init. */
static void c_sums(const Columns *c, uint64_t *out, bool add, uint64_t init) {
  const uint8_t *w0 = c->rows;
  uint64_t row_bytes = c->row_bytes;
  const uint64_t *start = c->x, *end = c->x + c->columns;
  uint64_t next = row_bytes - c->columns; /* from a row's span end to the next row's span */
  uint64_t *triples_end = out + c->count / 3 * 3, *out_end = out + c->count;
  while (out != triples_end) {
    const uint8_t *w1 = w0 + row_bytes;
    const uint8_t *w2 = w1 + row_bytes;
    OPAQUE(w1);
    OPAQUE(w2);
    uint64_t s0 = add ? out[0] : init, s1 = add ? out[1] : init, s2 = add ? out[2] : init;
    const uint64_t *x = start;
    do {
      EIGHT(ROWS3, 0);
      x += KERNEL_STEP;
      w0 += KERNEL_STEP;
      w1 += KERNEL_STEP;
      w2 += KERNEL_STEP;
    } while (x != end);
    out[0] = s0;
    out[1] = s1;
    out[2] = s2;
    out += 3;
    w0 = w2 + next;
  }
  for (; out != out_end; out++) {
    uint64_t s0 = add ? out[0] : init;
    const uint64_t *x = start;
    do {
      EIGHT(ROW1, 0);
      x += KERNEL_STEP;
      w0 += KERNEL_STEP;
    } while (x != end);
    *out = s0;
    w0 += next;
  }
}

/* The quads of rows from w0 over the frame's chunk (the loop's words set in the frame). */
#define QUADS(w0, w1, w2, w3)                                                                  \
  do {                                                                                         \
    uint64_t s0, s1, s2, s3, v, t;                                                             \
    __asm__ volatile(KERNEL_QUADS_ASM                                                          \
                     : [s0] "=&r"(s0), [s1] "=&r"(s1), [s2] "=&r"(s2), [s3] "=&r"(s3),         \
                       [v] "=&r"(v), [t] "=&r"(t), [w0] "+r"(w0), [w1] "+r"(w1),               \
                       [w2] "+r"(w2), [w3] "+r"(w3)                                            \
                     :                                                                         \
                     : "memory");                                                              \
  } while (0)

void row_sums(const RowSpan *span, const uint64_t *x, uint64_t *out) {
  uint64_t *frame; /* the bottom of this function's frame: the chunk's activations */
  __asm__("%0 = r10\n%0 += -" STR(KERNEL_FRAME_X) "\n" : "=r"(frame));
  uint64_t row_bytes = span->row_bytes, count = span->count, n = span->columns;
  uint64_t wide = n / KERNEL_WIDE * KERNEL_WIDE, quads = count / 4 * 4;
  if (wide && quads) {
    uint64_t init = span->init;
    for (uint64_t *o = out, *end = out + quads; o != end; o += 4) {
      o[0] = o[1] = o[2] = o[3] = init; /* the quads add each chunk's sums to these */
    }
    frame[SLOT(KERNEL_SLOT_OUT_END)] = (uint64_t)(out + quads);
    frame[SLOT(KERNEL_SLOT_STEP)] = 4 * row_bytes;
  }
  for (uint64_t c = 0; c < wide && quads; c += CHUNK) {
    uint64_t chunk = wide - c < CHUNK ? wide - c : CHUNK;
    for (uint64_t j = 0; j < chunk; j += KERNEL_STEP) {
      const uint64_t *from = x + c + j;
      uint64_t *to = frame + j;
      to[0] = from[0];
      to[1] = from[1];
      to[2] = from[2];
      to[3] = from[3];
      to[4] = from[4];
      to[5] = from[5];
      to[6] = from[6];
      to[7] = from[7];
    }
    frame[SLOT(KERNEL_SLOT_ROUNDS)] = chunk / KERNEL_WIDE;
    frame[SLOT(KERNEL_SLOT_OUT)] = (uint64_t)out;
    const uint8_t *w0 = span->rows + c, *w1 = w0 + row_bytes, *w2 = w1 + row_bytes;
    const uint8_t *w3 = w2 + row_bytes;
    QUADS(w0, w1, w2, w3);
  }
  if (n != wide && quads) { /* the columns past the rounds, of the quads' rows */
    Columns tail = {span->rows + wide, row_bytes, quads, x + wide, n - wide};
    c_sums(&tail, out, wide != 0, span->init);
  }
  if (quads != count) { /* the rows past the quads, every column */
    Columns rest = {span->rows + quads * row_bytes, row_bytes, count - quads, x, n};
    c_sums(&rest, out + quads, false, span->init);
  }
}
