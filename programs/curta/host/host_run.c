/*
 * host_run.c: a run of the program's forward pass on the host, for `curta-chain run`
 * (curta_chain/inference/native.py calls these through ctypes).
 *
 * A run is what openRun makes of a token prompt (src/open_run.c): the run account's
 * header and regions (run_layout: five activation regions of two vectors each, one a
 * position of a batch), the prompt's ids in the prompt and token regions, the generator
 * from the seed. Then the program's own phases (forward_phase: the forward pass, the
 * sampler) advance it with a budget no phase reaches, so each call runs a phase whole:
 * the same integers as any slicing of them on chain. The prompt's positions run as on
 * chain, two a batch (inference.h's batch_lanes): on the host that is as fast as one at a
 * time or faster (docs/inference.md), and it is the program's path, unchanged. The
 * artifact is the caller's, already checked against the spec (decode_artifact), and
 * section i is at its table's offset.
 */
#include <stdlib.h>

#include "../inference.h"

#define HOST_BUDGET (1UL << 62) /* more than any phase costs: every phase runs whole */
#define EXPORT __attribute__((visibility("default"))) /* the build hides everything else */

typedef struct {
  Step step;
  Run *run; /* the run account, 8-aligned (calloc) */
} HostRun;

/* Open a run of `prompt_tokens` ids (ids < vocab, 1 <= prompt_tokens < capacity <= context,
 * checked by the caller) over the artifact at `artifact` (8-aligned). NULL when out of
 * memory. */
EXPORT HostRun *curta_host_open(const uint8_t *artifact, const uint32_t *prompt,
                                uint32_t prompt_tokens, uint32_t capacity, uint32_t temperature,
                                uint32_t top_p, uint64_t seed) {
  const uint32_t *config = (const uint32_t *)(artifact + CONFIG_OFFSET);
  Run header = {0};
  header.dim = config[CONFIG_DIM];
  header.hidden_dim = config[CONFIG_HIDDEN_DIM];
  header.layers = config[CONFIG_N_LAYERS];
  header.heads = config[CONFIG_N_HEADS];
  header.kv_heads = config[CONFIG_N_KV_HEADS];
  header.vocab = config[CONFIG_VOCAB_SIZE];
  header.context = config[CONFIG_SEQ_LEN];
  header.capacity = capacity;
  header.prompt_kind = PROMPT_TOKENS;
  header.prompt_length = prompt_tokens;
  run_layout(&header);
  HostRun *h = calloc(1, sizeof(HostRun));
  Run *run = calloc(1, header.regions[REGION_END]);
  if (!h || !run) {
    free(h);
    free(run);
    return 0;
  }
  *run = header;
  run->discriminator = RUN_DISCRIMINATOR;
  run->temperature = temperature;
  run->top_p = top_p;
  run->seed = seed;
  run->rng = rng_seed(seed);
  uint8_t *data = (uint8_t *)run;
  for (uint64_t i = 0; i < prompt_tokens; i++) {
    ((uint32_t *)(data + run->regions[REGION_PROMPT]))[i] = prompt[i];
    ((uint32_t *)(data + run->regions[REGION_TOKENS]))[i] = prompt[i];
  }
  run->prompt_tokens = prompt_tokens;
  run->token_count = prompt_tokens;
  run->state = RUN_RUNNING;

  Step *s = &h->step;
  uint64_t sections = read_u32(artifact + SECTION_COUNT_OFFSET);
  for (uint64_t i = 0; i < sections && i < MAX_SECTIONS; i++) {
    s->sections[i] = artifact + read_u64(artifact + SECTION_TABLE_OFFSET + SECTION_ENTRY_SIZE * i);
  }
  s->run = run;
  s->data = data;
  s->s0 = s->sections[0];
  s->s0_length = read_u64(artifact + SECTION_TABLE_OFFSET + SECTION_LENGTH_OFFSET);
  h->run = run;
  return h;
}

/* Run phases until the run's position or token count moves, or it finishes: a batch of
 * the prompt's positions (two, or the last one alone), or a generated token. Returns the tokens the run holds, plus 2^32
 * once it is finished, or -1 when a phase could not run (a guard: the budget holds any
 * phase, and every section is there). */
EXPORT int64_t curta_host_advance(HostRun *h) {
  Step *s = &h->step;
  Run *run = h->run;
  uint32_t position = run->position, count = run->token_count;
  /* The heap is zeroed for every instruction on chain; no phase reads scratch it did not
   * write, but the host keeps that promise too. */
  sol_memset_(HEAP_START, 0, HOST_HEAP_SIZE);
  while (run->state != RUN_FINISHED && run->position == position && run->token_count == count) {
    s->budget = HOST_BUDGET;
    s->missing = false;
    if (!forward_phase(s)) {
      return -1;
    }
  }
  return (int64_t)run->token_count | (int64_t)(run->state == RUN_FINISHED) << 32;
}

/* Token `index` of the run (index < its token count). */
EXPORT uint32_t curta_host_token(const HostRun *h, uint32_t index) {
  return ((const uint32_t *)((const uint8_t *)h->run + h->run->regions[REGION_TOKENS]))[index];
}

EXPORT void curta_host_close(HostRun *h) {
  if (h) {
    free(h->run);
    free(h);
  }
}
