/*
 * checks.c: the account checks every processor shares, each logging its one refusal line.
 *
 * Processors call them in one order: count and duplicates, instruction data, owner,
 * signer/writable, size, discriminator and state, binding (check_slot_weight: a weight
 * account's size is its slot's, so it is checked with the binding).
 */
#include "../curta.h"

uint64_t refuse(uint64_t code, const char *line, uint64_t len) {
  sol_log_(line, len);
  return code;
}

uint64_t check_accounts(const SolInput *in, uint64_t count) {
  /* Accounts after the first `count` are ignored, as Anchor ignores remaining accounts. */
  if (in->account_count < count) {
    return REFUSE(ERR_NOT_ENOUGH_ACCOUNTS, "NotEnoughAccounts: fewer accounts than it takes");
  }
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

uint64_t check_model_size(const SolAccount *account) {
  if (account->data_len != sizeof(Model)) {
    return REFUSE(ERR_WRONG_ACCOUNT_SIZE, "WrongAccountSize: model account is not 856 bytes");
  }
  return 0;
}

uint64_t check_model_layout(const SolAccount *account) {
  uint64_t err = check_model_size(account);
  if (err) {
    return err;
  }
  if (model_view(account)->discriminator != MODEL_DISCRIMINATOR) {
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

uint64_t check_authority_and_model(const SolInput *in, uint64_t count, uint64_t args_size,
                                   bool authority_receives) {
  /* The authority's instructions: accounts 0 authority (signer; writable when it receives a
   * closed account's lamports), 1 model (the program's, writable, well formed) and, with a
   * `count` of 3, 2 a weight account (the program's, writable), in the documented order.
   * beginSealing and closeModel take no arguments, reopen and closeWeightAccount a u32. The
   * caller checks state, authority and the weight account's binding. */
  uint64_t err = check_accounts(in, count);
  if (err) {
    return err;
  }
  if (in->data_len != ARGS_OFFSET + args_size) {
    return REFUSE(ERR_INVALID_INSTRUCTION_DATA, "InvalidInstructionData: wrong argument bytes");
  }
  const SolAccount *authority = in->accounts[0];
  const SolAccount *model_account = in->accounts[1];
  const SolAccount *weight = count > 2 ? in->accounts[2] : 0;
  if ((err = check_program_owned(in, model_account)) ||
      (weight && (err = check_program_owned(in, weight))) || (err = check_signer(authority)) ||
      (authority_receives && (err = check_writable(authority))) ||
      (err = check_writable(model_account)) || (weight && (err = check_writable(weight))) ||
      (err = check_model_layout(model_account))) {
    return err;
  }
  return 0;
}

uint64_t check_slot_weight(const SolAccount *model_account, const SolAccount *weight,
                           uint64_t index) {
  /* The binding, the one check of it every instruction naming a weight account makes:
   * `weight` is the account bound in slot `index` (< section_count) of the model, it has
   * that slot's size and discriminator, and its header names this model and this slot.
   * Owner and writability were checked by the caller. */
  const Model *model = model_view(model_account);
  const SectionSlot *slot = &model->sections[index];
  if (words_zero(slot->weight_account, PUBKEY_SIZE / sizeof(uint64_t))) {
    return REFUSE(ERR_UNBOUND_SLOT, "UnboundSlot: the slot has no weight account");
  }
  if (!pubkey_equal(weight->key, slot->weight_account)) {
    return REFUSE(ERR_WRONG_WEIGHT_ACCOUNT,
                  "WrongWeightAccount: account is not the weight account of its slot");
  }
  if (weight->data_len != WEIGHT_HEADER_SIZE + slot->length) {
    return REFUSE(ERR_WRONG_ACCOUNT_SIZE, "WrongAccountSize: weight account size");
  }
  const WeightHeader *header = header_view(weight);
  if (header->discriminator != WEIGHT_ACCOUNT_DISCRIMINATOR) {
    return REFUSE(ERR_WRONG_DISCRIMINATOR, "WrongDiscriminator: not a WeightAccount");
  }
  if (!pubkey_equal(header->model, model_account->key)) {
    return REFUSE(ERR_WEIGHT_ACCOUNT_OF_ANOTHER_MODEL,
                  "WeightAccountOfAnotherModel: weight account bound to another model");
  }
  if (header->section_index != index) {
    return REFUSE(ERR_WEIGHT_ACCOUNT_OF_ANOTHER_SLOT,
                  "WeightAccountOfAnotherSlot: weight account bound to another slot");
  }
  return 0;
}
