/* SPDX-License-Identifier: MIT */
/*
 * serve.c - `weft view --serve` (view.h): the page and its tiles over HTTP
 * on the loopback only, one request per connection, from the collected
 * timelines. The API: GET / (the page), GET /tile (a row range's intervals
 * of one channel in one time tile of one level), GET /at (the interval of
 * a row at a time). Any other path is 404, any other method 405, a bad
 * parameter 400; the server answers nothing else. Before any of that, a
 * request whose Host or Origin is not this server's, or a browser's from
 * another site's page, is refused (403: DNS rebinding, docs/view.md); the
 * connections are served by one poll loop, each with its deadline, so an
 * idle or slow client holds none of the others. The intervals of the
 * tracks beyond the budget are read from the collection's temporary file
 * (view_data_spill), a chunk at a time through a small cache.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "view_internal.h"
#include "view_json.h"

/* A tile with more intervals per row than this: one per bucket (the one at
 * its start), as a pixel shows one. */
#define TILE_MAX_EXACT (4 * VIEW_TILE_BUCKETS)

/* The connections (one request each), served by one poll loop so that none
 * holds the others: at most CONN_MAX open (beyond, the oldest still reading
 * is dropped), each with its deadline. A request's line and header section
 * fit in REQ_MAX bytes (else 414 or 431) and arrive within HEADER_MS of
 * their first byte (else 408); a connection that sends nothing is closed
 * after IDLE_MS (a browser's spare one: Chromium drops its own after 10 s);
 * a reply that makes no progress for SEND_MS is given up. Once sent, what
 * the client still sends (a request body never read) is drained for at
 * most DRAIN_MS and DRAIN_MAX bytes, since a close with unread data resets
 * the connection and the client may lose the reply (seen with a POST's
 * body under load). */
#define CONN_MAX 32
#define REQ_MAX 8192
#define HEADER_MS 2000
#define IDLE_MS 10000
#define SEND_MS 10000
#define DRAIN_MS 200
#define DRAIN_MAX 65536

enum conn_state { C_FREE, C_READ, C_WRITE, C_DRAIN };

struct conn {
	enum conn_state st;
	int fd;
	uint64_t seq;     /* the order of its accept: the oldest dropped first */
	int64_t deadline; /* ms */
	size_t n;         /* bytes in in[] (C_READ), drained (C_DRAIN) */
	char head[768];   /* the reply's status line and header */
	size_t hlen;
	char text[192];   /* a short text body */
	const char *body;
	char *owned;      /* body, when it is to be freed */
	size_t blen, off; /* off: the bytes sent, of head then body */
	char in[REQ_MAX];
};

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Every reply: its length, no caching, no sniffing, no use by another
 * origin's page (CORP), and a policy that lets the page request nothing
 * but this server, nor be framed. */
static void reply(struct conn *c, int code, const char *what, const char *type,
		const char *body, size_t len, char *owned)
{
	int n = snprintf(c->head, sizeof c->head, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n"
			"Content-Length: %zu\r\nCache-Control: no-store\r\n"
			"X-Content-Type-Options: nosniff\r\n"
			"Cross-Origin-Resource-Policy: same-origin\r\n"
			"Content-Security-Policy: default-src 'none'; script-src 'unsafe-inline'; "
			"style-src 'unsafe-inline'; img-src data:; connect-src 'self'; "
			"base-uri 'none'; form-action 'none'; frame-ancestors 'none'\r\n"
			"Connection: close\r\n\r\n", code, what, type, len);
	c->hlen = n > 0 && (size_t) n < sizeof c->head ? (size_t) n : 0;
	c->body = body;
	c->blen = len;
	free(c->owned);
	c->owned = owned;
	c->off = 0;
	c->st = C_WRITE;
}

static void reply_text(struct conn *c, int code, const char *what, const char *msg)
{
	snprintf(c->text, sizeof c->text, "%s", msg);
	reply(c, code, what, "text/plain; charset=utf-8", c->text, strlen(c->text), NULL);
}

/* The value of key in the query q ("a=1&b=2") as an int64: 0, or -1. */
static int param(const char *q, const char *key, int64_t *v)
{
	size_t kl = strlen(key);
	for (const char *p = q; p != NULL && *p != '\0';) {
		if (strncmp(p, key, kl) == 0 && p[kl] == '=') {
			char *end;
			errno = 0;
			long long x = strtoll(p + kl + 1, &end, 10);
			if (errno != 0 || end == p + kl + 1 || (*end != '&' && *end != '\0'))
				return -1;
			*v = x;
			return 0;
		}
		p = strchr(p, '&');
		if (p != NULL)
			p++;
	}
	return -1;
}

/* A JSON reply built in memory: reply_json_open gives its writer (NULL: out
 * of memory), reply_json_close the text (its length in the *len given to
 * the open), or NULL when it could not be written. */
struct reply_json {
	FILE *f;
	char *buf;
	struct vj *jp;
};

static struct vj *reply_json_open(struct reply_json *rj, size_t *len)
{
	rj->buf = NULL;
	rj->f = open_memstream(&rj->buf, len);
	if (rj->f == NULL)
		return NULL;
	rj->jp = malloc(sizeof *rj->jp);
	if (rj->jp == NULL) {
		fclose(rj->f);
		free(rj->buf);
		return NULL;
	}
	vj_init(rj->jp, rj->f);
	return rj->jp;
}

static char *reply_json_close(struct reply_json *rj)
{
	int failed = vj_flush(rj->jp) != 0;
	free(rj->jp);
	if (fclose(rj->f) != 0 || failed) {
		free(rj->buf);
		return NULL;
	}
	return rj->buf;
}

/* The server's chunks of spilled tracks read last (view_data_spill): a
 * small cache, the least recently used replaced. */
#define CACHE_SLOTS 32

struct chunk_slot {
	const struct view_track *t; /* NULL: empty */
	size_t k, n;
	uint64_t used;
	struct view_iv iv[VIEW_SPILL_CHUNK];
};

/* A byte range of the temporary file a tile will read (ra_row). */
struct ra_range {
	uint64_t off, len;
};

/* Ranges gathered before they are sorted, merged and handed to the kernel
 * (256 KiB): a tile row touches at most VIEW_TILE_BUCKETS + 2 chunks. */
#define RA_MAX 16384

struct srv {
	const struct view_data *vd;
	struct chunk_slot *slots; /* CACHE_SLOTS */
	uint64_t clock;
	int failed;               /* a read of the file failed */
	int evict;                /* WEFT_VIEW_EVICT: every lookup read from the disk */
	struct ra_range *ra;      /* the read-ahead's ranges (RA_MAX; NULL: none) */
	size_t nra;
	/* the ranges asked for in this tile, sorted once asked (RA_MAX;
	 * beyond, not checked), and the reads of the file in tiles and those
	 * of them outside these ranges (said under WEFT_EMU_TIMING at the
	 * end: the read-ahead covers what the tiles read) */
	struct ra_range *adv;
	size_t nadv;
	int in_tile, adv_over;
	uint64_t reads, unasked;
	/* the directory and the sub-block read last (a sample tile's
	 * buckets fall in one sub-block or chunk again and again) */
	const struct view_track *ft, *st;
	size_t fk, sk, sj, sm;
	struct view_spill_dir dir;
	struct view_iv sub[VIEW_SPILL_SUB];
};

/* A read of chunk k of spilled t (whole or in part) by a lookup: counted
 * in a tile, with whether the read-ahead asked for its bytes. */
static void ra_read(struct srv *S, const struct view_track *t, size_t k)
{
	if (!S->in_tile)
		return;
	S->reads++;
	if (S->adv_over)
		return;
	uint64_t off = t->chunks[k].pos >> 16, end = off + (t->chunks[k].pos & 0xffff);
	size_t lo = 0, hi = S->nadv; /* the last range starting at off or before */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (S->adv[mid].off <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || S->adv[lo - 1].off + S->adv[lo - 1].len < end)
		S->unasked++;
}

/* In chunk k of a spilled track, not cached, the first interval ending
 * after time (one does: the chunk's last end is after it), from its
 * directory and one sub-block: its index in the chunk and it; 0, or -1
 * (a read error). */
static int spill_find(struct srv *S, const struct view_track *t, size_t k, int64_t time,
		size_t *x, struct view_iv *v)
{
	if (S->ft != t || S->fk != k) {
		S->ft = NULL;
		ra_read(S, t, k);
		if (view_spill_dir_read(S->vd, t, k, &S->dir) != 0)
			return -1;
		S->ft = t;
		S->fk = k;
	}
	size_t j = 0;
	while (j + 1 < VIEW_SPILL_NSUB && S->dir.fence[j] <= time)
		j++;
	if (S->st != t || S->sk != k || S->sj != j) {
		S->st = NULL;
		ra_read(S, t, k);
		if (view_spill_sub_read(S->vd, t, k, &S->dir, j, S->sub, &S->sm) != 0)
			return -1;
		S->st = t;
		S->sk = k;
		S->sj = j;
	}
	size_t in = view_iv_find(S->sub, S->sm, time);
	if (in == S->sm)
		return -1; /* not there: the file is not what was written */
	*x = j * VIEW_SPILL_SUB + in;
	*v = S->sub[in];
	return 0;
}

/* The intervals of t as one array, wherever they are: kept in memory, or
 * in the chunks of the temporary file. */
static uint64_t track_n(const struct view_track *t)
{
	return t->sp != NULL ? t->nspilled : t->n;
}

/* Chunk k of t, if cached. */
static const struct chunk_slot *cached(struct srv *S, const struct view_track *t, size_t k)
{
	for (size_t i = 0; i < CACHE_SLOTS; i++) {
		struct chunk_slot *c = &S->slots[i];
		if (c->t == t && c->k == k) {
			c->used = ++S->clock;
			return c;
		}
	}
	return NULL;
}

/* Chunk k of t, read into the cache if need be (NULL: a read error). */
static const struct chunk_slot *chunk(struct srv *S, const struct view_track *t, size_t k)
{
	const struct chunk_slot *hit = cached(S, t, k);
	if (hit != NULL)
		return hit;
	struct chunk_slot *old = &S->slots[0];
	for (size_t i = 1; i < CACHE_SLOTS; i++)
		if (S->slots[i].used < old->used)
			old = &S->slots[i];
	old->t = NULL;
	ra_read(S, t, k);
	if (view_spill_read(S->vd, t, k, old->iv, &old->n) != 0) {
		S->failed = 1;
		return NULL;
	}
	old->t = t;
	old->k = k;
	old->used = ++S->clock;
	return old;
}

/* The chunk holding interval x of a spilled track. */
static size_t chunk_of(const struct view_track *t, uint64_t x)
{
	size_t lo = 0, hi = t->nchunks;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->chunks[mid].base <= x)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* Interval x of t (x < track_n(t)); 0, or -1 (a read error). */
static int track_get(struct srv *S, const struct view_track *t, uint64_t x, struct view_iv *v)
{
	if (t->sp == NULL) {
		*v = t->iv[x];
		return 0;
	}
	size_t k = chunk_of(t, x);
	const struct chunk_slot *c = chunk(S, t, k);
	if (c == NULL || x - t->chunks[k].base >= c->n)
		return -1;
	*v = c->iv[x - t->chunks[k].base];
	return 0;
}

/* Whether track_find answers time from t's samples (reading nothing). */
static int at_sample(const struct view_track *t, int64_t time)
{
	return t->smp != NULL && time >= 0 && (time & (((int64_t) 1 << t->sk) - 1)) == 0;
}

/* The first chunk of spilled t whose last end is after time (nchunks:
 * none), where the first interval ending after time is. */
static size_t chunk_at(const struct view_track *t, int64_t time)
{
	size_t lo = 0, hi = t->nchunks;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->chunks[mid].last_end <= time)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The first interval of t ending after time (track_n when none), and it
 * in *v; -1 on a read error. A chunk not cached is not read whole: a
 * sample tile looks up 1024 times in as many chunks. */
static int track_find(struct srv *S, const struct view_track *t, int64_t time, uint64_t *x,
		struct view_iv *v)
{
	if (t->sp == NULL) {
		*x = view_track_find(t, time);
		if (*x < t->n)
			*v = t->iv[*x];
		return 0;
	}
	if (at_sample(t, time)) {
		/* a sampled time: nothing to read */
		uint64_t i = (uint64_t) time >> t->sk;
		if (i >= t->nsmp) {
			*x = t->nspilled; /* after the last end */
		} else {
			const struct view_spill_sample *p = &t->smp[i];
			*x = p->index;
			*v = (struct view_iv) { p->start, p->end, p->value };
		}
		return 0;
	}
	size_t lo = chunk_at(t, time);
	if (lo == t->nchunks) {
		*x = t->nspilled;
		return 0;
	}
	const struct chunk_slot *c = cached(S, t, lo);
	size_t in;
	if (c == NULL) {
		if (spill_find(S, t, lo, time, &in, v) != 0) {
			S->failed = 1;
			return -1;
		}
	} else {
		in = view_iv_find(c->iv, c->n, time);
		if (in == c->n) {
			S->failed = 1;
			return -1;
		}
		*v = c->iv[in];
	}
	*x = t->chunks[lo].base + in;
	return 0;
}

/* The read-ahead (off with WEFT_VIEW_READAHEAD=0): before a tile's lookups,
 * the chunks of the temporary file they will read, worked out from the
 * chunk table alone, are asked of the kernel all at once (WILLNEED), so
 * that the disk reads them together rather than one blocking read after
 * the other when the file is not in the page cache (docs/view.md, "The
 * server in bounded memory"). The answers do not change: the lookups read
 * as before, and find the pages there. */

static int ra_cmp(const void *a, const void *b)
{
	const struct ra_range *x = a, *y = b;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* The ranges gathered, sorted and merged (those sharing or touching a
 * page: the kernel reads pages), asked for. */
static void ra_flush(struct srv *S)
{
	if (S->nra == 0)
		return;
	qsort(S->ra, S->nra, sizeof *S->ra, ra_cmp);
	uint64_t off = S->ra[0].off, end = off + S->ra[0].len;
	for (size_t i = 1; i <= S->nra; i++) {
		if (i < S->nra && S->ra[i].off / 4096 <= (end - 1) / 4096 + 1) {
			uint64_t e = S->ra[i].off + S->ra[i].len;
			end = e > end ? e : end;
			continue;
		}
		(void) posix_fadvise(S->vd->spill_fd, (off_t) off, (off_t) (end - off),
				POSIX_FADV_WILLNEED);
		if (S->nadv < RA_MAX)
			S->adv[S->nadv++] = (struct ra_range) { off, end - off };
		else
			S->adv_over = 1;
		if (i < S->nra) {
			off = S->ra[i].off;
			end = off + S->ra[i].len;
		}
	}
	S->nra = 0;
}

/* Chunk k of spilled t to be read, unless serve.c's cache holds it. */
static void ra_add(struct srv *S, const struct view_track *t, size_t k)
{
	for (size_t i = 0; i < CACHE_SLOTS; i++)
		if (S->slots[i].t == t && S->slots[i].k == k)
			return;
	if (S->nra == RA_MAX)
		ra_flush(S);
	S->ra[S->nra++] = (struct ra_range) { t->chunks[k].pos >> 16, t->chunks[k].pos & 0xffff };
}

/* The chunks that tile's lookups in t's row will read ([t0, t1), buckets
 * of w ns): where the intervals between the chunks of t0 and t1 may be
 * few enough for the row to be exact (TILE_MAX_EXACT), every chunk from
 * t0's to t1's, which it reads whole; else (a sampled row) the chunks of
 * t0, t1 and each bucket's start that no sample answers. */
static void ra_row(struct srv *S, const struct view_track *t, int64_t t0, int64_t t1, int64_t w)
{
	if (t->sp == NULL || t->nchunks == 0)
		return;
	size_t c0 = chunk_at(t, t0), c1 = chunk_at(t, t1);
	if (c0 == t->nchunks)
		return; /* every interval ends by t0: nothing read */
	uint64_t between = 0; /* intervals surely in the row: the chunks strictly between */
	if (c1 > c0 + 1)
		between = (c1 < t->nchunks ? t->chunks[c1].base : t->nspilled)
			- t->chunks[c0 + 1].base;
	if (between <= TILE_MAX_EXACT) {
		for (size_t k = c0; k <= c1 && k < t->nchunks; k++)
			ra_add(S, t, k);
		return;
	}
	if (c1 < t->nchunks && !at_sample(t, t1))
		ra_add(S, t, c1);
	size_t prev = SIZE_MAX;
	for (int64_t k = 0; k < VIEW_TILE_BUCKETS; k++) {
		int64_t bt = t0 + k * w;
		if (at_sample(t, bt))
			continue;
		size_t ck = chunk_at(t, bt);
		if (ck == t->nchunks)
			break;
		if (ck != prev)
			ra_add(S, t, ck);
		prev = ck;
	}
}

/* WEFT_VIEW_EVICT (a measuring aid, docs/view.md): before each request the
 * server forgets what it read (its chunk cache, the directory and the
 * sub-block read last) and drops the temporary file's pages from the page
 * cache, so that its lookups read from the disk, as when the file is
 * larger than the memory. */
static void evict(struct srv *S)
{
	for (size_t i = 0; i < CACHE_SLOTS; i++)
		S->slots[i].t = NULL;
	S->ft = NULL;
	S->st = NULL;
	if (S->vd->spill_fd >= 0)
		(void) posix_fadvise(S->vd->spill_fd, 0, 0, POSIX_FADV_DONTNEED);
}

/* An interval of a tile's row: its start after the previous one's end
 * (*prev, then its end), its length, its value; first: no comma before. */
static void tile_iv(struct vj *jp, const struct view_iv *v, int first, int64_t *prev)
{
	vj_s(jp, first ? "" : ",");
	vj_int(jp, v->start - *prev);
	vj_raw(jp, ",", 1);
	vj_int(jp, v->end - v->start);
	vj_raw(jp, ",", 1);
	vj_int(jp, v->value);
	*prev = v->end;
}

static char *tile(struct srv *S, const char *q, size_t *len)
{
	const struct view_data *vd = S->vd;
	int64_t c, r0, r1, l, i;
	if (param(q, "c", &c) || param(q, "r0", &r0) || param(q, "r1", &r1) || param(q, "l", &l)
			|| param(q, "i", &i) || c < 0 || (uint64_t) c >= vd->nchans || r0 < 0
			|| r1 < r0 || (uint64_t) r1 >= vd->nrows || l < 0 || l > 50 || i < 0
			|| i > (INT64_MAX >> (l + 11)))
		return NULL;
	int64_t w = (int64_t) 1 << l;
	int64_t t0 = i * VIEW_TILE_BUCKETS * w, t1 = t0 + VIEW_TILE_BUCKETS * w;
	struct reply_json rj;
	struct vj *jp = reply_json_open(&rj, len);
	if (jp == NULL)
		return NULL;
	vj_s(jp, "{\"c\":");
	vj_int(jp, c);
	vj_s(jp, ",\"l\":");
	vj_int(jp, l);
	vj_s(jp, ",\"i\":");
	vj_int(jp, i);
	vj_s(jp, ",\"rows\":[");
	S->nadv = 0;
	S->adv_over = 0;
	if (S->ra != NULL && vd->spill_fd >= 0) {
		for (int64_t r = r0; r <= r1; r++)
			ra_row(S, &vd->tracks[(size_t) r * vd->nchans + (size_t) c], t0, t1, w);
		ra_flush(S);
		qsort(S->adv, S->nadv, sizeof *S->adv, ra_cmp);
	}
	S->in_tile = 1;
	for (int64_t r = r0; r <= r1 && !S->failed; r++) {
		const struct view_track *t = &vd->tracks[(size_t) r * vd->nchans + (size_t) c];
		/* [a, b): the intervals ending after t0 and starting before t1
		 * (binary searches: a row may hold 10^8 intervals); b: after
		 * the one holding t1 if it starts before t1 */
		uint64_t a, b;
		struct view_iv v;
		if (track_find(S, t, t0, &a, &v) != 0 || track_find(S, t, t1, &b, &v) != 0)
			break;
		if (b < track_n(t))
			b += v.start < t1;
		vj_s(jp, r > r0 ? ",[" : "[");
		vj_int(jp, r);
		int64_t prev = 0;
		if (b - a <= TILE_MAX_EXACT) {
			vj_s(jp, ",0,[");
			for (uint64_t x = a; x < b; x++) {
				if (track_get(S, t, x, &v) != 0)
					break;
				tile_iv(jp, &v, x == a, &prev);
			}
			vj_raw(jp, "]", 1);
		} else {
			/* one interval per bucket: the one at the bucket's start,
			 * else the first in it */
			vj_s(jp, ",1,[");
			uint64_t last = UINT64_MAX; /* none yet */
			for (int64_t k = 0; k < VIEW_TILE_BUCKETS; k++) {
				uint64_t x;
				if (track_find(S, t, t0 + k * w, &x, &v) != 0)
					break;
				if (x >= track_n(t) || x == last || v.start >= t0 + (k + 1) * w)
					continue;
				tile_iv(jp, &v, last == UINT64_MAX, &prev);
				last = x;
			}
			vj_raw(jp, "]", 1);
		}
		vj_raw(jp, "]", 1);
	}
	S->in_tile = 0;
	vj_s(jp, "]}");
	char *body = reply_json_close(&rj);
	if (S->failed) {
		free(body);
		return NULL;
	}
	return body;
}

static char *at(struct srv *S, const char *q, size_t *len)
{
	const struct view_data *vd = S->vd;
	int64_t c, r, t;
	if (param(q, "c", &c) || param(q, "r", &r) || param(q, "t", &t) || c < 0
			|| (uint64_t) c >= vd->nchans || r < 0 || (uint64_t) r >= vd->nrows)
		return NULL;
	const struct view_track *tr = &vd->tracks[(size_t) r * vd->nchans + (size_t) c];
	uint64_t x;
	struct view_iv v = { 0, 0, 0 };
	if (track_find(S, tr, t, &x, &v) != 0)
		return NULL;
	struct reply_json rj;
	struct vj *jp = reply_json_open(&rj, len);
	if (jp == NULL)
		return NULL;
	if (x < track_n(tr) && v.start <= t) {
		vj_s(jp, "{\"iv\":[");
		vj_int(jp, v.start);
		vj_raw(jp, ",", 1);
		vj_int(jp, v.end);
		vj_raw(jp, ",", 1);
		vj_int(jp, v.value);
		vj_s(jp, "]}");
	} else {
		vj_s(jp, "{\"iv\":null}");
	}
	return reply_json_close(&rj);
}

/* The length of a request's line and header section at the start of buf
 * (through the empty line that ends it; lines end in LF or CRLF), 0 while
 * it is incomplete. */
static size_t header_end(const char *buf, size_t n)
{
	size_t line = 0;
	for (;;) {
		const char *lf = memchr(buf + line, '\n', n - line);
		if (lf == NULL)
			return 0;
		size_t e = (size_t) (lf - buf), len = e - line;
		if (len > 0 && buf[e - 1] == '\r')
			len--;
		if (len == 0 && line > 0)
			return e + 1;
		line = e + 1;
	}
}

/* A character of a token (a method, a header's name: RFC 9110). */
static int is_tchar(unsigned char ch)
{
	return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')
		|| (ch != '\0' && strchr("!#$%&'*+-.^_`|~", ch) != NULL);
}

/* A header the server reads: its value and how many times it was given. */
struct field {
	const char *v;
	size_t n;
	int count;
};

struct request {
	const char *method, *target; /* NUL-terminated in the connection's buffer */
	struct field host, origin, site, mode, dest;
};

static int field_is(const struct field *f, const char *s)
{
	return f->count == 1 && f->n == strlen(s) && strncasecmp(f->v, s, f->n) == 0;
}

static void field_set(struct request *rq, const char *name, size_t nl, const char *v, size_t n)
{
	static const char *const names[] = { "host", "origin", "sec-fetch-site", "sec-fetch-mode",
		"sec-fetch-dest" };
	struct field *f[] = { &rq->host, &rq->origin, &rq->site, &rq->mode, &rq->dest };
	for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
		if (nl == strlen(names[k]) && strncasecmp(name, names[k], nl) == 0) {
			f[k]->v = v;
			f[k]->n = n;
			f[k]->count++;
			return;
		}
	}
}

/* The request line and the headers of the hl bytes at the start of b (a
 * complete header section, header_end): 0, or -1 when they are not HTTP/1.x
 * (a line that is not "NAME: VALUE", a header folded, a control character).
 * The method and the target are terminated in place. */
static int parse(char *b, size_t hl, struct request *rq)
{
	const char *lf = memchr(b, '\n', hl);
	size_t e = (size_t) (lf - b), len = e;
	if (len > 0 && b[len - 1] == '\r')
		len--;
	size_t i = 0;
	while (i < len && is_tchar((unsigned char) b[i]))
		i++;
	if (i == 0 || i >= len || b[i] != ' ')
		return -1;
	b[i] = '\0';
	rq->method = b;
	size_t t = ++i;
	while (i < len && (unsigned char) b[i] > ' ' && b[i] != 0x7f)
		i++;
	if (i == t || i >= len || b[i] != ' ')
		return -1;
	b[i++] = '\0';
	rq->target = b + t;
	if (len - i != 8 || (memcmp(b + i, "HTTP/1.1", 8) != 0 && memcmp(b + i, "HTTP/1.0", 8) != 0))
		return -1;
	for (size_t line = e + 1; line < hl; line = e + 1) {
		lf = memchr(b + line, '\n', hl - line);
		e = (size_t) (lf - b);
		len = e - line;
		if (len > 0 && b[e - 1] == '\r')
			len--;
		if (len == 0)
			break;
		const char *p = b + line;
		size_t k = 0;
		while (k < len && is_tchar((unsigned char) p[k]))
			k++;
		if (k == 0 || k >= len || p[k] != ':')
			return -1;
		size_t v = k + 1, ve = len;
		while (v < ve && (p[v] == ' ' || p[v] == '\t'))
			v++;
		while (ve > v && (p[ve - 1] == ' ' || p[ve - 1] == '\t'))
			ve--;
		for (size_t x = v; x < ve; x++) {
			unsigned char ch = (unsigned char) p[x];
			if ((ch < ' ' && ch != '\t') || ch == 0x7f)
				return -1;
		}
		field_set(rq, p, k, p + v, ve - v);
	}
	return 0;
}

/* Whether v (n bytes) names this server: 127.0.0.1 or localhost (in any
 * case) with its port (left out when it is 80, as browsers do). */
static int names_me(const char *v, size_t n, int port)
{
	static const char *const hosts[] = { "127.0.0.1", "localhost" };
	char p[16];
	size_t pl = (size_t) snprintf(p, sizeof p, ":%d", port);
	for (size_t k = 0; k < 2; k++) {
		size_t hl = strlen(hosts[k]);
		if (n < hl || strncasecmp(v, hosts[k], hl) != 0)
			continue;
		if ((n == hl + pl && memcmp(v + hl, p, pl) == 0) || (n == hl && port == 80))
			return 1;
	}
	return 0;
}

/* Why the request is refused (its 403's text, in buf), or NULL: its Host
 * must name this server, exactly once (else a page whose name was made to
 * resolve to 127.0.0.1, DNS rebinding, could read the trace as its own
 * origin); an Origin, if given, must be this server's; and a browser's
 * request from another site's page (Sec-Fetch-Site) is refused unless it
 * is a navigation (a link followed: that page cannot read the reply). */
static const char *refused(const struct request *rq, int port, char *buf, size_t len)
{
	if (rq->host.count != 1 || !names_me(rq->host.v, rq->host.n, port)) {
		snprintf(buf, len, "refused: the Host header must be 127.0.0.1:%d or localhost:%d, "
				"once\n", port, port);
		return buf;
	}
	if (rq->origin.count > 1 || (rq->origin.count == 1 && (rq->origin.n < 7
			|| strncasecmp(rq->origin.v, "http://", 7) != 0
			|| !names_me(rq->origin.v + 7, rq->origin.n - 7, port))))
		return "refused: a request from another origin\n";
	if (rq->site.count > 0 && !field_is(&rq->site, "same-origin") && !field_is(&rq->site, "none")
			&& !(field_is(&rq->mode, "navigate") && field_is(&rq->dest, "document")))
		return "refused: a request from another site's page\n";
	return NULL;
}

/* The request of the hl bytes at the start of c's buffer, its reply made. */
static void handle(struct conn *c, size_t hl, struct srv *S, const char *page, size_t plen,
		int port)
{
	struct request rq;
	memset(&rq, 0, sizeof rq);
	if (parse(c->in, hl, &rq) != 0) {
		reply_text(c, 400, "Bad Request", "bad request\n");
		return;
	}
	char why[160];
	const char *no = refused(&rq, port, why, sizeof why);
	if (no != NULL) {
		reply_text(c, 403, "Forbidden", no);
		return;
	}
	if (strcmp(rq.method, "GET") != 0) {
		reply_text(c, 405, "Method Not Allowed", "only GET\n");
		return;
	}
	char *target = c->in + (rq.target - c->in);
	char *q = strchr(target, '?');
	if (q != NULL)
		*q++ = '\0';
	if (strcmp(target, "/") == 0 || strcmp(target, "/index.html") == 0) {
		reply(c, 200, "OK", "text/html; charset=utf-8", page, plen, NULL);
		return;
	}
	int is_tile = strcmp(target, "/tile") == 0, is_at = strcmp(target, "/at") == 0;
	if (!is_tile && !is_at) {
		reply_text(c, 404, "Not Found", "not found\n");
		return;
	}
	size_t len = 0;
	if (S->evict)
		evict(S);
	char *body = is_tile ? tile(S, q, &len) : at(S, q, &len);
	if (body == NULL && S->failed) {
		S->failed = 0;
		reply_text(c, 500, "Internal Server Error", "cannot read the intervals' temporary "
				"file\n");
		return;
	}
	if (body == NULL) {
		reply_text(c, 400, "Bad Request", "bad parameters\n");
		return;
	}
	reply(c, 200, "OK", "application/json", body, len, body);
}

static void conn_close(struct conn *c)
{
	close(c->fd);
	free(c->owned);
	c->owned = NULL;
	c->st = C_FREE;
}

/* Sends what it can of c's reply; once sent, its write side shut and what
 * the client still sends drained. */
static void conn_send(struct conn *c, int64_t now)
{
	while (c->off < c->hlen + c->blen) {
		struct iovec v[2];
		int nv = 0;
		if (c->off < c->hlen)
			v[nv++] = (struct iovec) { c->head + c->off, c->hlen - c->off };
		size_t bo = c->off > c->hlen ? c->off - c->hlen : 0;
		if (bo < c->blen)
			v[nv++] = (struct iovec) { (char *) c->body + bo, c->blen - bo };
		struct msghdr m;
		memset(&m, 0, sizeof m);
		m.msg_iov = v;
		m.msg_iovlen = (size_t) nv;
		ssize_t w = sendmsg(c->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (w <= 0) {
			conn_close(c);
			return;
		}
		c->off += (size_t) w;
		c->deadline = now + SEND_MS;
	}
	free(c->owned);
	c->owned = NULL;
	shutdown(c->fd, SHUT_WR);
	c->st = C_DRAIN;
	c->n = 0;
	c->deadline = now + DRAIN_MS;
}

/* What arrived on c while its request is read: the request answered once
 * its header section is whole (or over REQ_MAX: 414 or 431). */
static void conn_read(struct conn *c, int64_t now, struct srv *S, const char *page,
		size_t plen, int port)
{
	ssize_t r = recv(c->fd, c->in + c->n, REQ_MAX - c->n, MSG_DONTWAIT);
	if (r < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
		return;
	if (r < 0 || (r == 0 && c->n == 0)) {
		conn_close(c);
		return;
	}
	if (r == 0) {
		reply_text(c, 400, "Bad Request", "incomplete request\n");
	} else {
		if (c->n == 0)
			c->deadline = now + HEADER_MS;
		c->n += (size_t) r;
		size_t hl = header_end(c->in, c->n);
		if (hl > 0)
			handle(c, hl, S, page, plen, port);
		else if (c->n < REQ_MAX)
			return;
		else if (memchr(c->in, '\n', c->n) != NULL)
			reply_text(c, 431, "Request Header Fields Too Large", "request header fields "
					"too large (8 KiB at most with the request line)\n");
		else if (memchr(c->in, ' ', c->n) != NULL)
			reply_text(c, 414, "URI Too Long", "request line too long (8 KiB at most)\n");
		else
			reply_text(c, 400, "Bad Request", "bad request\n");
	}
	c->deadline = now + SEND_MS;
	conn_send(c, now);
}

/* What the client still sends once its reply is sent, read and dropped:
 * closed at its end, or past DRAIN_MAX bytes. */
static void conn_drain(struct conn *c)
{
	ssize_t r = recv(c->fd, c->in, sizeof c->in, MSG_DONTWAIT);
	if (r < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
		return;
	c->n += r > 0 ? (size_t) r : 0;
	if (r <= 0 || c->n >= DRAIN_MAX)
		conn_close(c);
}

/* c past its deadline: a request begun is answered 408, anything else
 * closed. */
static void conn_expire(struct conn *c, int64_t now)
{
	if (c->st == C_READ && c->n > 0) {
		reply_text(c, 408, "Request Timeout", "request timeout: the request's header must "
				"arrive within 2 s\n");
		c->deadline = now + SEND_MS;
		conn_send(c, now);
	} else {
		conn_close(c);
	}
}

/* The connections waiting to be accepted, each in a free slot (else in the
 * one of the oldest still reading, then draining, then sending, closed). */
static void accept_all(int s, struct conn *cs, uint64_t *seq, int64_t now)
{
	for (int k = 0; k < CONN_MAX; k++) {
		int fd = accept4(s, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			return;
		struct conn *slot = NULL;
		static const enum conn_state order[] = { C_FREE, C_READ, C_DRAIN, C_WRITE };
		for (size_t o = 0; o < 4 && slot == NULL; o++)
			for (size_t i = 0; i < CONN_MAX; i++)
				if (cs[i].st == order[o] && (slot == NULL || cs[i].seq < slot->seq))
					slot = &cs[i];
		if (slot->st != C_FREE)
			conn_close(slot);
		slot->st = C_READ;
		slot->fd = fd;
		slot->seq = ++*seq;
		slot->deadline = now + IDLE_MS;
		slot->n = 0;
		slot->owned = NULL;
	}
}

/* A server's lookup state for vd: its chunk cache, and the read-ahead's
 * ranges when ra is set. 0, or -1 (out of memory; srv_fini frees what
 * was made). */
static int srv_init(struct srv *S, const struct view_data *vd, int ra)
{
	memset(S, 0, sizeof *S);
	S->vd = vd;
	S->slots = calloc(CACHE_SLOTS, sizeof(struct chunk_slot));
	S->ra = ra ? malloc(RA_MAX * sizeof *S->ra) : NULL;
	S->adv = ra ? malloc(RA_MAX * sizeof *S->adv) : NULL;
	return S->slots == NULL || (ra && (S->ra == NULL || S->adv == NULL)) ? -1 : 0;
}

static void srv_fini(struct srv *S)
{
	free(S->ra);
	free(S->adv);
	free(S->slots);
}

/* The lookups without the socket (view_internal.h). */
struct view_lookup {
	struct srv S;
	int ra;
};

struct view_lookup *view_lookup_new(int readahead)
{
	struct view_lookup *l = calloc(1, sizeof *l);
	if (l == NULL)
		return NULL;
	l->ra = readahead;
	if (srv_init(&l->S, NULL, readahead) != 0) {
		srv_fini(&l->S);
		free(l);
		return NULL;
	}
	return l;
}

void view_lookup_reset(struct view_lookup *l, const struct view_data *vd)
{
	struct srv *S = &l->S;
	struct chunk_slot *slots = S->slots;
	struct ra_range *ra = S->ra, *adv = S->adv;
	memset(S, 0, sizeof *S);
	memset(slots, 0, CACHE_SLOTS * sizeof(struct chunk_slot));
	S->slots = slots;
	S->ra = ra;
	S->adv = adv;
	S->vd = vd;
}

void view_lookup_evict(struct view_lookup *l)
{
	if (l->S.vd != NULL)
		evict(&l->S);
}

/* A reply, or NULL for a bad query or a failed read (the flag cleared:
 * the server's 400 and 500). */
static char *lookup(struct view_lookup *l, int is_tile, const char *q, size_t *len)
{
	if (l->S.vd == NULL)
		return NULL;
	char *body = is_tile ? tile(&l->S, q, len) : at(&l->S, q, len);
	if (body == NULL)
		l->S.failed = 0;
	return body;
}

char *view_lookup_tile(struct view_lookup *l, const char *q, size_t *len)
{
	return lookup(l, 1, q, len);
}

char *view_lookup_at(struct view_lookup *l, const char *q, size_t *len)
{
	return lookup(l, 0, q, len);
}

void view_lookup_free(struct view_lookup *l)
{
	if (l == NULL)
		return;
	srv_fini(&l->S);
	free(l);
}

int view_serve(const struct view_data *vd, const struct view_page_opts *o, int port,
		const volatile sig_atomic_t *stop, void (*bound)(void *ctx, int port), void *ctx,
		char *err, size_t errlen)
{
	char *page = NULL;
	size_t plen = 0;
	FILE *f = open_memstream(&page, &plen);
	if (f == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	int r = view_write_page(vd, o, f, err, errlen);
	if (fclose(f) != 0 && r == 0) {
		snprintf(err, errlen, "out of memory");
		r = -1;
	}
	if (r != 0) {
		free(page);
		return -1;
	}
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		free(page);
		return -1;
	}
	int one = 1;
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in a;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t) port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t al = sizeof a;
	if (bind(s, (struct sockaddr *) &a, sizeof a) != 0 || listen(s, 64) != 0
			|| getsockname(s, (struct sockaddr *) &a, &al) != 0) {
		snprintf(err, errlen, "cannot listen on 127.0.0.1:%d: %s", port,
				strerror(errno));
		close(s);
		free(page);
		return -1;
	}
	struct srv S;
	const char *rae = getenv("WEFT_VIEW_READAHEAD");
	int ra = vd->spill_fd >= 0 && (rae == NULL || strcmp(rae, "0") != 0);
	int sok = srv_init(&S, vd, ra);
	struct conn *cs = calloc(CONN_MAX, sizeof *cs);
	if (sok != 0 || cs == NULL) {
		srv_fini(&S);
		free(cs);
		snprintf(err, errlen, "out of memory");
		close(s);
		free(page);
		return -1;
	}
	int timing = getenv("WEFT_EMU_TIMING") != NULL;
	if (timing) {
		/* the temporary file's size (docs/view.md, "Cost") */
		uint64_t bytes, nint;
		view_spill_size(vd, &bytes, &nint);
		fprintf(stderr, "weft view: temporary file: %" PRIu64 " intervals in %" PRIu64
				" bytes (%.2f bytes an interval)\n", nint, bytes,
				nint > 0 ? (double) bytes / (double) nint : 0.0);
	}
	const char *ev = getenv("WEFT_VIEW_EVICT");
	S.evict = ev != NULL && ev[0] != '\0' && strcmp(ev, "0") != 0;
	if (S.evict && vd->spill_fd >= 0) {
		/* its pages clean (dropped, not kept to be written), and dropped
		 * once now rather than in the first request's time */
		(void) fdatasync(vd->spill_fd);
		(void) posix_fadvise(vd->spill_fd, 0, 0, POSIX_FADV_DONTNEED);
	}
	int bport = ntohs(a.sin_port);
	bound(ctx, bport);
	uint64_t seq = 0;
	while (stop == NULL || *stop == 0) {
		struct pollfd p[1 + CONN_MAX];
		struct conn *pc[1 + CONN_MAX];
		nfds_t np = 1;
		int64_t now = now_ms();
		int wait = 200; /* then *stop is looked at again */
		p[0] = (struct pollfd) { s, POLLIN, 0 };
		for (size_t i = 0; i < CONN_MAX; i++) {
			struct conn *c = &cs[i];
			if (c->st == C_FREE)
				continue;
			int64_t left = c->deadline > now ? c->deadline - now : 0;
			if (left < wait)
				wait = (int) left;
			p[np] = (struct pollfd) { c->fd, c->st == C_WRITE ? POLLOUT : POLLIN, 0 };
			pc[np++] = c;
		}
		if (poll(p, np, wait) < 0)
			continue; /* EINTR: a signal, *stop looked at */
		now = now_ms();
		for (nfds_t k = 1; k < np; k++) {
			struct conn *c = pc[k];
			if (p[k].revents == 0)
				continue;
			if (c->st == C_READ) {
				conn_read(c, now, &S, page, plen, bport);
			} else if (c->st == C_WRITE) {
				conn_send(c, now);
			} else if (c->st == C_DRAIN) {
				conn_drain(c);
			}
		}
		for (size_t i = 0; i < CONN_MAX; i++)
			if (cs[i].st != C_FREE && cs[i].deadline <= now)
				conn_expire(&cs[i], now);
		if (p[0].revents & POLLIN)
			accept_all(s, cs, &seq, now);
	}
	for (size_t i = 0; i < CONN_MAX; i++)
		if (cs[i].st != C_FREE)
			conn_close(&cs[i]);
	free(cs);
	close(s);
	if (timing)
		fprintf(stderr, "weft view: read-ahead: %" PRIu64 " reads of the temporary file in "
				"tiles, %" PRIu64 " outside the ranges read ahead\n", S.reads,
				S.unasked);
	srv_fini(&S);
	free(page);
	return 0;
}
