/* SPDX-License-Identifier: MIT */
/*
 * fuzz_rt_signal - libovni (src/rt) with signal handlers that emit while
 * the same thread is emitting or flushing: the runtime-side faults that can
 * be driven in-process. The input is a program of 4-byte steps for one
 * thread (a 128 KiB buffer, so that an automatic flush keeps 16 KiB):
 *   op    what the thread does: emit a 24-byte event (clock read, then
 *         ovni_ev_emit), ovni_mark_set, a jumbo event, ovni_flush, or a
 *         run of plain events;
 *   arg   the jumbo size (12 + arg bytes) or the run length (16 * arg);
 *   at    0: the step runs normally; k > 0: it runs with the x86 trap
 *         flag set and the SIGTRAP handler acts after its k-th
 *         instruction (then the step goes on at full speed);
 *   what  what the handler does then: emit one event, a mark, a jumbo
 *         event, a burst of events (up to 400: more than the pending ring
 *         holds), or ovni_flush.
 * The stream must then hold every event of the thread once and in order,
 * each handler event at most once (the others counted in
 * weft.lost_events), with clocks that never go back (tests/rt/rt_sig.h);
 * anything else aborts. x86-64 only. A handler emits at most 9.6 KiB, less
 * than what a flush keeps (the limit for clock order, docs/runtime.md).
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#include "ovni.h"
#include "rt_sig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PID 9000
#define MAX_STEPS 64

#if defined(__x86_64__)

enum { OP_EMIT, OP_MARK, OP_JUMBO, OP_FLUSH, OP_RUN, NOPS };
enum { DO_EMIT, DO_MARK, DO_JUMBO, DO_BURST, DO_FLUSH, NDOS };

static char trace_dir[256];
static volatile sig_atomic_t stepping;
static volatile long traps, fire_at;
static volatile int fire_what, fire_arg;
static uint64_t h_seq, m_seq;

static void jumbo(int32_t type, int64_t value, size_t extra)
{
	uint8_t buf[12 + 255];
	memset(buf, 0xa5, sizeof buf);
	memcpy(buf, &value, sizeof value);
	memcpy(buf + 8, &type, sizeof type);
	struct ovni_ev ev = {0};
	ovni_ev_set_mcv(&ev, "OMj");
	ovni_ev_set_clock(&ev, ovni_clock_now());
	ovni_ev_jumbo_emit(&ev, buf, (uint32_t) (12 + extra));
}

static void h_one(int what, int arg, int i)
{
	int64_t k = (int64_t) h_seq++;
	switch (what) {
	case DO_MARK:
		ovni_mark_set(RT_SIG_HANDLER, k);
		break;
	case DO_JUMBO:
		jumbo(RT_SIG_HANDLER, k, (size_t) ((arg + i) & 0xff));
		break;
	default: {
		struct ovni_ev ev;
		rt_sig_mark_ev(&ev, RT_SIG_HANDLER, k, ovni_clock_now());
		ovni_ev_emit(&ev);
	}
	}
}

static void on_trap(int sig, siginfo_t *si, void *ucv)
{
	(void) sig;
	(void) si;
	ucontext_t *uc = ucv;
	if (!stepping) {
		uc->uc_mcontext.gregs[REG_EFL] &= ~0x100LL;
		return;
	}
	long k = traps + 1;
	traps = k;
	if (k != fire_at)
		return;
	uc->uc_mcontext.gregs[REG_EFL] &= ~0x100LL;
	switch (fire_what) {
	case DO_FLUSH:
		ovni_flush();
		break;
	case DO_BURST:
		/* 400 events of 24 bytes at most: 9600 bytes */
		for (int i = 0; i < 1 + fire_arg * 400 / 255; i++)
			h_one(i % 3 == 2 ? DO_MARK : DO_EMIT, fire_arg, i);
		break;
	default:
		h_one(fire_what, fire_arg, 0);
	}
}

static inline void tf_on(void)
{
	__asm__ volatile("pushfq\n\torq $0x100, (%%rsp)\n\tpopfq" ::: "memory", "cc");
}

static inline void tf_off(void)
{
	__asm__ volatile("pushfq\n\tandq $~0x100, (%%rsp)\n\tpopfq" ::: "memory", "cc");
}

static void main_emit(void)
{
	struct ovni_ev ev;
	rt_sig_mark_ev(&ev, RT_SIG_MAIN, (int64_t) m_seq++, ovni_clock_now());
	ovni_ev_emit(&ev);
}

struct prog {
	const uint8_t *data;
	size_t nsteps;
	int tid;
};

static void *run(void *p)
{
	struct prog *pr = p;
	h_seq = 0;
	m_seq = 0;
	ovni_thread_init(pr->tid);
	for (size_t i = 0; i < pr->nsteps; i++) {
		const uint8_t *st = pr->data + 4 * i;
		int op = st[0] % NOPS, arg = st[1];
		struct ovni_ev ev;
		rt_sig_mark_ev(&ev, RT_SIG_MAIN, (int64_t) m_seq, 0);
		traps = 0;
		fire_at = st[2];
		fire_what = st[3] % NDOS;
		fire_arg = arg;
		if (fire_at > 0) {
			stepping = 1;
			tf_on();
		}
		switch (op) {
		case OP_EMIT:
			ovni_ev_set_clock(&ev, ovni_clock_now());
			ovni_ev_emit(&ev);
			m_seq++;
			break;
		case OP_MARK:
			ovni_mark_set(RT_SIG_MAIN, (int64_t) m_seq++);
			break;
		case OP_JUMBO:
			jumbo(RT_SIG_MAIN, (int64_t) m_seq++, (size_t) arg);
			break;
		case OP_FLUSH:
			ovni_flush();
			break;
		case OP_RUN:
			for (int j = 0; j < 16 * arg; j++)
				main_emit();
			break;
		}
		if (fire_at > 0) {
			tf_off();
			stepping = 0;
		}
	}
	ovni_thread_free();
	return NULL;
}

static void remove_trace(void)
{
	rt_test_rm_rf(trace_dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int tid = PID + 1;
	if (trace_dir[0] == '\0') {
		const char *tmp = getenv("TMPDIR");
		snprintf(trace_dir, sizeof trace_dir, "%s/weft-fuzz-rt-XXXXXX", tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
		if (mkdtemp(trace_dir) == NULL)
			abort();
		atexit(remove_trace);
		setenv("OVNI_TRACEDIR", trace_dir, 1);
		unsetenv("OVNI_TMPDIR");
		setenv("WEFT_BUFSIZE", "131072", 1);
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_sigaction = on_trap;
		sa.sa_flags = SA_SIGINFO;
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGTRAP, &sa, NULL) != 0)
			abort();
		ovni_proc_init(1, "vm", PID);
	}
	struct prog pr = {data, size / 4, tid++};
	if (pr.nsteps > MAX_STEPS)
		pr.nsteps = MAX_STEPS;
	pthread_t th;
	if (pthread_create(&th, NULL, run, &pr) != 0)
		abort();
	pthread_join(th, NULL);

	char *dir = rt_test_path("%s/loom.vm/proc.%d/thread.%d", trace_dir, PID, pr.tid);
	struct rt_sig_result r;
	if (rt_sig_check(dir, m_seq, h_seq, &r) != 0) {
		fprintf(stderr, "fuzz_rt_signal: %s: %s\n", dir, r.why);
		abort();
	}
	rt_test_rm_rf(dir);
	free(dir);
	return 0;
}

#else

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	(void) data;
	(void) size;
	return 0;
}

#endif
