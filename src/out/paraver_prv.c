/* SPDX-License-Identifier: MIT */
/*
 * paraver_prv.c - the Paraver output: thread.prv and cpu.prv (one event
 * record per line, buffered), and at close their .pcf and .row files.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include "paraver.h"

#define BIN_RECS (1u << 14) /* records per chunk (24 bytes each) */
#define TXT_BUF (1u << 18)
#define PRV_MAX_LINE 128

/* "2:0:1:1:<row>:" for each row, built once. */
struct prefix {
	char s[30];
	uint8_t len;
};

/* Records are kept as the emulation hands them over; the text is made later. */
#define brec emu_prv_rec

/* Each .prv file has a writer thread. The emulation appends binary records
 * to one chunk while the thread turns the other into text and writes it
 * (double buffering), so formatting and the copy into the kernel overlap
 * the emulation. Without the thread the same work is done inline. */
struct prv {
	int fd;
	char *path;
	size_t nrows;
	struct prefix *rows;
	/* emulation side */
	struct brec *chunks[2];
	int cur;
	struct brec *chunk;
	size_t n;
	int werr;
	/* formatting side */
	char *txt;
	size_t tlen;
	int64_t tcache;
	char tstr[24]; /* "<time>:" */
	size_t tslen;
	/* shared with the writer thread, under mu */
	pthread_t th;
	int th_ok;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	const struct brec *job;
	size_t jobn;
	int stop;
	int th_err;
};

struct paraver {
	struct out base;
	const struct emu *emu;
	char *dir;
	struct prv prv[2]; /* thread, cpu */
};

static char *path_join(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = malloc(n);
	if (p != NULL)
		snprintf(p, n, "%s/%s", dir, name);
	return p;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return errno ? errno : EIO;
		p += w;
		n -= (size_t) w;
	}
	return 0;
}

static int prv_header(struct prv *p, int64_t duration)
{
	char h[128];
	int n = snprintf(h, sizeof h, "#Paraver (19/01/38 at 03:14):%020" PRId64 "_ns:0:1:1(%zu:1)\n",
			duration, p->nrows);
	if (n < 0 || (size_t) n >= sizeof h)
		return EINVAL;
	return write_all(p->fd, h, (size_t) n);
}

/* ---- text ---- */

static unsigned ndigits(uint64_t v)
{
	unsigned n = 1;
	while (v >= 10000) {
		v /= 10000;
		n += 4;
	}
	if (v >= 1000)
		return n + 3;
	if (v >= 100)
		return n + 2;
	if (v >= 10)
		return n + 1;
	return n;
}

static const char digits2[201] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

/* Writes v in decimal at o; returns the end. */
static char *put_u64(char *o, uint64_t v)
{
	unsigned n = ndigits(v);
	char *end = o + n;
	char *q = end;
	while (v >= 100) {
		unsigned k = (unsigned) (v % 100) * 2;
		v /= 100;
		*--q = digits2[k + 1];
		*--q = digits2[k];
	}
	if (v >= 10) {
		unsigned k = (unsigned) v * 2;
		*--q = digits2[k + 1];
		*--q = digits2[k];
	} else {
		*--q = (char) ('0' + v);
	}
	return end;
}

static char *put_i64(char *o, int64_t v)
{
	if (v < 0) {
		*o++ = '-';
		return put_u64(o, (uint64_t) 0 - (uint64_t) v);
	}
	return put_u64(o, (uint64_t) v);
}

/* "<n>:" for the small type numbers (filled before any thread starts). */
struct small_str {
	char s[4];
	uint8_t len;
};
static struct small_str small[1000];    /* "<n>:" */
static struct small_str small_nl[1000]; /* "<n>\n" */

static void small_init(void)
{
	for (unsigned i = 0; i < 1000; i++) {
		char *e = put_u64(small[i].s, i);
		*e++ = ':';
		small[i].len = (uint8_t) (e - small[i].s);
		e = put_u64(small_nl[i].s, i);
		*e++ = '\n';
		small_nl[i].len = (uint8_t) (e - small_nl[i].s);
	}
}

/* Sets p->tstr to "<t>:". Times mostly grow by small steps, so the previous
 * string is advanced by decimal addition when it can be. */
static void time_str(struct prv *p, int64_t t)
{
	if (p->tslen > 1 && t > p->tcache && p->tcache >= 0 && t - p->tcache < 1000000) {
		uint64_t d = (uint64_t) (t - p->tcache);
		char *q = p->tstr + p->tslen - 2; /* the last digit */
		unsigned carry = 0;
		while ((d != 0 || carry != 0) && q >= p->tstr) {
			unsigned dig = (unsigned) (*q - '0') + (unsigned) (d % 10) + carry;
			d /= 10;
			carry = dig >= 10;
			*q-- = (char) ('0' + (carry ? dig - 10 : dig));
		}
		if (d == 0 && carry == 0) {
			p->tcache = t;
			return;
		}
	}
	char *e = put_i64(p->tstr, t);
	*e++ = ':';
	p->tslen = (size_t) (e - p->tstr);
	p->tcache = t;
}

/* Turns n records into text, writing out full buffers; 0 or an errno. */
static int fmt_chunk(struct prv *p, const struct brec *r, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (p->tlen + PRV_MAX_LINE > TXT_BUF) {
			int e = write_all(p->fd, p->txt, p->tlen);
			p->tlen = 0;
			if (e != 0)
				return e;
		}
		if (r[i].time != p->tcache || p->tslen == 0)
			time_str(p, r[i].time);
		char *o = p->txt + p->tlen;
		const struct prefix *pre = &p->rows[r[i].row];
		memcpy(o, pre->s, sizeof pre->s);
		o += pre->len;
		memcpy(o, p->tstr, sizeof p->tstr);
		o += p->tslen;
		int32_t type = r[i].type;
		if ((uint32_t) type < 1000) {
			memcpy(o, small[type].s, 4);
			o += small[type].len;
		} else {
			o = put_i64(o, type);
			*o++ = ':';
		}
		int64_t v = r[i].value;
		if ((uint64_t) v < 1000) {
			memcpy(o, small_nl[v].s, 4);
			o += small_nl[v].len;
		} else {
			o = put_i64(o, v);
			*o++ = '\n';
		}
		p->tlen = (size_t) (o - p->txt);
	}
	return 0;
}

static int fmt_flush(struct prv *p)
{
	int e = p->tlen > 0 ? write_all(p->fd, p->txt, p->tlen) : 0;
	p->tlen = 0;
	return e;
}

/* ---- the writer thread ---- */

static void *prv_thread(void *arg)
{
	struct prv *p = arg;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (p->job == NULL && !p->stop)
			pthread_cond_wait(&p->cv, &p->mu);
		if (p->job == NULL)
			break;
		const struct brec *b = p->job;
		size_t n = p->jobn;
		int failed = p->th_err;
		pthread_mutex_unlock(&p->mu);
		int e = failed ? 0 : fmt_chunk(p, b, n);
		pthread_mutex_lock(&p->mu);
		if (e != 0 && p->th_err == 0)
			p->th_err = e;
		p->job = NULL;
		pthread_cond_broadcast(&p->cv);
	}
	int failed = p->th_err;
	pthread_mutex_unlock(&p->mu);
	int e = failed ? 0 : fmt_flush(p);
	pthread_mutex_lock(&p->mu);
	if (e != 0 && p->th_err == 0)
		p->th_err = e;
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

static int prv_open(struct prv *p, const char *dir, const char *name, size_t nrows,
		char *err, size_t errlen)
{
	p->fd = -1;
	p->path = path_join(dir, name);
	p->chunks[0] = malloc(BIN_RECS * sizeof(struct brec));
	p->chunks[1] = malloc(BIN_RECS * sizeof(struct brec));
	p->chunk = p->chunks[0];
	p->txt = malloc(TXT_BUF);
	p->rows = calloc(nrows + 1, sizeof *p->rows);
	if (p->path == NULL || !p->chunks[0] || !p->chunks[1] || !p->txt || p->rows == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (size_t r = 0; r < nrows; r++)
		p->rows[r].len = (uint8_t) snprintf(p->rows[r].s, sizeof p->rows[r].s,
				"2:0:1:1:%zu:", r + 1);
	p->nrows = nrows;
	p->fd = open(p->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (p->fd < 0) {
		snprintf(err, errlen, "cannot create %s: %s", p->path, strerror(errno));
		return -1;
	}
	int e = prv_header(p, 0);
	if (e != 0) {
		snprintf(err, errlen, "cannot write %s: %s", p->path, strerror(e));
		return -1;
	}
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	p->th_ok = pthread_create(&p->th, NULL, prv_thread, p) == 0;
	if (!p->th_ok) {
		pthread_mutex_destroy(&p->mu);
		pthread_cond_destroy(&p->cv);
	}
	return 0;
}

/* Hands the current chunk over (or formats it inline). */
static void prv_submit(struct prv *p)
{
	if (p->n == 0)
		return;
	if (!p->th_ok) {
		if (p->werr == 0)
			p->werr = fmt_chunk(p, p->chunk, p->n);
		p->n = 0;
		return;
	}
	pthread_mutex_lock(&p->mu);
	while (p->job != NULL)
		pthread_cond_wait(&p->cv, &p->mu);
	if (p->th_err != 0)
		p->werr = p->th_err;
	p->job = p->chunk;
	p->jobn = p->n;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	p->cur ^= 1;
	p->chunk = p->chunks[p->cur];
	p->n = 0;
}

/* Waits until everything is written and stops the thread. */
static void prv_stop(struct prv *p)
{
	if (!p->th_ok) {
		if (p->fd >= 0 && p->werr == 0)
			p->werr = fmt_flush(p);
		return;
	}
	pthread_mutex_lock(&p->mu);
	p->stop = 1;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->th, NULL);
	if (p->th_err != 0 && p->werr == 0)
		p->werr = p->th_err;
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	p->th_ok = 0;
}

static int prv_close(struct prv *p, int64_t duration, char *err, size_t errlen)
{
	int r = 0;
	if (p->fd >= 0) {
		prv_submit(p);
		prv_stop(p);
		if (p->werr == 0 && lseek(p->fd, 0, SEEK_SET) != 0)
			p->werr = errno ? errno : EIO;
		if (p->werr == 0)
			p->werr = prv_header(p, duration);
		if (close(p->fd) != 0 && p->werr == 0)
			p->werr = errno ? errno : EIO;
		if (p->werr != 0) {
			snprintf(err, errlen, "cannot write %s: %s", p->path, strerror(p->werr));
			r = -1;
		}
	} else if (p->th_ok) {
		prv_stop(p);
	}
	free(p->path);
	free(p->chunks[0]);
	free(p->chunks[1]);
	free(p->txt);
	free(p->rows);
	memset(p, 0, sizeof *p);
	p->fd = -1;
	return r;
}

static int paraver_records(void *self, const struct emu_batch *b, char *err, size_t errlen)
{
	struct paraver *pv = self;
	for (int f = 0; f < 2; f++) {
		struct prv *p = &pv->prv[f];
		const struct emu_prv_rec *r = b->prv[f];
		size_t n = b->nprv[f];
		while (n > 0) {
			if (p->n == BIN_RECS) {
				prv_submit(p);
				if (p->werr != 0) {
					snprintf(err, errlen, "cannot write %s: %s", p->path,
							strerror(p->werr));
					return -1;
				}
			}
			size_t k = BIN_RECS - p->n < n ? BIN_RECS - p->n : n;
			memcpy(p->chunk + p->n, r, k * sizeof *r);
			p->n += k;
			r += k;
			n -= k;
		}
	}
	return 0;
}

static int write_aux(const char *dir, const char *name, const struct emu *emu, int cpu,
		int pcf, char *err, size_t errlen)
{
	char *path = path_join(dir, name);
	if (path == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	FILE *f = fopen(path, "w");
	if (f == NULL) {
		snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
		free(path);
		return -1;
	}
	int r = pcf ? paraver_pcf_write(f, emu, cpu) : paraver_row_write(f, emu_system(emu), cpu);
	if (fclose(f) != 0)
		r = -1;
	if (r != 0)
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno ? errno : EIO));
	free(path);
	return r;
}

static int paraver_close(struct out *o, int64_t duration, char *err, size_t errlen)
{
	struct paraver *pv = (struct paraver *) o;
	int r = 0;
	char e2[WEFT_ERR_MAX];
	for (int k = 0; k < 2; k++)
		if (prv_close(&pv->prv[k], duration, r ? e2 : err, r ? sizeof e2 : errlen) != 0)
			r = -1;
	if (pv->emu != NULL && r == 0) {
		if (write_aux(pv->dir, "thread.pcf", pv->emu, 0, 1, err, errlen) != 0 ||
				write_aux(pv->dir, "thread.row", pv->emu, 0, 0, err, errlen) != 0 ||
				write_aux(pv->dir, "cpu.pcf", pv->emu, 1, 1, err, errlen) != 0 ||
				write_aux(pv->dir, "cpu.row", pv->emu, 1, 0, err, errlen) != 0)
			r = -1;
	}
	free(pv->dir);
	free(pv);
	return r;
}

static const struct out_ops paraver_ops = {
	.name = "paraver",
	.records = paraver_records,
	.close = paraver_close,
};

struct out *out_paraver_open(const char *dir, const struct emu *emu, char *err, size_t errlen)
{
	struct paraver *pv = calloc(1, sizeof *pv);
	if (pv == NULL || (pv->dir = strdup(dir)) == NULL) {
		free(pv);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	pv->base.ops = &paraver_ops;
	pv->emu = emu;
	small_init();
	pv->prv[0].fd = pv->prv[1].fd = -1;
	const struct emu_sys *sys = emu_system(emu);
	if (prv_open(&pv->prv[0], dir, "thread.prv", sys->nthreads, err, errlen) != 0 ||
			prv_open(&pv->prv[1], dir, "cpu.prv", sys->ncpus, err, errlen) != 0) {
		char e2[WEFT_ERR_MAX];
		pv->emu = NULL;
		paraver_close(&pv->base, 0, e2, sizeof e2);
		return NULL;
	}
	return &pv->base;
}
