/*
 * seal_step.c: sealStep(label: u64)
 * Accounts: 0 model (writable), 1 a weight account (writable), optionally 2 the weight
 * account of the next slot (writable). Anyone may crank, and many steps may be in flight at
 * once: a step hashes the next chunk wherever the model's cursor is, with whichever passed
 * account is the cursor's slot, so k steps landed in any order hash k chunks. The label is
 * not read: it only makes each crank its own transaction. A client at a section's end passes
 * both that section's account and the next one's, since it cannot know which of them the
 * cursor will be in when its step lands.
 *
 * The step that enters a section freezes its weight account, so no write lands in it
 * afterwards (passing the next slot's account freezes nothing until the cursor enters it).
 * Hashes one chunk: running = sha256(running || next <= 65,536 bytes of the section); a
 * chunk never crosses a section's end. After the last chunk of the last section the model
 * is sealed if running == declared, else failed.
 */
#include "../curta.h"

#define ARGS_SIZE (ARGS_OFFSET + sizeof(uint64_t))
#define FIRST_WEIGHT 1
#define MAX_WEIGHTS 2

uint64_t process_seal_step(SolInput *in) {
  /* The accounts the step takes: the model and one or two weight accounts. */
  uint64_t taken = in->account_count >= FIRST_WEIGHT + MAX_WEIGHTS ? FIRST_WEIGHT + MAX_WEIGHTS
                                                                   : FIRST_WEIGHT + 1;
  uint64_t err = check_accounts(in, taken);
  if (err) {
    return err;
  }
  if (in->data_len != ARGS_SIZE) {
    return REFUSE(ERR_INVALID_INSTRUCTION_DATA, "InvalidInstructionData: sealStep takes a u64");
  }
  SolAccount *model_account = in->accounts[0];
  if ((err = check_program_owned(in, model_account)) || (err = check_writable(model_account)) ||
      (err = check_model_layout(model_account))) {
    return err;
  }
  Model *model = model_of(model_account);
  if (model->state != STATE_SEALING || model->cursor_section >= model->section_count) {
    return REFUSE(ERR_MODEL_NOT_SEALING, "ModelNotSealing: call beginSealing first");
  }
  /* The cursor's account: the second one passed when it is that slot's, else the first
   * (whose checks then name what is wrong with it). */
  const SectionSlot *slot = &model->sections[model->cursor_section];
  SolAccount *weight = in->accounts[FIRST_WEIGHT];
  if (taken == FIRST_WEIGHT + MAX_WEIGHTS &&
      pubkey_equal(in->accounts[FIRST_WEIGHT + 1]->key, slot->weight_account)) {
    weight = in->accounts[FIRST_WEIGHT + 1];
  }
  if ((err = check_program_owned(in, weight)) || (err = check_writable(weight)) ||
      (err = check_slot_weight(model_account, weight, model->cursor_section))) {
    return err;
  }
  /* Invariant I4 (curta.h): frozen exactly when the seal has entered the section. */
  WeightHeader *header = header_of(weight);
  bool entering = model->cursor_offset == 0;
  if (entering && header->frozen) {
    return REFUSE(ERR_WEIGHT_ACCOUNT_FROZEN, "WeightAccountFrozen: frozen before the seal");
  }
  if (!entering && !header->frozen) {
    return REFUSE(ERR_WEIGHT_ACCOUNT_NOT_FROZEN, "WeightAccountNotFrozen: the seal entered it");
  }

  if (entering) {
    header->frozen = 1;
    model->frozen_count += 1;
  }
  /* cursor_offset < length (I4: the cursor moves on at a section's end). */
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
