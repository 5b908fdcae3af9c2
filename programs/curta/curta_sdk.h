/*
 * curta_sdk.h: the little of a Solana SDK an SBPF program built by upstream clang needs.
 *
 * Integer types, the syscalls this program calls (by name: bound by the v0 loader, hashed by
 * our linker for v3), the serialized input of the aligned loaders (BPFLoader2 / Upgradeable),
 * and a few byte helpers.
 * clang's BPF target allows 512 stack bytes per function, so the parsed input lives in the
 * heap region the runtime hands every program.
 */
#ifndef CURTA_SDK_H
#define CURTA_SDK_H

typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long uint64_t;
typedef int int32_t;
typedef long int64_t;
typedef _Bool bool;
#define true 1
#define false 0

#define PUBKEY_SIZE 32
#define HASH_SIZE 32

/* Virtual addresses the runtime maps (solana-sbpf memory map). */
#define HEAP_START ((uint8_t *)0x300000000UL) /* 32 KiB, zeroed */

/* Runtime facts of the serialized input (agave program-runtime serialization.rs). */
#define NON_DUP_MARKER 0xFF
#define MAX_PERMITTED_DATA_INCREASE 10240
#define BPF_ALIGN_OF_U128 8

/* Syscalls (agave's registry, C ABI). */
typedef struct {
  const uint8_t *addr;
  uint64_t len;
} SolBytes;

extern void sol_log_(const char *message, uint64_t len);
extern uint64_t sol_sha256(const SolBytes *slices, uint64_t count, uint8_t out[HASH_SIZE]);
extern void sol_memcpy_(void *dst, const void *src, uint64_t len);
extern void sol_memset_(void *dst, uint8_t value, uint64_t len);
extern void sol_log_data(const SolBytes *slices, uint64_t count);
extern void sol_log_compute_units_(void);
extern void sol_log_64_(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e);

/* The Clock sysvar as sol_get_clock_sysvar writes it (40 bytes; the timestamps are i64, read
 * here as u64 since only the slot is used). The syscall returns 0 or aborts the program. */
typedef struct {
  uint64_t slot;
  uint64_t epoch_start_timestamp;
  uint64_t epoch;
  uint64_t leader_schedule_epoch;
  uint64_t unix_timestamp;
} SolClock;

extern uint64_t sol_get_clock_sysvar(SolClock *out);

/* Log a string literal: the length is taken at compile time, without its NUL. */
#define sol_log(literal) sol_log_((literal), sizeof(literal) - 1)

/*
 * One real account record of the input buffer, as the aligned serializer writes it:
 * the record starts 8-aligned and every field sits at its natural offset, so a pointer
 * into the buffer can be read through this struct directly.
 */
typedef struct {
  uint8_t dup_marker; /* NON_DUP_MARKER for a real record */
  uint8_t is_signer;
  uint8_t is_writable;
  uint8_t executable;
  uint8_t padding[4];
  uint8_t key[PUBKEY_SIZE];
  uint8_t owner[PUBKEY_SIZE];
  uint64_t lamports;
  uint64_t data_len;
  uint8_t data[]; /* data_len bytes, then realloc space, then rent_epoch */
} SolAccount;

/* As many accounts as a transaction could hand the program; the rest are parsed past. */
#define MAX_INPUT_ACCOUNTS 64

typedef struct {
  uint64_t account_count;                  /* accounts in the input, all of them */
  SolAccount *accounts[MAX_INPUT_ACCOUNTS]; /* duplicates point at their first record */
  bool is_duplicate[MAX_INPUT_ACCOUNTS];   /* this position repeats an earlier one */
  const uint8_t *data;
  uint64_t data_len;
  const uint8_t *program_id;
} SolInput;

_Static_assert(sizeof(SolInput) <= 32 * 1024, "the parsed input fits the default heap");

/*
 * Parse the serialized input at `input` into `out`. Accounts past MAX_INPUT_ACCOUNTS are
 * walked over (instruction data follows them) and only counted. Returns false when the
 * count is beyond what the parser can hold.
 */
static inline bool sol_deserialize(uint8_t *input, SolInput *out) {
  /* The input buffer is 8-aligned and starts with the u64 account count. */
  uint64_t count = *(uint64_t *)input;
  uint8_t *cursor = input + sizeof(uint64_t);
  out->account_count = count;
  for (uint64_t i = 0; i < count; i++) {
    uint8_t marker = cursor[0];
    if (marker != NON_DUP_MARKER) {
      /* A duplicate is 8 bytes: its marker is the index of the earlier account it repeats. */
      if (i < MAX_INPUT_ACCOUNTS) {
        out->accounts[i] = out->accounts[marker];
        out->is_duplicate[i] = true;
      }
      cursor += 8;
      continue;
    }
    /* Records are 8-aligned (the serializer pads), so this cast reads aligned fields. */
    SolAccount *account = (SolAccount *)cursor;
    if (i < MAX_INPUT_ACCOUNTS) {
      out->accounts[i] = account;
      out->is_duplicate[i] = false;
    }
    uint64_t data_span = account->data_len + MAX_PERMITTED_DATA_INCREASE;
    data_span = (data_span + BPF_ALIGN_OF_U128 - 1) & ~(uint64_t)(BPF_ALIGN_OF_U128 - 1);
    cursor += sizeof(SolAccount) + data_span + sizeof(uint64_t) /* rent_epoch */;
  }
  out->data_len = *(uint64_t *)cursor; /* past 8-aligned records: aligned */
  out->data = cursor + sizeof(uint64_t);
  out->program_id = out->data + out->data_len;
  return count <= MAX_INPUT_ACCOUNTS;
}

/* Byte helpers: clang's BPF target has no libc, and these keep the loops out of the checks. */
static inline bool bytes_equal(const uint8_t *a, const uint8_t *b, uint64_t len) {
  for (uint64_t i = 0; i < len; i++) {
    if (a[i] != b[i]) {
      return false;
    }
  }
  return true;
}

/* True when `words` 8-byte words at `a` are all zero: a word at a time is 8x cheaper. */
static inline bool words_zero(const uint8_t *a, uint64_t words) {
  const uint64_t *w = (const uint64_t *)a;
  for (uint64_t i = 0; i < words; i++) {
    if (w[i] != 0) {
      return false;
    }
  }
  return true;
}

static inline bool pubkey_equal(const uint8_t *a, const uint8_t *b) {
  /* Compare four words; the VM reads unaligned words too (the program id is unaligned). */
  const uint64_t *x = (const uint64_t *)a;
  const uint64_t *y = (const uint64_t *)b;
  return x[0] == y[0] && x[1] == y[1] && x[2] == y[2] && x[3] == y[3];
}

static inline void pubkey_copy(uint8_t *dst, const uint8_t *src) {
  /* Word copies, as in pubkey_equal. */
  uint64_t *d = (uint64_t *)dst;
  const uint64_t *s = (const uint64_t *)src;
  d[0] = s[0];
  d[1] = s[1];
  d[2] = s[2];
  d[3] = s[3];
}

static inline uint32_t read_u32(const uint8_t *p) {
  /* Instruction data is not aligned: assemble bytes. */
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t read_u64(const uint8_t *p) {
  return (uint64_t)read_u32(p) | (uint64_t)read_u32(p + 4) << 32;
}

#endif
