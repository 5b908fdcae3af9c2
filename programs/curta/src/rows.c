/*
 * rows.c: a phase's matrix rows (docs/inference.md, "Row times vector", "Two positions at
 * once").
 *
 * A phase's rows are up to three matrices stacked (query, key, value; gate, up), sliced
 * by rows as the step's budget allows (schedule.h's cost model). Every row is the kernel's
 * sum (matvec.c) less 128 x the sum of the input, scaled, then stored, added to the
 * residual, or (the classifier) stored with the running maximum.
 *
 * A batch of two lanes loads each weight byte once for both: the kernel runs on one
 * vector of packed words X = x0 + 2^32 x1 (modulo 2^64), so one multiply and one add
 * make both lanes' products, and a row's packed sum is A + 2^32 B modulo 2^64 where A
 * and B are the two lanes' sums. Those are recovered exactly when each lies in a known
 * window of 2^32: a stored byte is 128 + w with w in -128..127, so over a span of
 * columns a lane's sum is 128 S + (a sum of w x within +-128 L), S its sum of x and L of
 * |x| there: it lies in [128 (S - L), 128 (S + L)], a window of 2^32 when 256 L < 2^32.
 * The plan cuts the columns into segments where that holds for both lanes (a group of 8
 * columns where it cannot runs each lane on its own, the plain kernel), and a row's lanes
 * are the sums of its segments. The bits are a single position's, whatever the
 * activations; the plan (and with it the cost of a row) depends on them, and the mirror
 * plans the same way (curta_chain/onchain/mirror/batch.py).
 */
#include "../inference.h"

#define ROWS_PER_CHUNK ROWS_PER_CALL /* a batch's rows whose lanes' sums the heap holds at once */
#define SINGLE_CHUNK 3072 /* one lane's rows whose sums the heap holds at once */
#define LANE_SPAN 16777215 /* (2^32 - 1) / 256: a lane's largest sum of |x| over a segment */
#define LANE_SHIFT 32
#define GROUP 8 /* columns the plan looks at together (the kernel's step) */
#define INT64_MIN_VALUE (-9223372036854775807L - 1)

/* ---- The heap during a rows phase (SCRATCH): sums, lane sums, packed words, plan. ---- */

typedef struct {
  uint64_t first;   /* its first column (a multiple of 8) */
  uint64_t columns; /* a multiple of 8 */
  uint64_t packed;  /* 1: both lanes in one word; 0: each lane on its own */
  int64_t low[MAX_LANES]; /* packed: where the lane's window starts, 128 (S - L) */
} Segment;

typedef struct {
  uint64_t segments;
  uint64_t kernel;    /* a row's kernel units: a packed segment's call once, a plain one's twice */
  uint64_t call;      /* the calls of a chunk of rows, beyond their rows */
  uint64_t remainder; /* ...and their last rows in C */
  int64_t bias[MAX_LANES]; /* 128 x the lane's sum of x */
} Plan;

#define SUMS ((uint64_t *)SCRATCH)
#define LANE_SUMS ((int64_t *)(SCRATCH + 8 * ROWS_PER_CHUNK))
#define PACKED ((uint64_t *)(SCRATCH + 8 * (1 + MAX_LANES) * ROWS_PER_CHUNK))
#define PLAN ((Plan *)(PACKED + MAX_HIDDEN_DIM))
#define SEGMENTS ((Segment *)(PLAN + 1))
#define GROUPS ((Group *)PACKED) /* the plan's first pass, before the words are packed */
_Static_assert(8 * (1 + MAX_LANES) * ROWS_PER_CHUNK + 8 * MAX_HIDDEN_DIM + sizeof(Plan) +
                       sizeof(Segment) * (MAX_HIDDEN_DIM / GROUP) <=
                   SCRATCH_SIZE,
               "a rows phase's scratch fits the heap");
_Static_assert(4 * (MAX_HIDDEN_DIM / GROUP) <= MAX_HIDDEN_DIM, "the groups fit the packed words");
_Static_assert(8 * SINGLE_CHUNK <= SCRATCH_SIZE, "one lane's sums fit the heap");

/* round(acc x scale / 2^24), split so that no product passes 2^57; and that saturated. */
static int64_t unsaturated(int64_t acc, uint64_t scale) {
  int64_t hi = acc >> SCALE_BITS;
  int64_t lo = acc & ((1L << SCALE_BITS) - 1);
  return hi * (int64_t)scale + round_shift(lo * (int64_t)scale, SCALE_BITS);
}
static int64_t scale_row(int64_t acc, uint64_t scale) { return sat32(unsaturated(acc, scale)); }

/* The row's scale: its first u32 (rows are 8-aligned in their section). */
static uint64_t scale_of(const uint8_t *row) { return *(const uint32_t *)row; }

/* The sum of x over `padded` (a multiple of 8) columns, 8 a round. */
static int64_t sum_of(const int64_t *x, uint64_t padded) {
  int64_t sum = 0;
  for (const int64_t *end = x + padded; x != end; x += GROUP) {
    sum += x[0] + x[1] + x[2] + x[3] + x[4] + x[5] + x[6] + x[7];
  }
  return sum;
}

/* Rows of one matrix a slice covers, and where they go. */
typedef struct {
  const MatrixDescriptor *matrix;
  uint64_t first; /* the first row */
  uint64_t count;
  int64_t *dst[MAX_LANES]; /* the first row's destination, a lane */
  int64_t bias;            /* one lane: 128 x the sum of its x */
} Portion;

/* A chunk of a portion's rows whose sums are on the heap. */
typedef struct {
  const uint8_t *rows; /* its first row */
  uint64_t row_bytes;
  uint64_t count;
  uint64_t id;   /* its first row's index in the matrix */
  uint64_t kind; /* RowsKind */
} Chunk;

/* A chunk's rows from their sums (`acc`, the bias in): scaled, then stored where its kind
 * says. `acc` may be `dst` itself (the kernel wrote the sums there). */
static void finish(Run *run, const Chunk *c, const int64_t *acc, int64_t *dst) {
  const uint8_t *rows = c->rows;
  uint64_t row_bytes = c->row_bytes;
  const int64_t *end = acc + c->count;
  if (c->kind == ROWS_STORE) {
    for (; acc != end; acc++, dst++, rows += row_bytes) {
      *dst = scale_row(*acc, scale_of(rows));
    }
  } else if (c->kind == ROWS_RESIDUAL) {
    for (; acc != end; acc++, dst++, rows += row_bytes) {
      *dst = sat32(*dst + scale_row(*acc, scale_of(rows)));
    }
  } else {
    /* The running maximum and where it is: the run's, or (from id 0) below every i32. */
    int64_t best = c->id ? run->best_logit : INT64_MIN_VALUE;
    const int64_t *at = 0, *first = acc;
    if (c->kind == ROWS_LOGITS) {
      for (; acc != end; acc++, dst++, rows += row_bytes) {
        int64_t value = scale_row(*acc, scale_of(rows));
        *dst = value;
        if (value > best) {
          /* Rare after the first rows: a branch, not a select on every row. */
          best = value;
          at = acc;
          OPAQUE(at);
        }
      }
    } else {
      /* Greedy keeps no logit. best is an i32, and sat32 keeps the order: a row whose
       * unsaturated value is at most best cannot pass it, and only one above is saturated. */
      for (; acc != end; acc++, rows += row_bytes) {
        int64_t value = unsaturated(*acc, scale_of(rows));
        if (value > best && sat32(value) > best) {
          best = sat32(value);
          at = acc;
          OPAQUE(at);
        }
      }
    }
    if (at) {
      run->best_logit = best;
      run->best_token = (uint32_t)(c->id + (uint64_t)(at - first));
    }
  }
}

/* The first chunk of a portion's rows. */
static Chunk first_chunk(const Step *s, const Rows *r, const Portion *p) {
  const MatrixDescriptor *m = p->matrix;
  const uint8_t *rows = s->sections[m->section] + m->offset + p->first * m->row_bytes;
  return (Chunk){rows, m->row_bytes, 0, p->first, r->kind};
}

/* One lane: a portion's rows. The kernel writes the sums where the rows go, unless they
 * are added there (the residual) or not kept (greedy's classifier): then on the heap, as
 * many as it holds at a time. */
static void single_rows(const Step *s, const Rows *r, const Portion *p) {
  Chunk c = first_chunk(s, r, p);
  bool in_place = c.kind == ROWS_STORE || c.kind == ROWS_LOGITS;
  uint64_t most = in_place ? p->count : SINGLE_CHUNK;
  RowSpan span = {0, c.row_bytes, 0, c.row_bytes - ROW_PREFIX, (uint64_t)-p->bias};
  for (uint64_t done = 0; done < p->count; done += c.count) {
    c.count = p->count - done < most ? p->count - done : most;
    span.rows = c.rows + ROW_PREFIX;
    span.count = c.count;
    int64_t *dst = p->dst[0] + done;
    int64_t *sums = in_place ? dst : (int64_t *)SUMS;
    row_sums(&span, (const uint64_t *)r->x[0], (uint64_t *)sums);
    finish(s->run, &c, sums, dst);
    c.rows += c.count * c.row_bytes;
    c.id += c.count;
  }
}

/* Add a segment to the plan: its next. */
static void add_segment(Plan *plan, uint64_t first, uint64_t columns, uint64_t packed,
                        const int64_t low[MAX_LANES]) {
  uint64_t calls = packed ? 1 : MAX_LANES;
  Segment *g = SEGMENTS + plan->segments;
  g->first = first;
  g->columns = columns;
  g->packed = packed;
  g->low[0] = low[0];
  g->low[1] = low[1];
  plan->segments += 1;
  /* A call's own cost spread over its rows (at most ROWS_PER_CALL), rounded up. */
  plan->kernel += calls * (KERNEL_ROW(columns) + (KERNEL_CALL(columns) + ROWS_PER_CALL - 1) /
                                                     ROWS_PER_CALL);
  plan->call += calls * KERNEL_CALL(columns);
  plan->remainder += calls * KERNEL_REMAINDER(columns);
}

/* Eight packed words: lane 1's activation shifted up, plus lane 0's. */
#define PACK1(w, a, b, k) ((w)[k] = ((b)[k] << LANE_SHIFT) + (a)[k])
#define PACK8(w, a, b)                                                                         \
  do {                                                                                         \
    PACK1(w, a, b, 0);                                                                         \
    PACK1(w, a, b, 1);                                                                         \
    PACK1(w, a, b, 2);                                                                         \
    PACK1(w, a, b, 3);                                                                         \
    PACK1(w, a, b, 4);                                                                         \
    PACK1(w, a, b, 5);                                                                         \
    PACK1(w, a, b, 6);                                                                         \
    PACK1(w, a, b, 7);                                                                         \
  } while (0)

/* A group of 8 columns: each lane's sum of |x| (its span) and sum of x less that. */
typedef struct {
  uint64_t span[MAX_LANES];
  int64_t low[MAX_LANES];
} Group;

/* Each group of one lane: its span and sum less span (no branch); the lane's sum of x. */
static int64_t group_sums(const int64_t *x, uint64_t groups, Group *group, uint64_t lane) {
  int64_t total = 0;
  for (uint64_t g = 0; g < groups; g++, x += GROUP) {
    int64_t sum = 0;
    uint64_t span = 0;
    for (uint64_t j = 0; j < GROUP; j++) {
      int64_t v = x[j], sign = v >> 63;
      sum += v;
      span += (uint64_t)((v ^ sign) - sign);
    }
    group[g].span[lane] = span;
    group[g].low[lane] = sum - (int64_t)span;
    total += sum;
  }
  return total;
}

/* The packed words and the segments of a batch's two input vectors (`padded` columns,
 * zero past the real ones), and the lanes' biases. */
static void plan_batch(const Rows *r, uint64_t padded) {
  Plan *plan = PLAN;
  uint64_t groups = padded / GROUP;
  const Group *group = GROUPS;
  plan->bias[0] = WEIGHT_BIAS * group_sums(r->x[0], groups, GROUPS, 0);
  plan->bias[1] = WEIGHT_BIAS * group_sums(r->x[1], groups, GROUPS, 1);
  /* The heap outlives a phase within the step: an earlier plan may be there. */
  plan->segments = plan->kernel = plan->call = plan->remainder = 0;
  uint64_t i = 0;
  while (i < groups) {
    uint64_t first = i;
    int64_t low[MAX_LANES] = {0, 0};
    uint64_t packed = group[i].span[0] <= LANE_SPAN && group[i].span[1] <= LANE_SPAN;
    if (packed) {
      /* As many groups as keep both lanes' spans within the window. */
      uint64_t span0 = 0, span1 = 0;
      do {
        span0 += group[i].span[0];
        span1 += group[i].span[1];
        low[0] += group[i].low[0];
        low[1] += group[i].low[1];
        i++;
      } while (i < groups && span0 + group[i].span[0] <= LANE_SPAN &&
               span1 + group[i].span[1] <= LANE_SPAN);
      /* 128 (sum - sum of |x|): where the lane's window starts (the file's comment). */
      low[0] *= WEIGHT_BIAS;
      low[1] *= WEIGHT_BIAS;
    } else {
      do {
        i++;
      } while (i < groups && (group[i].span[0] > LANE_SPAN || group[i].span[1] > LANE_SPAN));
    }
    add_segment(plan, first * GROUP, (i - first) * GROUP, packed, low);
  }
  /* The groups are spent: the packed words take their place, 8 a round. */
  const uint64_t *x0 = (const uint64_t *)r->x[0], *x1 = (const uint64_t *)r->x[1];
  uint64_t *words = PACKED;
  for (uint64_t j = 0; j < padded; j += GROUP) {
    PACK8(words + j, x0 + j, x1 + j);
  }
}

/* A chunk's rows, both lanes: each segment's sums, unpacked, into the lanes' sums. */
static void lane_sums(const Rows *r, const Chunk *c) {
  const Plan *plan = PLAN;
  int64_t *acc0 = LANE_SUMS, *acc1 = LANE_SUMS + ROWS_PER_CHUNK;
  uint64_t n = c->count;
  int64_t bias0 = plan->bias[0], bias1 = plan->bias[1];
  for (uint64_t i = 0; i < n; i++) {
    acc0[i] = -bias0;
    acc1[i] = -bias1;
  }
  for (uint64_t k = 0; k < plan->segments; k++) {
    const Segment *g = SEGMENTS + k;
    RowSpan span = {c->rows + ROW_PREFIX + g->first, c->row_bytes, n, g->columns, 0};
    if (g->packed) {
      row_sums(&span, PACKED + g->first, SUMS);
      int64_t low0 = g->low[0], low1 = g->low[1];
      for (uint64_t i = 0; i < n; i++) {
        /* packed = a + 2^32 b (mod 2^64); a - low0 and b - low1 are in [0, 2^32). */
        uint64_t packed = SUMS[i];
        int64_t a = low0 + (int64_t)(uint32_t)(packed - (uint64_t)low0);
        uint64_t high = (packed - (uint64_t)a) >> LANE_SHIFT;
        acc0[i] += a;
        acc1[i] += low1 + (int64_t)(uint32_t)(high - (uint64_t)low1);
      }
    } else {
      row_sums(&span, (const uint64_t *)r->x[0] + g->first, SUMS);
      for (uint64_t i = 0; i < n; i++) {
        acc0[i] += (int64_t)SUMS[i];
      }
      row_sums(&span, (const uint64_t *)r->x[1] + g->first, SUMS);
      for (uint64_t i = 0; i < n; i++) {
        acc1[i] += (int64_t)SUMS[i];
      }
    }
  }
}

/* Both lanes: a portion's rows. */
static void batch_rows(const Step *s, const Rows *r, const Portion *p) {
  Chunk c = first_chunk(s, r, p);
  for (uint64_t done = 0; done < p->count; done += c.count) {
    c.count = p->count - done < ROWS_PER_CHUNK ? p->count - done : ROWS_PER_CHUNK;
    lane_sums(r, &c);
    finish(s->run, &c, LANE_SUMS, p->dst[0] + done);
    finish(s->run, &c, LANE_SUMS + ROWS_PER_CHUNK, p->dst[1] + done);
    c.rows += c.count * c.row_bytes;
    c.id += c.count;
  }
}

bool matrix_phase(Step *s, const Rows *r) {
  Run *run = s->run;
  const MatrixDescriptor *first = matrix_of(s->s0, r->matrix[0]);
  uint64_t total = 0;
  for (uint64_t i = 0; i < r->count; i++) {
    total += matrix_of(s->s0, r->matrix[i])->rows;
  }
  uint64_t padded = first->row_bytes - ROW_PREFIX;
  bool batch = r->lanes > 1;
  uint64_t fixed = batch ? BATCH_FIXED_COST(padded) : ROWS_FIXED_COST(padded, r->count);
  uint64_t per_row = ROW_COST(padded);
  if (s->budget < fixed + (batch ? 0 : per_row) || !has_section(s, first)) {
    return false;
  }
  s->budget -= fixed;
  int64_t bias = 0;
  if (batch) {
    plan_batch(r, padded);
    const Plan *plan = PLAN;
    uint64_t slice = BATCH_SLICE_COST(plan->call, plan->remainder, r->count);
    per_row = BATCH_ROW_COST(plan->kernel, plan->segments);
#ifdef CALIBRATE
    s->plan[0] = plan->kernel;
    s->plan[1] = plan->call;
    s->plan[2] = plan->remainder;
    s->plan[3] = plan->segments;
#endif
    if (s->budget < slice + per_row) {
      return false; /* the plan's fixed cost is spent: the step ends here */
    }
    s->budget -= slice;
  } else {
    bias = WEIGHT_BIAS * sum_of(r->x[0], padded);
  }
  uint64_t n = s->budget / per_row;
  uint64_t left = total - run->cursor;
  n = n < left ? n : left;
  s->budget -= n * per_row;
  /* Rows [cursor, cursor + n) of the stacked list, matrix by matrix. */
  uint64_t start = run->cursor, end = run->cursor + n, base = 0;
  for (uint64_t i = 0; i < r->count; i++) {
    const MatrixDescriptor *m = matrix_of(s->s0, r->matrix[i]);
    uint64_t lo = start > base ? start : base;
    uint64_t hi = end < base + m->rows ? end : base + m->rows;
    if (lo < hi) {
      Portion p = {m, lo - base, hi - lo, {r->dst[0][i] + (lo - base), 0}, bias};
      if (batch) {
        p.dst[1] = r->dst[1][i] + (lo - base);
        batch_rows(s, r, &p);
      } else {
        single_rows(s, r, &p);
      }
    }
    base += m->rows;
  }
  run->cursor = (uint32_t)end;
  if (end == total) {
    next_phase(s);
  }
  return true;
}
