/* SPDX-License-Identifier: MIT */
/*
 * emit.c - events: building them (ovni_ev_*, ovni_payload_*), the emit
 * hot path, jumbo events, and flushing the per-thread buffer.
 *
 * Hot path (ovni_ev_emit): one thread-local cursor/limit pair, the size
 * from the nibble, one test ("fits?", which also fails when the thread is
 * not ready because both pointers are then NULL), a fixed-size copy and a
 * pointer bump. No locks, no system calls, nothing shared.
 *
 * Flushing, as the reference does it:
 *   automatic (an event does not fit): t0 = clock, write the buffer,
 *     t1 = clock, then store the event, OF[ at t0 and OF] at t1;
 *   ovni_flush(): t0, write, t1, then the emptied buffer receives OF[ at
 *     t0 and OF] at t1 (written by the next flush, or by ovni_thread_free
 *     when events follow them; the pair of a last ovni_flush that nothing
 *     follows is dropped, as the reference loses it).
 *
 * errno: the hot path does not touch it; everything that can reach a
 * write(2) keeps it (RT_KEEP_ERRNO).
 */
#include <time.h>

#include "obs_format.h"
#include "rt_internal.h"

_Thread_local struct rt_hot rt_hot __attribute__((tls_model("initial-exec")));

static const char mcv_flush_begin[3] = {'O', 'F', '['};
static const char mcv_flush_end[3] = {'O', 'F', ']'};

uint64_t ovni_clock_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
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

void rt_buffer_write(const char *func, struct rt_thread *th)
{
	size_t len = (size_t) (rt_hot.cur - th->buf);
	if (len > 0)
		rt_write_all(func, th->fd, th->buf, len, th->obs_path);
	rt_hot.cur = th->buf;
}

/* Stores one event at the cursor; the caller made sure it fits. */
static inline void store_event(uint8_t flags, const char mcv[3], uint64_t clock, const void *payload,
			       size_t payload_size, const void *extra, size_t extra_size)
{
	uint8_t *p = rt_hot.cur;
	p[WEFT_EV_OFF_FLAGS] = flags;
	p[WEFT_EV_OFF_MODEL] = (uint8_t) mcv[0];
	p[WEFT_EV_OFF_CATEGORY] = (uint8_t) mcv[1];
	p[WEFT_EV_OFF_VALUE] = (uint8_t) mcv[2];
	weft_store_u64(p + WEFT_EV_OFF_CLOCK, clock);
	p += WEFT_EV_OFF_PAYLOAD;
	if (payload_size > 0)
		memcpy(p, payload, payload_size);
	p += payload_size;
	if (extra_size > 0)
		memcpy(p, extra, extra_size);
	rt_hot.cur = p + extra_size;
}

static void store_flush_pair(uint64_t t0, uint64_t t1)
{
	store_event(0, mcv_flush_begin, t0, NULL, 0, NULL, 0);
	store_event(0, mcv_flush_end, t1, NULL, 0, NULL, 0);
}

/* Writes the buffer and returns the clocks around the write. */
static void timed_write(const char *func, struct rt_thread *th, uint64_t *t0, uint64_t *t1)
{
	*t0 = ovni_clock_now();
	rt_buffer_write(func, th);
	*t1 = ovni_clock_now();
}

void rt_emit_raw(const char *func, uint8_t flags, const char mcv[3], uint64_t clock, const void *payload,
		 size_t payload_size, const void *extra, size_t extra_size)
{
	struct rt_thread *th = rt_thread_get(func);
	size_t total = WEFT_EV_HEADER_SIZE + payload_size + extra_size;
	if (total > th->bufsize - RT_FLUSH_PAIR_SIZE)
		rt_die(func, "an event of %zu bytes does not fit in the %zu-byte event buffer of '%s'", total,
		       th->bufsize, th->obs_path);
	if ((size_t) (rt_hot.end - rt_hot.cur) >= total) {
		store_event(flags, mcv, clock, payload, payload_size, extra, extra_size);
		return;
	}
	/* Only the write can touch errno (marks and jumbo events come here). */
	RT_KEEP_ERRNO;
	uint64_t t0, t1;
	timed_write(func, th, &t0, &t1);
	th->explicit_pair = 0;
	store_event(flags, mcv, clock, payload, payload_size, extra, extra_size);
	store_flush_pair(t0, t1);
}

/* The event did not fit, or the thread is not ready (dies). */
__attribute__((noinline, cold)) static void emit_slow(const struct ovni_ev *ev, size_t size)
{
	static const char func[] = "ovni_ev_emit";
	RT_KEEP_ERRNO;
	struct rt_thread *th = rt_thread_get(func);
	uint64_t t0, t1;
	timed_write(func, th, &t0, &t1);
	th->explicit_pair = 0;
	memcpy(rt_hot.cur, ev, size);
	rt_hot.cur += size;
	store_flush_pair(t0, t1);
}

void ovni_ev_emit(struct ovni_ev *ev)
{
	size_t size = WEFT_EV_HEADER_SIZE + weft_ev_payload_size(ev->header.flags);
	uint8_t *cur = rt_hot.cur;
	if (RT_UNLIKELY((uintptr_t) rt_hot.end - (uintptr_t) cur < size)) {
		emit_slow(ev, size);
		return;
	}
	/* The buffer has sizeof(struct ovni_ev) bytes of slack past its end:
	 * a fixed-size copy is cheaper than a variable one. */
	memcpy(cur, ev, sizeof *ev);
	rt_hot.cur = cur + size;
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
	struct rt_thread *th = rt_thread_get(func);
	uint64_t t0, t1;
	timed_write(func, th, &t0, &t1);
	store_flush_pair(t0, t1);
	th->explicit_pair = 1;
}
