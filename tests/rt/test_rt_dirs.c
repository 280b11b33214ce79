/* SPDX-License-Identifier: MIT */
/*
 * test_rt_dirs - where the trace goes.
 *   OVNI_TRACEDIR unset (./ovni), relative, absolute, nested and missing
 *   (created like mkdir -p);
 *   OVNI_TMPDIR: during the run the streams are under the temporary dir
 *   (same loom./proc./thread. layout) and the trace dir has no thread yet;
 *   after ovni_proc_fini they are in the trace dir, complete, and nothing
 *   is left in the temporary dir: the directories created there are
 *   removed, and the temporary dir itself once empty (as the reference
 *   does); a temporary dir holding other files is kept with just them;
 *   also across file systems (/dev/shm), where the streams are copied;
 *   a second run into the same trace directory (the reference's
 *   emu-ovni-tmpdir-metadata): its streams replace the first's, exactly
 *   the bytes it wrote, a link left in their place is replaced (the file
 *   it named untouched), on one file system and across two, and `weft
 *   check` accepts the trace; a link in place of a thread directory
 *   stops ovni_proc_fini with a message;
 *   stream.json exists from ovni_thread_init on (before any flush), with
 *   the thread's keys and no ovni.require/finished, in the trace dir or,
 *   with OVNI_TMPDIR, in the temporary one.
 * Each case is a process of its own (rt_test_in_proc): a process is
 * initialized once.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <jansson.h>

#include "ovni.h"
#include "rt_test.h"
#include "weft_version.h"

#define PID 555
#define JSON_MAX 4096

/* What one thread saw while running. */
struct seen {
	int tid;
	int tmp_obs, tmp_json, final_dir;
	long long obs_size_at_init;
	char json_at_init[JSON_MAX]; /* stream.json right after ovni_thread_init */
};

struct job {
	const char *chdir_to;  /* or NULL */
	const char *tracedir;  /* OVNI_TRACEDIR, or NULL for unset */
	const char *tmpdir;    /* OVNI_TMPDIR, or NULL for unset */
	int nthreads;
	int nevents;           /* per thread; 0: 10 */
	const char *snapshot;  /* or NULL: where to copy the temporary
				* streams before ovni_proc_fini */
	int add_cpu;           /* each thread calls ovni_add_cpu (weft check
				* wants a loom's CPUs) */
	struct seen th[2];
	/* after both threads were freed, before ovni_proc_fini */
	int tmp_td_after_free, fin_td_after_free;
};

static struct job *cur_job;

/* The stream directory of tid under base ($OVNI_TRACEDIR or $OVNI_TMPDIR). */
static char *thread_dir(const char *base, int tid)
{
	return rt_test_path("%s/loom.vm/proc.%d/thread.%d", base, PID, tid);
}

static void body(void *p)
{
	struct seen *t = p;
	struct job *j = cur_job;
	const char *base = j->tmpdir != NULL ? j->tmpdir : (j->tracedir != NULL ? j->tracedir : "ovni");
	char *td = thread_dir(base, t->tid);
	char *o = rt_test_path("%s/stream.obs", td);
	char *js = rt_test_path("%s/stream.json", td);

	ovni_thread_init(t->tid);
	t->obs_size_at_init = rt_test_file_size(o);
	if (j->add_cpu)
		ovni_add_cpu(0, 0);
	char *text = rt_test_read(js, NULL);
	if (text != NULL) {
		snprintf(t->json_at_init, sizeof t->json_at_init, "%s", text);
		free(text);
	}
	for (int i = 0; i < (j->nevents > 0 ? j->nevents : 10); i++) {
		struct ovni_ev ev = {0};
		ovni_ev_set_mcv(&ev, "OHp");
		ovni_ev_set_clock(&ev, ovni_clock_now());
		ovni_ev_emit(&ev);
	}
	if (j->tmpdir != NULL) {
		t->tmp_obs = rt_test_exists(o);
		t->tmp_json = rt_test_exists(js);
		char *fin = thread_dir(j->tracedir, t->tid);
		t->final_dir = rt_test_exists(fin);
		free(fin);
	}
	ovni_thread_free();
	free(td);
	free(o);
	free(js);
}

/* Copies the files of thread tid's temporary stream directory into
 * <snapshot>/thread.<tid>/ (in the child, before ovni_proc_fini). */
static void snapshot_thread(const struct job *j, int tid)
{
	char *src = thread_dir(j->tmpdir, tid);
	char *dst = rt_test_path("%s/thread.%d", j->snapshot, tid);
	if (mkdir(j->snapshot, 0777) != 0 && errno != EEXIST)
		_exit(4);
	if (mkdir(dst, 0777) != 0)
		_exit(4);
	DIR *d = opendir(src);
	if (d == NULL)
		_exit(4);
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		char *from = rt_test_path("%s/%s", src, de->d_name);
		char *to = rt_test_path("%s/%s", dst, de->d_name);
		size_t len;
		char *data = rt_test_read(from, &len);
		FILE *f = fopen(to, "wb");
		if (data == NULL || f == NULL || fwrite(data, 1, len, f) != len || fclose(f) != 0)
			_exit(4);
		free(data);
		free(from);
		free(to);
	}
	closedir(d);
	free(src);
	free(dst);
}

static void proc_main(void *p)
{
	struct job *j = p;
	cur_job = j;
	if (j->chdir_to != NULL && chdir(j->chdir_to) != 0)
		_exit(3);
	if (j->tracedir != NULL)
		setenv("OVNI_TRACEDIR", j->tracedir, 1);
	else
		unsetenv("OVNI_TRACEDIR");
	if (j->tmpdir != NULL)
		setenv("OVNI_TMPDIR", j->tmpdir, 1);
	else
		unsetenv("OVNI_TMPDIR");
	ovni_proc_init(1, "vm", PID);
	for (int i = 0; i < j->nthreads; i++)
		rt_test_in_thread(body, &j->th[i]);
	if (j->tmpdir != NULL) {
		char *tmp_td = thread_dir(j->tmpdir, j->th[0].tid);
		char *fin_td = thread_dir(j->tracedir, j->th[0].tid);
		j->tmp_td_after_free = rt_test_exists(tmp_td);
		j->fin_td_after_free = rt_test_exists(fin_td);
		free(tmp_td);
		free(fin_td);
	}
	if (j->snapshot != NULL)
		for (int i = 0; i < j->nthreads; i++)
			snapshot_thread(j, j->th[i].tid);
	ovni_proc_fini();
}

static void run_job(struct job *j)
{
	assert_true(rt_test_in_proc(proc_main, j, sizeof *j));
}

/* The finished stream in thread_dir: nev events and finished = 1. */
static void check_stream_n(const char *thread_dir, size_t nev)
{
	char *o = rt_test_path("%s/stream.obs", thread_dir);
	char *j = rt_test_path("%s/stream.json", thread_dir);
	struct rt_test_stream s;
	rt_test_stream_load(&s, o);
	assert_int_equal(s.nev, nev);
	rt_test_stream_free(&s);
	char *text = rt_test_read(j, NULL);
	assert_non_null(text);
	assert_non_null(strstr(text, "\"finished\": 1"));
	free(text);
	free(o);
	free(j);
}

static void check_stream(const char *thread_dir)
{
	check_stream_n(thread_dir, 10);
}

static void run_simple(const char *chdir_to, const char *tracedir, int tid)
{
	struct job j = {.chdir_to = chdir_to, .tracedir = tracedir, .nthreads = 1};
	j.th[0].tid = tid;
	run_job(&j);
}

static void test_default_dir(void **st)
{
	(void) st;
	char *tmp = rt_test_mkdtemp();
	run_simple(tmp, NULL, 1);
	char *td = rt_test_path("%s/ovni/loom.vm/proc.%d/thread.1", tmp, PID);
	check_stream(td);
	free(td);
	rt_test_rm_rf(tmp);
	free(tmp);
}

static void test_relative_dir(void **st)
{
	(void) st;
	char *tmp = rt_test_mkdtemp();
	run_simple(tmp, "rel/trace", 2);
	char *td = rt_test_path("%s/rel/trace/loom.vm/proc.%d/thread.2", tmp, PID);
	check_stream(td);
	free(td);
	rt_test_rm_rf(tmp);
	free(tmp);
}

static void test_absolute_nested_dir(void **st)
{
	(void) st;
	char *tmp = rt_test_mkdtemp();
	char *dir = rt_test_path("%s/a/b/c/", tmp);
	run_simple(NULL, dir, 3);
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
	struct job j = {.tracedir = tracedir, .tmpdir = tmpdir, .nthreads = 2};
	j.th[0].tid = 4;
	j.th[1].tid = 5;
	run_job(&j);
	/* While running: in the temporary dir only. */
	assert_true(j.th[0].tmp_obs);
	assert_true(j.th[0].tmp_json);
	assert_false(j.th[0].final_dir);
	/* Freed but not moved yet. */
	assert_true(j.tmp_td_after_free);
	assert_false(j.fin_td_after_free);

	/* After ovni_proc_fini: the streams are in the trace dir... */
	char *fin_td = thread_dir(tracedir, 4);
	char *fin_td5 = thread_dir(tracedir, 5);
	check_stream(fin_td);
	check_stream(fin_td5);
	char *fin_proc = rt_test_path("%s/loom.vm/proc.%d", tracedir, PID);
	assert_int_equal(rt_test_count_entries(fin_proc), 2);
	free(fin_proc);
	free(fin_td5);
	free(fin_td);
}

static void test_tmpdir(void **st)
{
	(void) st;
	char *tmp = rt_test_mkdtemp();
	/* Neither exists: libovni creates both. */
	char *scratch = rt_test_path("%s/scratch", tmp);
	char *trace = rt_test_path("%s/trace", tmp);
	check_tmpdir(scratch, trace);
	/* ... and nothing is left behind: not even the temporary dir. */
	assert_false(rt_test_exists(scratch));
	assert_int_equal(rt_test_count_entries(tmp), 1);
	free(scratch);
	free(trace);
	rt_test_rm_rf(tmp);
	free(tmp);
}

/* A temporary dir that holds something else stays, with just that. */
static void test_tmpdir_not_empty(void **st)
{
	(void) st;
	char *tmp = rt_test_mkdtemp();
	char *scratch = rt_test_path("%s/scratch", tmp);
	char *trace = rt_test_path("%s/trace", tmp);
	char *other = rt_test_path("%s/keep.txt", scratch);
	assert_int_equal(mkdir(scratch, 0777), 0);
	FILE *f = fopen(other, "w");
	assert_non_null(f);
	fputs("not libovni's\n", f);
	fclose(f);
	check_tmpdir(scratch, trace);
	assert_int_equal(rt_test_count_entries(scratch), 1);
	assert_true(rt_test_exists(other));
	free(other);
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
	/* Empty once the streams were copied out: removed. */
	assert_false(rt_test_exists(scratch));
	free(trace);
	rt_test_rm_rf(scratch);
	rt_test_rm_rf(tmp);
	free(tmp);
}

/* `weft check DIR` (60 s at most): its exit status; its output in out. */
static int weft_check(const char *dir, char *out, size_t outlen)
{
	const char *bin = getenv("WEFT_BIN");
	if (bin == NULL || access(bin, X_OK) != 0)
		fail_msg("WEFT_BIN ('%s') is not an executable", bin != NULL ? bin : "(unset)");
	char *cmd = rt_test_path("timeout -s KILL 60 '%s' check '%s' 2>&1", bin, dir);
	FILE *p = popen(cmd, "r");
	free(cmd);
	if (p == NULL)
		fail_msg("popen failed");
	size_t n = fread(out, 1, outlen - 1, p);
	out[n] = '\0';
	int status = pclose(p);
	fputs(out, stderr);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The same program run twice into one trace directory through
 * OVNI_TMPDIR (as the reference's emu-ovni-tmpdir-metadata test does):
 * the second run's streams (25 events a thread, the first's 10) replace
 * the first's, byte for byte what it wrote in the temporary directory,
 * and `weft check` accepts the trace. With link set, the first run's
 * stream.obs of thread 4 is replaced by a link to a file outside the
 * trace before the second run: the link is replaced, the file untouched. */
static void check_tmpdir_rerun(const char *tmp, const char *scratch, int link)
{
	char *trace = rt_test_path("%s/trace", tmp);
	char *snap = rt_test_path("%s/snapshot", tmp);
	struct job j1 = {.tracedir = trace, .tmpdir = scratch, .nthreads = 2, .add_cpu = 1};
	j1.th[0].tid = 4;
	j1.th[1].tid = 5;
	run_job(&j1);
	char *victim = rt_test_path("%s/victim", tmp);
	char *obs4 = rt_test_path("%s/loom.vm/proc.%d/thread.4/stream.obs", trace, PID);
	if (link) {
		FILE *f = fopen(victim, "w");
		assert_non_null(f);
		fputs("not a stream\n", f);
		assert_int_equal(fclose(f), 0);
		assert_int_equal(unlink(obs4), 0);
		assert_int_equal(symlink(victim, obs4), 0);
	}

	struct job j2 = {.tracedir = trace, .tmpdir = scratch, .nthreads = 2, .nevents = 25,
			 .snapshot = snap, .add_cpu = 1};
	j2.th[0].tid = 4;
	j2.th[1].tid = 5;
	run_job(&j2);
	assert_false(j2.th[0].final_dir == 0); /* the first run's was there */
	for (int tid = 4; tid <= 5; tid++) {
		char *fin = thread_dir(trace, tid);
		char *sdir = rt_test_path("%s/thread.%d", snap, tid);
		check_stream_n(fin, 25);
		/* stream.obs, stream.json: the same names, the same bytes
		 * (no stream.idx: one buffer, rt/index.c) */
		assert_int_equal(rt_test_count_entries(sdir), 2);
		assert_int_equal(rt_test_count_entries(fin), 2);
		static const char *const names[] = {"stream.obs", "stream.json"};
		for (size_t k = 0; k < 2; k++) {
			char *a = rt_test_path("%s/%s", sdir, names[k]);
			char *b = rt_test_path("%s/%s", fin, names[k]);
			size_t la = 0, lb = 0;
			char *da = rt_test_read(a, &la);
			char *db = rt_test_read(b, &lb);
			assert_non_null(da);
			assert_non_null(db);
			assert_int_equal(la, lb);
			assert_memory_equal(da, db, la);
			struct stat st;
			assert_int_equal(lstat(b, &st), 0);
			assert_true(S_ISREG(st.st_mode));
			free(da);
			free(db);
			free(a);
			free(b);
		}
		free(sdir);
		free(fin);
	}
	if (link) {
		size_t n = 0;
		char *v = rt_test_read(victim, &n);
		assert_non_null(v);
		assert_string_equal(v, "not a stream\n");
		free(v);
	}
	/* Nothing left in the temporary directory, which is removed. */
	assert_false(rt_test_exists(scratch));
	char out[4096];
	assert_int_equal(weft_check(trace, out, sizeof out), 0);
	char *want = rt_test_path("weft check: %s: valid: 2 streams, 1 loom, 1 process, 2 threads, 50 events, ", trace);
	assert_non_null(strstr(out, want));
	free(want);
	free(obs4);
	free(victim);
	free(snap);
	free(trace);
}

static void test_tmpdir_rerun(void **st)
{
	(void) st;
	char *tmp = rt_test_mkdtemp();
	char *scratch = rt_test_path("%s/scratch", tmp);
	check_tmpdir_rerun(tmp, scratch, 0);
	free(scratch);
	rt_test_rm_rf(tmp);
	free(tmp);
}

static void test_tmpdir_rerun_link(void **st)
{
	(void) st;
	char *tmp = rt_test_mkdtemp();
	char *scratch = rt_test_path("%s/scratch", tmp);
	check_tmpdir_rerun(tmp, scratch, 1);
	free(scratch);
	rt_test_rm_rf(tmp);
	free(tmp);
}

/* A link in place of the first run's thread directory is not followed:
 * ovni_proc_fini of the second run stops, naming both directories, and
 * the directory the link names stays empty. */
static void test_tmpdir_rerun_dir_link(void **st)
{
	(void) st;
	char *tmp = rt_test_mkdtemp();
	char *scratch = rt_test_path("%s/scratch", tmp);
	char *trace = rt_test_path("%s/trace", tmp);
	char *elsewhere = rt_test_path("%s/elsewhere", tmp);
	char *td4 = thread_dir(trace, 4);
	struct job j1 = {.tracedir = trace, .tmpdir = scratch, .nthreads = 1};
	j1.th[0].tid = 4;
	run_job(&j1);
	rt_test_rm_rf(td4);
	assert_int_equal(mkdir(elsewhere, 0777), 0);
	assert_int_equal(symlink(elsewhere, td4), 0);
	struct job j2 = {.tracedir = trace, .tmpdir = scratch, .nthreads = 1};
	j2.th[0].tid = 4;
	char *err = NULL;
	int status = rt_test_in_child(proc_main, &j2, &err);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGABRT);
	char *want = rt_test_path("libovni: ovni_proc_fini: cannot move '%s/loom.vm/proc.%d/thread.4' into "
				  "'%s': that exists and is not a directory (a link is not followed)\n",
				  scratch, PID, td4);
	assert_string_equal(err, want);
	assert_int_equal(rt_test_count_entries(elsewhere), 0);
	free(want);
	free(err);
	free(td4);
	free(elsewhere);
	free(trace);
	free(scratch);
	rt_test_rm_rf(tmp);
	free(tmp);
}

/* Across file systems: each file copied aside in the trace directory,
 * then renamed over the old one. */
static void test_tmpdir_rerun_other_fs(void **st)
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
	check_tmpdir_rerun(tmp, scratch, 1);
	rt_test_rm_rf(scratch);
	rt_test_rm_rf(tmp);
	free(tmp);
}

/* stream.json right after ovni_thread_init: the keys of a running thread
 * stream, pretty-printed, and a stream.obs holding just its header. */
static void check_initial_json(const struct seen *t)
{
	assert_int_equal(t->obs_size_at_init, 8);
	assert_true(t->json_at_init[0] != '\0');
	assert_non_null(strstr(t->json_at_init, "{\n    \"version\": 3,\n    \"ovni\": {\n        \"lib\": {"));
	json_error_t err;
	json_t *got = json_loads(t->json_at_init, 0, &err);
	assert_non_null(got);
	/* weft.index_after: the default buffer, what an automatic flush
	 * may hold back (16 KiB) and its slack (rt/index.c) */
	json_int_t after = (json_int_t) (OVNI_MAX_EV_BUF + 16384 + sizeof(struct ovni_ev));
	json_t *want = json_pack("{s:i, s:{s:{s:s, s:s}, s:s, s:i, s:i, s:s, s:i}, s:{s:s, s:I}}", "version", 3, "ovni",
				 "lib", "version", "1.14.0", "commit", OVNI_GIT_COMMIT, "part", "thread", "tid", t->tid,
				 "pid", PID, "loom", "vm", "app_id", 1, "weft", "version", WEFT_VERSION,
				 "index_after", after);
	assert_non_null(want);
	if (!json_equal(got, want)) {
		fprintf(stderr, "stream.json at ovni_thread_init:\n%s\n", t->json_at_init);
		fail();
	}
	json_decref(got);
	json_decref(want);
}

static void test_json_at_thread_init(void **st)
{
	(void) st;
	char *tmp = rt_test_mkdtemp();
	char *trace = rt_test_path("%s/trace", tmp);
	struct job j = {.tracedir = trace, .nthreads = 1};
	j.th[0].tid = 6;
	run_job(&j);
	check_initial_json(&j.th[0]);
	free(trace);
	rt_test_rm_rf(tmp);
	free(tmp);
}

static void test_json_at_thread_init_tmpdir(void **st)
{
	(void) st;
	char *tmp = rt_test_mkdtemp();
	char *scratch = rt_test_path("%s/scratch", tmp);
	char *trace = rt_test_path("%s/trace", tmp);
	struct job j = {.tracedir = trace, .tmpdir = scratch, .nthreads = 1};
	j.th[0].tid = 7;
	run_job(&j);
	check_initial_json(&j.th[0]);
	assert_true(j.th[0].tmp_json);
	free(scratch);
	free(trace);
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
		cmocka_unit_test(test_tmpdir_not_empty),
		cmocka_unit_test(test_tmpdir_other_fs),
		cmocka_unit_test(test_tmpdir_rerun),
		cmocka_unit_test(test_tmpdir_rerun_link),
		cmocka_unit_test(test_tmpdir_rerun_dir_link),
		cmocka_unit_test(test_tmpdir_rerun_other_fs),
		cmocka_unit_test(test_json_at_thread_init),
		cmocka_unit_test(test_json_at_thread_init_tmpdir),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
