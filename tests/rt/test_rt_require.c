/* SPDX-License-Identifier: MIT */
/*
 * test_rt_require - ovni_thread_require called again for a model replaces
 * the version recorded, "ovni" included (the last call wins, as in the
 * reference; a model keeps the place of its first call, "ovni" first).
 * ovni_attr_flush and ovni_thread_free write what is recorded then.
 * The emulator ($WEFT_BIN emu) refuses a trace whose stream requires an
 * ovni model version it does not provide, naming the stream, and accepts
 * the same trace requiring the version it provides.
 * Each case is a process of its own (rt_test_in_proc).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <jansson.h>

#include "ovni.h"
#include "rt_test.h"

#define PID 3100
#define JSON_MAX 8192

struct job {
	const char *tracedir;
	int tid;
	const char *ovni_version; /* emu cases: required with ovni_thread_require, or NULL */
	char after_attr_flush[JSON_MAX];
	char after_require[JSON_MAX]; /* stream.json right after a require, no flush */
};

static void requires_body(void *p)
{
	struct job *j = p;
	char *json = rt_test_path("%s/loom.vm/proc.%d/thread.%d/stream.json", j->tracedir, PID, j->tid);
	ovni_thread_init(j->tid);
	ovni_thread_require("nosv", "2.0.0");
	ovni_thread_require("mymodel", "1.0.0");
	/* written at once (a run killed now keeps it) */
	char *now = rt_test_read(json, NULL);
	if (now != NULL)
		snprintf(j->after_require, sizeof j->after_require, "%s", now);
	free(now);
	ovni_thread_require("nosv", "2.1.0");
	ovni_thread_require("ovni", "1.0.0");
	ovni_attr_flush();
	char *text = rt_test_read(json, NULL);
	if (text != NULL)
		snprintf(j->after_attr_flush, sizeof j->after_attr_flush, "%s", text);
	free(text);
	ovni_thread_require("ovni", "666.66.6");
	ovni_thread_require("mymodel", "1.2.3");
	ovni_thread_free();
	free(json);
}

/* A complete little trace: CPU 0, the thread runs on it and ends. */
static void emu_body(void *p)
{
	struct job *j = p;
	ovni_thread_init(j->tid);
	if (j->ovni_version != NULL)
		ovni_thread_require("ovni", j->ovni_version);
	ovni_add_cpu(0, 0);
	struct ovni_ev ev = {0};
	ovni_ev_set_mcv(&ev, "OHx");
	ovni_ev_set_clock(&ev, ovni_clock_now());
	int32_t cpu = 0, creator = -1;
	uint64_t tag = 0;
	ovni_payload_add(&ev, (const uint8_t *) &cpu, sizeof cpu);
	ovni_payload_add(&ev, (const uint8_t *) &creator, sizeof creator);
	ovni_payload_add(&ev, (const uint8_t *) &tag, sizeof tag);
	ovni_ev_emit(&ev);
	struct ovni_ev end = {0};
	ovni_ev_set_mcv(&end, "OHe");
	ovni_ev_set_clock(&end, ovni_clock_now());
	ovni_ev_emit(&end);
	ovni_flush();
	ovni_thread_free();
}

static void (*job_body)(void *);

static void proc_main(void *p)
{
	struct job *j = p;
	setenv("OVNI_TRACEDIR", j->tracedir, 1);
	ovni_proc_init(1, "vm", PID);
	rt_test_in_thread(job_body, j);
	ovni_proc_fini();
}

static void run_job(void (*body)(void *), struct job *j)
{
	job_body = body;
	assert_true(rt_test_in_proc(proc_main, j, sizeof *j));
}

/* ovni.require of a stream.json text must be exactly the pairs of want,
 * in that order. */
static void check_require(const char *text, const char *const want[][2], size_t n)
{
	json_error_t err;
	json_t *doc = json_loads(text, 0, &err);
	if (doc == NULL)
		fprintf(stderr, "bad stream.json (%s):\n%s\n", err.text, text);
	assert_non_null(doc);
	json_t *req = json_object_get(json_object_get(doc, "ovni"), "require");
	assert_true(json_is_object(req));
	assert_int_equal(json_object_size(req), n);
	size_t i = 0;
	const char *key;
	json_t *value;
	json_object_foreach(req, key, value)
	{
		assert_true(i < n);
		assert_string_equal(key, want[i][0]);
		assert_string_equal(json_string_value(value), want[i][1]);
		i++;
	}
	json_decref(doc);
}

static void test_require_last_wins(void **st)
{
	(void) st;
	struct job j = {.tracedir = rt_test_dir, .tid = PID + 1};
	run_job(requires_body, &j);

	/* ovni's own version is added when the metadata is written */
	static const char *const at_require[][2] = {{"ovni", "1.1.0"}, {"nosv", "2.0.0"}, {"mymodel", "1.0.0"}};
	check_require(j.after_require, at_require, 3);
	static const char *const at_flush[][2] = {{"ovni", "1.0.0"}, {"nosv", "2.1.0"}, {"mymodel", "1.0.0"}};
	check_require(j.after_attr_flush, at_flush, 3);

	char *json = rt_test_path("%s/loom.vm/proc.%d/thread.%d/stream.json", rt_test_dir, PID, j.tid);
	char *text = rt_test_read(json, NULL);
	assert_non_null(text);
	static const char *const at_free[][2] = {{"ovni", "666.66.6"}, {"nosv", "2.1.0"}, {"mymodel", "1.2.3"}};
	check_require(text, at_free, 3);
	/* As the reference writes it (v3/suite-ovni-require-bad-version). */
	assert_non_null(strstr(text, "        \"require\": {\n            \"ovni\": \"666.66.6\",\n"));
	free(text);
	free(json);
}

/* Runs "$WEFT_BIN emu -q -o OUT TRACE"; returns its exit status (-1 if it
 * did not exit) and its stderr in *err. */
static int run_emu(const char *trace, const char *out, char **err)
{
	const char *bin = getenv("WEFT_BIN");
	char *errfile = rt_test_path("%s.stderr", out);
	char *cmd = rt_test_path("'%s' emu -q -o '%s' '%s' >/dev/null 2>'%s'", bin, out, trace, errfile);
	int status = system(cmd);
	*err = rt_test_read(errfile, NULL);
	free(cmd);
	free(errfile);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_emu_refuses_required_ovni_version(void **st)
{
	(void) st;
	const char *bin = getenv("WEFT_BIN");
	if (bin == NULL || access(bin, X_OK) != 0) {
		fprintf(stderr, "WEFT_BIN ('%s') is not an executable: skipped\n", bin != NULL ? bin : "(unset)");
		skip();
	}
	char *tmp = rt_test_mkdtemp();

	/* The version the emulator provides (and the last call wins). */
	char *good = rt_test_path("%s/good", tmp);
	char *good_out = rt_test_path("%s/good-out", tmp);
	struct job g = {.tracedir = good, .tid = PID + 2, .ovni_version = "1.1.0"};
	run_job(emu_body, &g);
	char *err = NULL;
	int rc = run_emu(good, good_out, &err);
	if (rc != 0)
		fprintf(stderr, "weft emu on %s: exit %d, stderr:\n%s\n", good, rc, err != NULL ? err : "");
	assert_int_equal(rc, 0);
	free(err);

	/* One it does not provide. */
	char *bad = rt_test_path("%s/bad", tmp);
	char *bad_out = rt_test_path("%s/bad-out", tmp);
	struct job b = {.tracedir = bad, .tid = PID + 3, .ovni_version = "666.66.6"};
	run_job(emu_body, &b);
	rc = run_emu(bad, bad_out, &err);
	assert_int_equal(rc, 1);
	assert_non_null(err);
	char *stream = rt_test_path("loom.vm/proc.%d/thread.%d", PID, b.tid);
	if (strstr(err, stream) == NULL || strstr(err, "666.66.6") == NULL) {
		fprintf(stderr, "weft emu stderr does not name the stream %s and the version:\n%s\n", stream, err);
		fail();
	}
	free(stream);
	free(err);
	free(bad);
	free(bad_out);
	free(good);
	free(good_out);
	rt_test_rm_rf(tmp);
	free(tmp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_require_last_wins),
		cmocka_unit_test(test_emu_refuses_required_ovni_version),
	};
	return cmocka_run_group_tests(tests, rt_test_group_setup, rt_test_group_teardown);
}
