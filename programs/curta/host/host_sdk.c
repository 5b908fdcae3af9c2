/*
 * host_sdk.c: the syscalls of curta_sdk.h for the host build, its heap, and whether its
 * kernels use AVX2.
 *
 * The off-chain run calls only the forward pass, the sampler and the token log: memset
 * and memcpy are libc's, the token log is dropped (the caller decodes the tokens it reads
 * from the run). The other syscalls belong to processors the host never calls; they
 * abort, so that a call would not pass unnoticed.
 */
#include <stdlib.h>
#include <string.h>

uint8_t curta_host_heap[HOST_HEAP_SIZE] __attribute__((aligned(64)));

void sol_memcpy_(void *dst, const void *src, uint64_t len) { memcpy(dst, src, len); }

void sol_memset_(void *dst, uint8_t value, uint64_t len) { memset(dst, value, len); }

void sol_log_data(const SolBytes *slices, uint64_t count) {
  (void)slices;
  (void)count;
}

void sol_log_(const char *message, uint64_t len) {
  (void)message;
  (void)len;
  abort();
}

uint64_t sol_sha256(const SolBytes *slices, uint64_t count, uint8_t out[HASH_SIZE]) {
  (void)slices;
  (void)count;
  (void)out;
  abort();
}

void sol_log_compute_units_(void) { abort(); }

void sol_log_64_(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e) {
  (void)a;
  (void)b;
  (void)c;
  (void)d;
  (void)e;
  abort();
}

uint64_t sol_get_clock_sysvar(SolClock *out) {
  (void)out;
  abort();
}

static int avx2 = -1; /* unknown until the first call */

int host_avx2(void) {
  if (avx2 < 0) {
#if defined(__x86_64__)
    __builtin_cpu_init();
    avx2 = __builtin_cpu_supports("avx2") ? 1 : 0;
#else
    avx2 = 0;
#endif
  }
  return avx2;
}

/* The portable kernels (0: host_matvec.c's C row_sums, src/attend.c's own loops) or, where
 * the CPU has AVX2, the AVX2 ones (1): the tests compare the two. Returns whether AVX2
 * kernels now run. */
__attribute__((visibility("default"))) int curta_host_use_avx2(int on) {
  avx2 = -1;
  if (on && host_avx2()) {
    return 1;
  }
  avx2 = 0;
  return 0;
}
