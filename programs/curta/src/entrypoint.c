/*
 * entrypoint.c: parse the input, then dispatch on the Anchor discriminator. Nothing else.
 */
#include "../inference.h"

static uint64_t process_instruction(SolInput *in) {
  if (in->data_len < DISCRIMINATOR_SIZE) {
    return REFUSE(ERR_INVALID_INSTRUCTION_DATA, "InvalidInstructionData: no discriminator");
  }
  switch (read_u64(in->data)) {
  case IX_CREATE_MODEL:
    return process_create_model(in);
  case IX_BIND_WEIGHT_ACCOUNT:
    return process_bind_weight_account(in);
  case IX_WRITE_WEIGHTS:
    return process_write_weights(in);
  case IX_BEGIN_SEALING:
    return process_begin_sealing(in);
  case IX_SEAL_STEP:
    return process_seal_step(in);
  case IX_REOPEN:
    return process_reopen(in);
  case IX_CLOSE_WEIGHT_ACCOUNT:
    return process_close_weight_account(in);
  case IX_CLOSE_MODEL:
    return process_close_model(in);
  case IX_OPEN_RUN:
    return process_open_run(in);
  case IX_STEP:
    return process_step(in);
  case IX_CLOSE_RUN:
    return process_close_run(in);
  default:
    return REFUSE(ERR_UNKNOWN_INSTRUCTION, "UnknownInstruction: unknown discriminator");
  }
}

uint64_t entrypoint(uint8_t *input) {
  /* The parsed input is too big for clang's 512-byte BPF frame: it lives at the heap start. */
  SolInput *in = (SolInput *)HEAP_START;
  if (!sol_deserialize(input, in)) {
    return REFUSE(ERR_TOO_MANY_ACCOUNTS, "TooManyAccounts: more than 64 accounts");
  }
  return process_instruction(in);
}
