/* SPDX-License-Identifier: MIT */
/*
 * test_rt_settings - weft's runtime API (weft/rt.h): weft_rt_set() before
 * ovni_proc_init wins over the environment, a NULL value gives the
 * environment back, and misuse (an unknown setting, a bad value, a call
 * after ovni_proc_init) stops the program with its message. Each case runs
 * in a forked child (a process is initialized once).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "ovni.h"
#include "rt_test.h"
#include "weft/rt.h"

#define NEV 64

/* What a child tells the parent. */
struct res {
	int pid;
	char setting[32]; /* "": no call */
	char value[32];   /* "": weft_rt_set(setting, NULL) after a call */
};

/* NEV events on the thread (tid = pid); a 256-byte buffer flushes them
 * several times, a 64 KiB one never. */
static void proc_main(void *p)
{
	struct res *r = p;
	r->pid = (int) getpid();
	if (r->setting[0] != '\0') {
		weft_rt_set(r->setting, "256");
		if (r->value[0] == '\0')
			weft_rt_set(r->setting, NULL);
	}
	ovni_proc_init(1, "set", r->pid);
	ovni_thread_init(r->pid);
	struct ovni_ev ev = {0};
	ovni_ev_set_mcv(&ev, "OB.");
	for (int i = 0; i < NEV; i++) {
		ovni_ev_set_clock(&ev, ovni_clock_now());
		ovni_ev_emit(&ev);
	}
	ovni_thread_free();
	ovni_proc_fini();
}

/* The number of OF[ events of the child's stream. */
static size_t run_flushes(const char *setting, const char *value)
{
	struct res r = {0};
	snprintf(r.setting, sizeof r.setting, "%s", setting);
	snprintf(r.value, sizeof r.value, "%s", value);
	assert_true(rt_test_in_proc(proc_main, &r, sizeof r));
	char *obs = rt_test_path("%s/loom.set/proc.%d/thread.%d/stream.obs", rt_test_dir, r.pid, r.pid);
	struct rt_test_stream st;
	rt_test_stream_load(&st, obs);
	size_t flushes = 0, events = 0;
	for (size_t i = 0; i < st.nev; i++) {
		if (strcmp(st.ev[i].mcv, "OF[") == 0)
			flushes++;
		else if (strcmp(st.ev[i].mcv, "OB.") == 0)
			events++;
	}
	assert_int_equal(events, NEV);
	rt_test_stream_free(&st);
	free(obs);
	return flushes;
}

static void test_call_wins(void **s)
{
	(void) s;
	setenv("WEFT_BUFSIZE", "65536", 1);
	/* 64 events of 12 bytes in 256-byte buffers (232 usable): 3 flushes. */
	assert_int_equal(run_flushes("WEFT_BUFSIZE", "256"), 3);
	/* The environment alone, and after the call is taken back. */
	assert_int_equal(run_flushes("", ""), 0);
	assert_int_equal(run_flushes("WEFT_BUFSIZE", ""), 0);
	unsetenv("WEFT_BUFSIZE");
	assert_int_equal(run_flushes("WEFT_BUFSIZE", "256"), 3);
}

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

static void set_unknown(void *a)
{
	(void) a;
	weft_rt_set("WEFT_BUFSIZ", "256");
}

static void set_bad(void *a)
{
	(void) a;
	weft_rt_set("WEFT_BUFSIZE", "12");
}

static void set_after_init(void *a)
{
	(void) a;
	ovni_proc_init(1, "set", (int) getpid());
	weft_rt_set("WEFT_BUFSIZE", "4096");
}

static int keep_all(const struct ovni_ev *ev, void *arg)
{
	(void) ev;
	(void) arg;
	return 1;
}

static void filter_after_init(void *a)
{
	(void) a;
	ovni_proc_init(1, "set", (int) getpid());
	weft_rt_filter_set(keep_all, NULL);
}

/* weft_rt_sample_every is weft_rt_set("WEFT_SAMPLE_MS", ...) */
static void sample_bad(void *a)
{
	(void) a;
	weft_rt_sample_every(3600001u);
}

static void sample_ring(void *a)
{
	(void) a;
	weft_rt_set("WEFT_RING", "64K");
	weft_rt_sample_every(5);
	ovni_proc_init(1, "set", (int) getpid());
}

static uint64_t zero(void *arg)
{
	(void) arg;
	return 0;
}

static void sample_register_bad(void *a)
{
	(void) a;
	weft_rt_sample_register("a\tb", "items", zero, NULL);
}

static void test_misuse(void **s)
{
	(void) s;
	expect_abort(set_unknown, NULL,
		     "libovni: weft_rt_set: 'WEFT_BUFSIZ' is not a libovni setting (the settings are WEFT_CRASH, "
		     "WEFT_BUFSIZE, WEFT_FLUSH_MS, WEFT_RING, WEFT_RING_FLUSH, WEFT_RING_SIGNAL, WEFT_FILTER, "
		     "WEFT_OUTPUT, WEFT_CLOCK, WEFT_SAMPLE_MS)");
	expect_abort(sample_bad, NULL,
		     "libovni: weft_rt_set: WEFT_SAMPLE_MS='3600001' is not a sampling period in milliseconds "
		     "between 0 (off) and 3600000");
	expect_abort(sample_ring, NULL,
		     "libovni: ovni_proc_init: WEFT_RING and WEFT_SAMPLE_MS cannot be used together (a flight "
		     "recorder drops old events, so the samples' event counts would not add up; unset one of "
		     "them)");
	expect_abort(sample_register_bad, NULL,
		     "libovni: weft_rt_sample_register: the counter name 'a\tb' is not 1 to 63 printable bytes "
		     "(no quote, no backslash)");
	expect_abort(set_bad, NULL,
		     "libovni: weft_rt_set: WEFT_BUFSIZE='12' is not a buffer size in bytes between 256 and "
		     "1073741824");
	expect_abort(set_after_init, NULL,
		     "libovni: weft_rt_set: called after ovni_proc_init: the settings are read once, by "
		     "ovni_proc_init");
	expect_abort(filter_after_init, NULL,
		     "libovni: weft_rt_filter_set: called after ovni_proc_init: the settings are read once, by "
		     "ovni_proc_init");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_call_wins),
		cmocka_unit_test(test_misuse),
	};
	return cmocka_run_group_tests(tests, rt_test_group_setup, rt_test_group_teardown);
}
