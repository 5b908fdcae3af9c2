/*
 * open_run.c: openRun(capacity: u32, temperature: u32, topP: u32, seed: u64, prompt: Prompt)
 * Accounts: 0 opener (signer), 1 run (writable, signer; fresh, ours, sized by the client
 * for this model, capacity and prompt), 2 model (sealed), 3 the model's section-zero
 * weight account. Prompt is a Borsh enum: 0 Text(bytes) or 1 Tokens(Vec<u32>). Capacity
 * is the run's tokens, the prompt's and the generated ones (2 to the context).
 *
 * Section zero is checked once here (header, configuration, blocks, matrix table, tables,
 * tokenizer), so that every later step reads inside it and inside the matrix sections, and
 * computes inside the bounds docs/inference.md derives. Every offset and length check is
 * written so that it cannot wrap: `offset <= length && size <= length - offset`, each size
 * a product of values bounded before it is formed.
 */
#include "../inference.h"

/* The arguments' offsets: u32 capacity, temperature and top-p, u64 seed, then the prompt's
 * Borsh enum tag (u8) and length (u32), then its bytes or ids. */
#define ARG_CAPACITY ARGS_OFFSET
#define ARG_TEMPERATURE (ARG_CAPACITY + 4)
#define ARG_TOP_P (ARG_TEMPERATURE + 4)
#define ARG_SEED (ARG_TOP_P + 4)
#define ARG_PROMPT_KIND (ARG_SEED + 8)
#define ARG_PROMPT_LENGTH (ARG_PROMPT_KIND + 1)
#define ARG_PROMPT (ARG_PROMPT_LENGTH + 4)
#define TOP_P_ONE (1UL << ACT_BITS)

/* The tables' bounds (docs/inference.md, "Formats" and "Bounds at the largest shapes"). */
#define EXP_MAX ((1U << 30) + 1) /* E[i] <= 2^30 + 1: a softmax weight is at most 2^22 */
#define EXP_ZERO_MIN 128         /* E[0] >= 2^7: distance 0 weighs >= 1, so no sum is 0 */
#define SILU_MAX (1U << 20)      /* |S[i]| <= 2^20 = SiLU(16) */
#define ROTARY_MAX ((1U << 24) + 1) /* |cos|, |sin| <= 1 + 2^-24 */
#define INV_SQRT_MAX (1U << 24)  /* 1/sqrt(head size) <= 1 */

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
  return read_u64(s0 + ART_SECTION_TABLE + ART_SECTION_ENTRY_SIZE * i + ART_SECTION_LENGTH);
}

/* The configuration's bounds and the seven blocks inside section zero. The length comes
 * first: createModel takes any section length from 1 byte, and every field read below
 * (configuration, section table, block offsets, matrix table) lies in the 4,096-byte
 * header, so nothing past a shorter section zero is ever read. */
static uint64_t check_config(const uint8_t *s0, uint64_t length, const Model *model) {
  if (length < ART_HEADER_SIZE) {
    return REFUSE(ERR_BAD_ARTIFACT,
                  "BadArtifact: section zero is shorter than the 4096-byte header");
  }
  const uint32_t *config = u32s(s0, ART_CONFIG);
  uint64_t dim = config[0], hidden = config[1], layers = config[2], heads = config[3];
  uint64_t kv_heads = config[4], vocab = config[5], context = config[6];
  if (read_u64(s0) != ART_TAG || dim < 1 || dim > MAX_DIM ||
      hidden < 1 || hidden > MAX_HIDDEN || layers < 1 || layers > MAX_LAYERS || heads < 1 ||
      heads > MAX_HEADS || dim % heads || kv_heads < 1 || kv_heads > heads || heads % kv_heads ||
      vocab < MIN_VOCAB || vocab > MAX_VOCAB || context < 1 || context > MAX_CONTEXT) {
    return bad_artifact();
  }
  uint64_t head_size = dim / heads;
  if (head_size % 2 || head_size > MAX_HEAD_SIZE ||
      read_u32(s0 + ART_SECTION_COUNT) != model->section_count) {
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
    uint64_t at = read_u32(s0 + ART_BLOCKS + 4 * b);
    if (at < ART_HEADER_SIZE || at % 4 || !inside(at, sizes[b], length)) {
      return REFUSE(ERR_BAD_ARTIFACT, "BadArtifact: a block lies outside section zero");
    }
  }
  return 0;
}

/* The matrix table: shapes from the configuration, rows inside their sections. */
static uint64_t check_matrices(const uint8_t *s0, const Model *model) {
  const uint32_t *config = u32s(s0, ART_CONFIG);
  uint64_t dim = config[0], hidden = config[1], layers = config[2], vocab = config[5];
  uint64_t kv_dim = dim * config[4] / config[3];
  uint64_t shapes[MATRICES_PER_LAYER][2] = {
      {dim, dim}, {kv_dim, dim}, {kv_dim, dim}, {dim, dim},
      {hidden, dim}, {dim, hidden}, {hidden, dim},
  };
  /* At most 114 descriptors: the table ends by byte 3,248, inside the header. */
  uint64_t count = 2 + MATRICES_PER_LAYER * layers;
  for (uint64_t i = 0; i < count; i++) {
    const MatrixDescriptor *m = matrix_of(s0, i);
    uint64_t rows = i < 2 ? vocab : shapes[(i - 2) % MATRICES_PER_LAYER][0];
    uint64_t columns = i < 2 ? dim : shapes[(i - 2) % MATRICES_PER_LAYER][1];
    /* A layer's seven matrices share a section, as do the embedding and the classifier. */
    uint64_t first = i < 2 ? 0 : 2 + (i - 2) / MATRICES_PER_LAYER * MATRICES_PER_LAYER;
    /* rows <= 65,536 and row_bytes <= 2,056 (checked first): the product is below 2^28. */
    if (m->section < 1 || m->section >= model->section_count || m->rows != rows ||
        m->columns != columns || m->row_bytes != round8(columns + ROW_HEADER_SIZE) ||
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
  const uint32_t *config = u32s(s0, ART_CONFIG);
  const uint32_t *blocks = u32s(s0, ART_BLOCKS);
  const uint32_t *exp = u32s(s0, blocks[BLOCK_EXP]);
  uint64_t head_size = config[0] / config[3];
  if (!all_in(exp, TABLE_ENTRIES, 1, EXP_MAX) || exp[0] < EXP_ZERO_MIN) {
    return REFUSE(ERR_BAD_ARTIFACT, "BadArtifact: the exponential table is out of bounds");
  }
  if (!all_within(u32s(s0, blocks[BLOCK_SILU]), TABLE_ENTRIES, SILU_MAX)) {
    return REFUSE(ERR_BAD_ARTIFACT, "BadArtifact: the SiLU table is out of bounds");
  }
  if (!all_within(u32s(s0, blocks[BLOCK_ROTARY]), config[6] * head_size, ROTARY_MAX)) {
    return REFUSE(ERR_BAD_ARTIFACT, "BadArtifact: the rotary table is out of bounds");
  }
  if (read_u32(s0 + ART_INV_SQRT) > INV_SQRT_MAX) {
    return REFUSE(ERR_BAD_ARTIFACT, "BadArtifact: 1/sqrt(head size) is above 1");
  }
  return 0;
}

/* Token entries inside section zero and at most 128 bytes; sorted ids inside the vocab. */
static uint64_t check_tokenizer(const uint8_t *s0, uint64_t length) {
  uint64_t vocab = read_u32(s0 + ART_CONFIG + 20);
  const uint32_t *blocks = u32s(s0, ART_BLOCKS);
  const uint32_t *entries = u32s(s0, blocks[BLOCK_TOKEN_ENTRIES]);
  const uint32_t *sorted = u32s(s0, blocks[BLOCK_SORTED_IDS]);
  for (uint64_t id = 0; id < vocab; id++) {
    const uint32_t *e = entries + 4 * id;
    if (e[1] > MAX_TOKEN_LENGTH || !inside(e[2], e[1], length) || sorted[id] >= vocab) {
      return REFUSE(ERR_BAD_ARTIFACT, "BadArtifact: a token entry lies outside section zero, "
                                      "or a sorted id outside the vocabulary");
    }
  }
  return 0;
}

static uint64_t check_section_zero(const SolAccount *model_account, const SolAccount *weight) {
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

/* True when text[0..n) is UTF-8: shortest forms, no surrogates, nothing past U+10FFFF. */
static bool is_utf8(const uint8_t *text, uint64_t n) {
  uint64_t i = 0;
  while (i < n) {
    uint64_t c = text[i], len, least;
    if (c < 0x80) {
      i++;
      continue;
    }
    if ((c & 0xE0) == 0xC0) {
      len = 2, least = 0x80, c &= 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, least = 0x800, c &= 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, least = 0x10000, c &= 0x07;
    } else {
      return false;
    }
    if (i + len > n) {
      return false;
    }
    for (uint64_t k = 1; k < len; k++) {
      if ((text[i + k] & 0xC0) != 0x80) {
        return false;
      }
      c = c << 6 | (text[i + k] & 0x3F);
    }
    if (c < least || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) {
      return false;
    }
    i += len;
  }
  return true;
}

/* The prompt: UTF-8 text, or token ids inside the vocabulary leaving room to generate. */
static uint64_t check_prompt(const uint8_t *prompt, uint64_t kind, uint64_t length,
                             uint64_t vocab, uint64_t capacity) {
  if (length == 0 || length > MAX_PROMPT_LENGTH) {
    return REFUSE(ERR_BAD_PROMPT, "BadPrompt: 1 to 2048 bytes or token ids");
  }
  if (kind == PROMPT_TEXT) {
    if (!is_utf8(prompt, length)) {
      return REFUSE(ERR_BAD_PROMPT, "BadPrompt: the text is not UTF-8");
    }
    return 0;
  }
  if (length >= capacity) {
    return REFUSE(ERR_BAD_PROMPT, "BadPrompt: no room to generate after the token ids");
  }
  for (uint64_t i = 0; i < length; i++) {
    if (read_u32(prompt + 4 * i) >= vocab) {
      return REFUSE(ERR_BAD_PROMPT, "BadPrompt: a token id past the vocabulary");
    }
  }
  return 0;
}

uint64_t process_open_run(SolInput *in) {
  uint64_t err = check_accounts(in, 4);
  if (err) {
    return err;
  }
  if (in->data_len < ARG_PROMPT) {
    return REFUSE(ERR_INVALID_INSTRUCTION_DATA, "InvalidInstructionData: openRun args");
  }
  uint64_t kind = in->data[ARG_PROMPT_KIND];
  uint64_t length = read_u32(in->data + ARG_PROMPT_LENGTH);
  if (kind > PROMPT_TOKENS || in->data_len != ARG_PROMPT + (kind ? 4 : 1) * length) {
    return REFUSE(ERR_INVALID_INSTRUCTION_DATA, "InvalidInstructionData: openRun prompt");
  }
  SolAccount *opener = in->accounts[0];
  SolAccount *run_account = in->accounts[1];
  SolAccount *model_account = in->accounts[2];
  SolAccount *weight = in->accounts[3];
  if ((err = check_program_owned(in, run_account)) ||
      (err = check_program_owned(in, model_account)) ||
      (err = check_program_owned(in, weight)) || (err = check_signer(opener)) ||
      (err = check_signer(run_account)) || (err = check_writable(run_account)) ||
      (err = check_model_layout(model_account))) {
    return err;
  }
  if (run_account->data_len < RUN_HEADER_SIZE) {
    return REFUSE(ERR_WRONG_ACCOUNT_SIZE, "WrongAccountSize: a run account is 512 bytes or more");
  }
  if (!words_zero(run_account->data, RUN_HEADER_SIZE / sizeof(uint64_t))) {
    return REFUSE(ERR_ACCOUNT_NOT_FRESH, "AccountNotFresh: run account already holds data");
  }
  const Model *model = model_view(model_account);
  if (model->state != STATE_SEALED) {
    return REFUSE(ERR_MODEL_NOT_SEALED, "ModelNotSealed: a run needs a sealed model");
  }
  if ((err = check_section_zero(model_account, weight))) {
    return err;
  }
  const uint8_t *s0 = weight->data + WEIGHT_HEADER_SIZE;
  const uint32_t *config = u32s(s0, ART_CONFIG);
  uint64_t capacity = read_u32(in->data + ARG_CAPACITY);
  if (capacity < MIN_CAPACITY || capacity > config[6]) {
    return REFUSE(ERR_BAD_CAPACITY, "BadCapacity: 2 to the model's context tokens");
  }
  if ((err = check_prompt(in->data + ARG_PROMPT, kind, length, config[5], capacity))) {
    return err;
  }
  uint64_t temperature = read_u32(in->data + ARG_TEMPERATURE);
  uint64_t top_p = read_u32(in->data + ARG_TOP_P);
  if (top_p > TOP_P_ONE) {
    return REFUSE(ERR_BAD_SAMPLING, "BadSampling: top-p is 0 to 1 (65,536 in Q16)");
  }
  /* The layout goes into the header only once it is known to fit the account. */
  Run *probe = (Run *)SCRATCH; /* zeroed heap: a 512-byte header is too big for the stack */
  probe->dim = config[0];
  probe->hidden_dim = config[1];
  probe->layers = config[2];
  probe->heads = config[3];
  probe->kv_heads = config[4];
  probe->vocab = config[5];
  probe->context = config[6];
  probe->capacity = (uint32_t)capacity;
  probe->prompt_kind = (uint8_t)kind;
  probe->prompt_length = (uint32_t)length;
  run_layout(probe);
  if (run_account->data_len != probe->regions[REGION_END]) {
    return REFUSE(ERR_WRONG_ACCOUNT_SIZE,
                  "WrongAccountSize: run account size differs from its layout");
  }

  probe->discriminator = RUN_DISCRIMINATOR;
  pubkey_copy(probe->model, model_account->key);
  pubkey_copy(probe->opener, opener->key);
  probe->temperature = (uint32_t)temperature;
  probe->top_p = (uint32_t)top_p;
  probe->seed = read_u64(in->data + ARG_SEED);
  probe->rng = rng_seed(probe->seed);
  Run *run = (Run *)run_account->data; /* account data is 8-aligned */
  sol_memcpy_(run, probe, RUN_HEADER_SIZE);
  uint8_t *data = run_account->data;
  sol_memcpy_(data + run->regions[REGION_PROMPT], in->data + ARG_PROMPT,
              kind == PROMPT_TEXT ? length : 4 * length);
  if (kind == PROMPT_TOKENS) {
    sol_memcpy_(data + run->regions[REGION_TOKENS], in->data + ARG_PROMPT, 4 * length);
    run->prompt_tokens = (uint32_t)length;
    run->token_count = (uint32_t)length;
    run->state = RUN_RUNNING;
  } else {
    run->state = RUN_TOKENIZING;
  }
  return 0;
}
