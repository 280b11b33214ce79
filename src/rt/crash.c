/* SPDX-License-Identifier: MIT */
/*
 * crash.c - WEFT_CRASH=flush: writing every live thread's buffered events
 * when the program dies by a fatal signal or exits without ovni_proc_fini
 * (docs/runtime.md, "Crashes").
 *
 * Off unless WEFT_CRASH=flush (a library must not take over a program's
 * signals unasked). The first ovni_proc_init that sees it installs, once,
 * handlers for SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT (sigaction,
 * SA_SIGINFO | SA_ONSTACK, every signal blocked while one runs; the
 * previous actions are saved) and an atexit handler.
 *
 * The signal handler runs on the crashing thread while the others keep
 * running. It freezes the buffers (rt_crash_frozen), then walks the thread
 * list (under its mutex if pthread_mutex_trylock gets it within a bounded
 * number of tries, else without it) and for each thread:
 *   - waits (bounded) until the owner is out of its gate: the code that
 *     moves or writes the buffer's bytes (flushes, put-backs, pending
 *     events, stream.json rewrites) runs between rt_crash_gate_enter and
 *     leave; an owner reaching the next enter stops there for good. The
 *     emit hot path has no gate: it only copies an event past the cursor
 *     and then moves the cursor, so the bytes before any cursor value
 *     read are whole events (x86-64 makes the stores visible in order);
 *   - writes the buffer up to that cursor with write(2), then its index
 *     entry, then stream.json from the document pre-rendered at the last
 *     metadata write with weft.cut as a placeholder, filled by hand:
 *     {"by": "signal", "signal": N, "clock": C} (a temporary file, then
 *     rename(2)). ovni.finished stays absent.
 * Then it puts the previous action back and raises the signal again if
 * it was sent (kill, raise, abort); a fault (si_code > 0) happens again
 * when the handler returns. A program's handler that emits on the crashing
 * thread afterwards (its own handler of that signal, or another signal's
 * taken before the fault happens again) must not stop at a gate, or the
 * process would never die: there the gates of the emit calls tell them to
 * drop the event (rt_crash_gate_try). Only async-signal-safe calls, no allocation,
 * besides pthread_mutex_trylock/unlock and sched_yield.
 *
 * The atexit handler does the same with {"by": "exit", "clock": C}
 * unless ovni_proc_fini was called; on the exiting thread it uses the
 * normal flush (its later emits keep working), the other threads stop at
 * their next gate.
 *
 * A thread that ends without ovni_thread_free leaves its cursor behind
 * (a pthread key destructor), so that its buffer is still written.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "obs_format.h"
#include "rt_internal.h"

int rt_crash_enabled;
uint32_t rt_crash_frozen; /* 0, FROZEN_SIGNAL or FROZEN_EXIT */

#define FROZEN_SIGNAL 1u
#define FROZEN_EXIT 2u
/* How long (CLOCK_MONOTONIC) a crash handler yields waiting for the
 * thread mutex, or for one owner to leave its gate, before going on
 * without. A time, not a number of yields: on an idle CPU 20000 yields
 * took about 2 ms, less than one flush's write(2) under load, and the
 * stream of a thread caught in it was left without weft.cut. */
#define WAIT_NS 2000000000ull

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
#define NFATAL (sizeof fatal_signals / sizeof fatal_signals[0])
static struct sigaction old_actions[NFATAL];
static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;
static int fini_called;
/* Set once the buffers were written (by a crash or at exit). */
static uint32_t written;
/* The thread writing the buffers (it must not wait for itself). */
RT_TLS int walking;

int rt_crash_hold(struct rt_thread *th, int may_drop)
{
	/* At exit, the exiting thread goes on (it wrote its own buffer with
	 * the normal flush, and may emit again from later atexit handlers). */
	if (walking && __atomic_load_n(&rt_crash_frozen, __ATOMIC_SEQ_CST) == FROZEN_EXIT)
		return 1;
	uint32_t left = __atomic_sub_fetch(&th->moving, 1u, __ATOMIC_SEQ_CST);
	/* A handler's emit is dropped, never held: on the thread that wrote
	 * the buffers after a fatal signal, the one that dies (the program's
	 * handler of that signal, or of another signal taken before the fault
	 * happens again); and on a thread whose own gate code it interrupted
	 * (a stream.json rewrite), which must get out of that gate for its
	 * stream to be written (it stops at its next gate). */
	if (may_drop && (walking || left != 0))
		return 0;
	for (;;)
		pause();
}

/* ---- async-signal-safe helpers ---- */

static void raw_write(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		len -= (size_t) w;
	}
}

/* Decimal text of v into out (at least 21 bytes); returns its length. */
static size_t fmt_u64(char *out, uint64_t v)
{
	char tmp[24];
	size_t n = 0;
	do {
		tmp[n++] = (char) ('0' + (int) (v % 10u));
		v /= 10u;
	} while (v != 0);
	for (size_t i = 0; i < n; i++)
		out[i] = tmp[n - 1u - i];
	return n;
}

static size_t append(char *out, size_t at, const char *s)
{
	size_t n = strlen(s);
	memcpy(out + at, s, n);
	return at + n;
}

static uint64_t clock_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

/* 1 while the wait that began at `start` may go on. */
static int may_wait(uint64_t start)
{
	return clock_now() - start < WAIT_NS;
}

/* stream.json: the pre-rendered document with weft.cut filled in. */
static void write_meta(struct rt_thread *th, int sig, uint64_t clock, const struct rt_ring_run *last)
{
	const char *text = th->crash_text;
	if (text == NULL || th->crash_tmp == NULL)
		return;
	char cut[96];
	size_t n = 0;
	if (sig != 0) {
		n = append(cut, n, "{\"" WEFT_KEY_CUT_BY "\": \"" WEFT_CUT_BY_SIGNAL
				"\", \"" WEFT_KEY_CUT_SIGNAL "\": ");
		n += fmt_u64(cut + n, (uint64_t) sig);
	} else {
		n = append(cut, n, "{\"" WEFT_KEY_CUT_BY "\": \"" WEFT_CUT_BY_EXIT "\"");
	}
	n = append(cut, n, ", \"" WEFT_KEY_CUT_CLOCK "\": ");
	n += fmt_u64(cut + n, clock);
	n = append(cut, n, "}");
	int fd = open(th->crash_tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0)
		return;
	/* The text around the placeholders, in their order: weft.cut, and
	 * weft.ring in ring mode (its value up to date, with the losses of
	 * the write just done: last). */
	size_t at = 0;
	int ring_first = th->ring != NULL && th->crash_ring < th->crash_cut;
	for (int k = 0; k < 2; k++) {
		int is_ring = k == 0 ? ring_first : !ring_first;
		if (is_ring && th->ring == NULL)
			continue;
		size_t ph = is_ring ? th->crash_ring : th->crash_cut;
		raw_write(fd, text + at, ph - at);
		if (is_ring) {
			rt_ring_render(fd, th->ring, last);
			at = ph + RT_RING_PLACEHOLDER_LEN;
		} else {
			raw_write(fd, cut, n);
			at = ph + RT_CUT_PLACEHOLDER_LEN;
		}
	}
	const char *rest = text + at;
	raw_write(fd, rest, strlen(rest));
	close(fd);
	rename(th->crash_tmp, th->json_path);
}

/* One thread's stream. self: the thread of the caller (NULL if none). */
static void cut_stream(struct rt_thread *th, const struct rt_thread *self, int sig, uint64_t clock)
{
	if (th != self) {
		uint64_t start = clock_now();
		while (__atomic_load_n(&th->moving, __ATOMIC_SEQ_CST) != 0 && may_wait(start))
			sched_yield();
	}
	/* Still in its gate: writing on its own (documented), or the caller
	 * crashed inside it. ovni_thread_free writes its own stream. */
	if (__atomic_load_n(&th->moving, __ATOMIC_SEQ_CST) != 0 || __atomic_load_n(&th->freeing, __ATOMIC_SEQ_CST))
		return;
	/* Ring mode: the losses of this write, not in the thread's state (the
	 * owner's; it is left alone). */
	struct rt_ring_run last = {0, 0, 0, 0, 0};
	if (th == self && sig == 0) {
		/* At exit, on the exiting thread: the normal flush. */
		rt_emit_write_out("exit", th);
	} else {
		struct rt_hot *hot = __atomic_load_n(&th->hot, __ATOMIC_SEQ_CST);
		uint8_t *cur = hot != NULL ? __atomic_load_n(&hot->cur, __ATOMIC_RELAXED) : th->exit_cur;
		if (cur != NULL && cur > th->buf && th->fd >= 0) {
			/* Ring mode: what fits in the ring, as a write of it. */
			const uint8_t *from = th->buf;
			if (th->ring != NULL) {
				last = th->ring->open;
				from = rt_ring_trim(th->ring, th->buf, cur, 0, &last);
				last.off = th->obs_off;
			}
			size_t len = (size_t) (cur - from);
			if (th->output_off) {
				__atomic_fetch_add(&th->unwritten, (uint64_t) len, __ATOMIC_RELAXED);
			} else {
				raw_write(th->fd, from, len);
				rt_index_note_raw(th, from, len);
			}
		} else if (th->ring != NULL) {
			last = th->ring->open;
			last.off = th->obs_off;
		}
	}
	write_meta(th, sig, clock, &last);
}

static void cut_all(int sig)
{
	uint64_t clock = rt_clock_event_now(); /* the events' clock (WEFT_CLOCK) */
	walking = 1;
	int locked = 0;
	uint64_t start = clock_now();
	while (!(locked = rt_threads_trylock()) && may_wait(start))
		sched_yield();
	struct rt_thread *self = rt_thread_peek();
	for (struct rt_thread *th = rt_threads_first(); th != NULL; th = __atomic_load_n(&th->next, __ATOMIC_ACQUIRE))
		cut_stream(th, self, sig, clock);
	if (locked)
		rt_threads_unlock();
	__atomic_store_n(&written, 1u, __ATOMIC_SEQ_CST);
}

static size_t signal_index(int sig)
{
	for (size_t i = 0; i < NFATAL; i++)
		if (fatal_signals[i] == sig)
			return i;
	return 0;
}

static void crash_handler(int sig, siginfo_t *si, void *uc)
{
	(void) uc;
	int saved = errno;
	uint32_t zero = 0;
	if (__atomic_compare_exchange_n(&rt_crash_frozen, &zero, FROZEN_SIGNAL, 0, __ATOMIC_SEQ_CST,
					__ATOMIC_SEQ_CST)) {
		cut_all(sig);
	} else if (!walking) {
		/* Another thread is writing the buffers: the process dies when
		 * it is done (or, at exit, this thread goes on dying). */
		while (__atomic_load_n(&written, __ATOMIC_SEQ_CST) == 0)
			sched_yield();
	}
	sigaction(sig, &old_actions[signal_index(sig)], NULL);
	/* Sent signals are raised again (pending until this returns, the
	 * signal being blocked here); a fault happens again on return. */
	if (si == NULL || si->si_code <= 0)
		raise(sig);
	errno = saved;
}

static void crash_atexit(void)
{
	if (__atomic_load_n(&fini_called, __ATOMIC_SEQ_CST))
		return;
	uint32_t zero = 0;
	if (!__atomic_compare_exchange_n(&rt_crash_frozen, &zero, FROZEN_EXIT, 0, __ATOMIC_SEQ_CST,
					 __ATOMIC_SEQ_CST))
		return;
	cut_all(0);
}

/* A thread ends without ovni_thread_free: its TLS goes away, its cursor
 * stays. */
static void thread_exit_hook(void *p)
{
	struct rt_thread *th = p;
	rt_crash_gate_enter(th);
	th->exit_cur = rt_hot.cur;
	__atomic_store_n(&th->hot, NULL, __ATOMIC_SEQ_CST);
	rt_crash_gate_leave(th);
}

static void install(void)
{
	static const char func[] = "ovni_proc_init";
	if (pthread_key_create(&exit_key, thread_exit_hook) != 0)
		rt_die(func, "WEFT_CRASH=flush: cannot create the thread-exit key");
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = crash_handler;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	/* Every signal blocked while it runs: a program's handler that emits
	 * (a timer's) must not interrupt the writing of the buffers. */
	sigfillset(&sa.sa_mask);
	for (size_t i = 0; i < NFATAL; i++)
		if (sigaction(fatal_signals[i], &sa, &old_actions[i]) != 0)
			rt_die_errno(func, errno, "WEFT_CRASH=flush: cannot install the handler of signal %d",
				     fatal_signals[i]);
	if (atexit(crash_atexit) != 0)
		rt_die(func, "WEFT_CRASH=flush: cannot register the exit handler");
	rt_crash_enabled = 1;
}

void rt_crash_setup(int on)
{
	if (!on)
		return;
	__atomic_store_n(&fini_called, 0, __ATOMIC_SEQ_CST);
	pthread_once(&install_once, install);
}

void rt_crash_thread_init(struct rt_thread *th)
{
	th->hot = &rt_hot;
	th->crash_tmp = rt_strfmt("ovni_thread_init", "%s.crash.tmp", th->json_path);
	if (pthread_setspecific(exit_key, th) != 0)
		rt_die("ovni_thread_init", "WEFT_CRASH=flush: cannot arm the thread-exit hook");
}

void rt_crash_thread_free(struct rt_thread *th)
{
	(void) th;
	pthread_setspecific(exit_key, NULL);
}

void rt_crash_proc_fini(void)
{
	__atomic_store_n(&fini_called, 1, __ATOMIC_SEQ_CST);
}
