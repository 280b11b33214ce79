/* SPDX-License-Identifier: MIT */
/*
 * test_rt_metawrite - how stream.json is written (docs/runtime.md, "The
 * write path's cost"): in place (the same inode, no temporary file left)
 * while the document is at most 4096 bytes and does not get shorter; a
 * document that gets shorter or outgrows a page replaces the file whole
 * (a new inode) and leaves exactly that document, no tail of the older
 * one; after the exit-time crash handler (WEFT_CRASH=flush) wrote its own,
 * longer, document, a later ovni_thread_free replaces it whole.
 * Each case is a process of its own (rt_test_in_proc).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <jansson.h>
#include <sys/stat.h>

#include "ovni.h"
#include "rt_test.h"

#define PID 3300
#define NSTAGES 8

struct job {
	char json[4096];
	unsigned long long ino[NSTAGES];
	long long size[NSTAGES];
	int tmp_left[NSTAGES];
};

static void note(struct job *j, int stage)
{
	struct stat st;
	if (stat(j->json, &st) == 0) {
		j->ino[stage] = (unsigned long long) st.st_ino;
		j->size[stage] = (long long) st.st_size;
	}
	char tmp[4200];
	snprintf(tmp, sizeof tmp, "%s.tmp", j->json);
	j->tmp_left[stage] = rt_test_exists(tmp);
}

static json_t *load(const char *path)
{
	json_error_t je;
	json_t *doc = json_load_file(path, 0, &je);
	if (doc == NULL)
		fail_msg("'%s' is not JSON: %s (line %d)", path, je.text, je.line);
	return doc;
}

static void set_json_path(struct job *j, int tid)
{
	snprintf(j->json, sizeof j->json, "%s/loom.vm/proc.%d/thread.%d/stream.json", rt_test_dir, PID, tid);
}

static void in_place_body(void *p)
{
	struct job *j = p;
	ovni_proc_init(1, "vm", PID);
	ovni_thread_init(PID + 1);
	note(j, 0);
	ovni_thread_require("nosv", "2.0.0");
	note(j, 1);
	ovni_add_cpu(0, 0);
	note(j, 2);
	ovni_mark_type(1, OVNI_MARK_STACK, "Phase");
	note(j, 3);
	ovni_thread_free();
	note(j, 4);
	ovni_proc_fini();
}

static void test_in_place(void **st)
{
	(void) st;
	struct job j = {0};
	set_json_path(&j, PID + 1);
	assert_true(rt_test_in_proc(in_place_body, &j, sizeof j));
	for (int s = 0; s <= 4; s++) {
		assert_int_not_equal(j.ino[s], 0);
		assert_int_equal(j.ino[s], j.ino[0]); /* never renamed over */
		assert_int_equal(j.tmp_left[s], 0);
		if (s > 0)
			assert_true(j.size[s] > j.size[s - 1]);
	}
	json_t *doc = load(j.json);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(doc, "ovni"), "finished")), 1);
	assert_string_equal(json_string_value(
				    json_object_get(json_object_get(json_object_get(doc, "ovni"), "require"), "nosv")),
			    "2.0.0");
	assert_int_equal(json_array_size(json_object_get(json_object_get(doc, "ovni"), "loom_cpus")), 1);
	assert_string_equal(json_string_value(json_object_get(
				    json_object_get(json_object_get(json_object_get(doc, "ovni"), "mark"), "1"), "title")),
			    "Phase");
	json_decref(doc);
	/* The file is exactly the document: nothing after it. */
	size_t len = 0;
	char *text = rt_test_read(j.json, &len);
	assert_non_null(text);
	assert_int_equal((long long) len, j.size[4]);
	assert_int_equal(text[len - 1], '}');
	free(text);
}

static void shrink_body(void *p)
{
	struct job *j = p;
	char big[6000];
	memset(big, 'b', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	ovni_proc_init(1, "vm", PID);
	ovni_thread_init(PID + 2);
	ovni_attr_set_str("app.note", "a long note, longer than the one that replaces it");
	ovni_attr_flush();
	note(j, 0);
	ovni_attr_set_str("app.note", "short");
	ovni_attr_flush(); /* shorter: replaced whole */
	note(j, 1);
	ovni_attr_set_str("app.note", big);
	ovni_attr_flush(); /* more than a page: replaced whole */
	note(j, 2);
	ovni_attr_set_str("app.note", big);
	ovni_attr_flush(); /* still more than a page */
	note(j, 3);
	ovni_attr_set_str("app.note", "end");
	ovni_thread_free();
	note(j, 4);
	ovni_proc_fini();
}

static void test_shorter_or_larger_replaced_whole(void **st)
{
	(void) st;
	struct job j = {0};
	set_json_path(&j, PID + 2);
	assert_true(rt_test_in_proc(shrink_body, &j, sizeof j));
	assert_true(j.size[1] < j.size[0]);
	assert_int_not_equal(j.ino[1], j.ino[0]);
	assert_true(j.size[2] > 6000);
	assert_int_not_equal(j.ino[2], j.ino[1]);
	assert_int_not_equal(j.ino[3], j.ino[2]);
	assert_true(j.size[4] < j.size[3]);
	for (int s = 0; s <= 4; s++)
		assert_int_equal(j.tmp_left[s], 0);
	json_t *doc = load(j.json);
	assert_string_equal(json_string_value(json_object_get(json_object_get(doc, "app"), "note")), "end");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(doc, "ovni"), "finished")), 1);
	json_decref(doc);
	size_t len = 0;
	char *text = rt_test_read(j.json, &len);
	assert_non_null(text);
	assert_int_equal((long long) len, j.size[4]);
	free(text);
}

static struct job *exit_job;

/* Registered before ovni_proc_init: runs after libovni's exit handler. */
static void late_free(void)
{
	note(exit_job, 1);
	ovni_thread_free();
	note(exit_job, 2);
	/* _exit: leave now, with what the parent checks in shared memory. */
	_exit(0);
}

static void exit_body(void *p)
{
	struct job *j = p;
	exit_job = j;
	if (atexit(late_free) != 0)
		_exit(5);
	setenv("WEFT_CRASH", "flush", 1);
	ovni_proc_init(1, "vm", PID);
	ovni_thread_init(PID + 3);
	ovni_thread_require("nosv", "2.0.0");
	note(j, 0);
	exit(0); /* without ovni_proc_fini */
}

static void test_free_after_exit_handler(void **st)
{
	(void) st;
	struct job j = {0};
	set_json_path(&j, PID + 3);
	assert_true(rt_test_in_proc(exit_body, &j, sizeof j));
	/* The exit handler's document (weft.cut) replaced the file, then
	 * ovni_thread_free's shorter one replaced it whole. */
	assert_int_not_equal(j.ino[1], j.ino[0]);
	assert_true(j.size[1] > j.size[0]);
	assert_int_not_equal(j.ino[2], j.ino[1]);
	json_t *doc = load(j.json);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(doc, "ovni"), "finished")), 1);
	json_decref(doc);
	size_t len = 0;
	char *text = rt_test_read(j.json, &len);
	assert_non_null(text);
	assert_int_equal((long long) len, j.size[2]);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_in_place),
		cmocka_unit_test(test_shorter_or_larger_replaced_whole),
		cmocka_unit_test(test_free_after_exit_handler),
	};
	return cmocka_run_group_tests(tests, rt_test_group_setup, rt_test_group_teardown);
}
