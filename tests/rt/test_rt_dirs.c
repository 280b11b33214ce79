/* SPDX-License-Identifier: MIT */
/*
 * test_rt_dirs - where the trace goes.
 *   OVNI_TRACEDIR unset (./ovni), relative, absolute, nested and missing
 *   (created like mkdir -p);
 *   OVNI_TMPDIR: during the run the streams are under the temporary dir
 *   (same loom./proc./thread. layout) and the trace dir has no thread yet;
 *   after ovni_proc_fini they are in the trace dir, complete, and the
 *   temporary dir is empty; also across file systems (/dev/shm), where the
 *   streams are copied.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "ovni.h"
#include "rt_test.h"

#define PID 555

struct body {
	int tid;
	const char *tmp_thread_dir;   /* checked while running, or NULL */
	const char *final_thread_dir; /* checked while running, or NULL */
	int tmp_obs_seen, tmp_json_seen, final_seen;
};

static void body(void *p)
{
	struct body *b = p;
	ovni_thread_init(b->tid);
	for (int i = 0; i < 10; i++) {
		struct ovni_ev ev = {0};
		ovni_ev_set_mcv(&ev, "OHp");
		ovni_ev_set_clock(&ev, ovni_clock_now());
		ovni_ev_emit(&ev);
	}
	if (b->tmp_thread_dir != NULL) {
		char *o = rt_test_path("%s/stream.obs", b->tmp_thread_dir);
		char *j = rt_test_path("%s/stream.json", b->tmp_thread_dir);
		b->tmp_obs_seen = rt_test_exists(o);
		b->tmp_json_seen = rt_test_exists(j);
		free(o);
		free(j);
	}
	if (b->final_thread_dir != NULL)
		b->final_seen = rt_test_exists(b->final_thread_dir);
	ovni_thread_free();
}

/* The finished stream in thread_dir: 10 events and finished = 1. */
static void check_stream(const char *thread_dir)
{
	char *o = rt_test_path("%s/stream.obs", thread_dir);
	char *j = rt_test_path("%s/stream.json", thread_dir);
	struct rt_test_stream s;
	rt_test_stream_load(&s, o);
	assert_int_equal(s.nev, 10);
	rt_test_stream_free(&s);
	char *text = rt_test_read(j, NULL);
	assert_non_null(text);
	assert_non_null(strstr(text, "\"finished\": 1"));
	free(text);
	free(o);
	free(j);
}

static void run_simple(int tid)
{
	ovni_proc_init(1, "vm", PID);
	struct body b = {.tid = tid};
	rt_test_in_thread(body, &b);
	ovni_proc_fini();
}

static void test_default_dir(void **st)
{
	(void) st;
	char *tmp = rt_test_mkdtemp();
	char *cwd = getcwd(NULL, 0);
	assert_int_equal(chdir(tmp), 0);
	unsetenv("OVNI_TRACEDIR");
	unsetenv("OVNI_TMPDIR");
	run_simple(1);
	assert_int_equal(chdir(cwd), 0);
	char *td = rt_test_path("%s/ovni/loom.vm/proc.%d/thread.1", tmp, PID);
	check_stream(td);
	free(td);
	free(cwd);
	rt_test_rm_rf(tmp);
	free(tmp);
}

static void test_relative_dir(void **st)
{
	(void) st;
	char *tmp = rt_test_mkdtemp();
	char *cwd = getcwd(NULL, 0);
	assert_int_equal(chdir(tmp), 0);
	setenv("OVNI_TRACEDIR", "rel/trace", 1);
	unsetenv("OVNI_TMPDIR");
	run_simple(2);
	assert_int_equal(chdir(cwd), 0);
	char *td = rt_test_path("%s/rel/trace/loom.vm/proc.%d/thread.2", tmp, PID);
	check_stream(td);
	free(td);
	free(cwd);
	rt_test_rm_rf(tmp);
	free(tmp);
}

static void test_absolute_nested_dir(void **st)
{
	(void) st;
	char *tmp = rt_test_mkdtemp();
	char *dir = rt_test_path("%s/a/b/c/", tmp);
	setenv("OVNI_TRACEDIR", dir, 1);
	unsetenv("OVNI_TMPDIR");
	run_simple(3);
	char *td = rt_test_path("%s/a/b/c/loom.vm/proc.%d/thread.3", tmp, PID);
	check_stream(td);
	free(td);
	free(dir);
	rt_test_rm_rf(tmp);
	free(tmp);
}

/* Runs one process with two threads through OVNI_TMPDIR=tmpdir. */
static void check_tmpdir(const char *tmpdir, const char *tracedir)
{
	setenv("OVNI_TRACEDIR", tracedir, 1);
	setenv("OVNI_TMPDIR", tmpdir, 1);
	ovni_proc_init(1, "vm", PID);
	char *tmp_td = rt_test_path("%s/loom.vm/proc.%d/thread.4", tmpdir, PID);
	char *fin_td = rt_test_path("%s/loom.vm/proc.%d/thread.4", tracedir, PID);
	struct body b = {.tid = 4, .tmp_thread_dir = tmp_td, .final_thread_dir = fin_td};
	rt_test_in_thread(body, &b);
	struct body b2 = {.tid = 5};
	rt_test_in_thread(body, &b2);
	assert_true(b.tmp_obs_seen);
	assert_true(b.tmp_json_seen);
	assert_false(b.final_seen);
	/* Freed but not moved yet. */
	assert_true(rt_test_exists(tmp_td));
	assert_false(rt_test_exists(fin_td));
	ovni_proc_fini();
	unsetenv("OVNI_TMPDIR");

	assert_false(rt_test_exists(tmp_td));
	check_stream(fin_td);
	char *fin_td5 = rt_test_path("%s/loom.vm/proc.%d/thread.5", tracedir, PID);
	check_stream(fin_td5);
	assert_int_equal(rt_test_count_entries(tmpdir), 0);
	free(fin_td5);
	free(tmp_td);
	free(fin_td);
}

static void test_tmpdir(void **st)
{
	(void) st;
	char *tmp = rt_test_mkdtemp();
	char *scratch = rt_test_path("%s/scratch", tmp);
	char *trace = rt_test_path("%s/trace", tmp);
	check_tmpdir(scratch, trace);
	free(scratch);
	free(trace);
	rt_test_rm_rf(tmp);
	free(tmp);
}

static void test_tmpdir_other_fs(void **st)
{
	(void) st;
	struct stat a, b;
	char *tmp = rt_test_mkdtemp();
	if (stat("/dev/shm", &b) != 0 || stat(tmp, &a) != 0 || a.st_dev == b.st_dev || access("/dev/shm", W_OK) != 0) {
		rt_test_rm_rf(tmp);
		free(tmp);
		skip();
	}
	char scratch[] = "/dev/shm/weft-rt-XXXXXX";
	assert_non_null(mkdtemp(scratch));
	char *trace = rt_test_path("%s/trace", tmp);
	check_tmpdir(scratch, trace);
	free(trace);
	rt_test_rm_rf(scratch);
	rt_test_rm_rf(tmp);
	free(tmp);
}

int main(void)
{
	unsetenv("WEFT_BUFSIZE");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_dir),
		cmocka_unit_test(test_relative_dir),
		cmocka_unit_test(test_absolute_nested_dir),
		cmocka_unit_test(test_tmpdir),
		cmocka_unit_test(test_tmpdir_other_fs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
