/* SPDX-License-Identifier: MIT */
/*
 * bench_emu.c - speed of `weft emu --paraver` against the libweft read pass.
 *
 * Writes, in a temporary directory it removes at the end, a synthetic trace
 * of valid ovni-model events: 8 threads of one process on 4 CPUs (-c: CPUs; threads
 * c and c+4 share CPU c and take turns: OHc OHp / OHw OHr), mark push/pop
 * and set by the running thread, an affinity round trip through the vCPU
 * every 16 turns, a flush every 64 turns and one burst per turn (<10%).
 * Then times the read pass (weft_open + weft_next, and + weft_next_batch,
 * over every event; the ratio uses the faster) and the
 * weft binary of the same bin directory (`weft emu --paraver -q -o TMP/out`,
 * the previous run's output deleted before each run, untimed), `-r` runs
 * each, and prints for each the best and the median time and events/s, and,
 * last, `emu/read ratio: R` (best against best), then the same emulation
 * with `--from` at the last 1% of the trace and `window/full emu time: R`.
 *
 * Then does the same on a second, runtime-shaped trace of the same size and
 * layout (threads c and c+4 share CPU c and take turns), whose threads require
 * nosv 2.7.0 and mpi 1.0.0: task types created once per process at start
 * (VYc), MPI_Init once (MUi MUI), and the running thread of each CPU does
 * nosv work every turn (idle changes VPr VPp, scheduler and submit pushes,
 * tasks created with VTc and run with VTx/VTe, memory pushes, pauses VTp/VTr
 * around a hungry pair or a nested task, a task body paused with VTp before
 * the thread stops running and resumed with VTr when it runs again) and MPI
 * calls inside and outside tasks; every stack is empty before OHe. The
 * trace is first emulated once, untimed, with --lint (a failure stops the
 * benchmark with weft's message), then timed as above; the last line is
 * `emu/read ratio (runtime models): R`. The first trace is removed before the
 * second is written (unless -k), so the disk use stays that of one trace.
 *
 * Last (alone with -P), weft emu -j (docs/emu.md, PARALLEL): an 8-loom
 * runtime trace of the same size in all (each loom a process as above, its
 * clocks one residue mod 8, so no two looms share a clock), emulated with
 * `-f paraver -q` (-f FORMAT: another output, e.g. perfetto) and
 * WEFT_EMU_TIMING, -r times each with -j 1, -j 2 and -j 8;
 * prints the serial run's emulation thread CPU and each worker's of -j 8,
 * `parallel critical path (max worker CPU / serial CPU): R` (the bar: 0.2),
 * `parallel overhead (sum of worker CPU / serial CPU): O` (the bar: 1.15),
 * from the run with the best critical path, `wall -j 2 / -j 1` (best
 * against best), the best wall time of -j 8, and the peak RSS of -j 1, 2
 * and 8 (wait4's, the largest of the runs; WEFT_EMU_PAR_COLLECT=1 in the
 * environment measures -j's collect-then-merge). With -b, those runs make the nosv breakdown too (weft emu
 * -b: each worker's per-CPU values sorted after the merge).
 *
 * Usage: bench_emu [-n EVENTS] [-r RUNS] [-k] [-c CPUS] [-g DIR] [-P [-b] [-f FORMAT]]
 *   -n events a trace (10000000), -r runs (5), -k keeps the directory (with
 *   -P, the 8-loom trace: weft emu --mpi's figures in docs/emu.md, MPI), -c CPUs
 *   of the layout (4; two threads each), -g DIR only writes the two traces
 *   into DIR (the profile-guided build's training, cmake/pgo.cmake), -f FORMAT
 *   the output of -P's runs (weft emu -f's spec: paraver, the default, or
 *   perfetto).
 */
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_trace.h"
#include "obs_format.h"
#include "weft/weft.h"

extern char **environ;

/* The layout: threads c and c + NCPUS share CPU c (-c sets NCPUS). */
#define MAX_CPUS 32
static int ncpus = 4;
#define NCPUS ncpus
#define NTHREADS (2 * ncpus)
#define PID 1000

struct wstream {
	FILE *f;
	uint64_t nevents;
};

static struct wstream ws[2 * MAX_CPUS];
static uint64_t gclock = 1000;
/* The parallel bench's looms: loom `loom_name`, clocks gstart + k * gstep
 * (one residue per loom: no two looms share a clock). */
static const char *loom_name = "bench";
static uint64_t gstart = 1000, gstep = 1;
static uint64_t total;

static void die(const char *what)
{
	fprintf(stderr, "bench_emu: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void emit(int t, const char *mcv, const void *payload, unsigned size)
{
	bench_write_ev(ws[t].f, mcv, gclock, payload, size);
	gclock += gstep;
	ws[t].nevents++;
	total++;
}

static void emit0(int t, const char *mcv)
{
	emit(t, mcv, NULL, 0);
}

static void emit_cpu(int t, const char *mcv, int32_t cpu)
{
	uint8_t p[16] = { 0 };
	memcpy(p, &cpu, 4);
	int32_t creator = -1;
	memcpy(p + 4, &creator, 4);
	emit(t, mcv, p, mcv[1] == 'H' ? 16 : 4);
}

static void emit_mark(int t, const char *mcv, int64_t value, int32_t type)
{
	uint8_t p[12];
	memcpy(p, &value, 8);
	memcpy(p + 8, &type, 4);
	emit(t, mcv, p, 12);
}

/* Creates the loom/proc/thread directories and the stream files of a trace
 * (the runtime one requires nosv and mpi, the other declares its marks). */
static void open_streams(const char *root, int runtime)
{
	total = 0;
	gclock = gstart;
	memset(ws, 0, sizeof ws);
	const char *meta = runtime ? "\"require\": {\"ovni\": \"1.1.0\", \"nosv\": \"2.7.0\", "
		"\"mpi\": \"1.0.0\"}, " : "\"require\": {\"ovni\": \"1.1.0\"}, \"mark\": {\"1\": "
		"{\"title\": \"Phase\", \"chan_type\": \"stack\", \"labels\": {\"1\": \"outer\", "
		"\"2\": \"inner\"}}, \"2\": {\"title\": \"Iteration\", \"chan_type\": \"single\"}}, ";
	bench_proc_dirs(root, loom_name, PID);
	for (int t = 0; t < NTHREADS; t++)
		ws[t].f = bench_stream_open(root, loom_name, PID, PID + t, meta, NCPUS,
				/* the nosv breakdown (-P -b) needs nosv.can_breakdown */
				runtime ? ", \"nosv\": {\"can_breakdown\": true}" : "");
}

static void close_streams(void)
{
	for (int t = 0; t < NTHREADS; t++)
		if (fclose(ws[t].f) != 0)
			die("close");
}

static void make_trace(const char *root, uint64_t want)
{
	open_streams(root, 0);
	/* Start: thread c runs on CPU c; thread c+4 starts on the vCPU, cools,
	 * moves to CPU c and pauses there. */
	for (int c = 0; c < NCPUS; c++) {
		int a = c, b = c + NCPUS;
		emit_cpu(a, "OHx", c);
		emit_cpu(b, "OHx", -1);
		emit0(b, "OHc");
		emit_cpu(b, "OAs", c);
		emit0(b, "OHp");
	}
	int run[MAX_CPUS]; /* which of the pair runs */
	for (int c = 0; c < NCPUS; c++)
		run[c] = c;
	uint64_t turn = 0;
	while (total < want) {
		for (int c = 0; c < NCPUS; c++) {
			int r = run[c], o = r == c ? c + NCPUS : c;
			/* the running thread works */
			emit_mark(r, "OM[", 1, 1);
			emit_mark(r, "OM=", (int64_t) turn + 1, 2);
			emit_mark(r, "OM[", 2, 1);
			emit0(r, "OB.");
			emit_mark(r, "OM]", 2, 1);
			emit_mark(r, "OM]", 1, 1);
			if (turn % 16 == 0) {
				emit_cpu(r, "OAs", -1);
				emit_cpu(r, "OAs", c);
			}
			if (turn % 64 == 0) {
				emit0(r, "OF[");
				emit0(r, "OF]");
			}
			/* and hands the CPU over */
			emit0(r, "OHc");
			emit0(r, "OHp");
			emit0(o, "OHw");
			emit0(o, "OHr");
			run[c] = o;
		}
		turn++;
	}
	for (int c = 0; c < NCPUS; c++) {
		int r = run[c], o = r == c ? c + NCPUS : c;
		emit0(r, "OHe");
		emit0(o, "OHw");
		emit0(o, "OHr");
		emit0(o, "OHe");
	}
	close_streams();
}

/* ---- The runtime-shaped trace (nosv + mpi) ---- */

#define NTYPES 4

static const char *const type_label[NTYPES] = { "compute", "halo exchange", "reduce",
	"checkpoint io" };

/* MPI calls the tasks and the threads make, in turn (never nested). */
static const char *const mpi_call[][2] = {
	{ "MS[", "MS]" }, { "MR[", "MR]" }, { "Ms[", "Ms]" }, { "Mr[", "Mr]" },
	{ "MW[", "MW]" }, { "MAr", "MAR" },
};
#define NMPI (sizeof mpi_call / sizeof mpi_call[0])

static uint32_t next_task = 1;
static uint32_t paused_task[2 * MAX_CPUS]; /* body paused across a stop, 0 = none */
static int worker[2 * MAX_CPUS];           /* VHw pushed */
static unsigned mpi_next[2 * MAX_CPUS];

static void emit_jumbo(int t, const char *mcv, const void *data, uint32_t size)
{
	bench_write_jumbo(ws[t].f, mcv, gclock, data, size);
	gclock += gstep;
	ws[t].nevents++;
	total++;
}

static void emit_type(int t, uint32_t typeid, const char *label)
{
	uint8_t d[64];
	size_t len = strlen(label) + 1;
	weft_store_u32(d, typeid);
	memcpy(d + 4, label, len);
	emit_jumbo(t, "VYc", d, (uint32_t) (4 + len));
}

/* VTc/VTx/VTe/VTp/VTr: u32 task id, u32 type id (VTc) or body id (0: not parallel). */
static void emit_task(int t, const char *mcv, uint32_t task, uint32_t arg)
{
	uint8_t p[8];
	weft_store_u32(p, task);
	weft_store_u32(p + 4, arg);
	emit(t, mcv, p, 8);
}

/* Creates a task of the given type inside a submit push; returns its id. */
static uint32_t rt_submit(int t, uint32_t type)
{
	uint32_t id = next_task++;
	emit0(t, "VU[");
	emit_task(t, "VTc", id, type);
	emit0(t, "VU]");
	return id;
}

static void rt_mpi(int t)
{
	unsigned k = mpi_next[t]++ % NMPI;
	emit0(t, mpi_call[k][0]);
	emit0(t, mpi_call[k][1]);
}

/* A thread that just started running (Running): the worker push on its first
 * run, and the body it paused when it stopped: resumed, a call, ended. */
static void rt_start_running(int t)
{
	if (!worker[t]) {
		emit0(t, "VHw");
		worker[t] = 1;
	}
	if (paused_task[t] != 0) {
		emit_task(t, "VTr", paused_task[t], 0);
		rt_mpi(t);
		emit_task(t, "VTe", paused_task[t], 0);
		paused_task[t] = 0;
	}
}

/* One turn of the running thread t; may leave a paused task body. */
static void rt_work(int t, uint64_t turn)
{
	/* idle: resting, then progressing again (the state starts at progressing) */
	emit0(t, "VPr");
	emit0(t, "VPp");
	emit0(t, "VS[");
	emit0(t, "VS]");
	uint32_t id = rt_submit(t, (uint32_t) (turn % NTYPES) + 1);
	emit_task(t, "VTx", id, 0);
	emit0(t, "VMa");
	emit0(t, "VMA");
	rt_mpi(t);
	if (turn % 4 == 0) {
		/* the task waits: paused around a hungry pair */
		emit_task(t, "VTp", id, 0);
		emit0(t, "VSh");
		emit0(t, "VSf");
		emit_task(t, "VTr", id, 0);
	} else if (turn % 8 == 1) {
		/* a nested task runs while the outer body is paused */
		uint32_t in = rt_submit(t, (uint32_t) ((turn + 1) % NTYPES) + 1);
		emit_task(t, "VTp", id, 0);
		emit_task(t, "VTx", in, 0);
		rt_mpi(t);
		emit_task(t, "VTe", in, 0);
		emit_task(t, "VTr", id, 0);
	}
	emit_task(t, "VTe", id, 0);
	if (turn % 2 == 0) {
		emit0(t, "MCb");
		emit0(t, "MCB");
	}
	if (turn % 64 == 0) {
		emit0(t, "OF[");
		emit0(t, "OF]");
	}
	if (turn % 3 == 2) {
		/* a task still running when the thread stops: its body is paused,
		 * and the thread resumes it when it runs again */
		uint32_t p = rt_submit(t, 1);
		emit_task(t, "VTx", p, 0);
		emit0(t, "VMf");
		emit0(t, "VMF");
		emit_task(t, "VTp", p, 0);
		paused_task[t] = p;
	}
}

/* The running thread t ends: pending body, worker pop, MPI_Finalize (thread 0), OHe. */
static void rt_end(int t)
{
	rt_start_running(t);
	if (t == 0) {
		emit0(t, "MUf");
		emit0(t, "MUF");
	}
	emit0(t, "VHW");
	emit0(t, "OHe");
}

static void make_rt_trace(const char *root, uint64_t want)
{
	open_streams(root, 1);
	next_task = 1;
	memset(paused_task, 0, sizeof paused_task);
	memset(worker, 0, sizeof worker);
	memset(mpi_next, 0, sizeof mpi_next);
	for (int c = 0; c < NCPUS; c++) {
		int a = c, b = c + NCPUS;
		emit_cpu(a, "OHx", c);
		if (c == 0) {
			/* once per process: MPI_Init and the task types */
			emit0(a, "MUi");
			emit0(a, "MUI");
			for (uint32_t k = 0; k < NTYPES; k++)
				emit_type(a, k + 1, type_label[k]);
		}
		rt_start_running(a);
		emit_cpu(b, "OHx", -1);
		emit0(b, "OHc");
		emit_cpu(b, "OAs", c);
		emit0(b, "OHp");
	}
	int run[MAX_CPUS];
	for (int c = 0; c < NCPUS; c++)
		run[c] = c;
	uint64_t turn = 0;
	while (total < want) {
		for (int c = 0; c < NCPUS; c++) {
			int r = run[c], o = r == c ? c + NCPUS : c;
			rt_work(r, turn + (uint64_t) c);
			emit0(r, "OHc");
			emit0(r, "OHp");
			emit0(o, "OHw");
			emit0(o, "OHr");
			rt_start_running(o);
			run[c] = o;
		}
		turn++;
	}
	for (int c = 0; c < NCPUS; c++) {
		int r = run[c], o = r == c ? c + NCPUS : c;
		rt_end(r);
		emit0(o, "OHw");
		emit0(o, "OHr");
		rt_end(o);
	}
	close_streams();
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static double read_pass(const char *trace, uint64_t *n, int batch)
{
	char err[WEFT_ERR_MAX];
	double t0 = now_s();
	struct weft_trace *t = weft_open(trace, NULL, err, sizeof err);
	if (t == NULL) {
		fprintf(stderr, "bench_emu: %s\n", err);
		exit(1);
	}
	static struct weft_event evs[256];
	long r;
	uint64_t k = 0, sum = 0;
	if (batch) {
		while ((r = weft_next_batch(t, evs, 256)) > 0) {
			for (long i = 0; i < r; i++)
				sum += (uint64_t) evs[i].rclock;
			k += (uint64_t) r;
		}
	} else {
		while ((r = weft_next(t, &evs[0])) > 0) {
			k++;
			sum += (uint64_t) evs[0].rclock;
		}
	}
	if (r < 0) {
		fprintf(stderr, "bench_emu: %s\n", weft_error(t));
		exit(1);
	}
	weft_close(t);
	double dt = now_s() - t0;
	*n = k + (sum == 0); /* keep the loop */
	return dt;
}

/* Runs `weft emu --paraver -q -o out trace` (plus --lint if lint); returns
 * 0 when it exited 0. weft's messages go to our stderr. */
static int emu_run(const char *weft, const char *trace, const char *out, int lint)
{
	char *argv[] = { (char *) weft, "emu", "--paraver", "-q", "-o", (char *) out,
		(char *) trace, NULL, NULL };
	if (lint) {
		argv[7] = argv[6];
		argv[6] = "--lint";
	}
	pid_t pid;
	int e = posix_spawn(&pid, weft, NULL, NULL, argv, environ);
	if (e != 0) {
		errno = e;
		die(weft);
	}
	int st;
	if (waitpid(pid, &st, 0) < 0)
		die("waitpid");
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "bench_emu: %s emu failed (status %d)\n", weft, st);
		return 1;
	}
	return 0;
}

/* `weft emu --paraver -q --from FROM -o out trace`, timed: the window of
 * the last 1% (every event is emulated up to the end, only the window's
 * records are written). */
static double window_pass(const char *weft, const char *trace, const char *out,
		const char *from)
{
	char *argv[] = { (char *) weft, "emu", "--paraver", "-q", "--from", (char *) from, "-o",
		(char *) out, (char *) trace, NULL };
	double t0 = now_s();
	pid_t pid;
	int e = posix_spawn(&pid, weft, NULL, NULL, argv, environ);
	if (e != 0) {
		errno = e;
		die(weft);
	}
	int st;
	if (waitpid(pid, &st, 0) < 0)
		die("waitpid");
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "bench_emu: %s emu --from %s failed (status %d)\n", weft, from, st);
		exit(1);
	}
	return now_s() - t0;
}

static double emu_pass(const char *weft, const char *trace, const char *out)
{
	double t0 = now_s();
	if (emu_run(weft, trace, out, 0) != 0)
		exit(1);
	return now_s() - t0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;
	return (x > y) - (x < y);
}

/* Prints the best and the median of n times (sorts t); returns the best. */
static double report(const char *what, double *t, int n)
{
	qsort(t, (size_t) n, sizeof *t, cmp_double);
	double med = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
	printf("%s: best %.3f s, %.2f M events/s; median %.3f s, %.2f M events/s (%d runs)\n",
			what, t[0], (double) total / t[0] / 1e6, med, (double) total / med / 1e6, n);
	return t[0];
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void) sb;
	(void) flag;
	(void) ftw;
	return remove(path);
}

/* Times the read pass and `weft emu --paraver` on one trace (total events),
 * prints best and median of each; returns the events/s of the faster read
 * loop and of emu (best runs). */
static void time_trace(const char *weft, const char *trace, const char *out, int runs,
		const char *suffix, double *rread, double *remu)
{
	double *t_read = calloc((size_t) runs, sizeof *t_read);
	double *t_batch = calloc((size_t) runs, sizeof *t_batch);
	double *t_emu = calloc((size_t) runs, sizeof *t_emu);
	if (!t_read || !t_batch || !t_emu)
		die("calloc");
	uint64_t nread = 0;
	for (int i = 0; i < runs; i++) {
		t_read[i] = read_pass(trace, &nread, 0);
		t_batch[i] = read_pass(trace, &nread, 1);
	}
	for (int i = 0; i < runs; i++) {
		/* Start from no output (deleted untimed), so a run is not charged
		 * for truncating the files of the previous one. */
		nftw(out, rm_one, 16, FTW_DEPTH | FTW_PHYS);
		t_emu[i] = emu_pass(weft, trace, out);
	}
	nftw(out, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	char what[128];
	snprintf(what, sizeof what, "read (libweft, weft_next)%s", suffix);
	double best_read = report(what, t_read, runs);
	snprintf(what, sizeof what, "read (libweft, weft_next_batch)%s", suffix);
	double best_batch = report(what, t_batch, runs);
	snprintf(what, sizeof what, "emu (weft emu --paraver)%s", suffix);
	double best_emu = report(what, t_emu, runs);
	double rnext = (double) total / best_read, rbatch = (double) total / best_batch;
	/* The ratio is taken against the faster of the two read loops. */
	*rread = rnext > rbatch ? rnext : rbatch;
	*remu = (double) total / best_emu;
	free(t_read);
	free(t_batch);
	free(t_emu);
}

/* -g DIR: the two traces, written into DIR/trace and DIR/rt-trace (DIR is
 * created; neither may exist), nothing timed: the training workload of the
 * profile-guided build (cmake/pgo.cmake). */
/* ---- weft emu -j (docs/emu.md, PARALLEL) ---- */

#define PAR_LOOMS 8

/* The parallel bench's output (-f FORMAT: weft emu's -f spec). */
static const char *par_format = "paraver";

/* One run of `weft emu -f FORMAT -q -j jobs` with WEFT_EMU_TIMING: its
 * wall time; *serial_cpu: the emulation thread's CPU (user + system) of a
 * serial run; cpu[k]: worker k's CPU (*nw of them) of a parallel one;
 * *proc_cpu: the whole process's CPU. */
static int par_bd; /* -b: the parallel runs with weft emu -b */

static double par_pass(const char *weft, const char *trace, const char *out, int jobs,
		double *serial_cpu, double *cpu, int *nw, double *proc_cpu, long *maxrss)
{
	char cmd[1200];
	snprintf(cmd, sizeof cmd, "WEFT_EMU_TIMING=1 exec '%s' emu -f '%s' -q%s -j %d -o '%s' '%s' "
			"2>&1 >/dev/null", weft, par_format, par_bd ? " -b" : "", jobs, out, trace);
	double t0 = now_s();
	/* sh -c CMD (exec'ing weft), its stdout read here, waited for with
	 * wait4: its peak RSS */
	int fd[2];
	if (pipe(fd) != 0)
		die("pipe");
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		execl("/bin/sh", "sh", "-c", cmd, (char *) NULL);
		_exit(127);
	}
	close(fd[1]);
	FILE *p = fdopen(fd[0], "r");
	if (p == NULL)
		die("fdopen");
	char line[1024];
	*nw = 0;
	int parallel = 0;
	while (fgets(line, sizeof line, p) != NULL) {
		unsigned k;
		double c, u, sy;
		if (sscanf(line, "weft emu: worker %u CPU %lf s", &k, &c) == 2 && k < 64) {
			cpu[k] = c;
			if ((int) k + 1 > *nw)
				*nw = (int) k + 1;
		} else if (strstr(line, " workers, ") != NULL) {
			parallel = 1;
			const char *pc = strstr(line, "process CPU ");
			if (pc != NULL)
				sscanf(pc, "process CPU %lf", proc_cpu);
			if (jobs == 2)
				fputs(line, stdout);
		} else if (strstr(line, "serial run (") != NULL) {
			fprintf(stderr, "bench_emu: -j %d: %s", jobs, line);
		} else {
			const char *e = strstr(line, "emulation thread ");
			const char *pc = strstr(line, "process ");
			double pu, ps;
			if (e != NULL && sscanf(e, "emulation thread %lf + %lf", &u, &sy) == 2)
				*serial_cpu = u + sy;
			if (e != NULL && pc != NULL && sscanf(pc, "process %lf + %lf", &pu, &ps) == 2)
				*proc_cpu = pu + ps;
			else
				fputs(line, stderr);
		}
	}
	fclose(p);
	int st = 0;
	struct rusage ru;
	memset(&ru, 0, sizeof ru);
	if (wait4(pid, &st, 0, &ru) != pid)
		die("wait4");
	*maxrss = ru.ru_maxrss; /* KiB */
	double dt = now_s() - t0;
	if (st != 0 || (jobs > 1 && !parallel)) {
		fprintf(stderr, "bench_emu: weft emu -j %d failed or ran serially\n", jobs);
		exit(1);
	}
	nftw(out, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return dt;
}

/* An 8-loom runtime trace of `want` events (each loom a process as the
 * runtime trace's, its clocks one residue mod 8), then: each worker's CPU
 * with -j 8 and the serial run's, their ratios (best of runs), and the
 * wall time of -j 2 over -j 1. */
static int parallel_bench(const char *weft, const char *root, uint64_t want, int runs, int keep)
{
	char trace[256], out[256];
	snprintf(trace, sizeof trace, "%s/par-trace", root);
	snprintf(out, sizeof out, "%s/out", root);
	if (mkdir(trace, 0777) != 0)
		die(trace);
	double t0 = now_s();
	uint64_t all = 0;
	char names[PAR_LOOMS][16];
	for (int L = 0; L < PAR_LOOMS; L++) {
		snprintf(names[L], sizeof names[L], "node%d", L);
		loom_name = names[L];
		gstart = 1000 + (uint64_t) L;
		gstep = PAR_LOOMS;
		make_rt_trace(trace, want / PAR_LOOMS);
		all += total;
	}
	loom_name = "bench";
	gstart = 1000;
	gstep = 1;
	printf("parallel trace: %" PRIu64 " events, %d looms of %d threads on %d CPUs (runtime "
			"models), written in %.2f s%s\n", all, PAR_LOOMS, NTHREADS, NCPUS, now_s() - t0,
			par_bd ? "; weft emu -b (the nosv breakdown)" : "");
	double best_serial = 0, best_crit = 0, best_over = 0, best_proc = 0, w1 = 0, w2 = 0, w8 = 0;
	double cpu[64], wc[64] = { 0 };
	int nw = 0, bnw = 0;
	long rss[3] = { 0, 0, 0 }; /* the peak RSS of -j 1, 2, 8: the largest of the runs */
	for (int i = 0; i < runs; i++) {
		double sc = 0, dummy = 0, p1 = 0, p8 = 0;
		long r1, r2, r8;
		double d1 = par_pass(weft, trace, out, 1, &sc, cpu, &nw, &p1, &r1);
		double d2 = par_pass(weft, trace, out, 2, &dummy, cpu, &nw, &dummy, &r2);
		double d8 = par_pass(weft, trace, out, PAR_LOOMS, &dummy, cpu, &nw, &p8, &r8);
		rss[0] = r1 > rss[0] ? r1 : rss[0];
		rss[1] = r2 > rss[1] ? r2 : rss[1];
		rss[2] = r8 > rss[2] ? r8 : rss[2];
		if (i == 0 || d1 < w1)
			w1 = d1;
		if (i == 0 || d2 < w2)
			w2 = d2;
		if (i == 0 || d8 < w8)
			w8 = d8;
		double mx = 0, sum = 0;
		for (int k = 0; k < nw; k++) {
			mx = cpu[k] > mx ? cpu[k] : mx;
			sum += cpu[k];
		}
		/* the run with the best critical path, and its figures */
		if (sc > 0 && (i == 0 || mx / sc < best_crit)) {
			best_crit = mx / sc;
			best_over = sum / sc;
			best_serial = sc;
			best_proc = p1 > 0 ? p8 / p1 : 0;
			bnw = nw;
			memcpy(wc, cpu, sizeof wc);
		}
	}
	printf("serial run (-j 1): emulation thread CPU %.3f s\n", best_serial);
	for (int k = 0; k < bnw; k++)
		printf("worker %d (-j %d): CPU %.3f s\n", k, PAR_LOOMS, wc[k]);
	printf("parallel critical path (max worker CPU / serial CPU): %.3f\n", best_crit);
	printf("parallel overhead (sum of worker CPU / serial CPU): %.3f\n", best_over);
	printf("process CPU -j %d / -j 1 (every thread: the reading ahead, the merge and the "
			"writing of %s too): %.3f\n", PAR_LOOMS, par_format, best_proc);
	printf("wall -j 2 / -j 1: %.3f (%.3f s / %.3f s, best of %d)\n", w2 / w1, w2, w1, runs);
	printf("wall -j %d: %.3f s (best of %d)\n", PAR_LOOMS, w8, runs);
	printf("peak RSS -j 1 / -j 2 / -j %d: %.1f / %.1f / %.1f MB (the largest of %d runs)\n",
			PAR_LOOMS, (double) rss[0] / 1024, (double) rss[1] / 1024,
			(double) rss[2] / 1024, runs);
	if (keep)
		printf("kept: %s\n", trace);
	else
		nftw(trace, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

static int write_only(const char *dir, uint64_t want)
{
	char trace[PATH_MAX], rtrace[PATH_MAX];
	if ((size_t) snprintf(trace, sizeof trace, "%s/trace", dir) >= sizeof trace ||
			(size_t) snprintf(rtrace, sizeof rtrace, "%s/rt-trace", dir) >= sizeof rtrace) {
		fprintf(stderr, "bench_emu: %s: path too long\n", dir);
		return 1;
	}
	if (mkdir(dir, 0777) != 0 && errno != EEXIST)
		die(dir);
	if (mkdir(trace, 0777) != 0)
		die(trace);
	make_trace(trace, want);
	printf("%s: %" PRIu64 " events, %d threads on %d CPUs\n", trace, total, NTHREADS, NCPUS);
	if (mkdir(rtrace, 0777) != 0)
		die(rtrace);
	make_rt_trace(rtrace, want);
	printf("%s: %" PRIu64 " events (%" PRIu32 " tasks), %d threads on %d CPUs\n", rtrace, total,
			next_task - 1, NTHREADS, NCPUS);
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t want = 10000000;
	int runs = 5, keep = 0, opt, par_only = 0;
	const char *gen = NULL;
	while ((opt = getopt(argc, argv, "n:r:kc:g:Pbf:")) != -1) {
		switch (opt) {
		case 'n': want = strtoull(optarg, NULL, 10); break;
		case 'r': runs = atoi(optarg); break;
		case 'k': keep = 1; break;
		case 'c':
			ncpus = atoi(optarg);
			if (ncpus < 1 || ncpus > MAX_CPUS) {
				fprintf(stderr, "bench_emu: -c takes 1 to %d CPUs\n", MAX_CPUS);
				return 2;
			}
			break;
		case 'g': gen = optarg; break;
		case 'P': par_only = 1; break;
		case 'b': par_bd = 1; break;
		case 'f': par_format = optarg; break;
		default:
			fprintf(stderr, "usage: bench_emu [-n EVENTS] [-r RUNS] [-k] [-c CPUS] [-g DIR] [-P "
					"[-b] [-f FORMAT]]\n");
			return 2;
		}
	}
	if (runs < 1)
		runs = 1;
	if (gen != NULL)
		return write_only(gen, want);
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n < 0)
		die("/proc/self/exe");
	self[n] = '\0';
	char *slash = strrchr(self, '/');
	char weft[PATH_MAX + 8];
	snprintf(weft, sizeof weft, "%.*s/weft", (int) (slash - self), self);
	if (access(weft, X_OK) != 0)
		die(weft);

	const char *tmpd = getenv("TMPDIR");
	char root[200];
	if ((size_t) snprintf(root, sizeof root, "%s/bench_emu.XXXXXX",
			tmpd && *tmpd ? tmpd : "/tmp") >= sizeof root) {
		fprintf(stderr, "bench_emu: TMPDIR too long\n");
		return 1;
	}
	if (mkdtemp(root) == NULL)
		die("mkdtemp");
	if (par_only) {
		int r = parallel_bench(weft, root, want, runs, keep);
		if (!keep)
			nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
		return r;
	}
	char trace[256], out[256];
	snprintf(trace, sizeof trace, "%s/trace", root);
	snprintf(out, sizeof out, "%s/out", root);
	if (mkdir(trace, 0777) != 0)
		die(trace);
	double t0 = now_s();
	make_trace(trace, want);
	printf("trace: %" PRIu64 " events, %d threads on %d CPUs, written in %.2f s\n", total,
			NTHREADS, NCPUS, now_s() - t0);
	double rread, remu;
	time_trace(weft, trace, out, runs, "", &rread, &remu);
	printf("emu/read ratio: %.3f\n", remu / rread);
	/* A window of the last 1% (--from at the clock of the event at 99%:
	 * clocks rise by 1 an event from 1000), against the full run above. */
	{
		char from[32];
		snprintf(from, sizeof from, "%" PRIu64, (uint64_t) 1000 + total / 100 * 99);
		double *tw = calloc((size_t) runs, sizeof *tw);
		if (tw == NULL)
			die("calloc");
		for (int i = 0; i < runs; i++) {
			nftw(out, rm_one, 16, FTW_DEPTH | FTW_PHYS);
			tw[i] = window_pass(weft, trace, out, from);
		}
		nftw(out, rm_one, 16, FTW_DEPTH | FTW_PHYS);
		double best = report("emu --from (the last 1%, weft emu --paraver --from)", tw, runs);
		printf("window/full emu time: %.3f\n", best / ((double) total / remu));
		free(tw);
	}
	if (!keep)
		nftw(trace, rm_one, 16, FTW_DEPTH | FTW_PHYS);

	/* The runtime-shaped trace: same size, nosv and mpi events. */
	char rtrace[256];
	snprintf(rtrace, sizeof rtrace, "%s/rt-trace", root);
	if (mkdir(rtrace, 0777) != 0)
		die(rtrace);
	t0 = now_s();
	make_rt_trace(rtrace, want);
	printf("runtime trace: %" PRIu64 " events (nosv tasks, subsystems, idle, pauses, mpi "
			"calls; %" PRIu32 " tasks), %d threads on %d CPUs, written in %.2f s\n",
			total, next_task - 1, NTHREADS, NCPUS, now_s() - t0);
	/* Untimed check that the emulator accepts it, stacks empty at the end. */
	if (emu_run(weft, rtrace, out, 1) != 0) {
		fprintf(stderr, "bench_emu: %s emu --paraver refused the runtime trace (weft's "
				"message above)%s%s\n", weft, keep ? "; kept: " : "; run with -k "
				"to keep it", keep ? root : "");
		if (!keep)
			nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
		return 1;
	}
	nftw(out, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	double rt_read, rt_emu;
	time_trace(weft, rtrace, out, runs, ", runtime models", &rt_read, &rt_emu);
	if (keep)
		printf("kept: %s\n", root);
	else
		nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	printf("emu/read ratio (runtime models): %.3f\n", rt_emu / rt_read);
	if (!keep && mkdir(root, 0700) == 0) {
		int r = parallel_bench(weft, root, want, runs, 0);
		nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
		return r;
	}
	return 0;
}
