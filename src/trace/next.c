/* SPDX-License-Identifier: MIT */
/*
 * next.c - the iteration of libweft: its start (the read-ahead thread, the
 * sorters of unordered regions, a seek), the merge of the streams by clock
 * into events (weft_next), batches of them (weft_next_batch) or references
 * (weft_next_refs), and the first clock of a stream as the iteration will
 * give it. Opening, inspecting and closing a trace are in trace.c.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace_internal.h"

/* A model byte no stream requires: an error when strict, one warning per
 * model byte when lenient. Returns -1 on error. */
static int unrequired_model(struct weft_trace *t, struct weft_wstream *s, const uint8_t *p,
		uint64_t offset)
{
	unsigned char model = p[WEFT_EV_OFF_MODEL];
	char mcv[16];
	weft_mcv_show(p + WEFT_EV_OFF_MODEL, mcv);
	int mlen = mcv[0] == '\\' ? 4 : 1;
	if (t->diag.mode == WEFT_STRICT) {
		t->failed = 1;
		return weft_fail(&t->diag, "%s: offset %" PRIu64 ": event %s of model '%.*s', "
				"which no stream requires in ovni.require", s->obs_path,
				offset, mcv, mlen, mcv);
	}
	if (!t->warned[model]) {
		t->warned[model] = 1;
		weft_warnf(&t->diag, "%s: offset %" PRIu64 ": event %s of model '%.*s', "
				"which no stream requires in ovni.require (not reported again "
				"for this model)", s->obs_path, offset, mcv, mlen, mcv);
	}
	return 0;
}

/* Fills ev for a normal event (no jumbo or reserved flag bits) at p, whose
 * first 4 bytes are head, with few, wide stores. */
static inline void fill_normal(struct weft_event *ev, const uint8_t *p, uint32_t head,
		int64_t clock, uint64_t clkoff, uint64_t cbase, const struct weft_stream *pub)
{
	uint32_t code = head & WEFT_EV_SIZE_MASK;
	uint32_t psize = code ? code + 1 : 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	/* mcv[0..2] = bytes 1..3, mcv[3] = NUL, then flags (and padding) */
	_Static_assert(offsetof(struct weft_event, mcv) == 0
			&& offsetof(struct weft_event, flags) == 4
			&& offsetof(struct weft_event, payload_size) + 4
				== offsetof(struct weft_event, jumbo)
			&& offsetof(struct weft_event, jumbo) % 8 == 4
			&& offsetof(struct weft_event, jumbo_size) % 8 == 0
			&& offsetof(struct weft_event, offset)
				== offsetof(struct weft_event, jumbo_size) + 8,
			"struct weft_event layout");
	uint32_t mcv = head >> 8; /* bytes 1..3, then NUL */
	memcpy(ev->mcv, &mcv, 4);
	ev->flags = (uint8_t) head;
	uint64_t w1 = psize; /* payload_size, then jumbo = 0 */
	memcpy(&ev->payload_size, &w1, 8);
	uint64_t z = 0; /* jumbo_size and the padding after it */
	memcpy(&ev->jumbo_size, &z, 8);
#else
	ev->mcv[0] = (char) p[WEFT_EV_OFF_MODEL];
	ev->mcv[1] = (char) p[WEFT_EV_OFF_CATEGORY];
	ev->mcv[2] = (char) p[WEFT_EV_OFF_VALUE];
	ev->mcv[3] = '\0';
	ev->flags = (uint8_t) head;
	ev->payload_size = psize;
	ev->jumbo = 0;
	ev->jumbo_size = 0;
#endif
	ev->rclock = clock;
	ev->sclock = (int64_t) ((uint64_t) clock + clkoff);
	ev->payload = p + WEFT_EV_OFF_PAYLOAD;
	ev->jumbo_data = NULL;
	ev->offset = cbase + (uint64_t) (uintptr_t) p;
	ev->stream = pub;
}

/* Fills ev from any whole event of size bytes at p in the current chunk of s. */
static void fill_event(const struct weft_wstream *s, const uint8_t *p, uint64_t size,
		struct weft_event *ev)
{
	weft_event_fill(p, size, ev);
	ev->offset = s->cbase + (uint64_t) (uintptr_t) p;
	ev->sclock = weft_sclock_of(s, ev->rclock);
	ev->stream = &s->pub;
}

/* Where the iteration functions put what they yield: struct weft_event
 * (weft_next, weft_next_batch) or struct weft_ref (weft_next_refs). The
 * functions below take it as a constant and are inlined into each. */
enum out_kind { OUT_EVENT, OUT_REF };

static inline __attribute__((always_inline)) void put(void *out, size_t k,
		enum out_kind kind, struct weft_wstream *s, const uint8_t *p)
{
	if (kind == OUT_REF) {
		struct weft_ref *r = (struct weft_ref *) out + k;
		r->raw = p;
		r->stream = &s->pub;
	} else {
		struct weft_event *ev = (struct weft_event *) out + k;
		uint32_t head = weft_load_u32(p);
		if (__builtin_expect(!(head & 0xf0u), 1)) { /* no jumbo or reserved bits */
			fill_normal(ev, p, head, (int64_t) weft_load_u64(p + WEFT_EV_OFF_CLOCK),
					(uint64_t) s->clkoff, s->cbase, &s->pub);
			if (__builtin_expect(s->drift_ppb != 0, 0))
				ev->sclock = weft_sclock_of(s, ev->rclock);
			return;
		}
		fill_event(s, p, s->evsize, ev);
	}
}

/* Yields the pending event of s into out[k]. */
static inline __attribute__((always_inline)) int yield(struct weft_trace *t,
		struct weft_wstream *s, void *out, size_t k, enum out_kind kind)
{
	const uint8_t *p = s->evp;
	if (__builtin_expect(!t->allowed[p[WEFT_EV_OFF_MODEL]], 0)
			&& unrequired_model(t, s, p, s->cbase + (uint64_t) (uintptr_t) p) < 0)
		return -1;
	put(out, k, kind, s, p);
	t->nevents++;
	return 1;
}

static int use_readahead(struct weft_trace *t)
{
	enum weft_readahead m = t->ra_mode; /* the environment's choice applied */
	if (m == WEFT_READAHEAD_ON)
		return 1;
	if (m == WEFT_READAHEAD_OFF || t->nstreams == 0 || t->nstreams > 256)
		return 0;
	uint64_t bytes = 0;
	for (size_t i = 0; i < t->nstreams; i++)
		bytes += t->streams[i]->fsize;
	return bytes >= (4u << 20) && weft_online_cpus() >= 2;
}

/* Sorting on read: the sorter of s, made when first needed. */
static int need_sorter(struct weft_trace *t, struct weft_wstream *s)
{
	if (s->sorter != NULL)
		return 0;
	if (weft_sort_plan(t) < 0) /* every stream's, once */
		return -1;
	if (s->sorter == NULL)
		return weft_fail(&t->diag, "%s: out of memory for sorting on read", s->obs_path);
	return 0;
}

struct seek_push {
	struct weft_wstream *s;
	int64_t prev;  /* the key of the last event dropped */
	int has_prev;
};

static int cmp_seek_push(const void *a, const void *b)
{
	const struct seek_push *x = a, *y = b;
	if (x->has_prev != y->has_prev)
		return x->has_prev - y->has_prev;
	if (x->has_prev && x->prev != y->prev)
		return x->prev < y->prev ? -1 : 1;
	return (x->s->index > y->s->index) - (x->s->index < y->s->index);
}

static int start(struct weft_trace *t)
{
	t->started = 1;
	int ra = use_readahead(t);
	/* With the thread: a chunk being read, one ready, one being merged. */
	unsigned nring = ra ? 3 : 1;
	for (size_t i = 0; i < t->nstreams; i++) {
		t->streams[i]->index = i;
		t->streams[i]->keyoff = t->raw_order ? 0 : t->streams[i]->clkoff;
		t->streams[i]->keydrift = !t->raw_order && t->streams[i]->drift_ppb != 0;
	}
	struct weft_midx_plan mp;
	if (weft_midx_plan(t, &mp) < 0)
		return -1;
	for (size_t i = 0; i < t->nstreams; i++) {
		struct weft_wstream *s = t->streams[i];
		/* an index's keys know no drift: such a stream reads from its start */
		if (t->seek && t->sort.mode == WEFT_SORT_NONE && !mp.use && !s->keydrift) {
			uint64_t off;
			int found = weft_index_seek(t, s, t->seek_clock, &off);
			if (found < 0)
				return -1;
			if (found > 0) {
				t->nindexed++;
				if (off > s->prod.off) {
					s->prod.off = off;
					/* The region state there is not known: a
					 * clock going back before the next OU[ or
					 * OU] is taken as inside a region. */
					s->prod.reg_off = off;
					s->prod.reg_in = 1;
				}
			}
		}
		if (t->sort.mode == WEFT_SORT_REGIONS && need_sorter(t, s) < 0) {
			weft_midx_plan_free(&mp);
			return -1;
		}
		/* Sorting on read: a clock still going back inside a region is
		 * one of a region its stream never closes (named so). */
		s->prod.unord = t->backwards != WEFT_BACKWARDS_ERROR || t->sort.mode == WEFT_SORT_REGIONS;
		s->chunk_cap = weft_chunk_size(t, s, nring);
		if (weft_stream_alloc_ring(t, s, nring) < 0) {
			weft_midx_plan_free(&mp);
			return -1;
		}
	}
	if (ra && weft_readahead_start(t) < 0)
		weft_warnf(&t->diag, "cannot start the read-ahead thread; reading without it");
	if (mp.use) {
		int r = weft_midx_resume(t, &mp);
		weft_midx_plan_free(&mp);
		return r;
	}
	struct seek_push *sp = NULL;
	size_t nsp = 0;
	if (t->seek && (sp = weft_calloc(t->nstreams, sizeof *sp)) == NULL)
		return weft_oom(&t->diag, "starting to read %s", t->path);
	for (size_t i = 0; i < t->nstreams; i++) {
		struct weft_wstream *s = t->streams[i];
		int r = weft_stream_step(t, s, 1);
		/* Seeking: the events before the seek clock are dropped, up to
		 * the stream's first one at or after it. */
		int has_prev = 0;
		int64_t prev = 0;
		while (t->seek && r > 0 && s->key < t->seek_clock) {
			has_prev = 1;
			prev = s->key;
			r = weft_stream_step(t, s, 1);
		}
		if (r < 0) {
			free(sp);
			return -1;
		}
		if (r > 0) {
			s->first_clock = s->last_clock;
			s->has_first = 1;
			if (t->seek)
				sp[nsp++] = (struct seek_push) { s, prev, has_prev };
			else
				weft_heap_push(t, s);
		} else {
			s->ended = 1;
		}
	}
	if (t->seek) {
		/* The heap as a full read would have it, as far as the dropped
		 * events tell (events of equal clocks in several streams come
		 * out in the heap's order): a full read pushes a stream with
		 * its first event at or after the seek clock when the event
		 * before it is yielded, so the streams that had none are
		 * pushed first (in stream order, as at the start), then the
		 * others in the order of the last event each dropped. */
		weft_sort(sp, nsp, sizeof *sp, cmp_seek_push);
		for (size_t i = 0; i < nsp; i++)
			weft_heap_push(t, sp[i].s);
		free(sp);
	}
	return 0;
}

/* Once, at the end of the iteration: the backwards clocks not warned one by one. */
static void end_report(struct weft_trace *t)
{
	t->ended = 1;
	if (t->nback_out > WEFT_BACKWARDS_WARN_MAX)
		weft_warnf(&t->diag, "%" PRIu64 " more clocks go backwards outside unordered "
				"regions (%" PRIu64 " in all; only the first %d are shown)",
				t->nback_out - WEFT_BACKWARDS_WARN_MAX, t->nback_out,
				WEFT_BACKWARDS_WARN_MAX);
}

/* One step of the merge into out[k]. With may_switch == 0, returns 2 instead
 * of moving the current stream to its next chunk (which ends the lifetime of
 * the events yielded from its current one). */
static inline __attribute__((always_inline)) int next_one(struct weft_trace *t, void *out,
		size_t k, int may_switch, enum out_kind kind)
{
	struct weft_wstream *s = t->cur;
	if (__builtin_expect(s != NULL, 1)) {
		int r = weft_stream_step(t, s, may_switch);
		if (__builtin_expect(r == 2, 0))
			return 2;
		if (__builtin_expect(r < 0, 0))
			goto fail;
		if (r > 0) {
			if (t->nheap == 0)
				return yield(t, s, out, k, kind);
			if (s->key < t->hkey[0] && !t->no_fast
					&& (t->fast_known ? t->fast_ok : weft_heap_fast_ok(t)))
				return yield(t, s, out, k, kind);
			s = weft_heap_pushpop(t, s);
			t->cur = s;
			return yield(t, s, out, k, kind);
		}
		s->ended = 1; /* before any other event is yielded */
	} else if (!t->started) {
		if (start(t) < 0)
			goto fail;
	}
	if (t->nheap == 0) {
		t->cur = NULL;
		if (!t->ended)
			end_report(t);
		return 0;
	}
	s = weft_heap_pop(t);
	t->cur = s;
	return yield(t, s, out, k, kind);
fail:
	t->failed = 1;
	t->cur = NULL;
	return -1;
}

int weft_next(struct weft_trace *t, struct weft_event *ev)
{
	if (__builtin_expect(t->failed, 0))
		return -1;
	return next_one(t, ev, 0, 1, OUT_EVENT);
}

/*
 * The runs of the leading streams: as long as the current stream's next event
 * is strictly before the heap's root (and the heap is one the fast path
 * leaves unchanged, see merge.c), its events go straight out, read where the
 * producer framed them: every index entry up to the next listed one (spos)
 * is a whole normal event already checked (chunk.c). When an event is not
 * leading any more, it becomes the stream's pending event, goes through the heap's push-pop like
 * in next_one(), the new root is yielded and its run goes on. A listed
 * entry, the end of the chunk or an error stop the runs; next_one() takes
 * over. Fills out[k..max-1] from k on; returns the new k.
 */
static inline __attribute__((always_inline)) size_t lead_run(struct weft_trace *t, void *out,
		size_t k, size_t max, enum out_kind kind)
{
	while (k < max && !t->failed) {
		struct weft_wstream *s = t->cur;
		if (s == NULL || s->drift_ppb != 0)
			break; /* a drift: the clocks are corrected one by one in next_one() */
		size_t nheap = t->nheap;
		if (nheap > 0 && (t->no_fast
					|| !(t->fast_known ? t->fast_ok : weft_heap_fast_ok(t))))
			break;
		/* clock + keyoff < root key  <=>  clock < cbound (no overflow) */
		int64_t cbound = INT64_MAX;
		if (nheap > 0 && __builtin_sub_overflow(t->hkey[0], s->keyoff, &cbound))
			break; /* extreme offsets: leave it to next_one() */
		const uint32_t *idx = s->idx;
		const uint8_t *base = s->base;
		size_t i = s->ci;
		/* up to the next listed entry (s->stop <= s->cn) or the room left */
		size_t n = s->stop - i < max - k ? s->stop - i : max - k;
		const struct weft_stream *pub = &s->pub;
		size_t j = 0;
		if (kind == OUT_REF) {
			struct weft_ref *r = (struct weft_ref *) out + k;
			for (; j < n; j++) {
				const uint8_t *q = base + idx[i + j];
				if ((int64_t) weft_load_u64(q + WEFT_EV_OFF_CLOCK) >= cbound)
					break;
				r[j].raw = q;
				r[j].stream = pub;
			}
		} else {
			uint64_t clkoff = (uint64_t) s->clkoff;
			uint64_t cbase = s->cbase;
			struct weft_event *ev = (struct weft_event *) out + k;
			for (; j < n; j++) {
				const uint8_t *q = base + idx[i + j];
				int64_t c = (int64_t) weft_load_u64(q + WEFT_EV_OFF_CLOCK);
				if (c >= cbound)
					break;
				fill_normal(ev + j, q, weft_load_u32(q), c, clkoff, cbase, pub);
			}
		}
		if (j > 0) {
			t->nevents += j;
			s->last_clock = (int64_t) weft_load_u64(base + idx[i + j - 1]
					+ WEFT_EV_OFF_CLOCK);
		}
		k += j;
		i += j;
		s->ci = i;
		if (j == n)
			break; /* out of room or chunk, or a listed entry for next_one() */
		const uint8_t *p = base + idx[i];
		int64_t clock = (int64_t) weft_load_u64(p + WEFT_EV_OFF_CLOCK);
		/* The event at i is the stream's next one, not leading any more:
		 * as weft_stream_step() would decode it, then the same push-pop
		 * as next_one(). */
		s->evp = p;
		s->evsize = WEFT_EV_HEADER_SIZE + weft_ev_payload_size(p[WEFT_EV_OFF_FLAGS]);
		s->last_clock = clock;
		s->key = weft_key_of(s, clock);
		s->ci = i + 1;
		struct weft_wstream *top = weft_heap_pushpop(t, s);
		t->cur = top;
		if (yield(t, top, out, k, kind) < 0)
			break; /* t->failed is set: the error comes with the next call */
		k++;
	}
	return k;
}

static inline __attribute__((always_inline)) long next_many(struct weft_trace *t, void *out,
		size_t max, enum out_kind kind)
{
	if (t->failed)
		return -1;
	size_t n = 0;
	while (n < max) {
		n = lead_run(t, out, n, max, kind);
		if (n == max)
			break;
		if (t->failed) {
			if (n == 0)
				return -1;
			break;
		}
		int r = next_one(t, out, n, n == 0, kind);
		if (r == 1) {
			n++;
			continue;
		}
		if (r < 0 && n == 0)
			return -1;
		/* the end (0), a chunk to change (2), or an error after some
		 * events: it is kept for the next call */
		break;
	}
	return (long) n;
}

long weft_next_batch(struct weft_trace *t, struct weft_event *evs, size_t max)
{
	return next_many(t, evs, max, OUT_EVENT);
}

long weft_next_refs(struct weft_trace *t, struct weft_ref *refs, size_t max)
{
	return next_many(t, refs, max, OUT_REF);
}

void weft_ref_event(const struct weft_trace *t, const struct weft_ref *r,
		struct weft_event *ev)
{
	(void) t;
	const struct weft_wstream *s = (const struct weft_wstream *) r->stream;
	uint64_t need = 0;
	/* whole: the producer framed it */
	weft_event_size(r->raw, SIZE_MAX, &need);
	fill_event(s, r->raw, need, ev);
}

/* The rclock of stream i's first event (the sorted stream's with sorting on
 * read, before the iteration starts): 1 with *c set, 0 when none. */
static int first_rclock(const struct weft_trace *t, size_t i, int64_t *c)
{
	if (i >= t->nstreams)
		return 0;
	const struct weft_wstream *s = t->streams[i];
	if (!s->has_peek)
		return 0;
	if (t->sort.mode == WEFT_SORT_REGIONS && !t->started) {
		/* The first event of the sorted stream: its sorter runs as far as
		 * needed to know it (the iteration goes on from there). */
		struct weft_trace *wt = (struct weft_trace *) t;
		struct weft_wstream *ws = wt->streams[i];
		if (need_sorter(wt, ws) < 0)
			return 0;
		int fd = ws->fd >= 0 ? ws->fd : open(ws->obs_path, O_RDONLY | O_CLOEXEC);
		int r = fd >= 0 && weft_sorter_first_clock(ws->sorter, fd, c);
		if (fd >= 0 && fd != ws->fd)
			close(fd);
		return r > 0;
	}
	*c = s->peek_clock;
	return 1;
}

int weft_stream_first_sclock(const struct weft_trace *t, size_t i, int64_t *clock)
{
	int64_t c;
	if (!first_rclock(t, i, &c))
		return 0;
	if (clock != NULL)
		*clock = weft_sclock_of(t->streams[i], c);
	return 1;
}

int weft_stream_first_rclock(const struct weft_trace *t, size_t i, int64_t *clock)
{
	int64_t c;
	if (!first_rclock(t, i, &c))
		return 0;
	if (clock != NULL)
		*clock = c;
	return 1;
}

/* The public sclock: the merge's (weft_sclock_of), from the public fields. */
int64_t weft_stream_sclock(const struct weft_stream *s, int64_t rclock)
{
	if (s->drift_ppb == 0)
		return (int64_t) ((uint64_t) rclock + (uint64_t) s->clock_offset);
	int64_t v, lo, hi;
	if (weft_clk_drift(rclock, s->clock_offset, s->drift_t0, s->drift_ppb, &v))
		return v;
	/* the corrected clock grows with rclock (|drift_ppb| < 10^9) */
	if (!weft_clk_drift_range(s->clock_offset, s->drift_t0, s->drift_ppb, &lo, &hi))
		return rclock > s->drift_t0 ? INT64_MAX : INT64_MIN;
	return rclock > hi ? INT64_MAX : INT64_MIN;
}
