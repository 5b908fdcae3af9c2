/*
 * checks.c: the account checks every processor shares, each logging its one refusal line,
 * and the hash-chain restart that beginSealing and reopen share.
 *
 * Processors call them in one order: count, owner, signer/writable, size, discriminator
 * and state, binding.
 */
#include "../curta.h"

uint64_t refuse(uint64_t code, const char *line, uint64_t len) {
  sol_log_(line, len);
  return code;
}

uint64_t check_distinct(const SolInput *in, uint64_t count) {
  /* A duplicate could stand for two roles at once (payee and payer, model and weight). */
  for (uint64_t i = 0; i < count; i++) {
    if (in->is_duplicate[i]) {
      return REFUSE(ERR_DUPLICATE_ACCOUNT, "DuplicateAccount: an account is passed twice");
    }
  }
  return 0;
}

uint64_t check_program_owned(const SolInput *in, const SolAccount *account) {
  if (!pubkey_equal(account->owner, in->program_id)) {
    return REFUSE(ERR_WRONG_ACCOUNT_OWNER, "WrongAccountOwner: account not owned by this program");
  }
  return 0;
}

uint64_t check_signer(const SolAccount *account) {
  if (!account->is_signer) {
    return REFUSE(ERR_MISSING_SIGNATURE, "MissingSignature: a required signer did not sign");
  }
  return 0;
}

uint64_t check_writable(const SolAccount *account) {
  if (!account->is_writable) {
    return REFUSE(ERR_ACCOUNT_NOT_WRITABLE, "AccountNotWritable: account must be writable");
  }
  return 0;
}

uint64_t check_model_layout(const SolAccount *account) {
  if (account->data_len != sizeof(Model)) {
    return REFUSE(ERR_WRONG_ACCOUNT_SIZE, "WrongAccountSize: model account is not 848 bytes");
  }
  if (model_of((SolAccount *)account)->discriminator != MODEL_DISCRIMINATOR) {
    return REFUSE(ERR_WRONG_DISCRIMINATOR, "WrongDiscriminator: not a Model account");
  }
  return 0;
}

uint64_t check_model_authority(const Model *model, const SolAccount *authority) {
  if (!pubkey_equal(model->authority, authority->key)) {
    return REFUSE(ERR_WRONG_AUTHORITY, "WrongAuthority: signer is not the model's authority");
  }
  return 0;
}

uint64_t check_authority_and_model(const SolInput *in) {
  /* beginSealing, reopen and closeModel: no arguments, accounts 0 authority (signer) and
   * 1 model (the program's, writable, well formed); the caller checks state and binding. */
  if (in->account_count < 2) {
    return REFUSE(ERR_NOT_ENOUGH_ACCOUNTS, "NotEnoughAccounts: needs the authority and the model");
  }
  uint64_t err = check_distinct(in, 2);
  if (err) {
    return err;
  }
  if (in->data_len != 8) {
    return REFUSE(ERR_INVALID_INSTRUCTION_DATA, "InvalidInstructionData: takes no arguments");
  }
  const SolAccount *model_account = in->accounts[1];
  if ((err = check_program_owned(in, model_account)) || (err = check_signer(in->accounts[0])) ||
      (err = check_writable(model_account)) || (err = check_model_layout(model_account))) {
    return err;
  }
  return 0;
}

uint64_t check_slot_accounts(const SolInput *in, uint64_t first, const SolAccount *model_account,
                             bool bound_only) {
  const Model *model = model_of((SolAccount *)model_account);
  uint64_t expected = bound_only ? model->bound_count : model->section_count;
  if (in->account_count < first || in->account_count - first != expected) {
    return REFUSE(ERR_WRONG_REMAINING_ACCOUNT_COUNT,
                  "WrongRemainingAccountCount: pass one weight account per slot, in order");
  }
  uint64_t err = check_distinct(in, first + expected);
  if (err) {
    return err;
  }
  uint64_t next = first;
  for (uint64_t slot = 0; slot < model->section_count; slot++) {
    const SectionSlot *section = &model->sections[slot];
    if (bound_only && words_zero(section->weight_account, PUBKEY_SIZE / 8)) {
      continue;
    }
    SolAccount *account = in->accounts[next++];
    if ((err = check_program_owned(in, account)) || (err = check_writable(account))) {
      return err;
    }
    if (!pubkey_equal(account->key, section->weight_account)) {
      return REFUSE(ERR_WRONG_WEIGHT_ACCOUNT,
                    "WrongWeightAccount: account is not the weight account of its slot");
    }
    if (account->data_len != WEIGHT_HEADER_SIZE + section->length) {
      return REFUSE(ERR_WRONG_ACCOUNT_SIZE, "WrongAccountSize: weight account size");
    }
    const WeightHeader *header = header_of(account);
    if (header->discriminator != WEIGHT_ACCOUNT_DISCRIMINATOR) {
      return REFUSE(ERR_WRONG_DISCRIMINATOR, "WrongDiscriminator: not a WeightAccount");
    }
    if (!pubkey_equal(header->model, model_account->key)) {
      return REFUSE(ERR_WEIGHT_ACCOUNT_OF_ANOTHER_MODEL,
                    "WeightAccountOfAnotherModel: weight account bound to another model");
    }
    if (header->section_index != slot) {
      return REFUSE(ERR_WEIGHT_ACCOUNT_OF_ANOTHER_SLOT,
                    "WeightAccountOfAnotherSlot: weight account bound to another slot");
    }
  }
  return 0;
}

void restart_hash_chain(SolInput *in, Model *model, uint8_t state, uint8_t frozen) {
  /* beginSealing and reopen, once every check passed: the weight accounts (remaining
   * accounts from index 2, in slot order) frozen or open, the chain back at its start. */
  for (uint64_t slot = 0; slot < model->section_count; slot++) {
    header_of(in->accounts[2 + slot])->frozen = frozen;
  }
  model->state = state;
  model->cursor_section = 0;
  model->cursor_offset = 0;
  model->chunks_hashed = 0;
  sol_memset_(model->running_hash, 0, HASH_SIZE);
}
