/* SPDX-License-Identifier: MIT */
/*
 * test_rt_signal - emitting from a signal handler that interrupts the
 * same thread. A POSIX timer sends a signal to the emitting thread every
 * 50 us; the handler emits marks (by ovni_ev_emit and ovni_mark_set, one
 * or two per signal, or bursts that overflow the pending ring) while the
 * thread emits its own numbered marks:
 *   - emit: two million events into the default buffer;
 *   - flush: a 256-byte buffer (WEFT_BUFSIZE) and an ovni_flush every 16
 *     events, so that handlers interrupt writes;
 *   - burst: every 8th signal emits 400 events at once, each with a clock
 *     of its own (ovni_clock_now), more than the pending ring holds when
 *     it interrupted an emit or a flush (at most one burst between two
 *     events of the thread: what handlers store between the thread's
 *     clock read and its emit must stay within what an automatic flush
 *     holds back, see docs/runtime.md).
 * Each case lets at most H_SIGNALS_PER_MAIN signals emit between two main
 * events (the others count as skipped): on a loaded machine the thread can
 * sit between its clock read and its emit for milliseconds while its timer
 * signals keep running handlers, and what they store in that window must
 * stay within what an automatic flush holds back (512 bytes with the
 * 256-byte buffer; see docs/runtime.md, Signal handlers, Limits), or the
 * thread's event is rightly stored after theirs with its older clock.
 * Then `weft check` must accept the trace, and the stream must hold every
 * main event once and in order, every handler event at most once (the
 * others counted in weft.lost_events), with clocks that never go back.
 * Each case is a process of its own. Runs under the sanitizers (label mt:
 * ThreadSanitizer too). Debugging: RT_SIG_DEBUG=1 prints the events around
 * a clock going back, RT_SIG_KEEP=DIR copies a failing trace to DIR.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <time.h>

#include "rt_sig.h"

#define PID 5000
#define TID 5001

/* Under ThreadSanitizer every access of the emit path is instrumented and
 * its signals are delivered late: a fortieth of the events (each case took
 * minutes there on a loaded machine, a tenth still 77 s of the 120 s allowed
 * on a quiet one; the races it looks for show within
 * the first thousands of signals). */
#if defined(__SANITIZE_THREAD__)
#define TSAN_SCALE 40
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TSAN_SCALE 40
#endif
#endif
#ifndef TSAN_SCALE
#define TSAN_SCALE 1
#endif

struct sigcase {
	const char *name;
	const char *bufsize; /* WEFT_BUFSIZE, or NULL */
	long nmain;
	int flush_every; /* 0: never */
	int burst_every; /* 0: never */
	/* filled by the child */
	uint64_t nhandler;
	uint64_t nsignals;
	uint64_t nskipped;
};

/* Handler state: touched by the handler and, with the signal blocked or
 * the timer stopped, by the thread it interrupts. */
static volatile sig_atomic_t h_armed;
static volatile uint64_t h_seq, h_signals;
static int h_burst_every;
/* Main events emitted so far, and when the last burst was: one burst at
 * most between two main events (see docs/runtime.md: what handlers emit
 * between a clock read and its emit must stay within what a flush keeps
 * back, 16 KiB here; signals may queue up, under ThreadSanitizer
 * especially). */
static volatile long main_done, burst_at = -1;
/* The signals that emitted since main_done last changed, and those that
 * did not emit for that bound. 4 signals store at most 8 events (192
 * bytes) and the pairs of two automatic flushes (48 bytes): within 512. */
#define H_SIGNALS_PER_MAIN 4
static volatile long h_main_at = -1;
static volatile int h_since_main;
static volatile uint64_t h_skipped;

static void handler_emit_one(void)
{
	uint64_t k = h_seq;
	h_seq = k + 1;
	if (k % 3 == 0) {
		ovni_mark_set(RT_SIG_HANDLER, (int64_t) k);
	} else {
		struct ovni_ev ev;
		rt_sig_mark_ev(&ev, RT_SIG_HANDLER, (int64_t) k, ovni_clock_now());
		ovni_ev_emit(&ev);
	}
}

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	(void) sig;
	(void) si;
	(void) uc;
	if (!h_armed)
		return;
	uint64_t n = h_signals;
	h_signals = n + 1;
	if (h_main_at != main_done) {
		h_main_at = main_done;
		h_since_main = 0;
	}
	if (h_since_main >= H_SIGNALS_PER_MAIN) {
		h_skipped = h_skipped + 1;
		return;
	}
	h_since_main = h_since_main + 1;
	int count = 1 + (n % 4 == 1);
	if (h_burst_every > 0 && n % (uint64_t) h_burst_every == 0 && burst_at != main_done) {
		burst_at = main_done;
		count = 400;
	}
	for (int i = 0; i < count; i++)
		handler_emit_one();
}

static void child(void *p)
{
	struct sigcase *c = p;
	char *dir = rt_test_path("%s/%s", rt_test_dir, c->name);
	setenv("OVNI_TRACEDIR", dir, 1);
	if (c->bufsize != NULL)
		setenv("WEFT_BUFSIZE", c->bufsize, 1);
	h_burst_every = c->burst_every;
	ovni_proc_init(1, "vm", PID);
	ovni_thread_init(TID);
	ovni_add_cpu(0, 0);
	ovni_mark_type(RT_SIG_MAIN, 0, "Main");
	ovni_mark_type(RT_SIG_HANDLER, 0, "Handler");

	int signo = SIGRTMIN;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(signo, &sa, NULL) != 0)
		rt_test_fail("sigaction: %s", strerror(errno));
	struct sigevent sev;
	memset(&sev, 0, sizeof sev);
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = signo;
	sev._sigev_un._tid = (pid_t) gettid();
	timer_t timer;
	if (timer_create(CLOCK_MONOTONIC, &sev, &timer) != 0)
		rt_test_fail("timer_create: %s", strerror(errno));
	struct itimerspec its = {.it_interval = {0, 50000}, .it_value = {0, 50000}};
	h_armed = 1;
	if (timer_settime(timer, 0, &its, NULL) != 0)
		rt_test_fail("timer_settime: %s", strerror(errno));

	for (long i = 0; i < c->nmain; i++) {
		struct ovni_ev ev;
		rt_sig_mark_ev(&ev, RT_SIG_MAIN, i, ovni_clock_now());
		ovni_ev_emit(&ev);
		main_done = i + 1;
		if (c->flush_every > 0 && i % c->flush_every == c->flush_every - 1)
			ovni_flush();
	}

	/* Stop the handlers before the thread ends. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, signo);
	sigprocmask(SIG_BLOCK, &set, NULL);
	h_armed = 0;
	timer_delete(timer);
	c->nhandler = h_seq;
	c->nsignals = h_signals;
	c->nskipped = h_skipped;
	ovni_thread_free();
	ovni_proc_fini();
	free(dir);
}

static void run_case(struct sigcase *c)
{
	assert_true(rt_test_in_proc(child, c, sizeof *c));
	char *trace = rt_test_path("%s/%s", rt_test_dir, c->name);
	char *thread = rt_test_path("%s/loom.vm/proc.%d/thread.%d", trace, PID, TID);
	struct rt_sig_result r;
	int rc = rt_sig_check(thread, (uint64_t) c->nmain, c->nhandler, &r);
	fprintf(stderr,
		"%s: %" PRIu64 " signals (%" PRIu64 " skipped), %" PRIu64 " handler events (%" PRIu64 " stored, %" PRIu64
		" between OF[ and OF], %" PRIu64 " lost), %" PRIu64 " main events, %" PRIu64 " flushes\n",
		c->name, c->nsignals, c->nskipped, c->nhandler, r.nhandler, r.in_flush, r.lost, r.nmain, r.npairs);
	if (rc != 0) {
		if (getenv("RT_SIG_KEEP") != NULL) {
			char *cmd = rt_test_path("rm -rf '%s' && cp -r '%s' '%s'", getenv("RT_SIG_KEEP"), trace,
						 getenv("RT_SIG_KEEP"));
			if (system(cmd) != 0)
				fprintf(stderr, "cannot keep the trace\n");
			free(cmd);
		}
		fprintf(stderr, "%s: %s\n", c->name, r.why);
		fail();
	}
	assert_true(c->nsignals > 0);
	/* weft check must accept the trace (WEFT_BIN: set by ctest). */
	int ok = rt_sig_weft_check(trace);
	if (ok < 0)
		fprintf(stderr, "WEFT_BIN is not usable\n");
	assert_int_equal(ok, 1);
	rt_test_rm_rf(trace);
	free(thread);
	free(trace);
}

static void test_signal_emit(void **st)
{
	(void) st;
	struct sigcase c = {.name = "emit", .nmain = 2000000 / TSAN_SCALE};
	run_case(&c);
}

static void test_signal_flush(void **st)
{
	(void) st;
	struct sigcase c = {.name = "flush", .bufsize = "256", .nmain = 500000 / TSAN_SCALE, .flush_every = 16};
	run_case(&c);
}

static void test_signal_burst(void **st)
{
	(void) st;
	struct sigcase c = {.name = "burst", .nmain = 1000000 / TSAN_SCALE, .burst_every = 8};
	run_case(&c);
}

int main(void)
{
	/* test_rt_signal_tsc: the same with WEFT_CLOCK=tsc (each thread's copy of
	 * the conversion, taken again at the recalibrations, by handlers
	 * too), where libovni takes it. */
	int skip = rt_test_tsc_skip("test_rt_signal");
	if (skip != 0)
		return skip;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_signal_emit),
		cmocka_unit_test(test_signal_flush),
		cmocka_unit_test(test_signal_burst),
	};
	/* RT_SIG_ONLY=flush runs one case (debugging). */
	if (getenv("RT_SIG_ONLY") != NULL)
		cmocka_set_test_filter(getenv("RT_SIG_ONLY"));
	return cmocka_run_group_tests(tests, rt_test_group_setup, rt_test_group_teardown);
}
