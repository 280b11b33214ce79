/* SPDX-License-Identifier: MIT */
/*
 * bench_read - how fast libweft reads, against the speed of plain read().
 *
 * Writes a synthetic trace (8 streams x 2,500,000 events: mostly without
 * payload, some with 4 to 16 bytes, a few jumbo events; threads emit events
 * in bursts, as real threads do) into a temporary directory, then measures:
 *   - events/s of a libweft pass (open + weft_next_refs over every event,
 *     reading each event's clock, with no output: the zero-copy way; and
 *     for comparison weft_next_batch, weft_next, and weft_next_refs without
 *     the read-ahead thread), each in a child process (this program exec'ed
 *     again with --pass) and its peak RSS (wait4 ru_maxrss);
 *   - events/s of `weft dump TRACE > /dev/null` (the weft binary next to
 *     this one), and its peak RSS; with the weft_next_batch pass (what dump
 *     reads with), best of DUMP_BEST_OF runs each taken in turns, the line
 *     `dump/read ratio: R (...)`: the dump's events/s over the pass's;
 *   - the same on a trace 4 times larger: peak RSS must stay within 10% or
 *     4 MiB of the small run's (bounded memory);
 *   - the floor: bytes/s of read() in 1 MiB blocks over the same files, once
 *     they are in the page cache.
 * The floor and the refs pass are both the best of BEST_OF runs over a warm
 * page cache, taken in turns; both count the bytes of the stream.obs files.
 * The streams share one clock (+1..3 ns per event, so no two events have
 * equal clocks) and a random stream emits each burst of 1..64 events: the
 * streams interleave in global order in runs of ~32 events, and the output
 * says which fraction of the events the merge's fast path can serve.
 * The last line is `read/floor ratio: R`, the libweft byte rate over the floor.
 * Usage: bench_read [EVENTS_PER_STREAM]   (default 2500000)
 * With WEFT_BENCH_KEEP set in the environment, the traces are kept (for profiling).
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

#include "obs_format.h"
#include "weft/weft.h"

#define NSTREAMS 8
#define BEST_OF 9 /* runs of the floor and of the libweft pass, best taken */
#define DUMP_BEST_OF 5 /* runs of weft dump and of the weft_next_batch pass */

/* Size of the event at p (avail bytes): 1 and *need when known, else 0. */
static int weft_event_size_of(const uint8_t *p, size_t avail, uint64_t *need)
{
	if (avail < WEFT_EV_HEADER_SIZE)
		return 0;
	uint8_t f = p[WEFT_EV_OFF_FLAGS];
	if (!weft_ev_is_jumbo(f)) {
		*need = WEFT_EV_HEADER_SIZE + weft_ev_payload_size(f);
		return 1;
	}
	if (avail < WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD)
		return 0;
	*need = WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD + weft_load_u32(p + WEFT_EV_OFF_PAYLOAD);
	return 1;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t) (rng >> 20);
}

static void die(const char *what)
{
	fprintf(stderr, "bench_read: %s: %s\n", what, strerror(errno));
	exit(1);
}

struct out {
	int fd;
	uint8_t *buf;
	size_t len;
};

static void out_put(struct out *o, const void *p, size_t n)
{
	if (o->len + n > (1u << 20)) {
		if (write(o->fd, o->buf, o->len) != (ssize_t) o->len)
			die("write");
		o->len = 0;
	}
	if (n > (1u << 20)) {
		if (write(o->fd, p, n) != (ssize_t) n)
			die("write");
		return;
	}
	memcpy(o->buf + o->len, p, n);
	o->len += n;
}

/* How the streams interleave in the written trace (in global clock order):
 * the number of runs (maximal sequences of consecutive events of one
 * stream). Every event but the first of a run is one the merge can yield
 * from the stream it already holds (its fast path); each run start costs a
 * heap operation. */
static uint64_t trace_runs;

/* Writes the trace; returns its total bytes of stream.obs. */
static uint64_t write_trace(const char *root, uint64_t per_stream)
{
	int prev_stream = -1;
	trace_runs = 0;
	struct out o[NSTREAMS];
	uint64_t left[NSTREAMS], bytes = 0;
	char path[PATH_MAX + 64];
	snprintf(path, sizeof path, "%s/loom.bench", root);
	mkdir(path, 0755);
	snprintf(path, sizeof path, "%s/loom.bench/proc.1", root);
	mkdir(path, 0755);
	for (int s = 0; s < NSTREAMS; s++) {
		snprintf(path, sizeof path, "%s/loom.bench/proc.1/thread.%d", root, s + 1);
		mkdir(path, 0755);
		snprintf(path, sizeof path, "%s/loom.bench/proc.1/thread.%d/stream.json", root, s + 1);
		FILE *f = fopen(path, "w");
		if (f == NULL)
			die(path);
		fprintf(f, "{\"version\": 3, \"ovni\": {\"lib\": {\"version\": \"1.14.0\", \"commit\": "
				"\"bench\"}, \"part\": \"thread\", \"tid\": %d, \"pid\": 1, \"loom\": "
				"\"bench\", \"app_id\": 1, \"require\": {\"ovni\": \"1.1.0\"}, %s"
				"\"finished\": 1}}", s + 1,
				s == 0 ? "\"loom_cpus\": [{\"index\": 0, \"phyid\": 0}], " : "");
		fclose(f);
		snprintf(path, sizeof path, "%s/loom.bench/proc.1/thread.%d/stream.obs", root, s + 1);
		o[s].fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (o[s].fd < 0)
			die(path);
		o[s].buf = malloc(1u << 20);
		o[s].len = 0;
		uint8_t hdr[WEFT_OBS_HEADER_SIZE];
		memcpy(hdr, WEFT_OBS_MAGIC, WEFT_OBS_MAGIC_LEN);
		weft_store_u32(hdr + WEFT_OBS_MAGIC_LEN, WEFT_OBS_VERSION);
		out_put(&o[s], hdr, sizeof hdr);
		left[s] = per_stream;
	}
	static uint8_t jumbo[8192];
	for (size_t i = 0; i < sizeof jumbo; i++)
		jumbo[i] = (uint8_t) i;
	uint64_t clock = 1000;
	uint64_t remaining = per_stream * NSTREAMS;
	while (remaining > 0) {
		int s = (int) (rnd() % NSTREAMS);
		if (left[s] == 0)
			continue;
		uint64_t burst = 1 + rnd() % 64;
		if (burst > left[s])
			burst = left[s];
		if (s != prev_stream)
			trace_runs++;
		prev_stream = s;
		for (uint64_t k = 0; k < burst; k++) {
			uint8_t ev[WEFT_EV_MAX_NORMAL_SIZE + WEFT_EV_JUMBO_SIZE_FIELD];
			uint32_t r = rnd() % 10000;
			clock += 1 + rnd() % 3;
			memcpy(ev + WEFT_EV_OFF_MODEL, k % 3 ? "OB." : "OHp", 3);
			weft_store_u64(ev + WEFT_EV_OFF_CLOCK, clock);
			if (r < 2) { /* a few jumbo events */
				uint32_t n = 100 + rnd() % 4000;
				ev[WEFT_EV_OFF_FLAGS] = WEFT_EV_FLAG_JUMBO | WEFT_EV_JUMBO_NIBBLE;
				memcpy(ev + WEFT_EV_OFF_MODEL, "OU[", 3);
				weft_store_u32(ev + WEFT_EV_OFF_PAYLOAD, n);
				out_put(&o[s], ev, WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD);
				out_put(&o[s], jumbo, n);
				bytes += WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD + n;
			} else if (r < 1500) { /* 4..16 bytes of payload */
				unsigned n = 4 + rnd() % 13;
				ev[WEFT_EV_OFF_FLAGS] = weft_ev_size_code(n);
				memset(ev + WEFT_EV_OFF_PAYLOAD, 0x5a, n);
				out_put(&o[s], ev, WEFT_EV_HEADER_SIZE + n);
				bytes += WEFT_EV_HEADER_SIZE + n;
			} else {
				ev[WEFT_EV_OFF_FLAGS] = 0;
				out_put(&o[s], ev, WEFT_EV_HEADER_SIZE);
				bytes += WEFT_EV_HEADER_SIZE;
			}
		}
		left[s] -= burst;
		remaining -= burst;
	}
	for (int s = 0; s < NSTREAMS; s++) {
		if (write(o[s].fd, o[s].buf, o[s].len) != (ssize_t) o[s].len)
			die("write");
		close(o[s].fd);
		free(o[s].buf);
		bytes += WEFT_OBS_HEADER_SIZE;
	}
	return bytes;
}

/* Opens the stream.obs of stream s (0-based) of the written trace. */
static int open_obs(const char *root, int s)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof path, "%s/loom.bench/proc.1/thread.%d/stream.obs", root, s + 1);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		die(path);
	return fd;
}

/* read() of every stream.obs in 1 MiB blocks; returns seconds. */
static double read_floor(const char *root)
{
	static uint8_t buf[1u << 20];
	double t0 = now();
	for (int s = 0; s < NSTREAMS; s++) {
		int fd = open_obs(root, s);
		ssize_t r;
		while ((r = read(fd, buf, sizeof buf)) > 0)
			;
		if (r < 0)
			die("read");
		close(fd);
	}
	return now() - t0;
}

/* For reference: the bare decode loop of one stream at a time (read() in
 * 256 KiB blocks, no merge, no event struct): what any reader of this format
 * costs on this machine. Returns seconds. */
static double bare_decode(const char *root, uint64_t *events)
{
	static uint8_t buf[(256u << 10) + WEFT_EV_MAX_NORMAL_SIZE];
	uint64_t n = 0, sum = 0;
	double t0 = now();
	for (int s = 0; s < NSTREAMS; s++) {
		int fd = open_obs(root, s);
		size_t have = 0, off = WEFT_OBS_HEADER_SIZE;
		ssize_t r;
		while ((r = read(fd, buf + have, (256u << 10) - have)) > 0) {
			size_t len = have + (size_t) r;
			for (;;) {
				uint64_t need;
				if (!weft_event_size_of(buf + off, len - off, &need) || need > len - off)
					break;
				sum += weft_load_u64(buf + off + WEFT_EV_OFF_CLOCK);
				n++;
				off += (size_t) need;
			}
			memmove(buf, buf + off, len - off);
			have = len - off;
			off = 0;
		}
		close(fd);
	}
	*events = n + (sum & 0);
	return now() - t0;
}

struct result {
	double secs;
	uint64_t events;
	long maxrss_kib;
};

/* The libweft pass itself (in a fresh process, so that its peak RSS is its
 * own): prints "seconds events" on stdout. kind: "refs", "refs-nora" (no
 * read-ahead thread), "batch" or "single". */
static int libweft_pass(const char *root, const char *kind)
{
	char err[WEFT_ERR_MAX];
	double t0 = now();
	struct weft_open_opts o;
	memset(&o, 0, sizeof o);
	o.sz = sizeof o;
	o.readahead = strcmp(kind, "refs-nora") == 0 ? WEFT_READAHEAD_OFF : WEFT_READAHEAD_AUTO;
	struct weft_trace *t = weft_open(root, &o, err, sizeof err);
	if (t == NULL) {
		fprintf(stderr, "bench_read: %s\n", err);
		return 1;
	}
	static struct weft_event evs[512];
	static struct weft_ref refs[512];
	uint64_t n = 0, sum = 0;
	long r;
	if (strncmp(kind, "refs", 4) == 0) {
		while ((r = weft_next_refs(t, refs, 512)) > 0) {
			for (long i = 0; i < r; i++)
				sum += (uint64_t) weft_ref_rclock(&refs[i]);
			n += (uint64_t) r;
		}
	} else if (strcmp(kind, "batch") == 0) {
		while ((r = weft_next_batch(t, evs, 512)) > 0) {
			for (long i = 0; i < r; i++)
				sum += (uint64_t) evs[i].rclock;
			n += (uint64_t) r;
		}
	} else {
		while ((r = weft_next(t, &evs[0])) > 0) {
			n++;
			sum += (uint64_t) evs[0].rclock;
		}
	}
	if (r < 0) {
		fprintf(stderr, "bench_read: %s\n", weft_error(t));
		return 1;
	}
	weft_close(t);
	printf("%.9f %" PRIu64 " %d\n", now() - t0, n, (int) (sum & 1));
	return 0;
}

static char self_exe[PATH_MAX];

/* Runs the libweft pass in a child (this program again, exec'ed). */
static struct result run_libweft(const char *root, const char *kind)
{
	int p[2];
	if (pipe(p) != 0)
		die("pipe");
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		close(p[0]);
		if (dup2(p[1], STDOUT_FILENO) < 0)
			_exit(127);
		execl(self_exe, self_exe, "--pass", root, kind, (char *) NULL);
		_exit(127);
	}
	close(p[1]);
	char buf[128];
	ssize_t got = read(p[0], buf, sizeof buf - 1);
	close(p[0]);
	int status;
	struct rusage ru;
	if (wait4(pid, &status, 0, &ru) < 0)
		die("wait4");
	struct result res = { 0, 0, 0 };
	int parity;
	if (got <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "bench_read: the libweft pass failed\n");
		exit(1);
	}
	buf[got] = '\0';
	if (sscanf(buf, "%lf %" SCNu64 " %d", &res.secs, &res.events, &parity) != 3) {
		fprintf(stderr, "bench_read: bad output of the libweft pass: %s\n", buf);
		exit(1);
	}
	res.maxrss_kib = ru.ru_maxrss;
	return res;
}

static struct result run_dump(const char *weft, const char *root, uint64_t events)
{
	double t0 = now();
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);
		if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0)
			_exit(127);
		execl(weft, weft, "dump", root, (char *) NULL);
		_exit(127);
	}
	int status;
	struct rusage ru;
	if (wait4(pid, &status, 0, &ru) < 0)
		die("wait4");
	struct result res = { now() - t0, events, ru.ru_maxrss };
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "bench_read: `%s dump %s` failed (status %d)\n", weft, root, status);
		exit(1);
	}
	return res;
}

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void) sb;
	(void) flag;
	(void) ftw;
	return remove(p);
}

struct run {
	uint64_t bytes, events, runs;
	double floor_secs;
	double bare_secs;
	struct result lib, nora, batch, single, dump;
};

static void one_size(const char *weft, uint64_t per_stream, struct run *r)
{
	const char *base = getenv("TMPDIR");
	char root[PATH_MAX];
	snprintf(root, sizeof root, "%s/weft-bench-XXXXXX", base && *base ? base : "/tmp");
	if (mkdtemp(root) == NULL)
		die("mkdtemp");
	r->events = per_stream * NSTREAMS;
	r->bytes = write_trace(root, per_stream);
	r->runs = trace_runs;
	read_floor(root); /* into the page cache */
	uint64_t bare_n = 0;
	r->bare_secs = bare_decode(root, &bare_n);
	for (int i = 0; i < 2; i++) {
		double b = bare_decode(root, &bare_n);
		if (b < r->bare_secs)
			r->bare_secs = b;
	}
	if (bare_n != r->events) {
		fprintf(stderr, "bench_read: the bare loop counted %" PRIu64 " events\n", bare_n);
		exit(1);
	}
	/* The floor and the libweft pass measured the same way: warm page cache,
	 * best of BEST_OF runs each, interleaved (so that a slow period of a
	 * shared machine hits both alike). */
	for (int i = 0; i < BEST_OF; i++) {
		double f = read_floor(root);
		if (i == 0 || f < r->floor_secs)
			r->floor_secs = f;
		struct result l = run_libweft(root, "refs");
		if (i == 0 || l.secs < r->lib.secs) {
			long rss = i == 0 ? l.maxrss_kib : r->lib.maxrss_kib;
			r->lib = l;
			r->lib.maxrss_kib = rss > l.maxrss_kib ? rss : l.maxrss_kib;
		}
	}
	r->nora = run_libweft(root, "refs-nora");
	r->single = run_libweft(root, "single");
	if (r->lib.events != r->events) {
		fprintf(stderr, "bench_read: libweft read %" PRIu64 " events, wrote %" PRIu64 "\n",
				r->lib.events, r->events);
		exit(1);
	}
	/* weft dump and the weft_next_batch pass it is built on, the same way:
	 * best of DUMP_BEST_OF each, in turns (the dump/read ratio); the peak
	 * RSS is the largest of the runs. */
	memset(&r->batch, 0, sizeof r->batch);
	memset(&r->dump, 0, sizeof r->dump);
	for (int i = 0; i < DUMP_BEST_OF; i++) {
		struct result b = run_libweft(root, "batch");
		struct result d = run_dump(weft, root, r->events);
		if (i == 0 || b.secs < r->batch.secs)
			r->batch.secs = b.secs;
		if (i == 0 || d.secs < r->dump.secs)
			r->dump.secs = d.secs;
		r->batch.events = b.events;
		r->dump.events = d.events;
		if (b.maxrss_kib > r->batch.maxrss_kib)
			r->batch.maxrss_kib = b.maxrss_kib;
		if (d.maxrss_kib > r->dump.maxrss_kib)
			r->dump.maxrss_kib = d.maxrss_kib;
	}
	if (getenv("WEFT_BENCH_KEEP") != NULL) /* for profiling: keep the trace */
		fprintf(stderr, "bench_read: kept %s\n", root);
	else
		nftw(root, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static int rss_ok(long small, long large)
{
	long diff = large - small;
	return diff <= small / 10 || diff <= 4 * 1024;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "--pass") == 0)
		return libweft_pass(argv[2], argv[3]);
	uint64_t per_stream = argc > 1 ? strtoull(argv[1], NULL, 10) : 2500000;
	ssize_t n = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1);
	if (n < 0)
		die("readlink /proc/self/exe");
	self_exe[n] = '\0';
	char *slash = strrchr(self_exe, '/');
	char weft[PATH_MAX + 8];
	snprintf(weft, sizeof weft, "%.*s/weft", (int) (slash - self_exe), self_exe);
	if (access(weft, X_OK) != 0) {
		fprintf(stderr, "bench_read: cannot run %s\n", weft);
		return 1;
	}
	struct run small, large;
	one_size(weft, per_stream, &small);
	printf("trace: %d streams x %" PRIu64 " events, %.1f MiB\n", NSTREAMS, per_stream,
			(double) small.bytes / 1048576.0);
	printf("interleaving: one clock for all streams, +1..3 ns per event (no equal clocks); "
			"a random stream emits a burst of 1..64 events: %" PRIu64 " runs of one "
			"stream, %.1f events per run; %.1f%% of the events follow an event of "
			"their own stream (the merge's fast path), %.1f%% start a run (a heap "
			"operation)\n", small.runs, (double) small.events / (double) small.runs,
			100.0 * (double) (small.events - small.runs) / (double) small.events,
			100.0 * (double) small.runs / (double) small.events);
	printf("CPUs: %ld (the libweft passes use a read-ahead thread from 2 on, see "
			"weft_open_opts.readahead)\n", sysconf(_SC_NPROCESSORS_ONLN));
	printf("libweft (weft_next_refs): %.1f Mevents/s (%.3f s), %.0f MiB/s, peak RSS %ld KiB\n",
			(double) small.events / small.lib.secs / 1e6, small.lib.secs,
			(double) small.bytes / small.lib.secs / 1048576.0, small.lib.maxrss_kib);
	printf("libweft (weft_next_refs, no read-ahead thread): %.1f Mevents/s (%.3f s), "
			"peak RSS %ld KiB\n", (double) small.events / small.nora.secs / 1e6,
			small.nora.secs, small.nora.maxrss_kib);
	printf("libweft (weft_next_batch, best of %d): %.1f Mevents/s (%.3f s), peak RSS %ld KiB\n",
			DUMP_BEST_OF, (double) small.events / small.batch.secs / 1e6, small.batch.secs,
			small.batch.maxrss_kib);
	printf("libweft (weft_next): %.1f Mevents/s (%.3f s), peak RSS %ld KiB\n",
			(double) small.events / small.single.secs / 1e6, small.single.secs,
			small.single.maxrss_kib);
	printf("weft dump > /dev/null (best of %d, in turns with weft_next_batch): %.1f Mevents/s "
			"(%.3f s), peak RSS %ld KiB\n", DUMP_BEST_OF,
			(double) small.events / small.dump.secs / 1e6, small.dump.secs,
			small.dump.maxrss_kib);
	one_size(weft, 4 * per_stream, &large);
	printf("4x trace: %.1f MiB: libweft %.1f Mevents/s, peak RSS %ld KiB; "
			"weft dump %.1f Mevents/s, peak RSS %ld KiB\n",
			(double) large.bytes / 1048576.0, (double) large.events / large.lib.secs / 1e6,
			large.lib.maxrss_kib, (double) large.events / large.dump.secs / 1e6,
			large.dump.maxrss_kib);
	int ok1 = rss_ok(small.lib.maxrss_kib, large.lib.maxrss_kib);
	int ok2 = rss_ok(small.dump.maxrss_kib, large.dump.maxrss_kib);
	printf("peak RSS libweft: %ld KiB -> %ld KiB: %s\n", small.lib.maxrss_kib,
			large.lib.maxrss_kib, ok1 ? "PASS" : "FAIL");
	printf("peak RSS weft dump: %ld KiB -> %ld KiB: %s\n", small.dump.maxrss_kib,
			large.dump.maxrss_kib, ok2 ? "PASS" : "FAIL");
	double floor_rate = (double) small.bytes / small.floor_secs;
	double lib_rate = (double) small.bytes / small.lib.secs;
	printf("floor: read() in 1 MiB blocks from the page cache: %.0f MiB/s (best of %d)\n",
			floor_rate / 1048576.0, BEST_OF);
	printf("libweft (weft_next_refs, best of %d, interleaved with the floor): %.0f MiB/s\n",
			BEST_OF, lib_rate / 1048576.0);
	printf("for reference, a bare decode loop (one stream at a time, no merge, no event "
			"struct): %.1f Mevents/s, ratio %.3f\n",
			(double) small.events / small.bare_secs / 1e6,
			(double) small.bytes / small.bare_secs / floor_rate);
	double dump_eps = (double) small.events / small.dump.secs;
	double batch_eps = (double) small.events / small.batch.secs;
	printf("dump/read ratio: %.3f (weft dump > /dev/null %.1f Mevents/s over the read pass, "
			"weft_next_batch, %.1f Mevents/s; best of %d each, the dump's process start "
			"included)\n", dump_eps / batch_eps, dump_eps / 1e6, batch_eps / 1e6,
			DUMP_BEST_OF);
	printf("read/floor ratio: %.3f\n", lib_rate / floor_rate);
	return ok1 && ok2 ? 0 : 1;
}
