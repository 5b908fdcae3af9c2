/*
 * open_run.c: openRun(capacity: u32, temperature: u32, topP: u32, seed: u64, prompt: Prompt)
 * Accounts: 0 opener (signer), 1 run (writable, signer; fresh, ours, sized by the client
 * for this model, capacity and prompt), 2 model (sealed), 3 the model's section-zero
 * weight account. Prompt is a Borsh enum: 0 Text(bytes) or 1 Tokens(Vec<u32>). Capacity
 * is the run's tokens, the prompt's and the generated ones (2 to the context).
 *
 * Section zero is checked once here (section_zero.c: header, configuration, blocks, matrix
 * table, tables, tokenizer), so that every later step reads inside it and inside the matrix
 * sections, and computes inside the bounds docs/inference.md derives.
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
  /* Section zero is 8-aligned in its account and its configuration 4-aligned in it. */
  const uint32_t *config = (const uint32_t *)(weight->data + WEIGHT_HEADER_SIZE + CONFIG_OFFSET);
  uint64_t capacity = read_u32(in->data + ARG_CAPACITY);
  if (capacity < MIN_CAPACITY || capacity > config[CONFIG_SEQ_LEN]) {
    return REFUSE(ERR_BAD_CAPACITY, "BadCapacity: 2 to the model's context tokens");
  }
  uint64_t vocab = config[CONFIG_VOCAB_SIZE];
  if ((err = check_prompt(in->data + ARG_PROMPT, kind, length, vocab, capacity))) {
    return err;
  }
  uint64_t temperature = read_u32(in->data + ARG_TEMPERATURE);
  uint64_t top_p = read_u32(in->data + ARG_TOP_P);
  if (top_p > TOP_P_ONE) {
    return REFUSE(ERR_BAD_SAMPLING, "BadSampling: top-p is 0 to 1 (65,536 in Q16)");
  }
  /* The layout goes into the header only once it is known to fit the account. */
  Run *probe = (Run *)SCRATCH; /* zeroed heap: a 512-byte header is too big for the stack */
  probe->dim = config[CONFIG_DIM];
  probe->hidden_dim = config[CONFIG_HIDDEN_DIM];
  probe->layers = config[CONFIG_N_LAYERS];
  probe->heads = config[CONFIG_N_HEADS];
  probe->kv_heads = config[CONFIG_N_KV_HEADS];
  probe->vocab = config[CONFIG_VOCAB_SIZE];
  probe->context = config[CONFIG_SEQ_LEN];
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
