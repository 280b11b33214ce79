/* SPDX-License-Identifier: MIT */
/*
 * test_rt_output - WEFT_OUTPUT=off, the perturbation mode (docs/runtime.md,
 * "Perturbation mode"): the same program run with WEFT_OUTPUT=on and off,
 * 256-byte buffers so that the buffer is "written" (reused) many times.
 * Off: stream.obs holds its 8-byte header only, there is no stream.idx
 * (created at the second write, rt/index.c), and stream.json says weft.output "off" with
 * weft.unwritten_bytes equal to the event bytes the "on" run wrote. weft
 * check accepts the trace and says so; weft emu refuses it with its
 * message. Each run is a forked child (a process is initialized once).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <jansson.h>

#include "ovni.h"
#include "rt_setting.h"

#define NEV 1000

struct child {
	char mode[8];
	char dir[512];
	int pid;
};

static void child_main(void *p)
{
	struct child *ch = p;
	ch->pid = (int) getpid();
	setenv("OVNI_TRACEDIR", ch->dir, 1);
	setenv("WEFT_OUTPUT", ch->mode, 1);
	setenv("WEFT_BUFSIZE", "256", 1);
	ovni_proc_init(1, "out", ch->pid);
	ovni_thread_init(ch->pid);
	ovni_add_cpu(0, 0);
	uint8_t pl[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	for (int i = 0; i < NEV; i++) {
		rt_test_emit("OB.", ovni_clock_now(), pl, i % 3 == 0 ? (int) sizeof pl : 0);
		if (i % 100 == 99)
			ovni_flush();
	}
	struct ovni_ev j = {0};
	ovni_ev_set_mcv(&j, "OJ.");
	ovni_ev_set_clock(&j, ovni_clock_now());
	uint8_t big[100] = {0};
	ovni_ev_jumbo_emit(&j, big, sizeof big);
	ovni_thread_free();
	ovni_proc_fini();
	unsetenv("WEFT_BUFSIZE");
	unsetenv("WEFT_OUTPUT");
}

static char *run(const char *mode, int *pid)
{
	struct child ch;
	memset(&ch, 0, sizeof ch);
	snprintf(ch.mode, sizeof ch.mode, "%s", mode);
	snprintf(ch.dir, sizeof ch.dir, "%s/%s", rt_test_dir, mode);
	assert_true(rt_test_in_proc(child_main, &ch, sizeof ch));
	*pid = ch.pid;
	return rt_test_path("%s/loom.out/proc.%d/thread.%d", ch.dir, ch.pid, ch.pid);
}

static void test_off(void **s)
{
	(void) s;
	int pid_on, pid_off;
	char *on = run("on", &pid_on);
	char *off = run("off", &pid_off);
	char *obs_on = rt_test_path("%s/stream.obs", on);
	char *obs_off = rt_test_path("%s/stream.obs", off);
	char *idx_off = rt_test_path("%s/stream.idx", off);
	long long written = rt_test_file_size(obs_on) - WEFT_OBS_HEADER_SIZE;
	/* the on run wrote every event, and many flushes */
	struct rt_test_stream st;
	rt_test_stream_load(&st, obs_on);
	size_t flushes = 0;
	for (size_t i = 0; i < st.nev; i++)
		flushes += strcmp(st.ev[i].mcv, "OF[") == 0;
	assert_int_equal(st.nev - 2 * flushes, NEV + 1);
	assert_true(flushes > 50);
	rt_test_stream_free(&st);
	/* off: no event byte written, the same bytes recorded */
	assert_int_equal(rt_test_file_size(obs_off), WEFT_OBS_HEADER_SIZE);
	assert_int_equal(access(idx_off, F_OK), -1);
	/* on: many buffers, an index */
	char *idx_on = rt_test_path("%s/stream.idx", on);
	assert_true(rt_test_file_size(idx_on) > 16);
	free(idx_on);
	char *json = rt_test_path("%s/stream.json", off);
	json_error_t jerr;
	json_t *doc = json_load_file(json, 0, &jerr);
	assert_non_null(doc);
	json_t *w = json_object_get(doc, "weft");
	assert_string_equal(json_string_value(json_object_get(w, "output")), "off");
	assert_int_equal(json_integer_value(json_object_get(w, "unwritten_bytes")), written);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(doc, "ovni"), "finished")), 1);
	json_decref(doc);
	/* the on run says nothing of it */
	char *json_on = rt_test_path("%s/stream.json", on);
	doc = json_load_file(json_on, 0, &jerr);
	assert_non_null(doc);
	assert_null(json_object_get(json_object_get(doc, "weft"), "output"));
	json_decref(doc);

	int rc = -1;
	char *trace = rt_test_path("%s/off", rt_test_dir);
	char *out = rt_test_weft("check", trace, &rc);
	if (out != NULL) {
		assert_int_equal(rc, 0);
		char *want = rt_test_path("weft check: %s: valid: 1 stream, 1 loom, 1 process, 1 thread, 0 events; the "
					  "models' rules were not checked (use --models)\n"
					  "weft check: %s/stream.json: written with WEFT_OUTPUT=off: %lld bytes of "
					  "events were recorded and none written (a run measuring the tracer's own "
					  "cost)\n",
					  trace, off, written);
		assert_non_null(strstr(out, want));
		free(want);
		free(out);
		out = rt_test_weft("emu -q", trace, &rc);
		assert_int_equal(rc, 1);
		want = rt_test_path("weft emu: %s/stream.json: written with WEFT_OUTPUT=off (the perturbation mode): its "
				    "%lld bytes of events were recorded and never written, so there is nothing to "
				    "emulate\n",
				    off, written);
		assert_non_null(strstr(out, want));
		free(want);
		free(out);
	}
	free(trace);
	free(json);
	free(json_on);
	free(obs_on);
	free(obs_off);
	free(idx_off);
	free(on);
	free(off);
}

static void test_bad(void **s)
{
	(void) s;
	char *err = rt_test_refused("WEFT_OUTPUT", "none");
	assert_string_equal(err, "libovni: ovni_proc_init: WEFT_OUTPUT='none' is not 'on' or 'off' (off: record the "
				 "events as usual and write none, to measure what recording alone costs)\n");
	free(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_off),
		cmocka_unit_test(test_bad),
	};
	return cmocka_run_group_tests(tests, rt_test_group_setup, rt_test_group_teardown);
}
