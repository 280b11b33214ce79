/* SPDX-License-Identifier: MIT */
/*
 * emit.c - events: building them (ovni_ev_*, ovni_payload_*), the emit
 * hot path, jumbo events, flushing the per-thread buffer, and emitting
 * from signal handlers.
 *
 * Hot path (ovni_ev_emit): take the thread's buffer (rt_hot.busy = 1),
 * one compare and a branch never taken per unusual case ("nobody had the
 * buffer and nothing is pending", "fits": also fails when the thread is
 * not ready because cur and end are then NULL, "in clock order", the
 * WEFT_FLUSH_MS and sampling deadlines, see sample.c and sample_put, and
 * the filter table's byte for the event's model, 0 unless WEFT_FILTER or
 * a callback concerns it, see filter.c), the header stored field by field
 * and the payload (if any) as one fixed-size copy, a pointer bump, give
 * the buffer back, and one look at the pending ring.
 * No locks, no system calls, nothing shared. ovni_clock_now: the clock
 * log entry (below), the clock (with WEFT_CLOCK=tsc from the thread's own
 * copy of the conversion, see clock_fast; without it the vDSO's
 * clock_gettime, called directly by clock_now_mono, a tail call), no stack
 * frame.
 * Measured with bench_emit (docs/runtime.md, "Measured cost").
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
 * the buffer back takes it again and stores them; a handler that finds the
 * buffer free in between (events pending, no owner) adds its event to the
 * ring too, for that owner to store (see defer_to_owner).
 *
 * Clock order. A handler that runs after the thread read its clock
 * (ovni_clock_now) but before it called ovni_ev_emit stores a newer event
 * first; the thread's event then arrives older than the newest stored.
 * Only that case is repaired: ovni_clock_now logs, per thread, the last
 * RT_CLOG_N values it returned with the buffer position at each read,
 * and an older event whose clock is a logged value goes before the first
 * newer event stored after that position (within RT_SCAN_MAX bytes).
 * Every other event is stored at the end, exactly as the reference does:
 * unordered regions written on purpose (clocks set with
 * ovni_ev_set_clock) keep their emit order. Flushes carry the logged
 * positions over (or kill them), and an automatic flush holds back the
 * bytes from the oldest logged position on (up to an eighth of the
 * buffer, which has that much room beyond its size, so flushes happen
 * where they would without it), so that the repair works across a flush
 * that a handler's event caused.
 *
 * Timed flushes (WEFT_FLUSH_MS, for readers following a live trace): the
 * emit compares the clock it already holds against rt_hot.flush_at (the
 * clock of the first event stored since the last write, plus the age;
 * UINT64_MAX when off, so that the compare never sends an event to the slow
 * path). At or past it, the slow path does an automatic flush (the same
 * write, the event after it, the OF[/OF] pair) whether or not the event
 * fits. After a write flush_at is 0: the next event goes to the slow path
 * once, which stores it and sets flush_at from its clock. No timer, no
 * signal: a thread that stops emitting keeps its buffer until it emits
 * again, flushes or ends.
 *
 * WEFT_CRASH=flush (crash.c): the owner's code that moves or writes the
 * buffer's bytes (slow path, ovni_flush) runs between rt_crash_gate_enter
 * and rt_crash_gate_leave, so that a crash handler on another thread can
 * write the buffer; the hot path only appends past the cursor and has no
 * gate. After a crash, an emit or flush that may not stop at the gate
 * (on the crashing thread, or nested in the thread's own gate code) drops
 * its event instead (gate_or_give_back).
 *
 * errno: the hot path does not touch it; everything that can reach a
 * write(2) keeps it (RT_KEEP_ERRNO).
 */
#include <time.h>

#include "obs_format.h"
#include "rt_internal.h"

_Thread_local struct rt_hot rt_hot __attribute__((tls_model("initial-exec"))) = {.cv_latch = RT_CV_NONE};

/* The functions of the emit path start on a cache line of their own:
 * their cost then does not depend on where the linker put them. */
#define RT_HOT __attribute__((aligned(64), hot))

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

/* The clock of the events (clock.c). With WEFT_CLOCK=tsc each thread
 * converts the counter with its own copy of the process's conversion
 * (rt_hot.cv_*, taken again whenever rt_clock_latch moves): one compare
 * of the latch against the copy's (which also tells that the TSC is in
 * use: without it the copy is never taken), one multiplication, and the
 * clamp to the newest value the thread read before (a thread that took
 * the old conversion a little after an update may be a few ns ahead of
 * the new one). Signal handlers: a handler that takes a new copy marks it
 * RT_CV_NONE while it writes it, and the interrupted reader, seeing the
 * copy's latch changed once it has read the fields, reads again. */
static inline uint64_t clock_clamp(uint64_t v)
{
	uint64_t l = rt_hot.clk_last;
	if (v < l)
		v = l;
	rt_hot.clk_last = v;
	return v;
}

/* The thread's copy of the conversion, latch l (async-signal-safe). */
static void cv_take(void)
{
	for (;;) {
		struct rt_clock_conv c;
		uint64_t l = rt_clock_conv_get(&c);
		rt_hot.cv_latch = RT_CV_NONE;
		RT_SIGNAL_FENCE;
		rt_hot.cv_base_tsc = c.base_tsc;
		rt_hot.cv_base_ns = c.base_ns;
		rt_hot.cv_mult = c.mult;
		rt_hot.cv_dmax = c.mult == 0 ? UINT64_MAX : UINT64_MAX / c.mult;
		RT_SIGNAL_FENCE;
		/* A handler that took a copy meanwhile changed the mark: the
		 * fields may be half its, half ours. */
		if (rt_hot.cv_latch != RT_CV_NONE)
			continue;
		rt_hot.cv_latch = l;
		RT_SIGNAL_FENCE;
		return;
	}
}

/* The fast path failed: CLOCK_MONOTONIC, or the TSC with a new copy of
 * the conversion or past the one-multiplication range. */
static inline __attribute__((always_inline)) uint64_t clock_slow_body(void)
{
	if (!__atomic_load_n(&rt_clock_tsc, __ATOMIC_RELAXED))
		return rt_clock_mono_ns();
	struct rt_clock_conv c;
	(void) rt_clock_conv_get(&c);
	uint64_t v = rt_clock_conv_at(&c, rt_tsc_read());
	if (__atomic_load_n(&rt_clock_latch, __ATOMIC_ACQUIRE) != rt_hot.cv_latch)
		cv_take();
	return clock_clamp(v);
}

__attribute__((noinline)) static uint64_t clock_raw_slow(void)
{
	return clock_slow_body();
}

/* The fast path: 1 and the clock in *v, or 0. */
static inline __attribute__((always_inline)) int clock_fast(uint64_t *v)
{
	uint64_t l = __atomic_load_n(&rt_clock_latch, __ATOMIC_ACQUIRE);
	if (RT_LIKELY(l == rt_hot.cv_latch)) {
		uint64_t d = rt_tsc_read() - rt_hot.cv_base_tsc;
		uint64_t c = rt_hot.cv_base_ns + ((d * rt_hot.cv_mult) >> 32);
		RT_SIGNAL_FENCE;
		if (RT_LIKELY(d <= rt_hot.cv_dmax) && RT_LIKELY(rt_hot.cv_latch == l)) {
			*v = clock_clamp(c);
			return 1;
		}
	}
	return 0;
}

static inline uint64_t clock_raw(void)
{
	uint64_t v;
	if (clock_fast(&v))
		return v;
	return clock_raw_slow();
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

/* ---- the clock log ---- */

/* The clock log (rt_hot.clog) remembers, for the last RT_CLOG_N values
 * ovni_clock_now returned on this thread, where the buffer's cursor was
 * when the value was read: the events stored from there on were stored
 * after the read. Only the owner moves bytes in the buffer (flush, put
 * back), and then bumps the epoch and carries over the entries whose
 * positions it keeps; an entry of another epoch is dead. */

static inline int clog_live(unsigned i, const struct rt_thread *th)
{
	return rt_hot.clog_ep[i] == rt_hot.epoch && rt_hot.clog_pos[i] >= th->buf
	       && rt_hot.clog_pos[i] <= rt_hot.cur;
}

/* Starts a new epoch: returns the old one (entries still of it are the
 * live ones to carry over). */
static inline uint32_t clog_new_epoch(void)
{
	uint32_t old = rt_hot.epoch;
	uint32_t ep = old + 1u;
	if (ep == 0)
		ep = 1;
	rt_hot.epoch = ep;
	RT_SIGNAL_FENCE;
	return old;
}

/* Every entry dies. */
static void clog_kill(void)
{
	clog_new_epoch();
}

/* The bytes [w, old_cur) moved to the buffer start (those before w were
 * written out); a position equal to old_cur maps to `to` (where storing
 * goes on). */
static void clog_moved(const struct rt_thread *th, const uint8_t *w, const uint8_t *old_cur, uint8_t *to)
{
	uint32_t old = clog_new_epoch();
	for (unsigned i = 0; i < RT_CLOG_N; i++) {
		uint8_t *pos = rt_hot.clog_pos[i];
		if (rt_hot.clog_ep[i] != old || pos < w || pos > old_cur)
			continue;
		rt_hot.clog_pos[i] = pos == old_cur ? to : th->buf + (pos - w);
		rt_hot.clog_ep[i] = rt_hot.epoch;
	}
}

/* n bytes were inserted at `at`: the positions from there on move on. */
static void clog_inserted(const uint8_t *at, size_t n)
{
	uint32_t old = clog_new_epoch();
	for (unsigned i = 0; i < RT_CLOG_N; i++) {
		if (rt_hot.clog_ep[i] != old)
			continue;
		if (rt_hot.clog_pos[i] >= at)
			rt_hot.clog_pos[i] += n;
		rt_hot.clog_ep[i] = rt_hot.epoch;
	}
}

/* An event with clock c was stored: if c is the newest logged read, that
 * read is done with (its entry goes, the slot is free again), so that a
 * handler that reads and emits many times between a read and its emit
 * (each of its reads consumed by its emit) does not push that read out of
 * the log. Owner only (handlers do not log while it has the buffer). */
static inline void clog_consume(uint64_t c)
{
	uint32_t h = rt_hot.clog_head - 1u;
	uint32_t k = h & (RT_CLOG_N - 1u);
	if (rt_hot.clog_clock[k] == c) {
		rt_hot.clog_ep[k] = 0;
		rt_hot.clog_head = h;
	}
}

/* ovni_clock_now's slow clock into clock log entry k (a tail call, so that
 * the fast path needs no stack frame). */
__attribute__((noinline)) static uint64_t clock_now_slow(uint32_t k)
{
	uint64_t t = clock_slow_body();
	rt_hot.clog_clock[k] = t;
	return t;
}

/* ovni_clock_now's clock without WEFT_CLOCK=tsc (where the thread's copy
 * of the conversion is never taken): CLOCK_MONOTONIC into clock log entry
 * k, the vDSO's function called directly (rt_clock_mono_ns); with it, the
 * slow TSC read. A tail call from ovni_clock_now: its own stack frame
 * (the timespec) stays off the TSC fast path. */
__attribute__((noinline)) static uint64_t clock_now_mono(uint32_t k)
{
	if (RT_UNLIKELY(__atomic_load_n(&rt_clock_tsc, __ATOMIC_RELAXED)))
		return clock_now_slow(k);
	uint64_t t = rt_clock_mono_ns();
	rt_hot.clog_clock[k] = t;
	return t;
}

/* ovni_clock_now in a handler that interrupted the owner (not logged). */
__attribute__((noinline)) static uint64_t clock_now_busy(void)
{
	return clock_raw();
}

RT_HOT uint64_t ovni_clock_now(void)
{
	/* A signal handler that interrupted the owner's emit or flush (its
	 * event goes to the pending ring, stored in clock order) does not
	 * log: the owner may be moving the entries. */
	if (RT_UNLIKELY(rt_hot.busy != 0))
		return clock_now_busy();
	/* Claim an entry, mark it dead, then fill it: the epoch before the
	 * cursor, so that an owner (a handler) moving bytes in between leaves
	 * it dead rather than pointing at moved bytes; the cursor before the
	 * clock, so that what a handler stores after the read is after the
	 * position. A handler that moved the bytes while the entry was being
	 * filled (the epoch changed) left it dead: fill it again, since the
	 * clock is not read yet (without this, a handler that then stores an
	 * event before the thread's emit made that emit's event go after it
	 * with its older clock; seen on a loaded machine, where the thread is
	 * often preempted here and its timer's signal runs on resuming). Once
	 * the epoch is seen unchanged after the fill, a later move carries
	 * the entry over. The entry is named by its index, not a pointer: its
	 * fields are then addressed from the thread pointer directly. */
	uint32_t i = rt_hot.clog_head;
	rt_hot.clog_head = i + 1u;
	uint32_t k = i & (RT_CLOG_N - 1u);
	rt_hot.clog_clock[k] = UINT64_MAX;
	uint32_t ep;
	do {
		rt_hot.clog_ep[k] = 0;
		RT_SIGNAL_FENCE;
		ep = rt_hot.epoch;
		RT_SIGNAL_FENCE;
		rt_hot.clog_pos[k] = rt_hot.cur;
		RT_SIGNAL_FENCE;
		rt_hot.clog_ep[k] = ep;
		RT_SIGNAL_FENCE;
	} while (RT_UNLIKELY(rt_hot.epoch != ep));
	uint64_t t;
	if (RT_UNLIKELY(!clock_fast(&t)))
		return clock_now_mono(k);
	rt_hot.clog_clock[k] = t;
	return t;
}

/* ovni_clock_now for libovni's own callers (the marks): a hidden alias, so
 * that their calls are direct, not through the PLT. */
extern __typeof(ovni_clock_now) rt_clock_now __attribute__((alias("ovni_clock_now"), hot));

static inline uint64_t clock_at(const uint8_t *p)
{
	return weft_load_u64(p + WEFT_EV_OFF_CLOCK);
}

/* rt_hot.flush_at: atomic, as the WEFT_RING_SIGNAL handler may set it
 * from another thread (relaxed: plain loads and stores on x86-64). */
static inline uint64_t flush_at_get(void)
{
	return __atomic_load_n(&rt_hot.flush_at, __ATOMIC_RELAXED);
}

static inline void flush_at_set(uint64_t v)
{
	__atomic_store_n(&rt_hot.flush_at, v, __ATOMIC_RELAXED);
}

/* WEFT_FLUSH_MS: the deadline of a buffer whose first event has clock c. */
static inline uint64_t flush_deadline(const struct rt_thread *th, uint64_t c)
{
	if (th->flush_ns == 0)
		return UINT64_MAX;
	return c > UINT64_MAX - th->flush_ns ? UINT64_MAX : c + th->flush_ns;
}

/* After a write that left no event of the thread's own in the buffer. */
static inline uint64_t flush_unarmed(const struct rt_thread *th)
{
	return th->flush_ns != 0 ? 0 : UINT64_MAX;
}

static inline int is_flush_mark(const uint8_t *p)
{
	return p[WEFT_EV_OFF_MODEL] == 'O' && p[WEFT_EV_OFF_CATEGORY] == 'F';
}

static size_t stored_size(const uint8_t *p)
{
	if (weft_ev_is_jumbo(p[WEFT_EV_OFF_FLAGS]))
		return WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD
		       + weft_load_u32(p + WEFT_EV_OFF_PAYLOAD);
	return WEFT_EV_HEADER_SIZE + weft_ev_payload_size(p[WEFT_EV_OFF_FLAGS]);
}

/* Where an event with clock c, older than the newest stored, goes: only
 * if c is a value ovni_clock_now returned on this thread (a live entry of
 * the clock log, the newest such), at the first event newer than c stored
 * after that read, within RT_SCAN_MAX bytes of it. That is the case a
 * signal handler creates (the thread read its clock, a handler stored a
 * newer event, then the thread emits). A flush mark as that first newer
 * event counts only right at the logged position (a handler's ovni_flush
 * between the read and the emit), not after events stored since the read
 * (the thread's own flush after emitting with the same clock). NULL: at
 * the end, as the reference stores it. */
static uint8_t *insertion_point(const struct rt_thread *th, uint64_t c)
{
	unsigned hit = RT_CLOG_N;
	uint32_t head = rt_hot.clog_head;
	for (unsigned k = 1; k <= RT_CLOG_N; k++) {
		unsigned i = (head - k) & (RT_CLOG_N - 1u);
		if (rt_hot.clog_clock[i] == c && clog_live(i, th)) {
			hit = i;
			break;
		}
	}
	if (hit == RT_CLOG_N)
		return NULL;
	uint8_t *cur = rt_hot.cur;
	uint8_t *at = rt_hot.clog_pos[hit];
	uint8_t *p = at;
	if ((size_t) (cur - p) > RT_SCAN_MAX)
		return NULL;
	while (p < cur && clock_at(p) <= c)
		p += stored_size(p);
	if (p >= cur)
		return NULL;
	if (is_flush_mark(p) && p != at)
		return NULL;
	return p;
}

/* Where an automatic flush stops writing: at the oldest live logged
 * position from which the bytes fit in what the buffer may hold back. */
static uint8_t *hold_point(const struct rt_thread *th)
{
	uint8_t *cur = rt_hot.cur;
	uint8_t *w = cur;
	for (unsigned i = 0; i < RT_CLOG_N; i++) {
		uint8_t *pos = rt_hot.clog_pos[i];
		if (clog_live(i, th) && pos < w && (size_t) (cur - pos) <= th->hold_max)
			w = pos;
	}
	return w;
}

/* ---- storing (owner only) ---- */

/* Sampling (sample.c): the events stored are counted by walking the
 * buffer when a sample is recorded or the buffer is written, never on the
 * emit path. th->cnt_off is the stream offset (th->wbytes is that of the
 * buffer's start) up to which they are counted. */
#define COUNT_RUN 32u
/* Nonzero unless the flags bytes of the COUNT_RUN - 1 events after the
 * one at p, s bytes apart, are all f. */
static inline __attribute__((always_inline)) unsigned run_diff(const uint8_t *p, uint8_t f, size_t s)
{
	unsigned diff = 0;
#pragma GCC unroll 32
	for (size_t k = 1; k < COUNT_RUN; k++)
		diff |= (unsigned) (p[k * s] ^ f);
	return diff;
}

static void count_upto(struct rt_thread *th, const uint8_t *upto)
{
	const uint8_t *p = th->buf + (th->cnt_off - th->wbytes);
	uint64_t n = th->cnt_events;
	while (p < upto) {
		/* A run of normal events of one size is counted COUNT_RUN at a
		 * time: their flags bytes are independent loads, where one
		 * event at a time waits for each load before the next (0.7
		 * against 6.7 ns an event on the development VM). */
		uint8_t f = p[WEFT_EV_OFF_FLAGS];
		size_t s = WEFT_EV_HEADER_SIZE + weft_ev_payload_size(f);
		if (!weft_ev_is_jumbo(f) && (size_t) (upto - p) >= COUNT_RUN * s) {
			unsigned diff;
			switch (s) { /* constant strides: one load, xor and or an event */
			case 12: diff = run_diff(p, f, 12); break;
			case 16: diff = run_diff(p, f, 16); break;
			case 20: diff = run_diff(p, f, 20); break;
			case 24: diff = run_diff(p, f, 24); break;
			case 28: diff = run_diff(p, f, 28); break;
			default: diff = run_diff(p, f, s); break;
			}
			if (diff == 0) {
				p += COUNT_RUN * s;
				n += COUNT_RUN;
				continue;
			}
		}
		p += rt_ev_stored_size(p);
		n++;
	}
	th->cnt_events = n;
	th->cnt_off = th->wbytes + (uint64_t) (p - th->buf);
}

/* An event of n bytes was put at p, before the cursor: if before what
 * is counted, it is counted. */
static void count_inserted(const uint8_t *p, size_t n)
{
	struct rt_thread *th = rt_thread_peek();
	if (th == NULL || !th->sampling)
		return;
	if (p < th->buf + (th->cnt_off - th->wbytes)) {
		th->cnt_off += n;
		th->cnt_events++;
	}
}

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
		p = at;
	}
	memcpy(p, ev->hdr, WEFT_EV_HEADER_SIZE);
	if (ev->n1 > 0)
		memcpy(p + WEFT_EV_HEADER_SIZE, ev->p1, ev->n1);
	if (ev->n2 > 0)
		memcpy(p + WEFT_EV_HEADER_SIZE + ev->n1, ev->p2, ev->n2);
	rt_hot.cur = cur + n;
	if (p != cur) {
		clog_inserted(p, n);
		count_inserted(p, n);
	}
	if (c > rt_hot.last)
		rt_hot.last = c;
	clog_consume(c);
}

static void put_mark(const uint8_t mcv[3], uint64_t clock)
{
	uint8_t hdr[WEFT_EV_HEADER_SIZE] = {0, mcv[0], mcv[1], mcv[2]};
	weft_store_u64(hdr + WEFT_EV_OFF_CLOCK, clock);
	struct piece ev = {hdr, NULL, 0, NULL, 0};
	put(NULL, &ev);
}

static void write_range(const char *func, struct rt_thread *th, const uint8_t *from, const uint8_t *upto)
{
	size_t len = (size_t) (upto - from);
	if (len == 0)
		return;
	rt_clock_calibrate(); /* WEFT_CLOCK=tsc */
	/* WEFT_OUTPUT=off: the events were recorded as usual; the buffer is
	 * reused without writing them. */
	if (RT_UNLIKELY(th->output_off)) {
		__atomic_fetch_add(&th->unwritten, (uint64_t) len, __ATOMIC_RELAXED);
		return;
	}
	rt_write_all(func, th->fd, from, len, th->obs_path);
	rt_index_note(func, th, from, len);
}

static void write_upto(const char *func, struct rt_thread *th, const uint8_t *upto)
{
	if (th->sampling)
		count_upto(th, upto);
	write_range(func, th, th->buf, upto);
	th->wbytes += (uint64_t) (upto - th->buf);
}

static void own_put(const char *func, struct rt_thread *th, const struct piece *ev);

/* Pending records: a 2-byte size (PEND_TAKEN set once stored), then the
 * event. */
#define PEND_TAKEN 0x8000u

/* Stores the pending events in clock order (handlers interrupting
 * handlers may leave the ring out of order), those older than limit. In a
 * flush (in_flush), an event is stored only if `keep` bytes stay free
 * after it, else it is dropped and counted; otherwise each may flush the
 * buffer. */
static void pend_drain(const char *func, struct rt_thread *th, uint64_t limit, size_t keep, int in_flush)
{
	for (;;) {
		uint32_t all = pend_reserved();
		uint32_t len = all < RT_PEND_SIZE ? all : RT_PEND_SIZE;
		/* Skip what was stored and find the oldest left. */
		uint8_t *best = NULL;
		uint32_t pos = th->pend_pos, lead = 1;
		while (pos + 2u <= len) {
			uint16_t n;
			memcpy(&n, th->pend + pos, sizeof n);
			if (n == PEND_END)
				break; /* what follows did not fit in the ring (counted) */
			if ((n & PEND_TAKEN) == 0) {
				lead = 0;
				if (best == NULL || clock_at(th->pend + pos + 2) < clock_at(best + 2))
					best = th->pend + pos;
			}
			pos += 2u + (n & ~PEND_TAKEN);
			if (lead)
				th->pend_pos = pos;
		}
		if (best == NULL) {
			/* Empty it, unless a handler reserved more meanwhile. */
			if (__atomic_compare_exchange_n(&rt_hot.pend, &all, 0, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
				th->pend_pos = 0;
				return;
			}
			continue;
		}
		const uint8_t *rec = best + 2;
		if (clock_at(rec) >= limit)
			return;
		uint16_t n;
		memcpy(&n, best, sizeof n);
		uint16_t taken = (uint16_t) (n | PEND_TAKEN);
		memcpy(best, &taken, sizeof taken);
		struct piece ev = {rec, rec + WEFT_EV_HEADER_SIZE, (size_t) n - WEFT_EV_HEADER_SIZE, NULL, 0};
		if (!in_flush)
			own_put(func, th, &ev);
		else if ((size_t) (rt_hot.end - rt_hot.cur) >= (size_t) n + keep)
			put(NULL, &ev);
		else
			lost_add(th);
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
	th->flushes++;
	th->flush_ns_sum += t1 - t0;
}

/* Automatic flush: ev (to go at `at`, or at the end) does not fit. The
 * bytes from the oldest live logged position on are held back (bounded),
 * so that an event read there can still be put back in place. */
static void flush_auto(const char *func, struct rt_thread *th, uint8_t *at, const struct piece *ev)
{
	uint8_t *w = hold_point(th);
	if (at != NULL && at < w)
		at = NULL;
	uint64_t t0 = clock_raw();
	write_upto(func, th, w);
	uint8_t *cur = rt_hot.cur;
	size_t held = (size_t) (cur - w);
	if (held > 0)
		memmove(th->buf, w, held);
	rt_hot.cur = th->buf + held;
	rt_hot.end = th->buf + held + th->bufsize;
	clog_moved(th, w, cur, rt_hot.cur);
	if (at != NULL)
		at = th->buf + (at - w);
	put(at, ev);
	flush_pair(func, th, t0);
	th->explicit_pair = 0;
	flush_at_set(flush_deadline(th, clock_at(th->buf)));
}

/* ---- the flight recorder (WEFT_RING, see ring.c) ---- */

/* The events before p are dropped (counted by the caller): the rest moves
 * to the buffer start. Returns where `at` (an insertion point, or NULL)
 * is now: NULL if it was dropped too (the event then goes at the end, as
 * flush_auto does). */
static uint8_t *ring_drop_to(struct rt_thread *th, const uint8_t *p, uint8_t *at)
{
	uint8_t *cur = rt_hot.cur;
	if (p == th->buf)
		return at;
	size_t kept = (size_t) (cur - p);
	if (kept > 0)
		memmove(th->buf, p, kept);
	rt_hot.cur = th->buf + kept;
	clog_moved(th, p, cur, rt_hot.cur);
	th->explicit_pair = 0;
	if (at == NULL || at < p)
		return NULL;
	return th->buf + (at - p);
}

/* A write of the ring: the longest suffix of the buffer that fits in the
 * ring size (the events before it are lost, their run closed), then the
 * ring is empty. */
static void ring_write(const char *func, struct rt_thread *th)
{
	struct rt_ring *r = th->ring;
	uint8_t *cur = rt_hot.cur;
	const uint8_t *p = rt_ring_trim(r, th->buf, cur, 0, &r->open);
	rt_ring_close_run(r, th->obs_off);
	write_range(func, th, p, cur);
	rt_hot.cur = th->buf;
	rt_hot.end = th->buf + th->bufsize;
	clog_moved(th, cur, cur, th->buf);
	th->explicit_pair = 0;
}

/* ovni_flush with WEFT_RING_FLUSH=on, or a dump asked by WEFT_RING_SIGNAL:
 * t0, the write of the ring, then the OF[/OF] pair (t0, t1; events of
 * handlers that interrupted the write go around OF[ and before OF], as in
 * any flush), written at once: a pair is never in the ring, so that it
 * cannot be overwritten, and the index entry of this write names its OF[. */
static void ring_flush(const char *func, struct rt_thread *th)
{
	uint64_t t0 = clock_raw();
	ring_write(func, th);
	flush_pair(func, th, t0);
	uint8_t *cur = rt_hot.cur;
	write_upto(func, th, cur);
	rt_hot.cur = th->buf;
	clog_moved(th, cur, cur, th->buf);
}

/* A dump asked by WEFT_RING_SIGNAL (the handler bumped rt_ring_gen, then
 * set flush_at to 0 to send the emit here). flush_at is put back before
 * the generation is read: a request made meanwhile is seen now or leaves
 * flush_at at 0 (both sides seq_cst). */
static void ring_poll(const char *func, struct rt_thread *th)
{
	if (flush_at_get() != UINT64_MAX)
		__atomic_store_n(&rt_hot.flush_at, UINT64_MAX, __ATOMIC_SEQ_CST);
	uint32_t gen = __atomic_load_n(&rt_ring_gen, __ATOMIC_SEQ_CST);
	if (RT_LIKELY(gen == th->ring->seen_gen))
		return;
	th->ring->seen_gen = gen;
	ring_flush(func, th);
}

/* own_put in ring mode: the event goes in the buffer after dropping the
 * oldest events until it fits in the ring with the rest (at least half the
 * buffer is then free, so this runs once per ring size of events at
 * most). An event larger than the ring can never be written: it is lost,
 * and so is everything before it. */
static void ring_put(const char *func, struct rt_thread *th, const struct piece *ev)
{
	struct rt_ring *r = th->ring;
	uint64_t c = piece_clock(ev);
	size_t n = piece_size(ev);
	uint8_t *at = c < rt_hot.last ? insertion_point(th, c) : NULL;
	if ((size_t) (rt_hot.end - rt_hot.cur) < n || n > r->size) {
		const uint8_t *p = rt_ring_trim(r, th->buf, rt_hot.cur, n, &r->open);
		at = ring_drop_to(th, p, at);
	}
	if (n > r->size) {
		rt_ring_run_add(&r->open, c, n);
		clog_consume(c);
	} else {
		put(at, ev);
	}
	ring_poll(func, th);
}

/* Stores ev (in place if a handler made it older than the newest stored,
 * see insertion_point), flushing first if it does not fit. */
static void own_put(const char *func, struct rt_thread *th, const struct piece *ev)
{
	if (th->ring != NULL) {
		ring_put(func, th, ev);
		return;
	}
	uint64_t c = piece_clock(ev);
	uint8_t *at = c < rt_hot.last ? insertion_point(th, c) : NULL;
	uint64_t flush_at = flush_at_get();
	int timed = RT_UNLIKELY(c >= flush_at) && th->flush_ns != 0 && flush_at != 0;
	if (timed || (size_t) (rt_hot.end - rt_hot.cur) < piece_size(ev)) {
		flush_auto(func, th, at, ev);
		return;
	}
	put(at, ev);
	if (flush_at == 0)
		flush_at_set(flush_deadline(th, c));
}

/* Records the thread's sample (sample.c) after the events stored, with
 * the newest clock stored: one event per counter (model byte W, an
 * 8-byte payload), WCe first. Its counters are those of the stream just
 * before WCe: the events and bytes before it (bytes: those written, and
 * those in the buffer), the OF[/OF] pairs before it and the sum of their
 * durations. The periodic deadline moves to the first one after c. */
static void sample_put(const char *func, struct rt_thread *th, uint64_t c)
{
	if (th->sample_ns != 0)
		rt_hot.sample_at = rt_sample_next(rt_hot.sample_at, c, th->sample_ns);
	else
		rt_hot.sample_at = UINT64_MAX;
	count_upto(th, rt_hot.cur);
	struct rt_sample_val v[RT_SAMPLE_MAX];
	static const char built[] = "ebuftlx";
	uint64_t vals[] = {
		th->cnt_events,
		th->wbytes,
		(uint64_t) (rt_hot.cur - th->buf),
		th->flushes,
		th->flush_ns_sum,
		__atomic_load_n(&th->lost, __ATOMIC_RELAXED),
		__atomic_load_n(&th->filtered, __ATOMIC_RELAXED),
	};
	size_t n = 0;
	for (; n < sizeof vals / sizeof vals[0]; n++) {
		v[n].mcv[0] = RT_SAMPLE_BYTE;
		v[n].mcv[1] = 'C';
		v[n].mcv[2] = built[n];
		v[n].v = vals[n];
	}
	n = rt_sample_collect(th, v, n);
	for (size_t i = 0; i < n; i++) {
		uint8_t hdr[WEFT_EV_HEADER_SIZE] = {weft_ev_size_code(8), (uint8_t) v[i].mcv[0], (uint8_t) v[i].mcv[1],
						    (uint8_t) v[i].mcv[2]};
		weft_store_u64(hdr + WEFT_EV_OFF_CLOCK, rt_hot.last);
		uint8_t pay[8];
		weft_store_u64(pay, v[i].v);
		struct piece pc = {hdr, pay, sizeof pay, NULL, 0};
		own_put(func, th, &pc);
	}
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

/* The buffer was free but events were pending before the caller took it
 * (before0: the ring's counter read before acquire; events pushed after
 * it came from handlers that interrupted the caller, which stores them).
 * That happens only between an owner giving the buffer back and its last
 * look at the ring (release, the hot path), so the caller is a signal
 * handler that interrupted that owner, which looks at the ring once the
 * handler returns. Storing the
 * pending events here would let one of them start an automatic flush whose
 * OF[ is newer than the caller's event, which would then have to follow
 * it: the event joins the ring instead (the owner stores them all in
 * clock order, its flushes putting the older ones before OF[) and the
 * buffer is given back. Returns nonzero if it did so. */
static inline int defer_to_owner(const char *func, uint32_t before0, const struct piece *ev)
{
	if (RT_LIKELY(before0 == 0))
		return 0;
	pend_push(func, ev);
	RT_SIGNAL_FENCE;
	rt_hot.busy = 0;
	RT_SIGNAL_FENCE;
	return 1;
}

/* ---- the public emit calls ---- */

__attribute__((noinline, cold)) static void emit_drain(void);

/* WEFT_FILTER, weft_rt_filter_set (filter.c): whether an event built by
 * libovni (a mark, a jumbo event) is kept. The callback sees it as a
 * struct ovni_ev: its header and, for a jumbo, payload.jumbo.size only. */
static int raw_kept(uint8_t flags, const char mcv[3], uint64_t clock, const void *payload, size_t payload_size,
		    size_t extra_size)
{
	struct ovni_ev fe;
	memset(&fe, 0, sizeof fe);
	fe.header.flags = flags;
	fe.header.model = (uint8_t) mcv[0];
	fe.header.category = (uint8_t) mcv[1];
	fe.header.value = (uint8_t) mcv[2];
	fe.header.clock = clock;
	if (weft_ev_is_jumbo(flags))
		fe.payload.jumbo.size = (uint32_t) extra_size;
	else if (payload_size > 0 && payload_size <= sizeof fe.payload.u8)
		memcpy(fe.payload.u8, payload, payload_size);
	return rt_filter_keep(&fe);
}

/* An event of ovni_ev_emit that the filter dropped: counted, and the
 * buffer given back as the hot path gives it back (was: someone else had
 * it, then it is left alone; before0: events were pending before, for
 * their owner to store, see defer_to_owner). */
static void filter_drop(const char *func, uint32_t was, uint32_t before0, uint64_t clock)
{
	struct rt_thread *th = rt_thread_peek();
	if (th == NULL)
		th = rt_thread_get(func); /* dies, saying why */
	__atomic_fetch_add(&th->filtered, 1, __ATOMIC_RELAXED);
	if (was != 0)
		return;
	clog_consume(clock);
	RT_SIGNAL_FENCE;
	rt_hot.busy = 0;
	RT_SIGNAL_FENCE;
	if (before0 == 0 && pend_reserved() != 0)
		emit_drain();
}

/* The crash gate of an emit or a flush (rt_crash_gate_try): 0 when a crash
 * froze the buffers and this call may not stop there (on the crashing
 * thread, or in a handler that interrupted the thread's own gate code; see
 * rt_crash_hold): the caller gives the buffer back and drops what it had
 * (counted if lost). */
static inline int gate_or_give_back(struct rt_thread *th, int lost)
{
	if (RT_LIKELY(rt_crash_gate_try(th)))
		return 1;
	if (lost)
		lost_add(th);
	RT_SIGNAL_FENCE;
	rt_hot.busy = 0;
	RT_SIGNAL_FENCE;
	return 0;
}

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
	if (RT_UNLIKELY(rt_filter_tab[(uint8_t) mcv[0]] != 0) && !raw_kept(flags, mcv, clock, payload, payload_size, extra_size)) {
		__atomic_fetch_add(&th->filtered, 1, __ATOMIC_RELAXED);
		return;
	}
	size_t total = piece_size(&ev);
	if (th->ring == NULL && total > th->bufsize - RT_FLUSH_PAIR_SIZE)
		rt_die(func, "an event of %zu bytes does not fit in the %zu-byte event buffer of '%s'", total,
		       th->bufsize, th->obs_path);
	uint32_t before0 = pend_reserved();
	RT_SIGNAL_FENCE;
	if (acquire() != 0) {
		pend_push(func, &ev);
		return;
	}
	if (defer_to_owner(func, before0, &ev))
		return;
	if (!gate_or_give_back(th, 1))
		return;
	own_put(func, th, &ev);
	if (RT_UNLIKELY(clock >= rt_hot.sample_at))
		sample_put(func, th, clock);
	release(func, th);
	rt_crash_gate_leave(th);
}

/* The event did not fit, is older than the newest stored, the buffer was
 * taken (a signal handler) or events are pending, its model byte has a
 * filter (WEFT_FILTER, a callback), or the thread is not ready (dies). */
__attribute__((noinline, cold)) static void emit_slow(const struct ovni_ev *ev, size_t size, uint32_t was, uint32_t before0)
{
	static const char func[] = "ovni_ev_emit";
	if (RT_UNLIKELY(rt_filter_tab[ev->header.model] != 0) && !rt_filter_keep(ev)) {
		filter_drop(func, was, before0, ev->header.clock);
		return;
	}
	const uint8_t *bytes = (const uint8_t *) ev;
	struct piece pc = {bytes, bytes + WEFT_EV_HEADER_SIZE, size - WEFT_EV_HEADER_SIZE, NULL, 0};
	if (was != 0) {
		pend_push(func, &pc);
		return;
	}
	RT_KEEP_ERRNO;
	struct rt_thread *th = rt_thread_get(func);
	if (defer_to_owner(func, before0, &pc))
		return;
	if (!gate_or_give_back(th, 1))
		return;
	own_put(func, th, &pc);
	if (RT_UNLIKELY(ev->header.clock >= rt_hot.sample_at))
		sample_put(func, th, ev->header.clock);
	release(func, th);
	rt_crash_gate_leave(th);
}

/* Handlers left events while the hot path had the buffer. */
__attribute__((noinline, cold)) static void emit_drain(void)
{
	static const char func[] = "ovni_ev_emit";
	RT_KEEP_ERRNO;
	struct rt_thread *th = rt_thread_peek();
	if (th == NULL || acquire() != 0)
		return; /* cannot happen: handlers give the buffer back */
	if (!gate_or_give_back(th, 0))
		return;
	release(func, th);
	rt_crash_gate_leave(th);
}

/* The size of an event by its flags' size nibble (weft_ev_payload_size
 * plus the header): one load instead of a compare and a select. */
static const uint8_t ev_size_of[16] = {
	WEFT_EV_HEADER_SIZE,	  WEFT_EV_HEADER_SIZE + 2,  WEFT_EV_HEADER_SIZE + 3,  WEFT_EV_HEADER_SIZE + 4,
	WEFT_EV_HEADER_SIZE + 5,  WEFT_EV_HEADER_SIZE + 6,  WEFT_EV_HEADER_SIZE + 7,  WEFT_EV_HEADER_SIZE + 8,
	WEFT_EV_HEADER_SIZE + 9,  WEFT_EV_HEADER_SIZE + 10, WEFT_EV_HEADER_SIZE + 11, WEFT_EV_HEADER_SIZE + 12,
	WEFT_EV_HEADER_SIZE + 13, WEFT_EV_HEADER_SIZE + 14, WEFT_EV_HEADER_SIZE + 15, WEFT_EV_HEADER_SIZE + 16,
};

RT_HOT void ovni_ev_emit(struct ovni_ev *ev)
{
	size_t size = ev_size_of[ev->header.flags & WEFT_EV_SIZE_MASK];
	uint32_t before0 = pend_reserved();
	RT_SIGNAL_FENCE;
	uint32_t was = acquire();
	uint8_t *cur = rt_hot.cur;
	uint64_t clock = ev->header.clock;
	/* Each test a compare and a branch that is never taken (a fused
	 * pair): fewer instructions than or-ing the flags together. */
	if (RT_UNLIKELY((was | pend_reserved()) != 0))
		goto slow;
	if (RT_UNLIKELY((uintptr_t) rt_hot.end - (uintptr_t) cur < size))
		goto slow;
	if (RT_UNLIKELY(clock < rt_hot.last))
		goto slow;
	if (RT_UNLIKELY(clock >= flush_at_get()))
		goto slow;
	if (RT_UNLIKELY(clock >= rt_hot.sample_at))
		goto slow;
	if (RT_UNLIKELY(rt_filter_tab[ev->header.model] != 0))
		goto slow;
	/* The header field by field, as the caller stored it (ovni_ev_set_mcv
	 * stores bytes, ovni_ev_set_clock 8 bytes): a wider load across those
	 * stores would wait for them to reach the cache (a failed store
	 * forward, about 5 ns). The payload, if any, as one fixed-size copy
	 * (the buffer has sizeof(struct ovni_ev) bytes of slack past its
	 * end). */
	cur[WEFT_EV_OFF_FLAGS] = ev->header.flags;
	cur[WEFT_EV_OFF_MODEL] = ev->header.model;
	cur[WEFT_EV_OFF_CATEGORY] = ev->header.category;
	cur[WEFT_EV_OFF_VALUE] = ev->header.value;
	weft_store_u64(cur + WEFT_EV_OFF_CLOCK, clock);
	if (size > WEFT_EV_HEADER_SIZE)
		memcpy(cur + WEFT_EV_HEADER_SIZE, &ev->payload, sizeof ev->payload);
	rt_hot.cur = cur + size;
	rt_hot.last = clock;
	clog_consume(clock);
	RT_SIGNAL_FENCE;
	rt_hot.busy = 0;
	RT_SIGNAL_FENCE;
	if (RT_UNLIKELY(pend_reserved() != 0))
		emit_drain();
	return;
slow:
	emit_slow(ev, size, was, before0);
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
	if (!gate_or_give_back(th, 0))
		return;
	/* Interrupting an owner that gave the buffer back: store what is
	 * pending (all read before this flush) first. */
	if (pend_reserved() != 0)
		pend_drain(func, th, UINT64_MAX, 0, 0);
	if (th->ring != NULL) {
		/* Ring mode: a write only with WEFT_RING_FLUSH=on. */
		if (th->ring->flush)
			ring_flush(func, th);
		ring_poll(func, th);
		release(func, th);
		rt_crash_gate_leave(th);
		return;
	}
	uint64_t t0 = clock_raw();
	uint8_t *cur = rt_hot.cur;
	write_upto(func, th, cur);
	rt_hot.cur = th->buf;
	rt_hot.end = th->buf + th->bufsize;
	/* What was read after the last event stored (a handler's flush
	 * between the thread's clock read and its emit) goes before the
	 * pair; every other logged read is dead. */
	clog_moved(th, cur, cur, th->buf);
	flush_pair(func, th, t0);
	th->explicit_pair = 1;
	flush_at_set(flush_unarmed(th));
	release(func, th);
	rt_crash_gate_leave(th);
}

void rt_emit_sample_now(const char *func)
{
	RT_KEEP_ERRNO;
	struct rt_thread *th = rt_thread_get(func);
	if (th->ring != NULL)
		rt_die(func, "cannot sample a flight recorder (WEFT_RING): it drops its oldest events, so the "
			     "samples' counts would not add up");
	if (!th->sampling) {
		if (rt_hot.busy != 0)
			return; /* in a handler that interrupted the thread's emit */
		rt_sample_start(func, th);
		rt_meta_touch(func, th);
	}
	if (acquire() != 0)
		return; /* in a handler that interrupted the thread's emit */
	if (!gate_or_give_back(th, 0))
		return;
	if (pend_reserved() != 0)
		pend_drain(func, th, UINT64_MAX, 0, 0);
	/* The sample goes after the newest event stored, with its clock or
	 * now's, whichever is newer. */
	uint64_t c = clock_raw();
	if (c > rt_hot.last)
		rt_hot.last = c;
	sample_put(func, th, rt_hot.last);
	release(func, th);
	rt_crash_gate_leave(th);
}

void rt_emit_write_out(const char *func, struct rt_thread *th)
{
	if (acquire() != 0)
		return; /* not from a handler that interrupted the owner */
	rt_crash_gate_enter(th);
	if (pend_reserved() != 0)
		pend_drain(func, th, UINT64_MAX, 0, 0);
	uint8_t *cur = rt_hot.cur;
	if (cur != NULL && th->ring != NULL) {
		ring_write(func, th);
	} else if (cur != NULL) {
		/* As ovni_thread_free: the pair of a last ovni_flush that
		 * nothing followed is not written. */
		if (!(th->explicit_pair && cur == th->buf + RT_FLUSH_PAIR_SIZE))
			write_upto(func, th, cur);
		rt_hot.cur = th->buf;
		rt_hot.end = th->buf + th->bufsize;
		clog_moved(th, cur, cur, th->buf);
		th->explicit_pair = 0;
		flush_at_set(flush_unarmed(th));
	}
	release(func, th);
	rt_crash_gate_leave(th);
}

/* ---- thread start and end ---- */

void rt_emit_open(struct rt_thread *th)
{
	clog_kill();
	rt_hot.last = 0;
	rt_hot.busy = 0;
	__atomic_store_n(&rt_hot.pend, 0, __ATOMIC_RELAXED);
	th->pend_pos = 0;
	flush_at_set(flush_unarmed(th));
	rt_hot.sample_at = th->sample_ns != 0 ? clock_raw() + th->sample_ns : UINT64_MAX;
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
	if (th->ring != NULL)
		ring_write(func, th);
	else
		write_upto(func, th, rt_hot.cur);
	clog_kill();
	rt_hot.cur = NULL;
	rt_hot.end = NULL;
	rt_hot.sample_at = UINT64_MAX;
	/* The buffer stays taken: ovni_thread_free gives it back once the
	 * thread is finished. */
}

void rt_emit_forget(void)
{
	clog_kill();
	rt_hot.cur = NULL;
	rt_hot.end = NULL;
	rt_hot.last = 0;
	flush_at_set(UINT64_MAX);
	rt_hot.sample_at = UINT64_MAX;
	rt_hot.busy = 0;
	__atomic_store_n(&rt_hot.pend, 0, __ATOMIC_RELAXED);
}
