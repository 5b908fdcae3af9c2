/*
 * seal_step.c: sealStep()
 * Accounts: 0 model (writable), 1 the weight account of the cursor's slot. Anyone may crank.
 * Hashes one chunk: running = sha256(running || next <= 65,536 bytes of the section); after
 * the last chunk of the last section the model is sealed if running == declared, else failed.
 */
#include "../curta.h"

uint64_t process_seal_step(SolInput *in) {
  if (in->account_count < 2) {
    return REFUSE(ERR_NOT_ENOUGH_ACCOUNTS, "NotEnoughAccounts: sealStep needs 2 accounts");
  }
  uint64_t err = check_distinct(in, 2);
  if (err) {
    return err;
  }
  if (in->data_len != 8) {
    return REFUSE(ERR_INVALID_INSTRUCTION_DATA, "InvalidInstructionData: sealStep");
  }
  SolAccount *model_account = in->accounts[0];
  SolAccount *weight = in->accounts[1];
  if ((err = check_program_owned(in, model_account)) || (err = check_program_owned(in, weight)) ||
      (err = check_writable(model_account)) || (err = check_model_layout(model_account))) {
    return err;
  }
  Model *model = model_of(model_account);
  if (model->state != STATE_SEALING || model->cursor_section >= model->section_count) {
    return REFUSE(ERR_MODEL_NOT_SEALING, "ModelNotSealing: call beginSealing first");
  }
  const SectionSlot *slot = &model->sections[model->cursor_section];
  if (!pubkey_equal(weight->key, slot->weight_account)) {
    return REFUSE(ERR_WRONG_WEIGHT_ACCOUNT,
                  "WrongWeightAccount: pass the weight account of the cursor's slot");
  }
  if (weight->data_len != WEIGHT_HEADER_SIZE + slot->length) {
    return REFUSE(ERR_WRONG_ACCOUNT_SIZE, "WrongAccountSize: weight account size");
  }
  const WeightHeader *header = header_of(weight);
  if (header->discriminator != WEIGHT_ACCOUNT_DISCRIMINATOR) {
    return REFUSE(ERR_WRONG_DISCRIMINATOR, "WrongDiscriminator: not a WeightAccount");
  }
  if (!pubkey_equal(header->model, model_account->key)) {
    return REFUSE(ERR_WEIGHT_ACCOUNT_OF_ANOTHER_MODEL,
                  "WeightAccountOfAnotherModel: weight account bound to another model");
  }
  if (header->section_index != model->cursor_section) {
    return REFUSE(ERR_WEIGHT_ACCOUNT_OF_ANOTHER_SLOT,
                  "WeightAccountOfAnotherSlot: weight account bound to another slot");
  }
  if (!header->frozen) {
    return REFUSE(ERR_WEIGHT_ACCOUNT_NOT_FROZEN, "WeightAccountNotFrozen: call beginSealing");
  }

  uint64_t len = slot->length - model->cursor_offset;
  if (len > HASH_CHUNK_SIZE) {
    len = HASH_CHUNK_SIZE;
  }
  SolBytes slices[2] = {
      {model->running_hash, HASH_SIZE},
      {weight->data + WEIGHT_HEADER_SIZE + model->cursor_offset, len},
  };
  /* Hash into the stack: the output must not alias an input slice. */
  uint8_t next[HASH_SIZE];
  sol_sha256(slices, 2, next);
  sol_memcpy_(model->running_hash, next, HASH_SIZE);
  model->chunks_hashed += 1;
  model->cursor_offset += len;
  if (model->cursor_offset == slot->length) {
    model->cursor_section += 1;
    model->cursor_offset = 0;
  }
  if (model->cursor_section == model->section_count) {
    bool match = bytes_equal(model->running_hash, model->declared_hash, HASH_SIZE);
    model->state = match ? STATE_SEALED : STATE_FAILED;
    if (match) {
      sol_log("Sealed: the weights match the declared hash");
    } else {
      sol_log("Failed: the weights do not match the declared hash");
    }
  }
  return 0;
}
