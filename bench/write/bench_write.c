/* SPDX-License-Identifier: MIT */
/*
 * bench_write - what writing a trace costs a whole program: libovni against
 * a floor program that write(2)s the same bytes to the same files.
 *
 * Each run is a fork()ed child process (a whole program: ovni_proc_init to
 * ovni_proc_fini), timed by the parent from wait4's rusage (user and system
 * CPU time of the child) and the wall clock.
 *
 *   bulk, libovni: 4 threads, each ovni_thread_init, ovni_thread_require,
 *                  EVENTS events without payload (ovni_clock_now,
 *                  ovni_ev_set_clock, ovni_ev_set_mcv, ovni_ev_emit),
 *                  ovni_thread_free; 2 MiB buffers (the default).
 *   bulk, floor:   4 threads, each creating the same thread.<tid>/ directory
 *                  and its three files, reading clock_gettime and storing
 *                  the same 12-byte events into a 2 MiB buffer written with
 *                  one write(2) whenever the next event does not fit, and
 *                  writing stream.json and stream.idx once at the end (the
 *                  index, as libovni's, only for a stream of two writes or
 *                  more: a one-write stream has none).
 *   threads, libovni: THREADS threads (8 at a time), each ovni_thread_init,
 *                  two ovni_thread_require, two ovni_add_cpu, one
 *                  ovni_mark_type, 16 events, ovni_thread_free.
 *   threads, floor: the same threads creating the same directories and
 *                  files, each file written once.
 *
 *   bulk, libovni tsc: the bulk libovni program with WEFT_CLOCK=tsc (where
 *                  libovni takes it: x86-64, an invariant TSC that the
 *                  kernel uses; otherwise the line says why not).
 *   bulk, floor calls: the bulk floor program with its clock read, store
 *                  and write behind the four calls per event that the ovni
 *                  API makes (bench_write_calls.c: a shared library of the
 *                  same shapes as ovni_clock_now, ovni_ev_set_clock,
 *                  ovni_ev_set_mcv and ovni_ev_emit, called through the
 *                  PLT as libovni's are), otherwise the floor: what the
 *                  calls themselves cost.
 *
 * Each figure is the best of REPETITIONS runs, libovni and floor in turns
 * (a noisy neighbour hits both alike). Lines "write/floor ratio: R" (bulk,
 * user + system CPU time) and "threads write/floor ratio: R" (the same for
 * the thread-heavy case), each with the wall-time ratio beside it; before
 * them "write/floor system-time ratio: S (user-time ratio U)" (bulk: where
 * the difference is, in the kernel or in the program) and "tsc write/floor
 * ratio: R (wall W, system S, user U)" (the bulk TSC run against the same
 * floor, which reads clock_gettime per event as the default libovni does),
 * "calls/floor ratio: R (user U)" (the floor behind the API's calls against
 * the floor: the calls' cost) and "write/calls ratio: R (user U)" (libovni
 * against the floor behind the calls: libovni's own work).
 *
 * usage: bench_write [EVENTS [REPETITIONS [THREADS [SIDE]]]]
 *        (default 5000000 events per thread, 3 repetitions, 500 threads;
 *        SIDE "libovni", "floor" or "calls" runs that side only (calls: the
 *        bulk case's floor calls alone), without ratios, e.g.
 *        under strace -f -c to count the system calls of one side)
 * Everything is written under a temporary directory in $TMPDIR (or /tmp),
 * removed at the end and on every error path of the parent.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_tsc.h"
#include "bench_write_calls.h"
#include "ovni.h"

#define BULK_THREADS 4
#define BUF_SIZE ((size_t) OVNI_MAX_EV_BUF)
#define EV_SIZE 12u
#define HEAVY_BATCH 8
#define HEAVY_EVENTS 16

static long nevents = 5000000;
static int nheavy = 500;
static char tmpdir[4096];
static int run_no;

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void) st;
	(void) flag;
	(void) ftw;
	return remove(path);
}

static void cleanup(void)
{
	if (tmpdir[0] != '\0')
		nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	tmpdir[0] = '\0';
}

static void die(const char *msg)
{
	fprintf(stderr, "bench_write: %s: %s\n", msg, strerror(errno));
	cleanup();
	exit(1);
}

/* In a child: report and leave without cleaning (the parent does). */
static void child_die(const char *msg)
{
	fprintf(stderr, "bench_write (child): %s: %s\n", msg, strerror(errno));
	_exit(1);
}

static double wall_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static uint64_t clock_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

/* ---- libovni ---- */

struct targ {
	int tid;
	long events;
	int heavy;
};

static void *ovni_thread(void *p)
{
	const struct targ *a = p;
	ovni_thread_init(a->tid);
	ovni_thread_require("nosv", "2.5.0");
	if (a->heavy) {
		ovni_thread_require("nanos6", "1.1.0");
		ovni_add_cpu(a->tid % 64, a->tid % 64);
		ovni_add_cpu(a->tid % 64 + 64, a->tid % 64 + 64);
		ovni_mark_type(1, OVNI_MARK_STACK, "Phase");
	}
	struct ovni_ev ev = {0};
	for (long i = 0; i < a->events; i++) {
		ovni_ev_set_clock(&ev, (uint64_t) ovni_clock_now());
		ovni_ev_set_mcv(&ev, "OB.");
		ovni_ev_emit(&ev);
	}
	ovni_thread_free();
	return NULL;
}

/* ---- floor ---- */

/* About the size of a thread's stream.json (written once). */
static const char floor_json[] =
	"{\n    \"version\": 3,\n    \"ovni\": {\n        \"lib\": {\n            \"version\": \"1.14.0\",\n"
	"            \"commit\": \"weft\"\n        },\n        \"part\": \"thread\",\n        \"tid\": 1,\n"
	"        \"pid\": 1,\n        \"loom\": \"bench\",\n        \"app_id\": 1,\n        \"require\": {\n"
	"            \"ovni\": \"1.1.0\",\n            \"nosv\": \"2.5.0\"\n        },\n"
	"        \"finished\": 1\n    },\n    \"weft\": {\n        \"version\": \"0.1.0\"\n    }\n}";

static void write_full(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			child_die("write");
		p += w;
		len -= (size_t) w;
	}
}

static int open_new(const char *dir, const char *name)
{
	char path[8192];
	if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int) sizeof path)
		child_die("path too long");
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0)
		child_die(path);
	return fd;
}

static const char *floor_proc_dir;
static int floor_calls; /* the bulk floor through bench_write_calls.c */

static void *floor_thread(void *p)
{
	const struct targ *a = p;
	char dir[8192];
	if (snprintf(dir, sizeof dir, "%s/thread.%d", floor_proc_dir, a->tid) >= (int) sizeof dir)
		child_die("path too long");
	if (mkdir(dir, 0777) != 0)
		child_die(dir);
	int fd = open_new(dir, "stream.obs");
	static const uint8_t hdr[8] = {'o', 'v', 'n', 'i', 1, 0, 0, 0};
	write_full(fd, hdr, sizeof hdr);
	uint8_t *buf = malloc(BUF_SIZE);
	uint8_t *idx = malloc(16u + 16u * ((size_t) a->events * EV_SIZE / BUF_SIZE + 2u));
	if (buf == NULL || idx == NULL)
		child_die("malloc");
	memset(idx, 0, 16);
	size_t nidx = 1, pos = 0;
	long inline_events = a->events; /* the floor's own loop (none behind the calls) */
	if (floor_calls) {
		inline_events = 0;
		/* The same clock read, store and writes, behind the calls. */
		bwc_thread_init(fd, buf, BUF_SIZE);
		struct ovni_ev ev = {0};
		for (long i = 0; i < a->events; i++) {
			bwc_ev_set_clock(&ev, bwc_clock_now());
			bwc_ev_set_mcv(&ev, "OB.");
			bwc_ev_emit(&ev);
		}
		unsigned long writes = bwc_thread_fini();
		for (unsigned long w = 0; w < writes; w++)
			memset(idx + 16u * nidx++, 0, 16);
	}
	for (long i = 0; i < inline_events; i++) {
		if (pos + EV_SIZE > BUF_SIZE) {
			write_full(fd, buf, pos);
			memset(idx + 16u * nidx++, 0, 16);
			pos = 0;
		}
		uint64_t c = clock_ns();
		buf[pos] = 0;
		buf[pos + 1] = 'O';
		buf[pos + 2] = 'B';
		buf[pos + 3] = '.';
		memcpy(buf + pos + 4, &c, sizeof c);
		pos += EV_SIZE;
	}
	if (pos > 0) {
		write_full(fd, buf, pos);
		memset(idx + 16u * nidx++, 0, 16);
	}
	close(fd);
	if (nidx > 2) { /* as libovni: an index only for a stream of two writes or more */
		fd = open_new(dir, "stream.idx");
		write_full(fd, idx, 16u * nidx);
		close(fd);
	}
	fd = open_new(dir, "stream.json");
	write_full(fd, floor_json, sizeof floor_json - 1u);
	close(fd);
	free(buf);
	free(idx);
	return NULL;
}

/* ---- one whole program ---- */

/* Runs nthreads threads (batch at a time) of fn, each with events. */
static void run_threads(void *(*fn)(void *), int nthreads, int batch, long events, int heavy)
{
	struct targ *args = calloc((size_t) nthreads, sizeof *args);
	pthread_t *ths = calloc((size_t) batch, sizeof *ths);
	if (args == NULL || ths == NULL)
		child_die("calloc");
	for (int first = 0; first < nthreads; first += batch) {
		int n = nthreads - first < batch ? nthreads - first : batch;
		for (int i = 0; i < n; i++) {
			args[first + i] = (struct targ){100 + first + i, events, heavy};
			if (pthread_create(&ths[i], NULL, fn, &args[first + i]) != 0)
				child_die("pthread_create");
		}
		for (int i = 0; i < n; i++)
			pthread_join(ths[i], NULL);
	}
	free(args);
	free(ths);
}

static void child_main(int use_ovni, int nthreads, int batch, long events, int heavy, const char *trace)
{
	if (use_ovni == 1 || use_ovni == 2) {
		setenv("OVNI_TRACEDIR", trace, 1);
		unsetenv("OVNI_TMPDIR");
		unsetenv("WEFT_BUFSIZE");
		if (use_ovni == 2)
			setenv("WEFT_CLOCK", "tsc", 1);
		else
			unsetenv("WEFT_CLOCK");
		ovni_version_check();
		ovni_proc_init(1, "bench", (int) getpid());
		run_threads(ovni_thread, nthreads, batch, events, heavy);
		ovni_proc_fini();
	} else {
		char dir[8192];
		if (snprintf(dir, sizeof dir, "%s/loom.bench", trace) >= (int) sizeof dir)
			child_die("path too long");
		if (mkdir(trace, 0777) != 0 || mkdir(dir, 0777) != 0)
			child_die(dir);
		if (snprintf(dir, sizeof dir, "%s/loom.bench/proc.%d", trace, (int) getpid()) >= (int) sizeof dir)
			child_die("path too long");
		if (mkdir(dir, 0777) != 0)
			child_die(dir);
		floor_proc_dir = dir;
		floor_calls = use_ovni == 3;
		run_threads(floor_thread, nthreads, batch, events, heavy);
	}
	_exit(0);
}

struct times {
	double user, sys, wall;
};

/* One whole program: use_ovni 0 the floor, 1 libovni, 2 libovni with
 * WEFT_CLOCK=tsc, 3 the floor through bench_write_calls.c. */
static struct times run(int use_ovni, int nthreads, int batch, long events, int heavy)
{
	char trace[8192];
	if (snprintf(trace, sizeof trace, "%s/run%d", tmpdir, run_no++) >= (int) sizeof trace) {
		errno = ENAMETOOLONG;
		die("the temporary directory");
	}
	fflush(NULL);
	double t0 = wall_s();
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0)
		child_main(use_ovni, nthreads, batch, events, heavy, trace);
	int st;
	struct rusage ru;
	pid_t w;
	do
		w = wait4(pid, &st, 0, &ru);
	while (w < 0 && errno == EINTR);
	double t1 = wall_s();
	if (w != pid)
		die("wait4");
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		errno = 0;
		die(use_ovni == 1 || use_ovni == 2 ? "the libovni program failed" : "the floor program failed");
	}
	/* Bound what is on disk: each run's files go before the next. */
	nftw(trace, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	struct times t = {
		(double) ru.ru_utime.tv_sec + (double) ru.ru_utime.tv_usec * 1e-6,
		(double) ru.ru_stime.tv_sec + (double) ru.ru_stime.tv_usec * 1e-6,
		t1 - t0,
	};
	return t;
}

static void keep_best(struct times *best, struct times t)
{
	if (best->wall == 0 || t.user + t.sys < best->user + best->sys) {
		best->user = t.user;
		best->sys = t.sys;
	}
	if (best->wall == 0 || t.wall < best->wall)
		best->wall = t.wall;
}

static void print(const char *what, struct times t, double per)
{
	printf("%-18s user %7.3f s  system %7.3f s  cpu %7.3f s  wall %7.3f s", what, t.user, t.sys,
	       t.user + t.sys, t.wall);
	if (per > 0)
		printf("  (%.1f us cpu per thread)", (t.user + t.sys) * 1e6 / per);
	printf("\n");
}

int main(int argc, char **argv)
{
	int reps = 3;
	if (argc > 1)
		nevents = atol(argv[1]);
	if (argc > 2)
		reps = atoi(argv[2]);
	if (argc > 3)
		nheavy = atoi(argv[3]);
	int sides = 7; /* bit 0: libovni, bit 1: floor, bit 2: the floor behind the calls */
	if (argc > 4)
		sides = strcmp(argv[4], "libovni") == 0 ? 1
			: strcmp(argv[4], "floor") == 0 ? 2
			: strcmp(argv[4], "calls") == 0 ? 4
							 : 0;
	if (nevents <= 0 || reps <= 0 || nheavy <= 0 || sides == 0) {
		fprintf(stderr, "usage: bench_write [EVENTS [REPETITIONS [THREADS [libovni|floor|calls]]]]\n");
		return 2;
	}
	const char *base = getenv("TMPDIR");
	snprintf(tmpdir, sizeof tmpdir, "%s/weft-bench-write-XXXXXX",
		 base != NULL && base[0] != '\0' ? base : "/tmp");
	if (mkdtemp(tmpdir) == NULL) {
		tmpdir[0] = '\0';
		die("mkdtemp");
	}
	printf("bench_write: %d threads x %ld events and %d threads x %d events, best of %d, %zu-byte buffers, in %s\n",
	       BULK_THREADS, nevents, nheavy, HEAVY_EVENTS, reps, BUF_SIZE, tmpdir);
	fflush(stdout);

	const char *no_tsc = NULL;
	int tsc = bench_tsc_usable(&no_tsc);
	struct times bw = {0}, bf = {0}, hw = {0}, hf = {0}, bt = {0}, bc = {0};
	for (int r = 0; r < reps; r++) {
		if (sides & 1)
			keep_best(&bw, run(1, BULK_THREADS, BULK_THREADS, nevents, 0));
		if (sides & 2)
			keep_best(&bf, run(0, BULK_THREADS, BULK_THREADS, nevents, 0));
		if ((sides & 1) && tsc)
			keep_best(&bt, run(2, BULK_THREADS, BULK_THREADS, nevents, 0));
		if (sides & 4)
			keep_best(&bc, run(3, BULK_THREADS, BULK_THREADS, nevents, 0));
		if (sides & 1)
			keep_best(&hw, run(1, nheavy, HEAVY_BATCH, HEAVY_EVENTS, 1));
		if (sides & 2)
			keep_best(&hf, run(0, nheavy, HEAVY_BATCH, HEAVY_EVENTS, 1));
	}
	cleanup();
	if (sides == 4) {
		print("bulk, floor calls:", bc, 0);
		return 0;
	}
	if (sides != 7) {
		print(sides == 1 ? "bulk, libovni:" : "bulk, floor:", sides == 1 ? bw : bf, 0);
		print(sides == 1 ? "threads, libovni:" : "threads, floor:", sides == 1 ? hw : hf, nheavy);
		if (sides == 1 && tsc)
			print("bulk, libovni tsc:", bt, 0);
		return 0;
	}

	print("bulk, libovni:", bw, 0);
	print("bulk, floor:", bf, 0);
	print("bulk, floor calls:", bc, 0);
	if (tsc)
		print("bulk, libovni tsc:", bt, 0);
	else
		printf("bulk, libovni tsc: not measured (%s)\n", no_tsc);
	print("threads, libovni:", hw, nheavy);
	print("threads, floor:", hf, nheavy);
	printf("threads write/floor ratio: %.2f (wall %.2f)\n", (hw.user + hw.sys) / (hf.user + hf.sys),
	       hw.wall / hf.wall);
	printf("write/floor system-time ratio: %.2f (user-time ratio %.2f)\n", bw.sys / bf.sys, bw.user / bf.user);
	if (tsc)
		printf("tsc write/floor ratio: %.2f (wall %.2f, system %.2f, user %.2f)\n",
		       (bt.user + bt.sys) / (bf.user + bf.sys), bt.wall / bf.wall, bt.sys / bf.sys, bt.user / bf.user);
	else
		printf("tsc write/floor ratio: not measured (%s)\n", no_tsc);
	printf("calls/floor ratio: %.2f (user %.2f)\n", (bc.user + bc.sys) / (bf.user + bf.sys), bc.user / bf.user);
	printf("write/calls ratio: %.2f (user %.2f)\n", (bw.user + bw.sys) / (bc.user + bc.sys), bw.user / bc.user);
	printf("write/floor ratio: %.2f (wall %.2f)\n", (bw.user + bw.sys) / (bf.user + bf.sys), bw.wall / bf.wall);
	return 0;
}
