/* SPDX-License-Identifier: MIT */
/*
 * emit.c - events: building them (ovni_ev_*, ovni_payload_*), the emit
 * hot path, jumbo events, flushing the per-thread buffer, and emitting
 * from signal handlers.
 *
 * Hot path (ovni_ev_emit): take the thread's buffer (rt_hot.busy = 1),
 * one test ("fits, in clock order, nobody had the buffer and nothing is
 * pending": also fails when the thread is not ready because cur and end
 * are then NULL), a fixed-size copy, note where the event starts, a
 * pointer bump, give the buffer back, and one look at the pending ring.
 * No locks, no system calls, nothing shared.
 *
 * Flushing, as the reference does it:
 *   automatic (an event does not fit): t0 = clock, write the buffer,
 *     t1 = clock, then store the event, OF[ at t0 and OF] at t1;
 *   ovni_flush(): t0, write, t1, then the emptied buffer receives OF[ at
 *     t0 and OF] at t1 (written by the next flush, or by ovni_thread_free
 *     when events follow them; the pair of a last ovni_flush that nothing
 *     follows is dropped, as the reference loses it).
 *
 * Signal handlers. Everything that changes the buffer runs with
 * rt_hot.busy set; whoever set it (the owner) is the only code writing the
 * buffer. A signal handler that emits while the flag is set (it
 * interrupted the owner: an emit, or a flush whose write(2) is in
 * progress) does not touch the buffer: it appends its event to the
 * thread's pending ring (a reservation by atomic add, so that handlers
 * interrupting handlers do not collide). The owner, before giving the
 * buffer back, stores the pending events after its own event (their
 * clocks were read later); inside a flush they go between OF[ and OF]
 * by clock, and those that no longer fit in the buffer are dropped and
 * counted (stream.json: weft.lost_events), as are events that do not fit
 * in the ring. An owner that sees the ring non-empty once it has given
 * the buffer back takes it again and stores them; a handler that gets the
 * buffer in between (it has no owner then) first stores the pending
 * events older than its own.
 *
 * Clock order. A handler that runs after the interrupted code read its
 * clock but before it called ovni_ev_emit stores a newer event first.
 * Every store therefore also notes where its event starts, as the newest
 * start of its bucket of the buffer at two scales (two stores, no load):
 * this knows event starts among the last 256 bytes finely and the last
 * 16 KiB coarsely. An event older than the newest one stored is put back
 * in place: from the latest known start whose event is not newer (or the
 * buffer start, if nothing newer was written), forward to the first newer
 * event, within RT_SCAN_MAX bytes; failing that it is stored at the end,
 * as the reference would. An automatic flush keeps the newest events
 * (from the oldest known start, up to an eighth of the buffer, which has
 * that much room beyond its size, so flushes happen where they would
 * without it) so that this still works after a handler's event filled
 * the buffer.
 *
 * errno: the hot path does not touch it; everything that can reach a
 * write(2) keeps it (RT_KEEP_ERRNO).
 */
#include <time.h>

#include "obs_format.h"
#include "rt_internal.h"

_Thread_local struct rt_hot rt_hot __attribute__((tls_model("initial-exec")));

static const uint8_t mcv_flush_begin[3] = {'O', 'F', '['};
static const uint8_t mcv_flush_end[3] = {'O', 'F', ']'};

/* A pending record size that ends the ring (the reservation that did not
 * fit). */
#define PEND_END 0xffffu

/* An event in pieces: its 12-byte header as stored, then two payload
 * parts (a jumbo: the size field, then the data). */
struct piece {
	const uint8_t *hdr;
	const void *p1;
	size_t n1;
	const void *p2;
	size_t n2;
};

static inline size_t piece_size(const struct piece *ev)
{
	return WEFT_EV_HEADER_SIZE + ev->n1 + ev->n2;
}

static inline uint64_t piece_clock(const struct piece *ev)
{
	return weft_load_u64(ev->hdr + WEFT_EV_OFF_CLOCK);
}

static inline uint64_t clock_raw(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

uint64_t ovni_clock_now(void)
{
	return clock_raw();
}

void ovni_ev_set_mcv(struct ovni_ev *ev, const char *mcv)
{
	ev->header.model = (uint8_t) mcv[0];
	ev->header.category = (uint8_t) mcv[1];
	ev->header.value = (uint8_t) mcv[2];
}

uint64_t ovni_ev_get_clock(const struct ovni_ev *ev)
{
	return ev->header.clock;
}

void ovni_ev_set_clock(struct ovni_ev *ev, uint64_t clock)
{
	ev->header.clock = clock;
}

int ovni_payload_size(const struct ovni_ev *ev)
{
	if (weft_ev_is_jumbo(ev->header.flags))
		return (int) (WEFT_EV_JUMBO_SIZE_FIELD + ev->payload.jumbo.size);
	return (int) weft_ev_payload_size(ev->header.flags);
}

int ovni_ev_size(const struct ovni_ev *ev)
{
	return (int) WEFT_EV_HEADER_SIZE + ovni_payload_size(ev);
}

void ovni_payload_add(struct ovni_ev *ev, const uint8_t *buf, int size)
{
	static const char func[] = "ovni_payload_add";
	if (size < 0)
		rt_die(func, "the payload size %d is negative", size);
	int cur = (int) weft_ev_payload_size(ev->header.flags);
	int total = cur + size;
	if (total > (int) WEFT_EV_MAX_PAYLOAD)
		rt_die(func, "the payload would be %d bytes, more than the limit of %u bytes", total,
		       WEFT_EV_MAX_PAYLOAD);
	if (total == 1)
		rt_die(func, "a payload of 1 byte cannot be encoded (payloads are 0 or 2 to %u bytes)",
		       WEFT_EV_MAX_PAYLOAD);
	if (size == 0)
		return;
	memcpy(&ev->payload.u8[cur], buf, (size_t) size);
	ev->header.flags = (uint8_t) ((ev->header.flags & ~WEFT_EV_SIZE_MASK) | weft_ev_size_code((unsigned) total));
}

/* ---- owning the buffer ---- */

/* Takes the buffer; returns nonzero if someone had it (then the caller
 * interrupted the owner: it runs in a signal handler). */
static inline uint32_t acquire(void)
{
	uint32_t was = rt_hot.busy;
	rt_hot.busy = 1;
	RT_SIGNAL_FENCE;
	return was;
}

static inline uint32_t pend_reserved(void)
{
	return __atomic_load_n(&rt_hot.pend, __ATOMIC_RELAXED);
}

static void lost_add(struct rt_thread *th)
{
	__atomic_fetch_add(&th->lost, 1, __ATOMIC_RELAXED);
}

/* ---- recent event starts ---- */

static inline uint8_t **slot0_of(const uint8_t *p)
{
	return &rt_hot.slot[((uintptr_t) p >> RT_SLOT0_SHIFT) & (RT_NSLOT0 - 1u)];
}

static inline uint8_t **slot1_of(const uint8_t *p)
{
	return &rt_hot.slot[RT_NSLOT0 + (((uintptr_t) p >> RT_SLOT1_SHIFT) & (RT_NSLOT1 - 1u))];
}

/* p starts an event (the newest in its buckets). */
static inline void slots_note(uint8_t *p)
{
	*slot0_of(p) = p;
	*slot1_of(p) = p;
}

static void slots_clear(void)
{
	for (unsigned i = 0; i < RT_NSLOTS; i++)
		rt_hot.slot[i] = NULL;
}

/* Recomputes the slots from the known starts: the newest of a bucket is
 * kept. */
static void slots_set(uint8_t *const *starts, unsigned n)
{
	slots_clear();
	for (unsigned i = 0; i < n; i++) {
		uint8_t *p = starts[i];
		if (p == NULL)
			continue;
		uint8_t **s0 = slot0_of(p), **s1 = slot1_of(p);
		if (*s0 == NULL || *s0 < p)
			*s0 = p;
		if (*s1 == NULL || *s1 < p)
			*s1 = p;
	}
}

/* The bytes before w were written out and those from w on moved to the
 * start of the buffer. */
static void slots_written(const struct rt_thread *th, const uint8_t *w, const uint8_t *old_cur)
{
	if (w == old_cur) {
		slots_clear();
		return;
	}
	uint8_t *starts[RT_NSLOTS];
	for (unsigned i = 0; i < RT_NSLOTS; i++) {
		uint8_t *p = rt_hot.slot[i];
		starts[i] = p != NULL && p >= w ? th->buf + (p - w) : NULL;
	}
	slots_set(starts, RT_NSLOTS);
}

/* n bytes were inserted at `at` (for an event now starting there). */
static void slots_inserted(uint8_t *at, size_t n)
{
	uint8_t *starts[RT_NSLOTS + 1];
	for (unsigned i = 0; i < RT_NSLOTS; i++) {
		uint8_t *p = rt_hot.slot[i];
		starts[i] = p != NULL && p >= at ? p + n : p;
	}
	starts[RT_NSLOTS] = at;
	slots_set(starts, RT_NSLOTS + 1);
}

static inline uint64_t clock_at(const uint8_t *p)
{
	return weft_load_u64(p + WEFT_EV_OFF_CLOCK);
}

static size_t stored_size(const uint8_t *p)
{
	if (weft_ev_is_jumbo(p[WEFT_EV_OFF_FLAGS]))
		return WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD
		       + weft_load_u32(p + WEFT_EV_OFF_PAYLOAD);
	return WEFT_EV_HEADER_SIZE + weft_ev_payload_size(p[WEFT_EV_OFF_FLAGS]);
}

/* Where an event with clock c, older than the newest stored, goes: after
 * the latest known start whose event is not newer than c (or the buffer
 * start if the file has nothing newer), at the first newer event. NULL:
 * at the end (no such start, or the spot is too far). */
static uint8_t *insertion_point(const struct rt_thread *th, uint64_t c)
{
	uint8_t *cur = rt_hot.cur;
	uint8_t *from = rt_hot.wlast <= c ? th->buf : NULL;
	for (unsigned i = 0; i < RT_NSLOTS; i++) {
		uint8_t *p = rt_hot.slot[i];
		if (p != NULL && p < cur && (from == NULL || p > from) && clock_at(p) <= c)
			from = p;
	}
	if (from == NULL)
		return NULL;
	uint8_t *p = from;
	while (p < cur && clock_at(p) <= c) {
		p += stored_size(p);
		if ((size_t) (p - from) > RT_SCAN_MAX)
			return NULL;
	}
	return p < cur ? p : NULL;
}

/* Where an automatic flush stops writing: at the oldest known start from
 * which the bytes fit in what the buffer may hold back. */
static uint8_t *hold_point(const struct rt_thread *th)
{
	uint8_t *cur = rt_hot.cur;
	uint8_t *w = cur;
	for (unsigned i = 0; i < RT_NSLOTS; i++) {
		uint8_t *p = rt_hot.slot[i];
		if (p != NULL && p < w && (size_t) (cur - p) <= th->hold_max)
			w = p;
	}
	return w;
}

/* ---- storing (owner only) ---- */

/* Stores ev at `at` (moving the bytes from there on) or, if at is NULL,
 * at the end. The caller made sure it fits. */
static void put(uint8_t *at, const struct piece *ev)
{
	size_t n = piece_size(ev);
	uint64_t c = piece_clock(ev);
	uint8_t *cur = rt_hot.cur;
	uint8_t *p = cur;
	if (at != NULL && at < cur) {
		memmove(at + n, at, (size_t) (cur - at));
		slots_inserted(at, n);
		p = at;
	} else {
		slots_note(p);
	}
	memcpy(p, ev->hdr, WEFT_EV_HEADER_SIZE);
	if (ev->n1 > 0)
		memcpy(p + WEFT_EV_HEADER_SIZE, ev->p1, ev->n1);
	if (ev->n2 > 0)
		memcpy(p + WEFT_EV_HEADER_SIZE + ev->n1, ev->p2, ev->n2);
	rt_hot.cur = cur + n;
	if (c > rt_hot.last)
		rt_hot.last = c;
}

static void put_mark(const uint8_t mcv[3], uint64_t clock)
{
	uint8_t hdr[WEFT_EV_HEADER_SIZE] = {0, mcv[0], mcv[1], mcv[2]};
	weft_store_u64(hdr + WEFT_EV_OFF_CLOCK, clock);
	struct piece ev = {hdr, NULL, 0, NULL, 0};
	put(NULL, &ev);
}

static void write_upto(const char *func, struct rt_thread *th, const uint8_t *upto)
{
	size_t len = (size_t) (upto - th->buf);
	if (len > 0)
		rt_write_all(func, th->fd, th->buf, len, th->obs_path);
}

static void own_put(const char *func, struct rt_thread *th, const struct piece *ev);

/* Stores the pending events in order, up to the first whose clock is not
 * below limit. In a flush (in_flush), an event is stored only if `keep`
 * bytes stay free after it, else it is dropped and counted; otherwise
 * each may flush the buffer. */
static void pend_drain(const char *func, struct rt_thread *th, uint64_t limit, size_t keep, int in_flush)
{
	for (;;) {
		uint32_t len = pend_reserved();
		uint32_t pos = th->pend_pos;
		if (pos >= len) {
			if (__atomic_compare_exchange_n(&rt_hot.pend, &len, 0, 0, __ATOMIC_RELAXED,
							__ATOMIC_RELAXED)) {
				th->pend_pos = 0;
				return;
			}
			continue;
		}
		uint16_t n = PEND_END;
		if (pos + 2u <= RT_PEND_SIZE)
			memcpy(&n, th->pend + pos, sizeof n);
		if (n == PEND_END) {
			/* What follows did not fit in the ring (counted). */
			th->pend_pos = len;
			continue;
		}
		const uint8_t *rec = th->pend + pos + 2;
		if (weft_load_u64(rec + WEFT_EV_OFF_CLOCK) >= limit)
			return;
		th->pend_pos = pos + 2u + n;
		struct piece ev = {rec, rec + WEFT_EV_HEADER_SIZE, (size_t) n - WEFT_EV_HEADER_SIZE, NULL, 0};
		if (!in_flush) {
			own_put(func, th, &ev);
		} else if ((size_t) (rt_hot.end - rt_hot.cur) >= (size_t) n + keep) {
			/* Handlers interrupting handlers may leave the ring
			 * out of clock order. */
			uint64_t c = piece_clock(&ev);
			put(c < rt_hot.last ? insertion_point(th, c) : NULL, &ev);
		} else {
			lost_add(th);
		}
	}
}

/* After a flush wrote the buffer (at t0): OF[ at t0 and OF] at t1, with
 * the events of the handlers that interrupted the flush in clock order
 * around OF[ and before OF] (t1 is read once none is pending). */
static void flush_pair(const char *func, struct rt_thread *th, uint64_t t0)
{
	pend_drain(func, th, t0, RT_FLUSH_PAIR_SIZE, 1);
	put_mark(mcv_flush_begin, t0);
	uint64_t t1;
	for (;;) {
		pend_drain(func, th, UINT64_MAX, RT_FLUSH_PAIR_SIZE / 2u, 1);
		t1 = clock_raw();
		RT_SIGNAL_FENCE;
		if (pend_reserved() == 0)
			break;
	}
	put_mark(mcv_flush_end, t1);
}

/* Automatic flush: ev (to go at `at`, or at the end) does not fit. */
static void flush_auto(const char *func, struct rt_thread *th, uint8_t *at, const struct piece *ev)
{
	uint8_t *w = hold_point(th);
	if (at != NULL && at < w)
		at = NULL;
	uint64_t t0 = clock_raw();
	write_upto(func, th, w);
	/* What was written is not newer than anything stored so far. */
	rt_hot.wlast = rt_hot.last;
	uint8_t *cur = rt_hot.cur;
	size_t held = (size_t) (cur - w);
	if (held > 0)
		memmove(th->buf, w, held);
	rt_hot.cur = th->buf + held;
	rt_hot.end = th->buf + held + th->bufsize;
	slots_written(th, w, cur);
	if (at != NULL)
		at = th->buf + (at - w);
	put(at, ev);
	flush_pair(func, th, t0);
	th->explicit_pair = 0;
}

/* Stores ev in clock order, flushing first if it does not fit. */
static void own_put(const char *func, struct rt_thread *th, const struct piece *ev)
{
	uint64_t c = piece_clock(ev);
	uint8_t *at = c < rt_hot.last ? insertion_point(th, c) : NULL;
	if ((size_t) (rt_hot.end - rt_hot.cur) < piece_size(ev)) {
		flush_auto(func, th, at, ev);
		return;
	}
	put(at, ev);
}

/* Gives the buffer back, storing what handlers left pending first. */
static void release(const char *func, struct rt_thread *th)
{
	for (;;) {
		if (pend_reserved() != 0)
			pend_drain(func, th, UINT64_MAX, 0, 0);
		RT_SIGNAL_FENCE;
		rt_hot.busy = 0;
		RT_SIGNAL_FENCE;
		/* A handler that runs from here on owns the buffer itself. */
		if (pend_reserved() == 0)
			return;
		rt_hot.busy = 1;
		RT_SIGNAL_FENCE;
	}
}

/* A new owner first stores what handlers left pending while it had no
 * owner (they ran between an owner giving the buffer back and its last
 * look at the ring) when it is older than its own event (clock c). */
static inline void take_pending(const char *func, struct rt_thread *th, uint64_t c)
{
	if (pend_reserved() != 0)
		pend_drain(func, th, c, 0, 0);
}

/* In a signal handler that interrupted the owner: into the pending ring,
 * or dropped and counted. */
static void pend_push(const char *func, const struct piece *ev)
{
	struct rt_thread *th = rt_thread_peek();
	if (th == NULL)
		th = rt_thread_get(func); /* dies, saying why */
	size_t n = piece_size(ev);
	if (th->closing || n + 2u > RT_PEND_SIZE) {
		lost_add(th);
		return;
	}
	uint32_t need = (uint32_t) n + 2u;
	uint32_t off = __atomic_fetch_add(&rt_hot.pend, need, __ATOMIC_RELAXED);
	if (off >= RT_PEND_SIZE || RT_PEND_SIZE - off < need) {
		/* Later reservations start past this one: mark the end. */
		if (off <= RT_PEND_SIZE - 2u) {
			uint16_t end = PEND_END;
			memcpy(th->pend + off, &end, sizeof end);
		}
		lost_add(th);
		return;
	}
	uint8_t *p = th->pend + off;
	uint16_t n16 = (uint16_t) n;
	memcpy(p, &n16, sizeof n16);
	p += 2;
	memcpy(p, ev->hdr, WEFT_EV_HEADER_SIZE);
	if (ev->n1 > 0)
		memcpy(p + WEFT_EV_HEADER_SIZE, ev->p1, ev->n1);
	if (ev->n2 > 0)
		memcpy(p + WEFT_EV_HEADER_SIZE + ev->n1, ev->p2, ev->n2);
}

/* ---- the public emit calls ---- */

void rt_emit_raw(const char *func, uint8_t flags, const char mcv[3], uint64_t clock, const void *payload,
		 size_t payload_size, const void *extra, size_t extra_size)
{
	RT_KEEP_ERRNO;
	uint8_t hdr[WEFT_EV_HEADER_SIZE] = {flags, (uint8_t) mcv[0], (uint8_t) mcv[1], (uint8_t) mcv[2]};
	weft_store_u64(hdr + WEFT_EV_OFF_CLOCK, clock);
	struct piece ev = {hdr, payload, payload_size, extra, extra_size};
	struct rt_thread *th = rt_thread_peek();
	if (th == NULL)
		th = rt_thread_get(func); /* dies, saying why */
	size_t total = piece_size(&ev);
	if (total > th->bufsize - RT_FLUSH_PAIR_SIZE)
		rt_die(func, "an event of %zu bytes does not fit in the %zu-byte event buffer of '%s'", total,
		       th->bufsize, th->obs_path);
	if (acquire() != 0) {
		pend_push(func, &ev);
		return;
	}
	take_pending(func, th, clock);
	own_put(func, th, &ev);
	release(func, th);
}

/* The event did not fit, is older than the newest stored, the buffer was
 * taken (a signal handler) or events are pending, or the thread is not
 * ready (dies). */
__attribute__((noinline, cold)) static void emit_slow(const struct ovni_ev *ev, size_t size, uint32_t was)
{
	static const char func[] = "ovni_ev_emit";
	const uint8_t *bytes = (const uint8_t *) ev;
	struct piece pc = {bytes, bytes + WEFT_EV_HEADER_SIZE, size - WEFT_EV_HEADER_SIZE, NULL, 0};
	if (was != 0) {
		pend_push(func, &pc);
		return;
	}
	RT_KEEP_ERRNO;
	struct rt_thread *th = rt_thread_get(func);
	take_pending(func, th, piece_clock(&pc));
	own_put(func, th, &pc);
	release(func, th);
}

/* Handlers left events while the hot path had the buffer. */
__attribute__((noinline, cold)) static void emit_drain(void)
{
	static const char func[] = "ovni_ev_emit";
	RT_KEEP_ERRNO;
	struct rt_thread *th = rt_thread_peek();
	if (th == NULL || acquire() != 0)
		return; /* cannot happen: handlers give the buffer back */
	release(func, th);
}

void ovni_ev_emit(struct ovni_ev *ev)
{
	size_t size = WEFT_EV_HEADER_SIZE + weft_ev_payload_size(ev->header.flags);
	uint32_t was = acquire();
	uint8_t *cur = rt_hot.cur;
	uint64_t clock = ev->header.clock;
	uint32_t slow = was | pend_reserved() | (uint32_t) ((uintptr_t) rt_hot.end - (uintptr_t) cur < size)
			| (uint32_t) (clock < rt_hot.last);
	if (RT_UNLIKELY(slow != 0)) {
		emit_slow(ev, size, was);
		return;
	}
	/* The buffer has sizeof(struct ovni_ev) bytes of slack past its end:
	 * a fixed-size copy is cheaper than a variable one. */
	memcpy(cur, ev, sizeof *ev);
	slots_note(cur);
	rt_hot.cur = cur + size;
	rt_hot.last = clock;
	RT_SIGNAL_FENCE;
	rt_hot.busy = 0;
	RT_SIGNAL_FENCE;
	if (RT_UNLIKELY(pend_reserved() != 0))
		emit_drain();
}

void ovni_ev_jumbo_emit(struct ovni_ev *ev, const uint8_t *buf, uint32_t bufsize)
{
	static const char func[] = "ovni_ev_jumbo_emit";
	const char mcv[3] = {(char) ev->header.model, (char) ev->header.category, (char) ev->header.value};
	uint8_t size_field[WEFT_EV_JUMBO_SIZE_FIELD];
	weft_store_u32(size_field, bufsize);
	rt_emit_raw(func, (uint8_t) (WEFT_EV_FLAG_JUMBO | WEFT_EV_JUMBO_NIBBLE), mcv, ev->header.clock, size_field,
		    sizeof size_field, buf, bufsize);
}

void ovni_flush(void)
{
	static const char func[] = "ovni_flush";
	RT_KEEP_ERRNO;
	uint32_t was = acquire();
	struct rt_thread *th = rt_thread_get(func);
	/* In a handler that interrupted this thread's emit or flush: that
	 * call is using the buffer; there is nothing to do. */
	if (was != 0)
		return;
	take_pending(func, th, UINT64_MAX);
	uint64_t t0 = clock_raw();
	uint8_t *cur = rt_hot.cur;
	write_upto(func, th, cur);
	rt_hot.wlast = rt_hot.last;
	rt_hot.cur = th->buf;
	rt_hot.end = th->buf + th->bufsize;
	slots_clear();
	flush_pair(func, th, t0);
	th->explicit_pair = 1;
	release(func, th);
}

/* ---- thread start and end ---- */

void rt_emit_open(struct rt_thread *th)
{
	slots_clear();
	rt_hot.last = 0;
	rt_hot.wlast = 0;
	rt_hot.busy = 0;
	__atomic_store_n(&rt_hot.pend, 0, __ATOMIC_RELAXED);
	th->pend_pos = 0;
	RT_SIGNAL_FENCE;
	rt_hot.end = th->buf + th->bufsize;
	rt_hot.cur = th->buf;
}

void rt_emit_close(const char *func, struct rt_thread *th)
{
	if (acquire() != 0)
		rt_die(func, "called in a signal handler that interrupted this thread's emit or flush");
	if (pend_reserved() != 0)
		pend_drain(func, th, UINT64_MAX, 0, 0);
	/* From here on, handlers' events are dropped (and counted). */
	th->closing = 1;
	RT_SIGNAL_FENCE;
	if (pend_reserved() != 0)
		pend_drain(func, th, UINT64_MAX, 0, 0);
	/* The reference does not flush here, so the OF[/OF] pair that its
	 * last ovni_flush left in the buffer never reaches the file: drop it
	 * when nothing followed it. Events emitted after it are written (with
	 * the pair before them), and so is the pair of an automatic flush. */
	if (th->explicit_pair && rt_hot.cur == th->buf + RT_FLUSH_PAIR_SIZE)
		rt_hot.cur = th->buf;
	write_upto(func, th, rt_hot.cur);
	slots_clear();
	rt_hot.cur = NULL;
	rt_hot.end = NULL;
	/* The buffer stays taken: ovni_thread_free gives it back once the
	 * thread is finished. */
}

void rt_emit_forget(void)
{
	slots_clear();
	rt_hot.cur = NULL;
	rt_hot.end = NULL;
	rt_hot.last = 0;
	rt_hot.busy = 0;
	__atomic_store_n(&rt_hot.pend, 0, __ATOMIC_RELAXED);
}
