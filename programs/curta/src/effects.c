/*
 * effects.c: what more than one processor does once every check has passed.
 */
#include "../curta.h"

void restart_hash_chain(Model *model, uint8_t state, uint64_t seal_slot) {
  /* beginSealing (SEALING, the Clock slot) and the reopen that unfreezes the last weight
   * account (UPLOADING, 0): the chain back at its start. */
  model->state = state;
  model->cursor_section = 0;
  model->cursor_offset = 0;
  model->chunks_hashed = 0;
  model->seal_slot = seal_slot;
  sol_memset_(model->running_hash, 0, HASH_SIZE);
}

void close_account(SolAccount *account, SolAccount *recipient) {
  /* Shrunk to zero bytes and handed back to the system program (whose id is 32 zero bytes),
   * so nothing of it can be revived later in the same transaction; the runtime then drops
   * the 0-lamport account. Every lamport in existence fits a u64: the sum cannot wrap. */
  recipient->lamports += account->lamports;
  account->lamports = 0;
  account->data_len = 0;
  sol_memset_(account->owner, 0, PUBKEY_SIZE);
}
