/* SPDX-License-Identifier: MIT */
/*
 * bench_emit - cost of libovni's emit path against a floor.
 *
 *   emit, no payload:  ovni_clock_now + ovni_ev_set_clock + ovni_ev_set_mcv
 *                      + ovni_ev_emit, as real instrumentation does;
 *   emit, 16 bytes:    the same with a 16-byte payload (ovni_payload_add);
 *   floor:             clock_gettime(CLOCK_MONOTONIC), a 12-byte store into
 *                      a 2 MiB buffer, written to a file in the same
 *                      directory when full.
 *
 *   emit, WEFT_FLUSH_MS=50: the no-payload emit in a fork()ed process with
 *                      timed flushes on (each buffer written once it holds
 *                      an event 50 ms old).
 *   emit, WEFT_RING=1M: the no-payload emit in a fork()ed process in
 *                      flight-recorder mode with a 1 MiB ring (it wraps
 *                      every 87381 events; written once, at the end).
 *
 *   emit, WEFT_CLOCK=tsc: the no-payload emit in a fork()ed process whose
 *                      clock is the time stamp counter (x86-64 with an
 *                      invariant TSC that the kernel uses; otherwise the
 *                      line says why it was not measured);
 *   floor, TSC:        rdtsc, a 12-byte store into a 2 MiB buffer, written
 *                      when full (the floor of the TSC emit);
 *   emit, WEFT_FILTER=-K: the no-payload emit (model O) with a filter that
 *                      concerns another model: each event is kept by one
 *                      lookup of the filter table;
 *   emit, WEFT_FILTER=-O: the same with a filter that drops every event;
 *   emit, WEFT_OUTPUT=off: the no-payload emit recording into the buffers
 *                      and writing nothing (the perturbation mode).
 *   emit, WEFT_SAMPLE_MS=1: the no-payload emit in a fork()ed process that
 *                      records a sample every millisecond (the owner, at
 *                      its first emit past each deadline); its baseline,
 *                      WEFT_SAMPLE_MS=0, the same fork()ed run without.
 *
 * Each figure is the best of several repetitions (interleaved, so that a
 * noisy neighbour hits all alike), in CPU time of the looping thread. Last line: "emit/floor ratio: R"
 * for the no-payload case; the line before it, "ring emit/floor ratio: R",
 * for the ring, and the one before, "emit/floor ratio with
 * WEFT_FLUSH_MS=50: R", for the timed flushes. Before those:
 * "tsc emit/floor ratio: R" (the TSC emit against the TSC floor) and
 * "emit/floor ratio with a filter: R (F x the one without)" and
 * "emit/floor ratio with sampling: R (F x the one without)" (F against
 * the fork()ed run with WEFT_SAMPLE_MS=0).
 *
 * usage: bench_emit [EVENTS [REPETITIONS]]   (default 20000000 and 5)
 * The trace goes to a temporary directory under $TMPDIR (or /tmp), which
 * is removed at the end.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <sys/wait.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_tsc.h"
#include "ovni.h"

#define FLOOR_BUF (2u * 1024u * 1024u)

static long nevents = 20000000;
static char tmpdir[4096];
static int next_tid = 1;

/* The CPU time of the calling thread (user and system: the write(2)s
 * count), not the wall clock: on a loaded machine the time the thread
 * waits for a CPU would swamp what is measured. Every figure is taken on
 * the thread that runs the loop. */
static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static void die(const char *msg)
{
	fprintf(stderr, "bench_emit: %s: %s\n", msg, strerror(errno));
	exit(1);
}

struct run {
	int payload; /* 0 or 16 */
	int tid;
	double seconds;
};

/* One repetition in a fresh thread (a finished libovni thread cannot be
 * initialized again), timing only the emit loop. */
static void *emit_thread(void *p)
{
	struct run *r = p;
	ovni_thread_init(r->tid);
	struct ovni_ev ev = {0};
	uint8_t payload[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
	double t0 = now_s();
	if (r->payload == 0) {
		for (long i = 0; i < nevents; i++) {
			ovni_ev_set_clock(&ev, ovni_clock_now());
			ovni_ev_set_mcv(&ev, "OHp");
			ovni_ev_emit(&ev);
		}
	} else {
		for (long i = 0; i < nevents; i++) {
			struct ovni_ev e = {0};
			ovni_ev_set_clock(&e, ovni_clock_now());
			ovni_ev_set_mcv(&e, "OHx");
			ovni_payload_add(&e, payload, (int) sizeof payload);
			ovni_ev_emit(&e);
		}
	}
	r->seconds = now_s() - t0;
	ovni_thread_free();
	return NULL;
}

static void remove_stream(int tid)
{
	char path[8192];
	for (int k = 0; k < 2; k++) {
		snprintf(path, sizeof path, "%s/trace/loom.bench/proc.%d/thread.%d/%s", tmpdir, (int) getpid(), tid,
			 k == 0 ? "stream.obs" : "stream.json");
		unlink(path);
	}
	snprintf(path, sizeof path, "%s/trace/loom.bench/proc.%d/thread.%d", tmpdir, (int) getpid(), tid);
	rmdir(path);
}

static double run_emit(int payload)
{
	struct run r = {.payload = payload, .tid = next_tid++};
	pthread_t th;
	if (pthread_create(&th, NULL, emit_thread, &r) != 0)
		die("pthread_create");
	pthread_join(th, NULL);
	remove_stream(r.tid);
	return r.seconds;
}

/* The no-payload emit with var=value (WEFT_FLUSH_MS=50, WEFT_RING=1M), in
 * a child process (the variable is read by ovni_proc_init, once per
 * process). */
static double run_emit_env(const char *var, const char *value)
{
	int fds[2];
	if (pipe(fds) != 0)
		die("pipe");
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		close(fds[0]);
		setenv(var, value, 1);
		ovni_proc_init(1, "bench", (int) getpid());
		struct run r = {.payload = 0, .tid = 1};
		pthread_t th;
		if (pthread_create(&th, NULL, emit_thread, &r) != 0)
			_exit(1);
		pthread_join(th, NULL);
		ovni_proc_fini();
		ssize_t w = write(fds[1], &r.seconds, sizeof r.seconds);
		_exit(w == (ssize_t) sizeof r.seconds ? 0 : 1);
	}
	close(fds[1]);
	double s = 0;
	ssize_t n = read(fds[0], &s, sizeof s);
	close(fds[0]);
	int st = 0;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0 || n != (ssize_t) sizeof s) {
		char msg[128];
		snprintf(msg, sizeof msg, "the run with %s=%s failed", var, value);
		errno = ECHILD;
		die(msg);
	}
	return s;
}

static void write_all(int fd, const uint8_t *buf, size_t len)
{
	while (len > 0) {
		ssize_t w = write(fd, buf, len);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			die("write to the floor file");
		}
		buf += w;
		len -= (size_t) w;
	}
}

static double run_floor(void)
{
	char path[8192];
	snprintf(path, sizeof path, "%s/floor.bin", tmpdir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die("open the floor file");
	uint8_t *buf = malloc(FLOOR_BUF);
	if (buf == NULL)
		die("malloc");
	size_t used = 0;
	uint8_t hdr[12] = {0, 'O', 'H', 'p'};
	double t0 = now_s();
	for (long i = 0; i < nevents; i++) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		uint64_t clock = (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
		if (used + sizeof hdr > FLOOR_BUF) {
			write_all(fd, buf, used);
			used = 0;
		}
		memcpy(hdr + 4, &clock, sizeof clock);
		memcpy(buf + used, hdr, sizeof hdr);
		used += sizeof hdr;
	}
	write_all(fd, buf, used);
	double s = now_s() - t0;
	close(fd);
	unlink(path);
	free(buf);
	return s;
}

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

static double run_floor_tsc(void)
{
#if defined(__x86_64__)
	char path[8192];
	snprintf(path, sizeof path, "%s/floor-tsc.bin", tmpdir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die("open the floor file");
	uint8_t *buf = malloc(FLOOR_BUF);
	if (buf == NULL)
		die("malloc");
	size_t used = 0;
	uint8_t hdr[12] = {0, 'O', 'H', 'p'};
	double t0 = now_s();
	for (long i = 0; i < nevents; i++) {
		uint64_t clock = __rdtsc();
		if (used + sizeof hdr > FLOOR_BUF) {
			write_all(fd, buf, used);
			used = 0;
		}
		memcpy(hdr + 4, &clock, sizeof clock);
		memcpy(buf + used, hdr, sizeof hdr);
		used += sizeof hdr;
	}
	write_all(fd, buf, used);
	double s = now_s() - t0;
	close(fd);
	unlink(path);
	free(buf);
	return s;
#else
	return 0;
#endif
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void) st;
	(void) flag;
	(void) ftw;
	return remove(path);
}

int main(int argc, char **argv)
{
	int reps = 5;
	if (argc > 1)
		nevents = atol(argv[1]);
	if (argc > 2)
		reps = atoi(argv[2]);
	if (nevents <= 0 || reps <= 0) {
		fprintf(stderr, "usage: bench_emit [EVENTS [REPETITIONS]]\n");
		return 2;
	}
	const char *base = getenv("TMPDIR");
	snprintf(tmpdir, sizeof tmpdir, "%s/weft-bench-emit-XXXXXX", base != NULL && base[0] != '\0' ? base : "/tmp");
	if (mkdtemp(tmpdir) == NULL)
		die("mkdtemp");
	char trace[8192];
	snprintf(trace, sizeof trace, "%s/trace", tmpdir);
	setenv("OVNI_TRACEDIR", trace, 1);
	unsetenv("OVNI_TMPDIR");
	unsetenv("WEFT_BUFSIZE");

	ovni_version_check();
	ovni_proc_init(1, "bench", (int) getpid());
	printf("bench_emit: %ld events x %d repetitions (best of), %lld-byte buffers, in %s\n", nevents, reps,
	       (long long) OVNI_MAX_EV_BUF, tmpdir);

	const char *no_tsc = NULL;
	int tsc = bench_tsc_usable(&no_tsc);
	double best_e0 = 1e30, best_e16 = 1e30, best_floor = 1e30, best_ef = 1e30, best_er = 1e30;
	double best_tsc = 1e30, best_ftsc = 1e30, best_fk = 1e30, best_fo = 1e30, best_off = 1e30;
	double best_s1 = 1e30, best_s0 = 1e30;
	for (int r = 0; r < reps; r++) {
		double f = run_floor();
		double e0 = run_emit(0);
		double e16 = run_emit(16);
		double ef = run_emit_env("WEFT_FLUSH_MS", "50");
		double er = run_emit_env("WEFT_RING", "1M");
		double fk = run_emit_env("WEFT_FILTER", "-K");
		double fo = run_emit_env("WEFT_FILTER", "-O");
		double off = run_emit_env("WEFT_OUTPUT", "off");
		/* in turn first and second: the run after another one that
		 * wrote pays for that one's dirty pages in its write(2) */
		double s0, s1;
		if (r % 2 == 0) {
			s0 = run_emit_env("WEFT_SAMPLE_MS", "0");
			s1 = run_emit_env("WEFT_SAMPLE_MS", "1");
		} else {
			s1 = run_emit_env("WEFT_SAMPLE_MS", "1");
			s0 = run_emit_env("WEFT_SAMPLE_MS", "0");
		}
		if (s0 < best_s0)
			best_s0 = s0;
		if (s1 < best_s1)
			best_s1 = s1;
		if (tsc) {
			double ft = run_floor_tsc();
			double et = run_emit_env("WEFT_CLOCK", "tsc");
			if (ft < best_ftsc)
				best_ftsc = ft;
			if (et < best_tsc)
				best_tsc = et;
		}
		if (fk < best_fk)
			best_fk = fk;
		if (fo < best_fo)
			best_fo = fo;
		if (off < best_off)
			best_off = off;
		if (ef < best_ef)
			best_ef = ef;
		if (er < best_er)
			best_er = er;
		if (f < best_floor)
			best_floor = f;
		if (e0 < best_e0)
			best_e0 = e0;
		if (e16 < best_e16)
			best_e16 = e16;
	}
	ovni_proc_fini();
	nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);

	double n = (double) nevents;
	printf("emit, no payload:          %6.2f ns/event\n", best_e0 * 1e9 / n);
	printf("emit, 16-byte payload:     %6.2f ns/event\n", best_e16 * 1e9 / n);
	printf("floor (clock + 12B store): %6.2f ns/event\n", best_floor * 1e9 / n);
	printf("emit, WEFT_FLUSH_MS=50:    %6.2f ns/event\n", best_ef * 1e9 / n);
	printf("emit, WEFT_RING=1M:        %6.2f ns/event\n", best_er * 1e9 / n);
	printf("emit, WEFT_FILTER=-K:       %6.2f ns/event (kept, one table lookup)\n", best_fk * 1e9 / n);
	printf("emit, WEFT_FILTER=-O:       %6.2f ns/event (every event dropped)\n", best_fo * 1e9 / n);
	printf("emit, WEFT_OUTPUT=off:      %6.2f ns/event (recorded, not written)\n", best_off * 1e9 / n);
	if (tsc) {
		printf("emit, WEFT_CLOCK=tsc:       %6.2f ns/event (clock_gettime: %.2f)\n", best_tsc * 1e9 / n,
		       best_e0 * 1e9 / n);
		printf("floor, TSC (rdtsc + 12B):   %6.2f ns/event\n", best_ftsc * 1e9 / n);
		printf("tsc emit/floor ratio: %.2f\n", best_tsc / best_ftsc);
	} else {
		printf("tsc emit/floor ratio: not measured (%s)\n", no_tsc);
	}
	printf("emit/floor ratio with a filter: %.2f (%.3f x the one without)\n", best_fk / best_floor,
	       best_fk / best_e0);
	printf("emit, WEFT_SAMPLE_MS=1:     %6.2f ns/event (WEFT_SAMPLE_MS=0: %.2f)\n", best_s1 * 1e9 / n,
	       best_s0 * 1e9 / n);
	printf("emit/floor ratio with sampling: %.2f (%.3f x the one without)\n", best_s1 / best_floor,
	       best_s1 / best_s0);
	printf("emit/floor ratio with WEFT_FLUSH_MS=50: %.2f\n", best_ef / best_floor);
	printf("ring emit/floor ratio: %.2f\n", best_er / best_floor);
	printf("emit/floor ratio: %.2f\n", best_e0 / best_floor);
	return 0;
}
