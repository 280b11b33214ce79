/* SPDX-License-Identifier: MIT */
/*
 * seekgen.c - writes, with libovni, the trace the seek tests read
 * (tests/seek/seek.py): OVNI_TRACEDIR (default ./ovni), one process, four
 * threads run one after the other, each its own stream, with the buffer
 * size of WEFT_BUFSIZE (the test sets a small one: many flushes):
 *   tid 101  real clocks, payloads of 0..16 bytes, a jumbo event in the
 *            middle, some ovni_flush calls
 *   tid 102  first, before its first flush, events with clocks copied from
 *            tid 101's (equal clocks across streams, all over 101's range);
 *            then real clocks
 *   tid 103  an unordered region (OU[ ... OU]) whose events go back
 *   tid 104  real clocks only, after every other stream (a gap before it)
 * Prints nothing; exit 0.
 */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "ovni.h"
#include "ovni_gen.h"

#define N101 3000

static uint64_t clocks101[N101];

static void *body(void *arg)
{
	int tid = (int) (intptr_t) arg;
	ovni_thread_init(tid);
	if (tid == 101)
		ovni_add_cpu(0, 0);
	uint8_t pl[16];
	gen_payload(pl);
	if (tid == 101) {
		for (int k = 0; k < N101; k++) {
			uint64_t c = ovni_clock_now();
			clocks101[k] = c;
			if (k == N101 / 2) {
				struct ovni_ev ev;
				memset(&ev, 0, sizeof ev);
				ovni_ev_set_mcv(&ev, "OJj");
				ovni_ev_set_clock(&ev, c);
				uint8_t big[700];
				for (size_t i = 0; i < sizeof big; i++)
					big[i] = (uint8_t) i;
				ovni_ev_jumbo_emit(&ev, big, sizeof big);
				continue;
			}
			int n = k % 17;
			gen_emit("OB.", c, pl, n == 1 ? 0 : n);
			if (k % 700 == 699)
				ovni_flush();
		}
	} else if (tid == 102) {
		/* 40 events fit in a first buffer of 1024 bytes */
		for (int k = 0; k < 40; k++)
			gen_emit("OB.", clocks101[k * (N101 / 40) + 7], NULL, 0);
		for (int k = 0; k < 1000; k++)
			gen_emit("OB.", ovni_clock_now(), pl, 4);
	} else if (tid == 103) {
		for (int r = 0; r < 20; r++) {
			for (int k = 0; k < 30; k++)
				gen_emit("OB.", ovni_clock_now(), NULL, 0);
			uint64_t c = ovni_clock_now();
			gen_emit("OU[", c, NULL, 0);
			for (int k = 0; k < 10; k++)
				gen_emit("OB.", c - 100 + (uint64_t) k, pl, 8);
			gen_emit("OU]", ovni_clock_now(), NULL, 0);
		}
	} else {
		for (int k = 0; k < 1500; k++)
			gen_emit("OB.", ovni_clock_now(), pl, 2);
	}
	ovni_thread_free();
	return NULL;
}

static void after(int tid)
{
	if (tid == 103)
		usleep(2000); /* a gap before tid 104 */
}

int main(void)
{
	return gen_run_threads("seekgen", 101, 104, body, after);
}
