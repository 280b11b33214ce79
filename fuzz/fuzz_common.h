/* SPDX-License-Identifier: MIT */
/* fuzz_common.h - a scratch trace directory for the fuzz targets. */
#ifndef WEFT_FUZZ_COMMON_H
#define WEFT_FUZZ_COMMON_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trace_internal.h"

static char fz_root[256];

static void fz_write(const char *rel, const void *data, size_t n)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", fz_root, rel);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		abort();
	if (n > 0 && write(fd, data, n) != (ssize_t) n)
		abort();
	close(fd);
}

static void fz_mkdir(const char *rel)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", fz_root, rel);
	mkdir(path, 0755);
}

static const char fz_json[] =
	"{\"version\": 3, \"ovni\": {\"part\": \"thread\", \"tid\": %d, \"pid\": 1, "
	"\"loom\": \"h.0\", \"app_id\": 1, \"require\": {\"ovni\": \"1.1.0\"}, "
	"\"loom_cpus\": [{\"index\": 0, \"phyid\": 0}], \"finished\": 1}}";

static int fz_rm(const char *path, const struct stat *sb, int type, struct FTW *f)
{
	(void) sb;
	(void) type;
	(void) f;
	remove(path);
	return 0;
}

/* The scratch trace removed when the fuzzer exits (its files, then its
 * directories: depth first, links not followed). */
static void fz_cleanup(void)
{
	if (fz_root[0])
		nftw(fz_root, fz_rm, 16, FTW_DEPTH | FTW_PHYS);
}

/* loom.h.0/proc.1/thread.{1,2} with valid stream.json files. */
static void fz_setup(void)
{
	if (fz_root[0])
		return;
	snprintf(fz_root, sizeof fz_root, "/tmp/weft-fuzz-XXXXXX");
	if (mkdtemp(fz_root) == NULL)
		abort();
	atexit(fz_cleanup);
	fz_mkdir("loom.h.0");
	fz_mkdir("loom.h.0/proc.1");
	for (int tid = 1; tid <= 2; tid++) {
		char rel[64], json[512];
		snprintf(rel, sizeof rel, "loom.h.0/proc.1/thread.%d", tid);
		fz_mkdir(rel);
		snprintf(rel, sizeof rel, "loom.h.0/proc.1/thread.%d/stream.json", tid);
		int n = snprintf(json, sizeof json, fz_json, tid);
		fz_write(rel, json, (size_t) n);
	}
}

static void fz_ignore_warning(void *ctx, const char *msg)
{
	(void) ctx;
	if (msg[0] == '\0')
		abort(); /* warnings are sentences */
}

static int fz_discard(void *ctx, const void *buf, size_t len)
{
	uint64_t *n = ctx;
	const uint8_t *p = buf;
	*n += len ? p[0] + p[len - 1] : 0;
	return 0;
}

/* Opens the scratch trace in both modes and reads every event (lenient:
 * with the read-ahead thread; lenient and raw order: by weft_next_refs);
 * every other pass sorts unordered regions on read (one with a look-back of
 * 5 events), and each stream is sorted by weft_sort_stream. */
static void fz_read_all(void)
{
	for (int mode = 0; mode < 2; mode++) {
		for (int clk = 0; clk < 2; clk++) {
			WEFT_OPTS(weft_open_opts, o);
			o.mode = mode ? WEFT_LENIENT : WEFT_STRICT;
			o.warn = fz_ignore_warning;
			o.clock = clk ? WEFT_CLOCK_RAW : WEFT_CLOCK_OFFSET;
			o.readahead = mode ? WEFT_READAHEAD_ON : WEFT_READAHEAD_OFF;
			/* every rule for backward clocks, one per pass */
			o.backwards = (enum weft_backwards) ((mode * 2 + clk) % 3);
			/* sorting on read: with REGIONS (pass 1) and ERROR (pass 3) */
			o.sort = (mode * 2 + clk) % 2 ? WEFT_SORT_REGIONS : WEFT_SORT_NONE;
			o.sort_look_back = mode ? 5 : 0;
			char err[WEFT_ERR_MAX];
			err[0] = '\0';
			struct weft_trace *t = weft_open(fz_root, &o, err, sizeof err);
			if (t == NULL) {
				if (err[0] == '\0')
					abort(); /* a failure always says why */
				continue;
			}
			struct weft_event evs[7];
			struct weft_ref refs[7];
			int by_refs = mode && clk;
			long n;
			int64_t last = INT64_MIN;
			while ((n = by_refs ? weft_next_refs(t, refs, 7)
						: clk ? weft_next_batch(t, evs, 7) : weft_next(t, evs)) > 0) {
				for (long i = 0; by_refs && i < n; i++) {
					weft_ref_event(t, &refs[i], &evs[i]);
					if (weft_ref_rclock(&refs[i]) != evs[i].rclock
							|| weft_ref_payload_size(&refs[i])
								!= evs[i].payload_size)
						abort(); /* the accessors agree with the event */
				}
				for (long i = 0; i < n; i++) {
					int64_t key = clk ? evs[i].rclock : evs[i].sclock;
					if (key < last && o.backwards == WEFT_BACKWARDS_ERROR)
						abort(); /* the global order */
					last = key;
					volatile uint8_t sink = 0;
					for (uint32_t k = 0; k < evs[i].payload_size; k++)
						sink ^= evs[i].payload[k];
					(void) sink;
				}
			}
			if (n < 0 && weft_error(t)[0] == '\0')
				abort();
			for (size_t i = 0; mode == 0 && clk == 0 && i < weft_nstreams(t); i++) {
				struct weft_sort_report r;
				uint64_t sum = 0;
				if (weft_stream_order(t, i, &r) < 0 && weft_error(t)[0] == '\0')
					abort();
				if (weft_sort_stream(t, i, 1 + i * 4, fz_discard, &sum, &r) < 0
						&& weft_error(t)[0] == '\0')
					abort();
			}
			weft_close(t);
		}
	}
}

#endif
