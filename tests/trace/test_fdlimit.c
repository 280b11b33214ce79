/* SPDX-License-Identifier: MIT */
/*
 * test_fdlimit.c - a trace with more streams than the process may open files:
 * libweft opens each stream file for each read then (fd_lean), so that the
 * whole trace still reads, with and without the read-ahead thread, exactly
 * as with a file descriptor per stream; and a stream file replaced or
 * removed between weft_open and its reading is reported, not read.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmocka.h>

#include "tracewrite.h"
#include "weft/weft.h"

#define NSTREAMS 300
#define PER_STREAM 400
#define LIMIT 64 /* file descriptors: fewer than the streams */

/* Chunk size of streams opened afterwards (trace.c; 0: the normal one). */
extern size_t weft_chunk_override;

static char *root;

/* Stream s emits events at clocks s + k * NSTREAMS (k = 0..PER_STREAM-1):
 * in global order, the streams take turns, one event each. Payloads vary. */
static void write_trace(void)
{
	root = tw_tmpdir();
	for (int s = 0; s < NSTREAMS; s++) {
		FILE *f = tw_stream(root, "vm", 1, 1000 + s, NULL);
		for (int k = 0; k < PER_STREAM; k++) {
			uint8_t pl[16];
			unsigned n = (unsigned) (k % 5) * 4; /* 0, 4, 8, 12, 16 */
			memset(pl, s & 0xff, sizeof pl);
			tw_event(f, "OHp", (uint64_t) (1000 + s + k * NSTREAMS), pl, n);
		}
		fclose(f);
	}
}

static int setup(void **state)
{
	(void) state;
	write_trace();
	return 0;
}

static int teardown(void **state)
{
	(void) state;
	tw_rmtree(root);
	free(root);
	return 0;
}

static void set_nofile(rlim_t soft, struct rlimit *old)
{
	assert_int_equal(getrlimit(RLIMIT_NOFILE, old), 0);
	struct rlimit rl = *old;
	rl.rlim_cur = soft;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
}

/* Reads the whole trace; checks every event is where the writer put it. */
static void read_all(enum weft_readahead ra, size_t chunk)
{
	weft_chunk_override = chunk;
	struct weft_open_opts o;
	memset(&o, 0, sizeof o);
	o.sz = sizeof o;
	o.readahead = ra;
	char err[WEFT_ERR_MAX];
	struct weft_trace *t = weft_open(root, &o, err, sizeof err);
	if (t == NULL)
		fail_msg("weft_open: %s", err);
	assert_int_equal(weft_nstreams(t), NSTREAMS);
	struct weft_event evs[37];
	long n;
	uint64_t i = 0;
	while ((n = weft_next_batch(t, evs, 37)) > 0) {
		for (long j = 0; j < n; j++, i++) {
			int s = (int) (i % NSTREAMS);
			uint64_t k = i / NSTREAMS;
			assert_int_equal(evs[j].rclock, (int64_t) (1000 + i));
			assert_int_equal(evs[j].payload_size, (k % 5) * 4);
			char rel[64];
			snprintf(rel, sizeof rel, "loom.vm/proc.1/thread.%d", 1000 + s);
			assert_string_equal(evs[j].stream->relpath, rel);
			for (uint32_t b = 0; b < evs[j].payload_size; b++)
				assert_int_equal(evs[j].payload[b], s & 0xff);
		}
	}
	if (n < 0)
		fail_msg("reading: %s", weft_error(t));
	assert_int_equal(i, (uint64_t) NSTREAMS * PER_STREAM);
	weft_close(t);
	weft_chunk_override = 0;
}

/* More streams than file descriptors: the trace reads whole, both ways. */
static void test_more_streams_than_fds(void **state)
{
	(void) state;
	struct rlimit old;
	set_nofile(LIMIT, &old);
	read_all(WEFT_READAHEAD_OFF, 0);
	read_all(WEFT_READAHEAD_ON, 0);
	read_all(WEFT_READAHEAD_ON, 100); /* many chunks per stream */
	read_all(WEFT_READAHEAD_OFF, 100);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	/* and the same with a file descriptor per stream */
	read_all(WEFT_READAHEAD_OFF, 100);
}

/* A stream file replaced after weft_open: the error names it; the events
 * before it in the global order come out first. */
static void test_replaced_file(void **state)
{
	(void) state;
	struct rlimit old;
	set_nofile(LIMIT, &old);
	struct weft_trace *t = weft_open(root, NULL, NULL, 0);
	assert_non_null(t);
	char victim[4200], tmp[4300];
	snprintf(victim, sizeof victim, "%s/loom.vm/proc.1/thread.1007/stream.obs", root);
	snprintf(tmp, sizeof tmp, "%s.new", victim);
	/* a copy of the same bytes under the same name: another file */
	FILE *in = fopen(victim, "rb"), *out = fopen(tmp, "wb");
	assert_non_null(in);
	assert_non_null(out);
	char buf[4096];
	size_t got;
	while ((got = fread(buf, 1, sizeof buf, in)) > 0)
		assert_int_equal(fwrite(buf, 1, got, out), got);
	fclose(in);
	fclose(out);
	assert_int_equal(rename(tmp, victim), 0);
	struct weft_event ev;
	int r;
	uint64_t n = 0;
	while ((r = weft_next(t, &ev)) > 0)
		n++;
	assert_int_equal(r, -1);
	/* every stream's first chunk is read before the first event */
	assert_int_equal(n, 0);
	char want[4400];
	snprintf(want, sizeof want, "%s: offset 8: the file was replaced while reading", victim);
	assert_string_equal(weft_error(t), want);
	weft_close(t);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
}

/* A stream file removed after weft_open: it cannot be opened again. Runs
 * last: it removes a stream of the shared trace. */
static void test_removed_file(void **state)
{
	(void) state;
	struct rlimit old;
	set_nofile(LIMIT, &old);
	struct weft_trace *t = weft_open(root, NULL, NULL, 0);
	assert_non_null(t);
	char victim[4200];
	snprintf(victim, sizeof victim, "%s/loom.vm/proc.1/thread.1003/stream.obs", root);
	assert_int_equal(unlink(victim), 0);
	struct weft_event ev;
	assert_int_equal(weft_next(t, &ev), -1);
	char want[4400];
	snprintf(want, sizeof want, "%s: offset 8: cannot open the binary stream again: "
			"No such file or directory", victim);
	assert_string_equal(weft_error(t), want);
	weft_close(t);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
}

/* A read-ahead choice outside the enum is refused by name. */
static void test_bad_readahead(void **state)
{
	(void) state;
	struct weft_open_opts o;
	memset(&o, 0, sizeof o);
	o.sz = sizeof o;
	o.readahead = (enum weft_readahead) 9;
	char err[WEFT_ERR_MAX];
	assert_null(weft_open(root, &o, err, sizeof err));
	assert_string_equal(err, "weft_open: unknown read-ahead choice 9");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_more_streams_than_fds),
		cmocka_unit_test(test_replaced_file),
		cmocka_unit_test(test_bad_readahead),
		cmocka_unit_test(test_removed_file),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
