/* SPDX-License-Identifier: MIT */
/*
 * test_opts.c - the size rule of the option structs (docs/reader.md,
 * "Options that grow") through the public calls of libweft: an older,
 * smaller struct reads its missing tail as defaults (the bytes the caller
 * has there are not read), a larger one is accepted with a zero tail and
 * refused with a non-zero one (the message names the struct and the byte),
 * and a sz of 0 or smaller than the sz field is refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "conformance.h"
#include "weft/weft.h"

static char path[4096];

/* The events of the trace read with o (-1: weft_open failed, err set). */
static long count(const struct weft_open_opts *o, char *err, size_t errlen)
{
	struct weft_trace *t = weft_open(path, o, err, errlen);
	if (t == NULL)
		return -1;
	struct weft_event ev;
	long n = 0;
	int r;
	while ((r = weft_next(t, &ev)) > 0)
		n++;
	assert_int_equal(r, 0);
	weft_close(t);
	return n;
}

static long all_events(void)
{
	char err[WEFT_ERR_MAX];
	long n = count(NULL, err, sizeof err);
	assert_true(n > 2);
	return n;
}

/* A struct of an older header: sz ends before seek, seek_clock and
 * follow_links; what the caller has there (a seek past every event) is not
 * read. */
static void test_older_size(void **state)
{
	(void) state;
	long n = all_events();
	char err[WEFT_ERR_MAX];
	WEFT_OPTS(weft_open_opts, o, .seek = 1, .seek_clock = INT64_MAX);
	assert_int_equal(count(&o, err, sizeof err), 0); /* the whole struct: read */
	o.sz = offsetof(struct weft_open_opts, seek);
	assert_int_equal(count(&o, err, sizeof err), n);
	/* the smallest: the sz field alone */
	o.sz = sizeof o.sz;
	o.mode = (enum weft_mode) 9; /* past sz: not read */
	assert_int_equal(count(&o, err, sizeof err), n);
}

struct newer_open_opts {
	struct weft_open_opts known;
	unsigned char added[24]; /* fields of a newer header */
};

static void test_newer_size(void **state)
{
	(void) state;
	long n = all_events();
	char err[WEFT_ERR_MAX], want[WEFT_ERR_MAX];
	struct newer_open_opts big;
	memset(&big, 0, sizeof big);
	big.known.sz = sizeof big;
	big.known.mode = WEFT_LENIENT;
	assert_int_equal(count(&big.known, err, sizeof err), n);
	/* a non-zero byte the library does not know */
	big.added[5] = 1;
	assert_int_equal(count(&big.known, err, sizeof err), -1);
	snprintf(want, sizeof want, "weft_open: struct weft_open_opts: byte %zu is not zero "
			"(sz %zu, this library knows %zu bytes)",
			offsetof(struct newer_open_opts, added) + 5, sizeof big,
			sizeof(struct weft_open_opts));
	assert_string_equal(err, want);
	/* the first non-zero one is named */
	big.added[2] = 7;
	assert_int_equal(count(&big.known, err, sizeof err), -1);
	snprintf(want, sizeof want, "weft_open: struct weft_open_opts: byte %zu is not zero "
			"(sz %zu, this library knows %zu bytes)",
			offsetof(struct newer_open_opts, added) + 2, sizeof big,
			sizeof(struct weft_open_opts));
	assert_string_equal(err, want);
	/* a sz that stops before the non-zero bytes: they are not looked at */
	big.known.sz = offsetof(struct newer_open_opts, added) + 2;
	assert_int_equal(count(&big.known, err, sizeof err), n);
	/* the same rule at weft_write_merge_index */
	big.known.sz = sizeof big;
	char ip[4096];
	uint64_t ne = 0;
	assert_int_equal(weft_write_merge_index(path, &big.known, ip, sizeof ip, &ne, err,
				sizeof err), -1);
	snprintf(want, sizeof want, "weft_write_merge_index: struct weft_open_opts: byte %zu "
			"is not zero (sz %zu, this library knows %zu bytes)",
			offsetof(struct newer_open_opts, added) + 2, sizeof big,
			sizeof(struct weft_open_opts));
	assert_string_equal(err, want);
}

static void test_size_too_small(void **state)
{
	(void) state;
	char err[WEFT_ERR_MAX];
	struct weft_open_opts o;
	memset(&o, 0, sizeof o); /* not declared with WEFT_OPTS: sz 0 */
	assert_int_equal(count(&o, err, sizeof err), -1);
	assert_string_equal(err, "weft_open: struct weft_open_opts: sz is 0, smaller than the "
			"sz field (8 bytes); declare it with WEFT_OPTS");
	o.sz = 3;
	assert_int_equal(count(&o, err, sizeof err), -1);
	assert_string_equal(err, "weft_open: struct weft_open_opts: sz is 3, smaller than the "
			"sz field (8 bytes); declare it with WEFT_OPTS");
	/* a NULL err is allowed */
	assert_null(weft_open(path, &o, NULL, 0));
}

static void test_follow_opts(void **state)
{
	(void) state;
	char err[WEFT_ERR_MAX], want[WEFT_ERR_MAX];
	/* older: timeout_ms is the last field known; grace_ms past sz */
	WEFT_OPTS(weft_follow_opts, o, .timeout_ms = 100, .grace_ms = 5);
	o.sz = offsetof(struct weft_follow_opts, grace_ms);
	struct weft_follow *f = weft_follow_open(path, &o, err, sizeof err);
	assert_non_null(f);
	weft_follow_close(f);
	struct {
		struct weft_follow_opts known;
		unsigned char added[8];
	} big;
	memset(&big, 0, sizeof big);
	big.known.sz = sizeof big;
	f = weft_follow_open(path, &big.known, err, sizeof err);
	assert_non_null(f);
	weft_follow_close(f);
	big.added[0] = 0x80;
	assert_null(weft_follow_open(path, &big.known, err, sizeof err));
	snprintf(want, sizeof want, "weft_follow_open: struct weft_follow_opts: byte %zu is "
			"not zero (sz %zu, this library knows %zu bytes)",
			sizeof(struct weft_follow_opts), sizeof big, sizeof(struct weft_follow_opts));
	assert_string_equal(err, want);
	big.known.sz = 0;
	assert_null(weft_follow_open(path, &big.known, err, sizeof err));
	assert_string_equal(err, "weft_follow_open: struct weft_follow_opts: sz is 0, smaller "
			"than the sz field (8 bytes); declare it with WEFT_OPTS");
}

int main(void)
{
	snprintf(path, sizeof path, "%s/v3/clock-ties/ovni", weft_conformance_dir());
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_older_size),
		cmocka_unit_test(test_newer_size),
		cmocka_unit_test(test_size_too_small),
		cmocka_unit_test(test_follow_opts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
