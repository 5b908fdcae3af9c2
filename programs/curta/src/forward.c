/*
 * forward.c: one token's forward pass, phase by phase (docs/inference.md's arithmetic).
 *
 * A token is EMBED, then per layer ATT_NORM, QKV, ROPE, ATTENTION, OUTPUT, FFN_NORM,
 * GATE_UP, SWIGLU and DOWN, then FINAL_NORM, CLASSIFIER and SAMPLE. While the next token
 * is still the prompt's, the position ends after the last layer (no classifier). Matrix
 * phases are sliced by rows (rows.c) and attention by heads; the rest are whole. Each
 * phase function spends from the step's budget with the cost model of schedule.h and
 * returns false when not even its smallest slice fits (the mirror reads the same table: a
 * step ends where the mirror says it does). While two prompt positions run as a batch
 * (inference.h, batch_lanes), every phase does its work for each of them.
 */
#include "../inference.h"
#include "../softmax.h"

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
__attribute__((noinline)) static void rmsnorm(const int64_t *x, const int32_t *weight, uint64_t n,
                                              int64_t *out) {
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


static bool embed(Step *s) {
  Run *run = s->run;
  const MatrixDescriptor *m = matrix_of(s->s0, MAT_EMBEDDING);
  uint64_t lanes = batch_lanes(run);
  if (!spend(s, lanes * EMBED_COST(run->dim)) || !has_section(s, m)) {
    return false;
  }
  for (uint64_t lane = 0; lane < lanes; lane++) {
    uint64_t token = region_u32(s, REGION_TOKENS)[lane_position(run, lanes, lane)];
    const uint8_t *row = s->sections[m->section] + m->offset + token * m->row_bytes;
    int64_t scale = *(const uint32_t *)row; /* rows are 8-aligned in their section */
    int64_t *x = lane_i64(s, REGION_X, run->dim, lane);
    for (uint64_t i = 0; i < run->dim; i++) {
      int64_t q = (int64_t)row[ROW_PREFIX + i] - WEIGHT_BIAS;
      x[i] = round_shift(q * scale, SCALE_BITS - ACT_BITS);
    }
  }
  next_phase(s);
  return true;
}

static bool norm(Step *s, uint64_t index) {
  Run *run = s->run;
  uint64_t lanes = batch_lanes(run);
  if (!spend(s, lanes * NORM_COST(run->dim))) {
    return false;
  }
  for (uint64_t lane = 0; lane < lanes; lane++) {
    rmsnorm(lane_i64(s, REGION_X, run->dim, lane), norm_weights(s, index), run->dim,
            lane_i64(s, REGION_XB, run->dim, lane));
  }
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
  uint64_t kv_dim = kv_dim_of(run), lanes = batch_lanes(run);
  if (!spend(s, lanes * ROPE_COST(run->dim, kv_dim))) {
    return false;
  }
  uint64_t head_size = run->dim / run->heads;
  for (uint64_t lane = 0; lane < lanes; lane++) {
    uint64_t position = lane_position(run, lanes, lane);
    const int32_t *angles = block_i32(s, BLOCK_ROTARY) + position * head_size;
    rotate(lane_i64(s, REGION_Q, run->dim, lane), run->dim, head_size, angles);
    rotate(cache_row(s, REGION_KEYS, layer, position), kv_dim, head_size, angles);
  }
  next_phase(s);
  return true;
}

/* Head `head` of a lane's query over the layer's cached positions up to the lane's own. */
static void attend(const Step *s, uint64_t layer, uint64_t lane, uint64_t head) {
  const Run *run = s->run;
  uint64_t head_size = run->dim / run->heads;
  uint64_t kv_dim = kv_dim_of(run);
  uint64_t offset = head / (run->heads / run->kv_heads) * head_size;
  uint64_t positions = lane_position(run, batch_lanes(run), lane) + 1;
  const int64_t *q = lane_i64(s, REGION_Q, run->dim, lane) + head * head_size;
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
  int64_t *out = lane_i64(s, REGION_XB, run->dim, lane) + head * head_size;
  for (uint64_t i = 0; i < head_size; i++) {
    out[i] = divide_rounded(sums[i], at_least_one(total));
  }
}

/* The heads of each lane in turn (the cursor counts them: lane x heads + head), as many
 * as the budget allows; a head costs as many positions as its lane attends. */
static bool attention(Step *s, uint64_t layer) {
  Run *run = s->run;
  uint64_t head_size = run->dim / run->heads, lanes = batch_lanes(run);
  uint64_t items = lanes * run->heads, cursor = run->cursor;
  uint64_t budget = s->budget;
  if (budget < COST_ATTENTION) {
    return false;
  }
  budget -= COST_ATTENTION;
  while (cursor < items) {
    uint64_t lane = cursor / run->heads;
    uint64_t cost = HEAD_COST(head_size, lane_position(run, lanes, lane) + 1);
    if (budget < cost) {
      break;
    }
    budget -= cost;
    attend(s, layer, lane, cursor % run->heads);
    cursor++;
  }
  if (cursor == run->cursor) {
    return false;
  }
  s->budget = budget;
  run->cursor = (uint32_t)cursor;
  if (cursor == items) {
    next_phase(s);
  }
  return true;
}

static bool swiglu(Step *s) {
  Run *run = s->run;
  uint64_t lanes = batch_lanes(run);
  if (!spend(s, lanes * SWIGLU_COST(run->hidden_dim))) {
    return false;
  }
  const int32_t *table = block_i32(s, BLOCK_SILU);
  for (uint64_t lane = 0; lane < lanes; lane++) {
    int64_t *gate = lane_i64(s, REGION_HB, run->hidden_dim, lane);
    const int64_t *up = lane_i64(s, REGION_HB2, run->hidden_dim, lane);
    for (uint64_t i = 0; i < run->hidden_dim; i++) {
      gate[i] = sat32(round_shift(silu(gate[i], table) * up[i], ACT_BITS));
    }
  }
  next_phase(s);
  return true;
}

/* A layer's rows phase (PH_QKV, PH_OUTPUT, PH_GATE_UP or PH_DOWN) for each lane: its
 * matrices, each lane's input and where each lane's rows go. */
static bool layer_rows(Step *s, uint64_t layer, uint64_t phase) {
  Run *run = s->run;
  uint64_t dim = run->dim, hidden = run->hidden_dim;
  Rows r;
  r.lanes = batch_lanes(run);
  r.kind = phase == PH_OUTPUT || phase == PH_DOWN ? ROWS_RESIDUAL : ROWS_STORE;
  r.count = phase == PH_QKV ? 3 : phase == PH_GATE_UP ? 2 : 1;
  uint64_t first = phase == PH_QKV      ? MAT_QUERY
                   : phase == PH_OUTPUT ? MAT_OUTPUT
                   : phase == PH_GATE_UP ? MAT_GATE
                                         : MAT_DOWN;
  r.matrix[0] = layer_matrix(layer, first);
  r.matrix[1] = layer_matrix(layer, phase == PH_QKV ? MAT_KEY : MAT_UP);
  r.matrix[2] = layer_matrix(layer, MAT_VALUE);
  for (uint64_t lane = 0; lane < r.lanes; lane++) {
    uint64_t position = lane_position(run, r.lanes, lane);
    r.x[lane] = phase == PH_DOWN ? lane_i64(s, REGION_HB, hidden, lane)
                                 : lane_i64(s, REGION_XB, dim, lane);
    if (phase == PH_QKV) {
      r.dst[lane][0] = lane_i64(s, REGION_Q, dim, lane);
      r.dst[lane][1] = cache_row(s, REGION_KEYS, layer, position);
      r.dst[lane][2] = cache_row(s, REGION_VALUES, layer, position);
    } else if (phase == PH_GATE_UP) {
      r.dst[lane][0] = lane_i64(s, REGION_HB, hidden, lane);
      r.dst[lane][1] = lane_i64(s, REGION_HB2, hidden, lane);
    } else {
      r.dst[lane][0] = lane_i64(s, REGION_X, dim, lane);
    }
  }
  return matrix_phase(s, &r);
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
    Rows r;
    r.count = 1;
    r.matrix[0] = MAT_CLASSIFIER;
    r.lanes = 1;
    r.dst[0][0] = region_i64(s, REGION_LOGITS);
    r.x[0] = region_i64(s, REGION_XB);
    r.kind = run->temperature ? ROWS_LOGITS : ROWS_ARGMAX;
    return matrix_phase(s, &r);
  }
  if (phase == phase_sample(layers)) {
    return sample_phase(s);
  }
  uint64_t layer = (phase - 1) / PHASES_PER_LAYER;
  switch ((phase - 1) % PHASES_PER_LAYER) {
  case PH_ATT_NORM:
    return norm(s, 2 * layer);
  case PH_ROPE:
    return rope(s, layer);
  case PH_ATTENTION:
    return attention(s, layer);
  case PH_FFN_NORM:
    return norm(s, 2 * layer + 1);
  case PH_SWIGLU:
    return swiglu(s);
  default: /* PH_QKV, PH_OUTPUT, PH_GATE_UP, PH_DOWN */
    return layer_rows(s, layer, (phase - 1) % PHASES_PER_LAYER);
  }
}
