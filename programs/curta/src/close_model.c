/*
 * close_model.c: closeModel()
 * Accounts: 0 authority (signer, writable: receives the lamports), 1 model (writable). Closes
 * an unsealed model once no weight account is bound to it (closeWeightAccount, one each).
 */
#include "../curta.h"

uint64_t process_close_model(SolInput *in) {
  uint64_t err = check_authority_and_model(in, 2, 0, true);
  if (err) {
    return err;
  }
  SolAccount *authority = in->accounts[0];
  SolAccount *model_account = in->accounts[1];
  Model *model = model_of(model_account);
  if (model->state == STATE_SEALED) {
    return REFUSE(ERR_MODEL_SEALED, "ModelSealed: a sealed model never changes");
  }
  if ((err = check_model_authority(model, authority))) {
    return err;
  }
  if (model->bound_count != 0) {
    return REFUSE(ERR_WEIGHT_ACCOUNTS_STILL_BOUND,
                  "WeightAccountsStillBound: close each weight account first");
  }

  close_account(model_account, authority);
  return 0;
}
