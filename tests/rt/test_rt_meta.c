/* SPDX-License-Identifier: MIT */
/*
 * test_rt_meta - stream.json beyond the basics, as in the reference's
 * conformance cases v3/attrs and v3/marks: attributes under dotted keys
 * (every type, nesting, overwrite, read back), ovni_attr_flush rewriting
 * the file mid-run (without finished), marks (types, labels), required
 * models in call order after "ovni", rank/nranks, and loom_cpus only in
 * the stream of the thread that added CPUs.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <jansson.h>

#include "ovni.h"
#include "rt_test.h"
#include "weft_version.h"

#define PID 900


struct body {
	int tid;
	int add_cpus;
	char *json_path;
	char *after_attr_flush;
	/* values read back through the API */
	int has_name, has_missing, has_obj_b;
	double pi, int42;
	int flag_true, flag_false;
	char *name, *obj_json, *int_json;
};

static void body(void *p)
{
	struct body *b = p;
	ovni_thread_init(b->tid);
	ovni_thread_require("nosv", "2.7.0");
	ovni_thread_require("mymodel", "1.2.3");
	ovni_thread_require("ovni", "1.1.0");
	ovni_thread_require("nosv", "2.7.0");
	if (b->add_cpus) {
		ovni_add_cpu(0, 0);
		ovni_add_cpu(1, 4);
	}
	ovni_attr_set_str("myapp.name", "first");
	ovni_attr_set_str("myapp.name", "hello world");
	ovni_attr_set_str("myapp.unicode", "caf\xc3\xa9 \"q\" \\ tab\t");
	ovni_attr_set_double("myapp.pi", 3.14159265358979311600);
	ovni_attr_set_double("myapp.big", 1e300);
	ovni_attr_set_double("myapp.int", 42);
	ovni_attr_set_double("myapp.neg", -0.5);
	ovni_attr_set_boolean("myapp.flag_true", 7);
	ovni_attr_set_boolean("myapp.flag_false", 0);
	ovni_attr_set_json("myapp.obj", "{\"a\": [1, 2.5, \"x\", null, true]}");
	ovni_attr_set_json("myapp.obj.b.c", "{}");
	ovni_attr_set_json("myapp.arr", "[]");
	ovni_attr_set_json("myapp.null", "null");
	ovni_attr_set_boolean("nosv.can_breakdown", 0);
	ovni_attr_set_str("nosv.lib_version", "2.7.0");

	ovni_mark_type(1, 0, "Progress");
	ovni_mark_type(2, OVNI_MARK_STACK, "Colors");
	ovni_mark_type(2, OVNI_MARK_STACK, "Colors"); /* same definition again */
	ovni_mark_label(2, 1, "Blue");
	ovni_mark_label(2, 3, "Red");
	ovni_mark_type(99, OVNI_MARK_STACK, "Last type");
	ovni_mark_label(99, 1000000000000LL, "Big value");
	ovni_mark_push(2, 1);
	ovni_mark_pop(2, 1);
	ovni_mark_set(1, 5);

	b->has_name = ovni_attr_has("myapp.name");
	b->has_missing = ovni_attr_has("myapp.nothere") + ovni_attr_has("myapp.name.deeper");
	b->has_obj_b = ovni_attr_has("myapp.obj.b");
	b->pi = ovni_attr_get_double("myapp.pi");
	b->int42 = ovni_attr_get_double("myapp.int");
	b->flag_true = ovni_attr_get_boolean("myapp.flag_true");
	b->flag_false = ovni_attr_get_boolean("myapp.flag_false");
	b->name = strdup(ovni_attr_get_str("myapp.name"));
	b->obj_json = ovni_attr_get_json("myapp.obj.a");
	b->int_json = ovni_attr_get_json("myapp.int");

	ovni_attr_flush();
	b->after_attr_flush = rt_test_read(b->json_path, NULL);
	ovni_attr_set_str("myapp.late", "after flush");
	ovni_thread_free();
}

#define WANT_ATTRS                                                                          \
	"{"                                                                                 \
	"  \"myapp\": {"                                                                    \
	"    \"name\": \"hello world\","                                                    \
	"    \"unicode\": \"caf\xc3\xa9 \\\"q\\\" \\\\ tab\\t\","                                   \
	"    \"pi\": 3.1415926535897931,"                                                    \
	"    \"big\": 1e300,"                                                                \
	"    \"int\": 42,"                                                                   \
	"    \"neg\": -0.5,"                                                                 \
	"    \"flag_true\": true,"                                                           \
	"    \"flag_false\": false,"                                                         \
	"    \"obj\": {\"a\": [1, 2.5, \"x\", null, true], \"b\": {\"c\": {}}},"                 \
	"    \"arr\": [],"                                                                   \
	"    \"null\": null%s"                                                               \
	"  },"                                                                              \
	"  \"nosv\": {\"can_breakdown\": false, \"lib_version\": \"2.7.0\"}"                 \
	"}"

static const char *want_marks = "{"
				"  \"1\": {\"title\": \"Progress\", \"chan_type\": \"single\"},"
				"  \"2\": {\"title\": \"Colors\", \"chan_type\": \"stack\","
				"          \"labels\": {\"1\": \"Blue\", \"3\": \"Red\"}},"
				"  \"99\": {\"title\": \"Last type\", \"chan_type\": \"stack\","
				"           \"labels\": {\"1000000000000\": \"Big value\"}}"
				"}";

static json_t *load_json(const char *text)
{
	json_error_t err;
	json_t *j = json_loads(text, JSON_DECODE_ANY, &err);
	if (j == NULL)
		fprintf(stderr, "bad JSON (%s): %s\n", err.text, text);
	assert_non_null(j);
	return j;
}

static void assert_json_eq(json_t *got, const char *want_text)
{
	json_t *want = load_json(want_text);
	if (!json_equal(got, want)) {
		char *g = json_dumps(got, JSON_INDENT(2) | JSON_ENCODE_ANY);
		char *w = json_dumps(want, JSON_INDENT(2) | JSON_ENCODE_ANY);
		fprintf(stderr, "got:\n%s\nwant:\n%s\n", g, w);
		free(g);
		free(w);
		fail();
	}
	json_decref(want);
}

/* Checks a stream.json text; finished selects the final form. */
static void check_doc(const char *text, int tid, int with_cpus, int finished)
{
	json_t *doc = load_json(text);
	char *want_ovni = rt_test_path(
		"{\"lib\": {\"version\": \"1.14.0\", \"commit\": \"%s\"}, \"part\": \"thread\", \"tid\": %d,"
		" \"pid\": %d, \"loom\": \"vm\", \"app_id\": 7,"
		" \"require\": {\"ovni\": \"1.1.0\", \"nosv\": \"2.7.0\", \"mymodel\": \"1.2.3\"},"
		" \"rank\": 1, \"nranks\": 2 %s %s}",
		OVNI_GIT_COMMIT, tid, PID,
		with_cpus ? ", \"loom_cpus\": [{\"index\": 0, \"phyid\": 0}, {\"index\": 1, \"phyid\": 4}]" : "",
		finished ? ", \"finished\": 1" : "");
	json_t *ovni = json_object_get(doc, "ovni");
	json_t *marks = json_incref(json_object_get(ovni, "mark"));
	json_object_del(ovni, "mark");
	assert_json_eq(ovni, want_ovni);
	assert_json_eq(marks, want_marks);
	char *want_a = rt_test_path(WANT_ATTRS, finished ? ", \"late\": \"after flush\"" : "");
	json_t *attrs = json_pack("{s:O, s:O}", "myapp", json_object_get(doc, "myapp"), "nosv",
				  json_object_get(doc, "nosv"));
	assert_json_eq(attrs, want_a);
	assert_int_equal(json_integer_value(json_object_get(doc, "version")), 3);
	assert_string_equal(json_string_value(json_object_get(json_object_get(doc, "weft"), "version")),
			    WEFT_VERSION);
	/* Nothing else at the top level. */
	assert_int_equal(json_object_size(doc), 5);
	json_decref(attrs);
	json_decref(marks);
	json_decref(doc);
	free(want_a);
	free(want_ovni);
}

static void run(int tid, int add_cpus)
{
	struct body b = {.tid = tid, .add_cpus = add_cpus};
	b.json_path = rt_test_path("%s/loom.vm/proc.%d/thread.%d/stream.json", rt_test_dir, PID, tid);
	rt_test_in_thread(body, &b);

	assert_true(b.has_name);
	assert_int_equal(b.has_missing, 0);
	assert_true(b.has_obj_b);
	assert_true(b.pi == 3.14159265358979311600);
	assert_true(b.int42 == 42.0);
	assert_int_equal(b.flag_true, 1);
	assert_int_equal(b.flag_false, 0);
	assert_string_equal(b.name, "hello world");
	assert_string_equal(b.obj_json, "[1,2.5,\"x\",null,true]");
	assert_string_equal(b.int_json, "42");

	check_doc(b.after_attr_flush, tid, add_cpus, 0);
	char *final = rt_test_read(b.json_path, NULL);
	check_doc(final, tid, add_cpus, 1);
	free(final);
	free(b.after_attr_flush);
	free(b.json_path);
	free(b.name);
	free(b.obj_json);
	free(b.int_json);
}

static void test_meta(void **st)
{
	(void) st;
	ovni_proc_init(7, "vm", PID);
	ovni_proc_set_rank(1, 2);
	run(901, 1);
	run(902, 0);
	ovni_proc_fini();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_meta),
	};
	return cmocka_run_group_tests(tests, rt_test_group_setup, rt_test_group_teardown);
}
