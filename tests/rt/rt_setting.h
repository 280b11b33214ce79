/* SPDX-License-Identifier: MIT */
/*
 * rt_setting.h - helpers of the libovni tests that take a setting end to
 * end (test_rt_filter, test_rt_output, test_rt_clock): an event emitted
 * at a given clock, a command's output (weft's among them), and a value of
 * a setting that ovni_proc_init refuses. Built on rt_test.h and cmocka
 * (included before it).
 */
#ifndef WEFT_TESTS_RT_SETTING_H
#define WEFT_TESTS_RT_SETTING_H

#include "ovni.h"
#include "rt_test.h"

/* Emits mcv at clock, with size bytes of payload (0: none). */
static inline void rt_test_emit(const char *mcv, uint64_t clock, const void *payload, int size)
{
	struct ovni_ev ev = {0};
	ovni_ev_set_mcv(&ev, mcv);
	ovni_ev_set_clock(&ev, clock);
	if (size > 0)
		ovni_payload_add(&ev, payload, size);
	ovni_ev_emit(&ev);
}

/* The output of `timeout 60 CMD 2>&1` (malloc'ed, at most 1 MiB kept);
 * *rc its exit status (-1: it did not exit). */
static inline char *rt_test_sh(const char *cmd, int *rc)
{
	char *full = rt_test_path("timeout 60 %s 2>&1", cmd);
	FILE *p = popen(full, "r");
	free(full);
	assert_non_null(p);
	size_t cap = 1 << 20, n = 0, r;
	char *out = malloc(cap + 1);
	assert_non_null(out);
	while (n < cap && (r = fread(out + n, 1, cap - n, p)) > 0)
		n += r;
	out[n] = '\0';
	int status = pclose(p);
	*rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	return out;
}

/* `weft ARGS DIR` run by rt_test_sh (weft: $WEFT_BIN): its output, or NULL
 * when WEFT_BIN is unset or not a program. */
static inline char *rt_test_weft(const char *args, const char *dir, int *rc)
{
	const char *bin = getenv("WEFT_BIN");
	if (bin == NULL || access(bin, X_OK) != 0)
		return NULL;
	char *cmd = rt_test_path("'%s' %s '%s'", bin, args, dir);
	char *out = rt_test_sh(cmd, rc);
	free(cmd);
	return out;
}

struct rt_test_setting {
	const char *name, *value;
};

static inline void rt_test_setting_init(void *arg)
{
	const struct rt_test_setting *s = arg;
	setenv(s->name, s->value, 1);
	ovni_proc_init(1, "set", (int) getpid());
}

/* ovni_proc_init with the environment variable name set to value, in a
 * forked child, which must abort: what it wrote to stderr (malloc'ed). */
static inline char *rt_test_refused(const char *name, const char *value)
{
	struct rt_test_setting s = {name, value};
	char *err = NULL;
	int status = rt_test_in_child(rt_test_setting_init, &s, &err);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
	return err;
}

#endif
