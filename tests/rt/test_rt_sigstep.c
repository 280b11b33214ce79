/* SPDX-License-Identifier: MIT */
/*
 * test_rt_sigstep - a signal handler that emits at (nearly) every
 * instruction of an emit or a flush. The thread runs one operation with
 * the x86 trap flag set, so that SIGTRAP interrupts it after each
 * instruction (the kernel clears the flag in the handler and restores it
 * on return); the handler counts the traps and, at the k-th, emits one
 * event (ovni_ev_emit or ovni_mark_set), a burst of 4 or of 400 (more
 * than the pending ring holds), or calls ovni_flush, then lets the
 * operation finish at full speed. Each k and each kind is a thread of its
 * own (every k for short operations; for long ones, evenly spread ks,
 * as single steps are slow); its stream must hold every main event once
 * and in order, every handler event at most once (the others counted in
 * weft.lost_events), and clocks that never go back. The operations:
 *   - read the clock and emit an event that fits (the handler may run
 *     between the clock read and the emit, or inside the emit), with a
 *     128 KiB and a 256-byte buffer (WEFT_BUFSIZE);
 *   - the same, with an event that does not fit (automatic flush);
 *   - ovni_mark_set, fitting and not fitting;
 *   - ovni_flush.
 * The runtime-side faults a fuzzer cannot drive by itself (signals in
 * emit and flush), replayed under the sanitizers in CI. Each operation
 * is a process of its own (one WEFT_BUFSIZE each). x86-64 only; skipped
 * under ThreadSanitizer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <ucontext.h>

#include "rt_sig.h"

#define PID 8000
#define BURST 400
/* The buffer: an automatic flush keeps up to 16 KiB of it (an eighth),
 * more than a burst takes (9600 bytes), so that the event the handler
 * interrupted (between its clock read and its emit) still goes in clock
 * order. */
#define BUFSIZE "131072"

#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
#define HAVE_STEP 1
#else
#define HAVE_STEP 0
#endif

#if HAVE_STEP

enum op { OP_EMIT, OP_EMIT_FULL, OP_MARK, OP_MARK_FULL, OP_FLUSH };
enum kind { KIND_EMIT, KIND_MARK, KIND_FLUSH, KIND_BURST, KIND_BURST_SMALL, NKINDS };

static volatile sig_atomic_t stepping;
static volatile long trap_count, fire_at;
static volatile int fire_kind;
static volatile uint64_t h_seq;

static void h_emit(int mark)
{
	uint64_t k = h_seq;
	h_seq = k + 1;
	if (mark) {
		ovni_mark_set(RT_SIG_HANDLER, (int64_t) k);
	} else {
		struct ovni_ev ev;
		rt_sig_mark_ev(&ev, RT_SIG_HANDLER, (int64_t) k, ovni_clock_now());
		ovni_ev_emit(&ev);
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
	long k = trap_count + 1;
	trap_count = k;
	if (k != fire_at)
		return;
	/* The rest of the operation runs at full speed. */
	uc->uc_mcontext.gregs[REG_EFL] &= ~0x100LL;
	switch (fire_kind) {
	case KIND_EMIT:
		h_emit(0);
		break;
	case KIND_MARK:
		h_emit(1);
		break;
	case KIND_FLUSH:
		ovni_flush();
		break;
	case KIND_BURST: {
		/* One clock read: more than the clock log keeps (16) between
		 * the thread's read and its emit would defeat the repair. */
		uint64_t t = ovni_clock_now();
		for (int i = 0; i < BURST; i++) {
			struct ovni_ev ev;
			uint64_t seq = h_seq;
			h_seq = seq + 1;
			rt_sig_mark_ev(&ev, RT_SIG_HANDLER, (int64_t) seq, t + (uint64_t) i);
			ovni_ev_emit(&ev);
		}
		break;
	}
	case KIND_BURST_SMALL:
		for (int i = 0; i < 4; i++)
			h_emit(i & 1);
		break;
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

/* A sweep: one operation, one buffer size, some handler kinds. */
struct sweep {
	enum op op;
	const char *bufsize;
	unsigned kinds; /* bit per enum kind */
	/* filled by the process running it */
	long traps, runs, fired;
	uint64_t stored, lost;
	int failed;
	char why[512];
};

struct run {
	enum op op;
	int fill;
	enum kind kind;
	long fire_at;
	int tid;
	long traps;
	uint64_t nmain, nhandler;
};

static uint64_t main_seq;

static void main_emit(void)
{
	struct ovni_ev ev;
	rt_sig_mark_ev(&ev, RT_SIG_MAIN, (int64_t) main_seq++, ovni_clock_now());
	ovni_ev_emit(&ev);
}

static void run_thread(void *p)
{
	struct run *r = p;
	main_seq = 0;
	ovni_thread_init(r->tid);
	ovni_add_cpu(0, 0);
	ovni_mark_type(RT_SIG_MAIN, 0, "Main");
	ovni_mark_type(RT_SIG_HANDLER, 0, "Handler");
	int full = r->op == OP_EMIT_FULL || r->op == OP_MARK_FULL;
	for (int i = 0; i < (full ? r->fill : 3); i++)
		main_emit();
	struct ovni_ev ev;
	rt_sig_mark_ev(&ev, RT_SIG_MAIN, (int64_t) main_seq, 0);
	h_seq = 0;
	trap_count = 0;
	fire_at = r->fire_at;
	fire_kind = (int) r->kind;
	stepping = 1;
	tf_on();
	switch (r->op) {
	case OP_EMIT:
	case OP_EMIT_FULL:
		ovni_ev_set_clock(&ev, ovni_clock_now());
		ovni_ev_emit(&ev);
		main_seq++;
		break;
	case OP_MARK:
	case OP_MARK_FULL:
		ovni_mark_set(RT_SIG_MAIN, (int64_t) main_seq++);
		break;
	case OP_FLUSH:
		ovni_flush();
		break;
	}
	tf_off();
	stepping = 0;
	r->traps = trap_count;
	main_emit();
	main_emit();
	ovni_flush();
	main_emit();
	ovni_thread_free();
	r->nmain = main_seq;
	r->nhandler = h_seq;
}

/* Single steps are slow (a trap each, some microseconds): about this
 * many in all per sweep. The sanitizers' code takes more steps. */
#if defined(__SANITIZE_ADDRESS__)
#define STEP_BUDGET 120000L
#else
#define STEP_BUDGET 40000L
#endif

/* The process of a sweep: a fresh ovni process with its buffer size; a
 * run (a thread) per trap k (every one if the operation is short, else
 * spread evenly over it) and per kind. */
static void sweep_proc(void *p)
{
	struct sweep *sw = p;
	char *trace = rt_test_path("%s/step-%d-%s", rt_test_dir, (int) sw->op, sw->bufsize);
	setenv("OVNI_TRACEDIR", trace, 1);
	setenv("WEFT_BUFSIZE", sw->bufsize, 1);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_trap;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGTRAP, &sa, NULL) != 0)
		rt_test_fail("sigaction: %s", strerror(errno));
	ovni_proc_init(1, "vm", PID);
	/* Events of 24 bytes: fill of them leave less than 24 bytes free. */
	int fill = atoi(sw->bufsize) / 24;
	int tid = PID + 1;

	/* Twice: the first run also resolves the lazily bound functions
	 * (thousands of instructions that the other runs do not have). */
	struct run dry = {.op = sw->op, .fill = fill, .fire_at = -1, .tid = tid++};
	rt_test_in_thread(run_thread, &dry);
	dry.tid = tid++;
	rt_test_in_thread(run_thread, &dry);
	sw->traps = dry.traps;
	int nkinds = 0;
	for (int kind = 0; kind < NKINDS; kind++)
		nkinds += (int) ((sw->kinds >> kind) & 1u);
	/* Every kind at every trap if that fits in the budget; else runs at
	 * traps 1, 1 + stride, ... (about traps / stride runs, each stepping
	 * half the traps on average), one kind each in turn. */
	double all = (double) dry.traps * (double) dry.traps * nkinds / 2.0;
	long stride = all <= (double) STEP_BUDGET ? 1
						  : 1 + (long) ((double) dry.traps * (double) dry.traps / 2.0 / STEP_BUDGET);
	for (long k = 1; k <= dry.traps + 3 && !sw->failed; k += stride) {
		int pick = (int) ((k / stride) % nkinds), nth = 0;
		for (int kind = 0; kind < NKINDS && !sw->failed; kind++) {
			if (!((sw->kinds >> kind) & 1u))
				continue;
			if (stride > 1 && nth++ != pick)
				continue;
			/* vary the phase so that other offsets get their turn */
			long at = k + (stride > 1 ? (k / stride * 7) % stride : 0);
			struct run r = {.op = sw->op, .fill = fill, .kind = (enum kind) kind, .fire_at = at, .tid = tid++};
			rt_test_in_thread(run_thread, &r);
			sw->runs++;
			char *thread = rt_test_path("%s/loom.vm/proc.%d/thread.%d", trace, PID, r.tid);
			struct rt_sig_result res;
			if (rt_sig_check(thread, r.nmain, r.nhandler, &res) != 0) {
				snprintf(sw->why, sizeof sw->why, "handler kind %d at trap %ld of %ld: %s", kind, at,
					 dry.traps, res.why);
				sw->failed = 1;
			}
			sw->lost += res.lost;
			sw->stored += res.nhandler;
			if (r.traps >= at)
				sw->fired++;
			rt_test_rm_rf(thread);
			free(thread);
		}
	}
	ovni_proc_fini();
	rt_test_rm_rf(trace);
	free(trace);
}

static void step(enum op op, const char *bufsize, unsigned kinds)
{
	struct sweep sw = {.op = op, .bufsize = bufsize, .kinds = kinds};
	assert_true(rt_test_in_proc(sweep_proc, &sw, sizeof sw));
	fprintf(stderr,
		"op %d, %s-byte buffer: %ld traps, %ld runs, the handler fired in %ld: %" PRIu64
		" handler events stored, %" PRIu64 " lost\n",
		(int) op, bufsize, sw.traps, sw.runs, sw.fired, sw.stored, sw.lost);
	if (sw.failed) {
		fprintf(stderr, "op %d, %s-byte buffer: %s\n", (int) op, bufsize, sw.why);
		fail();
	}
	assert_true(sw.fired >= 10);
}

#define KINDS_ALL ((1u << NKINDS) - 1u)
/* No 400-event burst with a small buffer: it cannot keep back enough for
 * the interrupted event to go before the burst (docs/runtime.md). */
#define KINDS_SMALL (KINDS_ALL & ~(1u << KIND_BURST))

static void test_step_emit(void **st)
{
	(void) st;
	step(OP_EMIT, BUFSIZE, KINDS_ALL);
}

static void test_step_mark(void **st)
{
	(void) st;
	step(OP_MARK, BUFSIZE, KINDS_ALL);
}

static void test_step_emit_small(void **st)
{
	(void) st;
	step(OP_EMIT, "256", KINDS_SMALL);
}

static void test_step_emit_full(void **st)
{
	(void) st;
	step(OP_EMIT_FULL, "256", KINDS_SMALL);
}

static void test_step_mark_full(void **st)
{
	(void) st;
	step(OP_MARK_FULL, "256", KINDS_SMALL);
}

static void test_step_flush(void **st)
{
	(void) st;
	step(OP_FLUSH, "256", KINDS_SMALL);
}

int main(void)
{
	/* test_rt_sigstep_tsc: the same with WEFT_CLOCK=tsc (each thread's copy of
	 * the conversion, taken again at the recalibrations, by handlers
	 * too), where libovni takes it. */
	int skip = rt_test_tsc_skip("test_rt_sigstep");
	if (skip != 0)
		return skip;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_step_emit),
		cmocka_unit_test(test_step_mark),
		cmocka_unit_test(test_step_emit_small),
		cmocka_unit_test(test_step_emit_full),
		cmocka_unit_test(test_step_mark_full),
		cmocka_unit_test(test_step_flush),
	};
	return cmocka_run_group_tests(tests, rt_test_group_setup, rt_test_group_teardown);
}

#else

int main(void)
{
	fprintf(stderr, "test_rt_sigstep: needs x86-64 (the trap flag), not under ThreadSanitizer: skipped\n");
	return 77;
}

#endif
