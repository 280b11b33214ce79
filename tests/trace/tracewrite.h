/* SPDX-License-Identifier: MIT */
/* tracewrite.h - writing small synthetic v3 traces from the C tests. */
#ifndef WEFT_TESTS_TRACEWRITE_H
#define WEFT_TESTS_TRACEWRITE_H

#include <errno.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "obs_format.h"

static inline void tw_mkdirs(const char *path)
{
	char buf[4096];
	snprintf(buf, sizeof buf, "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p == '/') {
			*p = '\0';
			mkdir(buf, 0755);
			*p = '/';
		}
	}
	mkdir(buf, 0755);
}

/* Writes loom.L/proc.P/thread.T/stream.json under root; returns the open
 * stream.obs (header written). */
static inline FILE *tw_stream(const char *root, const char *loom, int pid, int tid,
		const char *extra_ovni)
{
	char dir[4096], path[4200];
	snprintf(dir, sizeof dir, "%s/loom.%s/proc.%d/thread.%d", root, loom, pid, tid);
	tw_mkdirs(dir);
	snprintf(path, sizeof path, "%s/stream.json", dir);
	FILE *f = fopen(path, "w");
	if (f == NULL)
		abort();
	fprintf(f, "{\"version\": 3, \"ovni\": {\"lib\": {\"version\": \"1.14.0\", "
			"\"commit\": \"test\"}, \"part\": \"thread\", \"tid\": %d, \"pid\": %d, "
			"\"loom\": \"%s\", \"app_id\": 1, \"require\": {\"ovni\": \"1.1.0\"}, "
			"\"loom_cpus\": [{\"index\": 0, \"phyid\": 0}], \"finished\": 1%s%s}}",
			tid, pid, loom, extra_ovni ? ", " : "", extra_ovni ? extra_ovni : "");
	fclose(f);
	snprintf(path, sizeof path, "%s/stream.obs", dir);
	f = fopen(path, "wb");
	if (f == NULL)
		abort();
	uint8_t hdr[WEFT_OBS_HEADER_SIZE];
	memcpy(hdr, WEFT_OBS_MAGIC, WEFT_OBS_MAGIC_LEN);
	weft_store_u32(hdr + WEFT_OBS_MAGIC_LEN, WEFT_OBS_VERSION);
	fwrite(hdr, 1, sizeof hdr, f);
	return f;
}

static inline void tw_event(FILE *f, const char *mcv, uint64_t clock, const void *payload,
		unsigned n)
{
	uint8_t b[WEFT_EV_MAX_NORMAL_SIZE];
	b[WEFT_EV_OFF_FLAGS] = weft_ev_size_code(n);
	memcpy(b + WEFT_EV_OFF_MODEL, mcv, 3);
	weft_store_u64(b + WEFT_EV_OFF_CLOCK, clock);
	if (n)
		memcpy(b + WEFT_EV_OFF_PAYLOAD, payload, n);
	fwrite(b, 1, WEFT_EV_HEADER_SIZE + n, f);
}

static inline void tw_jumbo(FILE *f, const char *mcv, uint64_t clock, const void *data,
		uint32_t n)
{
	uint8_t b[WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD];
	b[WEFT_EV_OFF_FLAGS] = WEFT_EV_FLAG_JUMBO | WEFT_EV_JUMBO_NIBBLE;
	memcpy(b + WEFT_EV_OFF_MODEL, mcv, 3);
	weft_store_u64(b + WEFT_EV_OFF_CLOCK, clock);
	weft_store_u32(b + WEFT_EV_OFF_PAYLOAD, n);
	fwrite(b, 1, sizeof b, f);
	if (n)
		fwrite(data, 1, n, f);
}

static inline int tw_rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void) sb;
	(void) flag;
	(void) ftw;
	return remove(p);
}

static inline void tw_rmtree(const char *root)
{
	nftw(root, tw_rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static inline char *tw_tmpdir(void)
{
	const char *base = getenv("TMPDIR");
	char buf[4096];
	snprintf(buf, sizeof buf, "%s/weft-test-XXXXXX", base && *base ? base : "/tmp");
	char *d = mkdtemp(buf);
	if (d == NULL)
		abort();
	return strdup(d);
}

#endif
