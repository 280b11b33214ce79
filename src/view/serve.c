/* SPDX-License-Identifier: MIT */
/*
 * serve.c - `weft view --serve` (view.h): the page and its tiles over HTTP
 * on the loopback only, one request per connection, from the collected
 * timelines. The API: GET / (the page), GET /tile (a row range's intervals
 * of one channel in one time tile of one level), GET /at (the interval of
 * a row at a time). Any other path is 404, any other method 405, a bad
 * parameter 400; the server answers nothing else. The intervals of the
 * tracks beyond the budget are read from the collection's temporary file
 * (view_data_spill), a chunk at a time through a small cache.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "view_internal.h"
#include "view_json.h"

/* A tile with more intervals per row than this: one per bucket (the one at
 * its start), as a pixel shows one. */
#define TILE_MAX_EXACT (4 * VIEW_TILE_BUCKETS)

static void send_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t) w;
	}
}

static void reply(int fd, int code, const char *what, const char *type, const char *body,
		size_t len)
{
	char h[512];
	int n = snprintf(h, sizeof h, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
			"Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n"
			"Content-Security-Policy: default-src 'none'; script-src 'unsafe-inline'; "
			"style-src 'unsafe-inline'; img-src data:; connect-src 'self'\r\n"
			"Connection: close\r\n\r\n", code, what, type, len);
	send_all(fd, h, (size_t) n);
	send_all(fd, body, len);
}

static void reply_text(int fd, int code, const char *what, const char *msg)
{
	reply(fd, code, what, "text/plain; charset=utf-8", msg, strlen(msg));
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

struct srv {
	const struct view_data *vd;
	struct chunk_slot *slots; /* CACHE_SLOTS */
	uint64_t clock;
	int failed;               /* a read of the file failed */
	/* the directory and the sub-block read last (a sample tile's
	 * buckets fall in one sub-block or chunk again and again) */
	const struct view_track *ft, *st;
	size_t fk, sk, sj, sm;
	struct view_spill_dir dir;
	struct view_iv sub[VIEW_SPILL_SUB];
};

/* In chunk k of a spilled track, not cached, the first interval ending
 * after time (one does: the chunk's last end is after it), from its
 * directory and one sub-block: its index in the chunk and it; 0, or -1
 * (a read error). */
static int spill_find(struct srv *S, const struct view_track *t, size_t k, int64_t time,
		size_t *x, struct view_iv *v)
{
	if (S->ft != t || S->fk != k) {
		S->ft = NULL;
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
	if (t->smp != NULL && time >= 0 && (time & (((int64_t) 1 << t->sk) - 1)) == 0) {
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
	size_t lo = 0, hi = t->nchunks;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->chunks[mid].last_end <= time)
			lo = mid + 1;
		else
			hi = mid;
	}
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

/* Closes a connection once its reply is sent: what the client still sends
 * (a request body never read) is drained for a moment first, since a close
 * with unread data resets the connection and the client may lose the
 * reply (seen with a POST's body under load). At most 64 KiB, 200 ms. */
static void close_gently(int fd)
{
	char buf[4096];
	size_t total = 0;
	shutdown(fd, SHUT_WR);
	while (total < 65536) {
		struct pollfd p = { fd, POLLIN, 0 };
		if (poll(&p, 1, 200) <= 0)
			break;
		ssize_t r = recv(fd, buf, sizeof buf, 0);
		if (r <= 0)
			break;
		total += (size_t) r;
	}
	close(fd);
}

/* One request on fd (read with a deadline), answered. */
static void handle(int fd, struct srv *S, const char *page, size_t plen)
{
	char req[8192];
	size_t n = 0;
	while (n < sizeof req - 1) {
		struct pollfd p = { fd, POLLIN, 0 };
		if (poll(&p, 1, 5000) <= 0)
			return;
		ssize_t r = recv(fd, req + n, sizeof req - 1 - n, 0);
		if (r <= 0)
			return;
		n += (size_t) r;
		req[n] = '\0';
		if (strstr(req, "\r\n\r\n") != NULL || strstr(req, "\n\n") != NULL)
			break;
	}
	req[n] = '\0';
	char *sp = strchr(req, ' ');
	if (sp == NULL) {
		reply_text(fd, 400, "Bad Request", "bad request\n");
		return;
	}
	*sp = '\0';
	char *target = sp + 1;
	char *sp2 = strchr(target, ' ');
	if (sp2 == NULL) {
		reply_text(fd, 400, "Bad Request", "bad request\n");
		return;
	}
	*sp2 = '\0';
	if (strcmp(req, "GET") != 0) {
		reply_text(fd, 405, "Method Not Allowed", "only GET\n");
		return;
	}
	char *q = strchr(target, '?');
	if (q != NULL)
		*q++ = '\0';
	if (strcmp(target, "/") == 0 || strcmp(target, "/index.html") == 0) {
		reply(fd, 200, "OK", "text/html; charset=utf-8", page, plen);
		return;
	}
	int is_tile = strcmp(target, "/tile") == 0, is_at = strcmp(target, "/at") == 0;
	if (!is_tile && !is_at) {
		reply_text(fd, 404, "Not Found", "not found\n");
		return;
	}
	size_t len = 0;
	char *body = is_tile ? tile(S, q, &len) : at(S, q, &len);
	if (body == NULL && S->failed) {
		S->failed = 0;
		reply_text(fd, 500, "Internal Server Error", "cannot read the intervals' temporary "
				"file\n");
		return;
	}
	if (body == NULL) {
		reply_text(fd, 400, "Bad Request", "bad parameters\n");
		return;
	}
	reply(fd, 200, "OK", "application/json", body, len);
	free(body);
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
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
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
	if (bind(s, (struct sockaddr *) &a, sizeof a) != 0 || listen(s, 16) != 0
			|| getsockname(s, (struct sockaddr *) &a, &al) != 0) {
		snprintf(err, errlen, "cannot listen on 127.0.0.1:%d: %s", port,
				strerror(errno));
		close(s);
		free(page);
		return -1;
	}
	struct srv S;
	memset(&S, 0, sizeof S);
	S.vd = vd;
	S.slots = calloc(CACHE_SLOTS, sizeof(struct chunk_slot));
	if (S.slots == NULL) {
		snprintf(err, errlen, "out of memory");
		close(s);
		free(page);
		return -1;
	}
	if (getenv("WEFT_EMU_TIMING") != NULL) {
		/* the temporary file's size (docs/view.md, "Cost") */
		uint64_t bytes, nint;
		view_spill_size(vd, &bytes, &nint);
		fprintf(stderr, "weft view: temporary file: %" PRIu64 " intervals in %" PRIu64
				" bytes (%.2f bytes an interval)\n", nint, bytes,
				nint > 0 ? (double) bytes / (double) nint : 0.0);
	}
	bound(ctx, ntohs(a.sin_port));
	while (stop == NULL || *stop == 0) {
		struct pollfd p = { s, POLLIN, 0 };
		int pr = poll(&p, 1, 200);
		if (pr <= 0)
			continue;
		int c = accept4(s, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		handle(c, &S, page, plen);
		close_gently(c);
	}
	close(s);
	free(S.slots);
	free(page);
	return 0;
}
