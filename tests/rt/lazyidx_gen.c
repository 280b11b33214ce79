/* SPDX-License-Identifier: MIT */
/*
 * lazyidx_gen.c - writes, with libovni, the trace of tests/rt/lazyidx.py:
 * OVNI_TRACEDIR, one process, two threads run one after the other with
 * the buffer size of WEFT_BUFSIZE (the test sets 1024 bytes):
 *   tid 201  LAZY_SHORT events of 0..16-byte payloads: one buffer, written
 *            at ovni_thread_free (no stream.idx)
 *   tid 202  LAZY_LONG events: many buffers (a stream.idx)
 * Prints nothing; exit 0. With LAZY_PLANT=FILE, a symbolic link to FILE is
 * put where tid 202's stream.idx goes before its events: libovni must
 * refuse to write through it (it aborts with its message).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "ovni.h"
#include "ovni_gen.h"

#define LAZY_SHORT 20
#define LAZY_LONG 2000

static void *body(void *arg)
{
	int tid = (int) (intptr_t) arg;
	ovni_thread_init(tid);
	const char *victim = getenv("LAZY_PLANT");
	if (tid == 202 && victim != NULL) {
		const char *dir = getenv("OVNI_TRACEDIR");
		char p[4096];
		snprintf(p, sizeof p, "%s/loom.vm/proc.%d/thread.202/stream.idx",
				dir != NULL ? dir : "ovni", (int) getpid());
		if (symlink(victim, p) != 0) {
			perror("lazyidx_gen: symlink");
			exit(3);
		}
	}
	if (tid == 201)
		ovni_add_cpu(0, 0);
	uint8_t pl[16];
	gen_payload(pl);
	int n = tid == 201 ? LAZY_SHORT : LAZY_LONG;
	for (int k = 0; k < n; k++)
		gen_emit("OB.", ovni_clock_now(), pl, k % 17 == 1 ? 0 : k % 17);
	ovni_thread_free();
	return NULL;
}

int main(void)
{
	return gen_run_threads("lazyidx_gen", 201, 202, body, NULL);
}
