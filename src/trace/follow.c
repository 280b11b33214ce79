/* SPDX-License-Identifier: MIT */
/*
 * follow.c - following a trace that a running program is writing
 * (weft_follow_*, `weft dump --follow`, `weft top --follow`).
 *
 * Each poll: (1) the reader's clock S is read and the directory tree is
 * scanned for new stream directories; (2) each stream's stream.json is
 * looked at again when it changed (ovni.finished); (3) the bytes each
 * stream file gained are read and framed into whole events (a partial
 * event at the end is kept for the next poll: "not yet"); (4) the frontier
 * is computed: the events with clocks at or before it are safe to yield,
 * in (rclock, relpath) order. See docs/reader.md, "Following a live trace",
 * for the rules and what they guarantee.
 *
 * Independent of the chunked merge of trace.c: a growing file, streams
 * appearing while reading and a frontier do not fit its bounded chunks.
 * Memory: the bytes read and not yet yielded, at most FOLLOW_HOLD_MAX per
 * stream (a stream holding more is not read until the frontier passes).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "opts_size.h"
#include "trace_internal.h"

#define FOLLOW_READ_MAX (4u << 20)   /* bytes read per stream per poll */
#define FOLLOW_HOLD_MAX (16u << 20)  /* bytes held per stream */
#define FOLLOW_JUMBO_MAX (256u << 20)
#define FOLLOW_TIMEOUT_MS 5000u
#define FOLLOW_GRACE_MS 2000u
/* A clock this far after the reader's own: the trace's clocks are not this
 * machine's CLOCK_MONOTONIC. */
#define FOLLOW_CLOCK_SLACK_NS 1000000000ll

struct fstream {
	struct weft_stream pub;
	char *relpath, *obs_path, *json_path;
	int fd;
	uint64_t file_off;    /* next byte of the file to read */
	uint8_t *buf;         /* bytes [buf_off, file_off) of the file */
	size_t blen, bcap;
	uint64_t buf_off;
	size_t bpos;          /* next event to yield (in buf) */
	size_t bframed;       /* end of the whole events framed */
	int header_ok;
	int has_last;
	int64_t last_clock;   /* of the last whole event framed */
	int finished;         /* stream.json has ovni.finished */
	int done;             /* finished and read to the end of its file */
	int cut_warned;
	struct stat json_st;  /* when stream.json was last parsed */
	int json_seen;
	int64_t found_ns;     /* reader's clock when discovered */
	int has_prev_scan;    /* it was not there at an earlier scan ... */
	int64_t prev_scan_ns; /* ... at this one (the last before it appeared) */
};

struct weft_follow {
	char *path;
	void (*warn)(void *ctx, const char *msg);
	void *warn_ctx;
	unsigned timeout_ms, grace_ms;
	char err[WEFT_ERR_MAX];
	int failed;
	struct fstream **s;
	size_t ns, scap;
	int nscans;
	int64_t last_scan_ns;  /* S of the previous poll */
	int64_t growth_ns;     /* the last time anything grew */
	int same_clock;        /* the clocks look like this machine's */
	int64_t frontier;
	int state;
	uint64_t nevents;
	int has_out, warned_order;
	size_t ncut;           /* streams warned as cut short */
	int64_t last_out;      /* the latest clock yielded */
	/* the merge: streams with a whole event at or before the frontier */
	struct fstream **heap;
	size_t nheap;
	int heap_valid;
};

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000000000ll + (int64_t) ts.tv_nsec;
}

static void fwarn(struct weft_follow *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fwarn(struct weft_follow *f, const char *fmt, ...)
{
	if (f->warn == NULL)
		return;
	char msg[WEFT_ERR_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	f->warn(f->warn_ctx, msg);
}

static int ffail(struct weft_follow *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int ffail(struct weft_follow *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(f->err, sizeof f->err, fmt, ap);
	va_end(ap);
	f->failed = 1;
	return -1;
}

/* ---- discovery ---- */

static int has_prefix(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

static struct fstream *find_stream(const struct weft_follow *f, const char *relpath)
{
	for (size_t i = 0; i < f->ns; i++)
		if (strcmp(f->s[i]->relpath, relpath) == 0)
			return f->s[i];
	return NULL;
}

/* 1 yes, 0 no, -1 out of memory. */
static int file_exists(const char *dir, const char *name)
{
	char *p = weft_path_join(dir, name);
	if (p == NULL)
		return -1;
	struct stat st;
	int ok = stat(p, &st) == 0 && S_ISREG(st.st_mode);
	free(p);
	return ok;
}

static int add_stream(struct weft_follow *f, const char *dir, const char *relpath, int64_t scan_ns)
{
	if (find_stream(f, relpath) != NULL)
		return 0;
	/* libovni creates stream.obs, then stream.json: a stream is taken
	 * once both are there (its events come after both). */
	int eo = file_exists(dir, WEFT_STREAM_OBS);
	int ej = eo > 0 ? file_exists(dir, WEFT_STREAM_JSON) : 0;
	if (eo < 0 || ej < 0)
		return ffail(f, "out of memory while following %s", f->path);
	if (!eo || !ej)
		return 0;
	if (f->ns == f->scap) {
		size_t nc = f->scap ? 2 * f->scap : 16;
		struct fstream **ns = realloc(f->s, nc * sizeof *f->s);
		if (ns == NULL)
			return ffail(f, "out of memory while following %s", f->path);
		f->s = ns;
		struct fstream **nh = realloc(f->heap, nc * sizeof *f->heap);
		if (nh == NULL)
			return ffail(f, "out of memory while following %s", f->path);
		f->heap = nh;
		f->scap = nc;
	}
	struct fstream *s = calloc(1, sizeof *s);
	if (s == NULL)
		return ffail(f, "out of memory while following %s", f->path);
	s->relpath = weft_strdup(relpath);
	s->obs_path = weft_path_join(dir, WEFT_STREAM_OBS);
	s->json_path = weft_path_join(dir, WEFT_STREAM_JSON);
	s->fd = -1;
	if (s->relpath == NULL || s->obs_path == NULL || s->json_path == NULL) {
		free(s->relpath);
		free(s->obs_path);
		free(s->json_path);
		free(s);
		return ffail(f, "out of memory while following %s", f->path);
	}
	s->fd = open(s->obs_path, O_RDONLY | O_CLOEXEC);
	if (s->fd < 0) {
		int e = errno;
		free(s->relpath);
		free(s->obs_path);
		free(s->json_path);
		free(s);
		return ffail(f, "%s/%s: cannot open: %s", dir, WEFT_STREAM_OBS, strerror(e));
	}
	s->pub.relpath = s->relpath;
	s->pub.obs_path = s->obs_path;
	s->pub.meta_version = WEFT_META_VERSION;
	s->found_ns = scan_ns;
	if (f->nscans > 0) {
		s->has_prev_scan = 1;
		s->prev_scan_ns = f->last_scan_ns;
	}
	f->s[f->ns++] = s;
	f->heap_valid = 0;
	f->growth_ns = scan_ns;
	return 0;
}

/* Walks dir (relpath rel, depth levels of loom/proc/thread left below it)
 * for stream directories. */
static int scan_dir(struct weft_follow *f, const char *dir, const char *rel, int depth, int64_t scan_ns)
{
	int here = file_exists(dir, WEFT_STREAM_OBS);
	if (here < 0)
		return ffail(f, "out of memory while following %s", f->path);
	if (here)
		return add_stream(f, dir, rel, scan_ns);
	if (depth == 0)
		return 0;
	DIR *d = opendir(dir);
	if (d == NULL)
		return 0; /* not there (yet), or gone */
	char **names = NULL;
	size_t n = 0, cap = 0;
	int oom = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		const char *nm = e->d_name;
		if (!has_prefix(nm, WEFT_LOOM_PREFIX) && !has_prefix(nm, WEFT_PROC_PREFIX)
				&& !has_prefix(nm, WEFT_THREAD_PREFIX))
			continue;
		if (n == cap) {
			size_t nc = cap ? 2 * cap : 16;
			char **nn = realloc(names, nc * sizeof *names);
			if (nn == NULL) {
				oom = 1;
				break;
			}
			names = nn;
			cap = nc;
		}
		if ((names[n] = weft_strdup(nm)) == NULL) {
			oom = 1;
			break;
		}
		n++;
	}
	closedir(d);
	int r = oom ? ffail(f, "out of memory while following %s", f->path) : 0;
	for (size_t i = 0; i < n; i++) {
		if (r == 0) {
			char *sub = weft_path_join(dir, names[i]);
			char *srel = strcmp(rel, ".") == 0 ? weft_strdup(names[i]) : weft_path_join(rel, names[i]);
			struct stat st;
			if (sub == NULL || srel == NULL)
				r = ffail(f, "out of memory while following %s", f->path);
			else if (stat(sub, &st) == 0 && S_ISDIR(st.st_mode))
				r = scan_dir(f, sub, srel, depth - 1, scan_ns);
			free(sub);
			free(srel);
		}
		free(names[i]);
	}
	free(names);
	return r;
}

/* ---- reading ---- */

/* stream.json again if it changed: ovni.finished. */
static int check_json(struct weft_follow *f, struct fstream *s)
{
	if (s->finished)
		return 0;
	struct stat st;
	if (stat(s->json_path, &st) != 0)
		return 0; /* between libovni's writes */
	if (s->json_seen && st.st_ino == s->json_st.st_ino && st.st_size == s->json_st.st_size
			&& st.st_mtim.tv_sec == s->json_st.st_mtim.tv_sec
			&& st.st_mtim.tv_nsec == s->json_st.st_mtim.tv_nsec)
		return 0;
	json_error_t je;
	json_t *doc = json_load_file(s->json_path, 0, &je);
	if (doc == NULL)
		return 0; /* caught mid-write by another writer: next poll */
	s->json_st = st;
	s->json_seen = 1;
	f->growth_ns = now_ns();
	json_t *ovni = json_object_get(doc, WEFT_KEY_OVNI);
	json_t *fin = json_is_object(ovni) ? json_object_get(ovni, WEFT_KEY_FINISHED) : NULL;
	if (json_is_integer(fin) && json_integer_value(fin) == 1) {
		s->finished = 1;
		s->pub.finished = 1;
	}
	json_decref(doc);
	return 0;
}

/* Frames the whole events after bframed. */
static int frame(struct weft_follow *f, struct fstream *s)
{
	if (!s->header_ok) {
		if (s->blen < WEFT_OBS_HEADER_SIZE)
			return 0;
		uint32_t ver = weft_load_u32(s->buf + WEFT_OBS_MAGIC_LEN);
		if (memcmp(s->buf, WEFT_OBS_MAGIC, WEFT_OBS_MAGIC_LEN) != 0 || ver != WEFT_OBS_VERSION)
			return ffail(f, "%s: offset 0: not an ovni stream (bad magic or version)", s->obs_path);
		s->header_ok = 1;
		s->bpos = s->bframed = WEFT_OBS_HEADER_SIZE;
	}
	for (;;) {
		size_t p = s->bframed;
		if (s->blen - p < WEFT_EV_HEADER_SIZE)
			return 0;
		uint8_t flags = s->buf[p + WEFT_EV_OFF_FLAGS];
		uint64_t size = WEFT_EV_HEADER_SIZE;
		if (weft_ev_is_jumbo(flags)) {
			if (s->blen - p < WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD)
				return 0;
			uint32_t js = weft_load_u32(s->buf + p + WEFT_EV_OFF_PAYLOAD);
			if (js > FOLLOW_JUMBO_MAX)
				return ffail(f, "%s: offset %llu: a jumbo event of %u bytes, more than %u",
						s->obs_path, (unsigned long long) (s->buf_off + p), js,
						(unsigned) FOLLOW_JUMBO_MAX);
			size += WEFT_EV_JUMBO_SIZE_FIELD + js;
		} else {
			size += weft_ev_payload_size(flags);
		}
		if (s->blen - p < size)
			return 0;
		s->last_clock = (int64_t) weft_load_u64(s->buf + p + WEFT_EV_OFF_CLOCK);
		s->has_last = 1;
		s->bframed = p + (size_t) size;
	}
}

/* A stream file shorter than what was read of it (truncated or rewritten
 * under the reader): what was yielded may not be in the trace any more, so
 * the follow fails naming it and both sizes. */
static int check_size(struct weft_follow *f, struct fstream *s)
{
	struct stat st;
	if (fstat(s->fd, &st) != 0)
		return ffail(f, "%s: cannot stat: %s", s->obs_path, strerror(errno));
	if ((uint64_t) st.st_size < s->file_off)
		return ffail(f, "%s: the stream shrank from %" PRIu64 " to %" PRIu64 " bytes "
				"while it was followed", s->obs_path, s->file_off,
				(uint64_t) st.st_size);
	return 0;
}

static int read_stream(struct weft_follow *f, struct fstream *s)
{
	if (s->done)
		return 0;
	int fin = s->finished; /* known before the read: then it reads the whole file */
	for (;;) {
		if (s->blen - s->bpos >= FOLLOW_HOLD_MAX)
			return 0;
		/* drop what was yielded */
		if (s->bpos > 0 && (s->bpos >= s->bcap / 2 || s->bcap - s->blen < 65536)) {
			memmove(s->buf, s->buf + s->bpos, s->blen - s->bpos);
			s->blen -= s->bpos;
			s->bframed -= s->bpos;
			s->buf_off += s->bpos;
			s->bpos = 0;
		}
		size_t want = FOLLOW_READ_MAX;
		if (s->bcap - s->blen < want) {
			size_t nc = s->blen + want;
			uint8_t *nb = realloc(s->buf, nc);
			if (nb == NULL)
				return ffail(f, "out of memory while reading %s", s->obs_path);
			s->buf = nb;
			s->bcap = nc;
		}
		ssize_t r = pread(s->fd, s->buf + s->blen, want, (off_t) s->file_off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return ffail(f, "%s: cannot read: %s", s->obs_path, strerror(errno));
		if (r > 0) {
			s->blen += (size_t) r;
			s->file_off += (uint64_t) r;
			s->pub.obs_size = s->file_off;
			f->growth_ns = now_ns();
			if (frame(f, s) != 0)
				return -1;
			if (!fin)
				return 0; /* the rest at the next poll */
			continue;
		}
		/* the end of the file, for now: unless it shrank */
		if (check_size(f, s) != 0)
			return -1;
		if (fin) {
			s->done = 1;
			f->heap_valid = 0;
		}
		return 0;
	}
}

/* A done (or, once the trace stopped, any) stream ending inside an event. */
static void warn_cut(struct weft_follow *f, struct fstream *s)
{
	if (s->cut_warned)
		return;
	size_t end = s->header_ok ? s->bframed : 0;
	if (s->blen > end) {
		s->cut_warned = 1;
		f->ncut++;
		if (!s->header_ok)
			fwarn(f, "%s: offset 0: stream cut: a partial stream header of %zu bytes; the stream has no events",
					s->obs_path, s->blen);
		else
			fwarn(f, "%s: offset %llu: stream cut: a partial event of %zu bytes at the end of the file; read up to its last whole event",
					s->obs_path, (unsigned long long) (s->buf_off + end), s->blen - end);
	}
}

/* ---- the merge ---- */

static int ev_before(const struct fstream *a, const struct fstream *b)
{
	int64_t ca = (int64_t) weft_load_u64(a->buf + a->bpos + WEFT_EV_OFF_CLOCK);
	int64_t cb = (int64_t) weft_load_u64(b->buf + b->bpos + WEFT_EV_OFF_CLOCK);
	if (ca != cb)
		return ca < cb;
	return strcmp(a->relpath, b->relpath) < 0;
}

static void sift_down(struct weft_follow *f, size_t i)
{
	struct fstream **h = f->heap;
	size_t n = f->nheap;
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < n && ev_before(h[l], h[m]))
			m = l;
		if (r < n && ev_before(h[r], h[m]))
			m = r;
		if (m == i)
			return;
		struct fstream *t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

static void build_heap(struct weft_follow *f)
{
	f->nheap = 0;
	for (size_t i = 0; i < f->ns; i++)
		if (f->s[i]->bpos < f->s[i]->bframed)
			f->heap[f->nheap++] = f->s[i];
	for (size_t i = f->nheap / 2; i-- > 0;)
		sift_down(f, i);
	f->heap_valid = 1;
}

/* ---- the public calls ---- */

struct weft_follow *weft_follow_open(const char *path, const struct weft_follow_opts *user_opts,
		char *err, size_t errlen)
{
	struct weft_follow_opts full; /* a whole struct (opts_size.h) */
	if (weft_opts_take(&full, sizeof full, user_opts,
			"weft_follow_open: struct weft_follow_opts", err, errlen) != 0)
		return NULL;
	const struct weft_follow_opts *opts = &full;
	struct stat st;
	if (stat(path, &st) == 0 && !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s: not a directory", path);
		return NULL;
	}
	struct weft_follow *f = calloc(1, sizeof *f);
	if (f == NULL || (f->path = weft_strdup(path)) == NULL) {
		free(f);
		snprintf(err, errlen, "out of memory while following %s", path);
		return NULL;
	}
	if (opts != NULL) {
		f->warn = opts->warn;
		f->warn_ctx = opts->warn_ctx;
		f->timeout_ms = opts->timeout_ms;
		f->grace_ms = opts->grace_ms;
	}
	if (f->timeout_ms == 0)
		f->timeout_ms = FOLLOW_TIMEOUT_MS;
	if (f->grace_ms == 0)
		f->grace_ms = FOLLOW_GRACE_MS;
	f->same_clock = 1;
	f->growth_ns = now_ns();
	f->frontier = INT64_MIN;
	return f;
}

void weft_follow_close(struct weft_follow *f)
{
	if (f == NULL)
		return;
	for (size_t i = 0; i < f->ns; i++) {
		struct fstream *s = f->s[i];
		if (s->fd >= 0)
			close(s->fd);
		free(s->buf);
		free(s->relpath);
		free(s->obs_path);
		free(s->json_path);
		free(s);
	}
	free(f->s);
	free(f->heap);
	free(f->path);
	free(f);
}

const char *weft_follow_error(const struct weft_follow *f)
{
	return f->err;
}

size_t weft_follow_nstreams(const struct weft_follow *f)
{
	return f->ns;
}

const struct weft_stream *weft_follow_stream_at(const struct weft_follow *f, size_t i)
{
	return i < f->ns ? &f->s[i]->pub : NULL;
}

int weft_follow_stream_done(const struct weft_follow *f, size_t i)
{
	return i < f->ns && f->s[i]->done;
}

size_t weft_follow_ncut(const struct weft_follow *f)
{
	return f->ncut;
}

uint64_t weft_follow_nevents(const struct weft_follow *f)
{
	return f->nevents;
}

int64_t weft_follow_frontier(const struct weft_follow *f)
{
	return f->frontier;
}

static int64_t stream_bound(struct weft_follow *f, const struct fstream *s, int64_t now)
{
	if (s->has_last)
		return s->last_clock;
	if (f->same_clock && s->has_prev_scan)
		return s->prev_scan_ns; /* created after it: its events too */
	if (now - s->found_ns < (int64_t) f->grace_ms * 1000000ll)
		return INT64_MIN; /* not yet */
	return INT64_MAX; /* the grace passed: no longer waited for */
}

/* Before the follow ends: every stream, the done ones too, still as long
 * as what was read of it. */
static int check_sizes(struct weft_follow *f)
{
	for (size_t i = 0; i < f->ns; i++)
		if (check_size(f, f->s[i]) != 0)
			return -1;
	return 0;
}

int weft_follow_poll(struct weft_follow *f)
{
	if (f->failed)
		return -1;
	if (f->state != WEFT_FOLLOW_LIVE)
		return f->state;
	int64_t scan = now_ns();
	if (scan_dir(f, f->path, ".", 3, scan) != 0)
		return -1;
	f->nscans++;
	f->last_scan_ns = scan;
	for (size_t i = 0; i < f->ns; i++) {
		struct fstream *s = f->s[i];
		if (check_json(f, s) != 0 || read_stream(f, s) != 0)
			return -1;
		if (s->has_last && s->last_clock > scan + FOLLOW_CLOCK_SLACK_NS && f->same_clock) {
			f->same_clock = 0;
			fwarn(f, "%s: the clocks are not this machine's CLOCK_MONOTONIC: a new stream is waited for %u ms at most",
					s->obs_path, f->grace_ms);
		}
	}
	f->heap_valid = 0;
	int64_t now = now_ns();
	size_t nlive = 0;
	int64_t fr = f->same_clock ? scan : INT64_MAX;
	for (size_t i = 0; i < f->ns; i++) {
		struct fstream *s = f->s[i];
		if (s->done)
			continue;
		nlive++;
		int64_t b = stream_bound(f, s, now);
		if (b < fr)
			fr = b;
	}
	if (nlive == 0 && f->ns > 0) {
		/* Every stream finished: a thread started by one before it
		 * finished is in the tree by now. */
		size_t before = f->ns;
		if (scan_dir(f, f->path, ".", 3, now) != 0)
			return -1;
		if (f->ns == before) {
			if (check_sizes(f) != 0)
				return -1;
			for (size_t i = 0; i < f->ns; i++)
				warn_cut(f, f->s[i]);
			f->frontier = INT64_MAX;
			f->state = WEFT_FOLLOW_DONE;
			return f->state;
		}
		fr = INT64_MIN;
	}
	if (now - f->growth_ns >= (int64_t) f->timeout_ms * 1000000ll) {
		/* Nothing grew for the timeout: whatever was read is all. */
		if (check_sizes(f) != 0)
			return -1;
		for (size_t i = 0; i < f->ns; i++)
			warn_cut(f, f->s[i]);
		f->frontier = INT64_MAX;
		f->state = WEFT_FOLLOW_STOPPED;
		return f->state;
	}
	if (fr > f->frontier)
		f->frontier = fr;
	return f->state;
}

long weft_follow_next(struct weft_follow *f, struct weft_event *evs, size_t max)
{
	if (f->failed)
		return -1;
	if (!f->heap_valid)
		build_heap(f);
	size_t n = 0;
	while (n < max && f->nheap > 0) {
		struct fstream *s = f->heap[0];
		const uint8_t *p = s->buf + s->bpos;
		int64_t clock = (int64_t) weft_load_u64(p + WEFT_EV_OFF_CLOCK);
		if (clock > f->frontier)
			break;
		struct weft_event *ev = &evs[n++];
		memcpy(ev->mcv, p + WEFT_EV_OFF_MODEL, 3);
		ev->mcv[3] = '\0';
		ev->flags = p[WEFT_EV_OFF_FLAGS];
		ev->rclock = clock;
		ev->sclock = clock;
		ev->payload = p + WEFT_EV_OFF_PAYLOAD;
		ev->jumbo = weft_ev_is_jumbo(ev->flags);
		if (ev->jumbo) {
			ev->jumbo_size = weft_load_u32(ev->payload);
			ev->jumbo_data = ev->payload + WEFT_EV_JUMBO_SIZE_FIELD;
			ev->payload_size = WEFT_EV_JUMBO_SIZE_FIELD + ev->jumbo_size;
		} else {
			ev->jumbo_size = 0;
			ev->jumbo_data = NULL;
			ev->payload_size = weft_ev_payload_size(ev->flags);
		}
		ev->offset = s->buf_off + s->bpos;
		ev->stream = &s->pub;
		s->bpos += WEFT_EV_HEADER_SIZE + ev->payload_size;
		if (f->has_out && clock < f->last_out && !f->warned_order) {
			f->warned_order = 1;
			fwarn(f, "%s: offset %llu: an event at clock %lld, before the clock %lld already yielded: the order is not exact from here (a stream that appeared late, or an unordered region)",
					s->obs_path, (unsigned long long) ev->offset, (long long) clock,
					(long long) f->last_out);
		}
		if (!f->has_out || clock > f->last_out)
			f->last_out = clock;
		f->has_out = 1;
		f->nevents++;
		if (s->bpos < s->bframed) {
			sift_down(f, 0);
		} else {
			f->heap[0] = f->heap[--f->nheap];
			sift_down(f, 0);
		}
	}
	return (long) n;
}
