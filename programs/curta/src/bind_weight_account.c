/*
 * bind_weight_account.c: bindWeightAccount(sectionIndex: u32)
 * Accounts: 0 authority (signer), 1 model (writable), 2 weightAccount (writable, signer;
 * fresh, 2048 + the slot's length bytes, ours).
 */
#include "../curta.h"

#define ARGS_SIZE (ARGS_OFFSET + sizeof(uint32_t))

uint64_t process_bind_weight_account(SolInput *in) {
  uint64_t err = check_accounts(in, 3);
  if (err) {
    return err;
  }
  if (in->data_len != ARGS_SIZE) {
    return REFUSE(ERR_INVALID_INSTRUCTION_DATA, "InvalidInstructionData: bindWeightAccount");
  }
  uint64_t index = read_u32(in->data + ARGS_OFFSET);
  SolAccount *authority = in->accounts[0];
  SolAccount *model_account = in->accounts[1];
  SolAccount *weight = in->accounts[2];
  if ((err = check_program_owned(in, model_account)) || (err = check_program_owned(in, weight)) ||
      (err = check_signer(authority)) || (err = check_signer(weight)) ||
      (err = check_writable(model_account)) || (err = check_writable(weight)) ||
      (err = check_model_layout(model_account))) {
    return err;
  }
  Model *model = model_of(model_account);
  if (model->state != STATE_UPLOADING) {
    return REFUSE(ERR_MODEL_NOT_UPLOADING, "ModelNotUploading: slots bind while uploading");
  }
  if ((err = check_model_authority(model, authority))) {
    return err;
  }
  if (index >= model->section_count) {
    return REFUSE(ERR_SECTION_INDEX_OUT_OF_RANGE, "SectionIndexOutOfRange: no such slot");
  }
  SectionSlot *slot = &model->sections[index];
  if (!words_zero(slot->weight_account, PUBKEY_SIZE / sizeof(uint64_t))) {
    return REFUSE(ERR_SLOT_ALREADY_BOUND, "SlotAlreadyBound: the slot has a weight account");
  }
  if (weight->data_len != WEIGHT_HEADER_SIZE + slot->length) {
    return REFUSE(ERR_WRONG_ACCOUNT_SIZE, "WrongAccountSize: weight account != 2048 + length");
  }
  /* The runtime zero-fills a new account; the header alone tells fresh from used. */
  if (!words_zero(weight->data, WEIGHT_HEADER_SIZE / sizeof(uint64_t))) {
    return REFUSE(ERR_ACCOUNT_NOT_FRESH, "AccountNotFresh: weight account already bound");
  }

  WeightHeader *header = header_of(weight);
  header->discriminator = WEIGHT_ACCOUNT_DISCRIMINATOR;
  pubkey_copy(header->model, model_account->key);
  pubkey_copy(header->authority, model->authority);
  header->section_index = (uint32_t)index;
  header->frozen = 0;
  header->section_length = slot->length;
  pubkey_copy(slot->weight_account, weight->key);
  model->bound_count += 1;
  return 0;
}
