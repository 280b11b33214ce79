/* SPDX-License-Identifier: MIT */
/*
 * stream.c - one binary stream on the merge's side: the header check at
 * open, and the cursor that walks the chunks the producer (chunk.c) framed,
 * decoding the events it listed as needing a look with every check.
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

void weft_why_incomplete(const uint8_t *p, uint64_t avail, uint64_t need, char *why,
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
			weft_why_incomplete(p + off, avail, need, w, sizeof w);
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

int weft_stream_cut_at(struct weft_trace *t, struct weft_wstream *s, uint64_t pos,
		int header, const char *why)
{
	if (!s->cut) {
		s->cut = 1;
		s->cut_header = header;
		s->cut_off = pos;
		snprintf(s->cut_why, sizeof s->cut_why, "%s", why);
		t->ncut++;
	}
	if (t->cut == WEFT_CUT_ERROR)
		return stream_err(t, s, pos, why);
	if (t->cut == WEFT_CUT_WARN) {
		if (header)
			weft_warnf(&t->diag, "%s: offset %" PRIu64 ": stream cut: a partial stream "
					"header of %" PRIu64 " bytes (%s); the stream has no events",
					s->obs_path, pos, s->fsize - pos, why);
		else
			weft_warnf(&t->diag, "%s: offset %" PRIu64 ": stream cut: a partial event "
					"of %" PRIu64 " bytes at the end of the file (%s); read up to "
					"its last whole event", s->obs_path, pos, s->fsize - pos, why);
	}
	return 0;
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
	s->dev = (uint64_t) st.st_dev;
	s->ino = (uint64_t) st.st_ino;
	s->pub.obs_size = s->fsize;
	s->mtime_sec = (int64_t) st.st_mtim.tv_sec;
	s->mtime_nsec = (int64_t) st.st_mtim.tv_nsec;
	uint8_t hdr[WEFT_OBS_HEADER_SIZE];
	size_t hlen = s->fsize < WEFT_OBS_HEADER_SIZE ? (size_t) s->fsize : WEFT_OBS_HEADER_SIZE;
	if (read_full(t, s, hdr, hlen, 0) < 0)
		return -1;
	char why[256];
	if (weft_check_header(hdr, hlen, why, sizeof why) < 0) {
		/* A header cut short: what the file has of it must be the start
		 * of a header (else it is not a cut but another file). */
		size_t m = hlen < WEFT_OBS_MAGIC_LEN ? hlen : WEFT_OBS_MAGIC_LEN;
		uint32_t ver = WEFT_OBS_VERSION; /* host endian, as the file */
		if (hlen >= WEFT_OBS_HEADER_SIZE || memcmp(hdr, WEFT_OBS_MAGIC, m) != 0
				|| (hlen > WEFT_OBS_MAGIC_LEN && memcmp(hdr + WEFT_OBS_MAGIC_LEN,
						&ver, hlen - WEFT_OBS_MAGIC_LEN) != 0))
			return stream_err(t, s, 0, why);
		if (weft_stream_cut_at(t, s, 0, 1, why) < 0)
			return -1;
	}
	/* The clock of the first event header, for weft_stream_first_sclock(),
	 * read without moving the file position (the event itself is checked
	 * when the iteration reaches it; a stream read up to its last whole
	 * event has none when its first event is cut). */
	s->has_peek = 0;
	if (s->fsize >= WEFT_OBS_HEADER_SIZE + WEFT_EV_HEADER_SIZE) {
		uint8_t ev[WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD];
		uint64_t body = s->fsize - WEFT_OBS_HEADER_SIZE;
		size_t want = body < sizeof ev ? (size_t) body : sizeof ev;
		ssize_t r;
		do
			r = pread(s->fd, ev, want, WEFT_OBS_HEADER_SIZE);
		while (r < 0 && errno == EINTR);
		if (r == (ssize_t) want) {
			uint64_t need;
			int whole = weft_event_size(ev, want, &need) && need <= body;
			s->peek_clock = (int64_t) weft_load_u64(ev + WEFT_EV_OFF_CLOCK);
			s->has_peek = whole || t->cut == WEFT_CUT_ERROR;
		}
	}
	s->prod.off = hlen;
	s->prod.last = INT64_MIN;
	s->prod.reg_off = hlen;
	s->prod.reg_in = 0;
	s->prod.done = 0;
	/* lower bounds for the backwards checks, not sentinels (has_first) */
	s->last_clock = INT64_MIN;
	s->first_clock = 0;
	s->has_first = 0;
	s->ci = s->cn = 0;
	s->have_chunk = 0;
	if (s->fd_lean) { /* opened again for each fill (chunk.c) */
		close(s->fd);
		s->fd = -1;
	}
	return 0;
}

int weft_stream_alloc_ring(struct weft_trace *t, struct weft_wstream *s, unsigned nring)
{
	s->ring = calloc(nring, sizeof *s->ring);
	if (s->ring == NULL)
		return weft_fail(&t->diag, "%s: out of memory", s->obs_path);
	s->nring = nring;
	s->ah = s->ph = 0;
	return 0;
}

void weft_stream_close(struct weft_wstream *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	for (unsigned i = 0; i < s->nring; i++) {
		free(s->ring[i].mem);
		free(s->ring[i].idx);
		free(s->ring[i].spos);
	}
	free(s->ring);
	s->ring = NULL;
	s->nring = 0;
	weft_sorter_free(s->sorter);
	s->sorter = NULL;
	s->ci = s->cn = 0;
}

int weft_stream_next_chunk(struct weft_trace *t, struct weft_wstream *s)
{
	struct weft_chunk *c = &s->ring[s->ah];
	if (s->have_chunk) {
		if (c->final) {
			s->ci = s->cn; /* stays at the end */
			if (c->err[0])
				return weft_fail(&t->diag, "%s", c->err);
			return 0;
		}
		if (t->ra != NULL)
			weft_readahead_release(t, s, c);
		else
			c->ready = 0;
		s->have_chunk = 0;
		s->ah = (s->ah + 1) % s->nring;
		c = &s->ring[s->ah];
	}
	if (t->ra != NULL) {
		weft_readahead_wait(t, s, c);
	} else {
		weft_chunk_fill(s, c, t->allowed);
		s->prod.done = c->final;
		c->ready = 1;
	}
	s->have_chunk = 1;
	t->sort.nsorted += c->nmoved;
	s->base = c->buf;
	s->idx = c->idx;
	s->ci = 0;
	s->cn = c->nidx;
	s->spos = c->spos;
	s->nspos = c->nspos;
	s->si = 0;
	s->stop = c->nspos ? c->spos[0] : c->nidx;
	s->cbase = c->file_off - (uint64_t) (uintptr_t) c->buf;
	if (c->nidx == 0) {
		/* only at the end of the file, or at an error */
		if (c->err[0])
			return weft_fail(&t->diag, "%s", c->err);
		return 0;
	}
	return 1;
}

int weft_stream_special(struct weft_trace *t, struct weft_wstream *s, uint32_t x)
{
	const struct weft_chunk *c = &s->ring[s->ah];
	size_t at = x & WEFT_IDX_OFF;
	const uint8_t *p = s->base + at;
	uint64_t pos = c->file_off + at;
	size_t avail = c->len - at;
	uint64_t need;
	int known = weft_event_size(p, avail, &need);
	if ((x & WEFT_IDX_TAIL) || !known || need > avail) {
		/* Only the file's end: the producer frames every whole event. */
		char why[256];
		weft_why_incomplete(p, s->fsize - pos, need, why, sizeof why);
		s->ci = s->cn;
		return weft_stream_cut_at(t, s, pos, 0, why);
	}
	int64_t clock = (int64_t) weft_load_u64(p + WEFT_EV_OFF_CLOCK);
	if (clock < s->last_clock) {
		char mcv[16];
		weft_mcv_show(p + WEFT_EV_OFF_MODEL, mcv);
		if ((x & WEFT_IDX_UNORD) && t->backwards == WEFT_BACKWARDS_ERROR) {
			/* sorted on read: every region closed was sorted */
			char why[256];
			snprintf(why, sizeof why, "event %s: clock goes backwards from %" PRId64
					" to %" PRId64 " inside an unordered region that its stream "
					"does not close (no OU] after its OU[: weft sort leaves it "
					"as it is)", mcv, s->last_clock, clock);
			s->ci = s->cn;
			return stream_err(t, s, pos, why);
		} else if (x & WEFT_IDX_UNORD) {
			/* inside an unordered region (the producer flags these
			 * only when the rule allows it, or sorting on read) */
			t->nback_in++;
		} else if (t->backwards == WEFT_BACKWARDS_WARN) {
			if (++t->nback_out <= WEFT_BACKWARDS_WARN_MAX)
				weft_warnf(&t->diag, "%s: offset %" PRIu64 ": event %s: clock goes "
						"backwards from %" PRId64 " to %" PRId64 " within the "
						"stream, outside an unordered region", s->obs_path,
						pos, mcv, s->last_clock, clock);
		} else {
			char why[256];
			snprintf(why, sizeof why, "event %s: clock goes backwards from %" PRId64
					" to %" PRId64 " within the stream", mcv, s->last_clock,
					clock);
			s->ci = s->cn;
			return stream_err(t, s, pos, why);
		}
	}
	s->evp = p;
	s->evsize = need;
	s->last_clock = clock;
	s->key = weft_key_of(s, clock);
	s->ci++;
	s->si++;
	s->stop = s->si < s->nspos ? s->spos[s->si] : s->cn;
	return 1;
}
