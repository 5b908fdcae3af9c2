/*
 * step.c: step(label: u64). Anyone may crank: "advance this run by its next slice".
 * Accounts: 0 run (writable), 1 its model, 2 the model's section-zero weight account, then
 * any number (up to the model's section count - 1) of its other weight accounts, each at
 * most once, in any order.
 *
 * A step runs the run's phases in order, each as far as the budget allows (the cost model
 * of schedule.h, in estimated compute units), and stops at the budget or when the run finishes:
 * the slice depends on the run alone, never on the accounts passed. A phase that does work
 * in a section that was not passed refuses the whole step (MissingWeightAccount), and a
 * refused step changes nothing, so the run account after k landed steps is a function of
 * the run's arguments and k, whoever cranked them and in whatever order they landed. The
 * label is not read: it only makes each crank its own transaction, so that many can be in
 * flight at once.
 */
#include "../inference.h"

#define ARGS_SIZE (ARGS_OFFSET + sizeof(uint64_t))
#define FIRST_WEIGHT 2

uint64_t check_run_owned(const SolInput *in, const SolAccount *account) {
  /* A closed run is an empty account handed back to the system program. */
  if (account->data_len == 0 && !pubkey_equal(account->owner, in->program_id)) {
    return REFUSE(ERR_RUN_CLOSED, "RunClosed: the run account was closed");
  }
  uint64_t err;
  if ((err = check_program_owned(in, account)) || (err = check_writable(account))) {
    return err;
  }
  return 0;
}

uint64_t check_run_layout(const SolAccount *account) {
  if (account->data_len < RUN_HEADER_SIZE) {
    return REFUSE(ERR_WRONG_ACCOUNT_SIZE, "WrongAccountSize: a run account is 512 bytes or more");
  }
  const Run *run = (const Run *)account->data; /* account data is 8-aligned */
  if (run->discriminator != RUN_DISCRIMINATOR) {
    return REFUSE(ERR_WRONG_DISCRIMINATOR, "WrongDiscriminator: not a Run account");
  }
  if (account->data_len != run->regions[REGION_END]) {
    return REFUSE(ERR_WRONG_ACCOUNT_SIZE, "WrongAccountSize: run account size differs from its layout");
  }
  return 0;
}

/* One weight account of the step: the model's own, bound to its slot, frozen. A step names
 * its sections by their accounts, so the slot is the one the header claims; a header that
 * is not a weight account's, or is another model's, is refused as such before the slot is
 * looked at. Then the binding, as every instruction checks it. */
static uint64_t check_weight(const SolInput *in, const SolAccount *account,
                             const SolAccount *model_account, uint64_t *section) {
  const Model *model = model_view(model_account);
  uint64_t err = check_program_owned(in, account);
  if (err) {
    return err;
  }
  if (account->data_len < WEIGHT_HEADER_SIZE) {
    return REFUSE(ERR_WRONG_ACCOUNT_SIZE, "WrongAccountSize: weight account below 2048 bytes");
  }
  const WeightHeader *header = header_view(account);
  if (header->discriminator != WEIGHT_ACCOUNT_DISCRIMINATOR) {
    return REFUSE(ERR_WRONG_DISCRIMINATOR, "WrongDiscriminator: not a WeightAccount");
  }
  if (!pubkey_equal(header->model, model_account->key)) {
    return REFUSE(ERR_WEIGHT_ACCOUNT_OF_ANOTHER_MODEL,
                  "WeightAccountOfAnotherModel: weight account bound to another model");
  }
  uint64_t index = header->section_index;
  if (index >= model->section_count) {
    return REFUSE(ERR_WRONG_WEIGHT_ACCOUNT,
                  "WrongWeightAccount: account is not the weight account of its slot");
  }
  if ((err = check_slot_weight(model_account, account, index))) {
    return err;
  }
  if (!header->frozen) {
    return REFUSE(ERR_WEIGHT_ACCOUNT_NOT_FROZEN, "WeightAccountNotFrozen: not a sealed section");
  }
  *section = index;
  return 0;
}

static uint64_t check_step_accounts(const SolInput *in, Step *s) {
  SolAccount *run_account = in->accounts[0];
  SolAccount *model_account = in->accounts[1];
  uint64_t err;
  if ((err = check_run_owned(in, run_account)) ||
      (err = check_program_owned(in, model_account)) || (err = check_run_layout(run_account)) ||
      (err = check_model_layout(model_account))) {
    return err;
  }
  /* Run accounts are 8-aligned in the input and only openRun writes their header. */
  Run *run = (Run *)run_account->data;
  if (!pubkey_equal(run->model, model_account->key)) {
    return REFUSE(ERR_RUN_OF_ANOTHER_MODEL, "RunOfAnotherModel: the run belongs to another model");
  }
  const Model *model = model_view(model_account);
  if (model->state != STATE_SEALED) {
    return REFUSE(ERR_MODEL_NOT_SEALED, "ModelNotSealed: a run needs a sealed model");
  }
  if (in->account_count - FIRST_WEIGHT > model->section_count) {
    return REFUSE(ERR_TOO_MANY_WEIGHT_ACCOUNTS,
                  "TooManyWeightAccounts: more weight accounts than the model has sections");
  }
  for (uint64_t i = FIRST_WEIGHT; i < in->account_count; i++) {
    uint64_t section;
    if ((err = check_weight(in, in->accounts[i], model_account, &section))) {
      return err;
    }
    if ((i == FIRST_WEIGHT) != (section == 0)) {
      return REFUSE(ERR_WRONG_WEIGHT_ACCOUNT,
                    "WrongWeightAccount: section zero first, then matrix sections");
    }
    s->sections[section] = in->accounts[i]->data + WEIGHT_HEADER_SIZE;
  }
  s->run = run;
  s->data = run_account->data;
  s->s0 = s->sections[0];
  s->s0_length = model->sections[0].length;
  s->budget = STEP_BUDGET;
  return 0;
}

uint64_t process_step(SolInput *in) {
  if (in->account_count < FIRST_WEIGHT + 1) {
    return REFUSE(ERR_NOT_ENOUGH_ACCOUNTS, "NotEnoughAccounts: step needs the run, its model "
                                           "and section zero's weight account");
  }
  if (in->account_count > FIRST_WEIGHT + MAX_SECTIONS) {
    return REFUSE(ERR_TOO_MANY_WEIGHT_ACCOUNTS,
                  "TooManyWeightAccounts: a step takes at most 18 weight accounts");
  }
  uint64_t err = check_accounts(in, in->account_count);
  if (err) {
    return err;
  }
  if (in->data_len != ARGS_SIZE) {
    return REFUSE(ERR_INVALID_INSTRUCTION_DATA, "InvalidInstructionData: step takes a u64");
  }
  Step *s = STEP_CONTEXT;
  if ((err = check_step_accounts(in, s))) {
    return err;
  }
  Run *run = s->run;
  if (run->state == RUN_FINISHED) {
    return REFUSE(ERR_RUN_FINISHED, "RunFinished: the run has ended");
  }

  bool progress = false;
  while (run->state != RUN_FINISHED) {
#ifdef CALIBRATE
    /* The calibration build (scripts/bench_program_cu.py --calibrate): the compute units
     * left around each phase, then its position and state, phase, cursors and estimate. */
    uint64_t before_phase = run->phase, before_cursor = run->cursor;
    uint64_t before_state = (uint64_t)run->position << 8 | run->state;
    uint64_t before_pass = run->sample_pass, before_budget = s->budget;
    sol_log_compute_units_();
#endif
    if (!(run->state == RUN_TOKENIZING ? tokenize_phase(s) : forward_phase(s))) {
      if (s->missing) {
        /* Returning an error undoes every write of the step: the run is as it was. */
        return REFUSE(ERR_MISSING_WEIGHT_ACCOUNT,
                      "MissingWeightAccount: the slice needs a section that was not passed");
      }
      break;
    }
#ifdef CALIBRATE
    sol_log_compute_units_();
    sol_log_64_(before_state << 8 | before_pass, before_phase, before_cursor, run->cursor,
                before_budget - s->budget);
    sol_log_64_(s->plan[0], s->plan[1], s->plan[2], s->plan[3], 0);
    s->plan[0] = s->plan[1] = s->plan[2] = s->plan[3] = 0;
#endif
    progress = true;
  }
  if (!progress) {
    /* The budget holds any phase's smallest slice: this is a guard, not a path. */
    return REFUSE(ERR_NOTHING_FITS, "NothingFits: the step could not do anything");
  }
  run->steps += 1;
  return 0;
}
