/*
 * close_weight_account.c: closeWeightAccount(sectionIndex: u32)
 * Accounts: 0 authority (signer, writable: receives the lamports), 1 model (writable), 2 the
 * weight account of that slot (writable). Closes one weight account of an unsealed model and
 * empties its slot; the model is closing from then on (only more closes are accepted), and
 * closeModel takes it once no slot is bound.
 */
#include "../curta.h"

uint64_t process_close_weight_account(SolInput *in) {
  uint64_t err = check_authority_and_model(in, 3, sizeof(uint32_t), true);
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

  if (header_of(weight)->frozen) {
    model->frozen_count -= 1;
  }
  sol_memset_(model->sections[index].weight_account, 0, PUBKEY_SIZE);
  model->bound_count -= 1;
  model->state = STATE_CLOSING;
  close_account(weight, authority);
  return 0;
}
