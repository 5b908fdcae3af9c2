/*
 * run_layout.c: where a run's regions sit, from its configuration, capacity and prompt.
 * curta_chain/onchain/run_account.py computes the same offsets (tests compare them).
 */
#include "../inference.h"

void run_layout(Run *run) {
  uint64_t kv_dim = (uint64_t)run->dim * run->kv_heads / run->heads;
  bool text = run->prompt_kind == PROMPT_TEXT;
  uint64_t sizes[REGION_END];
  sizes[REGION_PROMPT] = round8(text ? run->prompt_length : 4 * (uint64_t)run->prompt_length);
  /* Before merging, a prompt is at most the opening token, the space and one per byte;
   * the tokenizer keeps three u32 arrays of that length (work_entries). */
  sizes[REGION_WORK] = text ? round8(12 * work_entries(run)) : 0;
  sizes[REGION_TOKENS] = round8(4 * (uint64_t)run->capacity);
  /* Vectors are i64 and zero past their length up to a multiple of 8: the matvec kernel
   * reads whole groups of 8 columns. One vector a lane of a batch. */
  sizes[REGION_X] = 8 * MAX_LANES * round8(run->dim);
  sizes[REGION_XB] = 8 * MAX_LANES * round8(run->dim);
  sizes[REGION_Q] = 8 * MAX_LANES * round8(run->dim);
  sizes[REGION_HB] = 8 * MAX_LANES * round8(run->hidden_dim);
  sizes[REGION_HB2] = 8 * MAX_LANES * round8(run->hidden_dim);
  sizes[REGION_LOGITS] = 8 * round8(run->vocab);
  sizes[REGION_HIST] = 8 * (HIST_HIGH + HIST_LOW);
  /* The last token is sampled, never run: capacity - 1 positions of keys and values. */
  sizes[REGION_KEYS] = 8 * (uint64_t)run->layers * run_positions(run) * kv_dim;
  sizes[REGION_VALUES] = sizes[REGION_KEYS];
  uint64_t at = RUN_HEADER_SIZE;
  for (uint64_t i = 0; i < REGION_END; i++) {
    /* Bounded by the configuration's limits: far below 2^32 (openRun checks the total). */
    run->regions[i] = (uint32_t)at;
    at += sizes[i];
  }
  run->regions[REGION_END] = (uint32_t)at;
}
