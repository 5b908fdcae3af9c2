/*
 * host.h: what the host build of the program (curta_chain/inference/host_build.py) changes,
 * included before every source with `-include`.
 *
 * The program's C runs unchanged on the host but for one address and one file. On chain
 * the heap is the runtime's fixed region at 0x300000000 (curta_sdk.h's HEAP_START), which
 * no host process maps: here it is a 32 KiB array of the process, so the host runs one
 * phase at a time (curta_chain/inference/native.py holds a lock around each call).
 * curta_sdk.h's include guard makes this definition the one every later `#include` keeps.
 * src/matvec.c's kernel is SBPF assembly: host_matvec.c's row_sums stands in for it.
 */
#ifndef CURTA_HOST_H
#define CURTA_HOST_H

#include "../curta_sdk.h"

#define HOST_HEAP_SIZE 32768
extern uint8_t curta_host_heap[HOST_HEAP_SIZE];

#undef HEAP_START
#define HEAP_START (curta_host_heap)

/* Whether the host's kernels (host_matvec.c, host_attend.c) run with AVX2: the CPU has it
 * and curta_host_use_avx2 (host_sdk.c) has not turned it off. */
int host_avx2(void);

#endif
