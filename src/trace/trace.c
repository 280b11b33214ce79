/* SPDX-License-Identifier: MIT */
/* trace.c - the public API of libweft: open, inspect, iterate, close. */
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "trace_internal.h"

/* Read window per stream: large for few streams, smaller for many, so that
 * memory stays bounded by the number of streams, not the trace size. */
#define WINDOW_MAX (256u << 10)
#define WINDOW_MIN (64u << 10)
#define WINDOW_BUDGET (64u << 20)

/* Tests and fuzzers: a smaller window reaches the refill paths with small
 * files (0: the normal size). */
size_t weft_window_override;

static void close_all(struct weft_trace *t)
{
	for (size_t i = 0; i < t->nstreams; i++) {
		struct weft_wstream *s = t->streams[i];
		weft_stream_close(s);
		weft_meta_free(&s->meta);
		if (s->json)
			json_decref(s->json);
		free(s->relpath);
		free(s->obs_path);
		free(s->json_path);
		free(s);
	}
	free(t->streams);
	t->streams = NULL;
	t->nstreams = 0;
	weft_free_system(t);
	free(t->hkey);
	free(t->hs);
	free(t->path);
}

void weft_close(struct weft_trace *t)
{
	if (t == NULL)
		return;
	close_all(t);
	free(t);
}

struct weft_trace *weft_open(const char *path, const struct weft_open_opts *opts,
		char *err, size_t errlen)
{
	struct weft_trace *t = weft_xcalloc(1, sizeof *t);
	t->diag.mode = opts ? opts->mode : WEFT_STRICT;
	t->diag.warn = opts ? opts->warn : NULL;
	t->diag.warn_ctx = opts ? opts->warn_ctx : NULL;
	t->diag.err = t->errbuf;
	t->diag.errlen = sizeof t->errbuf;
	t->raw_order = opts ? opts->clock == WEFT_CLOCK_RAW : 0;
	t->path = weft_strdup(path);
	if (t->diag.mode != WEFT_STRICT && t->diag.mode != WEFT_LENIENT) {
		weft_fail(&t->diag, "weft_open: unknown mode %d", (int) t->diag.mode);
		goto fail;
	}
	if (weft_discover(t, path) < 0)
		goto fail;
	if (weft_load_metadata(t) < 0)
		goto fail;
	size_t window = WINDOW_BUDGET / (t->nstreams ? t->nstreams : 1);
	if (window > WINDOW_MAX)
		window = WINDOW_MAX;
	if (window < WINDOW_MIN)
		window = WINDOW_MIN;
	if (weft_window_override >= WEFT_EV_MAX_NORMAL_SIZE)
		window = weft_window_override;
	for (size_t i = 0; i < t->nstreams; i++) {
		struct weft_wstream *s = t->streams[i];
		s->window = window;
		if (weft_stream_open(t, s) < 0)
			goto fail;
		if (s->fsize == WEFT_OBS_HEADER_SIZE)
			weft_warnf(&t->diag, "stream '%s' has zero events", s->relpath);
	}
	if (weft_build_system(t) < 0)
		goto fail;
	if (weft_load_clock_offsets(t) < 0)
		goto fail;
	/* Room for the children of every slot (2n + 2), all sentinels past the
	 * live slots (see merge.c). */
	t->hkey = weft_xcalloc(2 * t->nstreams + 2, sizeof *t->hkey);
	t->hs = weft_xcalloc(2 * t->nstreams + 2, sizeof *t->hs);
	for (size_t i = 0; i < 2 * t->nstreams + 2; i++)
		t->hkey[i] = INT64_MAX;
	return t;
fail:
	if (err != NULL && errlen > 0)
		snprintf(err, errlen, "%s", t->errbuf);
	weft_close(t);
	return NULL;
}

const char *weft_error(const struct weft_trace *t)
{
	return t->errbuf;
}

size_t weft_nstreams(const struct weft_trace *t)
{
	return t->nstreams;
}

const struct weft_stream *weft_stream_at(const struct weft_trace *t, size_t i)
{
	return i < t->nstreams ? &t->streams[i]->pub : NULL;
}

size_t weft_nlooms(const struct weft_trace *t)
{
	return t->nlooms;
}

const struct weft_loom *weft_loom_at(const struct weft_trace *t, size_t i)
{
	return i < t->nlooms ? &t->looms[i]->pub : NULL;
}

size_t weft_nmark_types(const struct weft_trace *t)
{
	return t->nmarks;
}

const struct weft_mark_type *weft_mark_type_at(const struct weft_trace *t, size_t i)
{
	return i < t->nmarks ? &t->marks[i] : NULL;
}

int weft_stream_attr_json(const struct weft_stream *s, const char *dotted_key,
		char *buf, size_t buflen)
{
	const struct weft_wstream *ws = (const struct weft_wstream *) s;
	json_t *v = ws->json;
	const char *k = dotted_key;
	char part[256];
	while (v != NULL && *k) {
		size_t n = strcspn(k, ".");
		if (n >= sizeof part || !json_is_object(v))
			return 0;
		memcpy(part, k, n);
		part[n] = '\0';
		v = json_object_get(v, part);
		k += n;
		if (*k == '.')
			k++;
	}
	if (v == NULL)
		return 0;
	char *txt = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	if (txt == NULL)
		return 0;
	size_t len = strlen(txt);
	if (buf != NULL && buflen > 0)
		snprintf(buf, buflen, "%s", txt);
	free(txt);
	/* snprintf-style: the full length (>= 1: no JSON value serialises to
	 * nothing), so that the caller sees truncation as len >= buflen. */
	return len > INT_MAX ? INT_MAX : (int) len;
}

void weft_trace_set_no_fast(struct weft_trace *t, int no_fast)
{
	t->no_fast = no_fast;
}

/* A model byte no stream requires: an error when strict, one warning per
 * model byte when lenient. Returns -1 on error. */
static int unrequired_model(struct weft_trace *t, struct weft_wstream *s,
		const struct weft_event *ev)
{
	unsigned char model = (unsigned char) ev->mcv[0];
	char mcv[16];
	weft_mcv_show(ev->mcv, mcv);
	int mlen = mcv[0] == '\\' ? 4 : 1;
	if (t->diag.mode == WEFT_STRICT) {
		t->failed = 1;
		return weft_fail(&t->diag, "%s: offset %" PRIu64 ": event %s of model '%.*s', "
				"which no stream requires in ovni.require", s->obs_path,
				ev->offset, mcv, mlen, mcv);
	}
	if (!t->warned[model]) {
		t->warned[model] = 1;
		weft_warnf(&t->diag, "%s: offset %" PRIu64 ": event %s of model '%.*s', "
				"which no stream requires in ovni.require (not reported again "
				"for this model)", s->obs_path, ev->offset, mcv, mlen, mcv);
	}
	return 0;
}

/* The event after the normal event at p whose flags byte (no jumbo or
 * reserved bits: the size code) is flags: p + 12 (code 0) or p + 13 + code.
 * This is the dependency that bounds the decoding loop (each event's address
 * needs the previous event's flags byte), so on x86-64 it is the shortest
 * chain: the byte loaded again straight into a register, one lea, one cmov
 * (no branch: a branch on the size mispredicts on real mixes). */
static inline const uint8_t *next_normal(const uint8_t *p, uint32_t flags)
{
#if defined(__x86_64__) && defined(__GNUC__)
	const uint8_t *next, *with;
	uint32_t f;
	(void) flags;
	__asm__("movzbl (%[p]), %k[f]\n\t"
		"lea 12(%[p]), %[n]\n\t"
		"lea 13(%[p],%q[f]), %[w]\n\t"
		"test %k[f], %k[f]\n\t"
		"cmovne %[w], %[n]"
		: [n] "=&r"(next), [f] "=&r"(f), [w] "=&r"(with)
		: [p] "r"(p), "m"(*(const uint8_t(*)[1]) p)
		: "cc");
	return next;
#else
	const uint8_t *pl = p + WEFT_EV_OFF_PAYLOAD;
	return flags ? pl + 1 + flags : pl;
#endif
}

/* Fills ev for a normal event (no jumbo bit, no reserved flag bits) at p,
 * whose first 4 bytes are head, with few, wide stores. */
static inline void fill_normal(struct weft_event *ev, const uint8_t *p, uint32_t head,
		int64_t clock, uint64_t clkoff, uint32_t psize, uint64_t base,
		const struct weft_stream *pub)
{
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
	ev->offset = base + (uint64_t) (uintptr_t) p;
	ev->stream = pub;
}

static inline int yield(struct weft_trace *t, struct weft_wstream *s, struct weft_event *ev)
{
	const uint8_t *p = s->evp;
	weft_event_fill(p, s->evsize, ev);
	ev->offset = s->buf_off + (uint64_t) (p - s->buf);
	ev->sclock = (int64_t) ((uint64_t) ev->rclock + (uint64_t) s->clkoff);
	ev->stream = &s->pub;
	if (__builtin_expect(!t->allowed[(unsigned char) ev->mcv[0]], 0)
			&& unrequired_model(t, s, ev) < 0)
		return -1;
	t->nevents++;
	return 1;
}

static int start(struct weft_trace *t)
{
	t->started = 1;
	for (size_t i = 0; i < t->nstreams; i++) {
		struct weft_wstream *s = t->streams[i];
		s->keyoff = t->raw_order ? 0 : s->clkoff;
		int r = weft_stream_step(t, s);
		if (r < 0)
			return -1;
		if (r > 0) {
			s->first_clock = s->last_clock;
			weft_heap_push(t, s);
		}
	}
	return 0;
}

/* One step of the merge. With allow_slow == 0, returns 2 instead of taking
 * the slow path of the current stream (which may move its window). */
static inline int next_one(struct weft_trace *t, struct weft_event *ev, int allow_slow)
{
	struct weft_wstream *s = t->cur;
	if (__builtin_expect(s != NULL, 1)) {
		int r = weft_stream_step_fast(s);
		if (__builtin_expect(r == 2, 0)) {
			if (!allow_slow)
				return 2;
			r = weft_stream_step_slow(t, s);
		}
		if (__builtin_expect(r < 0, 0))
			goto fail;
		if (r > 0) {
			if (t->nheap == 0)
				return yield(t, s, ev);
			if (s->key < t->hkey[0] && !t->no_fast
					&& (t->fast_known ? t->fast_ok : weft_heap_fast_ok(t)))
				return yield(t, s, ev);
			s = weft_heap_pushpop(t, s);
			t->cur = s;
			return yield(t, s, ev);
		}
	} else if (!t->started) {
		if (start(t) < 0)
			goto fail;
	}
	if (t->nheap == 0) {
		t->cur = NULL;
		return 0;
	}
	s = weft_heap_pop(t);
	t->cur = s;
	return yield(t, s, ev);
fail:
	t->failed = 1;
	t->cur = NULL;
	return -1;
}

int weft_next(struct weft_trace *t, struct weft_event *ev)
{
	if (__builtin_expect(t->failed, 0))
		return -1;
	return next_one(t, ev, 1);
}

/*
 * The runs of the leading streams: as long as the current stream's next event
 * is strictly before the heap's root (and the heap is one the fast path
 * leaves unchanged, see merge.c), its events are decoded straight into evs
 * with the cursor in registers. When a whole, valid event is not leading any
 * more, it becomes the stream's pending event, goes through the heap's
 * push-pop like in next_one(), the new root is yielded and its run goes on.
 * Anything unusual (end of window, jumbo, backwards clock, a model to check,
 * an error) stops the runs without consuming it; next_one() handles it.
 */
static size_t lead_run(struct weft_trace *t, struct weft_event *evs, size_t max)
{
	struct weft_event *ev = evs, *evend = evs + max;
	while (ev < evend && !t->failed) {
		struct weft_wstream *s = t->cur;
		if (s == NULL)
			break;
		size_t nheap = t->nheap;
		if (nheap > 0 && (t->no_fast
					|| !(t->fast_known ? t->fast_ok : weft_heap_fast_ok(t))))
			break;
		/* clock + keyoff < root key  <=>  clock < cbound (no overflow) */
		int64_t cbound = INT64_MAX;
		if (nheap > 0 && __builtin_sub_overflow(t->hkey[0], s->keyoff, &cbound))
			break; /* extreme offsets: leave it to next_one() */
		const uint8_t *p = s->p;
		const uint8_t *e = s->e;
		if (e - p < (ptrdiff_t) WEFT_EV_MAX_NORMAL_SIZE)
			break;
		int64_t last = s->last_clock;
		uint64_t clkoff = (uint64_t) s->clkoff;
		uint64_t base = s->buf_off - (uint64_t) (uintptr_t) s->buf;
		const struct weft_stream *pub = &s->pub;
		const uint8_t *allowed = t->allowed;
		uint32_t okmodel = 0x10000; /* the last model byte found allowed, << 8 */
		struct weft_event *run = ev;
		int handoff = 0;
		int64_t clock = 0;
		uint32_t psize = 0;
		for (;;) {
			/* Every event is at most WEFT_EV_MAX_NORMAL_SIZE bytes, so the
			 * next `safe` events are whole in the window without a check
			 * per event (one bound for both the window and evs). */
			size_t safe = (size_t) (e - p) / WEFT_EV_MAX_NORMAL_SIZE;
			size_t room = (size_t) (evend - ev);
			if (safe == 0 || room == 0)
				break;
			struct weft_event *stop = ev + (safe < room ? safe : room);
			do {
				uint32_t head = weft_load_u32(p); /* flags, model, category, value */
				clock = (int64_t) weft_load_u64(p + WEFT_EV_OFF_CLOCK);
				/* One compare for the usual case: no jumbo or reserved flag
				 * bits (the high nibble of the flags byte) and the model
				 * byte of the last event. */
				if (__builtin_expect((head & 0xfff0u) != okmodel, 0)) {
					/* jumbo or reserved flag bits: the general path
					 * (next_one) deals with it */
					if (head & 0xf0u)
						goto out;
					if (!allowed[(head >> 8) & 0xffu])
						goto out;
					okmodel = head & 0xff00u;
				}
				if (__builtin_expect(clock < last, 0))
					goto out; /* the slow path reports it */
				uint32_t flags = head & 0xffu; /* the size code here */
				const uint8_t *pl = p + WEFT_EV_OFF_PAYLOAD;
				const uint8_t *next = next_normal(p, flags);
				if (clock >= cbound) {
					psize = (uint32_t) (next - pl);
					handoff = 1;
					goto out;
				}
				fill_normal(ev, p, head, clock, clkoff, (uint32_t) (next - pl), base, pub);
				ev++;
				last = clock;
				p = next;
			} while (ev < stop);
		}
out:
		t->nevents += (uint64_t) (ev - run);
		s->p = p;
		s->last_clock = last;
		if (!handoff)
			break;
		/* The event at p is the stream's next one, as weft_stream_step_fast
		 * would decode it; then the same push-pop as next_one(). */
		s->evp = p;
		s->evsize = WEFT_EV_HEADER_SIZE + psize;
		s->last_clock = clock;
		s->key = (int64_t) ((uint64_t) clock + (uint64_t) s->keyoff);
		s->p = p + s->evsize;
		struct weft_wstream *top = weft_heap_pushpop(t, s);
		t->cur = top;
		if (yield(t, top, ev) < 0)
			break; /* t->failed is set: the error comes with the next call */
		ev++;
	}
	return (size_t) (ev - evs);
}

long weft_next_batch(struct weft_trace *t, struct weft_event *evs, size_t max)
{
	if (t->failed)
		return -1;
	size_t n = 0;
	while (n < max) {
		n += lead_run(t, evs + n, max - n);
		if (n == max)
			break;
		if (t->failed) {
			if (n == 0)
				return -1;
			break;
		}
		int r = next_one(t, &evs[n], n == 0);
		if (r == 1) {
			n++;
			continue;
		}
		if (r == 2)
			break;
		if (r < 0 && n == 0)
			return -1;
		/* r == 0, or an error after some events: it is kept for the next call */
		break;
	}
	return (long) n;
}

uint64_t weft_nevents(const struct weft_trace *t)
{
	return t->nevents;
}

int64_t weft_first_clock(const struct weft_trace *t)
{
	int64_t v = INT64_MAX;
	for (size_t i = 0; i < t->nstreams; i++) {
		const struct weft_wstream *s = t->streams[i];
		if (s->first_clock != INT64_MIN) {
			int64_t c = (int64_t) ((uint64_t) s->first_clock + (uint64_t) s->clkoff);
			if (c < v)
				v = c;
		}
	}
	return v == INT64_MAX ? 0 : v;
}

int64_t weft_last_clock(const struct weft_trace *t)
{
	int64_t v = INT64_MIN;
	for (size_t i = 0; i < t->nstreams; i++) {
		const struct weft_wstream *s = t->streams[i];
		if (s->first_clock != INT64_MIN) {
			int64_t c = (int64_t) ((uint64_t) s->last_clock + (uint64_t) s->clkoff);
			if (c > v)
				v = c;
		}
	}
	return v == INT64_MIN ? 0 : v;
}

int weft_stream_first_sclock(const struct weft_trace *t, size_t i, int64_t *clock)
{
	if (i >= t->nstreams)
		return 0;
	const struct weft_wstream *s = t->streams[i];
	if (!s->has_peek)
		return 0;
	if (clock != NULL)
		*clock = (int64_t) ((uint64_t) s->peek_clock + (uint64_t) s->clkoff);
	return 1;
}
