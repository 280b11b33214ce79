/* SPDX-License-Identifier: MIT */
/*
 * paraver_prv.c - the Paraver output: thread.prv and cpu.prv (one event
 * record per line, buffered), and at close their .pcf and .row files; each
 * written aside and renamed at the commit (out_file.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/vfs.h>
#endif

#include "num_format.h"
#include "out_file.h"
#include "paraver.h"

/* The text is written in pieces that end at multiples of WRITE_ALIGN in
 * the file (the last line, past the end of a piece, moves to the front of
 * the buffer): the page cache then takes whole large folios, which costs
 * the kernel about a fifth less than writes at any offset (measured on
 * ext4). A piece stays small enough to be copied from the cache. */
#define WRITE_ALIGN (1u << 17)
/* More than a record's text (at most 73 bytes) and than the bytes stored
 * from its start (at most 80: fields are copied by whole words). */
#define PRV_MAX_LINE 128
#define TXT_BUF (WRITE_ALIGN + PRV_MAX_LINE)

/* "2:0:1:1:<row>:" for each row, built once (32 bytes: an index is a shift). */
struct prefix {
	char s[31];
	uint8_t len;
};

/* The time string "<t>:" of the last record, as three little-endian words
 * (24 bytes). fmt_chunk keeps them in registers and copies them out with
 * word stores; the common step (the last digit grows without a carry) is an
 * add on one word, so no byte store is ever followed by a wider load of the
 * same bytes (a store-forwarding stall per record). The word holding the
 * last digit is kept apart (a) and stored last, over its stale copy among
 * w0-w2: a step changes one register, whichever word it is. */
struct tcur {
	uint64_t w0, w1, w2;
	uint64_t a;    /* the word holding the last digit */
	uint64_t ka;   /* its byte offset in the string: 0, 8 or 16 */
	uint64_t sh;   /* the last digit's bit offset in a */
	uint64_t dlim; /* a step by less than dlim may be made in a: 10, or 0 */
	uint64_t len;  /* bytes in use */
	int64_t t;
};

/* Records are kept as the emulation hands them over; the text is made later. */
#define brec emu_prv_rec

/* The text "<v>\n" of values of 10^8 and more (and negative ones), in a
 * direct-mapped cache by a hash of the value: the large values of a
 * timeline are few or come back soon (task types, thread and process ids,
 * the ids of running tasks), and a hit is a copy rather than a conversion.
 * Values from 1000 to 10^8 are converted (put_u27): as many miss (task ids
 * that come once), and a miss costs much more than a conversion. */
#define BIG_SLOTS 256
struct big_ent {
	int64_t v;   /* 0: empty (never a large value) */
	char s[23];  /* up to "-9223372036854775808\n" */
	uint8_t len;
};

/* One .prv file: its descriptor and the text side of its records. */
struct prv {
	struct out_file f; /* f.fd: the temporary's descriptor; f.path: the final name */
	size_t nrows;
	struct prefix *rows;
	char *txt;
	size_t tlen;
	uint64_t off; /* file offset of txt[0] */
	struct tcur tc; /* the time string of the last record */
	struct big_ent *big; /* BIG_SLOTS */
	int werr; /* first write error (errno) */
	uint64_t resv; /* blocks are reserved up to this file offset (0: none) */
	int noresv; /* fallocate failed: plain writes only */
	const uint64_t *tword; /* the run's: channel id -> "<type>:" (struct paraver) */
	const int32_t *ptype;  /* ... and its Paraver type */
};

/* A batch of the engine: the records of every view's file. */
struct job {
	const struct brec *r[EMU_MAX_VIEWS];
	size_t n[EMU_MAX_VIEWS];
};

/* A writer thread turns the batches into text and writes them while the
 * emulation makes the next batches: the engine keeps a batch's arrays for
 * EMU_BATCH_KEEP further calls (emu.h), so up to that many batches are
 * queued without copying a record. A batch is two parts, one per file; the
 * parts of a file are written in order by one thread at a time, and when
 * the queue is full the emulation thread writes parts itself instead of
 * waiting, so the work is shared by whichever thread is free. Without the
 * thread the same work is done inline. */
struct paraver {
	struct out base;
	const struct emu *emu;
	char *dir;
	struct prv prv[EMU_MAX_VIEWS]; /* thread, cpu, breakdowns */
	struct out_file aux[EMU_MAX_VIEWS][2]; /* their .pcf and .row */
	int write_aux; /* the aux parameter: write the .pcf and .row files */
	int nfiles;
	pthread_t th;
	int th_ok;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* any change of the queue */
	struct job jobs[EMU_BATCH_KEEP]; /* batch k in jobs[k % EMU_BATCH_KEEP] */
	uint64_t pushed;   /* batches queued so far */
	uint64_t next[EMU_MAX_VIEWS]; /* per file: the next batch whose part is to be written */
	int busy[EMU_MAX_VIEWS];      /* per file: a thread is writing a part */
	int stop;
	/* Per catalogue id, its Paraver type (records carry the id) and the
	 * text "<type>:" as a word of small (its length in the top byte; 0:
	 * longer than 7 bytes, written from ptype): one indexed load a record,
	 * as the type's small[] word was when records carried the type. */
	uint64_t *tword;
	int32_t *ptype;
};

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

/* The blocks of a .prv file are reserved ahead of the writes, RESV_STEP
 * bytes at a time, with fallocate(FALLOC_FL_KEEP_SIZE): ext4 then maps
 * each written page to a block already allocated instead of reserving a
 * delayed allocation for it (a quarter of the kernel's time in the writes
 * apart from the copy, measured). The file's size stays the bytes written;
 * at close, ftruncate to that size frees the blocks reserved past it (a
 * generic test of xfstests, generic/315, checks it). A process killed
 * (SIGKILL) before the close leaves its unfinished temporaries
 * (.NAME.weft-XXXXXX, out_file.h), each with up to RESV_STEP bytes of blocks
 * reserved past its end, until they are removed. Where fallocate fails (a
 * file system without it, no space left), the writes go on without it: a
 * real error is then the write's. Nothing is reserved once the file system has less than
 * RESV_MIN_FREE bytes free, so that a reservation never makes a write of
 * another file fail for want of space. The last write of a file (at close)
 * reserves nothing, so a small file is written as before. */
#define RESV_STEP ((uint64_t) 64 << 20)
#define RESV_MIN_FREE ((uint64_t) 1 << 30)

static void reserve_to(struct prv *p, uint64_t end)
{
#if defined(__linux__) && defined(FALLOC_FL_KEEP_SIZE)
	if (p->noresv || end <= p->resv)
		return;
	uint64_t from = p->resv > p->off ? p->resv : p->off;
	struct statfs fs;
	if (fstatfs(p->f.fd, &fs) != 0 || (uint64_t) fs.f_bavail * (uint64_t) fs.f_bsize < RESV_MIN_FREE) {
		p->noresv = 1;
		return;
	}
	if (fallocate(p->f.fd, FALLOC_FL_KEEP_SIZE, (off_t) from, (off_t) RESV_STEP) == 0)
		p->resv = from + RESV_STEP;
	else
		p->noresv = 1;
#else
	(void) p;
	(void) end;
#endif
}

/* Writes n bytes of text at the file offset p->off and moves it on (with
 * more to come: reserve, blocks are reserved ahead); 0 or an errno. */
static int prv_write(struct prv *p, const char *b, size_t n, int reserve)
{
	if (reserve)
		reserve_to(p, p->off + n);
	int e = write_all(p->f.fd, b, n);
	if (e == 0)
		p->off += n;
	return e;
}

/* Writes the header at the current offset (the same length whatever the
 * duration); 0 or an errno. */
static int prv_header(struct prv *p, int64_t duration)
{
	char h[128];
	int n = snprintf(h, sizeof h, "#Paraver (19/01/38 at 03:14):%020" PRId64 "_ns:0:1:1(%zu:1)\n",
			duration, p->nrows);
	if (n < 0 || (size_t) n >= sizeof h)
		return EINVAL;
	return write_all(p->f.fd, h, (size_t) n);
}

/* ---- text ---- */

/* Decimal text (num_format.h, shared with weft dump): put_u27 writes v <
 * 10^8 storing 8 bytes, put_u64 any value storing up to 7 bytes past its
 * end. */
#define put_u27 weft_num_u27
#define put_u64 weft_num_u64

static char *put_i64(char *o, int64_t v)
{
	if (v < 0) {
		*o++ = '-';
		return put_u64(o, (uint64_t) 0 - (uint64_t) v);
	}
	return put_u64(o, (uint64_t) v);
}

/* "<n>:" and "<n>\n" for n < 1000, in the low bytes of a word (first byte
 * lowest: the writer is little-endian only), with their length in its top
 * byte: one load, one store of the whole word (the bytes past the text are
 * overwritten by the next field or lie past the end of the text). Constants
 * computed by the compiler: read-only, shared by every writer thread. */
#define SW_DIG(n) ((uint64_t) ('0' + (n)))
#define SW_WORD(n, end) ((n) < 10 ? \
	(SW_DIG(n) | (uint64_t) (end) << 8 | UINT64_C(2) << 56) : (n) < 100 ? \
	(SW_DIG((n) / 10) | SW_DIG((n) % 10) << 8 | (uint64_t) (end) << 16 | UINT64_C(3) << 56) : \
	(SW_DIG((n) / 100) | SW_DIG((n) / 10 % 10) << 8 | SW_DIG((n) % 10) << 16 | \
	 (uint64_t) (end) << 24 | UINT64_C(4) << 56))
#define SW_10(b, e) SW_WORD((b), e), SW_WORD((b) + 1, e), SW_WORD((b) + 2, e), \
	SW_WORD((b) + 3, e), SW_WORD((b) + 4, e), SW_WORD((b) + 5, e), SW_WORD((b) + 6, e), \
	SW_WORD((b) + 7, e), SW_WORD((b) + 8, e), SW_WORD((b) + 9, e)
#define SW_100(b, e) SW_10((b), e), SW_10((b) + 10, e), SW_10((b) + 20, e), \
	SW_10((b) + 30, e), SW_10((b) + 40, e), SW_10((b) + 50, e), SW_10((b) + 60, e), \
	SW_10((b) + 70, e), SW_10((b) + 80, e), SW_10((b) + 90, e)
#define SW_1000(e) SW_100(0, e), SW_100(100, e), SW_100(200, e), SW_100(300, e), \
	SW_100(400, e), SW_100(500, e), SW_100(600, e), SW_100(700, e), SW_100(800, e), \
	SW_100(900, e)

static const uint64_t small[1000] = { SW_1000(':') };     /* "<n>:" */
static const uint64_t small_nl[1000] = { SW_1000('\n') }; /* "<n>\n" */

/* Copies a text word of small or small_nl to o; returns the end. */
static inline char *put_small(char *o, uint64_t x)
{
	memcpy(o, &x, 8);
	return o + (x >> 56);
}

/* The word of "<type>:" as small[] holds it (its length in the top byte),
 * for a type of up to 6 digits; 0 for another (written with put_i64). */
static uint64_t type_word(int type)
{
	if (type >= 0 && type < 1000)
		return small[type];
	if (type < 0 || type >= 1000000)
		return 0;
	char s[8] = { 0 };
	int n = snprintf(s, sizeof s, "%d:", type);
	uint64_t w = 0;
	memcpy(&w, s, 7);
	return w | (uint64_t) n << 56;
}

/* Any step: the previous string advanced by decimal addition when the time
 * grows by less than 10^6, else written anew (the common steps are in
 * time_step). */
__attribute__((noinline))
static struct tcur time_str_slow(struct tcur c, int64_t t)
{
	char s[24];
	memcpy(s, &c.w0, 8);
	memcpy(s + 8, &c.w1, 8);
	memcpy(s + 16, &c.w2, 8);
	memcpy(s + c.ka, &c.a, 8);
	int done = 0;
	if (c.len > 1 && t > c.t && c.t >= 0 && t - c.t < 1000000) {
		uint64_t d = (uint64_t) (t - c.t);
		char *q = s + c.len - 2; /* the last digit */
		unsigned carry = 0;
		while ((d != 0 || carry != 0) && q >= s) {
			unsigned dig = (unsigned) (*q - '0') + (unsigned) (d % 10) + carry;
			d /= 10;
			carry = dig >= 10;
			*q-- = (char) ('0' + (carry ? dig - 10 : dig));
		}
		done = d == 0 && carry == 0;
	}
	if (!done) {
		char *e = put_i64(s, t);
		*e++ = ':';
		c.len = (uint64_t) (e - s);
	}
	c.t = t;
	memcpy(&c.w0, s, 8);
	memcpy(&c.w1, s + 8, 8);
	memcpy(&c.w2, s + 16, 8);
	uint64_t k = c.len - 2; /* the last digit */
	c.ka = k & ~(uint64_t) 7;
	c.sh = (k & 7) * 8;
	memcpy(&c.a, s + c.ka, 8);
	/* A step in a changes the last two digits only: from t at most 99 up,
	 * so no step ends past INT64_MAX (t > c.t then holds as unsigned d
	 * < 10 tells). Negative times ("-") are written anew. */
	c.dlim = t >= 0 && t <= INT64_MAX - 200 ? 10 : 0;
	return c;
}

/* Advances the time string to t (!= c->t) by d = t - c->t < 10 in the word
 * a: the last digit grows, with at most one carry into the digit before it
 * in the same word. 0 when that is not enough. */
static inline int time_step(struct tcur *c, int64_t t)
{
	uint64_t d = (uint64_t) t - (uint64_t) c->t;
	if (d >= c->dlim)
		return 0;
	uint64_t a = c->a, sh = c->sh;
	if (((a >> sh) & 0xff) + d <= '9') {
		a += d << sh;
	} else {
		/* about every other step when the time grows by a few ns */
		if (sh == 0 || ((a >> (sh - 8)) & 0xff) >= '9')
			return 0;
		a = a - ((10 - d) << sh) + ((uint64_t) 1 << (sh - 8));
	}
	c->a = a;
	c->t = t;
	return 1;
}

/* Writes "<v>\n" for a value of 10^8 or more, or negative, at o (storing
 * up to 24 bytes); returns the end. */
static inline char *put_big(struct big_ent *big, char *o, int64_t v)
{
	struct big_ent *b = &big[((uint64_t) v * UINT64_C(0x9e3779b97f4a7c15)) >> 56];
	if (b->v != v) {
		char tmp[32] = { 0 };
		char *e = put_i64(tmp, v);
		*e++ = '\n';
		memcpy(b->s, tmp, sizeof b->s);
		b->len = (uint8_t) (e - tmp);
		b->v = v;
	}
	memcpy(o, b->s, sizeof b->s);
	return o + b->len;
}

/* Turns n records into text, writing out full buffers; 0 or an errno. */
static int fmt_chunk(struct prv *p, const struct brec *r, size_t n)
{
	char *const base = p->txt;
	/* the end of the piece: the next multiple of WRITE_ALIGN in the file */
	char *lim = base + (WRITE_ALIGN - p->off % WRITE_ALIGN);
	char *o = base + p->tlen;
	const struct prefix *const rows = p->rows;
	struct tcur c = p->tc;
	int err = 0;
	size_t i = 0;
	while (i < n) {
		if (__builtin_expect(o >= lim, 0)) {
			size_t out = (size_t) (lim - base);
			err = prv_write(p, base, out, 1);
			if (err != 0)
				break;
			memmove(base, lim, (size_t) (o - lim));
			o = base + (o - lim);
			lim = base + WRITE_ALIGN;
		}
		/* The records that surely start before lim (each is shorter
		 * than PRV_MAX_LINE) go without a test of o. */
		size_t m = (size_t) (lim - o - 1) / PRV_MAX_LINE + 1;
		size_t end = n - i > m ? i + m : n;
		for (; i < end; i++) {
			/* The records were written by the emulation thread on
			 * another CPU: fetch ahead (past the end too: a prefetch
			 * never faults). */
			__builtin_prefetch((const void *) ((uintptr_t) &r[i] + 24 * sizeof *r));
			int64_t t = r[i].time;
			if (t != c.t && !time_step(&c, t))
				c = time_str_slow(c, t);
			const struct prefix *pre = &rows[r[i].row];
			memcpy(o, pre->s, sizeof *pre);
			o += pre->len;
			memcpy(o, &c.w0, 8);
			memcpy(o + 8, &c.w1, 8);
			memcpy(o + 16, &c.w2, 8);
			memcpy(o + c.ka, &c.a, 8);
			o += c.len;
			uint64_t tw = p->tword[r[i].chan];
			if (__builtin_expect((tw >> 56) != 0, 1)) {
				o = put_small(o, tw);
			} else {
				o = put_i64(o, p->ptype[r[i].chan]);
				*o++ = ':';
			}
			int64_t v = r[i].value;
			if ((uint64_t) v < 1000) {
				o = put_small(o, small_nl[v]);
			} else if ((uint64_t) v < 100000000) {
				o = put_u27(o, (uint32_t) v);
				*o++ = '\n';
			} else {
				o = put_big(p->big, o, v);
			}
		}
	}
	p->tlen = (size_t) (o - base);
	p->tc = c;
	return err;
}

static int fmt_flush(struct prv *p)
{
	int e = p->tlen > 0 ? prv_write(p, p->txt, p->tlen, 0) : 0;
	p->tlen = 0;
	return e;
}

/* ---- the writer thread ---- */

static uint64_t done_upto(const struct paraver *pv)
{
	uint64_t m = pv->next[0];
	for (int k = 1; k < pv->nfiles; k++)
		if (pv->next[k] < m)
			m = pv->next[k];
	return m;
}

/* Under mu: picks the file of the oldest part that can be written now
 * (queued, and its file not being written), or -1. */
static int pick_part(const struct paraver *pv)
{
	int f = -1;
	for (int k = 0; k < pv->nfiles; k++)
		if (!pv->busy[k] && pv->next[k] < pv->pushed && (f < 0 || pv->next[k] < pv->next[f]))
			f = k;
	return f;
}

/* The emulation wakes a waiting writer once this many batches are queued,
 * not at each one: the writer, faster than the emulation, would otherwise
 * sleep and be woken at every batch (a wake-up costs the emulation thread a
 * system call and, in a VM, an interrupt to the other CPU). Less than
 * EMU_BATCH_KEEP, so the writer is awake before the queue is full. */
#define WAKE_AT 3
_Static_assert(WAKE_AT < EMU_BATCH_KEEP, "the writer must be woken before the queue is full");

static void bump(struct paraver *pv)
{
	pthread_cond_broadcast(&pv->cv);
}

/* Under mu (released while writing): writes the next part of file f. */
static void write_part(struct paraver *pv, int f)
{
	struct prv *p = &pv->prv[f];
	const struct job *j = &pv->jobs[pv->next[f] % EMU_BATCH_KEEP];
	const struct brec *r = j->r[f];
	size_t n = j->n[f];
	pv->busy[f] = 1;
	pthread_mutex_unlock(&pv->mu);
	if (p->werr == 0 && n > 0) {
		int e = fmt_chunk(p, r, n);
		if (e != 0)
			__atomic_store_n(&p->werr, e, __ATOMIC_RELAXED);
	}
	pthread_mutex_lock(&pv->mu);
	pv->busy[f] = 0;
	pv->next[f]++;
	bump(pv);
}

/* Under mu: waits for a change of the queue. (Polling first was tried: on
 * the 2-vCPU development VM it cost more CPU than it saved.) */
static void wait_change(struct paraver *pv)
{
	pthread_cond_wait(&pv->cv, &pv->mu);
}

static void *writer_thread(void *arg)
{
	struct paraver *pv = arg;
	pthread_mutex_lock(&pv->mu);
	for (;;) {
		int f = pick_part(pv);
		if (f >= 0) {
			write_part(pv, f);
			continue;
		}
		if (pv->stop && done_upto(pv) == pv->pushed)
			break;
		wait_change(pv);
	}
	pthread_mutex_unlock(&pv->mu);
	return NULL;
}

static int prv_open(struct prv *p, const char *dir, const char *name, size_t nrows,
		char *err, size_t errlen)
{
	p->txt = malloc(TXT_BUF);
	p->big = calloc(BIG_SLOTS, sizeof *p->big);
	p->rows = calloc(nrows + 1, sizeof *p->rows);
	if (!p->txt || p->rows == NULL || p->big == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (size_t r = 0; r < nrows; r++)
		p->rows[r].len = (uint8_t) snprintf(p->rows[r].s, sizeof p->rows[r].s,
				"2:0:1:1:%zu:", r + 1);
	p->nrows = nrows;
	struct tcur t0 = { .len = 0 };
	p->tc = time_str_slow(t0, 0); /* "0:" */
	if (out_file_open(&p->f, dir, name, err, errlen) != 0)
		return -1;
	int e = prv_header(p, 0);
	p->off = (uint64_t) lseek(p->f.fd, 0, SEEK_CUR);
	if (e != 0) {
		snprintf(err, errlen, "cannot write %s: %s", p->f.path, strerror(e));
		return -1;
	}
	return 0;
}

/* Waits until every queued batch is written and stops the thread. */
static void writer_stop(struct paraver *pv)
{
	if (!pv->th_ok)
		return;
	pthread_mutex_lock(&pv->mu);
	pv->stop = 1;
	bump(pv);
	pthread_mutex_unlock(&pv->mu);
	pthread_join(pv->th, NULL);
	pthread_mutex_destroy(&pv->mu);
	pthread_cond_destroy(&pv->cv);
	pv->th_ok = 0;
}

static int prv_close(struct prv *p, int64_t duration, char *err, size_t errlen)
{
	int r = 0;
	if (p->f.fd >= 0) {
		if (p->werr == 0)
			p->werr = fmt_flush(p);
		/* The blocks reserved past the end are freed (on ext4, a
		 * truncation to the same size does it); after an error too, at
		 * the end of what was written (a short write moved the offset
		 * past p->off). */
		if (p->resv > p->off) {
			off_t end = lseek(p->f.fd, 0, SEEK_CUR);
			int e;
			while ((e = ftruncate(p->f.fd, end >= 0 ? end : (off_t) p->off)) != 0
					&& errno == EINTR)
				;
			if (e != 0 && p->werr == 0)
				p->werr = errno ? errno : EIO;
		}
		if (p->werr == 0 && lseek(p->f.fd, 0, SEEK_SET) != 0)
			p->werr = errno ? errno : EIO;
		if (p->werr == 0)
			p->werr = prv_header(p, duration);
		int e = out_file_close_fd(&p->f);
		if (e != 0 && p->werr == 0)
			p->werr = e;
		if (p->werr != 0) {
			snprintf(err, errlen, "cannot write %s: %s", p->f.path, strerror(p->werr));
			r = -1;
		}
	}
	return r;
}

/* The buffers freed, and the file renamed over its final name (commit) or
 * removed; 0, or -1 with err. */
static int prv_end(struct prv *p, int commit, char *err, size_t errlen)
{
	int r = 0;
	if (commit)
		r = out_file_commit(&p->f, err, errlen);
	else
		out_file_discard(&p->f);
	free(p->txt);
	free(p->big);
	free(p->rows);
	memset(p, 0, sizeof *p);
	out_file_init(&p->f);
	return r;
}

static int paraver_records(void *self, const struct emu_batch *b, char *err, size_t errlen)
{
	struct paraver *pv = self;
	/* An empty batch is queued too: the engine counts every call. */
	struct job j;
	for (int f = 0; f < EMU_MAX_VIEWS; f++) {
		j.r[f] = b->prv[f];
		j.n[f] = f < pv->nfiles ? b->nprv[f] : 0;
	}
	if (!pv->th_ok) {
		for (int f = 0; f < pv->nfiles; f++)
			if (pv->prv[f].werr == 0 && j.n[f] > 0)
				pv->prv[f].werr = fmt_chunk(&pv->prv[f], j.r[f], j.n[f]);
	} else {
		pthread_mutex_lock(&pv->mu);
		/* At most EMU_BATCH_KEEP batches in flight: the oldest is written
		 * before the engine reuses its arrays. While the queue is full,
		 * help the writer. */
		while (pv->pushed - done_upto(pv) == EMU_BATCH_KEEP) {
			int f = pick_part(pv);
			if (f >= 0)
				write_part(pv, f);
			else
				wait_change(pv);
		}
		pv->jobs[pv->pushed % EMU_BATCH_KEEP] = j;
		pv->pushed++;
		if (pv->pushed - done_upto(pv) >= WAKE_AT)
			bump(pv);
		pthread_mutex_unlock(&pv->mu);
	}
	for (int f = 0; f < pv->nfiles; f++) {
		/* Read without the lock: a stale 0 only reports the error one
		 * batch later; it is set once. */
		int e = __atomic_load_n(&pv->prv[f].werr, __ATOMIC_RELAXED);
		if (e != 0) {
			snprintf(err, errlen, "cannot write %s: %s", pv->prv[f].f.path, strerror(e));
			return -1;
		}
	}
	return 0;
}

/* The .pcf (pcf) or .row of a view, into the temporary of a. */
static int write_aux(struct out_file *a, const char *dir, const char *stem,
		const struct emu *emu, size_t view, int pcf, char *err, size_t errlen)
{
	char name[256];
	snprintf(name, sizeof name, "%s.%s", stem, pcf ? "pcf" : "row");
	if (out_file_open(a, dir, name, err, errlen) != 0)
		return -1;
	FILE *f = out_file_stream(a, "w", err, errlen);
	if (f == NULL)
		return -1;
	errno = 0;
	int r = pcf ? paraver_pcf_write(f, emu, view) : paraver_row_write(f, emu, view);
	int e = r != 0 ? errno : 0;
	if (fclose(f) != 0 && r == 0) {
		e = errno;
		r = -1;
	}
	if (r != 0)
		snprintf(err, errlen, "cannot write %s: %s", a->path, strerror(e ? e : EIO));
	return r;
}

static int paraver_close(struct out *o, int64_t duration, char *err, size_t errlen)
{
	struct paraver *pv = (struct paraver *) o;
	int r = 0;
	char e2[WEFT_ERR_MAX];
	writer_stop(pv);
	for (int k = 0; k < pv->nfiles; k++)
		if (prv_close(&pv->prv[k], duration, r ? e2 : err, r ? sizeof e2 : errlen) != 0)
			r = -1;
	for (int k = 0; k < pv->nfiles && r == 0 && pv->write_aux; k++) {
		const char *stem = emu_view_at(pv->emu, (size_t) k)->name;
		if (write_aux(&pv->aux[k][0], pv->dir, stem, pv->emu, (size_t) k, 1, err,
				errlen) != 0 || write_aux(&pv->aux[k][1], pv->dir, stem, pv->emu,
				(size_t) k, 0, err, errlen) != 0)
			r = -1;
	}
	/* the final names may still be replaced (none became a link) */
	for (int k = 0; k < pv->nfiles && r == 0; k++)
		if (out_file_check(&pv->prv[k].f, err, errlen) != 0 || (pv->write_aux &&
				(out_file_check(&pv->aux[k][0], err, errlen) != 0 ||
				out_file_check(&pv->aux[k][1], err, errlen) != 0)))
			r = -1;
	return r;
}

/* Every file renamed (commit) or removed, and the output freed. */
static int paraver_end(struct paraver *pv, int commit, char *err, size_t errlen)
{
	int r = 0;
	char e2[WEFT_ERR_MAX];
	writer_stop(pv);
	for (int k = 0; k < EMU_MAX_VIEWS; k++) {
		if (prv_end(&pv->prv[k], commit && r == 0, r ? e2 : err, r ? sizeof e2 : errlen) != 0)
			r = -1;
		for (int x = 0; x < 2; x++) {
			if (commit && r == 0)
				r = out_file_commit(&pv->aux[k][x], err, errlen);
			else
				out_file_discard(&pv->aux[k][x]);
		}
	}
	free(pv->dir);
	free(pv->tword);
	free(pv->ptype);
	free(pv);
	return r;
}

static int paraver_commit(struct out *o, char *err, size_t errlen)
{
	return paraver_end((struct paraver *) o, 1, err, errlen);
}

static void paraver_discard(struct out *o)
{
	char e2[WEFT_ERR_MAX];
	paraver_end((struct paraver *) o, 0, e2, sizeof e2);
}

static const struct out_ops paraver_ops = {
	.name = "paraver",
	.records = paraver_records,
	.close = paraver_close,
	.commit = paraver_commit,
	.discard = paraver_discard,
};

struct out *out_paraver_open(const char *dir, const struct emu *emu, const struct out_params *p,
		char *err, size_t errlen)
{
	struct paraver *pv = calloc(1, sizeof *pv);
	if (pv == NULL || (pv->dir = strdup(dir)) == NULL) {
		free(pv);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	pv->base.ops = &paraver_ops;
	pv->emu = emu;
	pv->write_aux = out_params_bool(p, "aux");
	pv->nfiles = (int) emu_nviews(emu);
	for (int k = 0; k < EMU_MAX_VIEWS; k++) {
		out_file_init(&pv->prv[k].f);
		out_file_init(&pv->aux[k][0]);
		out_file_init(&pv->aux[k][1]);
	}
	size_t ncat = emu_cat_count(emu);
	pv->tword = calloc(ncat + 1, sizeof *pv->tword);
	pv->ptype = calloc(ncat + 1, sizeof *pv->ptype);
	int bad = pv->tword == NULL || pv->ptype == NULL;
	if (bad)
		snprintf(err, errlen, "out of memory");
	for (size_t i = 0; i < ncat && !bad; i++) {
		int type = emu_cat_at(emu, i)->prv_type;
		pv->ptype[i] = type;
		pv->tword[i] = type_word(type);
	}
	for (int k = 0; k < pv->nfiles && !bad; k++) {
		const struct emu_view *v = emu_view_at(emu, (size_t) k);
		char name[256];
		snprintf(name, sizeof name, "%s.prv", v->name);
		bad = prv_open(&pv->prv[k], dir, name, v->nrows, err, errlen) != 0;
		pv->prv[k].tword = pv->tword;
		pv->prv[k].ptype = pv->ptype;
	}
	if (bad) {
		paraver_discard(&pv->base);
		return NULL;
	}
	if (pthread_mutex_init(&pv->mu, NULL) == 0) {
		pthread_cond_init(&pv->cv, NULL);
		pv->th_ok = pthread_create(&pv->th, NULL, writer_thread, pv) == 0;
		if (!pv->th_ok) {
			pthread_mutex_destroy(&pv->mu);
			pthread_cond_destroy(&pv->cv);
		}
	}
	return &pv->base;
}
