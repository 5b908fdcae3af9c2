/*
 * inference.h: on-chain inference. The run account, the artifact fields a run reads, the
 * phases of one token and the budget of a step.
 *
 * A run is one generation from one sealed model: openRun binds a fresh account to the
 * model and lays out its regions, `step` (anyone may crank) advances the forward pass by
 * a bounded slice, closeRun returns the rent to the opener. The arithmetic is the integer
 * forward pass of docs/inference.md; curta_chain/onchain/mirror mirrors every step in
 * Python, schedule.h is generated from the step schedule's one table
 * (curta_chain/onchain/schedule.py), and the layouts here are the IDL's `Run` account
 * (tests compare them).
 */
#ifndef INFERENCE_H
#define INFERENCE_H

#include "curta.h"

/* Anchor discriminators, read as little-endian u64: sha256("global:<name>")[:8]. */
#define IX_OPEN_RUN 0x0e52142e5e95b5fcUL
#define IX_STEP 0x25bf204d1dfe3816UL
#define IX_CLOSE_RUN 0xccab934a4c823d1fUL

/* sha256("account:Run")[:8] as little-endian u64. */
#define RUN_DISCRIMINATOR 0xbdf673eb569b36c7UL

/* Inference's custom errors (6100 on); the IDL lists the same codes and names. */
enum InferenceError {
  ERR_MODEL_NOT_SEALED = 6100,
  ERR_BAD_ARTIFACT = 6101,
  ERR_BAD_CAPACITY = 6102,
  ERR_BAD_PROMPT = 6103,
  ERR_BAD_SAMPLING = 6104,
  ERR_RUN_OF_ANOTHER_MODEL = 6105,
  ERR_WRONG_OPENER = 6106,
  ERR_RUN_CLOSED = 6107,
  ERR_RUN_FINISHED = 6108,
  ERR_STEP_OUT_OF_ORDER = 6109, /* retired: a step's label is not read (steps are order-free) */
  ERR_MISSING_WEIGHT_ACCOUNT = 6110,
  ERR_TOO_MANY_WEIGHT_ACCOUNTS = 6111,
  ERR_NOTHING_FITS = 6112,
};

/* ---- The artifact: section zero's layout, generated from curta_chain/artifact/layout.py. ---- */

#include "layout.h"

/* ---- The run account. ---- */

enum RunState {
  RUN_TOKENIZING = 0, /* the prompt's text is being turned into token ids */
  RUN_RUNNING = 1,    /* positions are being computed */
  RUN_FINISHED = 2,   /* an end token, the capacity, or a prompt that does not fit */
};

enum FinishReason {
  FINISH_NONE = 0,
  FINISH_END_TOKEN = 1,
  FINISH_CAPACITY = 2,
  FINISH_PROMPT_TOO_LONG = 3,
};

enum PromptKind {
  PROMPT_TEXT = 0,
  PROMPT_TOKENS = 1,
};

/* Regions of the run account, each 8-aligned, in this order after the header. */
enum Region {
  REGION_PROMPT = 0, /* the prompt's text bytes, or its token ids (u32) */
  REGION_WORK = 1,   /* while tokenizing: u32 tokens, pair ids, pair score keys */
  REGION_TOKENS = 2, /* u32 token ids: capacity */
  REGION_X = 3,      /* i64 activations, Q16: the residual stream (dim), a vector a lane */
  REGION_XB = 4,     /* the normalized input of a matrix, or the attention's output (dim) */
  REGION_Q = 5,      /* the query (dim) */
  REGION_HB = 6,     /* the feed-forward gate, then the hidden vector (hidden) */
  REGION_HB2 = 7,    /* the feed-forward up (hidden) */
  REGION_LOGITS = 8, /* the classifier's output, then each id's sampling weight (vocab) */
  REGION_HIST = 9,   /* u64 weight sums by weight >> 11 (2,049), then by weight & 2,047 */
  REGION_KEYS = 10,  /* per layer, per position run: the key after rotary (kv dim) */
  REGION_VALUES = 11,
  REGION_END = 12, /* the account's size */
  REGION_COUNT = 13,
};

/* The nucleus search's two histograms (docs/inference.md: sampling weights are Q22). */
#define HIST_SHIFT 11
#define HIST_HIGH ((1 << (22 - HIST_SHIFT)) + 1) /* weight >> 11: 0 to 2,048 */
#define HIST_LOW (1 << HIST_SHIFT)               /* weight & 2,047 */

/* The SAMPLE phase's passes over the vocabulary. */
enum SamplePass {
  PASS_WEIGHTS = 0, /* each id's weight (into the logits region), their sum Z, histogram */
  PASS_CUT = 1,     /* the nucleus: the exact cut-off weight inside its histogram bucket */
  PASS_DRAW = 2,    /* one draw, then the first kept id whose running sum exceeds it */
};

typedef struct {
  uint64_t discriminator;
  uint8_t model[PUBKEY_SIZE];
  uint8_t opener[PUBKEY_SIZE];
  uint32_t dim;
  uint32_t hidden_dim;
  uint32_t layers;
  uint32_t heads;
  uint32_t kv_heads;
  uint32_t vocab;
  uint32_t context;
  uint32_t capacity;      /* tokens the run holds: the prompt's and the generated ones */
  uint32_t prompt_length; /* text bytes, or token ids */
  uint32_t prompt_tokens; /* the prompt in tokens, once known */
  uint32_t token_count;   /* tokens[0..token_count) are known */
  uint32_t position;      /* the position being computed: its input is tokens[position] */
  uint8_t state;          /* RunState */
  uint8_t prompt_kind;    /* PromptKind */
  uint8_t finish_reason;  /* FinishReason */
  uint8_t reserved0;
  uint32_t phase;       /* the phase of the token (or of the tokenizer) under way */
  uint32_t cursor;      /* rows, heads, ids or bytes of the phase done */
  uint32_t work_count;  /* tokens in the work region while tokenizing */
  uint32_t temperature; /* Q16; 0 is greedy */
  uint32_t top_p;       /* Q16; the nucleus applies when 0 < top_p < 65,536 */
  uint64_t seed;
  uint64_t rng;   /* xorshift64* state */
  uint64_t steps; /* steps landed */
  uint32_t regions[REGION_COUNT];
  uint32_t reserved1;
  int64_t best_logit;   /* the classifier's running maximum... */
  uint32_t best_token;  /* ...and the lowest id that has it */
  uint32_t sample_pass; /* SamplePass */
  uint64_t weight_sum;  /* Z */
  uint64_t kept_sum;    /* W: the nucleus's weight sum */
  uint64_t cut_weight;  /* the nucleus's lightest weight... */
  uint64_t cut_count;   /* ...and how many ids of that weight it keeps, lowest first */
  uint64_t cut_seen;    /* ids of the cut-off weight met by the draw so far */
  uint64_t target;      /* r = u % W */
  uint64_t running;     /* the draw's running sum */
  uint8_t reserved[216];
} Run;

#define RUN_HEADER_SIZE 512
_Static_assert(sizeof(Run) == RUN_HEADER_SIZE, "the run header is 512 bytes");

/* A run holds 2 tokens (one prompt token, one generated) up to the model's context. */
#define MIN_CAPACITY 2
/* The longest prompt openRun takes (a transaction carries far less anyway). */
#define MAX_PROMPT_LENGTH 2048

/* ---- A token's phases, a step's budget and the cost model. ---- */

#include "schedule.h"

/* ---- Fixed point (docs/inference.md). ---- */

#define ACT_BITS 16
#define SCALE_BITS FRACTION_BITS /* row scales, norm weights, rotary, 1/sqrt(head size) */
#define I32_MIN (-2147483648L)
#define I32_MAX 2147483647L

static inline int64_t sat32(int64_t v) { return v < I32_MIN ? I32_MIN : v > I32_MAX ? I32_MAX : v; }

/* (a + 2^(bits-1)) >> bits: the arithmetic shift of a signed value, rounded half up. */
static inline int64_t round_shift(int64_t a, uint64_t bits) {
  return (a + ((int64_t)1 << (bits - 1))) >> bits;
}

static inline uint64_t round8(uint64_t v) { return (v + 7) & ~(uint64_t)7; }

/* A divisor that is >= 1 for every model openRun accepts (its exponential table gives the
 * largest score a weight >= 1), kept >= 1 anyway: defence in depth, changing nothing there. */
static inline uint64_t at_least_one(uint64_t d) { return d ? d : 1; }

/* ---- What a step works with. ---- */

/* The heap (32 KiB, zeroed for every instruction): the parsed input at its start, then the
 * step's context, then scratch that no step keeps: row sums, attention weights, the
 * tokenizer's pair cache. Nothing on the heap outlives the instruction. */
#define STEP_CONTEXT ((Step *)(HEAP_START + 1024))
#define SCRATCH (HEAP_START + 2048)
#define SCRATCH_SIZE (32768 - 2048)
_Static_assert(sizeof(SolInput) <= 1024, "the parsed input fits before the step context");

typedef struct {
  Run *run;
  uint8_t *data;     /* the run account's data (regions are offsets into it) */
  const uint8_t *s0; /* section zero's bytes */
  uint64_t s0_length;
  const uint8_t *sections[MAX_SECTIONS]; /* the passed sections' bytes, 0 when not passed */
  uint64_t budget;                       /* estimated compute units left */
  bool missing; /* a phase that fit the budget needs a section that was not passed */
#ifdef CALIBRATE
  uint64_t plan[4]; /* the calibration build logs a batch's plan after its rows phase */
#endif
} Step;

/* Typed views of the run's regions and of section zero. */
static inline int64_t *region_i64(const Step *s, uint64_t region) {
  /* Regions are 8-aligned offsets inside the (8-aligned) account data. */
  return (int64_t *)(s->data + s->run->regions[region]);
}
static inline uint64_t *region_u64(const Step *s, uint64_t region) {
  return (uint64_t *)(s->data + s->run->regions[region]); /* 8-aligned, as above */
}
static inline uint32_t *region_u32(const Step *s, uint64_t region) {
  return (uint32_t *)(s->data + s->run->regions[region]); /* 8-aligned, as above */
}
/* Lane `lane` of a vector region: each holds MAX_LANES vectors of round8(length) i64. */
static inline int64_t *lane_i64(const Step *s, uint64_t region, uint64_t length, uint64_t lane) {
  return region_i64(s, region) + lane * round8(length);
}
static inline const uint8_t *block_of(const Step *s, uint64_t block) {
  /* The block table is u32s at a 4-aligned offset of the 8-aligned section zero. */
  return s->s0 + ((const uint32_t *)(s->s0 + BLOCK_OFFSETS_OFFSET))[block];
}
/* A block's entries: openRun checked each block 4-aligned in the 8-aligned section zero. */
static inline const uint32_t *block_u32(const Step *s, uint64_t block) {
  return (const uint32_t *)block_of(s, block);
}
static inline const int32_t *block_i32(const Step *s, uint64_t block) {
  return (const int32_t *)block_of(s, block);
}
static inline const MatrixDescriptor *matrix_of(const uint8_t *s0, uint64_t index) {
  /* The matrix table is 8-aligned in section zero, which is 8-aligned in the account. */
  return (const MatrixDescriptor *)(s0 + MATRIX_TABLE_OFFSET) + index;
}

/* Spend `cost` estimated compute units from the step's budget, if it is there. */
static inline bool spend(Step *s, uint64_t cost) {
  if (cost > s->budget) {
    return false;
  }
  s->budget -= cost;
  return true;
}

/* The sampling generator (sample.c): its state from the seed. */
uint64_t rng_seed(uint64_t seed);

/* Positions a run computes: every token but the last, which is sampled and never run. */
static inline uint64_t run_positions(const Run *run) { return (uint64_t)run->capacity - 1; }

/* A batch: the prompt's positions run two at a time (docs/inference.md, "Batches"). The
 * run's `position` is the batch's first; lane 0 computes its last position and lane 1
 * (in a batch of two) the one before. A batch has two lanes while the position after
 * `position` is still the prompt's: so the prompt's last position is always a lane 0, and
 * every other position of the run a batch of one. */
#define MAX_LANES 2
static inline uint64_t batch_lanes(const Run *run) {
  return (uint64_t)run->position + 1 < run->prompt_tokens ? 2 : 1;
}
static inline uint64_t lane_position(const Run *run, uint64_t lanes, uint64_t lane) {
  return (uint64_t)run->position + lanes - 1 - lane;
}

/* Entries of each of the tokenizer's work arrays: the opening token, the space, a byte each. */
static inline uint64_t work_entries(const Run *run) { return (uint64_t)run->prompt_length + 2; }

/* The layout of a run's regions (run_layout.c): the same formula as the Python client. */
void run_layout(Run *run);

/* An empty asm statement: it emits nothing and tells clang that v may have changed, which
 * shapes the hot loops (matvec.c says how). Both SBPF builds take it. */
#define OPAQUE(v) __asm__("" : "+r"(v))

/* `count` rows `row_bytes` apart, each from `rows` on (a row's weight bytes, or a span of
 * them) over `columns` (a multiple of 8) weight bytes. */
typedef struct {
  const uint8_t *rows;
  uint64_t row_bytes;
  uint64_t count;
  uint64_t columns;
  uint64_t init; /* where each row's sum starts (-128 x the sum of x folds the bias in) */
} RowSpan;

/* matvec.c: out[r] = init + the sum over the span of stored byte x x, modulo 2^64. */
void row_sums(const RowSpan *span, const uint64_t *x, uint64_t *out);

/* A head's keys or values in the cache: `positions` rows `stride` i64 apart, each
 * starting with the head's `head_size` (even) elements. */
typedef struct {
  const int64_t *rows;
  uint64_t stride;
  uint64_t positions;
  uint64_t head_size;
} CacheSpan;

/* attend.c: dots[t] = q . keys[t]; out[i] = sum over t of w[t] x values[t][i]. */
void key_dots(const CacheSpan *keys, const int64_t *q, int64_t *dots);
void value_sums(const CacheSpan *values, const int64_t *w, int64_t *out);

/* The section a phase's rows (or embedding row) are in, when the step was passed it; else
 * the step is refused (step.c). A phase's matrices share one section (openRun checks it). */
static inline bool has_section(Step *s, const MatrixDescriptor *m) {
  s->missing = !s->sections[m->section];
  return !s->missing;
}

/* Up to three matrices whose rows a phase runs as one list, and where each row goes. */
enum RowsKind {
  ROWS_STORE = 0,    /* dst = row */
  ROWS_RESIDUAL = 1, /* dst = sat32(dst + row) */
  ROWS_LOGITS = 2,   /* dst = row, and the run's running maximum and its lowest id */
  ROWS_ARGMAX = 3,   /* the running maximum and its lowest id alone (greedy: no logit kept) */
};

typedef struct {
  uint64_t count; /* matrices */
  uint64_t matrix[3];
  uint64_t lanes;
  int64_t *dst[MAX_LANES][3]; /* each lane's destination of each matrix's first row */
  const int64_t *x[MAX_LANES];
  uint64_t kind; /* RowsKind */
} Rows;

/* rows.c: the phase's rows as far as the budget allows (false when none fit, or with
 * s->missing set when the step was not passed their section). */
bool matrix_phase(Step *s, const Rows *r);

/* forward.c: one token's phases. Each returns false when nothing fit the budget, or (with
 * s->missing set) when its slice needs a section the step was not passed. next_phase: the
 * phase is done, on to the next. */
bool forward_phase(Step *s);
void next_phase(Step *s);

/* tokenize.c: the tokenizer's phases and the log of a finished token. */
bool tokenize_phase(Step *s);
void log_token(const Step *s, uint64_t previous, uint64_t token);

/* sample.c: the SAMPLE phase (the next token, logged). step.c: a run account's checks, its
 * owner and writability, then its size and discriminator (closeRun takes them too). */
bool sample_phase(Step *s);
uint64_t check_run_owned(const SolInput *in, const SolAccount *account);
uint64_t check_run_layout(const SolAccount *account);

/* section_zero.c: openRun's checks of the model's section zero, once, so that every later
 * step reads inside it and inside the matrix sections. */
uint64_t check_section_zero(const SolAccount *model_account, const SolAccount *weight);

/* Processors. */
uint64_t process_open_run(SolInput *in);
uint64_t process_step(SolInput *in);
uint64_t process_close_run(SolInput *in);

#endif
