/* SPDX-License-Identifier: MIT */
/*
 * sort.c - sorting the unordered regions of a stream (OU[ ... OU]) as the
 * reference's ovnisort does, in memory bounded by the look-back: while
 * reading (the producer of a stream takes its bytes from its sorter, see
 * chunk.c) and into a new file (weft_sort_stream, for weft sort).
 *
 * The rule, learnt from the conformance corpus (suite-ovni-sort*: ovni/
 * against ovnisort's ovni-sorted/, byte for byte). The events are taken in
 * file order. An OU[ opens a region; the event after it, unless it is an
 * OU], is the region's first event (an OU] right after the OU[ makes an
 * empty region, left alone); the next OU] closes the region. Then, with c
 * the smallest clock of the region's events (between the OU[ and the OU],
 * both excluded), the events before the OU] are searched from the last one
 * back for one whose clock is below c: everything after it up to the OU]
 * (the OU[ and the events between it and the region included, the OU]
 * excluded) is sorted by clock, stably (equal clocks keep their order).
 * The search looks at most look_back events back (the region's own
 * events count); when it finds none there, the sort starts at the stream's
 * first event if the stream has fewer events before the OU], else the
 * region reaches back too far: an error. A region the stream ends inside
 * is left as it is. Each sort sees the events as the earlier ones left
 * them (a later region may sort into an earlier one).
 *
 * Memory: the window of the last look_back events, as entries (clock,
 * offset, size: 24 bytes), not their bytes; a sort needs half its length
 * again (once and a half when its events wrap around the end of the ring). An event that has look_back events after it cannot move any
 * more: it is final and is given out, its bytes read again from the file
 * (runs of events that did not move are read in one go).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trace_internal.h"

#define MARK_OPEN 1
#define MARK_CLOSE 2

/* The input is read in blocks of this size (only the headers are used). */
#define IN_BUF (64u << 10)
/* Events framed at a time once the window is full (given out in a batch). */
#define BATCH 64u
/* weft_sort_stream writes in pieces of this size. */
#define OUT_BUF (256u << 10)

struct ent {
	int64_t clock;
	uint64_t off; /* in the file */
	uint32_t size;
	uint8_t mark;
	char mcv[3];
};

struct sort_fail {
	int failed;
	uint64_t off;
	char why[512];
};

static void set_fail(struct sort_fail *f, uint64_t off, const char *fmt, ...) WEFT_PRINTF(3, 4);

static void set_fail(struct sort_fail *f, uint64_t off, const char *fmt, ...)
{
	if (f->failed)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(f->why, sizeof f->why, fmt, ap);
	va_end(ap);
	f->failed = 1;
	f->off = off;
}

/* Reads n bytes at off into dst. */
static int read_at(int fd, uint8_t *dst, size_t n, uint64_t off, struct sort_fail *f)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = pread(fd, dst + got, n - got, (off_t) (off + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			set_fail(f, off + got, "read failed: %s", strerror(errno));
			return -1;
		}
		if (r == 0) {
			set_fail(f, off + got, "the file became shorter while reading");
			return -1;
		}
		got += (size_t) r;
	}
	return 0;
}

/* The event headers of a stream file, in order. */
struct in {
	int fd;
	uint64_t fsize;
	uint8_t *buf;
	uint64_t boff; /* file offset of buf[0] */
	size_t blen;
	uint64_t off;  /* the next event */
};

static int in_init(struct in *in, uint64_t fsize)
{
	memset(in, 0, sizeof *in);
	in->fd = -1;
	in->fsize = fsize;
	in->off = fsize < WEFT_OBS_HEADER_SIZE ? fsize : WEFT_OBS_HEADER_SIZE;
	in->buf = malloc(IN_BUF);
	return in->buf != NULL ? 0 : -1;
}

static inline int mark_of(const uint8_t *p)
{
	if (p[WEFT_EV_OFF_MODEL] != 'O' || p[WEFT_EV_OFF_CATEGORY] != 'U')
		return 0;
	return p[WEFT_EV_OFF_VALUE] == '[' ? MARK_OPEN : p[WEFT_EV_OFF_VALUE] == ']' ? MARK_CLOSE : 0;
}

/* The event at p (at in->off, need bytes, whole) into *e; in moves past it. */
static inline void take(struct in *in, struct ent *e, const uint8_t *p, uint64_t need)
{
	e->clock = (int64_t) weft_load_u64(p + WEFT_EV_OFF_CLOCK);
	e->off = in->off;
	e->size = (uint32_t) need;
	e->mark = (uint8_t) mark_of(p);
	memcpy(e->mcv, p + WEFT_EV_OFF_MODEL, 3);
	in->off += need;
}

/* 1: the next event into *e; 0: no whole event is left (in->off is where
 * the rest begins: the end of the file, or bytes that cannot hold the
 * event they begin); -1: error (f). */
static int in_next_slow(struct in *in, struct ent *e, struct sort_fail *f)
{
	uint64_t left = in->fsize - in->off;
	if (left == 0)
		return 0;
	/* the header and a jumbo's size field */
	size_t want = left < WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD ? (size_t) left
		: WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD;
	if (in->off < in->boff || in->off + want > in->boff + in->blen) {
		size_t n = left < IN_BUF ? (size_t) left : IN_BUF;
		if (read_at(in->fd, in->buf, n, in->off, f) < 0)
			return -1;
		in->boff = in->off;
		in->blen = n;
	}
	const uint8_t *p = in->buf + (size_t) (in->off - in->boff);
	size_t avail = (size_t) (in->boff + in->blen - in->off);
	uint64_t need;
	if (!weft_event_size(p, avail, &need) || need > left)
		return 0;
	if (need > UINT32_MAX) {
		set_fail(f, in->off, "an event of %" PRIu64 " bytes: too large to sort", need);
		return -1;
	}
	take(in, e, p, need);
	return 1;
}

/* in_next_slow() when the buffer holds the event's header and jumbo size
 * field, the event is whole in the file and smaller than 4 GiB: most. */
static inline int in_next(struct in *in, struct ent *e, struct sort_fail *f)
{
	uint64_t rel = in->off - in->boff; /* in->off >= in->boff */
	if (__builtin_expect(rel + WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD <= in->blen, 1)) {
		const uint8_t *p = in->buf + rel;
		uint8_t flags = p[WEFT_EV_OFF_FLAGS];
		uint64_t need = weft_ev_is_jumbo(flags)
			? (uint64_t) WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD
				+ weft_load_u32(p + WEFT_EV_OFF_PAYLOAD)
			: WEFT_EV_HEADER_SIZE + weft_ev_payload_size(flags);
		if (__builtin_expect(need <= in->fsize - in->off && need <= UINT32_MAX, 1)) {
			take(in, e, p, need);
			return 1;
		}
	}
	return in_next_slow(in, e, f);
}

/* The message for bytes at off that cannot hold the event they begin. */
static void tail_fail(struct in *in, uint64_t off, struct sort_fail *f)
{
	uint8_t hdr[WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD];
	uint64_t left = in->fsize - off;
	size_t n = left < sizeof hdr ? (size_t) left : sizeof hdr;
	if (read_at(in->fd, hdr, n, off, f) < 0)
		return;
	uint64_t need = 0;
	weft_event_size(hdr, n, &need);
	char why[256];
	weft_why_incomplete(hdr, left, need, why, sizeof why);
	set_fail(f, off, "%s", why);
}

/* The bytes given out are read again from the file through a cache of
 * one block: the events of a sorted range lie near each other. */
struct outcache {
	uint8_t *buf;
	uint64_t boff;
	size_t blen;
};

static int cached_read(struct outcache *oc, int fd, uint64_t fsize, uint8_t *dst, size_t n,
		uint64_t off, struct sort_fail *f)
{
	if (off >= oc->boff && off + n <= oc->boff + oc->blen) {
		memcpy(dst, oc->buf + (size_t) (off - oc->boff), n);
		return 0;
	}
	if (n >= IN_BUF / 2 || oc->buf == NULL)
		return read_at(fd, dst, n, off, f);
	uint64_t left = fsize - off;
	size_t k = left < IN_BUF ? (size_t) left : IN_BUF;
	oc->blen = 0;
	if (read_at(fd, oc->buf, k, off, f) < 0)
		return -1;
	oc->boff = off;
	oc->blen = k;
	memcpy(dst, oc->buf, n);
	return 0;
}

struct weft_sorter {
	struct in in;
	struct outcache oc;
	size_t look_back;
	/* The live entries, oldest first: ring[head], ... (n of them, modulo
	 * cap); the first nfinal are final (given out next), the others the
	 * window (at most look_back). */
	struct ent *ring;
	size_t cap, maxcap;
	size_t head, n, nfinal;
	int in_end;        /* no event left to frame */
	uint64_t tail_off; /* then: where the bytes that are no whole event begin */
	int tail_given;
	struct sort_fail fail;
	/* ovnisort's states: 'S' outside a region, 'U' right after its OU[,
	 * 'X' inside it after its first event */
	char st;
	int64_t reg_min;       /* the smallest clock of the region's events */
	uint64_t reg_open_off; /* its OU[ */
	uint64_t nregions, nempty;
	struct ent *tmp;
	size_t tmpcap;
	/* the sorted stream given so far */
	uint64_t out_off;
	int out_in;
	uint64_t nout, nmoved;
	int have_last;
	int64_t last_clock;
	uint64_t nback, back_off;
	int64_t back_from, back_to;
	char back_mcv[4];
	int back_in;
};

struct weft_sorter *weft_sorter_new(uint64_t fsize, size_t look_back)
{
	struct weft_sorter *z = calloc(1, sizeof *z);
	if (z == NULL)
		return NULL;
	if (in_init(&z->in, fsize) < 0) {
		free(z);
		return NULL;
	}
	if (look_back > SIZE_MAX / (8 * sizeof(struct ent)))
		look_back = SIZE_MAX / (8 * sizeof(struct ent)); /* more than memory holds */
	z->look_back = look_back ? look_back : 1;
	z->maxcap = z->look_back + BATCH;
	z->cap = z->maxcap < 1024 ? z->maxcap : 1024;
	z->ring = malloc(z->cap * sizeof *z->ring);
	z->oc.buf = malloc(IN_BUF);
	if (z->ring == NULL || z->oc.buf == NULL) {
		free(z->ring);
		free(z->oc.buf);
		free(z->in.buf);
		free(z);
		return NULL;
	}
	z->st = 'S';
	z->out_off = z->in.off;
	return z;
}

void weft_sorter_free(struct weft_sorter *z)
{
	if (z == NULL)
		return;
	free(z->in.buf);
	free(z->oc.buf);
	free(z->ring);
	free(z->tmp);
	free(z);
}

/* The i-th live entry (i < n). */
static inline struct ent *at(struct weft_sorter *z, size_t i)
{
	size_t k = z->head + i;
	return &z->ring[k >= z->cap ? k - z->cap : k];
}

static void reverse(struct ent *a, size_t n)
{
	for (size_t i = 0, j = n; i + 1 < j; i++, j--) {
		struct ent x = a[i];
		a[i] = a[j - 1];
		a[j - 1] = x;
	}
}

/* Rotates the ring so that the oldest entry is ring[0] (before it grows). */
static void linearize(struct weft_sorter *z)
{
	if (z->head == 0)
		return;
	reverse(z->ring, z->head);
	reverse(z->ring + z->head, z->cap - z->head);
	reverse(z->ring, z->cap);
	z->head = 0;
}

/* Room for one more live entry (n < cap). */
static int grow(struct weft_sorter *z, uint64_t off)
{
	if (z->cap == z->maxcap) { /* cannot happen: final entries go out first */
		set_fail(&z->fail, off, "internal error: the sort window is full");
		return -1;
	}
	size_t ncap = z->cap * 2 < z->maxcap ? z->cap * 2 : z->maxcap;
	linearize(z);
	struct ent *nr = realloc(z->ring, ncap * sizeof *nr);
	if (nr == NULL) {
		set_fail(&z->fail, off, "out of memory for a sort window of %zu events", ncap);
		return -1;
	}
	z->ring = nr;
	z->cap = ncap;
	return 0;
}

/* Stable merge sort by clock; tmp holds n / 2 entries. */
static void msort(struct ent *a, size_t n, struct ent *tmp)
{
	if (n <= 16) {
		for (size_t i = 1; i < n; i++) {
			struct ent x = a[i];
			size_t j = i;
			while (j > 0 && a[j - 1].clock > x.clock) {
				a[j] = a[j - 1];
				j--;
			}
			a[j] = x;
		}
		return;
	}
	size_t h = n / 2;
	msort(a, h, tmp);
	msort(a + h, n - h, tmp);
	if (a[h - 1].clock <= a[h].clock)
		return; /* already in order */
	memcpy(tmp, a, h * sizeof *a);
	size_t i = 0, j = h, k = 0;
	while (i < h && j < n)
		a[k++] = a[j].clock < tmp[i].clock ? a[j++] : tmp[i++];
	while (i < h)
		a[k++] = tmp[i++];
}

/* The OU] close (not in the window yet) closes a region with events. */
static int sort_region(struct weft_sorter *z, const struct ent *close)
{
	size_t nwin = z->n - z->nfinal;
	size_t k = nwin;
	while (k > 0 && at(z, z->nfinal + k - 1)->clock >= z->reg_min)
		k--;
	/* k > 0: the entry before k is the last with a clock below the
	 * region's earliest; it stays, the rest is sorted. */
	if (k == 0 && nwin == z->look_back) {
		set_fail(&z->fail, close->off, "event OU]: the unordered region it closes "
				"(opened at offset %" PRIu64 ") reaches back further than the "
				"look-back of %zu events: none of the %zu events before this OU] "
				"has a clock below %" PRId64 ", the region's earliest",
				z->reg_open_off, z->look_back, nwin, z->reg_min);
		return -1;
	}
	size_t from = z->nfinal + k, len = z->n - from;
	z->nregions++;
	if (len < 2)
		return 0;
	/* A range that wraps around the end of the ring is sorted in a copy. */
	int wraps = z->head + from < z->cap && z->head + z->n > z->cap;
	size_t need = len / 2 + 1 + (wraps ? len : 0);
	if (need > z->tmpcap) {
		struct ent *nt = realloc(z->tmp, need * sizeof *nt);
		if (nt == NULL) {
			set_fail(&z->fail, close->off, "out of memory to sort %zu events", len);
			return -1;
		}
		z->tmp = nt;
		z->tmpcap = need;
	}
	if (!wraps) {
		msort(at(z, from), len, z->tmp);
		return 0;
	}
	size_t a = z->cap - (z->head + from); /* entries before the end of the ring */
	struct ent *lin = z->tmp + len / 2 + 1;
	memcpy(lin, at(z, from), a * sizeof *lin);
	memcpy(lin + a, z->ring, (len - a) * sizeof *lin);
	msort(lin, len, z->tmp);
	memcpy(at(z, from), lin, a * sizeof *lin);
	memcpy(z->ring, lin + a, (len - a) * sizeof *lin);
	return 0;
}

/* ovnisort's state machine on the event e (not in the window yet): an event
 * outside a region that is no marker changes nothing. */
static int regions(struct weft_sorter *z, const struct ent *e)
{
	switch (z->st) {
	case 'S':
		if (e->mark == MARK_OPEN) {
			z->st = 'U';
			z->reg_open_off = e->off;
		}
		break;
	case 'U':
		if (e->mark == MARK_CLOSE) {
			z->nempty++;
			z->st = 'S';
		} else {
			z->st = 'X';
			z->reg_min = e->clock;
		}
		break;
	default:
		if (e->mark == MARK_CLOSE) {
			if (sort_region(z, e) < 0)
				return -1;
			z->st = 'S';
		} else if (e->clock < z->reg_min) {
			z->reg_min = e->clock;
		}
		break;
	}
	return 0;
}

/* Frames the file's next events (running the state machine on each) until
 * BATCH are final (or the end). 1: a final entry is at the head; 0: none is
 * left; -1: failed (the entries that were final before the failure come
 * first). */
static int ensure(struct weft_sorter *z)
{
	if (z->nfinal > 0)
		return 1;
	while (z->nfinal < BATCH) {
		if (z->fail.failed)
			return z->nfinal > 0 ? 1 : -1;
		if (z->in_end)
			return z->nfinal > 0;
		if (z->n == z->cap && grow(z, z->in.off) < 0)
			return z->nfinal > 0 ? 1 : -1;
		/* framed straight into its slot, counted once the state machine
		 * ran (a sort does not see it) */
		struct ent *e = at(z, z->n);
		int r = in_next(&z->in, e, &z->fail);
		if (r < 0)
			return z->nfinal > 0 ? 1 : -1;
		if (r == 0) {
			z->in_end = 1;
			z->tail_off = z->in.off;
			z->nfinal = z->n;
			continue;
		}
		if (__builtin_expect(e->mark != 0 || z->st != 'S', 0) && regions(z, e) < 0)
			return z->nfinal > 0 ? 1 : -1;
		if (z->n - z->nfinal == z->look_back)
			z->nfinal++; /* the oldest of the window cannot move any more */
		z->n++;
	}
	return 1;
}

/* Gives out the head entry: the sorted stream's next event. */
static inline void pop(struct weft_sorter *z)
{
	struct ent *e = at(z, 0);
	if (e->off != z->out_off)
		z->nmoved++;
	int inside = z->out_in && e->mark != MARK_CLOSE;
	if (e->mark == MARK_OPEN)
		z->out_in = 1;
	else if (e->mark == MARK_CLOSE)
		z->out_in = 0;
	if (z->have_last && e->clock < z->last_clock && z->nback++ == 0) {
		z->back_off = z->out_off;
		z->back_from = z->last_clock;
		z->back_to = e->clock;
		memcpy(z->back_mcv, e->mcv, 3);
		z->back_mcv[3] = '\0';
		z->back_in = inside;
	}
	z->have_last = 1;
	z->last_clock = e->clock;
	z->out_off += e->size;
	z->nout++;
	z->head = z->head + 1 == z->cap ? 0 : z->head + 1;
	z->n--;
	z->nfinal--;
}

/* The next whole events into dst (NULL: only given out, not read); with
 * give_tail, once they are all given, the bytes that are no whole event. */
static long emit(struct weft_sorter *z, int fd, uint8_t *dst, size_t cap, uint64_t *need,
		int give_tail)
{
	z->in.fd = fd;
	*need = 0;
	size_t got = 0, run = 0;
	uint64_t run_off = 0;
	int r = 0, full = 0;
	while (!full && (r = ensure(z)) > 0) {
		while (z->nfinal > 0) {
			const struct ent *e = at(z, 0);
			if (e->size > cap - got - run) {
				if (got + run == 0)
					*need = e->size;
				full = 1;
				break;
			}
			if (run > 0 && run_off + run != e->off) {
				if (dst != NULL && cached_read(&z->oc, fd, z->in.fsize, dst + got, run,
							run_off, &z->fail) < 0)
					return -1;
				got += run;
				run = 0;
			}
			if (run == 0)
				run_off = e->off;
			run += e->size;
			pop(z);
		}
	}
	if (run > 0) {
		if (dst != NULL && cached_read(&z->oc, fd, z->in.fsize, dst + got, run, run_off,
					&z->fail) < 0)
			return -1;
		got += run;
	}
	if (got > 0 || *need > 0)
		return (long) got;
	if (r < 0)
		return -1;
	/* everything was given; the bytes that are no whole event come last */
	if (give_tail && !z->tail_given && z->tail_off < z->in.fsize) {
		uint64_t left = z->in.fsize - z->tail_off;
		size_t n = left < cap ? (size_t) left : cap;
		if (dst != NULL && read_at(fd, dst, n, z->tail_off, &z->fail) < 0)
			return -1;
		z->tail_given = 1;
		z->out_off += n;
		return (long) n;
	}
	return 0;
}

long weft_sorter_read(struct weft_sorter *z, int fd, uint8_t *dst, size_t cap, uint64_t *need)
{
	return emit(z, fd, dst, cap, need, 1);
}

const char *weft_sorter_error(const struct weft_sorter *z, uint64_t *off)
{
	*off = z->fail.off;
	return z->fail.why;
}

uint64_t weft_sorter_nmoved(const struct weft_sorter *z)
{
	return z->nmoved;
}

int weft_sorter_out_in_region(const struct weft_sorter *z)
{
	return z->out_in;
}

int weft_sorter_first_clock(struct weft_sorter *z, int fd, int64_t *clock)
{
	z->in.fd = fd;
	if (ensure(z) <= 0)
		return 0;
	*clock = at(z, 0)->clock;
	return 1;
}

/* ---- the public calls ---- */

/* Opens the file of stream s again, as weft_open checked it. */
static int open_again(struct weft_trace *t, const struct weft_wstream *s)
{
	int fd = open(s->obs_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return weft_fail(&t->diag, "%s: cannot open the binary stream: %s", s->obs_path,
				strerror(errno));
	struct stat st;
	if (fstat(fd, &st) != 0) {
		int e = errno;
		close(fd);
		return weft_fail(&t->diag, "%s: cannot stat: %s", s->obs_path, strerror(e));
	}
	if ((uint64_t) st.st_dev != s->dev || (uint64_t) st.st_ino != s->ino) {
		close(fd);
		return weft_fail(&t->diag, "%s: the file was replaced since the trace was opened",
				s->obs_path);
	}
	if ((uint64_t) st.st_size != s->fsize) {
		close(fd);
		return weft_fail(&t->diag, "%s: the file changed size since the trace was opened "
				"(%" PRIu64 " bytes, now %" PRIu64 ")", s->obs_path, s->fsize,
				(uint64_t) st.st_size);
	}
	return fd;
}

static int report_fail(struct weft_trace *t, const struct weft_wstream *s,
		const struct sort_fail *f)
{
	return weft_fail(&t->diag, "%s: offset %" PRIu64 ": %s", s->obs_path, f->off, f->why);
}

/* Stream i opened again for a whole-stream pass (the report cleared), or -1. */
static int open_stream_at(struct weft_trace *t, size_t i, const char *fn,
		struct weft_sort_report *r, const struct weft_wstream **out)
{
	memset(r, 0, sizeof *r);
	if (i >= t->nstreams)
		return weft_fail(&t->diag, "%s: no stream %zu (the trace has %zu)", fn, i,
				t->nstreams);
	*out = t->streams[i];
	return open_again(t, *out);
}

int weft_stream_order(struct weft_trace *t, size_t i, struct weft_sort_report *r)
{
	const struct weft_wstream *s;
	int fd = open_stream_at(t, i, "weft_stream_order", r, &s);
	if (fd < 0)
		return -1;
	struct in in;
	if (in_init(&in, s->fsize) < 0) {
		close(fd);
		return weft_fail(&t->diag, "%s: out of memory", s->obs_path);
	}
	in.fd = fd;
	struct sort_fail f = { 0 };
	struct ent e;
	int rr, in_reg = 0, have = 0;
	int64_t last = 0;
	char st = 'S';
	uint64_t open_off = 0;
	while ((rr = in_next(&in, &e, &f)) > 0) {
		r->nevents++;
		int inside = in_reg && e.mark != MARK_CLOSE;
		if (e.mark)
			in_reg = e.mark == MARK_OPEN;
		if (have && e.clock < last && r->nback++ == 0) {
			r->back_offset = e.off;
			r->back_from = last;
			r->back_to = e.clock;
			memcpy(r->back_mcv, e.mcv, 3);
			r->back_mcv[3] = '\0';
			r->back_in_region = inside;
		}
		have = 1;
		last = e.clock;
		if (st == 'S' && e.mark == MARK_OPEN) {
			st = 'U';
			open_off = e.off;
		} else if (st == 'U') {
			if (e.mark == MARK_CLOSE) {
				r->nempty++;
				st = 'S';
			} else {
				st = 'X';
			}
		} else if (st == 'X' && e.mark == MARK_CLOSE) {
			r->nregions++;
			st = 'S';
		}
	}
	if (rr == 0 && in.off < in.fsize)
		tail_fail(&in, in.off, &f);
	free(in.buf);
	close(fd);
	if (f.failed)
		return report_fail(t, s, &f);
	if (st != 'S') {
		r->unclosed = 1;
		r->unclosed_offset = open_off;
	}
	return 0;
}

int weft_sort_stream(struct weft_trace *t, size_t i, size_t look_back,
		int (*write)(void *ctx, const void *buf, size_t len), void *ctx,
		struct weft_sort_report *r)
{
	const struct weft_wstream *s;
	int fd = open_stream_at(t, i, "weft_sort_stream", r, &s);
	if (fd < 0)
		return -1;
	struct weft_sorter *z = weft_sorter_new(s->fsize,
			look_back ? look_back : WEFT_SORT_LOOK_BACK);
	uint8_t *buf = malloc(OUT_BUF);
	int ret = 0;
	if (z == NULL || buf == NULL) {
		ret = weft_fail(&t->diag, "%s: out of memory", s->obs_path);
		goto out;
	}
	/* the header (checked by weft_open) */
	size_t pre = s->fsize < WEFT_OBS_HEADER_SIZE ? (size_t) s->fsize : WEFT_OBS_HEADER_SIZE;
	if (read_at(fd, buf, pre, 0, &z->fail) < 0) {
		ret = report_fail(t, s, &z->fail);
		goto out;
	}
	uint8_t *dst = write != NULL ? buf : NULL;
	for (;;) {
		uint64_t need;
		long n = emit(z, fd, dst ? dst + pre : NULL, OUT_BUF - pre, &need, 0);
		if (n == 0 && need == 0 && z->tail_off < s->fsize) {
			/* the file ends inside an event: nothing is to be written */
			tail_fail(&z->in, z->tail_off, &z->fail);
			ret = report_fail(t, s, &z->fail);
			goto out;
		}
		if (n < 0) {
			ret = report_fail(t, s, &z->fail);
			goto out;
		}
		if (n == 0 && need > 0) {
			/* a jumbo event larger than the buffer: in pieces */
			const struct ent *e = at(z, 0);
			uint64_t off = e->off, left = e->size;
			pop(z);
			while (left > 0 || pre > 0) {
				size_t k = left < OUT_BUF - pre ? (size_t) left : OUT_BUF - pre;
				if (dst != NULL && read_at(fd, buf + pre, k, off, &z->fail) < 0) {
					ret = report_fail(t, s, &z->fail);
					goto out;
				}
				if (write != NULL && write(ctx, buf, pre + k) != 0) {
					ret = weft_fail(&t->diag, "%s: cannot write the sorted stream",
							s->obs_path);
					goto out;
				}
				off += k;
				left -= k;
				pre = 0;
			}
			continue;
		}
		if (n == 0 && pre == 0)
			break;
		if (write != NULL && write(ctx, buf, pre + (size_t) n) != 0) {
			ret = weft_fail(&t->diag, "%s: cannot write the sorted stream", s->obs_path);
			goto out;
		}
		pre = 0;
		if (n == 0)
			break;
	}
	r->nevents = z->nout;
	r->nregions = z->nregions;
	r->nempty = z->nempty;
	if (z->st != 'S') {
		r->unclosed = 1;
		r->unclosed_offset = z->reg_open_off;
	}
	r->nmoved = z->nmoved;
	r->nback = z->nback;
	r->back_offset = z->back_off;
	r->back_from = z->back_from;
	r->back_to = z->back_to;
	memcpy(r->back_mcv, z->back_mcv, sizeof r->back_mcv);
	r->back_in_region = z->back_in;
out:
	weft_sorter_free(z);
	free(buf);
	close(fd);
	return ret;
}
