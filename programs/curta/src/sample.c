/*
 * sample.c: the SAMPLE phase (docs/inference.md, "Choosing the next token").
 *
 * Greedy (temperature 0) takes the classifier's running maximum: no pass, no draw.
 * Sampling makes passes over the vocabulary, each sliced by ids like a matrix's rows:
 * WEIGHTS writes each id's weight over its logit, sums them (Z) and, for the nucleus,
 * histograms the sums by weight >> 11; CUT finds the bucket where the nucleus ends and
 * histograms that bucket's exact weights, which gives the cut-off weight and how many ids
 * of that weight the nucleus keeps (the lowest ids first: the doc's order). DRAW takes
 * one draw of the generator, r = u % W, and walks the kept ids in id order to the first
 * whose running sum exceeds r. No sort: the nucleus is found as a set.
 */
#include "../inference.h"
#include "../softmax.h"

#define RNG_GOLDEN 0x9E3779B97F4A7C15UL
#define RNG_MULTIPLIER 0x2545F4914F6CDD1DUL
#define STOP_OPENING 1
#define STOP_END 2

uint64_t rng_seed(uint64_t seed) {
  uint64_t state = seed ^ RNG_GOLDEN;
  return state ? state : RNG_GOLDEN;
}

/* xorshift64*: advance the state and return the next u64. */
static uint64_t rng_next(Run *run) {
  uint64_t s = run->rng;
  s ^= s >> 12;
  s ^= s << 25;
  s ^= s >> 27;
  run->rng = s;
  return s * RNG_MULTIPLIER;
}

static bool nucleus(const Run *run) { return run->top_p > 0 && run->top_p < (1U << ACT_BITS); }

/* The chosen token: appended, logged, and the run on to its next position or finished. */
static void choose(Step *s, uint64_t token) {
  Run *run = s->run;
  uint32_t *tokens = region_u32(s, REGION_TOKENS);
  uint64_t previous = tokens[run->position];
  tokens[run->position + 1] = (uint32_t)token;
  run->token_count = run->position + 2;
  run->position += 1;
  run->phase = PH_EMBED;
  run->cursor = 0;
  run->sample_pass = PASS_WEIGHTS;
  run->weight_sum = 0;
  run->kept_sum = 0;
  run->cut_weight = 0;
  run->cut_count = 0;
  run->cut_seen = 0;
  run->target = 0;
  run->running = 0;
  if (token == STOP_OPENING || token == STOP_END) {
    run->state = RUN_FINISHED;
    run->finish_reason = FINISH_END_TOKEN;
  } else if (run->token_count == run->capacity) {
    run->state = RUN_FINISHED;
    run->finish_reason = FINISH_CAPACITY;
  }
  log_token(s, previous, token);
}

/* How many of ids [cursor, vocab) fit the budget at `per_id` each, and spend them. */
static uint64_t ids_that_fit(Step *s, uint64_t per_id, uint64_t fixed) {
  Run *run = s->run;
  if (s->budget < fixed + per_id) {
    return 0;
  }
  uint64_t n = (s->budget - fixed) / per_id;
  uint64_t left = run->vocab - run->cursor;
  n = n < left ? n : left;
  s->budget -= fixed + n * per_id;
  return n;
}

/* Scan `count` bucket sums from the heaviest down: the first bucket where the sum so far
 * (after `above`) passes P x Z. Returns the bucket; *above gets the sum before it. */
static uint64_t crossing(const uint64_t *buckets, uint64_t count, uint64_t *above,
                         uint64_t limit) {
  uint64_t sum = *above;
  for (uint64_t b = count; b-- > 0;) {
    if ((sum + buckets[b]) << ACT_BITS > limit) {
      *above = sum;
      return b;
    }
    sum += buckets[b];
  }
  *above = sum;
  return 0; /* unreachable: the whole sum passes (Z x 65,536 > P x Z for P < 65,536) */
}

/* The high histogram's bucket of a weight: w >> 11, at most 2,048 for every model openRun
 * accepts (its exponential table makes w <= 2^22). Clamped anyway (defence in depth), so no
 * table could index past the histogram: the clamp changes nothing for those models. */
static uint64_t hist_bucket(uint64_t w) {
  uint64_t bucket = w >> HIST_SHIFT;
  return bucket < HIST_HIGH ? bucket : HIST_HIGH - 1;
}

static bool weights_pass(Step *s) {
  Run *run = s->run;
  uint64_t n = ids_that_fit(s, COST_WEIGHT, COST_PASS);
  if (n == 0) {
    return false;
  }
  const uint32_t *table = block_u32(s, BLOCK_EXP);
  int64_t *logits = region_i64(s, REGION_LOGITS);
  uint64_t *high = region_u64(s, REGION_HIST);
  bool hist = nucleus(run);
  if (run->cursor == 0 && hist) {
    sol_memset_(high, 0, 8 * (HIST_HIGH + HIST_LOW)); /* the last token's histograms */
  }
  for (uint64_t t = run->cursor; t < run->cursor + n; t++) {
    uint64_t distance = (uint64_t)(run->best_logit - logits[t]) << ACT_BITS;
    uint64_t w = (uint64_t)exp_weight(distance / run->temperature, table);
    logits[t] = (int64_t)w;
    run->weight_sum += w;
    if (hist) {
      high[hist_bucket(w)] += w;
    }
  }
  run->cursor += (uint32_t)n;
  if (run->cursor == run->vocab) {
    run->cursor = 0;
    run->sample_pass = hist ? PASS_CUT : PASS_DRAW;
    run->kept_sum = run->weight_sum;
  }
  return true;
}

static bool cut_pass(Step *s) {
  Run *run = s->run;
  uint64_t n = ids_that_fit(s, COST_ID, COST_PASS + COST_BUCKETS);
  if (n == 0) {
    return false;
  }
  const uint64_t *high = region_u64(s, REGION_HIST);
  uint64_t *low = region_u64(s, REGION_HIST) + HIST_HIGH;
  uint64_t limit = (uint64_t)run->top_p * run->weight_sum;
  uint64_t above = 0;
  uint64_t bucket = crossing(high, HIST_HIGH, &above, limit);
  const int64_t *w = region_i64(s, REGION_LOGITS);
  for (uint64_t t = run->cursor; t < run->cursor + n; t++) {
    if ((uint64_t)w[t] >> HIST_SHIFT == bucket) {
      low[w[t] & (HIST_LOW - 1)] += (uint64_t)w[t];
    }
  }
  run->cursor += (uint32_t)n;
  if (run->cursor == run->vocab) {
    /* The nucleus keeps every id heavier than the cut-off weight v and the first k of
     * weight v, k the least with (G + k v) x 65,536 > P x Z, G the heavier ids' sum. */
    uint64_t v = bucket << HIST_SHIFT | crossing(low, HIST_LOW, &above, limit);
    uint64_t need = limit - (above << ACT_BITS);
    run->cut_weight = v;
    run->cut_count = need / at_least_one(v << ACT_BITS) + 1;
    run->kept_sum = above + run->cut_count * v;
    run->cursor = 0;
    run->sample_pass = PASS_DRAW;
  }
  return true;
}

static bool draw_pass(Step *s) {
  Run *run = s->run;
  uint64_t n = ids_that_fit(s, COST_ID, COST_PASS + COST_CHOOSE);
  if (n == 0) {
    return false;
  }
  if (run->cursor == 0) {
    run->target = rng_next(run) % at_least_one(run->kept_sum);
  }
  const int64_t *w = region_i64(s, REGION_LOGITS);
  bool cut = nucleus(run);
  for (uint64_t t = run->cursor; t < run->cursor + n; t++) {
    uint64_t weight = (uint64_t)w[t];
    if (cut && weight <= run->cut_weight) {
      if (weight < run->cut_weight || run->cut_seen == run->cut_count) {
        continue;
      }
      run->cut_seen += 1;
    }
    run->running += weight;
    if (run->running > run->target) {
      s->budget += (run->cursor + n - 1 - t) * COST_ID; /* the ids not walked */
      choose(s, t);
      return true;
    }
  }
  run->cursor += (uint32_t)n;
  return true; /* the kept weights sum to W > r: some id before the end exceeds it */
}

bool sample_phase(Step *s) {
  Run *run = s->run;
  if (run->temperature == 0) {
    if (!spend(s, COST_PASS)) {
      return false;
    }
    choose(s, run->best_token);
    return true;
  }
  switch (run->sample_pass) {
  case PASS_WEIGHTS:
    return weights_pass(s);
  case PASS_CUT:
    return cut_pass(s);
  default:
    return draw_pass(s);
  }
}
