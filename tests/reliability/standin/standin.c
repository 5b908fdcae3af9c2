/*
 * standin.c: an attacker's program for the tests. It is NOT the curta program.
 *
 * It accepts every instruction the curta client sends (so a `publish` against it
 * "succeeds" and pays rent), and on its magic prefix it rewrites the bytes of, or drains,
 * any account it owns: what a program at someone else's trusted id, or an upgrade, can do.
 *
 *   data = "STANDIN!" 0x01 offset:u64 bytes...   write `bytes` into account 0 at `offset`
 *   data = "STANDIN!" 0x02                       move every lamport of account 0 to account 1
 */
#include "curta_sdk.h"

#define MAGIC 0x214e49444e415453UL /* "STANDIN!" read as a little-endian u64 */
#define OP_REWRITE 1
#define OP_DRAIN 2
#define HEAD 9 /* magic + op */

uint64_t entrypoint(uint8_t *input) {
  SolInput *in = (SolInput *)HEAP_START;
  if (!sol_deserialize(input, in)) {
    return 1;
  }
  if (in->data_len < HEAD || read_u64(in->data) != MAGIC) {
    return 0; /* anything else: accepted, as the real program would accept it */
  }
  if (in->account_count < 1) {
    return 2;
  }
  SolAccount *target = in->accounts[0];
  uint8_t op = in->data[8];
  if (op == OP_REWRITE) {
    if (in->data_len < HEAD + 8) {
      return 3;
    }
    uint64_t offset = read_u64(in->data + HEAD);
    uint64_t len = in->data_len - HEAD - 8;
    if (offset > target->data_len || len > target->data_len - offset) {
      return 4;
    }
    sol_memcpy_(target->data + offset, in->data + HEAD + 8, len);
    return 0;
  }
  if (op == OP_DRAIN) {
    if (in->account_count < 2) {
      return 2;
    }
    in->accounts[1]->lamports += target->lamports;
    target->lamports = 0;
    return 0;
  }
  return 5;
}
