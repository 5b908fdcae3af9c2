/*
 * write_weights.c: writeWeights(offset: u32, data: bytes)
 * Accounts: 0 authority (signer), 1 weightAccount (writable). The header holds everything a
 * write checks, so the model account stays out of the transaction (32 more payload bytes).
 */
#include "../curta.h"

#define FIXED_ARGS_SIZE (ARGS_OFFSET + 2 * sizeof(uint32_t))

uint64_t process_write_weights(SolInput *in) {
  uint64_t err = check_accounts(in, 2);
  if (err) {
    return err;
  }
  if (in->data_len < FIXED_ARGS_SIZE) {
    return REFUSE(ERR_INVALID_INSTRUCTION_DATA, "InvalidInstructionData: writeWeights args");
  }
  uint64_t offset = read_u32(in->data + ARGS_OFFSET);
  uint64_t len = read_u32(in->data + ARGS_OFFSET + sizeof(uint32_t));
  if (in->data_len != FIXED_ARGS_SIZE + len) {
    return REFUSE(ERR_INVALID_INSTRUCTION_DATA, "InvalidInstructionData: bytes length");
  }
  SolAccount *authority = in->accounts[0];
  SolAccount *weight = in->accounts[1];
  if ((err = check_program_owned(in, weight)) || (err = check_signer(authority)) ||
      (err = check_writable(weight))) {
    return err;
  }
  if (weight->data_len < WEIGHT_HEADER_SIZE) {
    return REFUSE(ERR_WRONG_ACCOUNT_SIZE, "WrongAccountSize: weight account below 2048 bytes");
  }
  WeightHeader *header = header_of(weight);
  if (header->discriminator != WEIGHT_ACCOUNT_DISCRIMINATOR) {
    return REFUSE(ERR_WRONG_DISCRIMINATOR, "WrongDiscriminator: not a WeightAccount");
  }
  if (weight->data_len != WEIGHT_HEADER_SIZE + header->section_length) {
    return REFUSE(ERR_WRONG_ACCOUNT_SIZE, "WrongAccountSize: weight account != 2048 + length");
  }
  if (!pubkey_equal(header->authority, authority->key)) {
    return REFUSE(ERR_WRONG_AUTHORITY, "WrongAuthority: signer is not the model's authority");
  }
  if (header->frozen) {
    return REFUSE(ERR_WEIGHT_ACCOUNT_FROZEN, "WeightAccountFrozen: sealing has begun");
  }
  /* Written so that it cannot wrap, as every bounds check of the program is. */
  if (offset > header->section_length || len > header->section_length - offset) {
    return REFUSE(ERR_WRITE_OUT_OF_BOUNDS, "WriteOutOfBounds: write ends past the section");
  }
  if (len) {
    sol_memcpy_(weight->data + WEIGHT_HEADER_SIZE + offset, in->data + FIXED_ARGS_SIZE, len);
  }
  return 0;
}
