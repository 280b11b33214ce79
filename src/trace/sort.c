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
 *
 * The sorter's input (the event headers read in order) is in sort_in.c,
 * the whole-stream passes of weft_stream_order and weft_sort_stream in
 * sort_stream.c; what they share in sort_internal.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sort_internal.h"

static int cached_read(struct outcache *oc, int fd, uint64_t fsize, uint8_t *dst, size_t n,
		uint64_t off, struct sort_fail *f)
{
	if (off >= oc->boff && off + n <= oc->boff + oc->blen) {
		memcpy(dst, oc->buf + (size_t) (off - oc->boff), n);
		return 0;
	}
	if (n >= IN_BUF / 2 || oc->buf == NULL)
		return weft_sort_read_at(fd, dst, n, off, f);
	uint64_t left = fsize - off;
	size_t k = left < IN_BUF ? (size_t) left : IN_BUF;
	oc->blen = 0;
	if (weft_sort_read_at(fd, oc->buf, k, off, f) < 0)
		return -1;
	oc->boff = off;
	oc->blen = k;
	memcpy(dst, oc->buf, n);
	return 0;
}

struct weft_sorter *weft_sorter_new(uint64_t fsize, size_t look_back)
{
	struct weft_sorter *z = calloc(1, sizeof *z);
	if (z == NULL)
		return NULL;
	if (weft_sort_in_init(&z->in, fsize) < 0) {
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

size_t weft_sorter_map_size(size_t look_back)
{
	if (look_back == 0 || look_back > SIZE_MAX / (8 * sizeof(struct ent)))
		return 0;
	size_t maxcap = look_back + BATCH;
	/* the ring, then the sort's buffer (len / 2 + 1 + len, len < maxcap) */
	size_t n = (maxcap + maxcap / 2 + 1 + maxcap) * sizeof(struct ent);
	size_t pg = (size_t) sysconf(_SC_PAGESIZE);
	return (n + pg - 1) / pg * pg;
}

struct weft_sorter *weft_sorter_new_mapped(uint64_t fsize, size_t look_back, void *map,
		size_t len, size_t resident)
{
	if (len < weft_sorter_map_size(look_back))
		return NULL;
	struct weft_sorter *z = weft_sorter_new(fsize, 1);
	if (z == NULL)
		return NULL;
	free(z->ring);
	z->look_back = look_back;
	z->maxcap = z->cap = look_back + BATCH;
	z->ring = map;
	z->tmp = z->ring + z->maxcap;
	z->tmpcap = z->maxcap / 2 + 1 + z->maxcap;
	z->map = map;
	z->maplen = len;
	z->resident = resident;
	return z;
}

void weft_sorter_spill(struct weft_sorter *z)
{
	/* A shared mapping of a file: the pages leave this process, their
	 * bytes stay in the file (read again at the next touch). */
	(void) madvise(z->map, z->maplen, MADV_DONTNEED);
	z->touched = 0;
}

void weft_sorter_free(struct weft_sorter *z)
{
	if (z == NULL)
		return;
	free(z->in.buf);
	free(z->oc.buf);
	if (z->map != NULL) {
		munmap(z->map, z->maplen);
	} else {
		free(z->ring);
		free(z->tmp);
	}
	free(z);
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
		weft_sort_set_fail(&z->fail, off, "internal error: the sort window is full");
		return -1;
	}
	size_t ncap = z->cap * 2 < z->maxcap ? z->cap * 2 : z->maxcap;
	linearize(z);
	struct ent *nr = realloc(z->ring, ncap * sizeof *nr);
	if (nr == NULL) {
		weft_sort_set_fail(&z->fail, off, "out of memory for a sort window of %zu events", ncap);
		return -1;
	}
	z->ring = nr;
	z->cap = ncap;
	return 0;
}

/* Stable merge sort by clock; tmp holds n / 2 entries. With a mapped
 * window, the entries touched are counted a piece at a time. */
static void msort(struct weft_sorter *z, struct ent *a, size_t n, struct ent *tmp)
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
		touch(z, n); /* the runs already in order are read here only */
		return;
	}
	size_t h = n / 2;
	msort(z, a, h, tmp);
	msort(z, a + h, n - h, tmp);
	if (a[h - 1].clock <= a[h].clock)
		return; /* already in order */
	size_t i = 0, j = h, k = 0;
	if (__builtin_expect(z->map != NULL, 0)) {
		/* in pieces, so that the pages in use stay few */
		for (size_t p = 0; p < h; p += SPILL_STEP) {
			size_t m = h - p < SPILL_STEP ? h - p : SPILL_STEP;
			memcpy(tmp + p, a + p, m * sizeof *a);
			touch(z, 2 * m);
		}
		while (i < h && j < n) {
			size_t stop = k + SPILL_STEP;
			while (i < h && j < n && k < stop)
				a[k++] = a[j].clock < tmp[i].clock ? a[j++] : tmp[i++];
			touch(z, 2 * SPILL_STEP);
		}
	} else {
		memcpy(tmp, a, h * sizeof *a);
		while (i < h && j < n)
			a[k++] = a[j].clock < tmp[i].clock ? a[j++] : tmp[i++];
	}
	while (i < h)
		a[k++] = tmp[i++];
}

/* The OU] close (not in the window yet) closes a region with events. */
static int sort_region(struct weft_sorter *z, const struct ent *close)
{
	size_t nwin = z->n - z->nfinal;
	size_t k = nwin;
	if (__builtin_expect(z->map != NULL, 0)) {
		/* a mapped window: the entries read counted a piece at a time */
		size_t stop = k;
		do {
			stop = stop > SPILL_STEP ? stop - SPILL_STEP : 0;
			while (k > stop && at(z, z->nfinal + k - 1)->clock >= z->reg_min)
				k--;
			touch(z, SPILL_STEP);
		} while (k == stop && k > 0);
	} else {
		while (k > 0 && at(z, z->nfinal + k - 1)->clock >= z->reg_min)
			k--;
	}
	/* k > 0: the entry before k is the last with a clock below the
	 * region's earliest; it stays, the rest is sorted. */
	if (k == 0 && nwin == z->look_back) {
		weft_sort_set_fail(&z->fail, close->off, "event OU]: the unordered region it closes "
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
			weft_sort_set_fail(&z->fail, close->off, "out of memory to sort %zu events", len);
			return -1;
		}
		z->tmp = nt;
		z->tmpcap = need;
	}
	touch(z, len);
	if (!wraps) {
		msort(z, at(z, from), len, z->tmp);
		return 0;
	}
	size_t a = z->cap - (z->head + from); /* entries before the end of the ring */
	struct ent *lin = z->tmp + len / 2 + 1;
	memcpy(lin, at(z, from), a * sizeof *lin);
	memcpy(lin + a, z->ring, (len - a) * sizeof *lin);
	touch(z, 2 * len);
	msort(z, lin, len, z->tmp);
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
		touch(z, 1);
	}
	return 1;
}

long weft_sorter_emit(struct weft_sorter *z, int fd, uint8_t *dst, size_t cap, uint64_t *need,
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
		if (dst != NULL && weft_sort_read_at(fd, dst, n, z->tail_off, &z->fail) < 0)
			return -1;
		z->tail_given = 1;
		z->out_off += n;
		return (long) n;
	}
	return 0;
}

long weft_sorter_read(struct weft_sorter *z, int fd, uint8_t *dst, size_t cap, uint64_t *need)
{
	return weft_sorter_emit(z, fd, dst, cap, need, 1);
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
