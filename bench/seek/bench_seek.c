/* SPDX-License-Identifier: MIT */
/*
 * bench_seek - seeking by the stream indexes against a full read.
 *
 * Writes with libovni (2 MiB buffers, so with its stream.idx files) a trace
 * of 8 streams and at least 4 GiB of events (8 threads emitting at once,
 * real clocks, 16-byte payloads) into a mktemp directory, then runs, with
 * stdout on /dev/null:
 *   weft dump --from MID --to MID+1ms TRACE   (MID: the middle clock)
 *   weft dump TRACE
 * and prints for each the wall time and the bytes the process read (rchar
 * of /proc/PID/io, read once it has exited and before it is reaped). The
 * seek must read at most two buffers per stream beyond the index and
 * metadata files; the last line is "seek/scan ratio: R", the seek's time
 * over the full read's (both measured in this run, on the page cache the
 * writing left). Before it, `weft index` (which adds merge.idx, the merge's
 * checkpoints) and the same seek again with it: "seek with merge.idx".
 * Exit 1 if a bound is missed (a ratio > 0.01 or too many bytes).
 *
 * The directory is removed in every path: the work runs in a child process
 * and the parent removes the directory once the child is gone (a signal
 * to the parent is passed on to the child first). The free space is checked
 * first: the bench refuses to start without 5 GiB free.
 *
 * usage: bench_seek [GIB]   (default 4, at least 4)
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "idx_format.h"

#include "ovni.h"

#define NSTREAMS 8
#define BUFSIZE (2u << 20)
#define EV_SIZE 28u /* 12-byte header + 16-byte payload */

static char tmpdir[4096];
static volatile sig_atomic_t child_pid;
static uint64_t per_stream; /* bytes of events to write per stream */
static int64_t first_clock[NSTREAMS], last_clock[NSTREAMS];

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void) st;
	(void) flag;
	(void) ftw;
	remove(path);
	return 0;
}

static void *writer(void *arg)
{
	int i = (int) (intptr_t) arg;
	ovni_thread_init(1000 + i);
	ovni_thread_require("ovni", "1.1.0");
	if (i == 0)
		ovni_add_cpu(0, 0);
	struct ovni_ev ev;
	uint8_t pl[16];
	memset(pl, i, sizeof pl);
	uint64_t n = per_stream / EV_SIZE + 1;
	for (uint64_t k = 0; k < n; k++) {
		memset(&ev, 0, sizeof ev);
		ovni_ev_set_mcv(&ev, "OB.");
		uint64_t c = ovni_clock_now();
		ovni_ev_set_clock(&ev, c);
		ovni_payload_add(&ev, pl, sizeof pl);
		ovni_ev_emit(&ev);
		if (k == 0)
			first_clock[i] = (int64_t) c;
		last_clock[i] = (int64_t) c;
	}
	ovni_thread_free();
	return NULL;
}

/* Runs weft with args, stdout on /dev/null: its wall time and rchar. */
static int run_weft(char *const args[], double *secs, uint64_t *rchar)
{
	double t0 = now();
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);
		if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0)
			_exit(127);
		execv(args[0], args);
		_exit(127);
	}
	siginfo_t si;
	memset(&si, 0, sizeof si);
	while (waitid(P_PID, (id_t) pid, &si, WEXITED | WNOWAIT) != 0)
		if (errno != EINTR)
			return -1;
	*secs = now() - t0;
	*rchar = UINT64_MAX;
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/%d/io", (int) pid);
	FILE *f = fopen(path, "r");
	while (f != NULL && fgets(line, sizeof line, f) != NULL)
		if (strncmp(line, "rchar: ", 7) == 0)
			*rchar = strtoull(line + 7, NULL, 10);
	if (f != NULL)
		fclose(f);
	int st;
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "bench_seek: %s exited with status %d\n", args[0],
				WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		return -1;
	}
	return 0;
}

/* Sizes of the trace files: stream files, and the rest (index, metadata). */
static uint64_t obs_bytes, other_bytes;

static int sum_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void) ftw;
	if (flag != FTW_F)
		return 0;
	size_t n = strlen(path);
	if (n >= 4 && strcmp(path + n - 4, ".obs") == 0)
		obs_bytes += (uint64_t) st->st_size;
	else
		other_bytes += (uint64_t) st->st_size;
	return 0;
}

static int work(void)
{
	char trace[4200];
	snprintf(trace, sizeof trace, "%s/ovni", tmpdir);
	setenv("OVNI_TRACEDIR", trace, 1);
	unsetenv("OVNI_TMPDIR");
	setenv("WEFT_BUFSIZE", "2097152", 1);
	double t0 = now();
	ovni_version_check();
	ovni_proc_init(1, "bench", getpid());
	pthread_t th[NSTREAMS];
	for (int i = 0; i < NSTREAMS; i++)
		if (pthread_create(&th[i], NULL, writer, (void *) (intptr_t) i) != 0) {
			fprintf(stderr, "bench_seek: cannot start a writer thread\n");
			return 1;
		}
	for (int i = 0; i < NSTREAMS; i++)
		pthread_join(th[i], NULL);
	ovni_proc_fini();
	double tw = now() - t0;
	nftw(trace, sum_one, 16, FTW_PHYS);
	int64_t lo = first_clock[0], hi = last_clock[0];
	for (int i = 1; i < NSTREAMS; i++) {
		lo = first_clock[i] < lo ? first_clock[i] : lo;
		hi = last_clock[i] > hi ? last_clock[i] : hi;
	}
	int64_t mid = lo + (hi - lo) / 2;
	printf("bench_seek: %d streams, %.2f GiB of events, %u-byte buffers, %" PRIu64
			" bytes of indexes and metadata, in %s (written in %.1f s)\n", NSTREAMS,
			(double) obs_bytes / (double) (1u << 30), BUFSIZE, other_bytes, tmpdir, tw);
	if (obs_bytes < (uint64_t) 4 << 30) {
		fprintf(stderr, "bench_seek: the trace has less than 4 GiB of events\n");
		return 1;
	}
	fflush(stdout);
	char from[32], to[32];
	snprintf(from, sizeof from, "%" PRId64, mid);
	snprintf(to, sizeof to, "%" PRId64, mid + 1000000);
	char *seek_args[] = { (char *) WEFT_BIN_PATH, (char *) "dump", (char *) "--from", from,
		(char *) "--to", to, trace, NULL };
	char *full_args[] = { (char *) WEFT_BIN_PATH, (char *) "dump", trace, NULL };
	double ts, tf;
	uint64_t rs, rf;
	if (run_weft(seek_args, &ts, &rs) < 0 || run_weft(full_args, &tf, &rf) < 0)
		return 1;
	/* Beyond the index and metadata files (all of them read at most
	 * once), at most two buffers per stream, and 1 MiB for the rest a
	 * process reads (ELF headers, /proc, /sys). */
	uint64_t limit = other_bytes + (uint64_t) NSTREAMS * 2 * BUFSIZE + (1u << 20);
	int ok_bytes = rs <= limit;
	printf("seek: weft dump --from %s --to %s (MID + 1 ms): %.4f s, %" PRIu64 " bytes read "
			"(at most %" PRIu64 ": indexes and metadata, 2 buffers per stream, 1 MiB): %s\n",
			from, to, ts, rs, limit, ok_bytes ? "ok" : "OVER");
	printf("full: weft dump: %.3f s, %" PRIu64 " bytes read\n", tf, rf);
	/* The same seek with the merge index (weft index writes it, reading
	 * the trace once): it resumes the merge from its last checkpoint
	 * before MID, so it may read up to the checkpoints' spacing more. */
	char *index_args[] = { (char *) WEFT_BIN_PATH, (char *) "index", (char *) "-q", trace,
		NULL };
	double ti, tm;
	uint64_t ri, rm;
	if (run_weft(index_args, &ti, &ri) < 0 || run_weft(seek_args, &tm, &rm) < 0)
		return 1;
	uint64_t mlimit = limit + WEFT_MIDX_SPACING;
	int ok_mbytes = rm <= mlimit;
	printf("index: weft index (the stream indexes again and merge.idx): %.3f s, %" PRIu64
			" bytes read\n", ti, ri);
	printf("seek with merge.idx: %.4f s, %" PRIu64 " bytes read (at most %" PRIu64 ": the "
			"above and 1 MiB of checkpoint spacing): %s; seek/scan ratio: %.4f\n", tm, rm,
			mlimit, ok_mbytes ? "ok" : "OVER", tm / tf);
	double r = ts / tf;
	printf("seek/scan ratio: %.4f\n", r);
	return ok_bytes && ok_mbytes && r <= 0.01 && tm / tf <= 0.01 ? 0 : 1;
}

static void on_signal(int sig)
{
	if (child_pid > 0)
		kill((pid_t) child_pid, sig);
}

int main(int argc, char **argv)
{
	double gib = 4;
	if (argc > 2 || (argc == 2 && (gib = atof(argv[1])) < 4)) {
		fprintf(stderr, "usage: bench_seek [GIB]   (the trace size, at least 4)\n");
		return 2;
	}
	per_stream = (uint64_t) (gib * (double) (1u << 30)) / NSTREAMS + BUFSIZE;
	const char *base = getenv("TMPDIR");
	if (base == NULL || base[0] == '\0')
		base = "/tmp";
	struct statvfs vfs;
	if (statvfs(base, &vfs) != 0) {
		fprintf(stderr, "bench_seek: cannot tell the free space of %s: %s\n", base,
				strerror(errno));
		return 1;
	}
	uint64_t need = (uint64_t) (gib * (double) (1u << 30)) + ((uint64_t) 1 << 30);
	uint64_t avail = (uint64_t) vfs.f_bavail * vfs.f_frsize;
	if (avail < need) {
		fprintf(stderr, "bench_seek: %s has %.1f GiB free; the trace needs %.1f GiB (set "
				"TMPDIR to a larger file system)\n", base,
				(double) avail / (double) (1u << 30), (double) need / (double) (1u << 30));
		return 1;
	}
	snprintf(tmpdir, sizeof tmpdir, "%s/weft-bench-seek-XXXXXX", base);
	if (mkdtemp(tmpdir) == NULL) {
		fprintf(stderr, "bench_seek: mkdtemp in %s: %s\n", base, strerror(errno));
		return 1;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		int r = work();
		fflush(stdout);
		_exit(r);
	}
	int st = 0, code = 1;
	if (pid > 0) {
		child_pid = pid;
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		code = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
		if (WIFSIGNALED(st))
			fprintf(stderr, "bench_seek: stopped by signal %d\n", WTERMSIG(st));
	} else {
		fprintf(stderr, "bench_seek: fork: %s\n", strerror(errno));
	}
	nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return code;
}
