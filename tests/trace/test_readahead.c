/* SPDX-License-Identifier: MIT */
/*
 * test_readahead.c - the read-ahead thread changes nothing a caller can see.
 *
 * With WEFT_READAHEAD_ON the stream files are read and framed on a helper
 * thread; with WEFT_READAHEAD_OFF everything happens on the caller's thread.
 * weft.h promises that the events, their order, the errors and the point
 * where an error stops the iteration are the same either way, and that the
 * zero-copy weft_next_refs() yields what weft_next_batch() yields. This file
 * checks those promises by reading the same trace through two handles in
 * lock step and comparing every field of every event, the final return, the
 * error text, the event count and the warnings:
 *
 *   test_modes_equivalent   1. every conformance case (v3/, bad/, v1/), OFF
 *                              against ON, strict and lenient, both ordering
 *                              clocks, with read chunks of the default size
 *                              and of 28, 40, 97 and 4096 bytes.
 *   test_refs_equivalent    2. weft_next_refs (batches of 1, 5, 512) turned
 *                              into events by weft_ref_event against
 *                              weft_next on a second handle; the inline
 *                              weft_ref_* accessors against the filled event;
 *                              stream->clock_offset == sclock - rclock.
 *   test_mixed_calls        3. weft_next, weft_next_batch and weft_next_refs
 *                              mixed at random on one handle against
 *                              weft_next alone.
 *   test_synthetic_large    4. a 300000-event, 6-stream trace written here
 *                              (shared rising clock with ties, every payload
 *                              size, jumbo events up to 200000 bytes): OFF
 *                              against ON, every event checked against what
 *                              was written; then copies cut in the middle of
 *                              an event header and of a big jumbo: both
 *                              modes stop after the same events with the same
 *                              error, and never past the cut.
 *   test_early_close        5. weft_close with the helper thread mid-trace
 *                              (after 0, 1, 3 or 40 batches, tiny and normal
 *                              chunks): returns (watchdog), the events read
 *                              before are right, the thread is gone after;
 *                              a failed open leaves no thread behind.
 *   test_env_override       6. WEFT_READAHEAD=on|off decides for
 *                              WEFT_READAHEAD_AUTO only: seen through the
 *                              threads of the process (/proc/self/task), and
 *                              the events are the same in every setting.
 *
 * Mismatches are reported (up to MAX_REPORTS per test, each naming the case,
 * the settings and the event index) and the test goes on with the next run,
 * so one failing run shows every other run's result too; a test fails at its
 * end when it found any. A run that hangs is ended by a watchdog (SIGALRM)
 * with the run's description on stderr.
 *
 * weft_chunk_override (libweft's internal read-chunk size for streams opened
 * afterwards; linked in from the static weft_trace) is the only internal
 * used; it is reset to 0 after each test.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "conformance.h"
#include "tracewrite.h"
#include "weft/weft.h"

/* libweft's read-chunk size for streams opened afterwards (tests only):
 * >= 28 bytes, 0 = the default. */
extern size_t weft_chunk_override;

#define MAX_REPORTS 25
#define WATCHDOG_S 300u /* one run (two handles, start to close) */
#define CUR_FAIL (-2)   /* a cursor's check failed (already reported) */

static const char *corpus;

/* ---- reporting ---- */

/* What the current run is (case, settings), for every message. */
static char where[8192];
/* Mismatches found by the current test. */
static unsigned nfail;

static int failf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int failf(const char *fmt, ...)
{
	if (nfail++ < MAX_REPORTS) {
		char msg[4096];
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(msg, sizeof msg, fmt, ap);
		va_end(ap);
		print_error("MISMATCH [%s]: %s\n", where, msg);
	} else if (nfail == MAX_REPORTS + 1) {
		print_error("(further mismatches not shown)\n");
	}
	return -1;
}

/* On a failed condition: report, and return ret from the current function. */
#define EXPECT_R(ret, cond, ...) \
	do { \
		if (!(cond)) { \
			failf(__VA_ARGS__); \
			return ret; \
		} \
	} while (0)
#define EXPECT(cond, ...) EXPECT_R(-1, cond, __VA_ARGS__)

/* Ends a test: fails it if any run mismatched. */
static void end_test(const char *name, unsigned nruns)
{
	weft_chunk_override = 0;
	print_message("%s: %u runs compared, %u mismatches\n", name, nruns, nfail);
	if (nfail != 0)
		fail_msg("%s: %u mismatches (the first %d are printed above)", name, nfail,
				MAX_REPORTS);
}

/* ---- watchdog: a hang becomes a failure that says where ---- */

static void on_alarm(int sig)
{
	(void) sig;
	static const char m[] = "\nWATCHDOG: no progress for too long (a hang) in: ";
	if (write(2, m, sizeof m - 1) < 0 || write(2, where, strlen(where)) < 0 ||
			write(2, "\n", 1) < 0)
		_exit(1);
	_exit(1);
}

static void watchdog(unsigned seconds)
{
	signal(SIGALRM, on_alarm);
	alarm(seconds);
}

/* ---- threads of this process (Linux: /proc/self/task) ---- */

static int count_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	if (d == NULL)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* A joined thread may stay in /proc/self/task for a moment: wait up to 2 s
 * for the count to come back to base. Returns the last count seen. */
static int threads_settle(int base)
{
	int n = count_threads();
	for (int i = 0; i < 200 && n != base; i++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
		n = count_threads();
	}
	return n;
}

/* ThreadSanitizer starts its own background thread at the first
 * pthread_create of the process; start it now so that the thread counts of
 * test_early_close and test_env_override see only libweft's threads. */
static void *noop_thread(void *arg)
{
	return arg;
}

/* ---- warnings: collected per handle (the callback may come from any
 * thread, hence the lock) ---- */

struct warns {
	pthread_mutex_t mu;
	char **msg;
	size_t n, cap;
};

static void warn_cb(void *arg, const char *msg)
{
	struct warns *w = arg;
	pthread_mutex_lock(&w->mu);
	if (w->n == w->cap) {
		w->cap = w->cap ? 2 * w->cap : 8;
		w->msg = realloc(w->msg, w->cap * sizeof *w->msg);
		if (w->msg == NULL)
			abort();
	}
	w->msg[w->n] = strdup(msg);
	if (w->msg[w->n] == NULL)
		abort();
	w->n++;
	pthread_mutex_unlock(&w->mu);
}

static void warns_init(struct warns *w)
{
	memset(w, 0, sizeof *w);
	pthread_mutex_init(&w->mu, NULL);
}

static void warns_free(struct warns *w)
{
	for (size_t i = 0; i < w->n; i++)
		free(w->msg[i]);
	free(w->msg);
	pthread_mutex_destroy(&w->mu);
}

/* The same warnings, in the same order. */
static int same_warns(struct warns *a, struct warns *b)
{
	size_t n = a->n < b->n ? a->n : b->n;
	for (size_t i = 0; i < n; i++)
		EXPECT(strcmp(a->msg[i], b->msg[i]) == 0, "warning %zu differs:\n  A: %s\n  B: %s",
				i, a->msg[i], b->msg[i]);
	EXPECT(a->n == b->n, "A gave %zu warnings, B %zu (first extra: %s)", a->n, b->n,
			a->n > b->n ? a->msg[n] : b->msg[n]);
	return 0;
}

/* ---- how a handle is read ---- */

enum how {
	HOW_NEXT,  /* weft_next */
	HOW_BATCH, /* weft_next_batch(bmax) */
	HOW_REFS,  /* weft_next_refs(bmax) + weft_ref_event + accessor checks */
	HOW_MIXED, /* any of the three, sizes at random (seeded) */
};

struct spec {
	enum weft_readahead ra;
	enum weft_mode mode;
	enum weft_clock clock;
	enum how how;
	size_t bmax;
	uint32_t seed; /* HOW_MIXED */
};

static const char *ra_name(enum weft_readahead ra)
{
	return ra == WEFT_READAHEAD_ON ? "ON" : ra == WEFT_READAHEAD_OFF ? "OFF" : "AUTO";
}

static void spec_str(const struct spec *s, char *buf, size_t len)
{
	static const char *const how_name[] = { "next", "batch", "refs", "mixed" };
	snprintf(buf, len, "%s/%s/%s/%s(%zu)", ra_name(s->ra),
			s->mode == WEFT_STRICT ? "strict" : "lenient",
			s->clock == WEFT_CLOCK_RAW ? "raw" : "offset", how_name[s->how], s->bmax);
}

static uint32_t xs32(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

#define BUF_MAX 512
static const size_t mixed_sizes[] = { 1, 2, 3, 7, 64, 512 };

/* One handle and how it is read, one event at a time. Events of a batch are
 * handed out before the next library call, so their pointers are valid
 * while the caller compares them. */
struct cursor {
	struct weft_trace *t;
	struct spec sp;
	struct weft_event evs[BUF_MAX];
	struct weft_ref refs[BUF_MAX];
	size_t i, n;         /* next buffered entry, number buffered */
	int refs_buffered;   /* the buffer is refs[] (else evs[]) */
	int done, final;     /* the library returned 0 or -1 */
	uint64_t count;      /* events handed out */
	uint32_t rng;
};

/*
 * A ref from weft_next_refs, turned into an event with weft_ref_event; the
 * inline accessors must agree with the filled event, and the stream's
 * clock_offset must be the difference of its clocks.
 */
static int check_ref(struct weft_trace *t, const struct weft_ref *r, struct weft_event *ev,
		uint64_t idx)
{
	EXPECT(r->raw != NULL && r->stream != NULL, "event %" PRIu64 ": ref with NULL raw/stream",
			idx);
	memset(ev, 0, sizeof *ev);
	weft_ref_event(t, r, ev);
	EXPECT(ev->stream == r->stream, "event %" PRIu64 ": weft_ref_event stream %p, ref %p",
			idx, (const void *) ev->stream, (const void *) r->stream);
	EXPECT(weft_ref_rclock(r) == ev->rclock,
			"event %" PRIu64 ": weft_ref_rclock %" PRId64 ", event rclock %" PRId64, idx,
			weft_ref_rclock(r), ev->rclock);
	EXPECT(weft_ref_sclock(r) == ev->sclock,
			"event %" PRIu64 ": weft_ref_sclock %" PRId64 ", event sclock %" PRId64, idx,
			weft_ref_sclock(r), ev->sclock);
	char mcv[4];
	weft_ref_mcv(r, mcv);
	EXPECT(memcmp(mcv, ev->mcv, 4) == 0, "event %" PRIu64 ": weft_ref_mcv '%s', event '%.3s'",
			idx, mcv, ev->mcv);
	EXPECT(weft_ref_flags(r) == ev->flags, "event %" PRIu64 ": weft_ref_flags 0x%02x, event 0x%02x",
			idx, weft_ref_flags(r), ev->flags);
	EXPECT(weft_ref_is_jumbo(r) == ev->jumbo, "event %" PRIu64 ": weft_ref_is_jumbo %d, event %d",
			idx, weft_ref_is_jumbo(r), ev->jumbo);
	EXPECT(weft_ref_payload_size(r) == ev->payload_size,
			"event %" PRIu64 ": weft_ref_payload_size %u, event %u", idx,
			weft_ref_payload_size(r), ev->payload_size);
	if (ev->payload_size > 0)
		EXPECT(ev->payload != NULL &&
				memcmp(weft_ref_payload(r), ev->payload, ev->payload_size) == 0,
				"event %" PRIu64 ": weft_ref_payload bytes differ from the event's",
				idx);
	int64_t d = (int64_t) ((uint64_t) ev->sclock - (uint64_t) ev->rclock);
	EXPECT(r->stream->clock_offset == d,
			"event %" PRIu64 ": stream %s clock_offset %" PRId64 ", sclock - rclock %" PRId64,
			idx, r->stream->relpath, r->stream->clock_offset, d);
	if (ev->jumbo) {
		EXPECT(ev->payload_size == 4u + ev->jumbo_size,
				"event %" PRIu64 ": jumbo payload_size %u, jumbo_size %u", idx,
				ev->payload_size, ev->jumbo_size);
		if (ev->jumbo_size > 0)
			EXPECT(ev->jumbo_data != NULL &&
					memcmp(ev->jumbo_data, weft_ref_payload(r) + 4, ev->jumbo_size) == 0,
					"event %" PRIu64 ": jumbo_data differs from the ref's bytes", idx);
	}
	return 0;
}

/* The next event of the cursor: 1 (ev filled), 0 end, -1 error, CUR_FAIL. */
static int cursor_next(struct cursor *c, struct weft_event *ev)
{
	for (;;) {
		if (c->i < c->n) {
			size_t k = c->i++;
			if (c->refs_buffered) {
				if (check_ref(c->t, &c->refs[k], ev, c->count) < 0)
					return CUR_FAIL;
			} else {
				*ev = c->evs[k];
			}
			c->count++;
			return 1;
		}
		if (c->done)
			return c->final;
		enum how h = c->sp.how;
		size_t max = c->sp.bmax;
		if (h == HOW_MIXED) {
			uint32_t x = xs32(&c->rng);
			h = (enum how) (x % 3u);
			max = mixed_sizes[(x >> 8) % (sizeof mixed_sizes / sizeof mixed_sizes[0])];
		}
		if (h == HOW_NEXT) {
			int r = weft_next(c->t, ev);
			EXPECT_R(CUR_FAIL, r >= -1 && r <= 1,
					"weft_next returned %d after %" PRIu64 " events", r, c->count);
			if (r == 1) {
				c->count++;
				return 1;
			}
			c->done = 1;
			c->final = r;
			return r;
		}
		long r = h == HOW_BATCH ? weft_next_batch(c->t, c->evs, max)
					: weft_next_refs(c->t, c->refs, max);
		EXPECT_R(CUR_FAIL, r >= -1 && r <= (long) max,
				"%s(max %zu) returned %ld after %" PRIu64 " events",
				h == HOW_BATCH ? "weft_next_batch" : "weft_next_refs", max, r, c->count);
		if (r <= 0) {
			c->done = 1;
			c->final = (int) r;
			return c->final;
		}
		c->n = (size_t) r;
		c->i = 0;
		c->refs_buffered = h == HOW_REFS;
	}
}

/* One more call after the end or the error, of the cursor's kind. */
static int cursor_probe(struct cursor *c)
{
	struct weft_event ev;
	switch (c->sp.how) {
	case HOW_NEXT:
		return weft_next(c->t, &ev);
	case HOW_BATCH:
		return (int) weft_next_batch(c->t, c->evs, 4);
	default:
		return (int) weft_next_refs(c->t, c->refs, 4);
	}
}

/* ---- comparing two handles ---- */

static const char *relpath_of(const struct weft_event *e)
{
	return e->stream != NULL && e->stream->relpath != NULL ? e->stream->relpath : "(null)";
}

/* Every field of two events from two handles of one trace. */
static int same_event(uint64_t i, const struct weft_event *a, const struct weft_event *b)
{
	EXPECT(a->stream != NULL && b->stream != NULL, "event %" PRIu64 ": NULL stream", i);
	EXPECT(strcmp(relpath_of(a), relpath_of(b)) == 0, "event %" PRIu64 ": stream A %s, B %s",
			i, relpath_of(a), relpath_of(b));
	EXPECT(a->offset == b->offset, "event %" PRIu64 " (%s): offset A %" PRIu64 ", B %" PRIu64,
			i, relpath_of(a), a->offset, b->offset);
	EXPECT(memcmp(a->mcv, b->mcv, 4) == 0, "event %" PRIu64 " (%s @%" PRIu64
			"): mcv A '%.3s', B '%.3s'", i, relpath_of(a), a->offset, a->mcv, b->mcv);
	EXPECT(a->flags == b->flags, "event %" PRIu64 " (%s @%" PRIu64 "): flags A 0x%02x, B 0x%02x",
			i, relpath_of(a), a->offset, a->flags, b->flags);
	EXPECT(a->rclock == b->rclock, "event %" PRIu64 " (%s @%" PRIu64 "): rclock A %" PRId64
			", B %" PRId64, i, relpath_of(a), a->offset, a->rclock, b->rclock);
	EXPECT(a->sclock == b->sclock, "event %" PRIu64 " (%s @%" PRIu64 "): sclock A %" PRId64
			", B %" PRId64, i, relpath_of(a), a->offset, a->sclock, b->sclock);
	EXPECT(a->payload_size == b->payload_size, "event %" PRIu64 " (%s @%" PRIu64
			"): payload_size A %u, B %u", i, relpath_of(a), a->offset, a->payload_size,
			b->payload_size);
	if (a->payload_size > 0)
		EXPECT(a->payload != NULL && b->payload != NULL &&
				memcmp(a->payload, b->payload, a->payload_size) == 0,
				"event %" PRIu64 " (%s @%" PRIu64 "): payload bytes differ", i,
				relpath_of(a), a->offset);
	EXPECT(a->jumbo == b->jumbo, "event %" PRIu64 " (%s @%" PRIu64 "): jumbo A %d, B %d", i,
			relpath_of(a), a->offset, a->jumbo, b->jumbo);
	if (a->jumbo) {
		EXPECT(a->jumbo_size == b->jumbo_size, "event %" PRIu64 " (%s @%" PRIu64
				"): jumbo_size A %u, B %u", i, relpath_of(a), a->offset,
				a->jumbo_size, b->jumbo_size);
		if (a->jumbo_size > 0)
			EXPECT(a->jumbo_data != NULL && b->jumbo_data != NULL &&
					memcmp(a->jumbo_data, b->jumbo_data, a->jumbo_size) == 0,
					"event %" PRIu64 " (%s @%" PRIu64 "): jumbo_data differs", i,
					relpath_of(a), a->offset);
	}
	return 0;
}

/* stream->clock_offset is its loom's offset (weft.h: "The clock offset of
 * the stream's loom"). */
static int check_stream_offsets(struct weft_trace *t, const char *side)
{
	for (size_t i = 0; i < weft_nstreams(t); i++) {
		const struct weft_stream *s = weft_stream_at(t, i);
		if (s->thread == NULL || s->thread->proc == NULL || s->thread->proc->loom == NULL)
			continue;
		EXPECT(s->clock_offset == s->thread->proc->loom->clock_offset,
				"%s: stream %s clock_offset %" PRId64 ", its loom's %" PRId64, side,
				s->relpath, s->clock_offset, s->thread->proc->loom->clock_offset);
	}
	return 0;
}

/* The same streams (from weft_open) on both handles. */
static int same_streams(struct weft_trace *a, struct weft_trace *b)
{
	EXPECT(weft_nstreams(a) == weft_nstreams(b), "nstreams A %zu, B %zu", weft_nstreams(a),
			weft_nstreams(b));
	for (size_t i = 0; i < weft_nstreams(a); i++) {
		const struct weft_stream *sa = weft_stream_at(a, i), *sb = weft_stream_at(b, i);
		EXPECT(strcmp(sa->relpath, sb->relpath) == 0, "stream %zu: A %s, B %s", i,
				sa->relpath, sb->relpath);
		EXPECT(sa->clock_offset == sb->clock_offset,
				"stream %s: clock_offset A %" PRId64 ", B %" PRId64, sa->relpath,
				sa->clock_offset, sb->clock_offset);
		EXPECT(sa->obs_size == sb->obs_size, "stream %s: obs_size A %" PRIu64 ", B %" PRIu64,
				sa->relpath, sa->obs_size, sb->obs_size);
	}
	if (check_stream_offsets(a, "A") < 0 || check_stream_offsets(b, "B") < 0)
		return -1;
	return 0;
}

/* What a run ended with (side A; B is the same when the run passed). */
struct outcome {
	int opened;
	int final;
	uint64_t count;
	char err[WEFT_ERR_MAX];
};

/* Called for each event of side A (optional). */
typedef int (*ev_check_fn)(void *arg, uint64_t idx, const struct weft_event *ev);

struct side {
	struct cursor c;
	struct warns w;
	char err[WEFT_ERR_MAX];
};

static void side_open(struct side *s, const char *path, const struct spec *sp)
{
	memset(&s->c, 0, sizeof s->c);
	warns_init(&s->w);
	s->c.sp = *sp;
	s->c.rng = sp->seed ? sp->seed : 0x2545f491u;
	WEFT_OPTS(weft_open_opts, o);
	o.mode = sp->mode;
	o.clock = sp->clock;
	o.readahead = sp->ra;
	o.warn = warn_cb;
	o.warn_ctx = &s->w;
	s->err[0] = '\0';
	s->c.t = weft_open(path, &o, s->err, sizeof s->err);
}

static const char *err_of(struct side *s, int r)
{
	return r == -1 ? weft_error(s->c.t) : "-";
}

/* The run proper, both handles open. */
static int run_both(struct side *A, struct side *B, ev_check_fn check, void *arg)
{
	if (same_streams(A->c.t, B->c.t) < 0)
		return -1;
	struct weft_event ea, eb;
	int ra, rb;
	for (;;) {
		ra = cursor_next(&A->c, &ea);
		rb = cursor_next(&B->c, &eb);
		if (ra == CUR_FAIL || rb == CUR_FAIL)
			return -1;
		EXPECT(ra == rb, "after %" PRIu64 " events: A returns %d (%s), B returns %d (%s)",
				A->c.count - (uint64_t) (ra == 1), ra, err_of(A, ra), rb, err_of(B, rb));
		if (ra != 1)
			break;
		if (same_event(A->c.count - 1, &ea, &eb) < 0)
			return -1;
		if (check != NULL && check(arg, A->c.count - 1, &ea) < 0)
			return -1;
	}
	EXPECT(A->c.count == B->c.count, "A yielded %" PRIu64 " events, B %" PRIu64, A->c.count,
			B->c.count);
	char ea_err[WEFT_ERR_MAX] = "";
	if (ra == -1) {
		snprintf(ea_err, sizeof ea_err, "%s", weft_error(A->c.t));
		EXPECT(strcmp(ea_err, weft_error(B->c.t)) == 0,
				"both stop with -1 after %" PRIu64 " events, different errors:\n  A: %s\n  B: %s",
				A->c.count, ea_err, weft_error(B->c.t));
	}
	/* the end and the error stay where they are */
	int pa = cursor_probe(&A->c), pb = cursor_probe(&B->c);
	EXPECT(pa == ra && pb == ra, "a call after the final %d returns %d (A), %d (B)", ra, pa, pb);
	if (ra == -1)
		EXPECT(strcmp(ea_err, weft_error(A->c.t)) == 0 &&
				strcmp(ea_err, weft_error(B->c.t)) == 0,
				"the error text changed on a later call:\n  A: %s\n  B: %s",
				weft_error(A->c.t), weft_error(B->c.t));
	EXPECT(weft_nevents(A->c.t) == A->c.count && weft_nevents(B->c.t) == B->c.count,
			"weft_nevents A %" PRIu64 ", B %" PRIu64 ", events yielded %" PRIu64,
			weft_nevents(A->c.t), weft_nevents(B->c.t), A->c.count);
	if (ra == 0) {
		EXPECT(weft_first_clock(A->c.t) == weft_first_clock(B->c.t) &&
				weft_last_clock(A->c.t) == weft_last_clock(B->c.t),
				"first/last clock A %" PRId64 "/%" PRId64 ", B %" PRId64 "/%" PRId64,
				weft_first_clock(A->c.t), weft_last_clock(A->c.t),
				weft_first_clock(B->c.t), weft_last_clock(B->c.t));
	}
	return 0;
}

/*
 * Opens path twice (settings sa, sb) and reads both in lock step: the same
 * open result (or the same open error), the same events field by field, the
 * same final return and error text after the same number of events, the same
 * answer to one more call, the same weft_nevents, first/last clocks and
 * warnings. check (if not NULL) sees each event of side A. Returns 0, or -1
 * after reporting the mismatch.
 */
static int compare_runs(const char *label, const char *path, const struct spec *sa,
		const struct spec *sb, ev_check_fn check, void *arg, struct outcome *out)
{
	char ssa[128], ssb[128];
	spec_str(sa, ssa, sizeof ssa);
	spec_str(sb, ssb, sizeof ssb);
	snprintf(where, sizeof where, "%s window=%zu A=%s B=%s", label, weft_chunk_override,
			ssa, ssb);
	watchdog(WATCHDOG_S);

	struct side *A = malloc(sizeof *A), *B = malloc(sizeof *B);
	if (A == NULL || B == NULL)
		abort();
	side_open(A, path, sa);
	side_open(B, path, sb);
	int ret = -1;
	if (out != NULL) {
		memset(out, 0, sizeof *out);
		out->opened = A->c.t != NULL;
	}
	if (A->c.t == NULL || B->c.t == NULL) {
		if (A->c.t != NULL || B->c.t != NULL)
			failf("weft_open fails only on %s: %s", A->c.t ? "B" : "A",
					A->c.t ? B->err : A->err);
		else if (strcmp(A->err, B->err) != 0)
			failf("weft_open fails differently:\n  A: %s\n  B: %s", A->err, B->err);
		else
			ret = 0;
		if (out != NULL)
			snprintf(out->err, sizeof out->err, "%s", A->err);
	} else {
		ret = run_both(A, B, check, arg);
		if (out != NULL) {
			out->final = A->c.final;
			out->count = A->c.count;
			if (A->c.done && A->c.final == -1)
				snprintf(out->err, sizeof out->err, "%s", weft_error(A->c.t));
		}
	}
	weft_close(A->c.t);
	weft_close(B->c.t);
	alarm(0);
	/* compared after the close: every warning has been given by then */
	if (ret == 0)
		ret = same_warns(&A->w, &B->w);
	warns_free(&A->w);
	warns_free(&B->w);
	free(A);
	free(B);
	return ret;
}

/* ---- the conformance cases ---- */

struct tcase {
	char rel[512];   /* "v3/jumbo" */
	char path[8192]; /* the trace dir: <corpus>/v3/jumbo/ovni */
};

static struct tcase *cases;
static size_t ncases;

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/* Every case directory under v3/, bad/ and v1/, sorted; the trace is its
 * ovni/ subdirectory (the case dir itself if it has none). */
static void load_cases(void)
{
	static const char *const groups[] = { "v3", "bad", "v1" };
	for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
		char dir[2048];
		snprintf(dir, sizeof dir, "%s/%s", corpus, groups[g]);
		DIR *d = opendir(dir);
		if (d == NULL)
			continue;
		char **names = NULL;
		size_t n = 0;
		struct dirent *e;
		while ((e = readdir(d)) != NULL) {
			if (e->d_name[0] == '.')
				continue;
			char p[4096];
			struct stat st;
			snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
			if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode))
				continue;
			names = realloc(names, (n + 1) * sizeof *names);
			if (names == NULL)
				abort();
			names[n++] = strdup(e->d_name);
		}
		closedir(d);
		qsort(names, n, sizeof *names, cmp_str);
		cases = realloc(cases, (ncases + n) * sizeof *cases);
		if (n > 0 && cases == NULL)
			abort();
		for (size_t i = 0; i < n; i++) {
			struct tcase *c = &cases[ncases++];
			struct stat st;
			snprintf(c->rel, sizeof c->rel, "%s/%s", groups[g], names[i]);
			snprintf(c->path, sizeof c->path, "%s/%s/ovni", dir, names[i]);
			if (stat(c->path, &st) != 0 || !S_ISDIR(st.st_mode))
				snprintf(c->path, sizeof c->path, "%s/%s", dir, names[i]);
			free(names[i]);
		}
		free(names);
	}
}

static const enum weft_mode both_modes[] = { WEFT_STRICT, WEFT_LENIENT };

/*
 * 1. OFF and ON read every conformance case the same: batches of 7 (so that
 * batch ends fall everywhere), strict and lenient, sclock and rclock order,
 * read chunks of the default size and of 28 (one largest normal event), 40,
 * 97 and 4096 bytes, so that chunk ends fall inside headers, payloads and
 * jumbo data. Bad cases must fail the same way: at open with the same text,
 * or after the same events with the same error.
 */
static void test_modes_equivalent(void **state)
{
	(void) state;
	nfail = 0;
	static const size_t windows[] = { 0, 28, 40, 97, 4096 };
	unsigned nruns = 0;
	assert_true(ncases > 0);
	for (size_t w = 0; w < sizeof windows / sizeof windows[0]; w++) {
		weft_chunk_override = windows[w];
		for (size_t i = 0; i < ncases; i++) {
			for (size_t m = 0; m < 2; m++) {
				for (int clk = 0; clk < 2; clk++) {
					struct spec a = { WEFT_READAHEAD_OFF, both_modes[m],
						(enum weft_clock) clk, HOW_BATCH, 7, 0 };
					struct spec b = a;
					b.ra = WEFT_READAHEAD_ON;
					compare_runs(cases[i].rel, cases[i].path, &a, &b, NULL, NULL,
							NULL);
					nruns++;
				}
			}
		}
	}
	end_test("modes_equivalent", nruns);
}

/*
 * 2. weft_next_refs + weft_ref_event give what weft_next gives on a second
 * handle (same settings), with batches of 1, 5 and 512, readahead OFF and ON,
 * strict and lenient, default chunks and 40-byte ones; and on every ref the
 * inline accessors agree with the filled event (check_ref).
 */
static void test_refs_equivalent(void **state)
{
	(void) state;
	nfail = 0;
	static const size_t windows[] = { 0, 40 };
	static const size_t sizes[] = { 1, 5, 512 };
	static const enum weft_readahead ras[] = { WEFT_READAHEAD_OFF, WEFT_READAHEAD_ON };
	unsigned nruns = 0;
	for (size_t w = 0; w < 2; w++) {
		weft_chunk_override = windows[w];
		for (size_t i = 0; i < ncases; i++)
			for (size_t m = 0; m < 2; m++)
				for (size_t r = 0; r < 2; r++)
					for (size_t z = 0; z < 3; z++) {
						struct spec a = { ras[r], both_modes[m],
							WEFT_CLOCK_OFFSET, HOW_NEXT, 1, 0 };
						struct spec b = a;
						b.how = HOW_REFS;
						b.bmax = sizes[z];
						compare_runs(cases[i].rel, cases[i].path, &a, &b,
								NULL, NULL, NULL);
						nruns++;
					}
	}
	end_test("refs_equivalent", nruns);
}

/*
 * 3. weft_next, weft_next_batch and weft_next_refs mixed on one handle (a
 * seeded random choice of call and batch size before each call) go on where
 * the last call stopped: the whole sequence is weft_next's.
 */
static void test_mixed_calls(void **state)
{
	(void) state;
	nfail = 0;
	static const size_t windows[] = { 0, 97 };
	static const enum weft_readahead ras[] = { WEFT_READAHEAD_OFF, WEFT_READAHEAD_ON };
	unsigned nruns = 0;
	for (size_t w = 0; w < 2; w++) {
		weft_chunk_override = windows[w];
		for (size_t i = 0; i < ncases; i++)
			for (size_t m = 0; m < 2; m++)
				for (size_t r = 0; r < 2; r++)
					for (uint32_t seed = 1; seed <= 3; seed++) {
						struct spec a = { ras[r], both_modes[m],
							WEFT_CLOCK_OFFSET, HOW_NEXT, 1, 0 };
						struct spec b = a;
						b.how = HOW_MIXED;
						b.bmax = 0;
						b.seed = seed * 7919u + (uint32_t) i;
						compare_runs(cases[i].rel, cases[i].path, &a, &b,
								NULL, NULL, NULL);
						nruns++;
					}
	}
	end_test("mixed_calls", nruns);
}

/* ---- the synthetic trace (written once, by the group setup) ---- */

#define SYN_STREAMS 6
#define SYN_EVENTS 300000u
#define SYN_JUMBO_MAX 3000u     /* the small jumbo events: 0..2999 bytes */
#define SYN_BIG1 70000u         /* two jumbo events larger than 64 KiB */
#define SYN_BIG2 200000u

struct syn_rec {
	uint64_t clock;
	uint64_t offset; /* in its stream file */
	uint32_t size;   /* payload bytes (normal) or jumbo data bytes */
	uint32_t seed;   /* the bytes are byte_of(seed, i) */
	uint8_t jumbo;
	char mcv[4];
};

static struct {
	char *root;
	char relpath[SYN_STREAMS][64];
	struct syn_rec *rec[SYN_STREAMS];
	size_t n[SYN_STREAMS], cap[SYN_STREAMS];
	uint64_t total;
	uint64_t bytes; /* of all stream files */
	size_t big_s, big_k; /* where the SYN_BIG2 jumbo is */
} syn;

static uint8_t byte_of(uint32_t seed, uint32_t i)
{
	uint32_t x = seed * 2654435761u + i * 40503u;
	return (uint8_t) (x >> 13);
}

/*
 * 6 streams (loom vm, processes 1 and 2, threads 1..6), SYN_EVENTS events in
 * all, written in bursts of 1..400 events per randomly chosen stream under
 * one rising clock (1 step in 4 adds nothing: equal clocks within a stream
 * and, at burst changes, across streams); payloads of 0 and 2..16 bytes,
 * 1 event in 500 a jumbo of 0..2999 bytes, and two jumbo events of 70000
 * and 200000 bytes. Every event is recorded for the checks.
 */
static void write_syn(void)
{
	static const char *const mcvs[] = { "OU[", "OU]", "OB." };
	FILE *f[SYN_STREAMS];
	uint64_t off[SYN_STREAMS];
	syn.root = tw_tmpdir();
	for (int s = 0; s < SYN_STREAMS; s++) {
		int pid = 1 + s / 3, tid = 1 + s;
		f[s] = tw_stream(syn.root, "vm", pid, tid, NULL);
		snprintf(syn.relpath[s], sizeof syn.relpath[s], "loom.vm/proc.%d/thread.%d", pid, tid);
		off[s] = WEFT_OBS_HEADER_SIZE;
	}
	uint8_t *buf = malloc(SYN_BIG2);
	if (buf == NULL)
		abort();
	uint32_t rng = 0x9e3779b9u;
	uint64_t clock = (uint64_t) 1 << 40;
	while (syn.total < SYN_EVENTS) {
		size_t s = xs32(&rng) % SYN_STREAMS;
		uint32_t burst = 1 + xs32(&rng) % 400u;
		for (uint32_t b = 0; b < burst && syn.total < SYN_EVENTS; b++) {
			if (xs32(&rng) % 4u != 0)
				clock += 1 + xs32(&rng) % 50u;
			if (syn.n[s] == syn.cap[s]) {
				syn.cap[s] = syn.cap[s] ? 2 * syn.cap[s] : 4096;
				syn.rec[s] = realloc(syn.rec[s], syn.cap[s] * sizeof *syn.rec[s]);
				if (syn.rec[s] == NULL)
					abort();
			}
			struct syn_rec *r = &syn.rec[s][syn.n[s]];
			memset(r, 0, sizeof *r);
			r->clock = clock;
			r->offset = off[s];
			r->seed = xs32(&rng);
			if (syn.total == 100000u || syn.total == 200000u) {
				r->jumbo = 1;
				r->size = syn.total == 100000u ? SYN_BIG1 : SYN_BIG2;
				if (r->size == SYN_BIG2) {
					syn.big_s = s;
					syn.big_k = syn.n[s];
				}
			} else if (xs32(&rng) % 500u == 0) {
				r->jumbo = 1;
				r->size = xs32(&rng) % SYN_JUMBO_MAX;
			} else {
				uint32_t code = xs32(&rng) % 16u;
				r->size = code == 0 ? 0 : code + 1;
			}
			memcpy(r->mcv, r->jumbo ? "OU[" : mcvs[xs32(&rng) % 3u], 4);
			for (uint32_t i = 0; i < r->size; i++)
				buf[i] = byte_of(r->seed, i);
			if (r->jumbo) {
				tw_jumbo(f[s], r->mcv, clock, buf, r->size);
				off[s] += WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD + r->size;
			} else {
				tw_event(f[s], r->mcv, clock, buf, r->size);
				off[s] += WEFT_EV_HEADER_SIZE + r->size;
			}
			syn.n[s]++;
			syn.total++;
		}
	}
	for (int s = 0; s < SYN_STREAMS; s++) {
		fclose(f[s]);
		syn.bytes += off[s];
	}
	free(buf);
}

static int group_setup(void **state)
{
	(void) state;
	/* start TSan's background thread now (see noop_thread) */
	pthread_t th;
	if (pthread_create(&th, NULL, noop_thread, NULL) == 0)
		pthread_join(th, NULL);
	load_cases();
	write_syn();
	return 0;
}

static int group_teardown(void **state)
{
	(void) state;
	weft_chunk_override = 0;
	if (syn.root != NULL) {
		tw_rmtree(syn.root);
		free(syn.root);
	}
	for (int s = 0; s < SYN_STREAMS; s++)
		free(syn.rec[s]);
	free(cases);
	return 0;
}

/* Checks each event of a synthetic run against what was written: its
 * stream, offset, flags, MCV, clock and bytes, the per-stream order and a
 * global sclock that never goes back; with a cut, nothing at or past the
 * cut event of the cut stream and no clock above the cut event's. */
struct syn_check {
	size_t pos[SYN_STREAMS];
	int64_t last;
	int cut_s;         /* -1: no cut */
	size_t cut_k;
	uint64_t cut_clock;
};

static int syn_check_ev(void *arg, uint64_t idx, const struct weft_event *ev)
{
	struct syn_check *k = arg;
	int s = 0;
	while (s < SYN_STREAMS && strcmp(syn.relpath[s], relpath_of(ev)) != 0)
		s++;
	EXPECT(s < SYN_STREAMS, "event %" PRIu64 ": unknown stream %s", idx, relpath_of(ev));
	EXPECT(ev->sclock >= k->last, "event %" PRIu64 ": sclock %" PRId64 " after %" PRId64, idx,
			ev->sclock, k->last);
	k->last = ev->sclock;
	EXPECT(ev->sclock == ev->rclock, "event %" PRIu64 ": sclock %" PRId64 " != rclock %" PRId64
			" without clock offsets", idx, ev->sclock, ev->rclock);
	EXPECT(k->pos[s] < syn.n[s], "event %" PRIu64 ": stream %s has only %zu events", idx,
			syn.relpath[s], syn.n[s]);
	size_t j = k->pos[s]++;
	if (k->cut_s == s)
		EXPECT(j < k->cut_k, "event %" PRIu64 ": event %zu of cut stream %s yielded (cut at %zu)",
				idx, j, syn.relpath[s], k->cut_k);
	if (k->cut_s >= 0)
		EXPECT((uint64_t) ev->rclock <= k->cut_clock, "event %" PRIu64 ": clock %" PRId64
				" past the cut event's %" PRIu64, idx, ev->rclock, k->cut_clock);
	const struct syn_rec *r = &syn.rec[s][j];
	EXPECT(ev->offset == r->offset, "event %" PRIu64 " (%s #%zu): offset %" PRIu64 ", wrote %" PRIu64,
			idx, syn.relpath[s], j, ev->offset, r->offset);
	EXPECT(ev->rclock == (int64_t) r->clock, "event %" PRIu64 " (%s #%zu): clock %" PRId64
			", wrote %" PRIu64, idx, syn.relpath[s], j, ev->rclock, r->clock);
	EXPECT(memcmp(ev->mcv, r->mcv, 4) == 0, "event %" PRIu64 " (%s #%zu): mcv '%.3s', wrote '%s'",
			idx, syn.relpath[s], j, ev->mcv, r->mcv);
	EXPECT(ev->jumbo == r->jumbo, "event %" PRIu64 " (%s #%zu): jumbo %d, wrote %d", idx,
			syn.relpath[s], j, ev->jumbo, r->jumbo);
	const uint8_t *data;
	if (r->jumbo) {
		EXPECT(ev->flags == (WEFT_EV_FLAG_JUMBO | WEFT_EV_JUMBO_NIBBLE) &&
				ev->jumbo_size == r->size && ev->payload_size == 4u + r->size,
				"event %" PRIu64 " (%s #%zu): flags 0x%02x jumbo_size %u payload_size %u,"
				" wrote a jumbo of %u", idx, syn.relpath[s], j, ev->flags,
				ev->jumbo_size, ev->payload_size, r->size);
		EXPECT(weft_load_u32(ev->payload) == r->size, "event %" PRIu64 ": size field %u",
				idx, weft_load_u32(ev->payload));
		data = ev->jumbo_data;
	} else {
		EXPECT(ev->flags == weft_ev_size_code(r->size) && ev->payload_size == r->size,
				"event %" PRIu64 " (%s #%zu): flags 0x%02x payload_size %u, wrote %u bytes",
				idx, syn.relpath[s], j, ev->flags, ev->payload_size, r->size);
		data = ev->payload;
	}
	for (uint32_t i = 0; i < r->size; i++)
		EXPECT(data[i] == byte_of(r->seed, i), "event %" PRIu64 " (%s #%zu): byte %u is 0x%02x,"
				" wrote 0x%02x", idx, syn.relpath[s], j, i, data[i],
				byte_of(r->seed, i));
	return 0;
}

static void copy_file(const char *from, const char *to)
{
	FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
	if (in == NULL || out == NULL)
		abort();
	char b[65536];
	size_t n;
	while ((n = fread(b, 1, sizeof b, in)) > 0)
		if (fwrite(b, 1, n, out) != n)
			abort();
	fclose(in);
	fclose(out);
}

/* A copy of the synthetic trace in a new temp dir. */
static char *copy_syn(void)
{
	char *dst = tw_tmpdir();
	for (int s = 0; s < SYN_STREAMS; s++) {
		char d[4096], from[8192], to[8192];
		snprintf(d, sizeof d, "%s/%s", dst, syn.relpath[s]);
		tw_mkdirs(d);
		static const char *const files[] = { "stream.json", "stream.obs" };
		for (int i = 0; i < 2; i++) {
			snprintf(from, sizeof from, "%s/%s/%s", syn.root, syn.relpath[s], files[i]);
			snprintf(to, sizeof to, "%s/%s/%s", dst, syn.relpath[s], files[i]);
			copy_file(from, to);
		}
	}
	return dst;
}

/* A copy of the synthetic trace with stream s cut inside event k, bytes_in
 * bytes after its start; OFF and ON (batches of 64) must stop after the same
 * events with the same error, which names the cut file; every event of s
 * before the cut is yielded, nothing at or past it, no clock above its. */
static unsigned run_cut(size_t s, size_t k, uint64_t bytes_in, const char *what)
{
	unsigned nruns = 0;
	char *copy = copy_syn();
	char obs[8192];
	snprintf(obs, sizeof obs, "%s/%s/stream.obs", copy, syn.relpath[s]);
	assert_int_equal(truncate(obs, (off_t) (syn.rec[s][k].offset + bytes_in)), 0);
	static const size_t windows[] = { 0, 1000 };
	for (size_t w = 0; w < 2; w++) {
		weft_chunk_override = windows[w];
		struct spec a = { WEFT_READAHEAD_OFF, WEFT_STRICT, WEFT_CLOCK_OFFSET, HOW_BATCH, 64, 0 };
		struct spec b = a;
		b.ra = WEFT_READAHEAD_ON;
		struct syn_check chk;
		memset(&chk, 0, sizeof chk);
		chk.last = INT64_MIN;
		chk.cut_s = (int) s;
		chk.cut_k = k;
		chk.cut_clock = syn.rec[s][k].clock;
		struct outcome out;
		char label[256];
		snprintf(label, sizeof label, "synthetic, %s", what);
		nruns++;
		if (compare_runs(label, copy, &a, &b, syn_check_ev, &chk, &out) < 0)
			continue;
		if (!out.opened) {
			failf("weft_open failed: %s", out.err);
			continue;
		}
		if (out.final != -1) {
			failf("the cut trace ends with %d after %" PRIu64 " events, not an error",
					out.final, out.count);
			continue;
		}
		if (strstr(out.err, obs) == NULL)
			failf("the error does not name the cut file %s: %s", obs, out.err);
		if (chk.pos[s] != k)
			failf("%zu events of the cut stream yielded, %zu before the cut (error: %s)",
					chk.pos[s], k, out.err);
		print_message("  %s, window %zu: stops after %" PRIu64 " of %" PRIu64
				" events: %s\n", what, windows[w], out.count, syn.total, out.err);
	}
	weft_chunk_override = 0;
	tw_rmtree(copy);
	free(copy);
	return nruns;
}

/*
 * 4. The synthetic trace, OFF against ON with batches of 64, default chunks
 * and 1000-byte ones: identical sequences, each event as written, all
 * SYN_EVENTS of them; mixed calls on ON against weft_next on OFF; then the
 * two cut copies (inside an event header in the middle of a stream, and in
 * the middle of the 200000-byte jumbo's data).
 */
static void test_synthetic_large(void **state)
{
	(void) state;
	nfail = 0;
	unsigned nruns = 0;
	assert_true(syn.bytes > (5u << 20)); /* past the 4 MiB of AUTO, see test 6 */
	static const size_t windows[] = { 0, 1000 };
	for (size_t w = 0; w < 2; w++) {
		weft_chunk_override = windows[w];
		for (int variant = 0; variant < 2; variant++) {
			struct spec a = { WEFT_READAHEAD_OFF, WEFT_STRICT, WEFT_CLOCK_OFFSET,
				HOW_BATCH, 64, 0 };
			struct spec b = a;
			b.ra = WEFT_READAHEAD_ON;
			if (variant == 1) {
				/* weft_next on OFF against any mix of calls on ON */
				a.how = HOW_NEXT;
				b.how = HOW_MIXED;
				b.seed = 4242u + (uint32_t) w;
			}
			struct syn_check chk;
			memset(&chk, 0, sizeof chk);
			chk.last = INT64_MIN;
			chk.cut_s = -1;
			struct outcome out;
			nruns++;
			if (compare_runs("synthetic", syn.root, &a, &b, syn_check_ev, &chk, &out) < 0)
				continue;
			if (!out.opened || out.final != 0 || out.count != syn.total) {
				failf("the synthetic trace: open %d, final %d after %" PRIu64
						" of %" PRIu64 " events: %s", out.opened, out.final,
						out.count, syn.total, out.err);
				continue;
			}
			for (int s = 0; s < SYN_STREAMS; s++)
				if (chk.pos[s] != syn.n[s])
					failf("stream %s: %zu of %zu events yielded", syn.relpath[s],
							chk.pos[s], syn.n[s]);
		}
	}
	weft_chunk_override = 0;
	/* cut 5 bytes into the header of the middle event of stream 2 */
	nruns += run_cut(2, syn.n[2] / 2, 5, "cut inside an event header");
	/* cut in the middle of the data of the 200000-byte jumbo event */
	nruns += run_cut(syn.big_s, syn.big_k,
			WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD + SYN_BIG2 / 2,
			"cut inside the 200000-byte jumbo");
	end_test("synthetic_large", nruns);
}

/* ---- 5. closing with the helper thread at work ---- */

/*
 * Reads nb calls of up to 7 events (weft_next_batch, or weft_next_refs with
 * refs still held) from an ON handle, checking each event against weft_next
 * on an OFF handle, then closes the ON handle with its thread mid-trace. The
 * close must return (the watchdog turns a hang into a failure), ASan/TSan
 * see the rest, and the thread must be gone afterwards.
 */
static int early_close_one(size_t nb, int use_refs, int base)
{
	char err[WEFT_ERR_MAX];
	WEFT_OPTS(weft_open_opts, o);
	o.readahead = WEFT_READAHEAD_ON;
	struct weft_trace *on = weft_open(syn.root, &o, err, sizeof err);
	EXPECT(on != NULL, "weft_open (ON): %s", err);
	o.readahead = WEFT_READAHEAD_OFF;
	struct weft_trace *off = weft_open(syn.root, &o, err, sizeof err);
	if (off == NULL) {
		weft_close(on);
		EXPECT(0, "weft_open (OFF): %s", err);
	}
	int ret = 0;
	uint64_t idx = 0;
	struct weft_event evs[7], ref_ev, ev;
	struct weft_ref refs[7];
	for (size_t b = 0; b < nb && ret == 0; b++) {
		long n = use_refs ? weft_next_refs(on, refs, 7) : weft_next_batch(on, evs, 7);
		if (n <= 0) {
			ret = failf("call %zu returns %ld mid-trace (%s)", b, n,
					n < 0 ? weft_error(on) : "-");
			break;
		}
		for (long i = 0; i < n && ret == 0; i++, idx++) {
			const struct weft_event *e = &evs[i];
			if (use_refs) {
				if (check_ref(on, &refs[i], &ref_ev, idx) < 0) {
					ret = -1;
					break;
				}
				e = &ref_ev;
			}
			if (weft_next(off, &ev) != 1)
				ret = failf("OFF handle ended before event %" PRIu64, idx);
			else if (same_event(idx, &ev, e) < 0)
				ret = -1;
		}
	}
	weft_close(on); /* under the watchdog of the caller */
	weft_close(off);
	if (ret == 0 && base > 0) {
		int n = threads_settle(base);
		EXPECT(n == base, "%d threads 2 s after the close, %d before the open", n, base);
	}
	return ret;
}

static void test_early_close(void **state)
{
	(void) state;
	nfail = 0;
	unsigned nruns = 0;
	static const size_t windows[] = { 0, 28, 1000 };
	static const size_t nbs[] = { 0, 1, 3, 40 };
	int base = count_threads();
	for (size_t w = 0; w < 3; w++) {
		weft_chunk_override = windows[w];
		for (size_t i = 0; i < 4; i++)
			for (int use_refs = 0; use_refs < 2; use_refs++) {
				snprintf(where, sizeof where, "early close: window=%zu, %zu calls of %s",
						windows[w], nbs[i], use_refs ? "weft_next_refs" : "weft_next_batch");
				watchdog(WATCHDOG_S);
				early_close_one(nbs[i], use_refs, base);
				alarm(0);
				nruns++;
			}
	}
	weft_chunk_override = 0;

	/* a failed open with readahead ON leaves no thread behind */
	char path[4096], err[WEFT_ERR_MAX];
	snprintf(path, sizeof path, "%s/bad/missing-stream-obs/ovni", corpus);
	snprintf(where, sizeof where, "failed open with readahead ON: %s", path);
	WEFT_OPTS(weft_open_opts, o);
	o.readahead = WEFT_READAHEAD_ON;
	struct weft_trace *t = weft_open(path, &o, err, sizeof err);
	if (t != NULL) {
		failf("weft_open succeeds on bad/missing-stream-obs");
		weft_close(t);
	} else if (base > 0) {
		int n = threads_settle(base);
		if (n != base)
			failf("%d threads after the failed open, %d before", n, base);
	}
	nruns++;
	end_test("early_close", nruns);
}

/* ---- 6. WEFT_READAHEAD=on|off, for WEFT_READAHEAD_AUTO only ---- */

/*
 * Opens the synthetic trace (1000-byte chunks, so that the helper cannot
 * have read it all after one batch) with ra, reads one batch and counts the
 * threads of the process: 1 if there are more than before the open, 0 if
 * not; -1 when /proc/self/task cannot be read. The thread must be gone after
 * the close.
 */
static int has_thread(const char *path, enum weft_readahead ra)
{
	int base = count_threads();
	if (base < 0)
		return -1;
	weft_chunk_override = 1000;
	char err[WEFT_ERR_MAX];
	WEFT_OPTS(weft_open_opts, o);
	o.readahead = ra;
	struct weft_trace *t = weft_open(path, &o, err, sizeof err);
	weft_chunk_override = 0;
	if (t == NULL) {
		failf("weft_open: %s", err);
		return -1;
	}
	struct weft_event evs[7];
	long n = weft_next_batch(t, evs, 7);
	if (n <= 0)
		failf("the first batch returns %ld (%s)", n, n < 0 ? weft_error(t) : "-");
	int more = count_threads() > base;
	weft_close(t);
	int after = threads_settle(base);
	if (after != base)
		failf("%d threads 2 s after the close, %d before the open", after, base);
	return more;
}

static int cpus_online(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t set;
	CPU_ZERO(&set);
	int aff = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : (int) n;
	return (int) n < aff ? (int) n : aff;
}

static void test_env_override(void **state)
{
	(void) state;
	nfail = 0;
	unsigned nruns = 0;
	const char *saved = getenv("WEFT_READAHEAD");
	char *saved_copy = saved ? strdup(saved) : NULL;
	struct {
		const char *env; /* NULL: unset */
		enum weft_readahead ra;
		int want;        /* 1 thread, 0 none, -1 depends on the machine */
	} rows[] = {
		{ NULL, WEFT_READAHEAD_ON, 1 },
		{ NULL, WEFT_READAHEAD_OFF, 0 },
		{ "on", WEFT_READAHEAD_AUTO, 1 },
		{ "off", WEFT_READAHEAD_AUTO, 0 },
		/* the variable does not override an explicit choice */
		{ "on", WEFT_READAHEAD_OFF, 0 },
		{ "off", WEFT_READAHEAD_ON, 1 },
		/* AUTO alone, on a trace of more than 4 MiB and 6 streams: a
		 * thread when the machine has two CPUs or more */
		{ NULL, WEFT_READAHEAD_AUTO, cpus_online() >= 2 ? 1 : 0 },
	};
	int proc_ok = count_threads() > 0;
	if (!proc_ok)
		print_message("env_override: /proc/self/task unreadable, thread checks skipped\n");
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		if (rows[i].env)
			setenv("WEFT_READAHEAD", rows[i].env, 1);
		else
			unsetenv("WEFT_READAHEAD");
		snprintf(where, sizeof where, "env WEFT_READAHEAD=%s, readahead %s",
				rows[i].env ? rows[i].env : "(unset)", ra_name(rows[i].ra));
		watchdog(WATCHDOG_S);
		if (proc_ok) {
			int got = has_thread(syn.root, rows[i].ra);
			if (got >= 0 && rows[i].want >= 0 && got != rows[i].want)
				failf("a read-ahead thread %s, expected %s", got ? "runs" : "does not run",
						rows[i].want ? "one" : "none");
		}
		/* and the events are the same as OFF's whatever the setting */
		struct spec a = { WEFT_READAHEAD_OFF, WEFT_STRICT, WEFT_CLOCK_OFFSET, HOW_NEXT, 1, 0 };
		struct spec b = a;
		b.ra = rows[i].ra;
		b.how = HOW_BATCH;
		b.bmax = 100;
		struct syn_check chk;
		memset(&chk, 0, sizeof chk);
		chk.last = INT64_MIN;
		chk.cut_s = -1;
		struct outcome out;
		char label[256];
		snprintf(label, sizeof label, "synthetic, env WEFT_READAHEAD=%s",
				rows[i].env ? rows[i].env : "(unset)");
		if (compare_runs(label, syn.root, &a, &b, syn_check_ev, &chk, &out) == 0 &&
				(out.final != 0 || out.count != syn.total))
			failf("final %d after %" PRIu64 " of %" PRIu64 " events", out.final, out.count,
					syn.total);
		alarm(0);
		nruns++;
	}
	/* a small trace (below 4 MiB): AUTO without the variable runs no thread */
	unsetenv("WEFT_READAHEAD");
	if (proc_ok) {
		char path[4096];
		snprintf(path, sizeof path, "%s/v3/multi-thread/ovni", corpus);
		snprintf(where, sizeof where, "AUTO on the small v3/multi-thread");
		int base = count_threads();
		char err[WEFT_ERR_MAX];
		WEFT_OPTS(weft_open_opts, o);
		struct weft_trace *t = weft_open(path, &o, err, sizeof err);
		if (t == NULL) {
			failf("weft_open: %s", err);
		} else {
			struct weft_event ev;
			if (weft_next(t, &ev) != 1)
				failf("no first event (%s)", weft_error(t));
			int n = count_threads();
			if (n != base)
				failf("%d threads while reading, %d before the open", n, base);
			weft_close(t);
		}
		nruns++;
	}
	if (saved_copy != NULL) {
		setenv("WEFT_READAHEAD", saved_copy, 1);
		free(saved_copy);
	}
	end_test("env_override", nruns);
}

int main(void)
{
	corpus = weft_conformance_dir();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_modes_equivalent),
		cmocka_unit_test(test_refs_equivalent),
		cmocka_unit_test(test_mixed_calls),
		cmocka_unit_test(test_synthetic_large),
		cmocka_unit_test(test_early_close),
		cmocka_unit_test(test_env_override),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
