/* SPDX-License-Identifier: MIT */
/*
 * bench_export - how fast `weft export` writes a trace, against the read
 * pass of the same trace.
 *
 * Writes a synthetic trace of 8 threads on 8 CPUs (10^7 events by default:
 * nOS-V tasks created, run and ended, subsystems entered and left, bursts,
 * a task type now and then as a jumbo event, and a task run with 4 bytes
 * more than its fields, so that CTF's typed classes, the wildcard and jumbo
 * ones and the raw class are all written; every event one the emulator
 * accepts, which the OTF2 export needs)
 * into a temporary directory, then measures, each in a child process and
 * as the best of BEST_OF runs taken in turns over a warm page cache:
 *   - the read pass: weft_open as weft export opens the trace (lenient,
 *     unordered regions sorted on read) and weft_next_batch over every
 *     event, reading its clock: events/s;
 *   - each export format (EXPORTS[]: `weft export FORMAT TRACE -o DIR`;
 *     ctf writes the events, otf2 emulates the trace and writes its regions,
 *     the weft binary next to this one, into a directory removed after
 *     each run): events/s, the bytes it wrote and its peak RSS; the line
 *     `FORMAT/read ratio: R`, its events/s over the read pass's.
 * A format the weft binary does not know (its usage error, exit 2) is
 * reported as not built and skipped.
 * Usage: bench_export [EVENTS]   (default 10000000)
 * With WEFT_BENCH_KEEP set in the environment, the trace is kept.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_trace.h"
#include "obs_format.h"
#include "weft/weft.h"

#define NTHREADS 8
#define PID 4000
#define BEST_OF 3

/* The formats weft export writes, as many as there are: another is a line
 * here. */
static const char *const EXPORTS[] = { "ctf", "otf2" };

struct wstream {
	FILE *f;
	uint64_t n;
};

static struct wstream ws[NTHREADS];
static uint64_t gclock = 1000000;

static void emit(int t, const char *mcv, const void *payload, unsigned size)
{
	bench_write_ev(ws[t].f, mcv, gclock, payload, size);
	gclock += 1 + (gclock & 1);
	ws[t].n++;
}

static void emit_jumbo(int t, const char *mcv, const void *data, uint32_t size)
{
	bench_write_jumbo(ws[t].f, mcv, gclock, data, size);
	gclock += 2;
	ws[t].n++;
}

static void emit_task(int t, const char *mcv, uint32_t task, uint32_t body)
{
	uint8_t p[8];
	memcpy(p, &task, 4);
	memcpy(p + 4, &body, 4);
	emit(t, mcv, p, 8);
}

/* Where a thread stands, so that every event it writes is one the nOS-V
 * model accepts (the trace is emulated by weft export otf2). */
struct tstate {
	uint32_t task; /* its current task */
	int created;   /* the task created, not yet running */
	int in_task;   /* running the task's body */
	int in_sub;    /* inside a VS[ ... VS] subsystem */
};

#define NTYPES 4

static struct tstate thr[NTHREADS];
static uint32_t next_task = 1, next_type = 100 + NTYPES;

static void emit_type(int t, uint32_t type)
{
	uint8_t d[24] = { 0 };
	memcpy(d, &type, 4);
	memcpy(d + 4, "task type", 10);
	emit_jumbo(t, "VYc", d, 14);
}

/* The events still owed to close every thread: its subsystem, its task's
 * end and its OHe. */
static uint64_t owed(void)
{
	uint64_t n = NTHREADS;
	for (int t = 0; t < NTHREADS; t++)
		n += (uint64_t) (thr[t].in_sub + thr[t].in_task);
	return n;
}

/* One event of thread t, legal where it stands; with tight set, one that
 * owes nothing more. */
static void step(int t, unsigned r, int tight)
{
	struct tstate *s = &thr[t];
	if (tight) {
		emit(t, "OB.", NULL, 0);
		return;
	}
	if (!s->in_task && !s->created) {
		s->task = next_task++;
		uint32_t p[2] = { s->task, 100 + s->task % NTYPES };
		emit(t, "VTc", p, 8);
		s->created = 1;
		return;
	}
	if (!s->in_task && s->task % 16 == 0) {
		/* 4 bytes more than the fields (the model's size is ">= 8"): the
		 * emulator takes it, CTF writes it in the raw class */
		uint32_t p[3] = { s->task, 0, 0xfeedu };
		emit(t, "VTx", p, 12);
		s->created = 0;
		s->in_task = 1;
		return;
	}
	if (!s->in_task) {
		emit_task(t, "VTx", s->task, 0);
		s->created = 0;
		s->in_task = 1;
		return;
	}
	unsigned what = r % 16;
	if (what == 0 && ((r >> 4) & 63) == 0) {
		emit_type(t, next_type++); /* a jumbo event */
	} else if (what < 6) {
		emit(t, s->in_sub ? "VS]" : "VS[", NULL, 0);
		s->in_sub = !s->in_sub;
	} else if (what < 10) {
		emit(t, "OB.", NULL, 0);
	} else if (s->in_sub) {
		emit(t, "VS]", NULL, 0);
		s->in_sub = 0;
	} else {
		emit_task(t, "VTe", s->task, 0);
		s->in_task = 0;
	}
}

/* The trace: every thread starts (OHx) on a CPU of its own, runs bursts
 * of nOS-V tasks (created, run, their subsystems), ends (OHe); exactly
 * `want` events. */
static uint64_t write_trace(const char *root, uint64_t want)
{
	bench_proc_dirs(root, "bench", PID);
	for (int t = 0; t < NTHREADS; t++) {
		ws[t].f = bench_stream_open(root, "bench", PID, PID + t, "\"require\": {\"ovni\": "
				"\"1.1.0\", \"nosv\": \"2.7.0\"}, ", NTHREADS, "");
		int32_t p[4] = { t, -1, 0, 0 };
		emit(t, "OHx", p, 16);
	}
	uint64_t total = NTHREADS;
	for (uint32_t k = 0; k < NTYPES && total + owed() < want; k++, total++)
		emit_type(0, 100 + k); /* the types the tasks are of */
	unsigned rnd = 12345;
	while (total + owed() < want) {
		rnd = rnd * 1103515245u + 12345u;
		int t = (int) (rnd >> 16) % NTHREADS;
		unsigned burst = 1 + (rnd >> 8) % 64;
		for (unsigned k = 0; k < burst && total + owed() < want; k++, total++) {
			rnd = rnd * 1103515245u + 12345u;
			step(t, rnd >> 8, total + owed() + 1 == want);
		}
	}
	for (int t = 0; t < NTHREADS; t++) {
		if (thr[t].in_sub) {
			emit(t, "VS]", NULL, 0);
			total++;
		}
		if (thr[t].in_task) {
			emit_task(t, "VTe", thr[t].task, 0);
			total++;
		}
		emit(t, "OHe", NULL, 0);
		total++;
		if (fclose(ws[t].f) != 0)
			bench_die("close");
	}
	return total;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

/* The read pass, in this (child) process: exit status 0 when every event
 * was read. */
static int read_pass(const char *trace, uint64_t want)
{
	char err[WEFT_ERR_MAX];
	WEFT_OPTS(weft_open_opts, o, .mode = WEFT_LENIENT, .sort = WEFT_SORT_REGIONS);
	struct weft_trace *t = weft_open(trace, &o, err, sizeof err);
	if (t == NULL) {
		fprintf(stderr, "bench_export: %s\n", err);
		return 1;
	}
	static struct weft_event evs[512];
	long n;
	uint64_t count = 0;
	int64_t sum = 0;
	while ((n = weft_next_batch(t, evs, 512)) > 0) {
		for (long k = 0; k < n; k++)
			sum += evs[k].sclock;
		count += (uint64_t) n;
	}
	weft_close(t);
	return n < 0 || count != want || sum == 0;
}

struct result {
	double secs;
	long rss_kb;
	int status;
};

/* Runs argv (or, when argv is NULL, the read pass) in a child. */
static struct result child(char *const *argv, const char *trace, uint64_t want)
{
	struct result r = { 0, 0, -1 };
	double t0 = now();
	pid_t pid = fork();
	if (pid < 0)
		bench_die("fork");
	if (pid == 0) {
		if (argv == NULL)
			_exit(read_pass(trace, want));
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0) {
			dup2(null, STDOUT_FILENO);
			dup2(null, STDERR_FILENO);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	int status;
	struct rusage ru;
	if (wait4(pid, &status, 0, &ru) != pid)
		bench_die("wait4");
	r.secs = now() - t0;
	r.rss_kb = ru.ru_maxrss;
	r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	return r;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void) st;
	(void) flag;
	(void) ftw;
	return remove(p);
}

static uint64_t dir_bytes(const char *dir)
{
	char cmd[PATH_MAX + 64];
	snprintf(cmd, sizeof cmd, "du -sb '%s' 2>/dev/null", dir);
	FILE *p = popen(cmd, "r");
	unsigned long long b = 0;
	if (p != NULL) {
		if (fscanf(p, "%llu", &b) != 1)
			b = 0;
		pclose(p);
	}
	return b;
}

int main(int argc, char **argv)
{
	uint64_t want = argc > 1 ? strtoull(argv[1], NULL, 10) : 10000000u;
	if (want < 100) {
		fprintf(stderr, "usage: bench_export [EVENTS (at least 100)]\n");
		return 2;
	}
	char weft[PATH_MAX];
	ssize_t l = readlink("/proc/self/exe", weft, sizeof weft - 16);
	if (l <= 0)
		bench_die("/proc/self/exe");
	weft[l] = '\0';
	strcpy(strrchr(weft, '/') + 1, "weft");
	char root[] = "/tmp/weft-bench-export-XXXXXX";
	if (mkdtemp(root) == NULL)
		bench_die("mkdtemp");
	char trace[PATH_MAX], out[PATH_MAX];
	snprintf(trace, sizeof trace, "%s/ovni", root);
	snprintf(out, sizeof out, "%s/out", root);
	if (mkdir(trace, 0777) != 0)
		bench_die(trace);
	double t0 = now();
	uint64_t n = write_trace(trace, want);
	uint64_t tbytes = dir_bytes(trace);
	printf("trace: %" PRIu64 " events, %d streams, %.1f MB (written in %.1f s)\n", n,
			NTHREADS, (double) tbytes / 1e6, now() - t0);

	size_t nx = sizeof EXPORTS / sizeof EXPORTS[0];
	struct result best_read = { 1e30, 0, 0 }, best[8];
	int skip[8] = { 0 };
	uint64_t wrote[8] = { 0 };
	for (size_t x = 0; x < nx; x++)
		best[x] = (struct result) { 1e30, 0, 0 };
	for (int run = 0; run < BEST_OF; run++) {
		struct result r = child(NULL, trace, n);
		if (r.status != 0) {
			fprintf(stderr, "bench_export: the read pass failed (status %d)\n", r.status);
			return 1;
		}
		if (r.secs < best_read.secs)
			best_read = r;
		for (size_t x = 0; x < nx; x++) {
			if (skip[x])
				continue;
			char *args[] = { weft, "export", (char *) EXPORTS[x], "-q", trace, "-o", out,
				NULL };
			r = child(args, trace, n);
			if (r.status == 2) {
				skip[x] = 1;
				continue;
			}
			if (r.status != 0) {
				fprintf(stderr, "bench_export: weft export %s failed (status %d)\n",
						EXPORTS[x], r.status);
				return 1;
			}
			wrote[x] = dir_bytes(out);
			nftw(out, rm_one, 16, FTW_DEPTH | FTW_PHYS);
			if (r.secs < best[x].secs)
				best[x] = r;
		}
	}
	double read_rate = (double) n / best_read.secs;
	printf("read pass: %.2f s, %.1f M events/s, peak RSS %ld MB\n", best_read.secs,
			read_rate * 1e-6, best_read.rss_kb / 1024);
	for (size_t x = 0; x < nx; x++) {
		if (skip[x]) {
			printf("%s: not built into this weft (weft export %s: usage error)\n",
					EXPORTS[x], EXPORTS[x]);
			continue;
		}
		double rate = (double) n / best[x].secs;
		printf("%s: %.2f s, %.1f M events/s, %.1f MB written, peak RSS %ld MB\n",
				EXPORTS[x], best[x].secs, rate * 1e-6, (double) wrote[x] / 1e6,
				best[x].rss_kb / 1024);
	}
	for (size_t x = 0; x < nx; x++)
		if (!skip[x])
			printf("%s/read ratio: %.3f\n", EXPORTS[x],
					(double) n / best[x].secs / read_rate);
	if (getenv("WEFT_BENCH_KEEP") == NULL)
		nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	else
		printf("kept: %s\n", root);
	return 0;
}
