/* SPDX-License-Identifier: MIT */
/* bench_trace.c - the benchmarks' trace writer (bench_trace.h). */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench_trace.h"
#include "obs_format.h"

void bench_die(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, what, strerror(errno));
	exit(1);
}

void bench_proc_dirs(const char *root, const char *loom, int pid)
{
	char dir[PATH_MAX + 64];
	snprintf(dir, sizeof dir, "%s/loom.%s", root, loom);
	if (mkdir(dir, 0777) != 0)
		bench_die(dir);
	snprintf(dir, sizeof dir, "%s/loom.%s/proc.%d", root, loom, pid);
	if (mkdir(dir, 0777) != 0)
		bench_die(dir);
}

FILE *bench_stream_open(const char *root, const char *loom, int pid, int tid,
		const char *meta, int ncpus, const char *top)
{
	char dir[PATH_MAX + 64], path[PATH_MAX + 96];
	snprintf(dir, sizeof dir, "%s/loom.%s/proc.%d/thread.%d", root, loom, pid, tid);
	if (mkdir(dir, 0777) != 0)
		bench_die(dir);
	snprintf(path, sizeof path, "%s/stream.json", dir);
	FILE *f = fopen(path, "w");
	if (f == NULL)
		bench_die(path);
	fprintf(f, "{\"version\": 3, \"ovni\": {\"lib\": {\"version\": \"1.14.0\", \"commit\": "
		"\"bench\"}, \"part\": \"thread\", \"tid\": %d, \"pid\": %d, \"loom\": \"%s\", "
		"\"app_id\": 1, %s\"loom_cpus\": [", tid, pid, loom, meta);
	for (int c = 0; c < ncpus; c++)
		fprintf(f, "%s{\"index\": %d, \"phyid\": %d}", c ? ", " : "", c, c);
	fprintf(f, "], \"finished\": 1}%s}", top);
	if (fclose(f) != 0)
		bench_die(path);
	snprintf(path, sizeof path, "%s/stream.obs", dir);
	f = fopen(path, "wb");
	if (f == NULL)
		bench_die(path);
	setvbuf(f, NULL, _IOFBF, 1 << 20);
	uint8_t hdr[WEFT_OBS_HEADER_SIZE];
	memcpy(hdr, WEFT_OBS_MAGIC, WEFT_OBS_MAGIC_LEN);
	weft_store_u32(hdr + WEFT_OBS_MAGIC_LEN, WEFT_OBS_VERSION);
	if (fwrite(hdr, 1, sizeof hdr, f) != sizeof hdr)
		bench_die(path);
	return f;
}

/* An event's header at b: its flags, MCV and clock. */
static void header(uint8_t *b, uint8_t flags, const char *mcv, uint64_t clock)
{
	b[WEFT_EV_OFF_FLAGS] = flags;
	memcpy(b + WEFT_EV_OFF_MODEL, mcv, 3);
	weft_store_u64(b + WEFT_EV_OFF_CLOCK, clock);
}

void bench_write_ev(FILE *f, const char *mcv, uint64_t clock, const void *payload,
		unsigned size)
{
	uint8_t b[WEFT_EV_MAX_NORMAL_SIZE];
	header(b, weft_ev_size_code(size), mcv, clock);
	if (size > 0)
		memcpy(b + WEFT_EV_OFF_PAYLOAD, payload, size);
	if (fwrite(b, 1, WEFT_EV_HEADER_SIZE + size, f) != WEFT_EV_HEADER_SIZE + size)
		bench_die("write");
}

void bench_write_jumbo(FILE *f, const char *mcv, uint64_t clock, const void *data,
		uint32_t size)
{
	uint8_t h[WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD];
	header(h, WEFT_EV_FLAG_JUMBO | WEFT_EV_JUMBO_NIBBLE, mcv, clock);
	weft_store_u32(h + WEFT_EV_OFF_PAYLOAD, size);
	if (fwrite(h, 1, sizeof h, f) != sizeof h || fwrite(data, 1, size, f) != size)
		bench_die("write");
}
