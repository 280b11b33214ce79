/* SPDX-License-Identifier: MIT */
/*
 * index.c - the stream index (stream.idx, src/format/idx_format.h): seeking
 * with it, and writing it for a stream that has none (weft index).
 *
 * The index is a hint. Before an entry is trusted, the event it names is
 * read from the stream and must be there (an OF[ with the entry's clock);
 * a missing, stale (older than its stream) or corrupted index is passed
 * over with a warning, and the stream is read from its start instead.
 * Missing is not reported where the stream's libovni says none is due
 * (weft.index_after, obs_format.h: a stream of one buffer's worth).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "idx_format.h"
#include "trace_internal.h"

char *weft_index_path(const char *obs_path)
{
	size_t n = strlen(obs_path);
	size_t ol = strlen(WEFT_STREAM_OBS), el = strlen(WEFT_V1_STREAM_EXT);
	char *p;
	if (n >= ol && strcmp(obs_path + n - ol, WEFT_STREAM_OBS) == 0
			&& (n == ol || obs_path[n - ol - 1] == '/')) {
		p = malloc(n - ol + strlen(WEFT_STREAM_IDX) + 1);
		if (p == NULL)
			return NULL;
		memcpy(p, obs_path, n - ol);
		strcpy(p + n - ol, WEFT_STREAM_IDX);
	} else { /* v1: thread.TID.obs or thread.TID */
		size_t keep = n > el && strcmp(obs_path + n - el, WEFT_V1_STREAM_EXT) == 0
			? n - el : n;
		p = malloc(keep + strlen(WEFT_V1_IDX_EXT) + 1);
		if (p == NULL)
			return NULL;
		memcpy(p, obs_path, keep);
		strcpy(p + keep, WEFT_V1_IDX_EXT);
	}
	return p;
}

int weft_pread_full(int fd, void *buf, size_t n, uint64_t off)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = pread(fd, (uint8_t *) buf + got, n - got, (off_t) (off + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		got += (size_t) r;
	}
	return 0;
}

struct seek_ctx {
	int ifd;        /* the index */
	int sfd;        /* the stream */
	uint64_t n;     /* entries */
	uint64_t fsize; /* the stream's bytes */
	char why[512];
};

static int entry_at(struct seek_ctx *c, uint64_t k, uint64_t *off, int64_t *clock)
{
	uint8_t e[WEFT_IDX_ENTRY_SIZE];
	uint64_t pos = WEFT_IDX_HEADER_SIZE + k * WEFT_IDX_ENTRY_SIZE;
	if (weft_pread_full(c->ifd, e, sizeof e, pos) < 0) {
		snprintf(c->why, sizeof c->why, "offset %" PRIu64 ": cannot read entry %" PRIu64
				" (the file changed while reading?)", pos, k);
		return -1;
	}
	*off = weft_load_u64(e + WEFT_IDX_ENT_OFF_OFFSET);
	*clock = (int64_t) weft_load_u64(e + WEFT_IDX_ENT_OFF_CLOCK);
	if (*off < WEFT_OBS_HEADER_SIZE || *off > c->fsize
			|| c->fsize - *off < WEFT_EV_HEADER_SIZE) {
		snprintf(c->why, sizeof c->why, "offset %" PRIu64 ": entry %" PRIu64 " names "
				"stream offset %" PRIu64 ", outside the stream's %" PRIu64
				" bytes of events (corrupted or stale)", pos, k, *off, c->fsize);
		return -1;
	}
	return 0;
}

/* Entry k must name an event of the stream with its clock (an OF[ for
 * k >= 1). */
static int entry_check(struct seek_ctx *c, uint64_t k, uint64_t off, int64_t clock)
{
	uint8_t h[WEFT_EV_HEADER_SIZE];
	uint64_t pos = WEFT_IDX_HEADER_SIZE + k * WEFT_IDX_ENTRY_SIZE;
	if (weft_pread_full(c->sfd, h, sizeof h, off) < 0) {
		snprintf(c->why, sizeof c->why, "offset %" PRIu64 ": cannot read the event of "
				"entry %" PRIu64 " at stream offset %" PRIu64, pos, k, off);
		return -1;
	}
	int64_t have = (int64_t) weft_load_u64(h + WEFT_EV_OFF_CLOCK);
	if (have != clock || (k > 0 && !weft_idx_is_flush_begin(h))) {
		char mcv[16];
		weft_mcv_show(h + WEFT_EV_OFF_MODEL, mcv);
		snprintf(c->why, sizeof c->why, "offset %" PRIu64 ": entry %" PRIu64 " names "
				"%s at stream offset %" PRIu64 " with clock %" PRId64 ", but the "
				"stream has %s with clock %" PRId64 " there (stale or corrupted)",
				pos, k, k > 0 ? "an OF[" : "the first event", off, clock, mcv, have);
		return -1;
	}
	return 0;
}

/* The search proper: 1 with *off set, 0 to read from the start, -1 with
 * c->why (the index cannot be used). */
static int search(struct seek_ctx *c, int64_t keyoff, int64_t T, uint64_t *off)
{
	uint64_t o0;
	int64_t c0;
	if (c->n == 0) {
		if (c->fsize > WEFT_OBS_HEADER_SIZE) {
			snprintf(c->why, sizeof c->why, "it lists no event, but the stream has "
					"%" PRIu64 " bytes of events (stale)",
					c->fsize - WEFT_OBS_HEADER_SIZE);
			return -1;
		}
		return 0;
	}
	if (entry_at(c, 0, &o0, &c0) < 0)
		return -1;
	if (o0 != WEFT_OBS_HEADER_SIZE) {
		snprintf(c->why, sizeof c->why, "offset %u: entry 0 names stream offset %"
				PRIu64 " instead of the first event's (%u)", WEFT_IDX_HEADER_SIZE,
				o0, WEFT_OBS_HEADER_SIZE);
		return -1;
	}
	if (entry_check(c, 0, o0, c0) < 0)
		return -1;
	/* The last entry k >= 1 whose key is below T: entries 1.. have
	 * ascending offsets and clocks (the flushes' clocks). Every probe
	 * must lie between the bounds found so far. */
	uint64_t lo = 0, hi = c->n; /* key(lo) < T (or lo == 0), key(hi) >= T (or hi == n) */
	uint64_t lo_off = o0, hi_off = c->fsize;
	int64_t lo_clk = INT64_MIN, hi_clk = INT64_MAX;
	while (hi - lo > 1) {
		uint64_t m = lo + (hi - lo) / 2, mo;
		int64_t mc;
		if (entry_at(c, m, &mo, &mc) < 0)
			return -1;
		if (mo <= lo_off || mo >= hi_off || mc < lo_clk || mc > hi_clk) {
			snprintf(c->why, sizeof c->why, "offset %" PRIu64 ": entry %" PRIu64
					" (stream offset %" PRIu64 ", clock %" PRId64 ") is out of "
					"order with its neighbours (corrupted)",
					(uint64_t) WEFT_IDX_HEADER_SIZE + m * WEFT_IDX_ENTRY_SIZE,
					m, mo, mc);
			return -1;
		}
		int64_t key = (int64_t) ((uint64_t) mc + (uint64_t) keyoff);
		if (key < T) {
			lo = m;
			lo_off = mo;
			lo_clk = mc;
		} else {
			hi = m;
			hi_off = mo;
			hi_clk = mc;
		}
	}
	if (lo == 0)
		return 0;
	if (entry_check(c, lo, lo_off, lo_clk) < 0)
		return -1;
	*off = lo_off;
	return 1;
}

int weft_index_seek(struct weft_trace *t, struct weft_wstream *s, int64_t T, uint64_t *off)
{
	uint64_t start = s->fsize < WEFT_OBS_HEADER_SIZE ? s->fsize : WEFT_OBS_HEADER_SIZE;
	*off = start;
	if (s->fsize <= WEFT_OBS_HEADER_SIZE || s->cut_header)
		return 0;
	char *ip = weft_index_path(s->obs_path);
	if (ip == NULL)
		return weft_oom(&t->diag, "seeking in %s", s->obs_path);
	struct seek_ctx c = { .ifd = -1, .sfd = -1, .fsize = s->fsize };
	int used = 0;
	c.ifd = open(ip, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	uint8_t h[WEFT_IDX_HEADER_SIZE];
	if (c.ifd < 0) {
		/* None is due (weft.index_after): read from the start. */
		if (errno == ENOENT && s->meta.has_index_after
				&& s->fsize - WEFT_OBS_HEADER_SIZE <= s->meta.index_after) {
			free(ip);
			return 0;
		}
		if (errno == ENOENT)
			snprintf(c.why, sizeof c.why, "missing (`weft index` writes one)");
		else
			snprintf(c.why, sizeof c.why, "cannot open: %s", strerror(errno));
	} else if (fstat(c.ifd, &st) != 0 || !S_ISREG(st.st_mode)) {
		snprintf(c.why, sizeof c.why, "not a regular file");
	} else if (st.st_mtim.tv_sec < s->mtime_sec
			|| (st.st_mtim.tv_sec == s->mtime_sec && st.st_mtim.tv_nsec < s->mtime_nsec)) {
		snprintf(c.why, sizeof c.why, "stale: older than its stream");
	} else if ((uint64_t) st.st_size < WEFT_IDX_HEADER_SIZE) {
		snprintf(c.why, sizeof c.why, "offset 0: truncated header: %" PRIu64 " of %u "
				"bytes", (uint64_t) st.st_size, WEFT_IDX_HEADER_SIZE);
	} else if (weft_pread_full(c.ifd, h, sizeof h, 0) < 0) {
		snprintf(c.why, sizeof c.why, "offset 0: cannot read the header");
	} else if (memcmp(h, WEFT_IDX_MAGIC, WEFT_IDX_MAGIC_LEN) != 0) {
		snprintf(c.why, sizeof c.why, "offset 0: bad magic (expected '%s')",
				WEFT_IDX_MAGIC);
	} else if (weft_load_u32(h + WEFT_IDX_OFF_VERSION) != WEFT_IDX_VERSION) {
		snprintf(c.why, sizeof c.why, "offset %u: unknown version %" PRIu32 " (expected "
				"%u)", WEFT_IDX_OFF_VERSION, weft_load_u32(h + WEFT_IDX_OFF_VERSION),
				WEFT_IDX_VERSION);
	} else if (weft_load_u32(h + WEFT_IDX_OFF_ENTRY_SIZE) != WEFT_IDX_ENTRY_SIZE) {
		snprintf(c.why, sizeof c.why, "offset %u: entry size %" PRIu32 " (expected %u)",
				WEFT_IDX_OFF_ENTRY_SIZE, weft_load_u32(h + WEFT_IDX_OFF_ENTRY_SIZE),
				WEFT_IDX_ENTRY_SIZE);
	} else if (((uint64_t) st.st_size - WEFT_IDX_HEADER_SIZE) % WEFT_IDX_ENTRY_SIZE != 0) {
		uint64_t body = (uint64_t) st.st_size - WEFT_IDX_HEADER_SIZE;
		snprintf(c.why, sizeof c.why, "offset %" PRIu64 ": truncated: a partial entry of "
				"%" PRIu64 " bytes at the end", (uint64_t) st.st_size
				- body % WEFT_IDX_ENTRY_SIZE, body % WEFT_IDX_ENTRY_SIZE);
	} else {
		c.n = ((uint64_t) st.st_size - WEFT_IDX_HEADER_SIZE) / WEFT_IDX_ENTRY_SIZE;
		c.sfd = s->fd >= 0 ? s->fd : open(s->obs_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (c.sfd < 0) {
			snprintf(c.why, sizeof c.why, "cannot open the stream to check it: %s",
					strerror(errno));
		} else {
			int r = search(&c, s->keyoff, T, off);
			if (r < 0)
				*off = start;
			else
				used = 1;
		}
		if (c.sfd >= 0 && c.sfd != s->fd)
			close(c.sfd);
	}
	if (c.ifd >= 0)
		close(c.ifd);
	if (!used)
		weft_warnf(&t->diag, "%s: %s; seeking by reading the stream from its start", ip,
				c.why);
	free(ip);
	return used;
}

/* ---- weft index ---- */

int weft_write_all(int fd, const void *buf, size_t n)
{
	const uint8_t *p = buf;
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t) w;
	}
	return 0;
}

int weft_stream_write_index(struct weft_trace *t, size_t i, char *path, size_t pathlen,
		uint64_t *nentries)
{
	if (i >= t->nstreams)
		return weft_fail(&t->diag, "weft_stream_write_index: no stream %zu (the trace has "
				"%zu)", i, t->nstreams);
	const struct weft_wstream *s = t->streams[i];
	char *ip = weft_index_path(s->obs_path);
	if (ip == NULL)
		return weft_oom(&t->diag, "indexing %s", s->obs_path);
	if (path != NULL && pathlen > 0)
		snprintf(path, pathlen, "%s", ip);
	size_t tl = strlen(ip) + 8;
	char *tmp = malloc(tl);
	if (tmp == NULL) {
		free(ip);
		return weft_oom(&t->diag, "indexing %s", s->obs_path);
	}
	snprintf(tmp, tl, "%s.XXXXXX", ip);
	enum { IBUF = 1 << 20, OBUF = 64 << 10 };
	uint8_t *ib = malloc(IBUF), *ob = malloc(OBUF);
	int sfd = open(s->obs_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	int ofd = -1, r = -1, made = 0;
	uint64_t n = 0;
	if (ib == NULL || ob == NULL) {
		weft_fail(&t->diag, "%s: out of memory", s->obs_path);
		goto out;
	}
	if (sfd < 0) {
		weft_fail(&t->diag, "%s: cannot open the binary stream: %s", s->obs_path,
				strerror(errno));
		goto out;
	}
	ofd = mkstemp(tmp);
	if (ofd < 0) {
		weft_fail(&t->diag, "%s: cannot create a temporary file beside it: %s", ip,
				strerror(errno));
		goto out;
	}
	made = 1;
	if (fchmod(ofd, 0644) != 0) {
		weft_fail(&t->diag, "%s: cannot set its mode: %s", tmp, strerror(errno));
		goto out;
	}
	weft_idx_header(ob);
	size_t ol = WEFT_IDX_HEADER_SIZE;
	/* Walk the event headers in file order (the size recorded at open:
	 * a file growing meanwhile is indexed up to there). */
	uint64_t fsize = s->fsize, off = fsize < WEFT_OBS_HEADER_SIZE ? fsize : WEFT_OBS_HEADER_SIZE;
	uint64_t boff = 0;
	size_t blen = 0;
	while (off < fsize) {
		if (off < boff || off + WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD > boff + blen) {
			uint64_t left = fsize - off;
			size_t want = left < IBUF ? (size_t) left : IBUF;
			if (weft_pread_full(sfd, ib, want, off) < 0) {
				weft_fail(&t->diag, "%s: offset %" PRIu64 ": cannot read (the file "
						"became shorter?)", s->obs_path, off);
				goto out;
			}
			boff = off;
			blen = want;
		}
		const uint8_t *p = ib + (off - boff);
		uint64_t need;
		if (!weft_event_size(p, (size_t) (boff + blen - off), &need) || need > fsize - off)
			break; /* the stream is cut here: its whole events are indexed */
		if (off == WEFT_OBS_HEADER_SIZE || weft_idx_is_flush_begin(p)) {
			if (ol + WEFT_IDX_ENTRY_SIZE > OBUF) {
				if (weft_write_all(ofd, ob, ol) < 0)
					goto werr;
				ol = 0;
			}
			weft_idx_entry(ob + ol, off, weft_load_u64(p + WEFT_EV_OFF_CLOCK));
			ol += WEFT_IDX_ENTRY_SIZE;
			n++;
		}
		off += need;
	}
	if (weft_write_all(ofd, ob, ol) < 0 || fsync(ofd) != 0)
		goto werr;
	if (close(ofd) != 0) {
		ofd = -1;
		goto werr;
	}
	ofd = -1;
	if (rename(tmp, ip) != 0) {
		weft_fail(&t->diag, "%s: cannot rename %s to it: %s", ip, tmp, strerror(errno));
		goto out;
	}
	made = 0;
	if (nentries != NULL)
		*nentries = n;
	r = 0;
	goto out;
werr:
	weft_fail(&t->diag, "%s: cannot write: %s", tmp, strerror(errno));
out:
	if (ofd >= 0)
		close(ofd);
	if (made)
		unlink(tmp);
	if (sfd >= 0)
		close(sfd);
	free(ib);
	free(ob);
	free(tmp);
	free(ip);
	return r;
}
