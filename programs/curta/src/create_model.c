/*
 * create_model.c: createModel(declaredHash: [u8; 32], sectionLengths: Vec<u64>)
 * Accounts: 0 authority (signer), 1 model (writable, signer; fresh, 856 bytes, ours).
 */
#include "../curta.h"

#define FIXED_ARGS_SIZE (ARGS_OFFSET + HASH_SIZE + sizeof(uint32_t))

uint64_t process_create_model(SolInput *in) {
  uint64_t err = check_accounts(in, 2);
  if (err) {
    return err;
  }
  if (in->data_len < FIXED_ARGS_SIZE) {
    return REFUSE(ERR_INVALID_INSTRUCTION_DATA, "InvalidInstructionData: createModel args");
  }
  const uint8_t *declared_hash = in->data + ARGS_OFFSET;
  uint64_t count = read_u32(in->data + ARGS_OFFSET + HASH_SIZE);
  if (count < MIN_SECTIONS || count > MAX_SECTIONS) {
    return REFUSE(ERR_BAD_SECTION_COUNT, "BadSectionCount: a model has 2 to 18 sections");
  }
  if (in->data_len != FIXED_ARGS_SIZE + count * sizeof(uint64_t)) {
    return REFUSE(ERR_INVALID_INSTRUCTION_DATA, "InvalidInstructionData: createModel length");
  }
  const uint8_t *lengths = in->data + FIXED_ARGS_SIZE;
  for (uint64_t i = 0; i < count; i++) {
    uint64_t length = read_u64(lengths + i * sizeof(uint64_t));
    if (length == 0 || length > MAX_SECTION_SIZE) {
      return REFUSE(ERR_BAD_SECTION_LENGTH, "BadSectionLength: 1 to 10483712 bytes a section");
    }
  }
  SolAccount *authority = in->accounts[0];
  SolAccount *model_account = in->accounts[1];
  if ((err = check_program_owned(in, model_account)) || (err = check_signer(authority)) ||
      (err = check_signer(model_account)) || (err = check_writable(model_account)) ||
      (err = check_model_size(model_account))) {
    return err;
  }
  /* The runtime zero-fills a new account: a model with data was created before. */
  if (!words_zero(model_account->data, sizeof(Model) / sizeof(uint64_t))) {
    return REFUSE(ERR_ACCOUNT_NOT_FRESH, "AccountNotFresh: model account already holds data");
  }

  Model *model = model_of(model_account);
  model->discriminator = MODEL_DISCRIMINATOR;
  pubkey_copy(model->authority, authority->key);
  sol_memcpy_(model->declared_hash, declared_hash, HASH_SIZE);
  model->state = STATE_UPLOADING;
  model->section_count = (uint8_t)count;
  for (uint64_t i = 0; i < count; i++) {
    model->sections[i].length = read_u64(lengths + i * sizeof(uint64_t));
  }
  return 0;
}
