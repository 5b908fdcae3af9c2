/*
 * close_model.c: closeModel()
 * Accounts: 0 authority (signer, writable: receives every lamport), 1 model (writable), then
 * every bound weight account in slot order (writable). Each closed account is shrunk to zero
 * bytes and handed back to the system program, so nothing of it can be revived later in the
 * same transaction; the runtime then drops the 0-lamport accounts.
 */
#include "../curta.h"

/* The system program's id is 32 zero bytes. */
static void close_account(SolAccount *account, SolAccount *recipient) {
  /* Every lamport in existence fits a u64 many times over: the sum cannot wrap. */
  recipient->lamports += account->lamports;
  account->lamports = 0;
  account->data_len = 0;
  sol_memset_(account->owner, 0, PUBKEY_SIZE);
}

uint64_t process_close_model(SolInput *in) {
  uint64_t err = check_authority_and_model(in);
  if (err) {
    return err;
  }
  SolAccount *authority = in->accounts[0];
  SolAccount *model_account = in->accounts[1];
  if ((err = check_writable(authority))) {
    return err;
  }
  Model *model = model_of(model_account);
  if (model->state == STATE_SEALED) {
    return REFUSE(ERR_MODEL_SEALED, "ModelSealed: a sealed model never changes");
  }
  if ((err = check_model_authority(model, authority)) ||
      (err = check_slot_accounts(in, 2, model_account, true))) {
    return err;
  }

  for (uint64_t i = 2; i < in->account_count; i++) {
    close_account(in->accounts[i], authority);
  }
  close_account(model_account, authority);
  return 0;
}
