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

  restart_hash_chain(in, model, STATE_UPLOADING, 0);
  return 0;
}
