/* SPDX-License-Identifier: MIT */
/*
 * collect.c - the output of `weft view` (view.h): every row's intervals of
 * every channel of the thread and CPU views, named through the catalogue
 * (emu_cat_of_prv), as `weft sql`'s interval table holds them; at the
 * close, the labels known at the end and the summary pyramids. The
 * intervals are kept up to a budget (view_data_keep): beyond it the
 * largest tracks' are dropped and their pyramids' finest level is built as
 * their intervals arrive (struct view_spyr), so that memory does not grow
 * with the trace.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "out.h"
#include "view_internal.h"

/* The collection runs on a thread of its own beside the emulation (when
 * there is a second CPU): the engine keeps a batch's record arrays for
 * EMU_BATCH_KEEP further calls (emu.h), so records() queues the batch
 * without copying it and returns, waiting only when that many are queued
 * (the collection took half of weft view's emulation thread). */
struct job {
	const struct emu_prv_rec *prv[2];
	size_t n[2];
};

struct vout {
	struct out base;
	struct view_data *vd;
	const struct emu *emu;
	size_t nthreads;
	pthread_t th;
	int th_ok;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct job q[EMU_BATCH_KEEP];
	int64_t tnow;          /* the latest record's time (collect) */
	uint64_t pushed, done; /* batches queued, collected */
	int waiting, stop;     /* the thread waits for a batch; it is to end */
	int th_ok_cpus;        /* a second CPU: the pyramids on two threads */
};

static char *dup_s(const char *s)
{
	return strdup(s != NULL ? s : "");
}

struct view_data *view_data_new(void)
{
	struct view_data *vd = calloc(1, sizeof(struct view_data));
	if (vd != NULL) {
		vd->keep = UINT64_MAX;
		vd->spill_fd = -1;
	}
	return vd;
}

int view_data_spill(struct view_data *vd, const char *dir, char *err, size_t errlen)
{
	if (dir == NULL || dir[0] == '\0')
		dir = getenv("TMPDIR");
	if (dir == NULL || dir[0] == '\0')
		dir = "/tmp";
	size_t n = strlen(dir) + sizeof "/weft-view-XXXXXX";
	char *path = malloc(n);
	if (path == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	snprintf(path, n, "%s/weft-view-XXXXXX", dir);
	int fd = mkostemp(path, O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "%s: cannot create the temporary file of the intervals beyond "
				"the budget: %s", dir, strerror(errno));
		free(path);
		return -1;
	}
	unlink(path); /* gone with the process */
	free(path);
	vd->spill_fd = fd;
	return 0;
}

/* Reads n bytes at off: 0, or -1. */
static int read_at(int fd, void *buf, size_t n, uint64_t off)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = pread(fd, (char *) buf + got, n - got, (off_t) (off + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		got += (size_t) r;
	}
	return 0;
}

/* The temporary file's encoding (view_internal.h): varints of 7 bits a
 * byte, the low bits first (LEB128); signed numbers zigzagged (0, -1, 1,
 * -2, ... as 0, 1, 2, 3, ...); the deltas taken modulo 2^64, so that any
 * int64s (values near 2^63 among them) encode and decode exactly. */
static size_t put_uv(uint8_t *p, uint64_t x)
{
	size_t n = 0;
	while (x >= 0x80) {
		p[n++] = (uint8_t) (x | 0x80);
		x >>= 7;
	}
	p[n++] = (uint8_t) x;
	return n;
}

/* x and a flag (0 or 1) in one varint: the flag is the first byte's bit 0,
 * beside 6 bits of x. */
static size_t put_tv(uint8_t *p, uint64_t x, unsigned flag)
{
	uint8_t b = (uint8_t) (flag | (unsigned) (x & 0x3f) << 1);
	x >>= 6;
	if (x == 0) {
		p[0] = b;
		return 1;
	}
	p[0] = (uint8_t) (b | 0x80);
	return 1 + put_uv(p + 1, x);
}

static uint64_t zz(uint64_t d)
{
	return d << 1 ^ (uint64_t) -(d >> 63);
}

static uint64_t unzz(uint64_t z)
{
	return z >> 1 ^ (uint64_t) -(z & 1);
}

/* A varint at *p (before e): 0, or -1 (it runs past e or past 64 bits). */
static int get_uv(const uint8_t **p, const uint8_t *e, uint64_t *x)
{
	uint64_t v = 0;
	for (unsigned sh = 0; *p < e && sh < 64; sh += 7) {
		uint8_t b = *(*p)++;
		v |= (uint64_t) (b & 0x7f) << sh;
		if (!(b & 0x80)) {
			*x = v;
			return 0;
		}
	}
	return -1;
}

static int get_tv(const uint8_t **p, const uint8_t *e, uint64_t *x, unsigned *flag)
{
	if (*p == e)
		return -1;
	uint8_t b = *(*p)++;
	*flag = b & 1;
	uint64_t hi = 0;
	if ((b & 0x80) && get_uv(p, e, &hi) != 0)
		return -1;
	*x = (uint64_t) (b >> 1 & 0x3f) | hi << 6;
	return 0;
}

static int64_t as_i64(uint64_t u)
{
	int64_t v;
	memcpy(&v, &u, sizeof v);
	return v;
}

/* The n intervals iv (1 to VIEW_SPILL_SUB, in order) encoded at p: the
 * first as its start (zigzag), length and value (zigzag); each other as
 * its value's change (zigzag) flagged when it does not start where the one
 * before ended, then that gap (zigzag) if flagged, then its length. At
 * most n * VIEW_SPILL_IV_MAX bytes; their count. */
static size_t sub_encode(uint8_t *p, const struct view_iv *iv, size_t n)
{
	size_t w = put_uv(p, zz((uint64_t) iv[0].start));
	w += put_uv(p + w, (uint64_t) iv[0].end - (uint64_t) iv[0].start);
	w += put_uv(p + w, zz((uint64_t) iv[0].value));
	for (size_t i = 1; i < n; i++) {
		uint64_t gap = (uint64_t) iv[i].start - (uint64_t) iv[i - 1].end;
		w += put_tv(p + w, zz((uint64_t) iv[i].value - (uint64_t) iv[i - 1].value),
				gap != 0);
		if (gap != 0)
			w += put_uv(p + w, zz(gap));
		w += put_uv(p + w, (uint64_t) iv[i].end - (uint64_t) iv[i].start);
	}
	return w;
}

/* An interval as the collection makes them: times from 0 on, not empty,
 * starting at or after the end before it (the file may have been changed:
 * a cache read back, cache.c; nothing downstream then overflows). */
static int iv_sane(const struct view_iv *v, int64_t prev_end)
{
	return v->start >= prev_end && v->start >= 0 && v->end > v->start;
}

/* The n intervals encoded in [p, e) into out: 0, or -1 when the bytes are
 * not n intervals exactly. */
static int sub_decode(const uint8_t *p, const uint8_t *e, struct view_iv *out, size_t n)
{
	uint64_t s, len, v;
	if (n == 0 || get_uv(&p, e, &s) != 0 || get_uv(&p, e, &len) != 0
			|| get_uv(&p, e, &v) != 0)
		return -1;
	s = unzz(s);
	v = unzz(v);
	out[0] = (struct view_iv) { as_i64(s), as_i64(s + len), as_i64(v) };
	if (!iv_sane(&out[0], 0))
		return -1;
	uint64_t end = s + len;
	for (size_t i = 1; i < n; i++) {
		uint64_t dv, gap = 0;
		unsigned has_gap;
		if (get_tv(&p, e, &dv, &has_gap) != 0
				|| (has_gap && get_uv(&p, e, &gap) != 0)
				|| get_uv(&p, e, &len) != 0)
			return -1;
		s = end + unzz(gap);
		v += unzz(dv);
		end = s + len;
		out[i] = (struct view_iv) { as_i64(s), as_i64(end), as_i64(v) };
		if (!iv_sane(&out[i], out[i - 1].end))
			return -1;
	}
	return p == e ? 0 : -1;
}

size_t view_sub_encode(uint8_t *p, const struct view_iv *iv, size_t n)
{
	return sub_encode(p, iv, n);
}

int view_sub_decode(const uint8_t *p, const uint8_t *e, struct view_iv *out, size_t n)
{
	return sub_decode(p, e, out, n);
}

static void dir_pack(uint8_t *p, const struct view_spill_dir *d)
{
	memcpy(p, d->fence, sizeof d->fence);
	memcpy(p + sizeof d->fence, d->end, sizeof d->end);
}

static void dir_unpack(struct view_spill_dir *d, const uint8_t *p)
{
	memcpy(d->fence, p, sizeof d->fence);
	memcpy(d->end, p + sizeof d->fence, sizeof d->end);
}

size_t view_spill_chunk_n(const struct view_track *t, size_t k)
{
	uint64_t end = k + 1 < t->nchunks ? t->chunks[k + 1].base : t->nspilled;
	return (size_t) (end - t->chunks[k].base);
}

/* Sub-block j's bytes [*a, *b) after the directory, and its intervals
 * (0: none, or a directory out of order). */
static size_t sub_span(const struct view_spill_dir *d, size_t n, size_t j, size_t *a, size_t *b)
{
	*a = j > 0 ? d->end[j - 1] : 0;
	*b = d->end[j];
	size_t first = j * VIEW_SPILL_SUB;
	if (first >= n || *b < *a)
		return 0;
	return n - first < VIEW_SPILL_SUB ? n - first : VIEW_SPILL_SUB;
}

int view_spill_read(const struct view_data *vd, const struct view_track *t, size_t k,
		struct view_iv *out, size_t *n)
{
	uint8_t buf[VIEW_SPILL_CHUNK_MAX];
	uint64_t pos = t->chunks[k].pos;
	size_t len = (size_t) (pos & 0xffff);
	*n = view_spill_chunk_n(t, k);
	if (len < VIEW_SPILL_DIR_BYTES || read_at(vd->spill_fd, buf, len, pos >> 16) != 0)
		return -1;
	struct view_spill_dir d;
	dir_unpack(&d, buf);
	const uint8_t *data = buf + VIEW_SPILL_DIR_BYTES;
	for (size_t j = 0; j * VIEW_SPILL_SUB < *n; j++) {
		size_t a, b, m = sub_span(&d, *n, j, &a, &b);
		if (m == 0 || b > len - VIEW_SPILL_DIR_BYTES
				|| sub_decode(data + a, data + b, out + j * VIEW_SPILL_SUB, m) != 0)
			return -1;
	}
	return 0;
}

int view_spill_dir_read(const struct view_data *vd, const struct view_track *t, size_t k,
		struct view_spill_dir *d)
{
	uint8_t buf[VIEW_SPILL_DIR_BYTES];
	if (read_at(vd->spill_fd, buf, sizeof buf, t->chunks[k].pos >> 16) != 0)
		return -1;
	dir_unpack(d, buf);
	return 0;
}

int view_spill_sub_read(const struct view_data *vd, const struct view_track *t, size_t k,
		const struct view_spill_dir *d, size_t j, struct view_iv *out, size_t *n)
{
	uint8_t buf[VIEW_SPILL_SUB * VIEW_SPILL_IV_MAX];
	uint64_t pos = t->chunks[k].pos;
	size_t a, b, m = j < VIEW_SPILL_NSUB ? sub_span(d, view_spill_chunk_n(t, k), j, &a, &b) : 0;
	if (m == 0 || b - a > sizeof buf || VIEW_SPILL_DIR_BYTES + b > (pos & 0xffff)
			|| read_at(vd->spill_fd, buf, b - a, (pos >> 16) + VIEW_SPILL_DIR_BYTES + a) != 0
			|| sub_decode(buf, buf + (b - a), out, m) != 0)
		return -1;
	*n = m;
	return 0;
}

void view_spill_size(const struct view_data *vd, uint64_t *bytes, uint64_t *intervals)
{
	*bytes = vd->spill_off - vd->spill_base;
	*intervals = 0;
	for (size_t i = 0; vd->tracks != NULL && i < vd->nrows * vd->nchans; i++)
		*intervals += vd->tracks[i].nspilled;
}

/* Writes n bytes at vd's file's end: 0, or -1 (spill_errno set). */
static int spill_write(struct view_data *vd, const void *p, size_t want)
{
	size_t done = 0;
	while (done < want) {
		ssize_t w = pwrite(vd->spill_fd, (const char *) p + done, want - done,
				(off_t) (vd->spill_off + done));
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			vd->spill_errno = w < 0 ? errno : ENOSPC;
			return -1;
		}
		done += (size_t) w;
	}
	vd->spill_off += want;
	return 0;
}

/* The message of a collection that failed: a write to the temporary file,
 * else memory. */
static void fail_message(const struct view_data *vd, char *err, size_t errlen)
{
	if (vd->spill_errno != 0)
		snprintf(err, errlen, "cannot write the temporary file of the intervals beyond the "
				"budget: %s", strerror(vd->spill_errno));
	else
		snprintf(err, errlen, "out of memory");
}

/* The buffered chunk of t written (its directory, then its sub-blocks
 * each encoded on its own): 0, or -1 (spill_errno set, or out of memory). */
static int spill_flush(struct view_data *vd, struct view_track *t)
{
	if (t->sn == 0)
		return 0;
	if (t->nchunks == t->ccap) {
		size_t cap = t->ccap ? 2 * t->ccap : 16;
		struct view_spill_chunk *c = realloc(t->chunks, cap * sizeof *c);
		if (c == NULL)
			return -1;
		t->chunks = c;
		t->ccap = cap;
	}
	uint8_t buf[VIEW_SPILL_CHUNK_MAX];
	struct view_spill_dir d;
	size_t w = 0;
	for (size_t j = 0; j < VIEW_SPILL_NSUB; j++) {
		size_t a = j * VIEW_SPILL_SUB;
		size_t b = a + VIEW_SPILL_SUB < t->sn ? a + VIEW_SPILL_SUB : t->sn;
		if (a < t->sn)
			w += sub_encode(buf + VIEW_SPILL_DIR_BYTES + w, t->sbuf + a, b - a);
		d.fence[j] = t->sbuf[(a < t->sn ? b : t->sn) - 1].end;
		d.end[j] = (uint16_t) w;
	}
	dir_pack(buf, &d);
	w += VIEW_SPILL_DIR_BYTES;
	uint64_t off = vd->spill_off;
	if (off >> 48 != 0) {
		vd->spill_errno = EFBIG;
		return -1;
	}
	if (spill_write(vd, buf, w) != 0)
		return -1;
	t->chunks[t->nchunks++] = (struct view_spill_chunk) { t->sbuf[t->sn - 1].end, t->nspilled,
		off << 16 | w };
	t->nspilled += t->sn;
	t->sn = 0;
	return 0;
}

/* The samples at the times before end not yet sampled: the track's last
 * interval (index x), the first to end after them. */
static void sample(struct view_track *t, uint64_t x, const struct view_iv *v)
{
	for (;;) {
		int64_t next = (int64_t) t->nsmp << t->sk;
		if (next >= v->end)
			return;
		if (t->nsmp == VIEW_SPILL_SAMPLES) {
			/* twice as far apart: every other one kept */
			for (size_t j = 0; j < VIEW_SPILL_SAMPLES / 2; j++)
				t->smp[j] = t->smp[2 * j];
			t->nsmp /= 2;
			t->slast = (t->slast + 1) / 2;
			t->sk++;
			continue;
		}
		t->smp[t->nsmp++] = (struct view_spill_sample) { v->start, v->end, v->value, x };
	}
}

/* An interval of a spilled track (one continuing the last is merged). */
static int spill_put(struct view_data *vd, struct view_track *t, int64_t start, int64_t end,
		int64_t value)
{
	if (t->sbuf == NULL && (t->sbuf = malloc(VIEW_SPILL_CHUNK * sizeof *t->sbuf)) == NULL)
		return -1;
	if (t->smp == NULL && (t->smp = malloc(VIEW_SPILL_SAMPLES * sizeof *t->smp)) == NULL)
		return -1;
	if (t->sn > 0 && t->sbuf[t->sn - 1].end == start && t->sbuf[t->sn - 1].value == value) {
		struct view_iv *l = &t->sbuf[t->sn - 1];
		l->end = end;
		for (size_t i = t->slast; i < t->nsmp; i++)
			t->smp[i].end = end;
		sample(t, t->nspilled + t->sn - 1, l);
		return 0;
	}
	if (t->sn == VIEW_SPILL_CHUNK && spill_flush(vd, t) != 0)
		return -1;
	t->sbuf[t->sn++] = (struct view_iv) { start, end, value };
	t->slast = t->nsmp;
	sample(t, t->nspilled + t->sn - 1, &t->sbuf[t->sn - 1]);
	return 0;
}

void view_data_keep(struct view_data *vd, uint64_t budget)
{
	vd->keep = budget;
}

size_t view_ndropped(const struct view_data *vd)
{
	return vd->ndropped;
}

static void spyr_free(struct view_spyr *sp);

/* Frees what a collection put in vd and makes it empty again (its budget
 * kept): a run given up (driver.c: the run in file order that meets an
 * unordered region or fails) is followed by a second run, which collects
 * afresh. */
static void view_data_clear(struct view_data *vd)
{
	for (size_t i = 0; vd->rows != NULL && i < vd->nrows; i++) {
		free(vd->rows[i].label);
		free(vd->rows[i].loom);
	}
	for (size_t i = 0; vd->chans != NULL && i < vd->nchans; i++) {
		struct view_chan *c = &vd->chans[i];
		free(c->name);
		free(c->model);
		for (size_t k = 0; k < c->nlabels; k++)
			free(c->llabel[k]);
		free(c->lvalue);
		free(c->llabel);
	}
	if (vd->tracks != NULL)
		for (size_t i = 0; i < vd->nrows * vd->nchans; i++) {
			free(vd->tracks[i].iv);
			spyr_free(vd->tracks[i].sp);
			free(vd->tracks[i].pyr);
			free(vd->tracks[i].off);
			free(vd->tracks[i].chunks);
			free(vd->tracks[i].sbuf);
			free(vd->tracks[i].smp);
		}
	free(vd->tracks);
	free(vd->rows);
	free(vd->chans);
	free(vd->chan_of_id);
	uint64_t keep = vd->keep, base = vd->spill_base;
	int fd = vd->spill_fd, ro = vd->spill_ro;
	char *tmp = vd->spill_tmp;
	if (fd >= 0 && !ro && ftruncate(fd, (off_t) base) != 0)
		vd->spill_errno = errno; /* the file is rewritten from base anyway */
	memset(vd, 0, sizeof *vd);
	vd->keep = keep;
	vd->spill_fd = fd;
	vd->spill_base = vd->spill_off = base;
	vd->spill_tmp = tmp;
	vd->spill_ro = ro;
}

void view_data_free(struct view_data *vd)
{
	if (vd == NULL)
		return;
	view_data_clear(vd);
	if (vd->spill_fd >= 0)
		close(vd->spill_fd);
	if (vd->spill_tmp != NULL)
		unlink(vd->spill_tmp); /* a cache not made (cache.c) */
	free(vd->spill_tmp);
	free(vd);
}

size_t view_nrows(const struct view_data *vd)
{
	return vd->nrows;
}

uint64_t view_nintervals(const struct view_data *vd)
{
	return vd->nintervals;
}

size_t view_nchans(const struct view_data *vd)
{
	return vd->nchans;
}

const char *view_chan_name(const struct view_data *vd, size_t i)
{
	return vd->chans[i].name;
}

int view_has_channel(const struct view_data *vd, const char *name)
{
	for (size_t i = 0; i < vd->nchans; i++)
		if (strcmp(vd->chans[i].name, name) == 0)
			return 1;
	return 0;
}

const char *view_label_of(const struct view_chan *c, int64_t v)
{
	size_t lo = 0, hi = c->nlabels;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->lvalue[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->nlabels && c->lvalue[lo] == v ? c->llabel[lo] : NULL;
}

size_t view_iv_find(const struct view_iv *iv, size_t n, int64_t time)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (iv[mid].end <= time)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

size_t view_track_find(const struct view_track *t, int64_t time)
{
	return view_iv_find(t->iv, t->n, time);
}

static const char *kind_name(const struct emu_cat_entry *e)
{
	switch (e->kind) {
	case EMU_CAT_STATE: return "state";
	case EMU_CAT_SINGLE: return "single";
	case EMU_CAT_STACK: return "stack";
	case EMU_CAT_COUNTER: return "counter";
	default: return "mark";
	}
}

static int spyr_add(struct view_spyr *sp, int64_t s, int64_t e, int64_t v);
static int drop_largest(struct view_data *vd);

/* An interval of a track; one that starts where the last ended with the
 * same value continues it (as weft sql's). */
static int put(struct view_data *vd, struct view_track *t, int64_t start, int64_t end,
		int64_t value)
{
	if (end <= start)
		return 0;
	if (t->sp != NULL) {
		/* beyond the budget: counted and summed, not kept */
		if (t->lend != start || t->lvalue != value) {
			t->count++;
			vd->nintervals++;
		}
		t->lend = end;
		t->lvalue = value;
		if (vd->spill_fd >= 0 && spill_put(vd, t, start, end, value) != 0)
			return -1;
		return spyr_add(t->sp, start, end, value);
	}
	size_t add;
	if (t->n > 0 && t->iv[t->n - 1].end == start && t->iv[t->n - 1].value == value) {
		struct view_iv *x = &t->iv[t->n - 1];
		add = view_digits(end - x->start) - view_digits(x->end - x->start);
		x->end = end;
	} else {
		if (t->n == t->cap) {
			size_t cap = t->cap ? 2 * t->cap : 16;
			struct view_iv *iv = realloc(t->iv, cap * sizeof *iv);
			if (iv == NULL)
				return -1;
			t->iv = iv;
			t->cap = cap;
		}
		/* gap after the previous end, duration, value and their commas */
		add = view_digits(start - (t->n > 0 ? t->iv[t->n - 1].end : 0))
			+ view_digits(end - start) + view_digits(value) + 3;
		t->iv[t->n++] = (struct view_iv) { start, end, value };
		vd->nintervals++; /* t->count: t->n while they are kept (drop, close) */
	}
	t->jlen += add;
	vd->kept += add;
	return 0;
}

/* One record of view v into its track: 0, or -1 when out of memory. */
static int collect_rec(struct vout *o, size_t v, const struct emu_prv_rec *r)
{
	struct view_data *vd = o->vd;
	size_t base = v == 0 ? 0 : o->nthreads;
	size_t nrows = v == 0 ? o->nthreads : vd->nrows - o->nthreads;
	const struct emu_cat_entry *e = emu_cat_of_prv(o->emu, v, r);
	if (e == NULL || e->id >= vd->ncat || r->row >= nrows)
		return 0;
	size_t c = vd->chan_of_id[e->id];
	if (c == SIZE_MAX)
		return 0;
	struct view_track *t = &vd->tracks[(base + r->row) * vd->nchans + c];
	if (t->ovalue == r->value)
		return 0;
	if (t->ovalue != 0 && put(vd, t, t->ostart, r->time, t->ovalue) != 0)
		return -1;
	t->ovalue = r->value;
	t->ostart = r->time;
	return 0;
}

/* The records of one batch into the tracks, the two views' in time order
 * (the thread view's first at one time): 0, or -1 when out of memory.
 * Whether the budget is passed is asked only when the time moves on, once
 * every record up to a time is in and none after it, so that the tracks
 * dropped are a function of the records in time order, not of where the
 * batches are cut (the serial engine's, after an event that brings a batch
 * to 4096 records; -j's merged ones, by time: docs/emu.md, PARALLEL). */
static int collect(struct vout *o, const struct job *jb)
{
	struct view_data *vd = o->vd;
	size_t i[2] = { 0, 0 };
	for (;;) {
		size_t v;
		if (i[0] < jb->n[0] && (i[1] == jb->n[1] ||
				jb->prv[0][i[0]].time <= jb->prv[1][i[1]].time))
			v = 0;
		else if (i[1] < jb->n[1])
			v = 1;
		else
			return 0;
		const struct emu_prv_rec *r = &jb->prv[v][i[v]++];
		if (r->time > o->tnow) {
			if (vd->kept > vd->keep && drop_largest(vd) != 0)
				return -1;
			o->tnow = r->time;
		}
		if (collect_rec(o, v, r) != 0)
			return -1;
	}
}

static void *collector(void *arg)
{
	struct vout *o = arg;
	pthread_mutex_lock(&o->mu);
	for (;;) {
		if (o->done == o->pushed) {
			if (o->stop)
				break;
			o->waiting = 1;
			pthread_cond_wait(&o->cv, &o->mu);
			o->waiting = 0;
			continue;
		}
		struct job jb = o->q[o->done % EMU_BATCH_KEEP];
		int failed = o->vd->failed;
		pthread_mutex_unlock(&o->mu);
		int r = failed ? 0 : collect(o, &jb);
		pthread_mutex_lock(&o->mu);
		if (r != 0)
			o->vd->failed = 1;
		o->done++;
		pthread_cond_broadcast(&o->cv);
	}
	pthread_mutex_unlock(&o->mu);
	return NULL;
}

/* Every queued batch collected, the thread ended. */
static void collector_stop(struct vout *o)
{
	if (!o->th_ok)
		return;
	pthread_mutex_lock(&o->mu);
	o->stop = 1;
	pthread_cond_broadcast(&o->cv);
	pthread_mutex_unlock(&o->mu);
	pthread_join(o->th, NULL);
	pthread_mutex_destroy(&o->mu);
	pthread_cond_destroy(&o->cv);
	o->th_ok = 0;
}

static int vo_records(void *self, const struct emu_batch *b, char *err, size_t errlen)
{
	struct vout *o = self;
	struct job jb = { { b->prv[0], b->prv[1] }, { b->nprv[0], b->nprv[1] } };
	int failed;
	if (!o->th_ok) {
		failed = o->vd->failed || collect(o, &jb) != 0;
	} else {
		pthread_mutex_lock(&o->mu);
		o->q[o->pushed % EMU_BATCH_KEEP] = jb;
		o->pushed++;
		if (o->waiting)
			pthread_cond_broadcast(&o->cv);
		/* the arrays of the batch EMU_BATCH_KEEP calls back must be
		 * collected before this call returns */
		while (o->pushed - o->done >= EMU_BATCH_KEEP)
			pthread_cond_wait(&o->cv, &o->mu);
		failed = o->vd->failed;
		pthread_mutex_unlock(&o->mu);
	}
	if (failed) {
		o->vd->failed = 1;
		fail_message(o->vd, err, errlen);
		return -1;
	}
	return 0;
}

static int add_label(struct view_chan *c, size_t *cap, int64_t v, const char *l)
{
	for (size_t k = 0; k < c->nlabels; k++)
		if (c->lvalue[k] == v)
			return 0; /* the first label of a value stays (weft sql's) */
	if (c->nlabels == *cap) {
		size_t n = *cap ? 2 * *cap : 8;
		int64_t *lv = realloc(c->lvalue, n * sizeof *lv);
		if (lv == NULL)
			return -1;
		c->lvalue = lv;
		char **ll = realloc(c->llabel, n * sizeof *ll);
		if (ll == NULL)
			return -1;
		c->llabel = ll;
		*cap = n;
	}
	c->llabel[c->nlabels] = dup_s(l);
	if (c->llabel[c->nlabels] == NULL)
		return -1;
	c->lvalue[c->nlabels++] = v;
	return 0;
}

/* Sorts a channel's labels by value (parallel arrays). */
static void sort_labels(struct view_chan *c)
{
	for (size_t i = 1; i < c->nlabels; i++) {
		int64_t v = c->lvalue[i];
		char *l = c->llabel[i];
		size_t j = i;
		for (; j > 0 && c->lvalue[j - 1] > v; j--) {
			c->lvalue[j] = c->lvalue[j - 1];
			c->llabel[j] = c->llabel[j - 1];
		}
		c->lvalue[j] = v;
		c->llabel[j] = l;
	}
}

struct pv {
	int64_t v, t;
};

/* Sorts a bucket's values by decreasing time, then increasing value: an
 * insertion sort (at most 2 * VIEW_PYR_VALUES of them; qsort's calls cost
 * 5% of weft view). */
static void sort_pv_desc(struct pv *b, int n)
{
	for (int i = 1; i < n; i++) {
		struct pv x = b[i];
		int j = i;
		for (; j > 0 && (b[j - 1].t < x.t || (b[j - 1].t == x.t && b[j - 1].v > x.v)); j--)
			b[j] = b[j - 1];
		b[j] = x;
	}
}

/* Adds time t of value v to a bucket of up to 2 * VIEW_PYR_VALUES values. */
static void bucket_add(struct pv *b, int *n, int64_t v, int64_t t)
{
	for (int k = 0; k < *n; k++)
		if (b[k].v == v) {
			b[k].t += t;
			return;
		}
	if (*n < 2 * VIEW_PYR_VALUES) {
		b[*n].v = v;
		b[*n].t = t;
		(*n)++;
		return;
	}
	/* full: the smallest goes (the bucket keeps the largest shares) */
	int m = 0;
	for (int k = 1; k < *n; k++)
		if (b[k].t < b[m].t)
			m = k;
	if (b[m].t < t)
		b[m] = (struct pv) { v, t };
}

struct cnt {
	int64_t min, max;
	double sum;
	int64_t covered;
};

/* Merges bucket c (when has_c) into bucket a's place k, as a level of the
 * pyramid is made from the one below. */
static void merge_pv(struct pv *b, int *bn, size_t k, size_t a, size_t c, int has_c)
{
	struct pv tmp[2 * VIEW_PYR_VALUES];
	int tn = 0;
	for (int q = 0; q < bn[a]; q++)
		bucket_add(tmp, &tn, b[a * 2 * VIEW_PYR_VALUES + (size_t) q].v,
				b[a * 2 * VIEW_PYR_VALUES + (size_t) q].t);
	for (int q = 0; has_c && q < bn[c]; q++)
		bucket_add(tmp, &tn, b[c * 2 * VIEW_PYR_VALUES + (size_t) q].v,
				b[c * 2 * VIEW_PYR_VALUES + (size_t) q].t);
	memcpy(&b[k * 2 * VIEW_PYR_VALUES], tmp, (size_t) tn * sizeof *tmp);
	bn[k] = tn;
}

static struct cnt merge_cnt(const struct cnt *cb, size_t a, size_t c, int has_c)
{
	struct cnt m = cb[a];
	if (has_c && cb[c].covered > 0) {
		if (m.covered == 0 || cb[c].min < m.min)
			m.min = cb[c].min;
		if (m.covered == 0 || cb[c].max > m.max)
			m.max = cb[c].max;
		m.sum += cb[c].sum;
		m.covered += cb[c].covered;
	}
	return m;
}

/* Time [s, e) of value v into the finest level's buckets of 2^k ns from
 * time 0 (e at most VIEW_PYR_BUCKETS << k; s clipped to 0). */
static inline __attribute__((always_inline)) void level_add(struct pv *b, int *bn, struct cnt *cb, int k, int64_t s, int64_t e,
		int64_t v, size_t nb)
{
	if (s < 0)
		s = 0;
	for (int64_t x = s >> k; s < e && (size_t) x < nb; x++) {
		int64_t be = (x + 1) << k;
		int64_t part = (e < be ? e : be) - s;
		if (cb != NULL) {
			struct cnt *c = &cb[x];
			if (c->covered == 0 || v < c->min)
				c->min = v;
			if (c->covered == 0 || v > c->max)
				c->max = v;
			c->sum += (double) v * (double) part;
			c->covered += part;
		} else {
			bucket_add(&b[(size_t) x * 2 * VIEW_PYR_VALUES], &bn[x], v, part);
		}
		s = be;
	}
}

/* The finest level of a track whose intervals are beyond the budget:
 * VIEW_PYR_BUCKETS buckets of 2^k ns from time 0, k the least that holds
 * every interval so far (pairs merge as a later one needs a larger k). Its
 * memory is fixed: 260 KiB for a track of values, 32 KiB for a counter. */
struct view_spyr {
	int k;
	struct pv *b;   /* VIEW_PYR_BUCKETS * 2 * VIEW_PYR_VALUES (values) */
	int *bn;
	struct cnt *cb; /* VIEW_PYR_BUCKETS (a counter) */
};

static void spyr_free(struct view_spyr *sp)
{
	if (sp == NULL)
		return;
	free(sp->b);
	free(sp->bn);
	free(sp->cb);
	free(sp);
}

struct view_spyr *view_spyr_stub(void)
{
	return calloc(1, sizeof(struct view_spyr));
}

static struct view_spyr *spyr_new(int counter)
{
	struct view_spyr *sp = calloc(1, sizeof *sp);
	if (sp == NULL)
		return NULL;
	if (counter) {
		sp->cb = calloc(VIEW_PYR_BUCKETS, sizeof *sp->cb);
	} else {
		sp->b = malloc((size_t) VIEW_PYR_BUCKETS * 2 * VIEW_PYR_VALUES * sizeof *sp->b);
		sp->bn = calloc(VIEW_PYR_BUCKETS, sizeof *sp->bn);
	}
	if (counter ? sp->cb == NULL : sp->b == NULL || sp->bn == NULL) {
		spyr_free(sp);
		return NULL;
	}
	return sp;
}

/* Buckets twice as wide: pairs merged as the pyramid's levels are. */
static void spyr_coarsen(struct view_spyr *sp)
{
	const size_t half = VIEW_PYR_BUCKETS / 2;
	for (size_t x = 0; x < half; x++) {
		if (sp->cb != NULL)
			sp->cb[x] = merge_cnt(sp->cb, 2 * x, 2 * x + 1, 1);
		else
			merge_pv(sp->b, sp->bn, x, 2 * x, 2 * x + 1, 1);
	}
	if (sp->cb != NULL)
		memset(&sp->cb[half], 0, half * sizeof *sp->cb);
	else
		memset(&sp->bn[half], 0, half * sizeof *sp->bn);
	sp->k++;
}

static int spyr_add(struct view_spyr *sp, int64_t s, int64_t e, int64_t v)
{
	if (e <= 0)
		return 0;
	while (sp->k < 52 && e > ((int64_t) VIEW_PYR_BUCKETS << sp->k))
		spyr_coarsen(sp);
	level_add(sp->b, sp->bn, sp->cb, sp->k, s, e, v, VIEW_PYR_BUCKETS);
	return 0;
}

struct tlen {
	uint64_t len;
	size_t track;
};

/* Larger first; among equals, the first track first. */
static int cmp_tlen(const void *a, const void *b)
{
	const struct tlen *x = a, *y = b;
	if (x->len != y->len)
		return (x->len < y->len) - (x->len > y->len);
	return (x->track > y->track) - (x->track < y->track);
}

/* The kept intervals over the budget: the largest tracks' are dropped
 * (their summaries from them on built as they arrive) until the rest take
 * at most 15/16 of it, so that many tracks growing together cost a sort
 * now and then, not a scan per interval. 0, or -1 when out of memory. */
static int drop_largest(struct view_data *vd)
{
	size_t nt = vd->nrows * vd->nchans, n = 0;
	struct tlen *ts = malloc((nt + 1) * sizeof *ts);
	if (ts == NULL)
		return -1;
	for (size_t i = 0; i < nt; i++)
		if (vd->tracks[i].sp == NULL && vd->tracks[i].n > 0)
			ts[n++] = (struct tlen) { vd->tracks[i].jlen, i };
	qsort(ts, n, sizeof *ts, cmp_tlen);
	uint64_t goal = vd->keep - vd->keep / 16;
	for (size_t k = 0; k < n && vd->kept > goal; k++) {
		struct view_track *t = &vd->tracks[ts[k].track];
		t->sp = spyr_new(vd->chans[ts[k].track % vd->nchans].counter);
		if (t->sp == NULL) {
			free(ts);
			return -1;
		}
		for (size_t i = 0; i < t->n; i++) {
			spyr_add(t->sp, t->iv[i].start, t->iv[i].end, t->iv[i].value);
			if (vd->spill_fd >= 0 && spill_put(vd, t, t->iv[i].start, t->iv[i].end,
					t->iv[i].value) != 0) {
				free(ts);
				return -1;
			}
		}
		t->count = t->n;
		t->lend = t->iv[t->n - 1].end;
		t->lvalue = t->iv[t->n - 1].value;
		vd->kept -= t->jlen;
		t->jlen = 0;
		free(t->iv);
		t->iv = NULL;
		t->n = t->cap = 0;
		vd->ndropped++;
	}
	free(ts);
	return 0;
}

/* The scratch of the pyramids, one for every track (VIEW_PYR_BUCKETS
 * buckets: fresh memory per track cost a third of weft view's time in page
 * faults). */
struct pyr_scratch {
	struct pv *b;   /* VIEW_PYR_BUCKETS * 2 * VIEW_PYR_VALUES */
	int *bn;
	struct cnt *cb;
	int64_t *out;   /* the levels, before their copy into the track */
};

static int scratch_init(struct pyr_scratch *S)
{
	S->b = malloc((size_t) VIEW_PYR_BUCKETS * 2 * VIEW_PYR_VALUES * sizeof *S->b);
	S->bn = malloc(VIEW_PYR_BUCKETS * sizeof *S->bn);
	S->cb = malloc(VIEW_PYR_BUCKETS * sizeof *S->cb);
	/* every level: at most 2 * VIEW_PYR_BUCKETS buckets in all */
	S->out = malloc((size_t) 2 * VIEW_PYR_BUCKETS * (1 + 2 * VIEW_PYR_VALUES) * sizeof *S->out);
	return S->b != NULL && S->bn != NULL && S->cb != NULL && S->out != NULL ? 0 : -1;
}

static void scratch_free(struct pyr_scratch *S)
{
	free(S->b);
	free(S->bn);
	free(S->cb);
	free(S->out);
}

static int pyramid(struct view_track *t, int64_t dur, int counter, struct pyr_scratch *S)
{
	if (t->count == 0 || dur <= 0)
		return 0;
	/* the finest level: no more buckets than intervals (rounded up to a
	 * power of two), at most VIEW_PYR_BUCKETS */
	int64_t most = 1;
	while (most < VIEW_PYR_BUCKETS && (uint64_t) most < t->count)
		most *= 2;
	int kmin = 0;
	while (((dur - 1) >> kmin) + 1 > most)
		kmin++;
	struct pv *b = S->b;
	int *bn = S->bn;
	struct cnt *cb = S->cb;
	if (t->sp != NULL) {
		/* built as the intervals arrived: its buckets merged up to kmin */
		while (t->sp->k < kmin)
			spyr_coarsen(t->sp);
		kmin = t->sp->k;
		b = t->sp->b;
		bn = t->sp->bn;
		cb = t->sp->cb;
	}
	int ktop = kmin;
	while (((dur - 1) >> ktop) + 1 > 1)
		ktop++;
	t->kmin = kmin;
	t->nlev = ktop - kmin + 1;
	size_t nb = (size_t) (((dur - 1) >> kmin) + 1);
	t->off = malloc(((size_t) t->nlev + 1) * sizeof *t->off);
	if (t->off == NULL)
		return -1;
	int64_t *out = S->out;
	if (t->sp == NULL) {
		/* the finest level from the intervals */
		memset(bn, 0, nb * sizeof *bn);
		memset(cb, 0, nb * sizeof *cb);
		for (size_t i = 0; i < t->n; i++) {
			const struct view_iv *x = &t->iv[i];
			int64_t e = x->end > dur ? dur : x->end;
			if (counter)
				level_add(NULL, NULL, cb, kmin, x->start, e, x->value, nb);
			else
				level_add(b, bn, NULL, kmin, x->start, e, x->value, nb);
		}
	}
	size_t w = 0;
	for (int j = 0; j < t->nlev; j++) {
		size_t n = ((nb - 1) >> j) + 1;
		if (j > 0) {
			/* this level from the one below: bucket k of pairs 2k, 2k+1 */
			size_t below = ((nb - 1) >> (j - 1)) + 1;
			for (size_t k = 0; k < n; k++) {
				if (counter)
					cb[k] = merge_cnt(cb, 2 * k, 2 * k + 1, 2 * k + 1 < below);
				else
					merge_pv(b, bn, k, 2 * k, 2 * k + 1, 2 * k + 1 < below);
			}
		}
		t->off[j] = w;
		for (size_t k = 0; k < n; k++) {
			if (counter) {
				if (cb[k].covered == 0) {
					out[w++] = 0;
					continue;
				}
				out[w++] = 3;
				out[w++] = cb[k].min;
				out[w++] = cb[k].max;
				double mean = cb[k].sum / (double) cb[k].covered;
				out[w++] = (int64_t) (mean < 0 ? mean - 0.5 : mean + 0.5);
				continue;
			}
			struct pv tmp[2 * VIEW_PYR_VALUES];
			int tn = bn[k];
			memcpy(tmp, &b[k * 2 * VIEW_PYR_VALUES], (size_t) tn * sizeof *tmp);
			sort_pv_desc(tmp, tn);
			if (tn > VIEW_PYR_VALUES)
				tn = VIEW_PYR_VALUES;
			out[w++] = tn;
			for (int q = 0; q < tn; q++) {
				out[w++] = tmp[q].v;
				out[w++] = tmp[q].t;
			}
		}
	}
	t->off[t->nlev] = w;
	t->pyr = malloc((w + 1) * sizeof *t->pyr);
	if (t->pyr == NULL)
		return -1;
	memcpy(t->pyr, out, w * sizeof *out);
	return 0;
}

/* The pyramids of the tracks, each taken by the next thread free (*next,
 * shared; every track's own: threads share nothing else but vd, read
 * only). Taking every other track had left one thread with most of the
 * large ones. */
struct pyr_job {
	struct view_data *vd;
	atomic_size_t *next;
	int r;
};

static void *pyr_run(void *arg)
{
	struct pyr_job *j = arg;
	struct view_data *vd = j->vd;
	struct pyr_scratch S;
	j->r = scratch_init(&S);
	for (;;) {
		if (j->r != 0)
			break;
		size_t i = atomic_fetch_add_explicit(j->next, 1, memory_order_relaxed);
		if (i >= vd->nrows * vd->nchans)
			break;
		j->r = pyramid(&vd->tracks[i], vd->duration, vd->chans[i % vd->nchans].counter, &S);
	}
	scratch_free(&S);
	return NULL;
}

static int vo_close(struct out *out, int64_t duration, char *err, size_t errlen)
{
	struct vout *o = (struct vout *) out;
	struct view_data *vd = o->vd;
	collector_stop(o);
	if (vd->failed)
		goto oom;
	vd->duration = duration;
	for (size_t i = 0; i < vd->nrows * vd->nchans; i++) {
		struct view_track *t = &vd->tracks[i];
		if (t->ovalue != 0 && put(vd, t, t->ostart, duration, t->ovalue) != 0)
			goto oom;
		t->ovalue = 0;
	}
	if (vd->kept > vd->keep && drop_largest(vd) != 0)
		goto oom;
	for (size_t i = 0; i < vd->nrows * vd->nchans; i++) {
		struct view_track *t = &vd->tracks[i];
		if (t->sp == NULL)
			t->count = t->n;
		if (t->sbuf != NULL && spill_flush(vd, t) != 0)
			goto oom;
		free(t->sbuf);
		t->sbuf = NULL;
	}
	/* the labels known at the end (task types) */
	for (size_t id = 0; id < vd->ncat; id++) {
		size_t c = vd->chan_of_id[id];
		const struct emu_cat_entry *e = emu_cat_at(o->emu, id);
		if (c == SIZE_MAX || e->info == NULL || !e->info->dyn_values)
			continue;
		struct view_chan *vc = &vd->chans[c];
		size_t cap = vc->nlabels;
		for (size_t k = 0; k < e->info->ndyn; k++)
			if (add_label(vc, &cap, e->info->dyn[k].value, e->info->dyn[k].label) != 0)
				goto oom;
		sort_labels(vc);
	}
	/* the pyramids: every other track on a second thread, if any */
	atomic_size_t next;
	atomic_init(&next, 0);
	struct pyr_job pj[2] = { { vd, &next, 0 }, { vd, &next, 0 } };
	pthread_t th;
	int two = o->th_ok_cpus && pthread_create(&th, NULL, pyr_run, &pj[1]) == 0;
	pyr_run(&pj[0]);
	if (two)
		pthread_join(th, NULL);
	if (pj[0].r != 0 || (two && pj[1].r != 0))
		goto oom;
	vd->complete = 1;
	return 0;
oom:
	vd->failed = 1;
	fail_message(vd, err, errlen);
	return -1;
}

static int vo_commit(struct out *out, char *err, size_t errlen)
{
	(void) err;
	(void) errlen;
	collector_stop((struct vout *) out);
	free(out);
	return 0;
}

static void vo_discard(struct out *out)
{
	struct vout *o = (struct vout *) out;
	collector_stop(o);
	view_data_clear(o->vd);
	free(out);
}

static const struct out_ops vo_ops = {
	.name = "view",
	.internal = 0,
	.records = vo_records,
	.close = vo_close,
	.commit = vo_commit,
	.discard = vo_discard,
};

/* The rows and channels, from the system and the catalogue. */
static int setup(struct view_data *vd, const struct emu *emu)
{
	const struct emu_sys *sys = emu_system(emu);
	vd->nrows = sys->nthreads + sys->ncpus;
	vd->rows = calloc(vd->nrows + 1, sizeof *vd->rows);
	vd->ncat = emu_cat_count(emu);
	vd->chans = calloc(vd->ncat + 1, sizeof *vd->chans);
	vd->chan_of_id = malloc((vd->ncat + 1) * sizeof *vd->chan_of_id);
	if (vd->rows == NULL || vd->chans == NULL || vd->chan_of_id == NULL)
		return -1;
	for (size_t i = 0; i < sys->nthreads; i++) {
		const struct emu_sys_thread *t = &sys->threads[i];
		struct view_row *r = &vd->rows[i];
		r->view = 0;
		r->index = i;
		r->label = dup_s(t->label);
		r->loom = dup_s(sys->looms[t->loom].name);
		r->pid = sys->procs[t->proc].pid;
		if (r->label == NULL || r->loom == NULL)
			return -1;
	}
	for (size_t i = 0; i < sys->ncpus; i++) {
		const struct emu_sys_cpu *c = &sys->cpus[i];
		struct view_row *r = &vd->rows[sys->nthreads + i];
		r->view = 1;
		r->index = i;
		r->label = dup_s(c->label);
		r->loom = dup_s(sys->looms[c->loom].name);
		if (r->label == NULL || r->loom == NULL)
			return -1;
	}
	for (size_t id = 0; id < vd->ncat; id++) {
		vd->chan_of_id[id] = SIZE_MAX;
		const struct emu_cat_entry *e = emu_cat_at(emu, id);
		/* as weft sql's channel table: a Paraver type, a thread or CPU view */
		if (e->prv_type == 0 || !(e->scope & (EMU_SCOPE_THREAD | EMU_SCOPE_CPU)))
			continue;
		struct view_chan *c = &vd->chans[vd->nchans];
		c->name = dup_s(e->name);
		c->model = dup_s(e->model);
		c->kind = kind_name(e);
		c->scope = e->scope & (EMU_SCOPE_THREAD | EMU_SCOPE_CPU);
		c->counter = e->kind == EMU_CAT_COUNTER;
		if (c->name == NULL || c->model == NULL)
			return -1;
		vd->chan_of_id[id] = vd->nchans++;
		size_t cap = 0;
		for (size_t k = 0; k < e->nvalues; k++) {
			int64_t v = e->values != NULL ? e->values[k].value : e->mvalues[k].value;
			const char *l = e->values != NULL ? e->values[k].label : e->mvalues[k].label;
			if (add_label(c, &cap, v, l) != 0)
				return -1;
		}
		sort_labels(c);
	}
	vd->tracks = calloc(vd->nrows * vd->nchans + 1, sizeof *vd->tracks);
	return vd->tracks != NULL ? 0 : -1;
}

struct out *view_out_open(struct view_data *vd, const struct emu *emu, char *err,
		size_t errlen)
{
	struct vout *o = calloc(1, sizeof *o);
	if (vd->rows != NULL) {
		free(o);
		snprintf(err, errlen, "one collection per run");
		return NULL;
	}
	if (o == NULL || setup(vd, emu) != 0) {
		view_data_clear(vd);
		free(o);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	o->base.ops = &vo_ops;
	o->vd = vd;
	o->emu = emu;
	o->nthreads = emu_system(emu)->nthreads;
	o->tnow = INT64_MIN;
	/* WEFT_VIEW_THREAD=off: the collection inline (tests compare both) */
	const char *env = getenv("WEFT_VIEW_THREAD");
	int want = env != NULL ? strcmp(env, "off") != 0 : sysconf(_SC_NPROCESSORS_ONLN) > 1;
	o->th_ok_cpus = want;
	if (want && pthread_mutex_init(&o->mu, NULL) == 0) {
		if (pthread_cond_init(&o->cv, NULL) != 0) {
			pthread_mutex_destroy(&o->mu);
		} else if (pthread_create(&o->th, NULL, collector, o) != 0) {
			pthread_cond_destroy(&o->cv);
			pthread_mutex_destroy(&o->mu);
		} else {
			o->th_ok = 1;
		}
	}
	return &o->base;
}
