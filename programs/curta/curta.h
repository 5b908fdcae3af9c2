/*
 * curta.h: the curta program's accounts, instructions and errors.
 *
 * The layouts here are the contract with curta_chain/program/curta.json (the Anchor IDL):
 * every field sits at a naturally aligned offset, so the Borsh layout the IDL describes and
 * the C layout are the same bytes. tests/program checks the two agree.
 */
#ifndef CURTA_H
#define CURTA_H

#include "curta_sdk.h"

/* Every instruction's data and every account's data start with an Anchor discriminator:
 * 8 bytes, read as a little-endian u64. An instruction's arguments follow it. */
#define DISCRIMINATOR_SIZE sizeof(uint64_t)
#define ARGS_OFFSET DISCRIMINATOR_SIZE

/* Instruction discriminators: sha256("global:<name>")[:8]. */
#define IX_CREATE_MODEL 0xe5d4d482db29e9d4UL
#define IX_BIND_WEIGHT_ACCOUNT 0xa3e8f1dfcbcb083eUL
#define IX_WRITE_WEIGHTS 0x3dfe633c34b11a11UL
#define IX_BEGIN_SEALING 0x09fcae5ea4171382UL
#define IX_SEAL_STEP 0xe7b64c9c6d1a8ba1UL
#define IX_REOPEN 0xa66f57c02683cd95UL
#define IX_CLOSE_MODEL 0xdea367085aa117f8UL
#define IX_CLOSE_WEIGHT_ACCOUNT 0x08bad9aefdf5f7a1UL

/* sha256("account:<Name>")[:8] as little-endian u64. */
#define MODEL_DISCRIMINATOR 0x97df7db97af7dd98UL
#define WEIGHT_ACCOUNT_DISCRIMINATOR 0x0ca56a1307034979UL

/* MAX_SECTIONS, WEIGHT_HEADER_SIZE, MAX_SECTION_SIZE, HASH_CHUNK_SIZE and the artifact's
 * layout: generated from curta_chain/constants.py and curta_chain/artifact/layout.py. */
#include "layout.h"
#define MIN_SECTIONS 2

enum ModelState {
  STATE_UPLOADING = 0,
  STATE_SEALING = 1,
  STATE_SEALED = 2,
  STATE_FAILED = 3,
  STATE_CLOSING = 4,
};

/*
 * The state machine, and what every instruction keeps true. The authority's instructions
 * name one weight account and sealStep at most two, so their transactions load at most the
 * model, 20 MiB of weight accounts and the program, whatever the section lengths (a
 * validator loads at most 64 MiB).
 *
 *   createModel -> UPLOADING --beginSealing--> SEALING --sealStep...--> SEALED | FAILED
 *   FAILED --reopen, one weight account each; the last one--> UPLOADING
 *   UPLOADING | SEALING | FAILED | CLOSING --closeWeightAccount--> CLOSING
 *   any state but SEALED, with no weight account bound --closeModel--> (closed)
 *
 * I1 bound_count is the number of slots holding a weight account. A bound slot's account is
 *    ours, 2,048 + the slot's length bytes, and its header names this model and this slot:
 *    bindWeightAccount writes slot and header together, closeWeightAccount clears the slot and
 *    closes the account together, and nothing else changes either.
 * I2 frozen_count is the number of bound weight accounts whose header is frozen.
 * I3 UPLOADING: nothing is frozen (frozen_count 0); the hash chain is at its start; seal_slot 0.
 * I4 SEALING: every slot is bound. Section i is frozen exactly when the seal has entered it
 *    (i < cursor_section, or i == cursor_section with cursor_offset > 0): the sealStep that
 *    hashes a section's first chunk freezes it in the same instruction, and writes refuse a
 *    frozen account, so the bytes hashed are the bytes kept. A section the seal has not
 *    entered yet still takes its authority's writes (a write names no model, so it cannot
 *    know the model is sealing); the seal hashes whatever it holds when entered.
 *    running_hash chains the frozen bytes before the cursor; seal_slot is the Clock slot of
 *    the beginSealing that started this seal.
 * I5 SEALED: every slot is bound and frozen, running_hash == declared_hash. No instruction
 *    accepts a sealed model, and every weight account refuses writes: it never changes.
 * I6 FAILED: every slot is bound; reopen unfreezes one weight account per instruction
 *    (frozen_count counts those still frozen) and the one that brings frozen_count to 0
 *    restarts the chain in UPLOADING. A reopened account takes writes at once.
 * I7 CLOSING: one-way. Only closeWeightAccount and closeModel take the model; bind, seal and
 *    reopen refuse it. A bound, unfrozen account may still take writes until it is closed.
 *
 * Replays: a transaction the cluster has seen never runs twice; the same instruction signed
 * afresh meets a state that refuses it (ModelNotUploading, WeightAccountNotFrozen, an account
 * already closed is no longer ours: WrongAccountOwner, its slot is empty: UnboundSlot).
 */

typedef struct {
  uint8_t weight_account[PUBKEY_SIZE]; /* all zero while unbound */
  uint64_t length;
} SectionSlot;

typedef struct {
  uint64_t discriminator;
  uint8_t authority[PUBKEY_SIZE];
  uint8_t declared_hash[HASH_SIZE];
  uint8_t running_hash[HASH_SIZE];
  uint8_t state;
  uint8_t section_count;
  uint8_t bound_count;
  uint8_t frozen_count; /* bound weight accounts whose header is frozen */
  uint8_t reserved0[4];
  uint32_t cursor_section;
  uint32_t chunks_hashed;
  uint64_t cursor_offset;
  SectionSlot sections[MAX_SECTIONS];
  uint64_t seal_slot; /* Clock slot of the beginSealing that started the current seal, or 0 */
} Model;

typedef struct {
  uint64_t discriminator;
  uint8_t model[PUBKEY_SIZE];
  uint8_t authority[PUBKEY_SIZE];
  uint32_t section_index;
  uint8_t frozen;
  uint8_t reserved0[3];
  uint64_t section_length;
  uint8_t reserved[1960];
} WeightHeader;

_Static_assert(sizeof(SectionSlot) == 40, "SectionSlot is 40 bytes");
_Static_assert(sizeof(Model) == 856, "Model is MODEL_ACCOUNT_SIZE bytes");
_Static_assert(sizeof(WeightHeader) == WEIGHT_HEADER_SIZE, "header is 2048 bytes");

/* Custom errors: the IDL lists the same codes and names (tests compare them). */
enum CurtaError {
  ERR_INVALID_INSTRUCTION_DATA = 6000,
  ERR_UNKNOWN_INSTRUCTION = 6001,
  ERR_NOT_ENOUGH_ACCOUNTS = 6002,
  ERR_TOO_MANY_ACCOUNTS = 6003,
  ERR_DUPLICATE_ACCOUNT = 6004,
  ERR_WRONG_ACCOUNT_OWNER = 6005,
  ERR_MISSING_SIGNATURE = 6006,
  ERR_ACCOUNT_NOT_WRITABLE = 6007,
  ERR_WRONG_ACCOUNT_SIZE = 6008,
  ERR_ACCOUNT_NOT_FRESH = 6009,
  ERR_WRONG_DISCRIMINATOR = 6010,
  ERR_WRONG_AUTHORITY = 6011,
  ERR_BAD_SECTION_COUNT = 6012,
  ERR_BAD_SECTION_LENGTH = 6013,
  ERR_SECTION_INDEX_OUT_OF_RANGE = 6014,
  ERR_SLOT_ALREADY_BOUND = 6015,
  ERR_WEIGHT_ACCOUNT_OF_ANOTHER_MODEL = 6016,
  ERR_WEIGHT_ACCOUNT_OF_ANOTHER_SLOT = 6017,
  ERR_MODEL_NOT_UPLOADING = 6018,
  ERR_WEIGHT_ACCOUNT_FROZEN = 6019,
  ERR_WEIGHT_ACCOUNT_NOT_FROZEN = 6020,
  ERR_WRITE_OUT_OF_BOUNDS = 6021,
  ERR_UNBOUND_SLOT = 6022,
  ERR_MODEL_NOT_SEALING = 6023,
  ERR_MODEL_NOT_FAILED = 6024,
  ERR_MODEL_SEALED = 6025,
  ERR_WRONG_WEIGHT_ACCOUNT = 6026,
  ERR_WRONG_REMAINING_ACCOUNT_COUNT = 6027, /* retired: no instruction takes a list of accounts */
  ERR_WEIGHT_ACCOUNTS_STILL_BOUND = 6028,
};

/* Log one line naming the refusal and return its code: `return REFUSE(ERR_X, "X: why");`. */
#define REFUSE(code, literal) refuse((code), (literal), sizeof(literal) - 1)
uint64_t refuse(uint64_t code, const char *line, uint64_t len);

/* Shared account checks (checks.c). Each returns 0 or the refusal it logged. */
uint64_t check_accounts(const SolInput *in, uint64_t count);
uint64_t check_program_owned(const SolInput *in, const SolAccount *account);
uint64_t check_signer(const SolAccount *account);
uint64_t check_writable(const SolAccount *account);
uint64_t check_model_size(const SolAccount *account);
uint64_t check_model_layout(const SolAccount *account);
uint64_t check_model_authority(const Model *model, const SolAccount *authority);
uint64_t check_authority_and_model(const SolInput *in, uint64_t count, uint64_t args_size,
                                   bool authority_receives);
uint64_t check_slot_weight(const SolAccount *model_account, const SolAccount *weight,
                           uint64_t index);

/* What more than one processor does once its checks passed (effects.c). */
void restart_hash_chain(Model *model, uint8_t state, uint64_t seal_slot);
void close_account(SolAccount *account, SolAccount *recipient);

/* Typed views of account data, writable and read-only. The casts are sound because account
 * data starts 8-aligned in the input and the layouts need no more. */
static inline Model *model_of(SolAccount *account) { return (Model *)account->data; }
static inline const Model *model_view(const SolAccount *account) {
  return (const Model *)account->data;
}
static inline WeightHeader *header_of(SolAccount *account) {
  return (WeightHeader *)account->data;
}
static inline const WeightHeader *header_view(const SolAccount *account) {
  return (const WeightHeader *)account->data;
}

/* One processor per instruction (one file each). */
uint64_t process_create_model(SolInput *in);
uint64_t process_bind_weight_account(SolInput *in);
uint64_t process_write_weights(SolInput *in);
uint64_t process_begin_sealing(SolInput *in);
uint64_t process_seal_step(SolInput *in);
uint64_t process_reopen(SolInput *in);
uint64_t process_close_weight_account(SolInput *in);
uint64_t process_close_model(SolInput *in);

#endif
