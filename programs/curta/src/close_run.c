/*
 * close_run.c: closeRun()
 * Accounts: 0 opener (signer, writable: receives the rent), 1 run (writable). A run closes
 * in any state, as any account closes (effects.c).
 */
#include "../inference.h"

uint64_t process_close_run(SolInput *in) {
  uint64_t err = check_accounts(in, 2);
  if (err) {
    return err;
  }
  if (in->data_len != DISCRIMINATOR_SIZE) {
    return REFUSE(ERR_INVALID_INSTRUCTION_DATA, "InvalidInstructionData: takes no arguments");
  }
  SolAccount *opener = in->accounts[0];
  SolAccount *run_account = in->accounts[1];
  if ((err = check_run_owned(in, run_account)) || (err = check_signer(opener)) ||
      (err = check_writable(opener)) || (err = check_run_layout(run_account))) {
    return err;
  }
  const Run *run = (const Run *)run_account->data; /* account data is 8-aligned */
  if (!pubkey_equal(run->opener, opener->key)) {
    return REFUSE(ERR_WRONG_OPENER, "WrongOpener: only the run's opener closes it");
  }

  close_account(run_account, opener);
  return 0;
}
