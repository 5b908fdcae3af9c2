/*
 * begin_sealing.c: beginSealing()
 * Accounts: 0 authority (signer), 1 model (writable). Every slot must be bound. Freezes
 * nothing: each section freezes when the seal enters it (sealStep). Records the Clock slot,
 * so that a reader can tell whether the program was redeployed after this seal began.
 */
#include "../curta.h"

uint64_t process_begin_sealing(SolInput *in) {
  uint64_t err = check_authority_and_model(in, 2, 0, false);
  if (err) {
    return err;
  }
  SolAccount *authority = in->accounts[0];
  Model *model = model_of(in->accounts[1]);
  if (model->state != STATE_UPLOADING) {
    return REFUSE(ERR_MODEL_NOT_UPLOADING, "ModelNotUploading: sealing begins from uploading");
  }
  if ((err = check_model_authority(model, authority))) {
    return err;
  }
  if (model->bound_count != model->section_count) {
    return REFUSE(ERR_UNBOUND_SLOT, "UnboundSlot: every slot needs its weight account");
  }

  SolClock clock;
  sol_get_clock_sysvar(&clock);
  restart_hash_chain(model, STATE_SEALING, clock.slot);
  return 0;
}
