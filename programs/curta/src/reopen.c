/*
 * reopen.c: reopen(sectionIndex: u32)
 * Accounts: 0 authority (signer), 1 model (writable), 2 the weight account of that slot
 * (writable). Unfreezes one weight account of a failed model, which then takes writes again;
 * the reopen that unfreezes the last one returns the model to uploading, its chain restarted.
 */
#include "../curta.h"

uint64_t process_reopen(SolInput *in) {
  uint64_t err = check_authority_and_model(in, 3, sizeof(uint32_t), false);
  if (err) {
    return err;
  }
  SolAccount *authority = in->accounts[0];
  SolAccount *model_account = in->accounts[1];
  SolAccount *weight = in->accounts[2];
  Model *model = model_of(model_account);
  if (model->state == STATE_SEALED) {
    return REFUSE(ERR_MODEL_SEALED, "ModelSealed: a sealed model never changes");
  }
  if (model->state != STATE_FAILED) {
    return REFUSE(ERR_MODEL_NOT_FAILED, "ModelNotFailed: only a failed model reopens");
  }
  if ((err = check_model_authority(model, authority))) {
    return err;
  }
  uint64_t index = read_u32(in->data + ARGS_OFFSET);
  if (index >= model->section_count) {
    return REFUSE(ERR_SECTION_INDEX_OUT_OF_RANGE, "SectionIndexOutOfRange: no such slot");
  }
  if ((err = check_slot_weight(model_account, weight, index))) {
    return err;
  }
  WeightHeader *header = header_of(weight);
  if (!header->frozen) {
    return REFUSE(ERR_WEIGHT_ACCOUNT_NOT_FROZEN, "WeightAccountNotFrozen: already reopened");
  }

  header->frozen = 0;
  model->frozen_count -= 1;
  if (model->frozen_count == 0) {
    restart_hash_chain(model, STATE_UPLOADING, 0);
  }
  return 0;
}
