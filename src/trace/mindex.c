/* SPDX-License-Identifier: MIT */
/*
 * mindex.c - the merge index (merge.idx, src/format/idx_format.h): writing
 * it after a full read (weft index), and resuming the merge from one of its
 * checkpoints for a seek, so that events of equal clocks in several streams
 * come out in the order of a full read.
 *
 * A seek with it: the last checkpoint whose key is before the seek clock
 * puts every stream at the event the full read had pending there and the
 * heap in the same slots; the merge then goes on as the full read does
 * (push the stream that yielded last, pop the root), dropping what it pops
 * until the root is at or after the seek clock. Without a checkpoint
 * before the clock, it replays from the start (a small trace has none).
 * Everything the index says is checked before any stream is moved: a
 * missing file is silent (the stream indexes are used), a stale or bad one
 * is passed over with a warning naming the offset and what was wrong: the
 * whole file's layout, the keys rising, and in the checkpoint used every
 * stream in one slot, a heap, the pending events where it says and its key
 * the largest its slots yielded (entry_check).
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
#include "opts_size.h"
#include "trace_internal.h"

static char *midx_path(const char *root)
{
	size_t n = strlen(root) + 1 + strlen(WEFT_MIDX_NAME) + 1;
	char *p = malloc(n);
	if (p != NULL)
		snprintf(p, n, "%s/%s", root, WEFT_MIDX_NAME);
	return p;
}

/* ---- writing (weft index) ---- */

/* The event header at off in stream s: its key, or 0 if there is none. */
static int key_at(const struct weft_wstream *s, int sfd, uint64_t off, int64_t *key)
{
	uint8_t h[WEFT_EV_HEADER_SIZE];
	if (off < WEFT_OBS_HEADER_SIZE || off > s->fsize - WEFT_EV_HEADER_SIZE
			|| s->fsize < WEFT_EV_HEADER_SIZE || weft_pread_full(sfd, h, sizeof h, off) < 0)
		return 0;
	*key = (int64_t) (weft_load_u64(h + WEFT_EV_OFF_CLOCK) + (uint64_t) s->keyoff);
	return 1;
}

static void slot_put(uint8_t *sl, size_t stream, uint64_t off, int64_t key, int64_t top)
{
	weft_store_u32(sl, (uint32_t) stream);
	weft_store_u64(sl + 8, off);
	weft_store_u64(sl + 16, (uint64_t) key);
	weft_store_u64(sl + 24, (uint64_t) top);
}


struct growbuf {
	uint8_t *p;
	size_t len, cap;
};

static uint8_t *grow(struct growbuf *b, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n)
			cap *= 2;
		uint8_t *q = realloc(b->p, cap);
		if (q == NULL)
			return NULL;
		b->p = q;
		b->cap = cap;
	}
	uint8_t *w = b->p + b->len;
	memset(w, 0, n);
	b->len += n;
	return w;
}

/* One section: a full read in one order, a checkpoint every spacing bytes.
 * The first (streams not NULL) also records the streams and *ip, the
 * merge index's path, or returns 1 when path is not the top of its trace
 * (nothing read). */
static int write_section(const char *path, const struct weft_open_opts *base, unsigned orders,
		struct growbuf *out, struct growbuf *streams, size_t *nstreams, int *offsets,
		char **ip, char *err, size_t errlen)
{
	struct weft_open_opts o = *base;
	o.clock = (orders & WEFT_MIDX_ORDER_RAW) ? WEFT_CLOCK_RAW : WEFT_CLOCK_OFFSET;
	o.seek = 0;
	struct weft_trace *t = weft_open(path, &o, err, errlen);
	if (t == NULL)
		return -1;
	int r = -1;
	size_t ns = t->nstreams;
	if (streams != NULL) {
		if (t->inside) {
			r = 1;
			goto out;
		}
		if ((*ip = midx_path(t->path)) == NULL)
			goto oom;
		*nstreams = ns;
		*offsets = 0;
		for (size_t i = 0; i < ns; i++) {
			const struct weft_wstream *s = t->streams[i];
			size_t L = strlen(s->relpath), pad = (L + 7) / 8 * 8;
			uint8_t *w = grow(streams, WEFT_MIDX_STREAM_HEAD + pad);
			if (w == NULL)
				goto oom;
			weft_store_u64(w, s->fsize);
			weft_store_u32(w + 8, (uint32_t) L);
			memcpy(w + WEFT_MIDX_STREAM_HEAD, s->relpath, L);
			if (s->clkoff != 0)
				*offsets = 1;
		}
	} else if (ns != *nstreams) {
		snprintf(err, errlen, "%s: the trace changed while it was indexed", path);
		goto out;
	}
	size_t head = out->len;
	uint8_t *h = grow(out, WEFT_MIDX_SECTION_HEAD);
	if (h == NULL)
		goto oom;
	weft_store_u32(h, orders);
	uint64_t esize = WEFT_MIDX_ENTRY_SIZE(ns);
	uint64_t spacing = WEFT_MIDX_SPACING;
	if (spacing < 1024 * esize)
		spacing = 1024 * esize;
	const char *env = getenv("WEFT_MIDX_SPACING"); /* for tests: checkpoints close together */
	if (env != NULL && atoll(env) > 0)
		spacing = (uint64_t) atoll(env);
	uint64_t since = 0, n = 0;
	int64_t maxkey = INT64_MIN; /* the largest key yielded so far */
	int64_t *top = malloc((ns ? ns : 1) * sizeof *top); /* the same, per stream */
	uint8_t *placed = malloc(ns ? ns : 1);
	if (top == NULL || placed == NULL) {
		free(top);
		free(placed);
		goto oom;
	}
	for (size_t i = 0; i < ns; i++)
		top[i] = INT64_MIN;
	struct weft_event ev;
	int got;
	while ((got = weft_next(t, &ev)) > 0) {
		since += WEFT_EV_HEADER_SIZE + (uint64_t) ev.payload_size;
		const struct weft_wstream *cur = t->cur;
		if (cur->key > maxkey)
			maxkey = cur->key;
		if (cur->key > top[cur->index])
			top[cur->index] = cur->key;
		if (since < spacing)
			continue;
		since = 0;
		uint8_t *e = grow(out, (size_t) esize);
		if (e == NULL) {
			free(top);
			free(placed);
			goto oom;
		}
		uint64_t next = ev.offset + WEFT_EV_HEADER_SIZE + ev.payload_size;
		weft_store_u64(e, (uint64_t) maxkey);
		weft_store_u32(e + 8, (uint32_t) cur->index);
		weft_store_u32(e + 12, (uint32_t) t->nheap);
		weft_store_u64(e + 16, next);
		memset(placed, 0, ns);
		uint8_t *sl = e + WEFT_MIDX_ENTRY_HEAD;
		for (size_t k = 0; k < t->nheap; k++, sl += WEFT_MIDX_SLOT_SIZE) {
			const struct weft_wstream *s = t->hs[k];
			slot_put(sl, s->index, s->cbase + (uint64_t) (uintptr_t) s->evp, t->hkey[k],
					top[s->index]);
			placed[s->index] = 1;
		}
		int64_t ckey = 0;
		int cfd = open(cur->obs_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (cfd < 0 || !key_at(cur, cfd, next, &ckey))
			ckey = 0;
		if (cfd >= 0)
			close(cfd);
		slot_put(sl, cur->index, next, ckey, top[cur->index]);
		sl += WEFT_MIDX_SLOT_SIZE;
		placed[cur->index] = 1;
		for (size_t i = 0; i < ns; i++) {
			if (placed[i])
				continue;
			slot_put(sl, i, t->streams[i]->fsize, 0, top[i]);
			sl += WEFT_MIDX_SLOT_SIZE;
		}
		n++;
	}
	free(top);
	free(placed);
	if (got < 0) {
		snprintf(err, errlen, "%s", weft_error(t));
		goto out;
	}
	weft_store_u64(out->p + head + 8, n);
	r = 0;
	goto out;
oom:
	snprintf(err, errlen, "%s: out of memory while writing the merge index", path);
out:
	weft_close(t);
	return r;
}

int weft_write_merge_index(const char *path, const struct weft_open_opts *opts,
		char *ipath, size_t ipathlen, uint64_t *nentries, char *err, size_t errlen)
{
	struct weft_open_opts base; /* a whole struct (opts_size.h) */
	if (weft_opts_take(&base, sizeof base, opts,
			"weft_write_merge_index: struct weft_open_opts", err, errlen) != 0)
		return -1;
	base.sort = WEFT_SORT_NONE;
	struct growbuf streams = { 0 }, body = { 0 };
	size_t ns = 0;
	int offsets = 0, r = -1, fd = -1;
	char *ip = NULL, *tmp = NULL;
	int first = write_section(path, &base, WEFT_MIDX_ORDER_RAW | WEFT_MIDX_ORDER_OFFSET, &body,
			&streams, &ns, &offsets, &ip, err, errlen);
	if (first != 0) {
		r = first; /* 1: not the top of the trace, nothing written */
		goto out;
	}
	unsigned nsec = 1;
	if (offsets) {
		/* the first section is the raw order only; the offset order
		 * gets its own */
		weft_store_u32(body.p, WEFT_MIDX_ORDER_RAW);
		if (write_section(path, &base, WEFT_MIDX_ORDER_OFFSET, &body, NULL, &ns,
					&offsets, NULL, err, errlen) < 0)
			goto out;
		nsec = 2;
	}
	uint64_t n = 0;
	for (size_t at = 0, k = 0; k < nsec; k++) {
		uint64_t ne = weft_load_u64(body.p + at + 8);
		n += ne;
		at += WEFT_MIDX_SECTION_HEAD + (size_t) (ne * WEFT_MIDX_ENTRY_SIZE(ns));
	}
	if ((tmp = malloc(strlen(ip) + 8)) == NULL) {
		snprintf(err, errlen, "%s: out of memory while writing the merge index", path);
		goto out;
	}
	sprintf(tmp, "%s.XXXXXX", ip);
	if (ipath != NULL && ipathlen > 0)
		snprintf(ipath, ipathlen, "%s", ip);
	fd = mkstemp(tmp);
	if (fd < 0) {
		snprintf(err, errlen, "%s: cannot create a temporary file beside it: %s", ip,
				strerror(errno));
		goto out;
	}
	uint8_t h[WEFT_MIDX_HEADER_SIZE];
	memcpy(h, WEFT_MIDX_MAGIC, 4);
	weft_store_u32(h + 4, WEFT_MIDX_VERSION);
	weft_store_u32(h + 8, (uint32_t) ns);
	weft_store_u32(h + 12, nsec);
	if (fchmod(fd, 0644) != 0 || weft_write_all(fd, h, sizeof h) < 0
			|| weft_write_all(fd, streams.p, streams.len) < 0
			|| weft_write_all(fd, body.p, body.len) < 0 || fsync(fd) != 0) {
		snprintf(err, errlen, "%s: cannot write: %s", tmp, strerror(errno));
		goto out;
	}
	int c = close(fd);
	fd = -1;
	if (c != 0 || rename(tmp, ip) != 0) {
		snprintf(err, errlen, "%s: cannot write it (%s): %s", ip, tmp, strerror(errno));
		goto out;
	}
	free(tmp);
	tmp = NULL;
	if (nentries != NULL)
		*nentries = n;
	r = 0;
out:
	if (fd >= 0)
		close(fd);
	if (tmp != NULL)
		unlink(tmp);
	free(tmp);
	free(ip);
	free(streams.p);
	free(body.p);
	return r;
}

/* ---- seeking ---- */

/* Why the index cannot be used (for the warning), or "" when it is absent. */
static int midx_load(struct weft_trace *t, struct weft_midx_plan *pl, char *why, size_t n)
{
	char *ip = midx_path(t->path);
	if (ip == NULL) {
		snprintf(why, n, "out of memory");
		return 0;
	}
	pl->path = ip;
	int fd = open(ip, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		if (errno != ENOENT)
			snprintf(why, n, "cannot open: %s", strerror(errno));
		return 0;
	}
	int ok = 0;
	struct stat st;
	uint8_t h[WEFT_MIDX_HEADER_SIZE];
	size_t ns = t->nstreams;
	uint64_t fsize = 0, at = WEFT_MIDX_HEADER_SIZE;
	char *rel = NULL;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		snprintf(why, n, "not a regular file");
		goto out;
	}
	fsize = (uint64_t) st.st_size;
	if (fsize < WEFT_MIDX_HEADER_SIZE || weft_pread_full(fd, h, sizeof h, 0) < 0) {
		snprintf(why, n, "offset 0: truncated header");
		goto out;
	}
	if (memcmp(h, WEFT_MIDX_MAGIC, 4) != 0) {
		snprintf(why, n, "offset 0: bad magic (expected '%s')", WEFT_MIDX_MAGIC);
		goto out;
	}
	if (weft_load_u32(h + 4) != WEFT_MIDX_VERSION) {
		snprintf(why, n, "offset 4: unknown version %" PRIu32 " (expected %u; run `weft "
				"index` again)", weft_load_u32(h + 4), WEFT_MIDX_VERSION);
		goto out;
	}
	if (weft_load_u32(h + 8) != ns) {
		snprintf(why, n, "stale: it has %" PRIu32 " streams, the trace %zu (run `weft "
				"index` again)", weft_load_u32(h + 8), ns);
		goto out;
	}
	uint32_t nsec = weft_load_u32(h + 12);
	for (size_t i = 0; i < ns; i++) {
		const struct weft_wstream *s = t->streams[i];
		uint8_t sh[WEFT_MIDX_STREAM_HEAD];
		size_t L = strlen(s->relpath);
		if (at + WEFT_MIDX_STREAM_HEAD > fsize || weft_pread_full(fd, sh, sizeof sh, at) < 0) {
			snprintf(why, n, "offset %" PRIu64 ": truncated stream record", at);
			goto out;
		}
		uint64_t ssize = weft_load_u64(sh);
		uint32_t sl = weft_load_u32(sh + 8);
		uint64_t pad = ((uint64_t) sl + 7) / 8 * 8;
		if (sl != L || at + WEFT_MIDX_STREAM_HEAD + pad > fsize) {
			snprintf(why, n, "stale: stream %zu is not %s (run `weft index` again)", i,
					s->relpath);
			goto out;
		}
		free(rel);
		if ((rel = malloc(L + 1)) == NULL) {
			snprintf(why, n, "out of memory");
			goto out;
		}
		if (weft_pread_full(fd, rel, L, at + WEFT_MIDX_STREAM_HEAD) < 0
				|| memcmp(rel, s->relpath, L) != 0) {
			snprintf(why, n, "stale: stream %zu is not %s (run `weft index` again)", i,
					s->relpath);
			goto out;
		}
		if (st.st_mtim.tv_sec < s->mtime_sec || (st.st_mtim.tv_sec == s->mtime_sec
					&& st.st_mtim.tv_nsec < s->mtime_nsec)) {
			snprintf(why, n, "stale: older than %s (run `weft index` again)",
					s->obs_path);
			goto out;
		}
		if (ssize != s->fsize) {
			snprintf(why, n, "stale: %s has %" PRIu64 " bytes, %" PRIu64 " when indexed "
					"(run `weft index` again)", s->obs_path, s->fsize, ssize);
			goto out;
		}
		at += WEFT_MIDX_STREAM_HEAD + pad;
	}
	/* one section for both orders without clock offsets, else raw then
	 * offsets; the file ends with the last one */
	int offsets = 0;
	for (size_t i = 0; i < ns; i++)
		if (t->streams[i]->clkoff != 0)
			offsets = 1;
	uint32_t nwant = offsets ? 2 : 1;
	if (nsec != nwant) {
		snprintf(why, n, "offset 12: %" PRIu32 " sections, expected %" PRIu32 " (one per "
				"clock order%s)", nsec, nwant, offsets ? "; the looms have clock offsets" :
				"; no loom has a clock offset");
		goto out;
	}
	unsigned want = t->raw_order ? WEFT_MIDX_ORDER_RAW : WEFT_MIDX_ORDER_OFFSET;
	uint64_t esize = WEFT_MIDX_ENTRY_SIZE(ns);
	for (uint32_t k = 0; k < nsec; k++) {
		uint8_t sh[WEFT_MIDX_SECTION_HEAD];
		if (at + sizeof sh > fsize || weft_pread_full(fd, sh, sizeof sh, at) < 0) {
			snprintf(why, n, "offset %" PRIu64 ": truncated section header", at);
			goto out;
		}
		uint32_t orders = weft_load_u32(sh);
		uint32_t exp = nsec == 1 ? (WEFT_MIDX_ORDER_RAW | WEFT_MIDX_ORDER_OFFSET)
			: k == 0 ? WEFT_MIDX_ORDER_RAW : WEFT_MIDX_ORDER_OFFSET;
		if (orders != exp || weft_load_u32(sh + 4) != 0) {
			snprintf(why, n, "offset %" PRIu64 ": section %" PRIu32 " is for clock orders "
					"%" PRIu32 " (reserved %" PRIu32 "), expected %" PRIu32 " (0)", at, k,
					orders, weft_load_u32(sh + 4), exp);
			goto out;
		}
		uint64_t ne = weft_load_u64(sh + 8);
		if (ne > (fsize - at - sizeof sh) / esize) {
			snprintf(why, n, "offset %" PRIu64 ": %" PRIu64 " checkpoints do not fit the "
					"file", at, ne);
			goto out;
		}
		if (orders & want) {
			pl->entries = at + sizeof sh;
			pl->nentries = ne;
			pl->esize = esize;
		}
		at += sizeof sh + ne * esize;
	}
	if (at != fsize) {
		snprintf(why, n, "offset %" PRIu64 ": %" PRIu64 " bytes after the last section", at,
				fsize - at);
		goto out;
	}
	pl->fd = fd;
	fd = -1;
	ok = 1;
out:
	free(rel);
	if (fd >= 0)
		close(fd);
	return ok;
}

/* Checks checkpoint number k (e, at offset eoff of the file) against the
 * streams: its slots hold every stream once, the heap's (nheap of them,
 * cur not among them) then cur then the others at their end; the pending
 * events are at their offsets with their keys; the key is the largest top
 * of the slots. Without the last, a key lowered by corruption would resume
 * the merge past events at or after the seek clock. */
static int entry_check(const struct weft_trace *t, const uint8_t *e, uint64_t k, uint64_t eoff,
		char *why, size_t n)
{
	size_t ns = t->nstreams;
	int64_t key = (int64_t) weft_load_u64(e);
	uint32_t cur = weft_load_u32(e + 8), nheap = weft_load_u32(e + 12);
	uint64_t next = weft_load_u64(e + 16);
	if (cur >= ns || nheap > ns - 1) {
		snprintf(why, n, "offset %" PRIu64 ": checkpoint %" PRIu64 " names stream %" PRIu32
				" and %" PRIu32 " heap slots (the trace has %zu streams)", eoff + 8, k, cur,
				nheap, ns);
		return 0;
	}
	uint8_t *seen = calloc(ns, 1);
	if (seen == NULL) {
		snprintf(why, n, "out of memory");
		return 0;
	}
	int ok = 1;
	int64_t most = INT64_MIN;
	for (uint32_t j = 0; ok && j < ns; j++) {
		uint64_t so = WEFT_MIDX_ENTRY_HEAD + (uint64_t) WEFT_MIDX_SLOT_SIZE * j;
		const uint8_t *sl = e + so;
		uint32_t si = weft_load_u32(sl), zero = weft_load_u32(sl + 4);
		uint64_t off = weft_load_u64(sl + 8);
		int64_t skey = (int64_t) weft_load_u64(sl + 16);
		int64_t stop = (int64_t) weft_load_u64(sl + 24);
		if (si >= ns || seen[si] || zero != 0) {
			snprintf(why, n, "offset %" PRIu64 ": checkpoint %" PRIu64 ": slot %" PRIu32
					" names stream %" PRIu32 "%s", eoff + so, k, j, si,
					si >= ns ? " (no such stream)" : zero != 0 ? " with a reserved field not 0"
					: ", which another slot holds");
			ok = 0;
			break;
		}
		seen[si] = 1;
		if (stop > most)
			most = stop;
		if (j > 0 && j < nheap && (int64_t) weft_load_u64(e + WEFT_MIDX_ENTRY_HEAD
					+ (uint64_t) WEFT_MIDX_SLOT_SIZE * ((j - 1) / 2) + 16) > skey) {
			snprintf(why, n, "offset %" PRIu64 ": checkpoint %" PRIu64 ": heap slot %"
					PRIu32 " has a key below its parent's (not a heap)", eoff + so, k, j);
			ok = 0;
			break;
		}
		const struct weft_wstream *s = t->streams[si];
		if (j == nheap && (si != cur || off != next)) {
			snprintf(why, n, "offset %" PRIu64 ": checkpoint %" PRIu64 ": slot %" PRIu32
					" (after the %" PRIu32 " of the heap) holds stream %" PRIu32 " at offset %"
					PRIu64 ", not the stream that yielded last (%" PRIu32 ") at its next "
					"event (%" PRIu64 ")", eoff + so, k, j, nheap, si, off, cur, next);
			ok = 0;
		} else if (j > nheap && (off != s->fsize || skey != 0)) {
			snprintf(why, n, "offset %" PRIu64 ": checkpoint %" PRIu64 ": stream %" PRIu32
					" (%s) is neither in the heap nor the one that yielded last, but is at "
					"offset %" PRIu64 ", not at its end (%" PRIu64 " bytes)", eoff + so, k, si,
					s->obs_path, off, s->fsize);
			ok = 0;
		} else if (j <= nheap) {
			int64_t got = 0;
			int sfd = open(s->obs_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
			int has = sfd >= 0 && key_at(s, sfd, off, &got);
			if (sfd >= 0)
				close(sfd);
			if (j == nheap && (off < WEFT_OBS_HEADER_SIZE || off > s->fsize)) {
				snprintf(why, n, "%s: offset %" PRIu64 " is past its end", s->obs_path,
						off);
				ok = 0;
			} else if (j == nheap ? (has ? got != skey : skey != 0) : (!has || got != skey)) {
				snprintf(why, n, "%s: offset %" PRIu64 ": not the event of the "
						"checkpoint", s->obs_path, off);
				ok = 0;
			}
		}
	}
	if (ok && most != key) {
		snprintf(why, n, "offset %" PRIu64 ": checkpoint %" PRIu64 ": key %" PRId64 ", but "
				"the largest key its streams yielded is %" PRId64, eoff, k, key, most);
		ok = 0;
	}
	free(seen);
	return ok;
}

/* The section's keys rise from one checkpoint to the next (the search
 * below relies on it). */
static int keys_check(const struct weft_midx_plan *pl, char *why, size_t n)
{
	int64_t prev = INT64_MIN;
	uint8_t kb[8];
	for (uint64_t k = 0; k < pl->nentries; k++) {
		uint64_t at = pl->entries + k * pl->esize;
		if (weft_pread_full(pl->fd, kb, 8, at) < 0) {
			snprintf(why, n, "offset %" PRIu64 ": cannot read", at);
			return 0;
		}
		int64_t key = (int64_t) weft_load_u64(kb);
		if (key < prev) {
			snprintf(why, n, "offset %" PRIu64 ": checkpoint %" PRIu64 ": key %" PRId64
					" is below the key of the one before it (%" PRId64 ")", at, k, key,
					prev);
			return 0;
		}
		prev = key;
	}
	return 1;
}

void weft_midx_plan_free(struct weft_midx_plan *pl)
{
	if (pl->fd >= 0)
		close(pl->fd);
	free(pl->path);
	free(pl->entry);
	memset(pl, 0, sizeof *pl);
	pl->fd = -1;
}

int weft_midx_plan(struct weft_trace *t, struct weft_midx_plan *pl)
{
	memset(pl, 0, sizeof *pl);
	pl->fd = -1;
	if (!t->seek || t->sort.mode != WEFT_SORT_NONE || t->inside || t->nstreams == 0
			|| (t->drifted && !t->raw_order) /* its keys know no clock drift */
			|| t->nstreams > UINT32_MAX / 2)
		return 0;
	char why[WEFT_ERR_MAX];
	why[0] = '\0';
	if (!midx_load(t, pl, why, sizeof why)) {
		if (why[0] != '\0')
			weft_warnf(&t->diag, "%s: %s; seeking without it (equal clocks of several "
					"streams may come in another order than in a full read)",
					pl->path ? pl->path : WEFT_MIDX_NAME, why);
		weft_midx_plan_free(pl);
		return 0;
	}
	if (!keys_check(pl, why, sizeof why)) {
		weft_warnf(&t->diag, "%s: %s; seeking without it (equal clocks of several "
				"streams may come in another order than in a full read)", pl->path, why);
		weft_midx_plan_free(pl);
		return 0;
	}
	/* the last checkpoint whose key is before the seek clock */
	uint64_t lo = 0, hi = pl->nentries;
	uint8_t kb[8];
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (weft_pread_full(pl->fd, kb, 8, pl->entries + mid * pl->esize) < 0) {
			weft_warnf(&t->diag, "%s: cannot read; seeking without it", pl->path);
			weft_midx_plan_free(pl);
			return 0;
		}
		if ((int64_t) weft_load_u64(kb) < t->seek_clock)
			lo = mid + 1;
		else
			hi = mid;
	}
	pl->use = 1;
	if (lo > 0) {
		if ((pl->entry = malloc((size_t) pl->esize)) == NULL
				|| weft_pread_full(pl->fd, pl->entry, (size_t) pl->esize,
					pl->entries + (lo - 1) * pl->esize) < 0) {
			weft_warnf(&t->diag, "%s: cannot read a checkpoint; seeking without it",
					pl->path);
			weft_midx_plan_free(pl);
			return 0;
		}
		if (!entry_check(t, pl->entry, lo - 1, pl->entries + (lo - 1) * pl->esize, why,
					sizeof why)) {
			weft_warnf(&t->diag, "%s: %s; seeking without it (equal clocks of several "
					"streams may come in another order than in a full read)",
					pl->path, why);
			weft_midx_plan_free(pl);
			return 0;
		}
		/* every stream where the checkpoint has it: in the heap at its
		 * pending event, cur at its next one, the others at their end */
		for (size_t i = 0; i < t->nstreams; i++)
			t->streams[i]->prod.off = t->streams[i]->fsize;
		uint32_t nheap = weft_load_u32(pl->entry + 12);
		for (uint32_t k = 0; k < nheap; k++) {
			const uint8_t *sl = pl->entry + WEFT_MIDX_ENTRY_HEAD + WEFT_MIDX_SLOT_SIZE * k;
			struct weft_wstream *s = t->streams[weft_load_u32(sl)];
			s->prod.off = weft_load_u64(sl + 8);
		}
		struct weft_wstream *cur = t->streams[weft_load_u32(pl->entry + 8)];
		cur->prod.off = weft_load_u64(pl->entry + 16);
		for (size_t i = 0; i < t->nstreams; i++) {
			struct weft_wstream *s = t->streams[i];
			/* the region state there is not known (as after a stream
			 * index seek) */
			s->prod.reg_off = s->prod.off;
			s->prod.reg_in = 1;
		}
	}
	return 1;
}

int weft_midx_resume(struct weft_trace *t, struct weft_midx_plan *pl)
{
	struct weft_wstream *prev = NULL;
	if (pl->entry != NULL) {
		uint32_t nheap = weft_load_u32(pl->entry + 12);
		for (uint32_t k = 0; k < nheap; k++) {
			const uint8_t *sl = pl->entry + WEFT_MIDX_ENTRY_HEAD + WEFT_MIDX_SLOT_SIZE * k;
			struct weft_wstream *s = t->streams[weft_load_u32(sl)];
			int r = weft_stream_step(t, s, 1);
			if (r < 0)
				return -1;
			if (r == 0 || s->key != (int64_t) weft_load_u64(sl + 16))
				return weft_fail(&t->diag, "%s: the event of a checkpoint in %s changed "
						"while it was read", pl->path, s->obs_path);
			t->hkey[k] = s->key;
			t->hs[k] = s;
		}
		t->nheap = nheap;
		t->fast_known = 0;
		prev = t->streams[weft_load_u32(pl->entry + 8)];
	} else {
		for (size_t i = 0; i < t->nstreams; i++) {
			struct weft_wstream *s = t->streams[i];
			int r = weft_stream_step(t, s, 1);
			if (r < 0)
				return -1;
			if (r > 0)
				weft_heap_push(t, s);
		}
	}
	/* the merge as a full read does it, dropping what it pops before the
	 * seek clock */
	for (;;) {
		if (prev != NULL) {
			int r = weft_stream_step(t, prev, 1);
			if (r < 0)
				return -1;
			if (r > 0)
				weft_heap_push(t, prev);
			prev = NULL;
		}
		if (t->nheap == 0 || t->hkey[0] >= t->seek_clock)
			break;
		prev = weft_heap_pop(t);
	}
	for (size_t i = 0; i < t->nstreams; i++)
		t->streams[i]->ended = 1;
	for (size_t k = 0; k < t->nheap; k++) {
		struct weft_wstream *s = t->hs[k];
		s->ended = 0;
		s->first_clock = s->last_clock;
		s->has_first = 1;
	}
	return 0;
}
