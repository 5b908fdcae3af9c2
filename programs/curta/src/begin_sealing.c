/*
 * begin_sealing.c: beginSealing()
 * Accounts: 0 authority (signer), 1 model (writable), then every weight account in slot
 * order (writable). Freezes every weight account: no write lands after this.
 */
#include "../curta.h"

uint64_t process_begin_sealing(SolInput *in) {
  uint64_t err = check_authority_and_model(in);
  if (err) {
    return err;
  }
  SolAccount *authority = in->accounts[0];
  SolAccount *model_account = in->accounts[1];
  Model *model = model_of(model_account);
  if (model->state != STATE_UPLOADING) {
    return REFUSE(ERR_MODEL_NOT_UPLOADING, "ModelNotUploading: sealing begins from uploading");
  }
  if ((err = check_model_authority(model, authority))) {
    return err;
  }
  if (model->bound_count != model->section_count) {
    return REFUSE(ERR_UNBOUND_SLOT, "UnboundSlot: every slot needs its weight account");
  }
  if ((err = check_slot_accounts(in, 2, model_account, false))) {
    return err;
  }

  restart_hash_chain(in, model, STATE_SEALING, 1);
  return 0;
}
