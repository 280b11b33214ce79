/* SPDX-License-Identifier: MIT */
/*
 * chunk.c - the producer's side of a stream: reads the next piece of the
 * file into a chunk and frames it, so that the merge finds whole events at
 * known offsets and checks nothing on its common path.
 *
 * Runs on the read-ahead thread (readahead.c) or, without one, on the
 * caller's thread when the merge needs the chunk. It touches only the
 * chunk, the stream's producer fields (prod.off, prod.last) and its file
 * (the caller sets prod.done from the chunk's final flag); an error is
 * written into the chunk and reported by the merge once it has yielded
 * every event before it.
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

/* The bytes a chunk's allocation has in front of its data, so that read()
 * can write each byte at the same offset within a cache line as it has in
 * the file (and in the page cache): a line-to-line copy is faster. */
#define LEAD 64u

static void chunk_fail(struct weft_wstream *s, struct weft_chunk *c, uint64_t off,
		const char *fmt, ...) WEFT_PRINTF(4, 5);

static void chunk_fail(struct weft_wstream *s, struct weft_chunk *c, uint64_t off,
		const char *fmt, ...)
{
	char why[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	snprintf(c->err, sizeof c->err, "%s: offset %" PRIu64 ": %s", s->obs_path, off, why);
	c->final = 1;
}

/* The first of the chunk's n framed events whose clock leaves the int64
 * range once the stream's clock offset is added (one exists: the caller
 * saw a clock outside [clk_lo, clk_hi]): the chunk ends before it, with an
 * error at its offset. */
__attribute__((cold, noinline))
static void clock_range_fail(struct weft_wstream *s, struct weft_chunk *c, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		const uint8_t *p = c->buf + (c->idx[k] & WEFT_IDX_OFF);
		if (c->idx[k] & WEFT_IDX_TAIL)
			break;
		int64_t clock = (int64_t) weft_load_u64(p + WEFT_EV_OFF_CLOCK);
		if (clock >= s->clk_lo && clock <= s->clk_hi)
			continue;
		c->nidx = k;
		chunk_fail(s, c, c->file_off + (c->idx[k] & WEFT_IDX_OFF), "clock %" PRId64
				" with the clock offset %" PRId64 " of its loom is outside the "
				"signed 64-bit range", clock, s->clkoff);
		return;
	}
}

/* Makes c hold cap bytes (and cap / 12 + 2 index entries: every event has
 * at least 12 bytes, plus a tail). Returns -1 when out of memory. */
static int reserve(struct weft_chunk *c, size_t cap)
{
	if (c->mem != NULL && c->cap == cap)
		return 0;
	free(c->mem);
	free(c->idx);
	free(c->spos);
	c->mem = NULL;
	c->idx = NULL;
	c->spos = NULL;
	c->nspos = c->spcap = 0;
	c->cap = 0;
	void *m = NULL;
	if (posix_memalign(&m, LEAD, LEAD + cap) != 0)
		return -1;
	size_t icap = cap / WEFT_EV_HEADER_SIZE + 2;
	c->idx = malloc(icap * sizeof *c->idx);
	if (c->idx == NULL) {
		free(m);
		return -1;
	}
	c->mem = m;
	c->cap = cap;
	c->idxcap = icap;
	return 0;
}

/* The end of the next normal event at p (flags without jumbo or reserved
 * bits): the size nibble 0 means no payload, n means n + 1 bytes. With a
 * conditional move, as payloads come and go without a pattern. */
static inline const uint8_t *next_normal(const uint8_t *p, uint32_t code)
{
#if defined(__x86_64__) && defined(__GNUC__)
	const uint8_t *next = p + WEFT_EV_HEADER_SIZE, *with = p + WEFT_EV_HEADER_SIZE + 1 + code;
	__asm__("test %k[c], %k[c]\n\tcmovne %[w], %[n]"
		: [n] "+r"(next)
		: [c] "r"(code), [w] "r"(with)
		: "cc");
	return next;
#else
	return p + WEFT_EV_HEADER_SIZE + (code ? code + 1 : 0);
#endif
}

/* Notes index position n as one the merge checks itself. Returns -1 when out of memory. */
static int note_special(struct weft_chunk *c, size_t n)
{
	if (c->nspos == c->spcap) {
		size_t ncap = c->spcap ? 2 * c->spcap : 16;
		if (ncap > c->idxcap)
			ncap = c->idxcap;
		uint32_t *np = realloc(c->spos, ncap * sizeof *np);
		if (np == NULL)
			return -1;
		c->spos = np;
		c->spcap = ncap;
	}
	c->spos[c->nspos++] = (uint32_t) n;
	return 0;
}

/* 1 for OU[ (an unordered region begins), -1 for OU] (it ends), else 0. */
static inline int region_marker(const uint8_t *p)
{
	if (p[WEFT_EV_OFF_MODEL] != 'O' || p[WEFT_EV_OFF_CATEGORY] != 'U')
		return 0;
	return p[WEFT_EV_OFF_VALUE] == '[' ? 1 : p[WEFT_EV_OFF_VALUE] == ']' ? -1 : 0;
}

/* Moves the region state of s on to file offset to (an event boundary past
 * reg_off, before the chunk being filled) by reading the event headers
 * between them again. Only when a backwards clock needs the state and no
 * OU[ or OU] lies between reg_off and it in its chunk: each byte of a file
 * is read again at most once so. The bytes were framed already; a read that
 * comes short (the file changed) leaves the state as far as it got. */
static void region_rescan(struct weft_wstream *s, uint64_t to)
{
	enum { RESCAN_BUF = 64 << 10 };
	uint8_t *buf = malloc(RESCAN_BUF);
	uint64_t o = s->prod.reg_off, wbeg = 0;
	size_t wlen = 0;
	int in = s->prod.reg_in;
	while (buf != NULL && o < to) {
		uint64_t need = 0;
		int known = o >= wbeg && o < wbeg + wlen
			&& weft_event_size(buf + (o - wbeg), (size_t) (wbeg + wlen - o), &need);
		if (!known) {
			if (wbeg == o && wlen > 0)
				break; /* not even a header from here */
			size_t want = to - o < RESCAN_BUF ? (size_t) (to - o) : RESCAN_BUF;
			ssize_t r;
			do
				r = pread(s->fd, buf, want, (off_t) o);
			while (r < 0 && errno == EINTR);
			if (r <= 0)
				break;
			wbeg = o;
			wlen = (size_t) r;
			continue;
		}
		int m = region_marker(buf + (o - wbeg));
		if (m != 0)
			in = m > 0;
		o += need;
	}
	free(buf);
	s->prod.reg_off = to;
	s->prod.reg_in = in;
}

/* Whether the event at index n of chunk c (file offset at), whose clock goes
 * backwards, is inside an unordered region of its stream: after an OU[ that
 * no OU] has closed yet, and not the OU] that closes it (that one is the
 * region's end: a clock going back there is outside). The nearest OU[ or
 * OU] before it tells: looked for back in the chunk down to reg_off, where
 * the state is known (carried there from the chunk's start if need be). */
static int in_region(struct weft_wstream *s, const struct weft_chunk *c, size_t n, uint64_t at)
{
	int in = -1;
	for (size_t k = n; k-- > 0;) {
		uint32_t o = c->idx[k] & WEFT_IDX_OFF;
		if (c->file_off + o < s->prod.reg_off)
			break;
		int m = region_marker(c->buf + o);
		if (m != 0) {
			in = m > 0;
			break;
		}
	}
	if (in < 0) {
		if (s->prod.reg_off < c->file_off)
			region_rescan(s, c->file_off);
		in = s->prod.reg_in;
	}
	s->prod.reg_off = at; /* the state before the event at `at` */
	s->prod.reg_in = in;
	return in && region_marker(c->buf + (at - c->file_off)) >= 0;
}

static void fill(struct weft_wstream *s, struct weft_chunk *c, const uint8_t *allowed);

/* With fd_lean, the file is opened for the fill (and must still be the one
 * weft_open checked) and closed after it. */
void weft_chunk_fill(struct weft_wstream *s, struct weft_chunk *c, const uint8_t *allowed)
{
	c->nmoved = 0;
	if (!s->fd_lean) {
		fill(s, c, allowed);
		return;
	}
	s->fd = open(s->obs_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	if (s->fd >= 0 && fstat(s->fd, &st) == 0 && (uint64_t) st.st_dev == s->dev
			&& (uint64_t) st.st_ino == s->ino) {
		fill(s, c, allowed);
	} else {
		c->nidx = c->nspos = c->len = 0;
		c->buf = NULL;
		if (s->fd < 0)
			chunk_fail(s, c, s->prod.off, "cannot open the binary stream again: %s",
					strerror(errno));
		else
			chunk_fail(s, c, s->prod.off, "the file was replaced while reading");
	}
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

static void fill(struct weft_wstream *s, struct weft_chunk *c, const uint8_t *allowed)
{
	c->nidx = 0;
	c->nspos = 0;
	c->len = 0;
	c->final = 0;
	c->err[0] = '\0';
	c->nmoved = 0;
	uint64_t off = s->prod.off;
	size_t cap = s->chunk_cap;
	for (;;) {
		if (reserve(c, cap) < 0) {
			c->buf = NULL;
			c->file_off = off;
			chunk_fail(s, c, off, "out of memory for a %zu-byte read chunk", cap);
			return;
		}
		c->file_off = off;
		c->buf = c->mem + (size_t) (off % LEAD);
		uint64_t left = s->fsize - off;
		if (left == 0) {
			c->final = 1;
			return;
		}
		size_t want = left < cap ? (size_t) left : cap;
		uint8_t *dst = c->mem + (size_t) (off % LEAD);
		size_t got = 0;
		if (__builtin_expect(s->sorter != NULL, 0)) {
			/* The sorted stream's bytes: whole events (a file that
			 * ends inside an event: those bytes last, on their own).
			 * The region state at the chunk's start is the sorter's. */
			s->prod.reg_off = off;
			s->prod.reg_in = weft_sorter_out_in_region(s->sorter);
			uint64_t moved = weft_sorter_nmoved(s->sorter), need = 0;
			long r = weft_sorter_read(s->sorter, s->fd, dst, want, &need);
			c->nmoved += weft_sorter_nmoved(s->sorter) - moved;
			if (r < 0) {
				uint64_t at;
				const char *why = weft_sorter_error(s->sorter, &at);
				chunk_fail(s, c, at, "%s", why);
				return;
			}
			if (r == 0 && need > cap) {
				cap = (size_t) need; /* a jumbo event larger than a chunk */
				goto again;
			}
			if (r == 0) {
				chunk_fail(s, c, off, "internal error: the sorted stream ends early");
				return;
			}
			want = got = (size_t) r;
		}
		while (got < want) {
			ssize_t r = pread(s->fd, dst + got, want - got, (off_t) (off + got));
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0) {
				chunk_fail(s, c, off + got, "read failed: %s", strerror(errno));
				return;
			}
			if (r == 0) {
				chunk_fail(s, c, off + got, "the file became shorter while reading");
				return;
			}
			got += (size_t) r;
		}
		c->len = want;

		/* Framing. The fast loop takes events while a whole normal event
		 * surely fits; anything else goes one event at a time below. */
		const uint8_t *b = c->buf, *p = b, *e = b + want;
		uint32_t *idx = c->idx;
		size_t n = 0;
		int64_t last = s->prod.last;
		uint32_t okmodel = 0x10000; /* the last model byte found allowed, << 8 */
		for (;;) {
			/* Two events a step when the first has no payload (most
			 * have none): the second's header is loaded at once with
			 * the first's, so that the chain of sizes, one load after
			 * another, is half as long. The last bytes of the chunk
			 * (less than two whole events) go one at a time below. */
			while ((size_t) (e - p) >= 2 * WEFT_EV_MAX_NORMAL_SIZE) {
				uint32_t head = weft_load_u32(p); /* flags, model, category, value */
				int64_t clock = (int64_t) weft_load_u64(p + WEFT_EV_OFF_CLOCK);
				if (__builtin_expect((head & 0xfff0u) != okmodel, 0)) {
					if ((head & 0xf0u) || !allowed[(head >> 8) & 0xffu])
						goto one; /* jumbo, reserved bits or model */
					okmodel = head & 0xff00u;
				}
				if (__builtin_expect(clock < last, 0))
					goto one;
				uint32_t o = (uint32_t) (p - b);
				idx[n] = o;
				last = clock;
				uint32_t code = head & WEFT_EV_SIZE_MASK;
				if (code != 0) {
					n++;
					p += WEFT_EV_HEADER_SIZE + 1 + code;
					continue;
				}
				uint32_t head2 = weft_load_u32(p + WEFT_EV_HEADER_SIZE);
				int64_t clock2 = (int64_t) weft_load_u64(p + WEFT_EV_HEADER_SIZE
						+ WEFT_EV_OFF_CLOCK);
				if (__builtin_expect((head2 & 0xfff0u) != okmodel || clock2 < last, 0)) {
					n++;
					p += WEFT_EV_HEADER_SIZE; /* the loop's first test takes it */
					continue;
				}
				idx[n + 1] = o + WEFT_EV_HEADER_SIZE;
				n += 2;
				last = clock2;
				p = next_normal(p + WEFT_EV_HEADER_SIZE, head2 & WEFT_EV_SIZE_MASK);
			}
one:
			if (p == e)
				break;
			/* One event, in general. */
			size_t avail = (size_t) (e - p);
			uint64_t need;
			int known = weft_event_size(p, avail, &need);
			if (known && need <= avail) {
				uint32_t head = weft_load_u32(p);
				int64_t clock = (int64_t) weft_load_u64(p + WEFT_EV_OFF_CLOCK);
				int back = clock < last;
				int special = (head & 0xf0u) || !allowed[(head >> 8) & 0xffu] || back;
				if (special && note_special(c, n) < 0) {
					c->nidx = n;
					chunk_fail(s, c, c->file_off + (uint64_t) (p - b),
							"out of memory for the chunk's index");
					return;
				}
				if (__builtin_expect(back, 0) && (last > s->clk_hi || clock < s->clk_lo)) {
					/* a local extreme: it or one before leaves the range */
					idx[n++] = (uint32_t) (p - b);
					clock_range_fail(s, c, n);
					return;
				}
				uint32_t flag = 0;
				if (back && !s->prod.unord) {
					/* An error: the merge reports it there; nothing
					 * after it is read. */
					idx[n++] = (uint32_t) (p - b);
					c->final = 1;
					c->nidx = n;
					return;
				}
				if (back && in_region(s, c, n, c->file_off + (uint64_t) (p - b)))
					flag = WEFT_IDX_UNORD;
				idx[n++] = (uint32_t) (p - b) | flag;
				last = clock;
				p += need;
				continue;
			}
			/* Not whole here. Unless it is the chunk's first, the next
			 * chunk starts with it. */
			if (p > b)
				break;
			uint64_t fleft = s->fsize - (c->file_off + (uint64_t) (p - b));
			if (known && need <= fleft && need > cap) {
				/* A jumbo event larger than a chunk, whole in the file:
				 * a chunk of its size (the file has those bytes). */
				cap = (size_t) need;
				goto again;
			}
			/* The file ends inside it: the merge explains it. */
			if (note_special(c, n) < 0) {
				chunk_fail(s, c, c->file_off, "out of memory for the chunk's index");
				return;
			}
			idx[n++] = (uint32_t) (p - b) | WEFT_IDX_TAIL;
			c->final = 1;
			c->nidx = n;
			return;
		}
		c->nidx = n;
		if (__builtin_expect(last > s->clk_hi, 0)) {
			/* clocks only rise between backwards ones: the last is
			 * the largest since the last of those */
			clock_range_fail(s, c, n);
			return;
		}
		s->prod.last = last;
		s->prod.off = c->file_off + (uint64_t) (p - b);
		if (s->prod.off == s->fsize)
			c->final = 1;
		return;
again:
		continue;
	}
}
