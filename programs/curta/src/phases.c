/* Where a token's phases lead once one is done: forward.c's phases and rows.c's matrix
 * phases both end through here, so neither calls into the other. */
#include "../inference.h"

/* The phase is done: on to the next. After the last layer of a batch whose next position
 * is still the prompt's, on to that position; else to the final norm of the batch's last
 * position (lane 0). */
void next_phase(Step *s) {
  Run *run = s->run;
  run->cursor = 0;
  if (run->phase + 1 == phase_final_norm(run->layers)) {
    uint64_t last = lane_position(run, batch_lanes(run), 0);
    run->position = (uint32_t)(last + 1 < run->prompt_tokens ? last + 1 : last);
    if (last + 1 < run->prompt_tokens) {
      run->phase = PH_EMBED;
      return;
    }
  }
  run->phase += 1;
}
