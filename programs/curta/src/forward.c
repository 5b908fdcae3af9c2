/*
 * forward.c: one token's forward pass, phase by phase (docs/inference.md's arithmetic).
 *
 * A token is EMBED, then per layer ATT_NORM, QKV, ROPE, ATTENTION, OUTPUT, FFN_NORM,
 * GATE_UP, SWIGLU and DOWN, then FINAL_NORM, CLASSIFIER and SAMPLE. While the next token
 * is still the prompt's, the position ends after the last layer (no classifier). Matrix
 * phases are sliced by rows and attention by heads; the rest are whole. Each phase
 * function spends from the step's budget with the cost model of schedule.h and returns
 * false when not even its smallest slice fits (the mirror reads the same table: a step
 * ends where the mirror says it does).
 */
#include "../inference.h"
#include "../softmax.h"

#define ROWS_PER_CHUNK 96 /* row sums kept on the heap at once */

#define EPS_Q32 42950           /* 1e-5 with 32 fractional bits */
#define NORM_SQUARE_BITS 26
#define INV_BITS 61
#define QK_LIMIT (1L << 27)
#define SILU_STEP_SHIFT 9
#define SILU_EDGE ((int64_t)SILU_RANGE << ACT_BITS)

/* ---- Arithmetic. ---- */

static uint64_t bit_length(uint64_t v) {
  uint64_t n = 0;
  while (v) {
    n++;
    v >>= 1;
  }
  return n;
}

/* floor(sqrt(u)) for u < 2^62, one result bit per round. */
static uint64_t isqrt(uint64_t u) {
  uint64_t r = 0;
  uint64_t bit = 1UL << 62;
  while (bit > u) {
    bit >>= 2;
  }
  while (bit) {
    if (u >= r + bit) {
      u -= r + bit;
      r = (r >> 1) + bit;
    } else {
      r >>= 1;
    }
    bit >>= 2;
  }
  return r;
}

/* n / d rounded half away from zero, with unsigned division (d >= 1). */
static int64_t divide_rounded(int64_t n, uint64_t d) {
  uint64_t magnitude = ((uint64_t)(n < 0 ? -n : n) + d / 2) / d;
  return n < 0 ? -(int64_t)magnitude : (int64_t)magnitude;
}

/* out = rmsnorm(x) x weight: Q16 in, Q24 weights, Q16 out (docs/inference.md). */
static void rmsnorm(const int64_t *x, const int32_t *weight, uint64_t n, int64_t *out) {
  uint64_t largest = 0;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t a = (uint64_t)(x[i] < 0 ? -x[i] : x[i]);
    largest = a > largest ? a : largest;
  }
  uint64_t bits = bit_length(largest);
  uint64_t shift = bits > NORM_SQUARE_BITS ? bits - NORM_SQUARE_BITS : 0;
  uint64_t squares = 0;
  for (uint64_t i = 0; i < n; i++) {
    int64_t v = x[i] >> shift;
    squares += (uint64_t)(v * v);
  }
  uint64_t mean = squares / n + (EPS_Q32 >> (2 * shift));
  uint64_t even = (62 - bit_length(mean)) & ~(uint64_t)1;
  uint64_t inverse = (1UL << INV_BITS) / isqrt(mean << even);
  uint64_t out_shift = INV_BITS - ACT_BITS - even / 2 + shift;
  for (uint64_t i = 0; i < n; i++) {
    int64_t normed = round_shift(x[i] * (int64_t)inverse, out_shift);
    out[i] = round_shift(normed * weight[i], SCALE_BITS);
  }
}

/* SiLU of a Q16 value through the table (Q16 entries, steps of 1/128 from -16). */
static int64_t silu(int64_t g, const int32_t *table) {
  if (g >= SILU_EDGE) {
    return g;
  }
  if (g < -SILU_EDGE) {
    return 0;
  }
  uint64_t a = (uint64_t)(g + SILU_EDGE);
  uint64_t i = a >> SILU_STEP_SHIFT;
  int64_t f = (int64_t)(a & ((1 << SILU_STEP_SHIFT) - 1));
  return round_shift(table[i] * ((1 << SILU_STEP_SHIFT) - f) + table[i + 1] * f,
                     SILU_STEP_SHIFT);
}

/* sat32(round(acc x scale / 2^24)), split so that no product passes 2^57. */
static int64_t scale_row(int64_t acc, uint64_t scale) {
  int64_t hi = acc >> SCALE_BITS;
  int64_t lo = acc & ((1L << SCALE_BITS) - 1);
  return sat32(hi * (int64_t)scale + round_shift(lo * (int64_t)scale, SCALE_BITS));
}

/* ---- Phases. ---- */

static uint64_t kv_dim_of(const Run *run) {
  return (uint64_t)run->dim * run->kv_heads / run->heads;
}

/* The key (or value) row of a layer and position. */
static int64_t *cache_row(const Step *s, uint64_t region, uint64_t layer, uint64_t position) {
  const Run *run = s->run;
  return region_i64(s, region) + (layer * run_positions(run) + position) * kv_dim_of(run);
}

static const int32_t *norm_weights(const Step *s, uint64_t index) {
  return block_i32(s, BLOCK_NORM) + index * s->run->dim;
}

/* The phase is done: on to the next (or, after the last layer of a prompt token, to the
 * next position). */
static void next_phase(Step *s) {
  Run *run = s->run;
  run->cursor = 0;
  if (run->phase + 1 == phase_final_norm(run->layers) && run->position + 1 < run->prompt_tokens) {
    run->position += 1;
    run->phase = PH_EMBED;
    return;
  }
  run->phase += 1;
}

/* Up to three matrices whose rows a phase runs as one list, and where each row goes. */
enum RowsKind {
  ROWS_STORE = 0,    /* dst = row */
  ROWS_RESIDUAL = 1, /* dst = sat32(dst + row) */
  ROWS_LOGITS = 2,   /* dst = row, and the run's running maximum and its lowest id */
};

typedef struct {
  uint64_t count;
  uint64_t matrix[3];
  int64_t *dst[3];
  const int64_t *x;
  uint64_t kind; /* RowsKind */
} Rows;

/* Rows [first, first + count) of matrix m; row `first` goes to dst[0]. */
static void run_rows(const Step *s, const MatrixDescriptor *m, uint64_t first, uint64_t count,
                     const Rows *r, int64_t sum_x, int64_t *dst) {
  Run *run = s->run;
  const uint8_t *rows = s->sections[m->section] + m->offset + first * m->row_bytes;
  int64_t *sums = (int64_t *)SCRATCH; /* the heap is 8-aligned */
  uint64_t id = first;
  while (count) {
    uint64_t n = count < ROWS_PER_CHUNK ? count : ROWS_PER_CHUNK;
    row_sums(rows, m->row_bytes, n, r->x, sums);
    for (uint64_t i = 0; i < n; i++, id++) {
      /* The scale is the row's first u32; rows are 8-aligned in their section. */
      uint64_t scale = *(const uint32_t *)(rows + i * m->row_bytes);
      int64_t value = scale_row(sums[i] - WEIGHT_BIAS * sum_x, scale);
      if (r->kind == ROWS_RESIDUAL) {
        value = sat32(dst[i] + value);
      } else if (r->kind == ROWS_LOGITS && (id == 0 || value > run->best_logit)) {
        run->best_logit = value;
        run->best_token = (uint32_t)id;
      }
      dst[i] = value;
    }
    rows += n * m->row_bytes;
    dst += n;
    count -= n;
  }
}

/* The section a phase's rows (or embedding row) are in, when the step was passed it; else
 * the step is refused (step.c). A phase's matrices share one section (openRun checks it). */
static bool has_section(Step *s, const MatrixDescriptor *m) {
  s->missing = !s->sections[m->section];
  return !s->missing;
}

static bool matrix_phase(Step *s, const Rows *r) {
  Run *run = s->run;
  const MatrixDescriptor *first = matrix_of(s->s0, r->matrix[0]);
  uint64_t total = 0;
  for (uint64_t i = 0; i < r->count; i++) {
    total += matrix_of(s->s0, r->matrix[i])->rows;
  }
  uint64_t columns = first->columns;
  uint64_t padded = first->row_bytes - ROW_PREFIX;
  uint64_t per_row = ROW_COST(padded);
  uint64_t fixed = ROWS_FIXED_COST(padded);
  if (s->budget < fixed + per_row || !has_section(s, first)) {
    return false;
  }
  uint64_t n = (s->budget - fixed) / per_row;
  uint64_t left = total - run->cursor;
  n = n < left ? n : left;
  s->budget -= fixed + n * per_row;
  int64_t sum_x = 0;
  for (uint64_t c = 0; c < columns; c++) {
    sum_x += r->x[c];
  }
  /* Rows [cursor, cursor + n) of the stacked list, matrix by matrix. */
  uint64_t start = run->cursor, end = run->cursor + n, base = 0;
  for (uint64_t i = 0; i < r->count; i++) {
    const MatrixDescriptor *m = matrix_of(s->s0, r->matrix[i]);
    uint64_t lo = start > base ? start : base;
    uint64_t hi = end < base + m->rows ? end : base + m->rows;
    if (lo < hi) {
      run_rows(s, m, lo - base, hi - lo, r, sum_x, r->dst[i] + (lo - base));
    }
    base += m->rows;
  }
  run->cursor = (uint32_t)end;
  if (end == total) {
    next_phase(s);
  }
  return true;
}

static bool embed(Step *s) {
  Run *run = s->run;
  const MatrixDescriptor *m = matrix_of(s->s0, MAT_EMBEDDING);
  if (!spend(s, EMBED_COST(run->dim)) || !has_section(s, m)) {
    return false;
  }
  uint64_t token = region_u32(s, REGION_TOKENS)[run->position];
  const uint8_t *row = s->sections[m->section] + m->offset + token * m->row_bytes;
  int64_t scale = *(const uint32_t *)row; /* rows are 8-aligned in their section */
  int64_t *x = region_i64(s, REGION_X);
  for (uint64_t i = 0; i < run->dim; i++) {
    int64_t q = (int64_t)row[ROW_PREFIX + i] - WEIGHT_BIAS;
    x[i] = round_shift(q * scale, SCALE_BITS - ACT_BITS);
  }
  next_phase(s);
  return true;
}

static bool norm(Step *s, uint64_t index) {
  Run *run = s->run;
  if (!spend(s, NORM_COST(run->dim))) {
    return false;
  }
  rmsnorm(region_i64(s, REGION_X), norm_weights(s, index), run->dim, region_i64(s, REGION_XB));
  next_phase(s);
  return true;
}

/* Rotate each pair of v (heads of head_size) by the position's angles; saturate to 2^27. */
static void rotate(int64_t *v, uint64_t n, uint64_t head_size, const int32_t *angles) {
  for (uint64_t i = 0; i < n; i += 2) {
    const int32_t *cs = angles + (i % head_size); /* cos, sin of pair (i % head_size) / 2 */
    int64_t a = v[i], b = v[i + 1], c = cs[0], sn = cs[1];
    int64_t ra = round_shift(a * c - b * sn, SCALE_BITS);
    int64_t rb = round_shift(a * sn + b * c, SCALE_BITS);
    v[i] = ra < -QK_LIMIT ? -QK_LIMIT : ra > QK_LIMIT ? QK_LIMIT : ra;
    v[i + 1] = rb < -QK_LIMIT ? -QK_LIMIT : rb > QK_LIMIT ? QK_LIMIT : rb;
  }
}

static bool rope(Step *s, uint64_t layer) {
  Run *run = s->run;
  uint64_t kv_dim = kv_dim_of(run);
  if (!spend(s, ROPE_COST(run->dim, kv_dim))) {
    return false;
  }
  uint64_t head_size = run->dim / run->heads;
  const int32_t *angles = block_i32(s, BLOCK_ROTARY) + run->position * head_size;
  rotate(region_i64(s, REGION_Q), run->dim, head_size, angles);
  rotate(cache_row(s, REGION_KEYS, layer, run->position), kv_dim, head_size, angles);
  next_phase(s);
  return true;
}

static void attend(const Step *s, uint64_t layer, uint64_t head) {
  const Run *run = s->run;
  uint64_t head_size = run->dim / run->heads;
  uint64_t kv_dim = kv_dim_of(run);
  uint64_t offset = head / (run->heads / run->kv_heads) * head_size;
  uint64_t positions = run->position + 1;
  const int64_t *q = region_i64(s, REGION_Q) + head * head_size;
  int64_t inv_sqrt = read_u32(s->s0 + INV_SQRT_OFFSET);
  int64_t *weights = (int64_t *)SCRATCH; /* a position's dot, then its score, then weight */
  int64_t *sums = weights + MAX_SEQ_LEN;
  CacheSpan span = {cache_row(s, REGION_KEYS, layer, 0) + offset, kv_dim, positions, head_size};
  key_dots(&span, q, weights);
  int64_t largest = 0;
  for (uint64_t t = 0; t < positions; t++) {
    int64_t score = round_shift(sat32(round_shift(weights[t], ACT_BITS)) * inv_sqrt, SCALE_BITS);
    weights[t] = score;
    largest = (t == 0 || score > largest) ? score : largest;
  }
  const uint32_t *table = block_u32(s, BLOCK_EXP);
  uint64_t total = 0;
  for (uint64_t t = 0; t < positions; t++) {
    weights[t] = exp_weight((uint64_t)(largest - weights[t]), table);
    total += (uint64_t)weights[t];
  }
  span.rows = cache_row(s, REGION_VALUES, layer, 0) + offset;
  value_sums(&span, weights, sums);
  int64_t *out = region_i64(s, REGION_XB) + head * head_size;
  for (uint64_t i = 0; i < head_size; i++) {
    out[i] = divide_rounded(sums[i], at_least_one(total));
  }
}

static bool attention(Step *s, uint64_t layer) {
  Run *run = s->run;
  uint64_t head_size = run->dim / run->heads;
  uint64_t positions = run->position + 1;
  uint64_t per_head = HEAD_COST(head_size, positions);
  if (s->budget < COST_ATTENTION + per_head) {
    return false;
  }
  uint64_t n = (s->budget - COST_ATTENTION) / per_head;
  uint64_t left = run->heads - run->cursor;
  n = n < left ? n : left;
  s->budget -= COST_ATTENTION + n * per_head;
  for (uint64_t h = run->cursor; h < run->cursor + n; h++) {
    attend(s, layer, h);
  }
  run->cursor += (uint32_t)n;
  if (run->cursor == run->heads) {
    next_phase(s);
  }
  return true;
}

static bool swiglu(Step *s) {
  Run *run = s->run;
  if (!spend(s, SWIGLU_COST(run->hidden_dim))) {
    return false;
  }
  const int32_t *table = block_i32(s, BLOCK_SILU);
  int64_t *gate = region_i64(s, REGION_HB);
  const int64_t *up = region_i64(s, REGION_HB2);
  for (uint64_t i = 0; i < run->hidden_dim; i++) {
    gate[i] = sat32(round_shift(silu(gate[i], table) * up[i], ACT_BITS));
  }
  next_phase(s);
  return true;
}

bool forward_phase(Step *s) {
  Run *run = s->run;
  uint64_t phase = run->phase, layers = run->layers;
  if (phase == PH_EMBED) {
    return embed(s);
  }
  if (phase == phase_final_norm(layers)) {
    return norm(s, 2 * layers);
  }
  if (phase == phase_classifier(layers)) {
    Rows r = {1, {MAT_CLASSIFIER}, {region_i64(s, REGION_LOGITS)}, region_i64(s, REGION_XB),
              ROWS_LOGITS};
    return matrix_phase(s, &r);
  }
  if (phase == phase_sample(layers)) {
    return sample_phase(s);
  }
  uint64_t layer = (phase - 1) / PHASES_PER_LAYER;
  switch ((phase - 1) % PHASES_PER_LAYER) {
  case PH_ATT_NORM:
    return norm(s, 2 * layer);
  case PH_QKV: {
    Rows r = {3,
              {layer_matrix(layer, MAT_QUERY), layer_matrix(layer, MAT_KEY),
               layer_matrix(layer, MAT_VALUE)},
              {region_i64(s, REGION_Q), cache_row(s, REGION_KEYS, layer, run->position),
               cache_row(s, REGION_VALUES, layer, run->position)},
              region_i64(s, REGION_XB),
              ROWS_STORE};
    return matrix_phase(s, &r);
  }
  case PH_ROPE:
    return rope(s, layer);
  case PH_ATTENTION:
    return attention(s, layer);
  case PH_OUTPUT: {
    Rows r = {1, {layer_matrix(layer, MAT_OUTPUT)}, {region_i64(s, REGION_X)},
              region_i64(s, REGION_XB), ROWS_RESIDUAL};
    return matrix_phase(s, &r);
  }
  case PH_FFN_NORM:
    return norm(s, 2 * layer + 1);
  case PH_GATE_UP: {
    Rows r = {2,
              {layer_matrix(layer, MAT_GATE), layer_matrix(layer, MAT_UP)},
              {region_i64(s, REGION_HB), region_i64(s, REGION_HB2)},
              region_i64(s, REGION_XB),
              ROWS_STORE};
    return matrix_phase(s, &r);
  }
  case PH_SWIGLU:
    return swiglu(s);
  default: /* PH_DOWN */ {
    Rows r = {1, {layer_matrix(layer, MAT_DOWN)}, {region_i64(s, REGION_X)},
              region_i64(s, REGION_HB), ROWS_RESIDUAL};
    return matrix_phase(s, &r);
  }
  }
}
