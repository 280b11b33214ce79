/* SPDX-License-Identifier: MIT */
/*
 * stream.c - one binary stream read through a bounded window.
 *
 * The file is read with read() into a per-stream buffer of `window` bytes;
 * decoding is a pointer bump. Only a jumbo event larger than the window makes
 * the buffer grow, and only after its size was checked against the bytes the
 * file really has; the buffer shrinks back at the next refill.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trace_internal.h"

/* Bytes kept in front of the window, so that the bytes read() brings can
 * land at the same offset within a cache line as they have in the file (and
 * in the page cache): the kernel's copy is then line to line, faster than
 * with source and destination at different line offsets (about 10% of the
 * whole read benchmark on the project's Zen 4 VM). */
#define PAD 64u

static uint8_t *alloc_window(size_t bytes)
{
	void *p = NULL;
	if (posix_memalign(&p, PAD, PAD + bytes) != 0)
		return NULL;
	return p;
}

int weft_check_header(const uint8_t *p, size_t len, char *why, size_t whylen)
{
	if (len == 0) {
		snprintf(why, whylen, "the file is empty (no stream header)");
		return -1;
	}
	if (len < WEFT_OBS_HEADER_SIZE) {
		snprintf(why, whylen, "truncated stream header: %zu of %u bytes", len,
				WEFT_OBS_HEADER_SIZE);
		return -1;
	}
	if (memcmp(p, WEFT_OBS_MAGIC, WEFT_OBS_MAGIC_LEN) != 0) {
		char shown[4 * WEFT_OBS_MAGIC_LEN + 1];
		size_t k = 0;
		for (size_t i = 0; i < WEFT_OBS_MAGIC_LEN; i++) {
			if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\' && p[i] != '\'')
				shown[k++] = (char) p[i];
			else
				k += (size_t) snprintf(shown + k, sizeof shown - k, "\\x%02x", p[i]);
		}
		shown[k] = '\0';
		snprintf(why, whylen, "bad magic '%s' (expected '%s')", shown, WEFT_OBS_MAGIC);
		return -1;
	}
	uint32_t ver = weft_load_u32(p + WEFT_OBS_MAGIC_LEN);
	if (ver != WEFT_OBS_VERSION) {
		snprintf(why, whylen, "unknown stream version %" PRIu32 " (expected %u)", ver,
				WEFT_OBS_VERSION);
		return -1;
	}
	return 0;
}

/* Why the event at p (avail bytes left in the file) cannot be complete. */
static void why_incomplete(const uint8_t *p, uint64_t avail, uint64_t need, char *why,
		size_t whylen)
{
	char mcv[16];
	if (avail >= WEFT_EV_HEADER_SIZE)
		weft_mcv_show(p + WEFT_EV_OFF_MODEL, mcv);
	if (avail < WEFT_EV_HEADER_SIZE) {
		snprintf(why, whylen, "event header cut short: %" PRIu64 " of %u bytes before "
				"the end of the file", avail, WEFT_EV_HEADER_SIZE);
	} else if (weft_ev_is_jumbo(p[WEFT_EV_OFF_FLAGS])) {
		if (avail < WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD)
			snprintf(why, whylen, "jumbo event %s: size field cut short by the end "
					"of the file", mcv);
		else
			snprintf(why, whylen, "jumbo event %s: size %" PRIu32 " runs past the "
					"end of the file (%" PRIu64 " bytes left after the size field)",
					mcv, weft_load_u32(p + WEFT_EV_OFF_PAYLOAD),
					avail - WEFT_EV_HEADER_SIZE - WEFT_EV_JUMBO_SIZE_FIELD);
	} else {
		snprintf(why, whylen, "event %s: payload of %" PRIu64 " bytes runs past the end "
				"of the file (%" PRIu64 " bytes left)", mcv,
				need - WEFT_EV_HEADER_SIZE, avail - WEFT_EV_HEADER_SIZE);
	}
}

long weft_decode_buffer(const uint8_t *p, size_t len,
		void (*cb)(void *ctx, const struct weft_event *ev), void *ctx,
		char *why, size_t whylen)
{
	char hwhy[256];
	if (weft_check_header(p, len, hwhy, sizeof hwhy) < 0) {
		snprintf(why, whylen, "offset 0: %s", hwhy);
		return -1;
	}
	size_t off = WEFT_OBS_HEADER_SIZE;
	long n = 0;
	int64_t last = INT64_MIN;
	while (off < len) {
		uint64_t need;
		size_t avail = len - off;
		if (!weft_event_size(p + off, avail, &need) || need > avail) {
			char w[256];
			why_incomplete(p + off, avail, need, w, sizeof w);
			snprintf(why, whylen, "offset %zu: %s", off, w);
			return -1;
		}
		struct weft_event ev;
		weft_event_fill(p + off, need, &ev);
		if (ev.rclock < last) {
			snprintf(why, whylen, "offset %zu: clock goes backwards from %" PRId64
					" to %" PRId64, off, last, ev.rclock);
			return -1;
		}
		last = ev.rclock;
		ev.offset = off;
		ev.sclock = ev.rclock;
		ev.stream = NULL;
		if (cb)
			cb(ctx, &ev);
		off += (size_t) need;
		n++;
	}
	return n;
}

static int stream_err(struct weft_trace *t, struct weft_wstream *s, uint64_t off,
		const char *why)
{
	return weft_fail(&t->diag, "%s: offset %" PRIu64 ": %s", s->obs_path, off, why);
}

/* Reads exactly n bytes at the current file position into dst. */
static int read_full(struct weft_trace *t, struct weft_wstream *s, uint8_t *dst, size_t n,
		uint64_t off)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(s->fd, dst + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			char why[256];
			snprintf(why, sizeof why, "read failed: %s", strerror(errno));
			return stream_err(t, s, off + got, why);
		}
		if (r == 0)
			return stream_err(t, s, off + got, "the file became shorter while reading");
		got += (size_t) r;
	}
	return 0;
}

int weft_stream_open(struct weft_trace *t, struct weft_wstream *s)
{
	s->fd = open(s->obs_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (s->fd < 0)
		return weft_fail(&t->diag, "%s: cannot open the binary stream: %s", s->obs_path,
				strerror(errno));
	struct stat st;
	if (fstat(s->fd, &st) != 0)
		return weft_fail(&t->diag, "%s: cannot stat: %s", s->obs_path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return weft_fail(&t->diag, "%s: not a regular file", s->obs_path);
	s->fsize = (uint64_t) st.st_size;
	s->pub.obs_size = s->fsize;
	uint8_t hdr[WEFT_OBS_HEADER_SIZE];
	size_t hlen = s->fsize < WEFT_OBS_HEADER_SIZE ? (size_t) s->fsize : WEFT_OBS_HEADER_SIZE;
	if (read_full(t, s, hdr, hlen, 0) < 0)
		return -1;
	char why[256];
	if (weft_check_header(hdr, hlen, why, sizeof why) < 0)
		return stream_err(t, s, 0, why);
	/* The clock of the first event header, for weft_stream_first_sclock(),
	 * read without moving the file position (the event itself is checked
	 * when the iteration reaches it). */
	s->has_peek = 0;
	if (s->fsize >= WEFT_OBS_HEADER_SIZE + WEFT_EV_HEADER_SIZE) {
		uint8_t ev[WEFT_EV_HEADER_SIZE];
		ssize_t r;
		do
			r = pread(s->fd, ev, sizeof ev, WEFT_OBS_HEADER_SIZE);
		while (r < 0 && errno == EINTR);
		if (r == (ssize_t) sizeof ev) {
			s->peek_clock = (int64_t) weft_load_u64(ev + WEFT_EV_OFF_CLOCK);
			s->has_peek = 1;
		}
	}
	s->cap = s->window;
	s->buf = alloc_window(s->cap);
	if (s->buf == NULL)
		return weft_fail(&t->diag, "%s: out of memory for the read window", s->obs_path);
	s->p = s->e = s->buf + PAD;
	s->buf_off = hlen - PAD;
	s->last_clock = INT64_MIN;
	s->first_clock = INT64_MIN;
	return 0;
}

void weft_stream_close(struct weft_wstream *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	free(s->buf);
	s->buf = NULL;
	s->p = s->e = NULL;
}

/* Makes at least need bytes (need <= file bytes left) available at s->p. */
/* Makes at least need bytes (need <= file bytes left) available at s->p. */
static int refill(struct weft_trace *t, struct weft_wstream *s, uint64_t need)
{
	size_t have = (size_t) (s->e - s->p);
	uint64_t pos = s->buf_off + (uint64_t) (s->p - s->buf); /* file offset of s->p */
	uint64_t left = s->fsize - pos;                            /* >= need >= have */
	if (need <= s->window) {
		/* The usual case: the tail moves to buf + start, then new bytes
		 * are read after it; start has the file offset's position within a
		 * cache line (buf is line-aligned), so that the destination of
		 * read() is congruent with its source in the page cache. */
		size_t start = (size_t) (pos % PAD);
		if (s->cap != s->window) { /* shrink back after a jumbo */
			uint8_t *nb = alloc_window(s->window);
			if (nb == NULL)
				return weft_fail(&t->diag, "%s: out of memory for the read window",
						s->obs_path);
			memcpy(nb + start, s->p, have);
			free(s->buf);
			s->buf = nb;
			s->cap = s->window;
		} else if (have) {
			memmove(s->buf + start, s->p, have);
		}
		uint64_t more = left - have;
		size_t space = PAD + s->window - start - have;
		if (more > space)
			more = space;
		s->p = s->buf + start;
		s->e = s->p + have;
		s->buf_off = pos - start; /* the file offset of buf[0], modulo 2^64 */
		if (read_full(t, s, s->buf + start + have, (size_t) more, pos + have) < 0)
			return -1;
		s->e = s->buf + start + have + more;
		return 0;
	}
	/* A jumbo event larger than the window: a buffer of exactly its size (the
	 * caller checked need against the bytes the file has). */
	size_t ncap = (size_t) need;
	uint8_t *nb = alloc_window(ncap);
	if (nb == NULL)
		return weft_fail(&t->diag, "%s: out of memory for a %zu-byte event", s->obs_path,
				ncap);
	size_t start = (size_t) (pos % PAD); /* as above */
	memcpy(nb + start, s->p, have);
	free(s->buf);
	s->buf = nb;
	s->cap = ncap;
	s->p = s->buf + start;
	s->e = s->p + have;
	s->buf_off = pos - start;
	if (read_full(t, s, s->buf + start + have, ncap - have, pos + have) < 0)
		return -1;
	s->e = s->buf + start + ncap;
	return 0;
}

int weft_stream_step_slow(struct weft_trace *t, struct weft_wstream *s)
{
	for (;;) {
		const uint8_t *p = s->p;
		size_t avail = (size_t) (s->e - p);
		uint64_t pos = s->buf_off + (uint64_t) (p - s->buf);
		uint64_t left = s->fsize - pos;
		if (left == 0)
			return 0;
		uint64_t need;
		int known = weft_event_size(p, avail, &need);
		if (need > left) {
			/* Cannot be complete: explain with the bytes the file has. */
			if (avail < left && avail < need) {
				uint64_t want = need < left ? need : left;
				if (want > WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD)
					want = WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD;
				if (want > left)
					want = left;
				if (avail < want) {
					if (refill(t, s, want) < 0)
						return -1;
					continue;
				}
			}
			char why[256];
			why_incomplete(s->p, left, need, why, sizeof why);
			return stream_err(t, s, pos, why);
		}
		if (!known || need > avail) {
			if (refill(t, s, need) < 0)
				return -1;
			continue;
		}
		int64_t clock = (int64_t) weft_load_u64(p + WEFT_EV_OFF_CLOCK);
		if (clock < s->last_clock) {
			char why[256];
			char mcv[16];
			snprintf(why, sizeof why, "event %s: clock goes backwards from %" PRId64
					" to %" PRId64 " within the stream",
					weft_mcv_show(p + WEFT_EV_OFF_MODEL, mcv),
					s->last_clock, clock);
			return stream_err(t, s, pos, why);
		}
		s->evp = p;
		s->evsize = need;
		s->last_clock = clock;
		s->key = (int64_t) ((uint64_t) clock + (uint64_t) s->keyoff);
		s->p = p + need;
		return 1;
	}
}
