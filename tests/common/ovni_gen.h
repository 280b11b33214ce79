/* SPDX-License-Identifier: MIT */
/*
 * ovni_gen.h - what the programs that write a test's trace with libovni
 * share (tests/seek/seekgen.c, tests/rt/lazyidx_gen.c): one event emitted
 * with its clock and payload, the payload bytes 1..16, and a process on
 * loom "vm" whose threads run one after another.
 */
#ifndef WEFT_TESTS_OVNI_GEN_H
#define WEFT_TESTS_OVNI_GEN_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ovni.h"

/* Emits the event mcv at clock with payload[0..n) (none when n is 0). */
static inline void gen_emit(const char *mcv, uint64_t clock, const uint8_t *payload, int n)
{
	struct ovni_ev ev;
	memset(&ev, 0, sizeof ev);
	ovni_ev_set_mcv(&ev, mcv);
	ovni_ev_set_clock(&ev, clock);
	if (n > 0)
		ovni_payload_add(&ev, payload, n);
	ovni_ev_emit(&ev);
}

/* The payload the generators take their first bytes of: 1, 2, ..., 16. */
static inline void gen_payload(uint8_t pl[16])
{
	for (int i = 0; i < 16; i++)
		pl[i] = (uint8_t) (i + 1);
}

/* Process 1 of loom "vm" (pid the program's): body runs in a thread of
 * its own for each tid from first to last, one after the other (its
 * argument the tid, as an intptr_t), then after(tid) when after is not
 * NULL. Returns main's exit status: 0, or 1 with "prog: cannot run a
 * thread" on stderr. */
static inline int gen_run_threads(const char *prog, int first, int last,
		void *(*body)(void *), void (*after)(int tid))
{
	char host[64] = "vm";
	ovni_version_check();
	ovni_proc_init(1, host, getpid());
	for (int tid = first; tid <= last; tid++) {
		pthread_t th;
		if (pthread_create(&th, NULL, body, (void *) (intptr_t) tid) != 0
				|| pthread_join(th, NULL) != 0) {
			fprintf(stderr, "%s: cannot run a thread\n", prog);
			return 1;
		}
		if (after != NULL)
			after(tid);
	}
	ovni_proc_fini();
	return 0;
}

#endif
