/* SPDX-License-Identifier: MIT */
/*
 * test_rt_crash - WEFT_CRASH=flush: a program that dies by a fatal signal
 * in the middle of a run, or exits without ovni_proc_fini, still leaves
 * every event it emitted (docs/runtime.md, "Crashes").
 *
 * Each case is a forked child with five traced threads and a 4 KiB buffer
 * (several automatic flushes happen before the crash, and part of every
 * stream is still buffered): the main thread and two idle workers emit a
 * known number of numbered marks and wait; a runner keeps emitting (up to
 * a bound) while a crasher emits its own and then dies: a NULL write
 * (SIGSEGV), a read past the end of a file mapping (SIGBUS), a trap
 * instruction (SIGILL), an integer division by zero (SIGFPE, raise()
 * where the CPU does not trap), abort() (SIGABRT), kill() of the process
 * (SIGSEGV) and raise() (SIGILL), and a NULL write in a program with a
 * SIGSEGV handler of its own (which must run after libovni's). The parent checks the exit status
 * (WIFSIGNALED, WTERMSIG), that every stream holds exactly the marks
 * emitted (0, 1, 2, ... in order, the last one present; the runner at
 * least as many as it had emitted when the crasher crashed), weft.cut in
 * each stream.json and no ovni.finished, and that `weft check` names the
 * five cut streams. Without WEFT_CRASH the buffered events are lost (as
 * today). A program that exits without ovni_proc_fini (one thread ended
 * without ovni_thread_free) leaves every event, and `weft check` names the
 * two streams that never called ovni_thread_free, as with the reference.
 * A bad WEFT_CRASH value stops ovni_proc_init with a message.
 *
 * Not under the sanitizers (label nosan): they handle SIGSEGV and SIGBUS
 * themselves and end the process with an exit status instead.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <jansson.h>

#include "rt_sig.h"

#define PID 7000
#define TID_MAIN 7001
#define NTHREADS 5 /* main, idle 1, idle 2, runner, crasher */
#define T_MAIN 0
#define T_RUNNER 3
#define T_CRASHER 4
#define RUNNER_MAX 200000
#define RUNNER_MIN 3000

static const long planned[NTHREADS] = {1234, 1000, 1537, 0, 2111};

enum how {
	SEGV_NULL, BUS_MAP, ILL_TRAP, FPE_DIV, ABRT_ABORT, SEGV_KILL, ILL_RAISE, EXIT_NO_FINI, SEGV_PREV,
	/* A 50 us timer signal whose handler (the program's) emits on the
	 * crasher, which then aborts or writes to NULL. */
	ABRT_TIMER, SEGV_TIMER,
	/* The program's own handler of the fatal signal, installed before
	 * ovni_proc_init, emits marks (after libovni's has run). */
	ABRT_PREV_EMIT, SEGV_PREV_EMIT,
	/* The timer signals idle thread 1, which rewrites its stream.json
	 * (ovni_attr_flush) over and over; the crasher aborts. */
	ABRT_ATTR_TIMER,
};

/* How long a child may take to die (it normally takes milliseconds). */
#define CHILD_LIMIT_S 10

/* Shared with the child (mmap). */
struct shared {
	long emitted[NTHREADS];
	long runner_at_crash;
	int ready; /* idle threads done emitting */
	int prev_called; /* the program's own SIGSEGV handler ran */
	long handler_runs; /* the timer handler's runs (ABRT_TIMER, SEGV_TIMER) */
};

static struct shared *sh;
static enum how child_how;
static char *child_file;

static void emit_marks(int t, long n)
{
	for (long k = 0; k < n; k++) {
		struct ovni_ev ev;
		rt_sig_mark_ev(&ev, RT_SIG_MAIN, k, ovni_clock_now());
		ovni_ev_emit(&ev);
		__atomic_store_n(&sh->emitted[t], k + 1, __ATOMIC_SEQ_CST);
	}
}

static void wait_forever(void)
{
	for (;;)
		pause();
}

/* The program's timer handler: a mark (ovni_mark_set: the code path
 * that always passes libovni's crash gate) and an event (the emit hot
 * path, or its slow path when the buffer is full). */
static void on_timer(int sig)
{
	(void) sig;
	long k = __atomic_add_fetch(&sh->handler_runs, 1, __ATOMIC_SEQ_CST);
	ovni_mark_set(RT_SIG_HANDLER, 2 * k);
	struct ovni_ev ev;
	rt_sig_mark_ev(&ev, RT_SIG_HANDLER, 2 * k + 1, ovni_clock_now());
	ovni_ev_emit(&ev);
}

/* A POSIX timer signalling the calling thread every 50 us. */
static void start_thread_timer(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_timer;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGRTMIN, &sa, NULL) != 0)
		_exit(4);
	struct sigevent sev;
	memset(&sev, 0, sizeof sev);
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIGRTMIN;
	sev._sigev_un._tid = (pid_t) gettid();
	timer_t timer;
	if (timer_create(CLOCK_MONOTONIC, &sev, &timer) != 0)
		_exit(4);
	struct itimerspec its = {.it_interval = {0, 50000}, .it_value = {0, 50000}};
	if (timer_settime(timer, 0, &its, NULL) != 0)
		_exit(4);
}

static void *idle_thread(void *p)
{
	int t = (int) (intptr_t) p;
	ovni_thread_init(TID_MAIN + t);
	emit_marks(t, planned[t]);
	__atomic_add_fetch(&sh->ready, 1, __ATOMIC_SEQ_CST);
	if (child_how == ABRT_ATTR_TIMER && t == 1) {
		/* Mostly inside the gate of its stream.json rewrites when the
		 * crash comes, the handler interrupting it there. */
		start_thread_timer();
		for (;;)
			ovni_attr_flush();
	}
	if (child_how == EXIT_NO_FINI) {
		if (t == 1)
			ovni_thread_free();
		return NULL; /* thread 2 ends without ovni_thread_free */
	}
	wait_forever();
	return NULL;
}

static void *runner_thread(void *p)
{
	(void) p;
	ovni_thread_init(TID_MAIN + T_RUNNER);
	emit_marks(T_RUNNER, RUNNER_MAX);
	wait_forever();
	return NULL;
}

static volatile int zero_divisor;
static volatile int dividend = 7;
static volatile int fpe_result;

static void crash(enum how how)
{
	switch (how) {
	case SEGV_NULL:
		*(volatile int *) (uintptr_t) zero_divisor = 1;
		break;
	case BUS_MAP: {
		/* A page of an empty file: touching it is SIGBUS. */
		int fd = open(child_file, O_RDWR | O_CREAT | O_TRUNC, 0600);
		volatile char *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m != MAP_FAILED)
			m[0] = 1;
		break;
	}
	case ILL_TRAP:
		__builtin_trap();
	case FPE_DIV:
#if defined(__x86_64__) || defined(__i386__)
		fpe_result = dividend / zero_divisor;
#else
		raise(SIGFPE);
#endif
		break;
	case ABRT_ABORT:
	case ABRT_TIMER:
	case ABRT_ATTR_TIMER:
	case ABRT_PREV_EMIT:
		abort();
	case SEGV_KILL:
		kill(getpid(), SIGSEGV);
		break;
	case ILL_RAISE:
		raise(SIGILL);
		break;
	case SEGV_PREV:
	case SEGV_TIMER:
	case SEGV_PREV_EMIT:
		*(volatile int *) (uintptr_t) zero_divisor = 1;
		break;
	case EXIT_NO_FINI:
		break;
	}
	wait_forever();
}

static void *crasher_thread(void *p)
{
	(void) p;
	ovni_thread_init(TID_MAIN + T_CRASHER);
	if (child_how == ABRT_TIMER || child_how == SEGV_TIMER)
		start_thread_timer();
	while (__atomic_load_n(&sh->ready, __ATOMIC_SEQ_CST) < 2
	       || __atomic_load_n(&sh->emitted[T_RUNNER], __ATOMIC_SEQ_CST) < RUNNER_MIN)
		sched_yield();
	emit_marks(T_CRASHER, planned[T_CRASHER]);
	sh->runner_at_crash = __atomic_load_n(&sh->emitted[T_RUNNER], __ATOMIC_SEQ_CST);
	crash(child_how);
	return NULL;
}

/* The program's own SIGSEGV handler, installed before ovni_proc_init:
 * it notes that it ran and lets the fault kill the process. */
static void prev_handler(int sig)
{
	__atomic_store_n(&sh->prev_called, 1, __ATOMIC_SEQ_CST);
	signal(sig, SIG_DFL);
}

/* The same, emitting 64 marks on the crashing thread first (more than
 * its buffer holds: the emit path must get past the frozen buffer without
 * waiting), then letting the signal kill the process (abort() raises
 * SIGABRT again once this returns; the fault happens again). */
static void prev_emit_handler(int sig)
{
	__atomic_store_n(&sh->prev_called, 1, __ATOMIC_SEQ_CST);
	for (int k = 0; k < 64; k++)
		ovni_mark_set(RT_SIG_HANDLER, k);
	signal(sig, SIG_DFL);
}

/* The traced program (in the child). */
static void child(enum how how)
{
	child_how = how;
	if (how == SEGV_PREV)
		signal(SIGSEGV, prev_handler);
	if (how == SEGV_PREV_EMIT)
		signal(SIGSEGV, prev_emit_handler);
	if (how == ABRT_PREV_EMIT)
		signal(SIGABRT, prev_emit_handler);
	ovni_proc_init(1, "vm", PID);
	ovni_thread_init(TID_MAIN);
	ovni_add_cpu(0, 0);
	emit_marks(T_MAIN, planned[T_MAIN]);
	pthread_t th[NTHREADS];
	if (how == EXIT_NO_FINI) {
		for (int t = 1; t <= 2; t++)
			pthread_create(&th[t], NULL, idle_thread, (void *) (intptr_t) t);
		for (int t = 1; t <= 2; t++)
			pthread_join(th[t], NULL);
		exit(0); /* without ovni_thread_free nor ovni_proc_fini */
	}
	for (int t = 1; t <= 2; t++)
		pthread_create(&th[t], NULL, idle_thread, (void *) (intptr_t) t);
	pthread_create(&th[T_RUNNER], NULL, runner_thread, NULL);
	pthread_create(&th[T_CRASHER], NULL, crasher_thread, NULL);
	pthread_join(th[T_CRASHER], NULL);
	_exit(3); /* not reached */
}

/* Each case's temporary directory (its trace in trace/), removed by
 * case_end whatever the outcome. */
static char *case_dir, *case_trace;
/* What a named stream's line says right after "stream.json: ": the cut
 * (WEFT_CRASH=flush), or that ovni.finished is missing. */
static char want_why[128];

static char *case_begin(void)
{
	case_dir = rt_test_mkdtemp();
	want_why[0] = '\0';
	case_trace = rt_test_path("%s/trace", case_dir);
	child_file = rt_test_path("%s/empty", case_dir);
	return case_dir;
}

static int case_end(void **st)
{
	(void) st;
	if (case_dir != NULL)
		rt_test_rm_rf(case_dir);
	free(case_dir);
	free(case_trace);
	free(child_file);
	case_dir = case_trace = child_file = NULL;
	return 0;
}

/* Runs a case in a child; returns its wait status. */
static int run_child(const char *trace, const char *crash_env, enum how how)
{
	memset(sh, 0, sizeof *sh);
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		rt_test_fail("fork failed: %s", strerror(errno));
	if (pid == 0) {
		/* cmocka's handlers (inherited) would catch the crash. */
		const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
		for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
			signal(sigs[i], SIG_DFL);
		setenv("OVNI_TRACEDIR", trace, 1);
		setenv("WEFT_BUFSIZE", "4096", 1);
		if (crash_env != NULL)
			setenv("WEFT_CRASH", crash_env, 1);
		else
			unsetenv("WEFT_CRASH");
		child(how);
		_exit(3);
	}
	int status = 0;
	if (rt_test_wait_bounded(pid, CHILD_LIMIT_S, &status) != 0)
		fail_msg("the child (case %d) did not die within %d s: killed", (int) how, CHILD_LIMIT_S);
	return status;
}

/* Marks of type RT_SIG_MAIN in a stream, checked to count 0, 1, 2, ...;
 * -1 if they do not. */
static long count_marks_opt(const char *trace, int t, int allow_cut)
{
	char *obs = rt_test_path("%s/loom.vm/proc.%d/thread.%d/stream.obs", trace, PID, TID_MAIN + t);
	struct rt_test_stream s;
	rt_test_stream_load_opt(&s, obs, allow_cut);
	long n = 0;
	for (size_t k = 0; k < s.nev; k++) {
		const struct rt_test_ev *e = &s.ev[k];
		if (strcmp(e->mcv, "OM=") != 0 || e->payload_size != 12)
			continue;
		int64_t v;
		int32_t type;
		memcpy(&v, e->payload, sizeof v);
		memcpy(&type, e->payload + sizeof v, sizeof type);
		if (type != RT_SIG_MAIN)
			continue;
		if (v != n) {
			fprintf(stderr, "thread %d: mark %" PRId64 " where %ld was due\n", t, v, n);
			n = -1;
			break;
		}
		n++;
	}
	rt_test_stream_free(&s);
	free(obs);
	return n;
}

static long count_marks(const char *trace, int t)
{
	return count_marks_opt(trace, t, 0);
}

/* stream.json of thread t: weft.cut.by ("" if absent), weft.cut.signal,
 * whether ovni.finished is there and ovni.require.ovni is. */
struct meta {
	char by[16];
	long signal;
	long long clock;
	int finished;
	int require;
};

static void read_meta(const char *trace, int t, struct meta *m)
{
	memset(m, 0, sizeof *m);
	char *path = rt_test_path("%s/loom.vm/proc.%d/thread.%d/stream.json", trace, PID, TID_MAIN + t);
	json_error_t err;
	json_t *doc = json_load_file(path, 0, &err);
	if (doc == NULL)
		rt_test_fail("%s: %s", path, err.text);
	json_t *cut = json_object_get(json_object_get(doc, "weft"), "cut");
	if (cut != NULL) {
		snprintf(m->by, sizeof m->by, "%s", json_string_value(json_object_get(cut, "by")));
		m->signal = (long) json_integer_value(json_object_get(cut, "signal"));
		m->clock = (long long) json_integer_value(json_object_get(cut, "clock"));
	}
	json_t *ovni = json_object_get(doc, "ovni");
	m->finished = json_object_get(ovni, "finished") != NULL;
	m->require = json_object_get(json_object_get(ovni, "require"), "ovni") != NULL;
	json_decref(doc);
	free(path);
}

/* Runs `weft check` on trace: its exit status, and how many lines say
 * ovni.finished is missing (*nmissing); named[t]: thread t's stream is
 * one of them. */
static int named[NTHREADS];

static void expect_why(const char *why)
{
	snprintf(want_why, sizeof want_why, "%s", why);
}

static int weft_check(const char *trace, int *nmissing)
{
	memset(named, 0, sizeof named);
	const char *bin = getenv("WEFT_BIN");
	if (bin == NULL || access(bin, X_OK) != 0)
		rt_test_fail("WEFT_BIN ('%s') is not an executable", bin != NULL ? bin : "(unset)");
	char *cmd = rt_test_path("timeout -s KILL 60 '%s' check '%s' 2>&1", bin, trace);
	FILE *p = popen(cmd, "r");
	free(cmd);
	if (p == NULL)
		rt_test_fail("popen failed");
	char line[4096];
	*nmissing = 0;
	while (fgets(line, sizeof line, p) != NULL) {
		fputs(line, stderr);
		if (strstr(line, "ovni.finished is missing") == NULL)
			continue;
		(*nmissing)++;
		for (int t = 0; t < NTHREADS; t++) {
			char *want = rt_test_path("/loom.vm/proc.%d/thread.%d/stream.json: %s", PID,
						  TID_MAIN + t, want_why[0] ? want_why
						  : "ovni.finished is missing");
			if (strstr(line, want) != NULL)
				named[t] = 1;
			free(want);
		}
	}
	int status = pclose(p);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Files whose name ends in ".crash.tmp" under the trace. */
static int ntmp;

static int note_tmp(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void) st;
	(void) flag;
	(void) ftw;
	size_t n = strlen(path);
	if (n >= 10 && strcmp(path + n - 10, ".crash.tmp") == 0) {
		fprintf(stderr, "left behind: %s\n", path);
		ntmp++;
	}
	return 0;
}

static int count_crash_tmp(const char *trace)
{
	ntmp = 0;
	if (nftw(trace, note_tmp, 16, FTW_PHYS) != 0)
		fail_msg("cannot walk %s", trace);
	return ntmp;
}

static void crash_case(enum how how, int sig)
{
	case_begin();
	const char *trace = case_trace;
	int status = run_child(trace, "flush", how);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), sig);
	assert_int_equal(sh->prev_called, how == SEGV_PREV || how == SEGV_PREV_EMIT || how == ABRT_PREV_EMIT);
	assert_int_equal(count_crash_tmp(trace), 0);

	for (int t = 0; t < NTHREADS; t++) {
		long n = count_marks(trace, t);
		if (t == T_RUNNER) {
			assert_true(n >= sh->runner_at_crash);
			assert_true(sh->runner_at_crash >= RUNNER_MIN);
			/* Its counter follows each emit: the last event may
			 * be stored and not yet counted. */
			assert_true(n <= sh->emitted[T_RUNNER] + 1);
		} else {
			assert_int_equal(n, planned[t]);
			assert_int_equal(sh->emitted[t], planned[t]);
		}
		struct meta m;
		read_meta(trace, t, &m);
		assert_string_equal(m.by, "signal");
		assert_int_equal(m.signal, sig);
		assert_true(m.clock > 0);
		assert_false(m.finished);
		assert_true(m.require);
	}
	int nmissing = 0;
	char why[128];
	snprintf(why, sizeof why, "cut by signal %d (%s) at clock ", sig,
			sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : sig == SIGILL ? "SIGILL"
			: sig == SIGFPE ? "SIGFPE" : "SIGABRT");
	expect_why(why);
	assert_int_equal(weft_check(trace, &nmissing), 1);
	assert_int_equal(nmissing, NTHREADS);
	for (int t = 0; t < NTHREADS; t++)
		assert_true(named[t]);

}

static void test_segv_null(void **st)
{
	(void) st;
	crash_case(SEGV_NULL, SIGSEGV);
}

static void test_bus_map(void **st)
{
	(void) st;
	crash_case(BUS_MAP, SIGBUS);
}

static void test_ill_trap(void **st)
{
	(void) st;
	crash_case(ILL_TRAP, SIGILL);
}

static void test_fpe_div(void **st)
{
	(void) st;
	crash_case(FPE_DIV, SIGFPE);
}

static void test_abrt_abort(void **st)
{
	(void) st;
	crash_case(ABRT_ABORT, SIGABRT);
}

/* The handler that was there before ovni_proc_init runs after the
 * buffers are written (the fault happens again once it returns). */
static void test_segv_previous_handler(void **st)
{
	(void) st;
	crash_case(SEGV_PREV, SIGSEGV);
	assert_int_equal(sh->prev_called, 1);
}

/* A case run again and again (a race between the crash handler and the
 * program's handlers): the child dies by the signal within CHILD_LIMIT_S
 * every time, with every stream written and cut. */
static void crash_repeat(enum how how, int sig, int times)
{
	for (int i = 0; i < times; i++) {
		crash_case(how, sig);
		if (how == ABRT_TIMER || how == SEGV_TIMER || how == ABRT_ATTR_TIMER)
			assert_true(sh->handler_runs > 0);
		case_end(NULL);
	}
}

/* The program's timer handler emits on the crashing thread, also while
 * the crash handler writes the buffers and after it returned. */
static void test_abrt_timer_handler(void **st)
{
	(void) st;
	crash_repeat(ABRT_TIMER, SIGABRT, 50);
}

static void test_segv_timer_handler(void **st)
{
	(void) st;
	crash_repeat(SEGV_TIMER, SIGSEGV, 50);
}

/* The timer's handler emits on a thread that is rewriting its stream.json
 * (inside its crash gate) when another thread aborts: its stream is cut
 * too (the handler's event is dropped there rather than holding the
 * thread inside the gate, which the crash handler waits for). */
static void test_abrt_timer_handler_in_gate(void **st)
{
	(void) st;
	crash_repeat(ABRT_ATTR_TIMER, SIGABRT, 30);
}

/* The program's own handler of the fatal signal emits (more than the
 * buffer holds) after libovni's wrote the buffers, then returns. */
static void test_abrt_previous_handler_emits(void **st)
{
	(void) st;
	crash_repeat(ABRT_PREV_EMIT, SIGABRT, 10);
}

static void test_segv_previous_handler_emits(void **st)
{
	(void) st;
	crash_repeat(SEGV_PREV_EMIT, SIGSEGV, 10);
}

static void test_segv_kill(void **st)
{
	(void) st;
	crash_case(SEGV_KILL, SIGSEGV);
}

static void test_ill_raise(void **st)
{
	(void) st;
	crash_case(ILL_RAISE, SIGILL);
}

/* Without WEFT_CRASH: today's behaviour, what was buffered is lost. */
static void test_off(void **st)
{
	(void) st;
	case_begin();
	const char *trace = case_trace;
	int status = run_child(trace, NULL, SEGV_NULL);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGSEGV);
	for (int t = 0; t < NTHREADS; t++) {
		/* without the handlers a thread killed during its write(2)
		 * leaves a stream cut inside an event */
		long n = count_marks_opt(trace, t, 1);
		if (t != T_RUNNER)
			assert_true(n >= 0 && n < planned[t]);
		struct meta m;
		read_meta(trace, t, &m);
		assert_string_equal(m.by, "");
		assert_false(m.finished);
	}
	int nmissing = 0;
	assert_int_equal(weft_check(trace, &nmissing), 1);
	assert_int_equal(nmissing, NTHREADS);
}

/* exit() without ovni_proc_fini: main and idle 2 (ended without
 * ovni_thread_free) are written at exit; idle 1 finished normally. */
static void test_exit_without_fini(void **st)
{
	(void) st;
	case_begin();
	const char *trace = case_trace;
	int status = run_child(trace, "flush", EXIT_NO_FINI);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	for (int t = 0; t <= 2; t++) {
		assert_int_equal(count_marks(trace, t), planned[t]);
		struct meta m;
		read_meta(trace, t, &m);
		assert_true(m.require);
		if (t == 1) {
			assert_true(m.finished);
			assert_string_equal(m.by, "");
		} else {
			assert_false(m.finished);
			assert_string_equal(m.by, "exit");
			assert_true(m.clock > 0);
		}
	}
	int nmissing = 0;
	expect_why("cut at exit at clock ");
	assert_int_equal(weft_check(trace, &nmissing), 1);
	assert_int_equal(nmissing, 2);
	assert_true(named[T_MAIN] && named[2] && !named[1]);
}

/* The same program with ovni_proc_fini missing but WEFT_CRASH unset: the
 * buffered events of main and idle 2 are lost, as with the reference. */
static void test_exit_without_fini_off(void **st)
{
	(void) st;
	case_begin();
	const char *trace = case_trace;
	int status = run_child(trace, NULL, EXIT_NO_FINI);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_true(count_marks(trace, T_MAIN) < planned[T_MAIN]);
	assert_int_equal(count_marks(trace, 1), planned[1]);
	assert_true(count_marks(trace, 2) < planned[2]);
}

static void bad_value_body(void *arg)
{
	(void) arg;
	setenv("WEFT_CRASH", "yes", 1);
	ovni_proc_init(1, "vm", PID);
}

static void test_bad_value(void **st)
{
	(void) st;
	char *dir = case_begin();
	setenv("OVNI_TRACEDIR", dir, 1);
	char *err = NULL;
	int status = rt_test_in_child(bad_value_body, NULL, &err);
	unsetenv("WEFT_CRASH");
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGABRT);
	assert_string_equal(err, "libovni: ovni_proc_init: WEFT_CRASH='yes' is not a crash mode (the only one is "
				 "'flush'; unset it for none)\n");
	free(err);
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--child") == 0) {
		/* Debugging: one case in this process. */
		sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		child_file = rt_test_path("/tmp/weft-crash-empty-%d", (int) getpid());
		child((enum how) atoi(argv[2]));
	}
	sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		rt_test_fail("mmap failed");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_segv_null, case_end),
		cmocka_unit_test_teardown(test_bus_map, case_end),
		cmocka_unit_test_teardown(test_ill_trap, case_end),
		cmocka_unit_test_teardown(test_fpe_div, case_end),
		cmocka_unit_test_teardown(test_abrt_abort, case_end),
		cmocka_unit_test_teardown(test_segv_previous_handler, case_end),
		cmocka_unit_test_teardown(test_abrt_timer_handler, case_end),
		cmocka_unit_test_teardown(test_segv_timer_handler, case_end),
		cmocka_unit_test_teardown(test_abrt_timer_handler_in_gate, case_end),
		cmocka_unit_test_teardown(test_abrt_previous_handler_emits, case_end),
		cmocka_unit_test_teardown(test_segv_previous_handler_emits, case_end),
		cmocka_unit_test_teardown(test_segv_kill, case_end),
		cmocka_unit_test_teardown(test_ill_raise, case_end),
		cmocka_unit_test_teardown(test_off, case_end),
		cmocka_unit_test_teardown(test_exit_without_fini, case_end),
		cmocka_unit_test_teardown(test_exit_without_fini_off, case_end),
		cmocka_unit_test_teardown(test_bad_value, case_end),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	munmap(sh, sizeof *sh);
	return rc;
}
