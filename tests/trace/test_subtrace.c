/* SPDX-License-Identifier: MIT */
/*
 * test_subtrace.c - weft_open on a directory inside a trace takes the system
 * (looms, CPUs, processes' app_id) from the whole trace and the events from
 * the path's streams only; directory loops are read once, with a warning in
 * strict mode too; the metadata of the rest of the trace is checked when
 * strict and left out quietly when lenient. Every temporary tree is removed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tracewrite.h"
#include "weft/weft.h"

static int nwarn;
static char warns[4][WEFT_ERR_MAX];

static void warn_cb(void *ctx, const char *msg)
{
	(void) ctx;
	if (nwarn < 4)
		snprintf(warns[nwarn], sizeof warns[nwarn], "%s", msg);
	nwarn++;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (f == NULL)
		abort();
	fputs(text, f);
	fclose(f);
}

/* loom.vm: proc.1 with thread 1 (CPUs 0:0 1:1, app_id 1) and thread 2 (no
 * CPUs, no app_id); proc.2 with thread 3 (app_id 1, CPU 0:0). */
static char *make_trace(void)
{
	char *root = tw_tmpdir();
	char path[4200];
	for (int tid = 1; tid <= 3; tid++) {
		int pid = tid < 3 ? 1 : 2;
		FILE *f = tw_stream(root, "vm", pid, tid, NULL);
		uint8_t pl[16] = { 0 };
		tw_event(f, "OHx", (uint64_t) (100 * tid), pl, 16);
		tw_event(f, "OHe", (uint64_t) (100 * tid + 10), NULL, 0);
		fclose(f);
	}
	snprintf(path, sizeof path, "%s/loom.vm/proc.1/thread.1/stream.json", root);
	write_file(path, "{\"version\": 3, \"ovni\": {\"lib\": {\"version\": \"1.14.0\", "
			"\"commit\": \"t\"}, \"part\": \"thread\", \"tid\": 1, \"pid\": 1, "
			"\"loom\": \"vm\", \"app_id\": 1, \"require\": {\"ovni\": \"1.1.0\"}, "
			"\"loom_cpus\": [{\"index\": 0, \"phyid\": 0}, {\"index\": 1, \"phyid\": 1}], "
			"\"finished\": 1}}");
	snprintf(path, sizeof path, "%s/loom.vm/proc.1/thread.2/stream.json", root);
	write_file(path, "{\"version\": 3, \"ovni\": {\"lib\": {\"version\": \"1.14.0\", "
			"\"commit\": \"t\"}, \"part\": \"thread\", \"tid\": 2, \"pid\": 1, "
			"\"loom\": \"vm\", \"require\": {\"ovni\": \"1.1.0\"}, \"finished\": 1}}");
	return root;
}

/* The trace of each test: made by setup, removed by teardown (also when a
 * check fails). */
static int setup(void **state)
{
	*state = make_trace();
	return 0;
}

static int teardown(void **state)
{
	tw_rmtree(*state);
	free(*state);
	return 0;
}

static void test_thread_dir(void **state)
{
	const char *root = *state;
	char path[4200], err[WEFT_ERR_MAX];
	snprintf(path, sizeof path, "%s/loom.vm/proc.1/thread.2", root);
	nwarn = 0;
	WEFT_OPTS(weft_open_opts, o);
	o.mode = WEFT_STRICT;
	o.warn = warn_cb;
	struct weft_trace *t = weft_open(path, &o, err, sizeof err);
	if (t == NULL)
		print_error("%s\n", err);
	assert_non_null(t);
	assert_int_equal(nwarn, 0);
	assert_int_equal(weft_nstreams(t), 1);
	assert_string_equal(weft_stream_at(t, 0)->relpath, ".");
	assert_int_equal(weft_nlooms(t), 1);
	const struct weft_loom *l = weft_loom_at(t, 0);
	assert_int_equal(l->ncpus, 2); /* from thread 1's metadata */
	assert_int_equal(l->nprocs, 1); /* proc 2 has no thread here */
	assert_int_equal(l->procs[0]->pid, 1);
	assert_int_equal(l->procs[0]->app_id, 1); /* from thread 1's metadata */
	assert_int_equal(l->procs[0]->nthreads, 1);
	assert_int_equal(l->procs[0]->threads[0]->tid, 2);
	struct weft_event ev;
	int n = 0;
	while (weft_next(t, &ev) == 1) {
		assert_int_equal(ev.rclock, n == 0 ? 200 : 210);
		n++;
	}
	assert_int_equal(n, 2);
	weft_close(t);

	/* the whole trace: three streams, both processes */
	t = weft_open(root, &o, err, sizeof err);
	assert_non_null(t);
	assert_int_equal(weft_nstreams(t), 3);
	assert_int_equal(weft_loom_at(t, 0)->nprocs, 2);
	weft_close(t);
}

static void test_loop_strict(void **state)
{
	const char *root = *state;
	char link[4200], err[WEFT_ERR_MAX], want[8400];
	snprintf(link, sizeof link, "%s/loom.vm/proc.1/loop", root);
	assert_int_equal(symlink("..", link), 0);
	nwarn = 0;
	WEFT_OPTS(weft_open_opts, o);
	o.mode = WEFT_STRICT;
	o.warn = warn_cb;
	struct weft_trace *t = weft_open(root, &o, err, sizeof err);
	assert_non_null(t);
	assert_int_equal(nwarn, 1);
	snprintf(want, sizeof want, "%s: a link loop: it leads back to %s/loom.vm, which "
			"contains it; not followed", link, root);
	assert_string_equal(warns[0], want);
	assert_int_equal(weft_nstreams(t), 3);
	struct weft_event ev;
	int n = 0;
	while (weft_next(t, &ev) == 1)
		n++;
	assert_int_equal(n, 6);
	weft_close(t);
}

static void test_broken_sibling(void **state)
{
	const char *root = *state;
	char path[4200], bad[4200], err[WEFT_ERR_MAX], want[8400];
	snprintf(bad, sizeof bad, "%s/loom.vm/proc.2/thread.3/stream.json", root);
	write_file(bad, "{\"version\": 3,");
	snprintf(path, sizeof path, "%s/loom.vm/proc.1/thread.2", root);
	WEFT_OPTS(weft_open_opts, o);
	o.mode = WEFT_STRICT;
	o.warn = warn_cb;
	nwarn = 0;
	assert_null(weft_open(path, &o, err, sizeof err));
	snprintf(want, sizeof want, "%s: invalid JSON at line 1, column 14: "
			"string or '}' expected near end of file", bad);
	assert_string_equal(err, want);
	/* lenient: the broken stream is left out of the system, quietly */
	o.mode = WEFT_LENIENT;
	struct weft_trace *t = weft_open(path, &o, err, sizeof err);
	assert_non_null(t);
	assert_int_equal(nwarn, 0);
	assert_int_equal(weft_loom_at(t, 0)->ncpus, 2);
	weft_close(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_thread_dir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_loop_strict, setup, teardown),
		cmocka_unit_test_setup_teardown(test_broken_sibling, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
