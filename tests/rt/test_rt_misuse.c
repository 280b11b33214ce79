/* SPDX-License-Identifier: MIT */
/*
 * test_rt_misuse - every misuse of the API (and a failed write) stops the
 * program with "libovni: <function>: <reason>" on stderr and SIGABRT.
 * Each case runs in a forked child.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <sys/resource.h>

#include "ovni.h"
#include "rt_test.h"


/* Runs body in a child: it must die by SIGABRT printing exactly want. */
static void expect_abort(void (*body)(void *), void *arg, const char *want)
{
	char *err = NULL;
	int status = rt_test_in_child(body, arg, &err);
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT) {
		fprintf(stderr, "child did not abort (status 0x%x), stderr: %s\n", status, err);
		fail();
	}
	char *want_nl = rt_test_path("%s\n", want);
	assert_string_equal(err, want_nl);
	free(want_nl);
	free(err);
}

static void init_both(int tid)
{
	ovni_proc_init(1, "vm", 100);
	ovni_thread_init(tid);
}

static void emit_before_init(void *a)
{
	(void) a;
	ovni_proc_init(1, "vm", 100);
	struct ovni_ev ev = {0};
	ovni_ev_set_mcv(&ev, "OHe");
	ovni_ev_set_clock(&ev, ovni_clock_now());
	ovni_ev_emit(&ev);
}

static void test_emit_before_init(void **s)
{
	(void) s;
	expect_abort(emit_before_init, NULL,
		     "libovni: ovni_ev_emit: the thread is not initialized (call ovni_thread_init first)");
}

static void flush_before_init(void *a)
{
	(void) a;
	ovni_flush();
}

static void test_flush_before_init(void **s)
{
	(void) s;
	expect_abort(flush_before_init, NULL,
		     "libovni: ovni_flush: the thread is not initialized (call ovni_thread_init first)");
}

static void emit_after_free(void *a)
{
	(void) a;
	init_both(101);
	ovni_thread_free();
	ovni_mark_push(1, 2);
}

static void test_emit_after_free(void **s)
{
	(void) s;
	expect_abort(emit_after_free, NULL, "libovni: ovni_mark_push: the thread was already finished by ovni_thread_free");
}

static void second_init(void *a)
{
	(void) a;
	init_both(102);
	ovni_thread_init(102);
}

static void test_second_init(void **s)
{
	(void) s;
	expect_abort(second_init, NULL, "libovni: ovni_thread_init: the thread is already initialized");
}

static void init_finished(void *a)
{
	(void) a;
	init_both(103);
	ovni_thread_free();
	ovni_thread_init(103);
}

static void test_init_finished(void **s)
{
	(void) s;
	expect_abort(init_finished, NULL,
		     "libovni: ovni_thread_init: the thread was already finished by ovni_thread_free and cannot be "
		     "initialized again");
}

static void negative_cpu(void *a)
{
	(void) a;
	init_both(104);
	ovni_add_cpu(0, 0);
	ovni_add_cpu(-1, 3);
}

static void test_negative_cpu(void **s)
{
	(void) s;
	expect_abort(negative_cpu, NULL, "libovni: ovni_add_cpu: the CPU index -1 is negative");
}

static void payload_too_big(void *a)
{
	(void) a;
	struct ovni_ev ev = {0};
	uint8_t buf[16] = {0};
	ovni_payload_add(&ev, buf, 16);
	ovni_payload_add(&ev, buf, 2);
}

static void test_payload_too_big(void **s)
{
	(void) s;
	expect_abort(payload_too_big, NULL,
		     "libovni: ovni_payload_add: the payload would be 18 bytes, more than the limit of 16 bytes");
}

static void payload_one_byte(void *a)
{
	(void) a;
	struct ovni_ev ev = {0};
	uint8_t b = 7;
	ovni_payload_add(&ev, &b, 1);
}

static void test_payload_one_byte(void **s)
{
	(void) s;
	expect_abort(payload_one_byte, NULL,
		     "libovni: ovni_payload_add: a payload of 1 byte cannot be encoded (payloads are 0 or 2 to 16 "
		     "bytes)");
}

static void bad_model(void *a)
{
	init_both(105);
	ovni_thread_require(a, "1.0.0");
}

static void test_bad_model(void **s)
{
	(void) s;
	expect_abort(bad_model, "Nosv",
		     "libovni: ovni_thread_require: malformed model name 'Nosv' (expected one or more of a-z, 0-9 "
		     "and _)");
	expect_abort(bad_model, "",
		     "libovni: ovni_thread_require: malformed model name '' (expected one or more of a-z, 0-9 and _)");
	expect_abort(bad_model, "no.sv",
		     "libovni: ovni_thread_require: malformed model name 'no.sv' (expected one or more of a-z, 0-9 "
		     "and _)");
}

static void bad_version(void *a)
{
	init_both(106);
	ovni_thread_require("nosv", a);
}

static void test_bad_version(void **s)
{
	(void) s;
	static const char *bad[] = {"1.2", "1.2.3.4", "1.2.x", "", "v1.2.3", "1..3", "1.2.3 "};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char *want = rt_test_path(
			"libovni: ovni_thread_require: malformed version '%s' for model 'nosv' (expected X.Y.Z)",
			bad[i]);
		expect_abort(bad_version, (void *) bad[i], want);
		free(want);
	}
}

static void big_jumbo(void *a)
{
	(void) a;
	setenv("WEFT_BUFSIZE", "256", 1);
	init_both(108);
	static uint8_t data[300];
	struct ovni_ev ev = {0};
	ovni_ev_set_mcv(&ev, "VYc");
	ovni_ev_jumbo_emit(&ev, data, 200); /* fits: 216 + 24 <= 256 */
	ovni_ev_jumbo_emit(&ev, data, 300);
}

static void test_big_jumbo(void **s)
{
	(void) s;
	char *want = rt_test_path("libovni: ovni_ev_jumbo_emit: an event of 316 bytes does not fit in the "
				  "256-byte event buffer of '%s/loom.vm/proc.100/thread.108/stream.obs'",
				  rt_test_dir);
	expect_abort(big_jumbo, NULL, want);
	free(want);
}

static void proc_twice(void *a)
{
	(void) a;
	ovni_proc_init(1, "vm", 100);
	ovni_proc_init(1, "vm", 100);
}

static void test_proc_twice(void **s)
{
	(void) s;
	expect_abort(proc_twice, NULL, "libovni: ovni_proc_init: the process is already initialized");
}

/* A process is initialized once: ovni_proc_init after ovni_proc_fini
 * stops the program at that call (as the reference does). */
static void proc_after_fini(void *a)
{
	(void) a;
	init_both(114);
	ovni_thread_free();
	ovni_proc_fini();
	ovni_proc_init(1, "vm", 100);
	/* Not reached. */
	ovni_thread_init(115);
}

static void test_proc_after_fini(void **s)
{
	(void) s;
	expect_abort(proc_after_fini, NULL,
		     "libovni: ovni_proc_init: the process was already finished by ovni_proc_fini and cannot be "
		     "initialized again");
}

static void thread_after_fini(void *a)
{
	(void) a;
	ovni_proc_init(1, "vm", 100);
	ovni_proc_fini();
	ovni_thread_init(116);
}

static void fini_twice(void *a)
{
	(void) a;
	ovni_proc_init(1, "vm", 100);
	ovni_proc_fini();
	ovni_proc_fini();
}

static void rank_after_fini(void *a)
{
	(void) a;
	ovni_proc_init(1, "vm", 100);
	ovni_proc_fini();
	ovni_proc_set_rank(0, 1);
}

static void test_after_fini(void **s)
{
	(void) s;
	expect_abort(thread_after_fini, NULL,
		     "libovni: ovni_thread_init: the process was already finished by ovni_proc_fini");
	expect_abort(fini_twice, NULL, "libovni: ovni_proc_fini: the process was already finished by ovni_proc_fini");
	expect_abort(rank_after_fini, NULL,
		     "libovni: ovni_proc_set_rank: the process was already finished by ovni_proc_fini");
}

static void thread_before_proc(void *a)
{
	(void) a;
	ovni_thread_init(109);
}

static void test_thread_before_proc(void **s)
{
	(void) s;
	expect_abort(thread_before_proc, NULL,
		     "libovni: ovni_thread_init: the process is not initialized (call ovni_proc_init first)");
}

static void rank_before_proc(void *a)
{
	(void) a;
	ovni_proc_set_rank(0, 1);
}

static void test_rank_before_proc(void **s)
{
	(void) s;
	expect_abort(rank_before_proc, NULL,
		     "libovni: ovni_proc_set_rank: the process is not initialized (call ovni_proc_init first)");
}

static void bad_loom(void *a)
{
	ovni_proc_init(1, a, 100);
}

static void test_bad_loom(void **s)
{
	(void) s;
	expect_abort(bad_loom, "a/b", "libovni: ovni_proc_init: the loom name 'a/b' contains a '/'");
	expect_abort(bad_loom, "", "libovni: ovni_proc_init: the loom name is empty");
}

static void version_check(void *a)
{
	ovni_version_check_str(a);
}

/* A program built against the headers of ovni 2.1.0 (or 1.15.0) calls
 * ovni_version_check() with that version. */
#pragma push_macro("OVNI_LIB_VERSION")
#undef OVNI_LIB_VERSION
#define OVNI_LIB_VERSION "2.1.0"
static void version_check_major(void *a)
{
	(void) a;
	ovni_version_check();
}
#undef OVNI_LIB_VERSION
#define OVNI_LIB_VERSION "1.15.0"
static void version_check_minor(void *a)
{
	(void) a;
	ovni_version_check();
}
#pragma pop_macro("OVNI_LIB_VERSION")

/* The reference's words: "incompatible ovni major|minor version: wants
 * <the program's>, got <the library's>". */
static void test_version_check(void **s)
{
	(void) s;
	expect_abort(version_check, "2.0.0",
		     "libovni: ovni_version_check_str: incompatible ovni major version: wants 2.0.0, got 1.14.0");
	expect_abort(version_check, "0.9.0",
		     "libovni: ovni_version_check_str: incompatible ovni major version: wants 0.9.0, got 1.14.0");
	expect_abort(version_check, "1.15.0",
		     "libovni: ovni_version_check_str: incompatible ovni minor version: wants 1.15.0, got 1.14.0");
	expect_abort(version_check_major, NULL,
		     "libovni: ovni_version_check_str: incompatible ovni major version: wants 2.1.0, got 1.14.0");
	expect_abort(version_check_minor, NULL,
		     "libovni: ovni_version_check_str: incompatible ovni minor version: wants 1.15.0, got 1.14.0");
	expect_abort(version_check, "1.x",
		     "libovni: ovni_version_check_str: malformed version string '1.x' (expected X.Y.Z)");
}

static void bad_bufsize(void *a)
{
	setenv("WEFT_BUFSIZE", a, 1);
	ovni_proc_init(1, "vm", 100);
}

static void test_bad_bufsize(void **s)
{
	(void) s;
	static const char *bad[] = {"12abc", "", "-4096", "100", "99999999999999999999", "1073741825", " 4096"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char *want = rt_test_path("libovni: ovni_proc_init: WEFT_BUFSIZE='%s' is not a buffer size in "
					  "bytes between 256 and 1073741824",
					  bad[i]);
		expect_abort(bad_bufsize, (void *) bad[i], want);
		free(want);
	}
}

static void mark_label_undefined(void *a)
{
	(void) a;
	init_both(110);
	ovni_mark_label(7, 1, "x");
}

static void test_mark_label_undefined(void **s)
{
	(void) s;
	expect_abort(mark_label_undefined, NULL,
		     "libovni: ovni_mark_label: mark type 7 is not defined (call ovni_mark_type first)");
}

static void attr_get_missing(void *a)
{
	(void) a;
	init_both(111);
	ovni_attr_set_double("app.x", 1.5);
	ovni_attr_get_str("app.x");
}

static void test_attr_misuse(void **s)
{
	(void) s;
	expect_abort(attr_get_missing, NULL, "libovni: ovni_attr_get_str: the attribute 'app.x' is not a string");
}

static void attr_bad_key(void *a)
{
	init_both(112);
	ovni_attr_set_boolean(a, 1);
}

static void test_attr_bad_key(void **s)
{
	(void) s;
	expect_abort(attr_bad_key, "app..x",
		     "libovni: ovni_attr_set_boolean: malformed attribute key 'app..x' (empty component)");
	expect_abort(attr_bad_key, "ovni.tid.x",
		     "libovni: ovni_attr_set_boolean: cannot set the attribute 'ovni.tid.x': 'tid' holds a value "
		     "that is not an object");
}

/* A write that fails (here EFBIG from RLIMIT_FSIZE, after a short write)
 * stops the program naming the stream file and the error. */
static void write_fails(void *a)
{
	(void) a;
	init_both(113);
	signal(SIGXFSZ, SIG_IGN);
	struct rlimit rl = {100, 100};
	setrlimit(RLIMIT_FSIZE, &rl);
	for (int i = 0; i < 20; i++) {
		struct ovni_ev ev = {0};
		ovni_ev_set_mcv(&ev, "OHp");
		ovni_ev_set_clock(&ev, ovni_clock_now());
		ovni_ev_emit(&ev);
	}
	ovni_flush();
}

static void test_write_fails(void **s)
{
	(void) s;
	char *want = rt_test_path("libovni: ovni_flush: cannot write the stream file "
				  "'%s/loom.vm/proc.100/thread.113/stream.obs': File too large",
				  rt_test_dir);
	expect_abort(write_fails, NULL, want);
	free(want);
	/* The short write went through up to the limit: never silently cut. */
	char *obs = rt_test_path("%s/loom.vm/proc.100/thread.113/stream.obs", rt_test_dir);
	assert_int_equal(rt_test_file_size(obs), 100);
	free(obs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_emit_before_init),
		cmocka_unit_test(test_flush_before_init),
		cmocka_unit_test(test_emit_after_free),
		cmocka_unit_test(test_second_init),
		cmocka_unit_test(test_init_finished),
		cmocka_unit_test(test_negative_cpu),
		cmocka_unit_test(test_payload_too_big),
		cmocka_unit_test(test_payload_one_byte),
		cmocka_unit_test(test_bad_model),
		cmocka_unit_test(test_bad_version),
		cmocka_unit_test(test_big_jumbo),
		cmocka_unit_test(test_proc_twice),
		cmocka_unit_test(test_proc_after_fini),
		cmocka_unit_test(test_after_fini),
		cmocka_unit_test(test_thread_before_proc),
		cmocka_unit_test(test_rank_before_proc),
		cmocka_unit_test(test_bad_loom),
		cmocka_unit_test(test_version_check),
		cmocka_unit_test(test_bad_bufsize),
		cmocka_unit_test(test_mark_label_undefined),
		cmocka_unit_test(test_attr_misuse),
		cmocka_unit_test(test_attr_bad_key),
		cmocka_unit_test(test_write_fails),
	};
	return cmocka_run_group_tests(tests, rt_test_group_setup, rt_test_group_teardown);
}
