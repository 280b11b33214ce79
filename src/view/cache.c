/* SPDX-License-Identifier: MIT */
/*
 * cache.c - `weft view --serve`'s cache (view.h, docs/view.md "The cache"):
 * the collection kept in one file beside the trace, so that a later start
 * serves it without emulating the trace again.
 *
 * The file is the temporary file of the intervals beyond the budget
 * (view_data_spill) made in the cache's directory, with the rest of the
 * collection after its chunks:
 *
 *   0   8  magic "weftvwc\n"
 *   8   4  the format's version (VC_VERSION)
 *   12  4  the key's length K
 *   16  8  the metadata's offset M (after the chunks)
 *   24  8  the metadata's length L
 *   32  8  the metadata's checksum (vc_hash)
 *   40  8  the file's size, M + L
 *   48  K  the key (text: trace_cache.h)
 *   48+K   the chunks of the spilled tracks (view_internal.h)
 *   M   L  the metadata: the rows, the channels and their labels, and per
 *          track its pyramid, its chunk table and samples, or its kept
 *          intervals (vc_write_meta's order), in 64-bit words, texts as
 *          their length and bytes, the kept intervals encoded as the
 *          chunks' sub-blocks are (view_sub_encode)
 *
 * in the machine's byte order (the key names the program that wrote it).
 * The file is input when read back: every count, offset and length is
 * checked against the file's size and sane bounds before anything is
 * allocated from it; the server decodes the chunks defensively (a chunk
 * that does not decode answers 500).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "obs_format.h"
#include "view_internal.h"

#define VC_MAGIC "weftvwc\n"
#define VC_VERSION 1u
#define VC_HEAD VIEW_CACHE_HEAD
_Static_assert(VIEW_CACHE_HEAD == 48, "the header: 48 bytes");
/* bounds on what a cache may say, beyond the file's size */
#define VC_KEY_MAX ((uint64_t) 16 << 20)
#define VC_STR_MAX ((uint64_t) 16 << 20)
#define VC_BUF ((size_t) 1 << 20) /* a multiple of 8: see vc_hash */
#define VC_END 0x646e652d6377763bull /* the metadata's last word */

/* The chunk table and the samples are written as they are in memory: their
 * 64-bit words, no padding. */
_Static_assert(sizeof(struct view_spill_chunk) == 3 * sizeof(uint64_t), "chunk: 3 words");
_Static_assert(sizeof(struct view_spill_sample) == 4 * sizeof(uint64_t), "sample: 4 words");

static const char *const kinds[] = { "state", "single", "stack", "counter", "mark" };

/* The metadata's checksum: a 64-bit FNV-1a over its 8-byte words (the last
 * one padded with zeros), fed a buffer at a time (each a multiple of 8
 * bytes but the last). */
static uint64_t vc_hash(uint64_t h, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i += 8) {
		uint64_t w = 0;
		memcpy(&w, p + i, n - i < 8 ? n - i : 8);
		h = (h ^ w) * 0x100000001b3u;
	}
	return h;
}

#define VC_HASH0 0xcbf29ce484222325u

uint64_t view_cache_sum(const uint8_t *p, size_t n)
{
	return vc_hash(VC_HASH0, p, n);
}

void view_cache_head(uint8_t *head, uint32_t klen, uint64_t moff, uint64_t mlen, uint64_t sum)
{
	uint32_t ver = VC_VERSION;
	uint64_t size = moff + mlen;
	memcpy(head, VC_MAGIC, 8);
	memcpy(head + 8, &ver, 4);
	memcpy(head + 12, &klen, 4);
	memcpy(head + 16, &moff, 8);
	memcpy(head + 24, &mlen, 8);
	memcpy(head + 32, &sum, 8);
	memcpy(head + 40, &size, 8);
}

static int pwrite_all(int fd, const void *p, size_t n, uint64_t off)
{
	size_t done = 0;
	while (done < n) {
		ssize_t w = pwrite(fd, (const char *) p + done, n - done, (off_t) (off + done));
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = ENOSPC;
			return -1;
		}
		done += (size_t) w;
	}
	return 0;
}

/* ---- writing ---- */

int view_cache_begin(struct view_data *vd, const char *dir, const char *key, char *err,
		size_t errlen)
{
	size_t klen = strlen(key);
	if (klen > VC_KEY_MAX) {
		snprintf(err, errlen, "the cache's key is too long (%zu bytes)", klen);
		return -1;
	}
	char *tmp = NULL;
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0644);
	if (fd < 0) {
		/* no O_TMPFILE there: a named temporary, removed unless made
		 * the cache (view_data_free) */
		size_t n = strlen(dir) + sizeof "/" WEFT_VIEW_CACHE_TMP "XXXXXX";
		tmp = malloc(n);
		if (tmp == NULL) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		snprintf(tmp, n, "%s/" WEFT_VIEW_CACHE_TMP "XXXXXX", dir);
		fd = mkostemp(tmp, O_CLOEXEC);
		if (fd < 0) {
			snprintf(err, errlen, "%s: cannot create the cache's temporary file: %s", dir,
					strerror(errno));
			free(tmp);
			return -1;
		}
	}
	uint8_t head[VC_HEAD];
	memset(head, 0, sizeof head); /* no magic until the file is complete */
	if (pwrite_all(fd, head, sizeof head, 0) != 0 || pwrite_all(fd, key, klen, VC_HEAD) != 0) {
		snprintf(err, errlen, "%s: cannot write the cache's temporary file: %s", dir,
				strerror(errno));
		close(fd);
		if (tmp != NULL)
			unlink(tmp);
		free(tmp);
		return -1;
	}
	vd->spill_fd = fd;
	vd->spill_tmp = tmp;
	vd->spill_base = vd->spill_off = VC_HEAD + klen;
	return 0;
}

/* The metadata written through a buffer, its checksum made as it goes. */
struct wr {
	int fd;
	uint64_t off;   /* where the buffer goes */
	uint8_t *buf;
	size_t n;
	uint64_t hash, len;
	int failed;
};

static void wr_flush(struct wr *w)
{
	if (w->n == 0 || w->failed)
		return;
	w->hash = vc_hash(w->hash, w->buf, w->n);
	if (pwrite_all(w->fd, w->buf, w->n, w->off) != 0)
		w->failed = errno != 0 ? errno : EIO;
	w->off += w->n;
	w->len += w->n;
	w->n = 0;
}

static void wr_bytes(struct wr *w, const void *p, size_t n)
{
	const uint8_t *s = p;
	while (n > 0) {
		size_t k = VC_BUF - w->n < n ? VC_BUF - w->n : n;
		memcpy(w->buf + w->n, s, k);
		w->n += k;
		s += k;
		n -= k;
		if (w->n == VC_BUF)
			wr_flush(w);
	}
}

static void wr_u(struct wr *w, uint64_t v)
{
	wr_bytes(w, &v, sizeof v);
}

static void wr_i(struct wr *w, int64_t v)
{
	wr_bytes(w, &v, sizeof v);
}

static void wr_str(struct wr *w, const char *s)
{
	size_t n = strlen(s);
	wr_u(w, n);
	wr_bytes(w, s, n);
}

static size_t kind_index(const char *k)
{
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		if (strcmp(k, kinds[i]) == 0)
			return i;
	return 0;
}

/* The metadata (the order vc_read_meta reads). */
static void vc_write_meta(struct wr *w, const struct view_data *vd)
{
	wr_u(w, vd->nrows);
	wr_u(w, vd->nchans);
	wr_i(w, vd->duration);
	wr_u(w, vd->nintervals);
	wr_u(w, vd->ndropped);
	for (size_t i = 0; i < vd->nrows; i++) {
		const struct view_row *r = &vd->rows[i];
		wr_u(w, (uint64_t) r->view);
		wr_u(w, r->index);
		wr_i(w, r->pid);
		wr_str(w, r->label);
		wr_str(w, r->loom);
	}
	for (size_t i = 0; i < vd->nchans; i++) {
		const struct view_chan *c = &vd->chans[i];
		wr_str(w, c->name);
		wr_str(w, c->model);
		wr_u(w, kind_index(c->kind));
		wr_u(w, c->scope);
		wr_u(w, (uint64_t) c->counter);
		wr_u(w, c->nlabels);
		for (size_t k = 0; k < c->nlabels; k++) {
			wr_i(w, c->lvalue[k]);
			wr_str(w, c->llabel[k]);
		}
	}
	for (size_t i = 0; i < vd->nrows * vd->nchans; i++) {
		const struct view_track *t = &vd->tracks[i];
		wr_u(w, t->n);
		wr_u(w, t->count);
		wr_u(w, t->jlen);
		wr_i(w, t->lend);
		wr_i(w, t->lvalue);
		wr_u(w, t->sp != NULL);
		wr_i(w, t->kmin);
		wr_i(w, t->nlev);
		if (t->nlev > 0) {
			for (int j = 0; j <= t->nlev; j++)
				wr_u(w, t->off[j]);
			wr_bytes(w, t->pyr, t->off[t->nlev] * sizeof *t->pyr);
		}
		if (t->sp != NULL) {
			/* the chunk table (last end, base, pos) and the samples
			 * (start, end, value, index): 64-bit words, as in memory */
			wr_u(w, t->nchunks);
			wr_bytes(w, t->chunks, t->nchunks * sizeof *t->chunks);
			wr_u(w, t->nspilled);
			wr_u(w, t->nsmp);
			wr_u(w, t->slast);
			wr_i(w, t->sk);
			wr_bytes(w, t->smp, t->nsmp * sizeof *t->smp);
		}
		/* the kept intervals as the temporary file's sub-blocks: each
		 * VIEW_SPILL_SUB (the last fewer) as its length (2 bytes) and
		 * its bytes (view_sub_encode: about 3 bytes an interval) */
		for (size_t k = 0; k < t->n; k += VIEW_SPILL_SUB) {
			uint8_t b[VIEW_SPILL_SUB * VIEW_SPILL_IV_MAX];
			size_t m = t->n - k < VIEW_SPILL_SUB ? t->n - k : VIEW_SPILL_SUB;
			uint16_t len = (uint16_t) view_sub_encode(b, t->iv + k, m);
			wr_bytes(w, &len, sizeof len);
			wr_bytes(w, b, len);
		}
	}
	wr_u(w, VC_END);
}

/* What is at path: 0 (nothing), 1 (a regular file), -1 (something else:
 * kind set), -2 (cannot tell: errno). */
static int what_is(const char *path, const char **kind)
{
	struct stat sb;
	if (lstat(path, &sb) != 0)
		return errno == ENOENT ? 0 : -2;
	if (S_ISREG(sb.st_mode))
		return 1;
	*kind = S_ISLNK(sb.st_mode) ? "a symbolic link" : S_ISDIR(sb.st_mode) ? "a directory" :
		S_ISFIFO(sb.st_mode) ? "a FIFO" : S_ISCHR(sb.st_mode) ? "a character device" :
		S_ISBLK(sb.st_mode) ? "a block device" : S_ISSOCK(sb.st_mode) ? "a socket" :
		"not a regular file";
	return -1;
}

int view_cache_refused(const char *path, char *err, size_t errlen)
{
	const char *kind = NULL;
	int r = what_is(path, &kind);
	if (r == -2) {
		snprintf(err, errlen, "%s: cannot check the file to replace: %s", path,
				strerror(errno));
		return -1;
	}
	if (r == -1) {
		snprintf(err, errlen, "%s: is %s: not replaced (weft replaces only regular files)",
				path, kind);
		return -1;
	}
	return 0;
}

int view_cache_commit(struct view_data *vd, const char *path, char *err, size_t errlen)
{
	struct wr w = { vd->spill_fd, vd->spill_off, malloc(VC_BUF), 0, VC_HASH0, 0, 0 };
	if (w.buf == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	vc_write_meta(&w, vd);
	wr_flush(&w);
	free(w.buf);
	uint8_t head[VIEW_CACHE_HEAD];
	view_cache_head(head, (uint32_t) (vd->spill_base - VC_HEAD), vd->spill_off, w.len, w.hash);
	if (w.failed != 0 || pwrite_all(vd->spill_fd, head, sizeof head, 0) != 0
			|| fdatasync(vd->spill_fd) != 0) {
		snprintf(err, errlen, "%s: cannot write the cache: %s", path,
				strerror(w.failed != 0 ? w.failed : errno));
		return -1;
	}
	/* the file is read from now on, never written */
	vd->spill_ro = 1;
	char *tmp = vd->spill_tmp;
	char *link = NULL;
	if (tmp == NULL) {
		/* O_TMPFILE's: linked under a name of its own, then renamed */
		size_t n = strlen(path) + 64;
		link = malloc(n);
		if (link == NULL) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		char fdp[64];
		snprintf(fdp, sizeof fdp, "/proc/self/fd/%d", vd->spill_fd);
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		int r = -1;
		for (unsigned k = 0; k < 8 && r != 0; k++) {
			snprintf(link, n, "%s.%ld-%lx-%u", path, (long) getpid(),
					(unsigned long) ts.tv_nsec, k);
			r = linkat(AT_FDCWD, fdp, AT_FDCWD, link, AT_SYMLINK_FOLLOW);
			if (r != 0 && errno != EEXIST)
				break;
		}
		if (r != 0) {
			snprintf(err, errlen, "%s: cannot write the cache: %s", path, strerror(errno));
			free(link);
			return -1;
		}
		tmp = link;
	}
	/* the name may have become a link meanwhile: checked again */
	int refused = view_cache_refused(path, err, errlen) != 0;
	if (refused || rename(tmp, path) != 0) {
		if (!refused)
			snprintf(err, errlen, "%s: cannot write the cache: %s", path, strerror(errno));
		unlink(tmp);
		free(link);
		free(vd->spill_tmp);
		vd->spill_tmp = NULL;
		return -1;
	}
	free(link);
	free(vd->spill_tmp);
	vd->spill_tmp = NULL;
	return 0;
}

/* ---- reading ---- */

/* The metadata read through a buffer, every field checked: the first
 * error (its byte in the file, what was wrong) stops it. */
struct rd {
	int fd;
	uint64_t pos, end;  /* the next byte in the file, the metadata's end */
	uint64_t boff;      /* the file's offset of buf[0] */
	uint8_t *buf;
	size_t bn, bi;
	uint64_t hash;
	char *err;
	size_t errlen;
	int failed;
};

static int rd_fail(struct rd *r, uint64_t at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int rd_fail(struct rd *r, uint64_t at, const char *fmt, ...)
{
	if (r->failed)
		return -1;
	r->failed = 1;
	int n = snprintf(r->err, r->errlen, "byte %" PRIu64 ": ", at);
	if (n > 0 && (size_t) n < r->errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(r->err + n, r->errlen - (size_t) n, fmt, ap);
		va_end(ap);
	}
	return -1;
}

static uint64_t rd_left(const struct rd *r)
{
	return r->end - r->pos;
}

static int rd_bytes(struct rd *r, void *p, size_t n, const char *what)
{
	if (r->failed)
		return -1;
	if (n > rd_left(r))
		return rd_fail(r, r->pos, "the metadata ends in %s (the file cut short or "
				"changed)", what);
	uint8_t *d = p;
	while (n > 0) {
		if (r->bi == r->bn) {
			uint64_t at = r->boff + r->bn;
			size_t want = r->end - at < VC_BUF ? (size_t) (r->end - at) : VC_BUF;
			size_t got = 0;
			while (got < want) {
				ssize_t k = pread(r->fd, r->buf + got, want - got, (off_t) (at + got));
				if (k < 0 && errno == EINTR)
					continue;
				if (k <= 0)
					return rd_fail(r, at + got, "cannot read: %s", k < 0 ?
							strerror(errno) : "the file ends there");
				got += (size_t) k;
			}
			r->hash = vc_hash(r->hash, r->buf, want);
			r->boff = at;
			r->bn = want;
			r->bi = 0;
		}
		size_t k = r->bn - r->bi < n ? r->bn - r->bi : n;
		memcpy(d, r->buf + r->bi, k);
		r->bi += k;
		r->pos += k;
		d += k;
		n -= k;
	}
	return 0;
}

static int rd_u(struct rd *r, uint64_t *v, const char *what)
{
	return rd_bytes(r, v, sizeof *v, what);
}

static int rd_i(struct rd *r, int64_t *v, const char *what)
{
	return rd_bytes(r, v, sizeof *v, what);
}

/* A count of things of at least each bytes in what is left (and at most
 * max): 0, or -1. */
static int rd_count(struct rd *r, uint64_t *n, uint64_t each, uint64_t max, const char *what)
{
	uint64_t at = r->pos;
	if (rd_u(r, n, what) != 0)
		return -1;
	if (*n > max || (each > 0 && *n > rd_left(r) / each))
		return rd_fail(r, at, "%s %" PRIu64 ": more than the file holds", what, *n);
	return 0;
}

static char *rd_str(struct rd *r, const char *what)
{
	uint64_t n;
	if (rd_count(r, &n, 1, VC_STR_MAX, what) != 0)
		return NULL;
	char *s = malloc((size_t) n + 1);
	if (s == NULL) {
		rd_fail(r, r->pos, "out of memory");
		return NULL;
	}
	if (rd_bytes(r, s, (size_t) n, what) != 0) {
		free(s);
		return NULL;
	}
	s[n] = '\0';
	return s;
}

/* A track's part of the metadata (vc_write_meta's order). */
static int rd_track(struct rd *r, struct view_data *vd, struct view_track *t, uint64_t moff)
{
	uint64_t n, spilled;
	int64_t kmin, nlev;
	uint64_t at = r->pos;
	/* a kept interval takes at least 2 bytes (a value's change, a length) */
	if (rd_count(r, &n, 2, SIZE_MAX / sizeof(struct view_iv), "a track's intervals") != 0 || rd_u(r, &t->count, "a track") != 0
			|| rd_u(r, &t->jlen, "a track") != 0 || rd_i(r, &t->lend, "a track") != 0
			|| rd_i(r, &t->lvalue, "a track") != 0 || rd_u(r, &spilled, "a track") != 0
			|| rd_i(r, &kmin, "a track") != 0 || rd_i(r, &nlev, "a track") != 0)
		return -1;
	if (spilled > 1 || (spilled && n > 0) || t->count < n)
		return rd_fail(r, at, "a track's counts do not add up");
	if (kmin < 0 || kmin > 62 || nlev < 0 || nlev > 64 || (t->count > 0 && vd->duration > 0
			&& nlev == 0))
		return rd_fail(r, at, "a track's pyramid of %" PRId64 " levels from 2^%" PRId64
				" ns", nlev, kmin);
	t->kmin = (int) kmin;
	t->nlev = (int) nlev;
	if (nlev > 0) {
		at = r->pos;
		if ((uint64_t) nlev + 1 > rd_left(r) / sizeof(uint64_t))
			return rd_fail(r, at, "a pyramid's levels: more than the file holds");
		t->off = malloc(((size_t) nlev + 1) * sizeof *t->off);
		if (t->off == NULL)
			return rd_fail(r, at, "out of memory");
		for (int64_t j = 0; j <= nlev; j++) {
			uint64_t o;
			if (rd_u(r, &o, "a pyramid") != 0)
				return -1;
			if ((j == 0 && o != 0) || (j > 0 && o < t->off[j - 1])
					|| o > rd_left(r) / sizeof(int64_t))
				return rd_fail(r, at, "a pyramid's levels out of order or past the "
						"file's end");
			t->off[j] = (size_t) o;
		}
		size_t np = t->off[nlev];
		t->pyr = malloc((np + 1) * sizeof *t->pyr);
		if (t->pyr == NULL)
			return rd_fail(r, r->pos, "out of memory");
		if (rd_bytes(r, t->pyr, np * sizeof *t->pyr, "a pyramid") != 0)
			return -1;
	}
	if (spilled) {
		t->sp = view_spyr_stub();
		if (t->sp == NULL)
			return rd_fail(r, r->pos, "out of memory");
		uint64_t nc;
		at = r->pos;
		if (rd_count(r, &nc, 3 * sizeof(uint64_t), SIZE_MAX / sizeof *t->chunks,
				"a chunk table of") != 0)
			return -1;
		t->chunks = malloc(((size_t) nc + 1) * sizeof *t->chunks);
		if (t->chunks == NULL)
			return rd_fail(r, at, "out of memory");
		t->nchunks = t->ccap = (size_t) nc;
		uint64_t table = r->pos;
		if (rd_bytes(r, t->chunks, (size_t) nc * sizeof *t->chunks, "a chunk table") != 0)
			return -1;
		for (size_t k = 0; k < nc; k++) {
			struct view_spill_chunk *c = &t->chunks[k];
			at = table + k * sizeof *c;
			uint64_t off = c->pos >> 16, len = c->pos & 0xffff;
			if (off < vd->spill_base || len < VIEW_SPILL_DIR_BYTES
					|| len > VIEW_SPILL_CHUNK_MAX || off > moff || len > moff - off)
				return rd_fail(r, at, "chunk %zu: %" PRIu64 " bytes at byte %" PRIu64
						", outside the chunks (bytes %" PRIu64 " to %" PRIu64 ")",
						k, len, off, vd->spill_base, moff);
			if (k == 0 ? c->base != 0 : c->base <= t->chunks[k - 1].base
					|| c->base - t->chunks[k - 1].base > VIEW_SPILL_CHUNK
					|| c->last_end < t->chunks[k - 1].last_end)
				return rd_fail(r, at, "chunk %zu out of order", k);
		}
		at = r->pos;
		if (rd_u(r, &t->nspilled, "a track") != 0)
			return -1;
		if (nc == 0 ? t->nspilled != 0 : t->nspilled <= t->chunks[nc - 1].base
				|| t->nspilled - t->chunks[nc - 1].base > VIEW_SPILL_CHUNK)
			return rd_fail(r, at, "a track's spilled intervals (%" PRIu64 ") do not add "
					"up with its chunks", t->nspilled);
		uint64_t nsmp, slast;
		int64_t sk;
		at = r->pos;
		if (rd_count(r, &nsmp, 4 * sizeof(int64_t), VIEW_SPILL_SAMPLES, "samples") != 0
				|| rd_u(r, &slast, "a track") != 0 || rd_i(r, &sk, "a track") != 0)
			return -1;
		if (slast > nsmp || sk < 0 || sk > 62 || (nsmp > 0 && t->nspilled == 0))
			return rd_fail(r, at, "a track's samples do not add up");
		t->nsmp = (size_t) nsmp;
		t->slast = (size_t) slast;
		t->sk = (int) sk;
		if (nsmp > 0) {
			t->smp = malloc((size_t) nsmp * sizeof *t->smp);
			if (t->smp == NULL)
				return rd_fail(r, at, "out of memory");
		}
		uint64_t smp0 = r->pos;
		if (rd_bytes(r, t->smp, (size_t) nsmp * sizeof *t->smp, "the samples") != 0)
			return -1;
		for (size_t k = 0; k < nsmp; k++) {
			struct view_spill_sample *p = &t->smp[k];
			at = smp0 + k * sizeof *p;
			if (p->start < 0 || p->end <= p->start || p->index >= t->nspilled
					|| (k > 0 && p->index < t->smp[k - 1].index))
				return rd_fail(r, at, "sample %zu out of order", k);
		}
	}
	if (n > 0) {
		t->iv = malloc((size_t) n * sizeof *t->iv);
		if (t->iv == NULL)
			return rd_fail(r, r->pos, "out of memory");
		t->n = t->cap = (size_t) n;
		for (size_t k = 0; k < n; k += VIEW_SPILL_SUB) {
			uint8_t b[VIEW_SPILL_SUB * VIEW_SPILL_IV_MAX];
			size_t m = n - k < VIEW_SPILL_SUB ? (size_t) n - k : VIEW_SPILL_SUB;
			uint16_t len;
			at = r->pos;
			if (rd_bytes(r, &len, sizeof len, "the intervals") != 0)
				return -1;
			if (len == 0 || len > m * VIEW_SPILL_IV_MAX)
				return rd_fail(r, at, "intervals %zu to %zu: %u bytes", k, k + m - 1,
						(unsigned) len);
			if (rd_bytes(r, b, len, "the intervals") != 0)
				return -1;
			if (view_sub_decode(b, b + len, t->iv + k, m) != 0
					|| (k > 0 && t->iv[k].start < t->iv[k - 1].end))
				return rd_fail(r, at, "intervals %zu to %zu do not decode in order", k,
						k + m - 1);
		}
	}
	return 0;
}

static int rd_meta(struct rd *r, struct view_data *vd, uint64_t moff)
{
	uint64_t nrows, nchans, ndropped, at = r->pos;
	/* a row takes at least 5 words, a channel 6, a track 8 */
	if (rd_count(r, &nrows, 5 * sizeof(uint64_t), SIZE_MAX / sizeof(struct view_row) / 2,
			"rows") != 0 || rd_count(r, &nchans, 6 * sizeof(uint64_t),
			SIZE_MAX / sizeof(struct view_chan) / 2, "channels") != 0
			|| rd_i(r, &vd->duration, "the duration") != 0
			|| rd_u(r, &vd->nintervals, "the intervals") != 0
			|| rd_u(r, &ndropped, "the tracks beyond the budget") != 0)
		return -1;
	if (nchans > 0 && nrows > rd_left(r) / 8 / sizeof(uint64_t) / nchans)
		return rd_fail(r, at, "%" PRIu64 " rows of %" PRIu64 " channels: more tracks than "
				"the file holds", nrows, nchans);
	if (vd->duration < 0 || ndropped > nrows * nchans)
		return rd_fail(r, at, "the duration or the tracks beyond the budget out of range");
	vd->nrows = (size_t) nrows;
	vd->nchans = (size_t) nchans;
	vd->ndropped = (size_t) ndropped;
	vd->rows = calloc(vd->nrows + 1, sizeof *vd->rows);
	vd->chans = calloc(vd->nchans + 1, sizeof *vd->chans);
	vd->tracks = calloc(vd->nrows * vd->nchans + 1, sizeof *vd->tracks);
	if (vd->rows == NULL || vd->chans == NULL || vd->tracks == NULL)
		return rd_fail(r, at, "out of memory");
	for (size_t i = 0; i < vd->nrows; i++) {
		struct view_row *w = &vd->rows[i];
		uint64_t view, index;
		int64_t pid;
		at = r->pos;
		if (rd_u(r, &view, "a row") != 0 || rd_u(r, &index, "a row") != 0
				|| rd_i(r, &pid, "a row") != 0)
			return -1;
		if (view > 1 || index >= nrows || pid < INT32_MIN || pid > INT32_MAX)
			return rd_fail(r, at, "row %zu out of range", i);
		w->view = (int) view;
		w->index = (size_t) index;
		w->pid = (int) pid;
		if ((w->label = rd_str(r, "a row's label")) == NULL
				|| (w->loom = rd_str(r, "a row's loom")) == NULL)
			return -1;
	}
	for (size_t i = 0; i < vd->nchans; i++) {
		struct view_chan *c = &vd->chans[i];
		uint64_t kind, scope, counter, nl;
		if ((c->name = rd_str(r, "a channel's name")) == NULL
				|| (c->model = rd_str(r, "a channel's model")) == NULL)
			return -1;
		at = r->pos;
		if (rd_u(r, &kind, "a channel") != 0 || rd_u(r, &scope, "a channel") != 0
				|| rd_u(r, &counter, "a channel") != 0)
			return -1;
		if (kind >= sizeof kinds / sizeof kinds[0] || scope > 0xffff || counter > 1)
			return rd_fail(r, at, "channel %zu out of range", i);
		c->kind = kinds[kind];
		c->scope = (unsigned) scope;
		c->counter = (int) counter;
		if (rd_count(r, &nl, 2 * sizeof(uint64_t), SIZE_MAX / sizeof(char *) / 2,
				"labels") != 0)
			return -1;
		c->lvalue = malloc(((size_t) nl + 1) * sizeof *c->lvalue);
		c->llabel = calloc((size_t) nl + 1, sizeof *c->llabel);
		if (c->lvalue == NULL || c->llabel == NULL)
			return rd_fail(r, r->pos, "out of memory");
		for (size_t k = 0; k < nl; k++) {
			at = r->pos;
			if (rd_i(r, &c->lvalue[k], "a label") != 0)
				return -1;
			if (k > 0 && c->lvalue[k] <= c->lvalue[k - 1])
				return rd_fail(r, at, "labels out of order");
			if ((c->llabel[k] = rd_str(r, "a label")) == NULL)
				return -1;
			c->nlabels = k + 1;
		}
	}
	for (size_t i = 0; i < vd->nrows * vd->nchans; i++)
		if (rd_track(r, vd, &vd->tracks[i], moff) != 0)
			return -1;
	uint64_t endw;
	at = r->pos;
	if (rd_u(r, &endw, "its end mark") != 0)
		return -1;
	if (endw != VC_END || rd_left(r) != 0)
		return rd_fail(r, at, "the metadata's end mark not where it ends");
	return 0;
}

int view_cache_load(const char *path, const char *key, struct view_data **out, char *err,
		size_t errlen)
{
	*out = NULL;
	err[0] = '\0';
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return 1;
	if (fd < 0) {
		snprintf(err, errlen, "byte 0: %s", strerror(errno));
		return -1;
	}
	return view_cache_load_fd(fd, key, out, err, errlen);
}

int view_cache_load_fd(int fd, const char *key, struct view_data **out, char *err,
		size_t errlen)
{
	*out = NULL;
	err[0] = '\0';
	struct stat sb;
	int st = fstat(fd, &sb);
	if (st != 0 || !S_ISREG(sb.st_mode)) {
		snprintf(err, errlen, "byte 0: %s", st != 0 ? strerror(errno) : "not a regular file");
		close(fd);
		return -1;
	}
	uint64_t size = (uint64_t) sb.st_size;
	struct rd r;
	memset(&r, 0, sizeof r);
	r.fd = fd;
	r.err = err;
	r.errlen = errlen;
	uint8_t head[VC_HEAD];
	ssize_t got = size >= VC_HEAD ? pread(fd, head, sizeof head, 0) : 0;
	uint32_t ver, klen;
	uint64_t moff, mlen, sum, hsize;
	if (size < VC_HEAD || got != VC_HEAD) {
		rd_fail(&r, size < VC_HEAD ? size : 0, "the file ends before its header's %d bytes",
				VC_HEAD);
		close(fd);
		return -1;
	}
	memcpy(&ver, head + 8, 4);
	memcpy(&klen, head + 12, 4);
	memcpy(&moff, head + 16, 8);
	memcpy(&mlen, head + 24, 8);
	memcpy(&sum, head + 32, 8);
	memcpy(&hsize, head + 40, 8);
	if (memcmp(head, VC_MAGIC, 8) != 0)
		rd_fail(&r, 0, "not a weft view cache (its magic is wrong)");
	else if (ver != VC_VERSION)
		rd_fail(&r, 8, "format version %" PRIu32 ", not %u", ver, VC_VERSION);
	else if (klen > VC_KEY_MAX || klen > size - VC_HEAD)
		rd_fail(&r, 12, "a key of %" PRIu32 " bytes past the file's end (%" PRIu64 " bytes)",
				klen, size);
	if (r.failed) {
		close(fd);
		return -1;
	}
	char *k = malloc((size_t) klen + 1);
	if (k == NULL || pread(fd, k, klen, VC_HEAD) != (ssize_t) klen) {
		rd_fail(&r, VC_HEAD, "cannot read the key");
		free(k);
		close(fd);
		return -1;
	}
	k[klen] = '\0';
	int same = strlen(key) == klen && memcmp(k, key, klen) == 0;
	free(k);
	if (!same) {
		close(fd);
		return 1;
	}
	if (hsize != size)
		rd_fail(&r, 40, "the header says %" PRIu64 " bytes, the file holds %" PRIu64
				"%s", hsize, size, hsize > size ? " (cut short)" : "");
	else if (moff < VC_HEAD + (uint64_t) klen || moff > size)
		rd_fail(&r, 16, "the metadata's offset %" PRIu64 " outside the file (%" PRIu64
				" bytes)", moff, size);
	else if (mlen != size - moff)
		rd_fail(&r, 24, "the metadata's length %" PRIu64 " does not end the file", mlen);
	if (r.failed) {
		close(fd);
		return -1;
	}
	struct view_data *vd = view_data_new();
	r.buf = malloc(VC_BUF);
	if (vd == NULL || r.buf == NULL) {
		snprintf(err, errlen, "byte %" PRIu64 ": out of memory", moff);
		view_data_free(vd);
		free(r.buf);
		close(fd);
		return -1;
	}
	vd->spill_fd = fd;
	vd->spill_ro = 1;
	vd->spill_base = VC_HEAD + (uint64_t) klen;
	vd->spill_off = moff;
	r.pos = r.boff = moff;
	r.end = size;
	r.hash = VC_HASH0;
	int bad = rd_meta(&r, vd, moff) != 0;
	if (!bad && r.hash != sum)
		bad = rd_fail(&r, 32, "the metadata's checksum does not match (the file was "
				"changed)") != 0;
	free(r.buf);
	if (bad) {
		view_data_free(vd);
		return -1;
	}
	vd->complete = 1;
	*out = vd;
	return 0;
}
