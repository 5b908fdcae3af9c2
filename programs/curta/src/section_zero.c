/*
 * section_zero.c: openRun's checks of a model's section zero (header, configuration,
 * blocks, matrix table, tables, tokenizer), done once when a run opens so that every later
 * step reads inside it and inside the matrix sections, and computes inside the bounds
 * docs/inference.md derives. The offsets and bounds are layout.h's (generated from
 * curta_chain/artifact/layout.py). Every offset and length check is written so that it
 * cannot wrap: `offset <= length && size <= length - offset`, each size a product of values
 * bounded before it is formed.
 */
#include "../inference.h"

/* The tables' bounds (docs/inference.md, "Formats" and "Bounds at the largest shapes"). */
#define EXP_MAX ((1U << EXP_FRACTION_BITS) + 1) /* E[i] <= 2^30 + 1: a weight is <= 2^22 */
#define EXP_ZERO_MIN 128 /* E[0] >= 2^7: distance 0 weighs >= 1, so no sum is 0 */
#define SILU_MAX ((uint32_t)SILU_RANGE << SILU_FRACTION_BITS) /* |S[i]| <= 2^20 = SiLU(16) */
#define ROTARY_MAX ((1U << FRACTION_BITS) + 1)                 /* |cos|, |sin| <= 1 + 2^-24 */
#define INV_SQRT_MAX (1U << FRACTION_BITS)                     /* 1/sqrt(head size) <= 1 */

#define FIRST_LAYER_MATRIX layer_matrix(0, 0)

static uint64_t bad_artifact(void) {
  return REFUSE(ERR_BAD_ARTIFACT, "BadArtifact: section zero is not a CURTAW01 header we run");
}

/* u32 entries at `offset` of section zero: it is 8-aligned in its account, and every offset
 * this reads at is 4-aligned (the header's fields; blocks, checked by check_config). */
static const uint32_t *u32s(const uint8_t *s0, uint64_t offset) {
  return (const uint32_t *)(s0 + offset);
}

/* True when [offset, offset + size) lies inside `length` bytes, without forming the sum. */
static bool inside(uint64_t offset, uint64_t size, uint64_t length) {
  return offset <= length && size <= length - offset;
}

/* Section table entry `i`'s length: header byte s0 + 128 + 16*i + 8. */
static uint64_t section_length_of(const uint8_t *s0, uint64_t i) {
  return read_u64(s0 + SECTION_TABLE_OFFSET + SECTION_ENTRY_SIZE * i + SECTION_LENGTH_OFFSET);
}

/* The configuration's bounds and the seven blocks inside section zero. The length comes
 * first: createModel takes any section length from 1 byte, and every field read below
 * (configuration, section table, block offsets, matrix table) lies in the 4,096-byte
 * header, so nothing past a shorter section zero is ever read. */
static uint64_t check_config(const uint8_t *s0, uint64_t length, const Model *model) {
  if (length < HEADER_SIZE) {
    return REFUSE(ERR_BAD_ARTIFACT,
                  "BadArtifact: section zero is shorter than the 4096-byte header");
  }
  const uint32_t *config = u32s(s0, CONFIG_OFFSET);
  uint64_t dim = config[CONFIG_DIM], hidden = config[CONFIG_HIDDEN_DIM];
  uint64_t layers = config[CONFIG_N_LAYERS], heads = config[CONFIG_N_HEADS];
  uint64_t kv_heads = config[CONFIG_N_KV_HEADS], vocab = config[CONFIG_VOCAB_SIZE];
  uint64_t context = config[CONFIG_SEQ_LEN];
  if (read_u64(s0) != TAG || dim < MIN_DIM || dim > MAX_DIM || hidden < MIN_HIDDEN_DIM ||
      hidden > MAX_HIDDEN_DIM || layers < MIN_N_LAYERS || layers > MAX_N_LAYERS ||
      heads < MIN_N_HEADS || heads > MAX_N_HEADS || dim % heads || kv_heads < MIN_N_KV_HEADS ||
      kv_heads > heads || heads % kv_heads || vocab < MIN_VOCAB_SIZE || vocab > MAX_VOCAB_SIZE ||
      context < MIN_SEQ_LEN || context > MAX_SEQ_LEN) {
    return bad_artifact();
  }
  uint64_t head_size = dim / heads;
  if (head_size % 2 || head_size > MAX_HEAD_SIZE ||
      read_u32(s0 + SECTION_COUNT_OFFSET) != model->section_count) {
    return bad_artifact();
  }
  /* Each section's length in the table is the model's slot length (section_count <= 18:
   * the table ends at byte 416, inside the header). */
  for (uint64_t i = 0; i < model->section_count; i++) {
    if (section_length_of(s0, i) != model->sections[i].length) {
      return bad_artifact();
    }
  }
  uint64_t sizes[BLOCK_COUNT] = {
      4 * (2 * layers + 1) * dim, 4 * context * head_size, 4 * TABLE_ENTRIES,
      4 * TABLE_ENTRIES,          TOKEN_ENTRY_SIZE * vocab, 4 * vocab,
      0,
  };
  /* Each size is below 2^23 (the configuration's bounds above). */
  for (uint64_t b = 0; b < BLOCK_COUNT; b++) {
    uint64_t at = read_u32(s0 + BLOCK_OFFSETS_OFFSET + 4 * b);
    if (at < HEADER_SIZE || at % 4 || !inside(at, sizes[b], length)) {
      return REFUSE(ERR_BAD_ARTIFACT, "BadArtifact: a block lies outside section zero");
    }
  }
  return 0;
}

/* The matrix table: shapes from the configuration, rows inside their sections. */
static uint64_t check_matrices(const uint8_t *s0, const Model *model) {
  const uint32_t *config = u32s(s0, CONFIG_OFFSET);
  uint64_t dim = config[CONFIG_DIM], hidden = config[CONFIG_HIDDEN_DIM];
  uint64_t layers = config[CONFIG_N_LAYERS], vocab = config[CONFIG_VOCAB_SIZE];
  uint64_t kv_dim = dim * config[CONFIG_N_KV_HEADS] / config[CONFIG_N_HEADS];
  uint64_t shapes[MATRICES_PER_LAYER][2] = {
      {dim, dim}, {kv_dim, dim}, {kv_dim, dim}, {dim, dim},
      {hidden, dim}, {dim, hidden}, {hidden, dim},
  };
  /* At most 114 descriptors: the table ends by byte 3,248, inside the header. */
  uint64_t count = layer_matrix(layers, 0);
  for (uint64_t i = 0; i < count; i++) {
    const MatrixDescriptor *m = matrix_of(s0, i);
    bool model_matrix = i < FIRST_LAYER_MATRIX; /* the embedding or the classifier */
    uint64_t kind = (i - FIRST_LAYER_MATRIX) % MATRICES_PER_LAYER;
    uint64_t rows = model_matrix ? vocab : shapes[kind][0];
    uint64_t columns = model_matrix ? dim : shapes[kind][1];
    /* A layer's seven matrices share a section, as do the embedding and the classifier. */
    uint64_t first = model_matrix ? MAT_EMBEDDING : i - kind;
    /* rows <= 65,536 and row_bytes <= 2,056 (checked first): the product is below 2^28. */
    if (m->section < 1 || m->section >= model->section_count || m->rows != rows ||
        m->columns != columns || m->row_bytes != round8(columns + ROW_PREFIX) ||
        m->offset % 8 || m->section != matrix_of(s0, first)->section ||
        !inside(m->offset, rows * m->row_bytes, model->sections[m->section].length)) {
      return REFUSE(ERR_BAD_ARTIFACT,
                    "BadArtifact: a matrix of the matrix table has another shape or section, "
                    "or lies outside its section");
    }
  }
  return 0;
}

/* True when every one of `count` (>= 1) u32 entries at `table` is in [low, high]. OPAQUE
 * makes each entry any u64 to clang, so the test stays one 64-bit subtract and compare (no
 * 32-bit mask), and keeps the loop a pointer step and one branch back. */
static bool all_in(const uint32_t *table, uint64_t count, uint64_t low, uint64_t high) {
  const uint32_t *p = table, *end = table + count;
  do {
    uint64_t v = *p;
    OPAQUE(v);
    if (v - low > high - low) {
      return false;
    }
    p++;
    OPAQUE(p);
  } while (p != end);
  return true;
}

/* True when every one of `count` (>= 1) i32 entries at `table` is in [-bound, bound]: read
 * as u32, in [0, bound] or in [2^32 - bound, 2^32). No sign extension, which the v0 build
 * pays two instructions for. */
static bool all_within(const uint32_t *table, uint64_t count, uint64_t bound) {
  const uint32_t *p = table, *end = table + count;
  do {
    uint64_t v = *p;
    OPAQUE(v);
    if (v > bound && v < (1UL << 32) - bound) {
      return false;
    }
    p++;
    OPAQUE(p);
  } while (p != end);
  return true;
}

/* The values the arithmetic relies on, each within docs/inference.md's bounds: the
 * exponential table in [1, 2^30 + 1] with E[0] >= 2^7, the SiLU table within +-2^20, the
 * rotary table within +-(2^24 + 1), 1/sqrt(head size) at most 2^24. The normalization
 * weights are any i32 (the bounds hold for every one), so they need no check. A hostile
 * model (one sealed with other values: the hash binds the bytes, not what they mean) is
 * refused here, before any step of its runs. */
static uint64_t check_tables(const uint8_t *s0) {
  const uint32_t *config = u32s(s0, CONFIG_OFFSET);
  const uint32_t *blocks = u32s(s0, BLOCK_OFFSETS_OFFSET);
  const uint32_t *exp = u32s(s0, blocks[BLOCK_EXP]);
  uint64_t head_size = config[CONFIG_DIM] / config[CONFIG_N_HEADS];
  if (!all_in(exp, TABLE_ENTRIES, 1, EXP_MAX) || exp[0] < EXP_ZERO_MIN) {
    return REFUSE(ERR_BAD_ARTIFACT, "BadArtifact: the exponential table is out of bounds");
  }
  if (!all_within(u32s(s0, blocks[BLOCK_SILU]), TABLE_ENTRIES, SILU_MAX)) {
    return REFUSE(ERR_BAD_ARTIFACT, "BadArtifact: the SiLU table is out of bounds");
  }
  if (!all_within(u32s(s0, blocks[BLOCK_ROTARY]), config[CONFIG_SEQ_LEN] * head_size, ROTARY_MAX)) {
    return REFUSE(ERR_BAD_ARTIFACT, "BadArtifact: the rotary table is out of bounds");
  }
  if (read_u32(s0 + INV_SQRT_OFFSET) > INV_SQRT_MAX) {
    return REFUSE(ERR_BAD_ARTIFACT, "BadArtifact: 1/sqrt(head size) is above 1");
  }
  return 0;
}

/* Token entries inside section zero and at most 128 bytes; sorted ids inside the vocab. */
static uint64_t check_tokenizer(const uint8_t *s0, uint64_t length) {
  uint64_t vocab = u32s(s0, CONFIG_OFFSET)[CONFIG_VOCAB_SIZE];
  const uint32_t *blocks = u32s(s0, BLOCK_OFFSETS_OFFSET);
  const uint32_t *entries = u32s(s0, blocks[BLOCK_TOKEN_ENTRIES]);
  const uint32_t *sorted = u32s(s0, blocks[BLOCK_SORTED_IDS]);
  for (uint64_t id = 0; id < vocab; id++) {
    const uint32_t *e = entries + TOKEN_ENTRY_SIZE / sizeof(uint32_t) * id;
    if (e[1] > MAX_TOKEN_LENGTH || !inside(e[2], e[1], length) || sorted[id] >= vocab) {
      return REFUSE(ERR_BAD_ARTIFACT, "BadArtifact: a token entry lies outside section zero, "
                                      "or a sorted id outside the vocabulary");
    }
  }
  return 0;
}

uint64_t check_section_zero(const SolAccount *model_account, const SolAccount *weight) {
  const Model *model = model_view(model_account);
  const SectionSlot *slot = &model->sections[0];
  uint64_t err = check_slot_weight(model_account, weight, 0);
  if (err) {
    return err;
  }
  const uint8_t *s0 = weight->data + WEIGHT_HEADER_SIZE;
  if ((err = check_config(s0, slot->length, model)) || (err = check_matrices(s0, model)) ||
      (err = check_tables(s0)) || (err = check_tokenizer(s0, slot->length))) {
    return err;
  }
  return 0;
}
