/* SPDX-License-Identifier: MIT */
/*
 * bench_python_c - the C side of bench_python (bench_python.py):
 *   bench_python_c write DIR EVENTS  writes a synthetic trace of EVENTS events
 *                                    (8 streams, bursts of 1..64 events, 15% with
 *                                    4..16 bytes of payload, a few jumbo events)
 *   bench_python_c batch DIR         reads it with weft_next_batch (touching each
 *                                    event's clock, MCV and payload size) and
 *                                    prints "SECONDS EVENTS"
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "obs_format.h"
#include "weft/weft.h"

#define NSTREAMS 8

static uint64_t rng = 88172645463325252ull;

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t) (rng >> 11);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

struct out {
	int fd;
	uint8_t *buf;
	size_t len;
};

static void put(struct out *o, const void *p, size_t n)
{
	if (o->len + n > (1u << 20)) {
		if (write(o->fd, o->buf, o->len) != (ssize_t) o->len) {
			perror("bench_python_c: write");
			exit(1);
		}
		o->len = 0;
	}
	memcpy(o->buf + o->len, p, n);
	o->len += n;
}

static int write_trace(const char *root, uint64_t total)
{
	char path[4096];
	struct out o[NSTREAMS];
	snprintf(path, sizeof path, "%s/loom.bench", root);
	mkdir(path, 0755);
	snprintf(path, sizeof path, "%s/loom.bench/proc.1", root);
	mkdir(path, 0755);
	for (int s = 0; s < NSTREAMS; s++) {
		snprintf(path, sizeof path, "%s/loom.bench/proc.1/thread.%d", root, s + 1);
		mkdir(path, 0755);
		snprintf(path, sizeof path, "%s/loom.bench/proc.1/thread.%d/stream.json", root, s + 1);
		FILE *f = fopen(path, "w");
		if (f == NULL) {
			perror(path);
			return 1;
		}
		fprintf(f, "{\"version\": 3, \"ovni\": {\"lib\": {\"version\": \"1.14.0\", \"commit\": "
				"\"bench\"}, \"part\": \"thread\", \"tid\": %d, \"pid\": 1, \"loom\": "
				"\"bench\", \"app_id\": 1, \"require\": {\"ovni\": \"1.1.0\"}, %s"
				"\"finished\": 1}}", s + 1,
				s == 0 ? "\"loom_cpus\": [{\"index\": 0, \"phyid\": 0}], " : "");
		fclose(f);
		snprintf(path, sizeof path, "%s/loom.bench/proc.1/thread.%d/stream.obs", root, s + 1);
		o[s].fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		o[s].buf = malloc(1u << 20);
		o[s].len = 0;
		if (o[s].fd < 0 || o[s].buf == NULL) {
			perror(path);
			return 1;
		}
		uint8_t hdr[WEFT_OBS_HEADER_SIZE];
		memcpy(hdr, WEFT_OBS_MAGIC, WEFT_OBS_MAGIC_LEN);
		weft_store_u32(hdr + WEFT_OBS_MAGIC_LEN, WEFT_OBS_VERSION);
		put(&o[s], hdr, sizeof hdr);
	}
	static uint8_t jumbo[4200];
	memset(jumbo, 0x33, sizeof jumbo);
	uint64_t clock = 1000, left = total;
	while (left > 0) {
		int s = (int) (rnd() % NSTREAMS);
		uint64_t burst = 1 + rnd() % 64;
		if (burst > left)
			burst = left;
		for (uint64_t k = 0; k < burst; k++) {
			uint8_t ev[WEFT_EV_MAX_NORMAL_SIZE + WEFT_EV_JUMBO_SIZE_FIELD];
			uint32_t r = rnd() % 10000;
			clock += 1 + rnd() % 3;
			memcpy(ev + WEFT_EV_OFF_MODEL, k % 3 ? "OB." : "OHp", 3);
			weft_store_u64(ev + WEFT_EV_OFF_CLOCK, clock);
			if (r < 2) {
				uint32_t n = 100 + rnd() % 4000;
				ev[WEFT_EV_OFF_FLAGS] = WEFT_EV_FLAG_JUMBO | WEFT_EV_JUMBO_NIBBLE;
				memcpy(ev + WEFT_EV_OFF_MODEL, "OU[", 3);
				weft_store_u32(ev + WEFT_EV_OFF_PAYLOAD, n);
				put(&o[s], ev, WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD);
				put(&o[s], jumbo, n);
			} else if (r < 1500) {
				unsigned n = 4 + rnd() % 13;
				ev[WEFT_EV_OFF_FLAGS] = weft_ev_size_code(n);
				memset(ev + WEFT_EV_OFF_PAYLOAD, 0x5a, n);
				put(&o[s], ev, WEFT_EV_HEADER_SIZE + n);
			} else {
				ev[WEFT_EV_OFF_FLAGS] = 0;
				put(&o[s], ev, WEFT_EV_HEADER_SIZE);
			}
		}
		left -= burst;
	}
	for (int s = 0; s < NSTREAMS; s++) {
		if (write(o[s].fd, o[s].buf, o[s].len) != (ssize_t) o[s].len) {
			perror("bench_python_c: write");
			return 1;
		}
		close(o[s].fd);
		free(o[s].buf);
	}
	return 0;
}

static int batch(const char *root)
{
	char err[WEFT_ERR_MAX];
	double t0 = now();
	struct weft_trace *t = weft_open(root, NULL, err, sizeof err);
	if (t == NULL) {
		fprintf(stderr, "bench_python_c: %s\n", err);
		return 1;
	}
	static struct weft_event evs[4096];
	uint64_t n = 0, sum = 0;
	long r;
	while ((r = weft_next_batch(t, evs, 4096)) > 0) {
		for (long i = 0; i < r; i++)
			sum += (uint64_t) evs[i].rclock + (uint8_t) evs[i].mcv[0] + evs[i].payload_size;
		n += (uint64_t) r;
	}
	if (r < 0) {
		fprintf(stderr, "bench_python_c: %s\n", weft_error(t));
		return 1;
	}
	weft_close(t);
	printf("%.9f %" PRIu64 " %d\n", now() - t0, n, (int) (sum & 1));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "write") == 0)
		return write_trace(argv[2], strtoull(argv[3], NULL, 10));
	if (argc == 3 && strcmp(argv[1], "batch") == 0)
		return batch(argv[2]);
	fprintf(stderr, "usage: bench_python_c write DIR EVENTS | batch DIR\n");
	return 2;
}
