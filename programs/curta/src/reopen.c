/*
 * reopen.c: reopen()
 * Accounts: 0 authority (signer), 1 model (writable), then every weight account in slot
 * order (writable). A failed model goes back to uploading so its bytes can be fixed.
 */
#include "../curta.h"

uint64_t process_reopen(SolInput *in) {
  uint64_t err = check_authority_and_model(in);
  if (err) {
    return err;
  }
  SolAccount *authority = in->accounts[0];
  SolAccount *model_account = in->accounts[1];
  Model *model = model_of(model_account);
  if (model->state == STATE_SEALED) {
    return REFUSE(ERR_MODEL_SEALED, "ModelSealed: a sealed model never changes");
  }
  if (model->state != STATE_FAILED) {
    return REFUSE(ERR_MODEL_NOT_FAILED, "ModelNotFailed: only a failed model reopens");
  }
  if ((err = check_model_authority(model, authority)) ||
      (err = check_slot_accounts(in, 2, model_account, false))) {
    return err;
  }

  for (uint64_t slot = 0; slot < model->section_count; slot++) {
    header_of(in->accounts[2 + slot])->frozen = 0;
  }
  model->state = STATE_UPLOADING;
  model->cursor_section = 0;
  model->cursor_offset = 0;
  model->chunks_hashed = 0;
  sol_memset_(model->running_hash, 0, HASH_SIZE);
  return 0;
}
