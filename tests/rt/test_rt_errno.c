/* SPDX-License-Identifier: MIT */
/*
 * test_rt_errno - a successful call leaves errno as it found it. errno is
 * set to a sentinel before every call of a typical sequence that uses all
 * 35 functions of the API, and must still be the sentinel after it. The
 * sequence provokes what used to leak: directories that already exist
 * (EEXIST from mkdir), a small buffer (automatic flushes), and with
 * OVNI_TMPDIR temporary directories that cannot be removed because other
 * processes' files are in them (ENOTEMPTY from rmdir).
 * Each case is a process of its own (rt_test_in_proc).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "ovni.h"
#include "rt_test.h"

#define PID 2200
#define TID 2201
#define SENTINEL 12345
#define NFUNCS 35
#define MAXCALLED 128

static const char *const api[NFUNCS] = {
	"ovni_version_check_str", "ovni_version_get",      "ovni_proc_init",        "ovni_proc_set_rank",
	"ovni_proc_fini",         "ovni_thread_init",      "ovni_thread_require",   "ovni_thread_free",
	"ovni_thread_isready",    "ovni_ev_set_mcv",       "ovni_ev_get_clock",     "ovni_ev_set_clock",
	"ovni_clock_now",         "ovni_payload_add",      "ovni_ev_size",          "ovni_payload_size",
	"ovni_ev_emit",           "ovni_ev_jumbo_emit",    "ovni_flush",            "ovni_add_cpu",
	"ovni_attr_has",          "ovni_attr_set_double",  "ovni_attr_set_boolean", "ovni_attr_set_str",
	"ovni_attr_set_json",     "ovni_attr_get_double",  "ovni_attr_get_boolean", "ovni_attr_get_str",
	"ovni_attr_get_json",     "ovni_attr_flush",       "ovni_mark_type",        "ovni_mark_label",
	"ovni_mark_push",         "ovni_mark_pop",         "ovni_mark_set",
};

struct job {
	const char *tracedir;
	const char *tmpdir; /* or NULL */
	int ncalls;
	int ncalled;
	char called[MAXCALLED][32]; /* the functions called (once each) */
	int nbad;
	char bad[2048]; /* "call: errno N" lines */
};

static struct job *cur;

/* Records a call (the name of the ovni_ function in its text) and whether
 * errno survived it. */
static void record(const char *text, int err)
{
	cur->ncalls++;
	char name[sizeof cur->called[0]];
	const char *f = strstr(text, "ovni_");
	if (f == NULL)
		f = text;
	size_t n = strspn(f, "abcdefghijklmnopqrstuvwxyz_");
	if (n >= sizeof name)
		n = sizeof name - 1;
	memcpy(name, f, n);
	name[n] = '\0';
	int known = 0;
	for (int i = 0; i < cur->ncalled && !known; i++)
		known = strcmp(cur->called[i], name) == 0;
	if (!known && cur->ncalled < MAXCALLED)
		memcpy(cur->called[cur->ncalled++], name, sizeof name);
	if (err != SENTINEL) {
		cur->nbad++;
		size_t used = strlen(cur->bad);
		snprintf(cur->bad + used, sizeof cur->bad - used, "%s: errno %d\n", text, err);
	}
}

#define KEEPS(call)                              \
	do {                                     \
		errno = SENTINEL;                \
		call;                            \
		record(#call, errno);            \
	} while (0)

static void thread_body(void *p)
{
	(void) p;
	const char *v, *c;
	KEEPS(ovni_thread_init(TID));
	KEEPS(ovni_thread_isready());
	KEEPS(ovni_thread_require("nosv", "2.7.0"));
	KEEPS(ovni_thread_require("nosv", "2.8.0"));
	KEEPS(ovni_thread_require("ovni", "1.1.0"));
	KEEPS(ovni_add_cpu(0, 0));
	KEEPS(ovni_add_cpu(1, 1));
	KEEPS(ovni_version_get(&v, &c));

	for (int i = 0; i < 100; i++) {
		struct ovni_ev ev = {0};
		uint64_t now = 0;
		uint8_t buf[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
		KEEPS(ovni_ev_set_mcv(&ev, "OHp"));
		KEEPS(now = ovni_clock_now());
		KEEPS(ovni_ev_set_clock(&ev, now));
		KEEPS((void) ovni_ev_get_clock(&ev));
		KEEPS(ovni_payload_add(&ev, buf, 2 + i % 15));
		KEEPS((void) ovni_ev_size(&ev));
		KEEPS((void) ovni_payload_size(&ev));
		KEEPS(ovni_ev_emit(&ev)); /* 256-byte buffer: automatic flushes */
		if (i % 10 == 0) {
			KEEPS(ovni_ev_jumbo_emit(&ev, buf, sizeof buf));
			KEEPS(ovni_flush());
		}
	}

	KEEPS(ovni_attr_set_double("app.x", 1.5));
	KEEPS(ovni_attr_set_double("app.n", 42));
	KEEPS(ovni_attr_set_boolean("app.b", 1));
	KEEPS(ovni_attr_set_str("app.s", "hello"));
	KEEPS(ovni_attr_set_json("app.j", "{\"a\": [1, 2.5, null]}"));
	KEEPS((void) ovni_attr_has("app.x"));
	KEEPS((void) ovni_attr_has("app.nothere"));
	KEEPS((void) ovni_attr_get_double("app.x"));
	KEEPS((void) ovni_attr_get_boolean("app.b"));
	KEEPS((void) ovni_attr_get_str("app.s"));
	char *j = NULL;
	KEEPS(j = ovni_attr_get_json("app.j"));
	free(j);
	KEEPS(ovni_attr_flush());

	KEEPS(ovni_mark_type(1, OVNI_MARK_STACK, "Phase"));
	KEEPS(ovni_mark_type(1, OVNI_MARK_STACK, "Phase"));
	KEEPS(ovni_mark_label(1, 7, "seven"));
	for (int i = 0; i < 20; i++) {
		KEEPS(ovni_mark_push(1, 7));
		KEEPS(ovni_mark_set(1, 7));
		KEEPS(ovni_mark_pop(1, 7));
	}
	KEEPS(ovni_flush());
	KEEPS(ovni_thread_free());
	KEEPS(ovni_thread_isready());
}

static void proc_main(void *p)
{
	struct job *j = p;
	cur = j;
	setenv("WEFT_BUFSIZE", "256", 1);
	setenv("OVNI_TRACEDIR", j->tracedir, 1);
	if (j->tmpdir != NULL)
		setenv("OVNI_TMPDIR", j->tmpdir, 1);
	else
		unsetenv("OVNI_TMPDIR");
	KEEPS(ovni_version_check());
	KEEPS(ovni_proc_init(1, "vm", PID));
	KEEPS(ovni_proc_set_rank(0, 1));
	rt_test_in_thread(thread_body, NULL);
	KEEPS(ovni_proc_fini());
}

static void mkdirs(const char *path)
{
	char *cmd = rt_test_path("mkdir -p '%s'", path);
	assert_int_equal(system(cmd), 0);
	free(cmd);
}

static void check_job(struct job *j)
{
	assert_true(rt_test_in_proc(proc_main, j, sizeof *j));
	if (j->nbad != 0)
		fprintf(stderr, "errno changed by:\n%s", j->bad);
	assert_int_equal(j->nbad, 0);
	/* Every function of the API was called. */
	for (int f = 0; f < NFUNCS; f++) {
		int found = 0;
		for (int i = 0; i < j->ncalled && !found; i++)
			found = strcmp(j->called[i], api[f]) == 0 || (strcmp(api[f], "ovni_version_check_str") == 0
								      && strcmp(j->called[i], "ovni_version_check") == 0);
		if (!found)
			fprintf(stderr, "%s was not called\n", api[f]);
		assert_true(found);
	}
	/* 4 in the main thread, 906 in the other. */
	assert_int_equal(j->ncalls, 910);
}

static void test_errno_kept(void **st)
{
	(void) st;
	char *trace = rt_test_path("%s/trace", rt_test_dir);
	/* Directories that exist already: mkdir says EEXIST. */
	char *td = rt_test_path("%s/loom.vm/proc.%d/thread.%d", trace, PID, TID);
	mkdirs(td);
	struct job j = {.tracedir = trace};
	check_job(&j);
	char *obs = rt_test_path("%s/stream.obs", td);
	assert_true(rt_test_file_size(obs) > 1000);
	free(obs);
	free(td);
	free(trace);
}

static void test_errno_kept_tmpdir(void **st)
{
	(void) st;
	char *trace = rt_test_path("%s/trace2", rt_test_dir);
	char *tmp = rt_test_path("%s/scratch", rt_test_dir);
	/* Another process's directory in the loom and a file in the
	 * temporary dir: rmdir says ENOTEMPTY for both. */
	char *other = rt_test_path("%s/loom.vm/proc.%d", tmp, PID + 50);
	mkdirs(other);
	char *tmp_td = rt_test_path("%s/loom.vm/proc.%d/thread.%d", tmp, PID, TID);
	mkdirs(tmp_td);
	char *file = rt_test_path("%s/other.txt", tmp);
	FILE *f = fopen(file, "w");
	assert_non_null(f);
	fclose(f);
	struct job j = {.tracedir = trace, .tmpdir = tmp};
	check_job(&j);
	char *obs = rt_test_path("%s/loom.vm/proc.%d/thread.%d/stream.obs", trace, PID, TID);
	assert_true(rt_test_file_size(obs) > 1000);
	assert_true(rt_test_exists(other));
	assert_true(rt_test_exists(file));
	free(obs);
	free(file);
	free(tmp_td);
	free(other);
	free(tmp);
	free(trace);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_errno_kept),
		cmocka_unit_test(test_errno_kept_tmpdir),
	};
	return cmocka_run_group_tests(tests, rt_test_group_setup, rt_test_group_teardown);
}
