/*
 * close_run.c: closeRun()
 * Accounts: 0 opener (signer, writable: receives the rent), 1 run (writable). A run closes
 * in any state; the account is shrunk to zero bytes and handed back to the system program,
 * so nothing of it revives later in the transaction, and the runtime drops it.
 */
#include "../inference.h"

uint64_t process_close_run(SolInput *in) {
  if (in->account_count < 2) {
    return REFUSE(ERR_NOT_ENOUGH_ACCOUNTS, "NotEnoughAccounts: closeRun needs 2 accounts");
  }
  uint64_t err = check_distinct(in, 2);
  if (err) {
    return err;
  }
  if (in->data_len != 8) {
    return REFUSE(ERR_INVALID_INSTRUCTION_DATA, "InvalidInstructionData: takes no arguments");
  }
  SolAccount *opener = in->accounts[0];
  SolAccount *run_account = in->accounts[1];
  if ((err = check_run_account(in, run_account)) || (err = check_signer(opener)) ||
      (err = check_writable(opener))) {
    return err;
  }
  const Run *run = (const Run *)run_account->data;
  if (!pubkey_equal(run->opener, opener->key)) {
    return REFUSE(ERR_WRONG_OPENER, "WrongOpener: only the run's opener closes it");
  }

  /* Every lamport in existence fits a u64 many times over: the sum cannot wrap. */
  opener->lamports += run_account->lamports;
  run_account->lamports = 0;
  run_account->data_len = 0;
  sol_memset_(run_account->owner, 0, PUBKEY_SIZE); /* the system program's id */
  return 0;
}
