/* SPDX-License-Identifier: MIT */
/*
 * test_rt_fork - a fork() child of a traced process starts untraced.
 *   - A child that emits (or flushes, frees its thread, ends the process)
 *     without initialising aborts with a message that says why, and never
 *     writes what the parent had buffered: the parent's streams (of the
 *     forking thread, and of another thread with buffered events) hold
 *     each of its events exactly once, and did not change while the child
 *     ran.
 *   - A child that calls ovni_proc_init with its own pid (and
 *     ovni_thread_init) is a process of its own: `weft check` sees two
 *     valid processes, with every event of each; also with OVNI_TMPDIR,
 *     where each process moves only its own streams.
 * Each case is a process of its own (rt_test_in_proc), which forks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "rt_sig.h"

#define PID 7000
#define TID 7001
#define TID2 7002
#define N1 1000
#define N2 1000

static void emit_main(long from, long to)
{
	for (long i = from; i < to; i++) {
		struct ovni_ev ev;
		rt_sig_mark_ev(&ev, RT_SIG_MAIN, i, ovni_clock_now());
		ovni_ev_emit(&ev);
	}
}

static void thread_start(pid_t tid)
{
	ovni_thread_init(tid);
	ovni_add_cpu(0, 0);
	ovni_mark_type(RT_SIG_MAIN, 0, "Main");
	ovni_mark_type(RT_SIG_HANDLER, 0, "Handler");
}

/* ---- a child that does not initialise ---- */

enum child_act { ACT_EMIT, ACT_MARK, ACT_FLUSH, ACT_THREAD_FREE, ACT_PROC_FINI, ACT_NOTHING };

struct untraced {
	enum child_act act;
	int status;
	char err[512];
	long long size_before, size_after, size2_before, size2_after;
};

static void child_act(void *p)
{
	const struct untraced *u = p;
	switch (u->act) {
	case ACT_EMIT:
		emit_main(0, 1);
		break;
	case ACT_MARK:
		ovni_mark_set(RT_SIG_MAIN, 1);
		break;
	case ACT_FLUSH:
		ovni_flush();
		break;
	case ACT_THREAD_FREE:
		ovni_thread_free();
		break;
	case ACT_PROC_FINI:
		ovni_proc_fini();
		break;
	case ACT_NOTHING:
		break;
	}
}

/* The second thread: buffered events, then it waits until the fork is
 * over before it ends. */
static pthread_barrier_t bar;

static void *second(void *p)
{
	(void) p;
	thread_start(TID2);
	emit_main(0, N1);
	pthread_barrier_wait(&bar); /* events buffered */
	pthread_barrier_wait(&bar); /* the fork is over */
	emit_main(N1, N1 + N2);
	ovni_thread_free();
	return NULL;
}

static void untraced_proc(void *p)
{
	struct untraced *u = p;
	char *obs = rt_test_path("%s/untraced/loom.vm/proc.%d/thread.%d/stream.obs", rt_test_dir, PID, TID);
	char *obs2 = rt_test_path("%s/untraced/loom.vm/proc.%d/thread.%d/stream.obs", rt_test_dir, PID, TID2);
	char *dir = rt_test_path("%s/untraced", rt_test_dir);
	setenv("OVNI_TRACEDIR", dir, 1);
	ovni_proc_init(1, "vm", PID);
	pthread_barrier_init(&bar, NULL, 2);
	pthread_t th;
	if (pthread_create(&th, NULL, second, NULL) != 0)
		rt_test_fail("pthread_create");
	thread_start(TID);
	emit_main(0, N1 / 2);
	ovni_flush(); /* some of it in the file, some buffered */
	emit_main(N1 / 2, N1);
	pthread_barrier_wait(&bar);

	u->size_before = rt_test_file_size(obs);
	u->size2_before = rt_test_file_size(obs2);
	char *err = NULL;
	u->status = rt_test_in_child(child_act, u, &err);
	snprintf(u->err, sizeof u->err, "%s", err);
	free(err);
	u->size_after = rt_test_file_size(obs);
	u->size2_after = rt_test_file_size(obs2);

	pthread_barrier_wait(&bar);
	emit_main(N1, N1 + N2);
	ovni_thread_free();
	pthread_join(th, NULL);
	pthread_barrier_destroy(&bar);
	ovni_proc_fini();
	free(obs);
	free(obs2);
	free(dir);
}

static void check_stream(const char *trace, int pid, int tid, uint64_t nmain)
{
	char *thread = rt_test_path("%s/loom.vm/proc.%d/thread.%d", trace, pid, tid);
	struct rt_sig_result r;
	if (rt_sig_check(thread, nmain, 0, &r) != 0) {
		fprintf(stderr, "%s: %s\n", thread, r.why);
		fail();
	}
	free(thread);
}

static void run_untraced(enum child_act act, const char *want)
{
	struct untraced u = {.act = act};
	assert_true(rt_test_in_proc(untraced_proc, &u, sizeof u));
	if (want == NULL) {
		assert_true(WIFEXITED(u.status) && WEXITSTATUS(u.status) == 0);
		assert_string_equal(u.err, "");
	} else {
		if (!WIFSIGNALED(u.status) || WTERMSIG(u.status) != SIGABRT)
			fprintf(stderr, "child status 0x%x, stderr: %s\n", u.status, u.err);
		assert_true(WIFSIGNALED(u.status) && WTERMSIG(u.status) == SIGABRT);
		char *want_nl = rt_test_path("%s\n", want);
		assert_string_equal(u.err, want_nl);
		free(want_nl);
	}
	/* The child wrote nothing to the parent's streams... */
	assert_true(u.size_before > 8);
	assert_int_equal(u.size_after, u.size_before);
	assert_int_equal(u.size2_after, u.size2_before);
	/* ... which hold each event once. */
	char *trace = rt_test_path("%s/untraced", rt_test_dir);
	check_stream(trace, PID, TID, N1 + N2);
	check_stream(trace, PID, TID2, N1 + N2);
	int ok = rt_sig_weft_check(trace);
	if (ok >= 0)
		assert_int_equal(ok, 1);
	rt_test_rm_rf(trace);
	free(trace);
}

#define WHY_THREAD                                                                                          \
	"the thread is not initialized in this process, a fork() child of a traced process: a child starts " \
	"untraced (call ovni_proc_init with its own pid, then ovni_thread_init)"

static void test_child_emit_aborts(void **st)
{
	(void) st;
	run_untraced(ACT_EMIT, "libovni: ovni_ev_emit: " WHY_THREAD);
}

static void test_child_mark_aborts(void **st)
{
	(void) st;
	run_untraced(ACT_MARK, "libovni: ovni_mark_set: " WHY_THREAD);
}

static void test_child_flush_aborts(void **st)
{
	(void) st;
	run_untraced(ACT_FLUSH, "libovni: ovni_flush: " WHY_THREAD);
}

static void test_child_thread_free_aborts(void **st)
{
	(void) st;
	run_untraced(ACT_THREAD_FREE, "libovni: ovni_thread_free: " WHY_THREAD);
}

static void test_child_proc_fini_aborts(void **st)
{
	(void) st;
	run_untraced(ACT_PROC_FINI,
		     "libovni: ovni_proc_fini: the process is not initialized: it is a fork() child of a traced "
		     "process, which starts untraced (call ovni_proc_init with its own pid first)");
}

static void test_child_exits_quietly(void **st)
{
	(void) st;
	run_untraced(ACT_NOTHING, NULL);
}

/* ---- a child that initialises ---- */

struct own {
	int tmpdir;
	int ppid, ptid, cpid, ctid;
	int child_ok;
	int child_isready; /* ovni_thread_isready() in the child before init */
};

static void own_child(void *p)
{
	struct own *o = p;
	o->child_isready = ovni_thread_isready();
	o->cpid = (int) getpid();
	o->ctid = (int) gettid();
	ovni_proc_init(1, "vm", o->cpid);
	thread_start(o->ctid);
	emit_main(0, N2);
	ovni_flush();
	ovni_thread_free();
	ovni_proc_fini();
}

static void own_proc(void *p)
{
	struct own *o = p;
	char *dir = rt_test_path("%s/own", rt_test_dir);
	char *tmp = rt_test_path("%s/own-tmp", rt_test_dir);
	setenv("OVNI_TRACEDIR", dir, 1);
	if (o->tmpdir)
		setenv("OVNI_TMPDIR", tmp, 1);
	o->ppid = (int) getpid();
	o->ptid = (int) gettid();
	ovni_proc_init(1, "vm", o->ppid);
	thread_start(o->ptid);
	emit_main(0, N1);
	o->child_ok = rt_test_in_proc(own_child, o, sizeof *o);
	emit_main(N1, N1 + N2);
	ovni_thread_free();
	ovni_proc_fini();
	free(dir);
	free(tmp);
}

static void run_own(int tmpdir)
{
	struct own o = {.tmpdir = tmpdir};
	assert_true(rt_test_in_proc(own_proc, &o, sizeof o));
	assert_true(o.child_ok);
	assert_int_equal(o.child_isready, 0);
	assert_int_not_equal(o.cpid, o.ppid);
	char *trace = rt_test_path("%s/own", rt_test_dir);
	check_stream(trace, o.ppid, o.ptid, N1 + N2);
	check_stream(trace, o.cpid, o.ctid, N2);
	char *loom = rt_test_path("%s/loom.vm", trace);
	assert_int_equal(rt_test_count_entries(loom), 2);
	if (tmpdir) {
		char *tmp = rt_test_path("%s/own-tmp", rt_test_dir);
		assert_false(rt_test_exists(tmp));
		free(tmp);
	}
	int ok = rt_sig_weft_check_has(trace, "2 processes, 2 threads");
	if (ok >= 0)
		assert_int_equal(ok, 1);
	rt_test_rm_rf(trace);
	free(loom);
	free(trace);
}

static void test_child_own_process(void **st)
{
	(void) st;
	run_own(0);
}

static void test_child_own_process_tmpdir(void **st)
{
	(void) st;
	run_own(1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_child_emit_aborts),
		cmocka_unit_test(test_child_mark_aborts),
		cmocka_unit_test(test_child_flush_aborts),
		cmocka_unit_test(test_child_thread_free_aborts),
		cmocka_unit_test(test_child_proc_fini_aborts),
		cmocka_unit_test(test_child_exits_quietly),
		cmocka_unit_test(test_child_own_process),
		cmocka_unit_test(test_child_own_process_tmpdir),
	};
	return cmocka_run_group_tests(tests, rt_test_group_setup, rt_test_group_teardown);
}
