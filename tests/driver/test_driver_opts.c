/* SPDX-License-Identifier: MIT */
/*
 * test_driver_opts.c - the size rule of struct weft_emulate_opts (sz, see
 * docs/reader.md "Options that grow") at weft_emulate(): a struct of an
 * older header (sz ending before open_output) runs, the stop flag it has
 * past sz unread; a larger struct runs with a zero tail and is refused,
 * naming the byte, with a non-zero one; sz 0 is refused.
 */
#include <ftw.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "conformance.h"
#include "driver.h"
#include "weft/weft.h"

static char tracepath[4096];
static char base[] = "/tmp/weft-driver-opts-XXXXXX";
static const char *const formats[] = { "paraver", NULL };
static volatile sig_atomic_t stop_now = 1;

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void) st;
	(void) flag;
	(void) ftw;
	return remove(p);
}

static void test_older_size(void **state)
{
	(void) state;
	char err[WEFT_ERR_MAX];
	WEFT_OPTS(weft_emulate_opts, o, .path = tracepath, .outdir = base, .formats = formats,
			.stop = &stop_now);
	/* the whole struct: the stop flag is read */
	assert_int_equal(weft_emulate(&o, err, sizeof err), -1);
	assert_string_equal(err, "interrupted");
	/* older: open_output, phase, hook_ctx, stop and keep_partial
	 * past sz, not read */
	o.sz = offsetof(struct weft_emulate_opts, open_output);
	int r = weft_emulate(&o, err, sizeof err);
	if (r != 0)
		fail_msg("weft_emulate: %s", err);
	char prv[4200];
	snprintf(prv, sizeof prv, "%s/thread.prv", base);
	struct stat st;
	assert_int_equal(stat(prv, &st), 0);
	assert_true(st.st_size > 0);
}

struct newer_emulate_opts {
	struct weft_emulate_opts known;
	unsigned char added[16];
};

static void test_newer_and_bad_sizes(void **state)
{
	(void) state;
	char err[WEFT_ERR_MAX], want[WEFT_ERR_MAX];
	struct newer_emulate_opts big;
	memset(&big, 0, sizeof big);
	big.known.sz = sizeof big;
	big.known.path = tracepath;
	big.known.outdir = base;
	big.known.formats = formats;
	int r = weft_emulate(&big.known, err, sizeof err);
	if (r != 0)
		fail_msg("weft_emulate: %s", err);
	big.added[15] = 2;
	assert_int_equal(weft_emulate(&big.known, err, sizeof err), -1);
	snprintf(want, sizeof want, "weft_emulate: struct weft_emulate_opts: byte %zu is not "
			"zero (sz %zu, this library knows %zu bytes)",
			offsetof(struct newer_emulate_opts, added) + 15, sizeof big,
			sizeof(struct weft_emulate_opts));
	assert_string_equal(err, want);
	big.known.sz = 0;
	assert_int_equal(weft_emulate(&big.known, err, sizeof err), -1);
	assert_string_equal(err, "weft_emulate: struct weft_emulate_opts: sz is 0, smaller than "
			"the sz field (8 bytes); declare it with WEFT_OPTS");
}

int main(void)
{
	snprintf(tracepath, sizeof tracepath, "%s/models/mix-4/ovni", weft_conformance_dir());
	if (mkdtemp(base) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_older_size),
		cmocka_unit_test(test_newer_and_bad_sizes),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	nftw(base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return r;
}
