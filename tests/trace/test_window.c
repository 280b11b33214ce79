/* SPDX-License-Identifier: MIT */
/*
 * test_window.c - streams much larger than a read chunk: events that
 * straddle chunk ends, a jumbo event larger than a chunk, and corruption
 * found deep in a file, reported at its exact byte offset.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "trace_internal.h"
#include "tracewrite.h"

#define BIG (3u << 20) /* larger than a chunk */

static uint64_t last_good, bad_from;

static void write_big(const char *root, int corrupt, uint64_t *bad_off)
{
	FILE *f = tw_stream(root, "vm", 1, 1, NULL);
	uint8_t *data = malloc(BIG);
	for (uint32_t i = 0; i < BIG; i++)
		data[i] = (uint8_t) (i * 7);
	uint64_t clock = 1;
	uint8_t pl[16];
	for (int i = 0; i < 16; i++)
		pl[i] = (uint8_t) i;
	/* 200000 events of sizes 12..28 (about 4 MiB), a big jumbo in the middle */
	for (uint32_t i = 0; i < 200000; i++) {
		unsigned n = i % 17 == 1 ? 0 : (i % 17);
		if (i == 100000)
			tw_jumbo(f, "OU[", clock, data, BIG);
		if (corrupt && i == 150000) {
			*bad_off = (uint64_t) ftell(f);
			bad_from = last_good;
			tw_event(f, "OB.", last_good - 1, pl, n);
		} else {
			tw_event(f, "OB.", clock, pl, n);
			last_good = clock;
		}
		clock += i % 3;
	}
	fclose(f);
	free(data);
}

static void test_big_stream(void **state)
{
	(void) state;
	char *root = tw_tmpdir();
	uint64_t off = 0;
	write_big(root, 0, &off);
	char err[WEFT_ERR_MAX];
	struct weft_trace *t = weft_open(root, NULL, err, sizeof err);
	assert_non_null(t);
	struct weft_event ev;
	uint64_t n = 0, expect_off = 8;
	int r, saw_jumbo = 0;
	while ((r = weft_next(t, &ev)) > 0) {
		assert_int_equal(ev.offset, expect_off);
		if (ev.jumbo) {
			assert_int_equal(ev.jumbo_size, BIG);
			assert_int_equal(ev.jumbo_data[12345], (uint8_t) (12345 * 7));
			assert_int_equal(ev.jumbo_data[BIG - 1], (uint8_t) ((BIG - 1) * 7));
			saw_jumbo = 1;
		} else {
			uint32_t i = (uint32_t) n - (uint32_t) saw_jumbo;
			unsigned want = i % 17 == 1 ? 0 : (i % 17);
			assert_int_equal(ev.payload_size, want);
			if (want)
				assert_int_equal(ev.payload[want - 1], want - 1);
		}
		expect_off += 12 + ev.payload_size;
		n++;
	}
	assert_int_equal(r, 0);
	assert_int_equal(n, 200001);
	assert_true(saw_jumbo);
	assert_int_equal(expect_off, weft_stream_at(t, 0)->obs_size);
	weft_close(t);
	tw_rmtree(root);
	free(root);
}

static void test_deep_corruption(void **state)
{
	(void) state;
	char *root = tw_tmpdir();
	uint64_t off = 0;
	write_big(root, 1, &off);
	char err[WEFT_ERR_MAX];
	struct weft_trace *t = weft_open(root, NULL, err, sizeof err);
	assert_non_null(t);
	struct weft_event ev;
	uint64_t n = 0;
	int r;
	while ((r = weft_next(t, &ev)) > 0)
		n++;
	assert_int_equal(r, -1);
	assert_int_equal(n, 150001); /* the jumbo and the 150000 events before */
	char want[8192];
	snprintf(want, sizeof want, "%s/loom.vm/proc.1/thread.1/stream.obs: offset %" PRIu64
			": event OB.: clock goes backwards from %" PRIu64 " to %" PRIu64
			" within the stream", root, off, bad_from, bad_from - 1);
	assert_string_equal(weft_error(t), want);
	weft_close(t);

	/* a truncated tail, deep in the file */
	char obs[8192];
	snprintf(obs, sizeof obs, "%s/loom.vm/proc.1/thread.1/stream.obs", root);
	struct stat st;
	assert_int_equal(stat(obs, &st), 0);
	write_big(root, 0, &off);
	assert_int_equal(stat(obs, &st), 0);
	assert_int_equal(truncate(obs, st.st_size - 3), 0);
	t = weft_open(root, NULL, err, sizeof err);
	assert_non_null(t);
	n = 0;
	while ((r = weft_next(t, &ev)) > 0)
		n++;
	assert_int_equal(r, -1);
	assert_int_equal(n, 200000);
	/* the last event (i = 199999, 199999 % 17 = 11 payload bytes) is cut */
	snprintf(want, sizeof want, "%s/loom.vm/proc.1/thread.1/stream.obs: offset %" PRIu64
			": event OB.: payload of 11 bytes runs past the end of the file (8 bytes left)",
			root, (uint64_t) st.st_size - 23);
	assert_string_equal(weft_error(t), want);
	weft_close(t);
	tw_rmtree(root);
	free(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_big_stream),
		cmocka_unit_test(test_deep_corruption),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
