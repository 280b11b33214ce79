/* SPDX-License-Identifier: MIT */
/* parallel.c - weft emu -j N: workers over groups of looms, their view
 * records merged in time order (parallel.h). */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "losses.h"
#include "parallel.h"
#include "salvage.h"
#include "weft/weft.h"

#define PAR_BATCH 256

/* A worker's records of a view (struct emu_prv_rec) or its internal
 * records (struct emu_rec; both begin with their int64_t time): chunks of
 * memory of their own (anonymous mappings), never moved, filled in turn,
 * from RV_MIN bytes, doubling, to RV_BIG (2 MiB). A chunk of RV_BIG is
 * faulted in at once when it is made (MADV_POPULATE_WRITE, where the
 * system has it: one call, not 512 page faults). The merge gives each
 * chunk back once it has read it, and moves its pages under the merged
 * copy (struct rpool, rdst), which so needs almost no new memory (the
 * merged copies in new memory, and their page faults, were half a -j
 * run's memory and system time). */
#define RV_MIN ((size_t) 64 << 10)
#define RV_BIG ((size_t) 2 << 20)
struct rchunk {
	char *p; /* NULL: given back */
	size_t bytes;
};
struct rvec {
	struct rchunk *c;
	size_t n;    /* records */
	size_t nc, capc, esz;
	size_t last; /* records in the last chunk */
};

static void chunk_unmap(struct rchunk c)
{
	if (c.p != NULL)
		munmap(c.p, c.bytes);
}

/* An anonymous mapping of bytes (a multiple of the page size; of RV_BIG
 * it is aligned to RV_BIG, so that moved under a merged copy its pages
 * keep their alignment there), its pages faulted in now where fill: NULL
 * when the system refuses it. */
static char *chunk_map(size_t bytes, int fill)
{
	size_t pad = bytes % RV_BIG == 0 ? RV_BIG : 0;
	void *m = mmap(NULL, bytes + pad, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			0);
	if (m == MAP_FAILED)
		return NULL;
	char *p = m;
	if (pad > 0) {
		uintptr_t a = (uintptr_t) p, at = (a + RV_BIG - 1) & ~(uintptr_t) (RV_BIG - 1);
		size_t head = (size_t) (at - a);
		if (head > 0)
			munmap(p, head);
		if (pad - head > 0)
			munmap(p + head + bytes, pad - head);
		p += head;
	}
#ifdef MADV_POPULATE_WRITE
	if (fill)
		(void) madvise(p, bytes, MADV_POPULATE_WRITE); /* else faulted in as written */
#else
	(void) fill;
#endif
	return p;
}

static void rv_free(struct rvec *v)
{
	for (size_t k = 0; k < v->nc; k++)
		chunk_unmap(v->c[k]);
	free(v->c);
	size_t esz = v->esz;
	memset(v, 0, sizeof *v);
	v->esz = esz;
}

/* A loom's reader: the trace opened at the loom's directory. */
struct reader {
	struct weft_trace *t;
	struct weft_event ev[PAR_BATCH];
	long n, i;
	int done;
	/* its streams -> the whole trace's, sorted by the reader's pointer */
	struct smap {
		const struct weft_stream *from, *to;
		size_t idx; /* to's index in the whole trace */
	} *map;
	size_t nmap;
	const struct weft_stream *last_from, *last_to;
};

struct par_worker {
	const struct par_in *in;
	size_t *looms; /* sys loom indices */
	size_t nlooms;
	uint64_t weight;
	struct reader *rd;
	size_t nrd;
	struct emu *emu;
	uint8_t *own[2]; /* per row of the thread and CPU views: its looms' */
	struct rvec v[EMU_MAX_VIEWS];
	struct rvec iv; /* the internal records of its looms' rows (in->internal) */
	size_t nviews;
	size_t budget; /* the bytes of records it may hold */
	size_t held;
	int fail; /* 1: the serial run is needed (why) */
	char why[256];
	int error; /* the failure was an error: its message */
	char emsg[WEFT_ERR_MAX];
	double cpu;
	pthread_t th;
	int started;
	/* its readers' warnings: those of the current call (judged after it:
	 * heard), and those kept (--salvage: the streams found cut short,
	 * each with its place in the serial run's order) */
	char **heard;
	size_t nheard, capheard;
	struct wwarn {
		int64_t clock; /* of the stream's last whole event (INT64_MIN: none) */
		size_t stream; /* the whole trace's index */
		char *msg;
	} *warns;
	size_t nwarns, capwarns;
	struct salv salv; /* --salvage: its looms' threads cut short */
	int filled;       /* a reader read since the last salv_scan */
	/* par_stream: the merge's state and this worker's queue there; the
	 * time its records handed on reached (those to come are not earlier),
	 * and each stream's last */
	struct pstream *ps;
	struct pq *q;
	int64_t wm;
	int snap_ev; /* a window: its state at T0 written at an event */
};

/* The run was asked to stop (a signal handler stores the flag atomically,
 * in any thread: cli_stop.c). */
static int par_stopped(const struct par_in *in)
{
	return in->stop != NULL && __atomic_load_n(in->stop, __ATOMIC_RELAXED) != 0;
}

/* The serial run is needed: why, with the detail a (or NULL). */
static void wfail(struct par_worker *w, const char *why, const char *a)
{
	if (w->fail)
		return;
	w->fail = 1;
	snprintf(w->why, sizeof w->why, "%.60s%s%.180s%s", why, a ? " (" : "", a ? a : "",
			a ? ")" : "");
}

/* An error of the reader or the engine: the serial run is needed (-j), or
 * the message is the run's (--mpi). */
static void werror(struct par_worker *w, const char *msg)
{
	if (!w->fail) {
		w->error = 1;
		snprintf(w->emsg, sizeof w->emsg, "%s", msg);
	}
	wfail(w, "an error", msg);
}

static void w_warn(void *ctx, const char *msg)
{
	wfail(ctx, "a warning", msg);
}

/* A reader's warning: kept until the call that said it returns, then
 * judged (judge_open, judge_read). */
static void w_rwarn(void *ctx, const char *msg)
{
	struct par_worker *w = ctx;
	if (w->nheard == w->capheard) {
		size_t cap = w->capheard ? w->capheard * 2 : 8;
		char **v = realloc(w->heard, cap * sizeof *v);
		if (v == NULL) {
			wfail(w, "out of memory", NULL);
			return;
		}
		w->heard = v;
		w->capheard = cap;
	}
	if ((w->heard[w->nheard] = strdup(msg)) == NULL) {
		wfail(w, "out of memory", NULL);
		return;
	}
	w->nheard++;
}

static void heard_clear(struct par_worker *w)
{
	for (size_t k = 0; k < w->nheard; k++)
		free(w->heard[k]);
	w->nheard = 0;
}

/* The local stream i of R whose file msg names first ("<obs_path>: ..."),
 * or SIZE_MAX. */
static size_t msg_stream(const struct reader *R, const char *msg)
{
	for (size_t i = 0; i < weft_nstreams(R->t); i++) {
		const char *p = weft_stream_at(R->t, i)->obs_path;
		size_t n = strlen(p);
		if (strncmp(msg, p, n) == 0 && msg[n] == ':')
			return i;
	}
	return SIZE_MAX;
}

/* The map entry of R's local stream i. */
static const struct smap *local_map(const struct reader *R, size_t i)
{
	const struct weft_stream *s = weft_stream_at(R->t, i);
	for (size_t k = 0; k < R->nmap; k++)
		if (R->map[k].from == s)
			return &R->map[k];
	return NULL;
}

/* The warnings of R's opening: each must be one the whole trace's opening
 * said (its stream's file named as there), else the run is the serial
 * one's to make. */
static void judge_open(struct par_worker *w, const struct reader *R)
{
	const struct par_in *in = w->in;
	for (size_t k = 0; k < w->nheard && !w->fail; k++) {
		const char *msg = w->heard[k], *rest = msg;
		size_t i = msg_stream(R, msg);
		const struct smap *m = i != SIZE_MAX ? local_map(R, i) : NULL;
		const char *whole = m != NULL ? m->to->obs_path : NULL;
		if (whole != NULL)
			rest = msg + strlen(weft_stream_at(R->t, i)->obs_path);
		int said = 0;
		for (size_t j = 0; j < in->nsaid && !said; j++) {
			const char *x = in->said[j];
			if (whole == NULL)
				said = strcmp(x, msg) == 0;
			else
				said = strncmp(x, whole, strlen(whole)) == 0 &&
					strcmp(x + strlen(whole), rest) == 0;
		}
		if (!said)
			wfail(w, "a warning", msg);
	}
	heard_clear(w);
}

/* The warnings of a read of R: with --salvage, each must be the one of a
 * stream found cut short (inside an event) during the read, kept with its
 * place in the serial run's order (its stream's last whole event: the
 * serial reader finds a stream's cut when it moves past that event); any
 * other makes the run the serial one's. */
static void judge_read(struct par_worker *w, const struct reader *R)
{
	for (size_t k = 0; k < w->nheard && !w->fail; k++) {
		const char *msg = w->heard[k];
		size_t i = msg_stream(R, msg);
		struct weft_cut_info ci;
		const struct smap *m = i != SIZE_MAX ? local_map(R, i) : NULL;
		if (!w->in->salvage || m == NULL || !weft_stream_cut(R->t, i, &ci) || ci.header) {
			wfail(w, "a warning", msg);
			break;
		}
		if (w->nwarns == w->capwarns) {
			size_t cap = w->capwarns ? w->capwarns * 2 : 8;
			struct wwarn *v = realloc(w->warns, cap * sizeof *v);
			if (v == NULL) {
				wfail(w, "out of memory", NULL);
				break;
			}
			w->warns = v;
			w->capwarns = cap;
		}
		/* the message names the file as the whole trace does */
		const char *rest = msg + strlen(weft_stream_at(R->t, i)->obs_path);
		size_t len = strlen(m->to->obs_path) + strlen(rest) + 1;
		char *text = malloc(len);
		if (text == NULL) {
			wfail(w, "out of memory", NULL);
			break;
		}
		snprintf(text, len, "%s%s", m->to->obs_path, rest);
		w->warns[w->nwarns++] = (struct wwarn) { ci.has_last ? ci.last_sclock : INT64_MIN,
			m->idx, text };
	}
	heard_clear(w);
}

static int vpush(struct rvec *v, const void *rec, size_t n)
{
	const char *r = rec;
	while (n > 0) {
		if (v->nc == 0 || v->last == v->c[v->nc - 1].bytes / v->esz) {
			if (v->nc == v->capc) {
				size_t capc = v->capc ? v->capc * 2 : 16;
				struct rchunk *c = realloc(v->c, capc * sizeof *c);
				if (c == NULL)
					return -1;
				v->c = c;
				v->capc = capc;
			}
			size_t bytes = v->nc == 0 ? RV_MIN : v->c[v->nc - 1].bytes * 2;
			bytes = bytes < RV_BIG ? bytes : RV_BIG;
			if ((v->c[v->nc].p = chunk_map(bytes, bytes == RV_BIG)) == NULL)
				return -1;
			v->c[v->nc++].bytes = bytes;
			v->last = 0;
		}
		struct rchunk *c = &v->c[v->nc - 1];
		size_t room = c->bytes / v->esz - v->last, k = room < n ? room : n;
		memcpy(c->p + v->last * v->esz, r, k * v->esz);
		v->last += k;
		v->n += k;
		r += k * v->esz;
		n -= k;
	}
	return 0;
}

/* Whether an internal record is of a row of the worker's looms: a CPU's
 * (its running thread, their number) or a thread's (a raw channel). */
static int own_irec(const struct par_worker *w, const struct emu_rec *x)
{
	return x->kind == EMU_REC_RSEL || x->kind == EMU_REC_NRUN ? w->own[1][x->row] :
		w->own[0][x->row];
}

/* The worker's sink: the records of its looms' rows, kept (within its
 * budget: beyond it, the run is given up and made serially). */
static int w_records(void *self, const struct emu_batch *b, char *err, size_t errlen)
{
	struct par_worker *w = self;
	for (size_t f = 0; f < w->nviews; f++)
		w->held += b->nprv[f] * sizeof *b->prv[f];
	w->held += b->ninternal * sizeof *b->internal;
	if (w->held > w->budget) {
		wfail(w, "the records would exceed the memory given to them", NULL);
		snprintf(err, errlen, "over budget");
		return -1;
	}
	for (size_t f = 0; f < w->nviews; f++) {
		const struct emu_prv_rec *r = b->prv[f];
		size_t n = b->nprv[f], i = 0;
		while (i < n) {
			size_t j = i;
			const uint8_t *own = f < 2 ? w->own[f] : NULL;
			while (j < n && (own == NULL || own[r[j].row]))
				j++;
			if (j > i && vpush(&w->v[f], r + i, j - i) != 0) {
				snprintf(err, errlen, "out of memory");
				return -1;
			}
			i = j;
			while (i < n && own != NULL && !own[r[i].row])
				i++;
		}
	}
	const struct emu_rec *x = b->internal;
	size_t n = b->ninternal, i = 0;
	while (i < n) {
		size_t j = i;
		while (j < n && own_irec(w, &x[j]))
			j++;
		if (j > i && vpush(&w->iv, x + i, j - i) != 0) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		i = j;
		while (i < n && !own_irec(w, &x[i]))
			i++;
	}
	return 0;
}

/* ---- par_stream's queues ---- */

/* A worker's records of one sink call handed to the merge: of each view
 * (n[f]) then the internal ones (n[EMU_MAX_VIEWS]), one stream after the
 * other in data; wm: the latest time in it (the worker's records to come
 * are not earlier). */
struct pkt {
	struct pkt *next;
	size_t worker, bytes;
	int64_t wm;
	size_t n[EMU_MAX_VIEWS + 1];
	int64_t data[];
};

/* A worker's queue: its packets not taken by the merge yet (bytes of
 * records in all); ready: its engine is made; done: it ended (fail says
 * whether well). */
struct pq {
	struct pkt *head, *tail;
	size_t bytes;
	int ready, done;
};

/* What the workers and the merging thread share (under mu): mcv wakes the
 * merge (a packet, a worker ready or done), wcv the workers waiting for
 * room; abort (read unlocked too): the merge gave up, the workers stop. */
struct pstream {
	pthread_mutex_t mu;
	pthread_cond_t mcv, wcv;
	int abort;
	size_t cap;   /* a worker's queue: the bytes it may hold */
	size_t share; /* the largest packet (the budget's share of a worker) */
	struct pq *q;
};

static int ps_aborted(struct pstream *ps)
{
	return __atomic_load_n(&ps->abort, __ATOMIC_RELAXED);
}

/* The worker's engine is made (ready), or it ended (done). */
static void w_signal(struct par_worker *w, int done)
{
	struct pstream *ps = w->ps;
	if (ps == NULL)
		return;
	pthread_mutex_lock(&ps->mu);
	if (done)
		w->q->done = 1;
	else
		w->q->ready = 1;
	pthread_cond_signal(&ps->mcv);
	pthread_mutex_unlock(&ps->mu);
}

/* Copies the records of the worker's rows of stream b (n of esz bytes at
 * r; own: NULL for all) to *d, counting them in *k; 1 when one is earlier
 * than *last (the time of the last before it: updated) */
static int pkt_copy(char **d, size_t *k, const char *r, size_t n, size_t esz,
		const struct par_worker *w, int irec, const uint8_t *own, int64_t *last)
{
	int bad = 0;
	for (size_t i = 0; i < n; i++, r += esz) {
		if (irec ? !own_irec(w, (const struct emu_rec *) (const void *) r) :
				own != NULL && !own[((const struct emu_prv_rec *) (const void *) r)->row])
			continue;
		int64_t t;
		memcpy(&t, r, sizeof t);
		bad |= t < *last;
		*last = t;
		memcpy(*d, r, esz);
		*d += esz;
		(*k)++;
	}
	return bad;
}

/* par_stream's sink of a worker: the records of its looms' rows handed to
 * the merge as a packet, waiting while its queue is full. Each stream's
 * records must be in time order, none earlier than the packets before
 * (the merge takes what is up to every worker's last time as final): else
 * the run is given up. */
static int w_push(void *self, const struct emu_batch *b, char *err, size_t errlen)
{
	struct par_worker *w = self;
	struct pstream *ps = w->ps;
	size_t total = b->ninternal * sizeof *b->internal;
	for (size_t f = 0; f < w->nviews; f++)
		total += b->nprv[f] * sizeof *b->prv[f];
	if (total == 0)
		return 0;
	struct pkt *p = malloc(sizeof *p + total);
	if (p == NULL) {
		wfail(w, "out of memory", NULL);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	memset(p, 0, sizeof *p);
	char *d = (char *) p->data;
	int64_t top = w->wm;
	int bad = 0;
	for (size_t f = 0; f <= w->nviews; f++) {
		int64_t last = w->wm;
		if (f < w->nviews)
			bad |= pkt_copy(&d, &p->n[f], (const char *) b->prv[f], b->nprv[f],
					sizeof *b->prv[f], w, 0, f < 2 ? w->own[f] : NULL, &last);
		else
			bad |= pkt_copy(&d, &p->n[EMU_MAX_VIEWS], (const char *) b->internal,
					b->ninternal, sizeof *b->internal, w, 1, NULL, &last);
		top = last > top ? last : top;
	}
	p->bytes = (size_t) (d - (char *) p->data);
	p->wm = top;
	p->worker = (size_t) (w->q - ps->q);
	const char *why = bad ? "records out of time order" : p->bytes > ps->share ?
		"the records would exceed the memory given to them" : NULL;
	if (why == NULL && p->bytes == 0) {
		free(p);
		return 0;
	}
	if (why == NULL) {
		pthread_mutex_lock(&ps->mu);
		while (!ps_aborted(ps) && w->q->bytes > 0 && w->q->bytes + p->bytes > ps->cap)
			pthread_cond_wait(&ps->wcv, &ps->mu);
		if (ps_aborted(ps)) {
			why = "the merge stopped";
		} else {
			if (w->q->tail != NULL)
				w->q->tail->next = p;
			else
				w->q->head = p;
			w->q->tail = p;
			w->q->bytes += p->bytes;
			pthread_cond_signal(&ps->mcv);
		}
		pthread_mutex_unlock(&ps->mu);
	}
	if (why != NULL) {
		free(p);
		wfail(w, why, NULL);
		snprintf(err, errlen, "%s", why);
		return -1;
	}
	w->wm = top;
	return 0;
}

static int smap_cmp(const void *a, const void *b)
{
	const struct smap *x = a, *y = b;
	return x->from < y->from ? -1 : x->from > y->from;
}

static const struct weft_stream *map_stream(struct reader *R, const struct weft_stream *s)
{
	if (s == R->last_from)
		return R->last_to;
	size_t lo = 0, hi = R->nmap;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (R->map[mid].from < s)
			lo = mid + 1;
		else
			hi = mid;
	}
	const struct weft_stream *to = lo < R->nmap && R->map[lo].from == s ? R->map[lo].to : NULL;
	R->last_from = s;
	R->last_to = to;
	return to;
}

/* The loom directory of sys loom L ("loom.X"), from its streams' paths. */
int par_loom_dir(const struct emu_sys *sys, size_t L, char *buf, size_t len)
{
	const struct emu_loom *lm = &sys->looms[L];
	for (size_t p = lm->proc_first; p < lm->proc_first + lm->nprocs; p++) {
		const struct emu_proc *P = &sys->procs[p];
		for (size_t t = P->thread_first; t < P->thread_first + P->nthreads; t++) {
			const struct weft_stream *s = sys->threads[t].stream;
			if (s == NULL)
				continue;
			const char *sl = strchr(s->relpath, '/');
			if (sl == NULL)
				return -1;
			snprintf(buf, len, "%.*s", (int) (sl - s->relpath), s->relpath);
			return 0;
		}
	}
	return -1;
}

static int open_reader(struct par_worker *w, struct reader *R, size_t L)
{
	const struct par_in *in = w->in;
	char dir[512];
	if (par_loom_dir(in->sys, L, dir, sizeof dir) != 0) {
		wfail(w, "a loom without a loom.* directory", NULL);
		return -1;
	}
	size_t plen = strlen(in->path) + strlen(dir) + 2;
	char *path = malloc(plen);
	if (path == NULL) {
		wfail(w, "out of memory", NULL);
		return -1;
	}
	/* as the whole trace joins its paths (no trailing '/'), so that its
	 * streams' files are named as there */
	size_t rl = strlen(in->path);
	while (rl > 1 && in->path[rl - 1] == '/')
		rl--;
	snprintf(path, plen, "%.*s/%s", (int) rl, in->path, dir);
	struct weft_open_opts oo;
	memset(&oo, 0, sizeof oo);
	oo.sz = sizeof oo;
	oo.mode = WEFT_STRICT;
	oo.warn = w_rwarn;
	oo.warn_ctx = w;
	oo.all_models = 1;
	oo.sort = WEFT_SORT_NONE;
	/* --salvage: a stream cut short is read up to its last whole event,
	 * its warning kept (judge_read) */
	oo.cut = in->salvage ? WEFT_CUT_WARN : WEFT_CUT_QUIET;
	oo.accept_unfinished = 2;
	char err[WEFT_ERR_MAX];
	R->t = weft_open(path, &oo, err, sizeof err);
	free(path);
	if (R->t == NULL) {
		heard_clear(w);
		werror(w, err);
		return -1;
	}
	size_t ns = weft_nstreams(R->t), dl = strlen(dir);
	R->map = calloc(ns + 1, sizeof *R->map);
	if (R->map == NULL) {
		wfail(w, "out of memory", NULL);
		return -1;
	}
	/* each stream is the whole trace's "<dir>/<relpath>" */
	size_t nall = weft_nstreams(in->t);
	for (size_t i = 0; i < ns; i++) {
		const struct weft_stream *s = weft_stream_at(R->t, i);
		const struct weft_stream *to = NULL;
		size_t j = 0;
		for (; j < nall && to == NULL; j++) {
			const struct weft_stream *m = weft_stream_at(in->t, j);
			if (strncmp(m->relpath, dir, dl) == 0 && m->relpath[dl] == '/' &&
					strcmp(m->relpath + dl + 1, s->relpath) == 0)
				to = m;
		}
		if (to == NULL) {
			wfail(w, "a stream of a loom not found in the whole trace", s->relpath);
			return -1;
		}
		R->map[R->nmap].from = s;
		R->map[R->nmap].idx = j - 1;
		R->map[R->nmap++].to = to;
	}
	qsort(R->map, R->nmap, sizeof *R->map, smap_cmp);
	judge_open(w, R);
	return w->fail ? -1 : 0;
}

/* Whether a stream of the reader was cut short or did not finish. */
static int reader_cut(const struct weft_trace *t)
{
	for (size_t i = 0; i < weft_nstreams(t); i++) {
		struct weft_cut_info ci;
		char why[8];
		if (weft_stream_unfinished_why(t, i, why, sizeof why) || weft_stream_cut(t, i, &ci))
			return 1;
	}
	return 0;
}

/* Fills R->ev when used up: 0, or -1 (w->fail set). */
static int refill(struct par_worker *w, struct reader *R)
{
	if (R->done || R->i < R->n)
		return 0;
	R->n = weft_next_batch(R->t, R->ev, PAR_BATCH);
	R->i = 0;
	w->filled = 1;
	if (R->n < 0) {
		heard_clear(w);
		werror(w, weft_error(R->t));
		return -1;
	}
	if (w->nheard > 0)
		judge_read(w, R);
	if (w->fail)
		return -1;
	if (!w->in->salvage && reader_cut(R->t)) {
		wfail(w, "a stream cut short", NULL);
		return -1;
	}
	for (long k = 0; k < R->n; k++)
		if (R->ev[k].mcv[0] == 'O' && R->ev[k].mcv[1] == 'U') {
			wfail(w, "an unordered region", NULL);
			return -1;
		}
	if (R->n == 0)
		R->done = 1;
	return 0;
}

/* --salvage: the threads of the worker's looms, each with its reader's
 * stream, to close at their last event as the serial run does (row
 * order): 0, or -1 (w->fail). */
static int salv_setup(struct par_worker *w)
{
	const struct emu_sys *sys = w->in->sys;
	if (salv_init(&w->salv, sys->nthreads) != 0) {
		wfail(w, "out of memory", NULL);
		return -1;
	}
	for (size_t t = 0; t < sys->nthreads; t++) {
		const struct weft_stream *st = sys->threads[t].stream;
		if (!w->own[0][t] || st == NULL)
			continue;
		for (size_t k = 0; k < w->nrd; k++) {
			struct reader *R = &w->rd[k];
			size_t i = 0, ns = weft_nstreams(R->t);
			while (i < ns && map_stream(R, weft_stream_at(R->t, i)) != st)
				i++;
			if (i < ns) {
				salv_add(&w->salv, R->t, i, t);
				break;
			}
		}
	}
	return 0;
}

/* --salvage, after a read: the threads whose stream ended wait to be
 * closed. Two at one clock (a crash's cut clock, shared by a process's
 * threads) are closed in the order the serial reader found their ends,
 * which depends on where its batches were cut over every loom: not known
 * here. */
static int salv_pending(struct par_worker *w)
{
	w->filled = 0;
	salv_scan(&w->salv);
	for (size_t p = w->salv.head + 1; p < w->salv.npend; p++)
		if (w->salv.pending[p].clock == w->salv.pending[p - 1].clock) {
			wfail(w, "two threads cut short to close at one clock", NULL);
			return -1;
		}
	return 0;
}

static void *worker_main(void *arg)
{
	struct par_worker *w = arg;
	const struct par_in *in = w->in;
	const struct emu_sys *sys = in->sys;
	struct emu_opts eo = *in->eo;
	eo.warn = w_warn;
	eo.warn_ctx = w;
	eo.info = NULL;
	char err[WEFT_ERR_MAX];
	w->emu = emu_create(sys, in->models, in->nmodels, &eo, err, sizeof err);
	if (w->emu == NULL) {
		werror(w, err);
		goto out;
	}
	emu_set_origin(w->emu, in->origin);
	if (in->window != NULL)
		emu_set_window(w->emu, in->window);
	/* the breakdown: each CPU's changes, sorted after the merge */
	emu_bd_raw(w->emu);
	w->nviews = emu_nviews(w->emu);
	w->own[0] = calloc(sys->nthreads + 1, 1);
	w->own[1] = calloc(sys->ncpus + 1, 1);
	w->rd = calloc(w->nlooms + 1, sizeof *w->rd);
	if (w->own[0] == NULL || w->own[1] == NULL || w->rd == NULL) {
		wfail(w, "out of memory", NULL);
		goto out;
	}
	for (size_t k = 0; k < w->nlooms; k++) {
		for (size_t t = 0; t < sys->nthreads; t++)
			if (sys->threads[t].loom == w->looms[k])
				w->own[0][t] = 1;
		for (size_t c = 0; c < sys->ncpus; c++)
			if (sys->cpus[c].loom == w->looms[k])
				w->own[1][c] = 1;
	}
	/* its looms' threads that lost events: emulated leniently (losses.c) */
	if (in->losses && driver_losses(in->t, w->emu, sys, w->own[0], NULL, NULL, err,
				sizeof err) != 0) {
		wfail(w, "out of memory", NULL);
		goto out;
	}
	/* the threads of other looms have no events here: no end checks */
	for (size_t t = 0; t < sys->nthreads; t++)
		if (!w->own[0][t] && emu_thread_cut(w->emu, t, 0, 0, "another worker's") != 0) {
			wfail(w, "out of memory", NULL);
			goto out;
		}
	struct emu_sink sink = { w, w->ps != NULL ? w_push : w_records, in->internal, 1 };
	if (emu_add_sink(w->emu, &sink) != 0) {
		werror(w, emu_error(w->emu));
		goto out;
	}
	w_signal(w, 0);
	for (size_t k = 0; k < w->nlooms; k++) {
		if (open_reader(w, &w->rd[k], w->looms[k]) != 0)
			goto out;
		w->nrd++;
	}
	if (in->salvage && salv_setup(w) != 0)
		goto out;
	int64_t last_clock = INT64_MIN;
	const struct weft_stream *last_stream = NULL;
	uint64_t n = 0;
	for (;;) {
		struct reader *best = NULL;
		for (size_t k = 0; k < w->nrd; k++) {
			struct reader *R = &w->rd[k];
			if (refill(w, R) != 0)
				goto out;
			if (R->done)
				continue;
			const struct weft_event *e = &R->ev[R->i];
			if (best == NULL || e->sclock < best->ev[best->i].sclock)
				best = R;
		}
		if (in->salvage && w->filled && salv_pending(w) != 0)
			goto out;
		if (best == NULL)
			break;
		struct weft_event ev = best->ev[best->i++];
		ev.stream = map_stream(best, ev.stream);
		if (ev.stream == NULL) {
			wfail(w, "an event of an unknown stream", NULL);
			goto out;
		}
		if (ev.sclock == last_clock && ev.stream != last_stream) {
			wfail(w, "events of two streams at one clock", NULL);
			goto out;
		}
		last_clock = ev.sclock;
		last_stream = ev.stream;
		/* --salvage: each thread cut short closed before the first event
		 * after its last one */
		if (in->salvage && salv_close(&w->salv, w->emu, ev.sclock, 0) != 0) {
			werror(w, emu_error(w->emu));
			goto out;
		}
		int er = emu_event(w->emu, &ev);
		if (er > 0)
			break; /* after the window: its looms are read no further */
		if (er != 0) {
			werror(w, emu_error(w->emu));
			goto out;
		}
		if ((++n & 0xffff) == 0 && (par_stopped(in) ||
				(w->ps != NULL && ps_aborted(w->ps)))) {
			wfail(w, "interrupted", NULL);
			goto out;
		}
	}
	if (in->salvage) {
		/* the threads still open close at their last clocks, in order */
		if (salv_pending(w) != 0)
			goto out;
		if (salv_close(&w->salv, w->emu, 0, 1) != 0) {
			werror(w, emu_error(w->emu));
			goto out;
		}
		if (salv_mark(&w->salv, w->emu) != 0) {
			wfail(w, "out of memory", NULL);
			goto out;
		}
	}
	if (emu_finish(w->emu, 1) != 0) {
		werror(w, emu_error(w->emu));
	} else if (w->ps != NULL && in->window != NULL && in->window->has_from) {
		/* par_stream: the state at T0 after the last event when no event
		 * came after T0 (used when another worker's did: else the run
		 * is serial, its window holding nothing) */
		w->snap_ev = emu_window_written(w->emu);
		if (emu_window_late_snapshot(w->emu) != 0)
			wfail(w, "the state at T0 could not be written", NULL);
	}
out:;
	struct rusage ru;
	if (getrusage(RUSAGE_THREAD, &ru) == 0)
		w->cpu = (double) ru.ru_utime.tv_sec + (double) ru.ru_utime.tv_usec / 1e6 +
			(double) ru.ru_stime.tv_sec + (double) ru.ru_stime.tv_usec / 1e6;
	salv_free(&w->salv); /* it points to the readers */
	for (size_t k = 0; k < w->nrd; k++) {
		weft_close(w->rd[k].t);
		w->rd[k].t = NULL;
	}
	w_signal(w, 1);
	return NULL;
}

/* Whether the catalogue's values known at the end (task types) are the
 * same in two engines. */
static int same_dyn(const struct emu *a, const struct emu *b)
{
	size_t n = emu_nchans(a);
	if (n != emu_nchans(b))
		return 0;
	for (size_t i = 0; i < n; i++) {
		const struct emu_chan_info *x = emu_chan_at(a, i), *y = emu_chan_at(b, i);
		if (x->ndyn != y->ndyn)
			return 0;
		for (size_t k = 0; k < x->ndyn; k++)
			if (x->dyn[k].value != y->dyn[k].value ||
					strcmp(x->dyn[k].label, y->dyn[k].label) != 0)
				return 0;
	}
	return 1;
}

/* The k-way time merge's step: of the sources i whose next element
 * (pos[i] < n[i]) has time t(src, i, pos[i]), the one with the earliest
 * (k when every source is done), its time *bt and the earliest time of the
 * others (*second, INT64_MAX when none: a run of the best source goes up
 * to it, excluded; *second == *bt: two sources at one time). */
static size_t earliest(const void *src, size_t k, const size_t *pos, const size_t *n,
		int64_t (*t)(const void *src, size_t i, size_t p), int64_t *bt, int64_t *second)
{
	size_t best = k;
	*bt = 0;
	*second = INT64_MAX;
	for (size_t i = 0; i < k; i++) {
		if (pos[i] == n[i])
			continue;
		int64_t ti = t(src, i, pos[i]);
		if (best == k || ti < *bt) {
			if (best != k)
				*second = *bt;
			best = i;
			*bt = ti;
		} else if (ti < *second) {
			*second = ti;
		}
	}
	return best;
}

/* arrays of elements of esz bytes, each beginning with its int64_t time */
struct arr_src {
	const void *const *src;
	size_t esz;
};

static const void *arr_at(const struct arr_src *a, size_t i, size_t p)
{
	return (const char *) a->src[i] + p * a->esz;
}

static int64_t arr_time(const void *src, size_t i, size_t p)
{
	int64_t t;
	memcpy(&t, arr_at(src, i, p), sizeof t);
	return t;
}

/* A window's time 0 (--from): the records of each row's state at T0, in
 * the order the serial run writes them (emu_win_snapshot): the view records
 * row by row; the internal records the CPUs' (running thread, count) row
 * by row, then the threads' (raw channels) row by row. Every row is one
 * worker's (one rank's), so the records at time 0 are merged by this key,
 * not by time (which ties there). */
typedef uint64_t (*at0_key)(const void *rec);

static uint64_t at0_prv(const void *rec)
{
	return ((const struct emu_prv_rec *) rec)->row;
}

static uint64_t at0_irec(const void *rec)
{
	const struct emu_rec *x = rec;
	int thread = x->kind != EMU_REC_RSEL && x->kind != EMU_REC_NRUN;
	return (uint64_t) thread << 32 | x->row;
}

/* The chunks the merge has emptied, whose pages go under the merged
 * copies (every view's, in turn); given back at the end. */
struct rpool {
	struct rchunk *c;
	size_t n, cap;
};

static void pool_put(struct rpool *pl, struct rchunk c)
{
	if (pl->n == pl->cap) {
		size_t cap = pl->cap ? pl->cap * 2 : 64;
		struct rchunk *x = realloc(pl->c, cap * sizeof *x);
		if (x == NULL) {
			chunk_unmap(c); /* its pages are given back instead */
			return;
		}
		pl->c = x;
		pl->cap = cap;
	}
	pl->c[pl->n++] = c;
}

static void pool_free(struct rpool *pl)
{
	for (size_t k = 0; k < pl->n; k++)
		chunk_unmap(pl->c[k]);
	free(pl->c);
	memset(pl, 0, sizeof *pl);
}

/* A merged copy: a mapping of len bytes (a multiple of RV_BIG, aligned to
 * it), written in order, whose first placed bytes have pages: the pool's
 * chunks moved there (mremap: their page tables move, nothing is copied or
 * faulted in again), else new pages faulted in on first write. */
struct rdst {
	char *base;
	size_t len, placed, m, esz; /* m: records written */
};

/* Pages placed under the copy up to byte end at least. */
static void dst_place(struct rdst *d, struct rpool *pl, size_t end)
{
	while (d->placed < end) {
		if (pl->n == 0) {
			/* new pages, faulted in as written, up to a multiple of RV_BIG */
			d->placed = (d->placed / RV_BIG + 1) * RV_BIG;
			continue;
		}
		struct rchunk c = pl->c[pl->n - 1];
		if (c.bytes % RV_BIG == 0 && d->placed % RV_BIG != 0) {
			/* a chunk of RV_BIG goes where it stays aligned (huge pages,
			 * where the system makes them, move whole) */
			d->placed = (d->placed / RV_BIG + 1) * RV_BIG;
			continue;
		}
		pl->n--;
		if (d->placed + c.bytes > d->len || mremap(c.p, c.bytes, c.bytes, MREMAP_MAYMOVE |
				MREMAP_FIXED, d->base + d->placed) == MAP_FAILED) {
			chunk_unmap(c);
			continue;
		}
		d->placed += c.bytes;
	}
}

/* A worker's vector as the merge reads it: its next record p, the end of
 * p's chunk, the chunk's index; the chunks read are put in the pool. */
struct rcur {
	struct rvec *v;
	size_t ci;
	const char *p, *end;
};

static void cur_chunk(struct rcur *c, size_t ci)
{
	struct rvec *v = c->v;
	c->ci = ci;
	c->p = c->end = NULL;
	if (ci < v->nc) {
		c->p = v->c[ci].p;
		c->end = c->p + (ci + 1 == v->nc ? v->last : v->c[ci].bytes / v->esz) * v->esz;
	}
}

static inline int64_t cur_time(const struct rcur *c)
{
	int64_t t;
	memcpy(&t, c->p, sizeof t);
	return t;
}

/* The records of c that are before time lim (or, with key, at time 0 with
 * key k0) onto d, c moved past them, *pos counting them. */
static void cur_take(struct rcur *c, struct rdst *d, struct rpool *pl, int64_t lim, at0_key key,
		uint64_t k0, size_t *pos)
{
	size_t esz = c->v->esz;
	while (c->p != NULL) {
		const char *q = c->p;
		if (key != NULL) {
			for (; q < c->end; q += esz) {
				int64_t t;
				memcpy(&t, q, sizeof t);
				if (t != 0 || key(q) != k0)
					break;
			}
		} else {
			int64_t t;
			while (q < c->end && (memcpy(&t, q, sizeof t), t < lim))
				q += esz;
		}
		size_t b = (size_t) (q - c->p);
		if (b > 0) {
			dst_place(d, pl, d->m * esz + b);
			memcpy(d->base + d->m * esz, c->p, b);
			d->m += b / esz;
			*pos += b / esz;
		}
		c->p = q;
		if (q < c->end)
			return;
		/* the chunk is read: its pages go to the pool */
		struct rchunk *ch = &c->v->c[c->ci];
		if (ch->p != NULL) {
			pool_put(pl, *ch);
			ch->p = NULL;
		}
		cur_chunk(c, c->ci + 1);
	}
}

static int64_t vec_time(const void *src, size_t i, size_t p)
{
	(void) p; /* the cursor is at p */
	return cur_time(&((const struct rcur *) src)[i]);
}

/* The records of every worker's vector vs[k] (elements of esz bytes), by
 * time, into *dst (*nout of them: a mapping of *maplen bytes, or, when
 * there are none, malloc'd with *maplen 0), a window's time 0 first by key
 * where key is not NULL, the vectors' chunks put in pl as they are read:
 * 0, 1 (two workers have records at one time: out->why), -1 (out of
 * memory). */
static int merge_vecs(struct par_out *out, struct rvec *const *vs, size_t esz, at0_key key,
		struct rpool *pl, void **dst, size_t *nout, size_t *maplen)
{
	size_t nw = out->nworkers, total = 0;
	*nout = 0;
	*maplen = 0;
	for (size_t k = 0; k < nw; k++)
		total += vs[k]->n;
	if (total == 0) {
		*dst = malloc(esz);
		return *dst == NULL ? -1 : 0;
	}
	struct rdst d = { NULL, (total * esz + RV_BIG - 1) / RV_BIG * RV_BIG, 0, 0, esz };
	d.base = chunk_map(d.len, 0);
	*dst = d.base;
	if (d.base == NULL)
		return -1;
	*maplen = d.len;
	size_t *pos = calloc(nw + 1, sizeof *pos), *len = calloc(nw + 1, sizeof *len);
	struct rcur *cur = calloc(nw + 1, sizeof *cur);
	int r = pos == NULL || len == NULL || cur == NULL ? -1 : 0;
	for (size_t k = 0; k < nw && r == 0; k++) {
		cur[k].v = vs[k];
		cur_chunk(&cur[k], 0);
		len[k] = vs[k]->n;
	}
	/* a window's time 0: each row's state at T0, in key order, as the
	 * serial run writes it (every row is one worker's) */
	while (key != NULL && r == 0) {
		size_t best = nw;
		uint64_t bkey = 0;
		for (size_t k = 0; k < nw; k++) {
			if (cur[k].p == NULL || cur_time(&cur[k]) != 0)
				continue;
			uint64_t kk = key(cur[k].p);
			if (best == nw || kk < bkey) {
				best = k;
				bkey = kk;
			}
		}
		if (best == nw)
			break;
		cur_take(&cur[best], &d, pl, 0, key, bkey, &pos[best]);
	}
	while (r == 0) {
		int64_t bt, second;
		size_t best = earliest(cur, nw, pos, len, vec_time, &bt, &second);
		if (best == nw)
			break;
		if (second == bt) {
			snprintf(out->why, sizeof out->why, "records of two workers at one time");
			r = 1;
			break;
		}
		cur_take(&cur[best], &d, pl, second, NULL, 0, &pos[best]);
	}
	free(pos);
	free(len);
	free(cur);
	*nout = d.m;
	/* the pages placed beyond the records are given back */
	size_t used = (d.m * esz + RV_MIN - 1) / RV_MIN * RV_MIN;
	if (r == 0 && used < d.len) {
		munmap(d.base + used, d.len - used);
		*maplen = used;
	}
	return r;
}

/* Gives back out->rec[f] (f == EMU_MAX_VIEWS: out->irec). */
static void rec_release(struct par_out *out, size_t f)
{
	void *p = f < EMU_MAX_VIEWS ? (void *) out->rec[f] : (void *) out->irec;
	if (out->maplen[f] > 0)
		munmap(p, out->maplen[f]);
	else
		free(p);
	out->maplen[f] = 0;
	if (f < EMU_MAX_VIEWS)
		out->rec[f] = NULL;
	else
		out->irec = NULL;
}

void par_free_rec(struct par_out *out, size_t f)
{
	rec_release(out, f);
}

/* A window: the serial run writes every row's state at T0 when an event of
 * any loom comes after T0, so the workers whose looms had none write theirs
 * now; a window that holds nothing is left to the serial run: 0, or 1
 * (out->why). */
static int par_window(const struct par_in *in, struct par_out *out)
{
	uint64_t n = 0;
	int snapped = 0;
	for (size_t k = 0; k < out->nworkers; k++) {
		n += emu_nevents(out->w[k].emu);
		snapped |= emu_window_written(out->w[k].emu);
	}
	out->snapped = snapped;
	if (!in->defer_window && (n == 0 || (in->window->has_from && !snapped))) {
		snprintf(out->why, sizeof out->why, "a window that holds nothing");
		return 1;
	}
	out->snap0 = in->window->has_from;
	for (size_t k = 0; k < out->nworkers && in->window->has_from; k++) {
		struct par_worker *w = &out->w[k];
		if (emu_window_late_snapshot(w->emu) != 0 || w->fail) {
			snprintf(out->why, sizeof out->why, "%s", w->fail ? w->why :
					"the state at T0 could not be written");
			return 1;
		}
	}
	return 0;
}

/* Breakdown view f: the merged per-CPU changes replaced by the serial
 * run's sorted slots (emu_bd_replay_all). */
static int par_bd_sort(struct par_out *out, size_t f)
{
	struct emu_prv_rec *sorted;
	size_t n;
	if (emu_bd_replay_all(out->emu, f, out->rec[f], out->nrec[f], &sorted, &n) != 0)
		return -1;
	rec_release(out, f);
	out->rec[f] = sorted;
	out->nrec[f] = n;
	return 0;
}

/* Each row's engine: the worker that emulated its loom (NULL for none). */
static int owners(const struct par_out *out, const struct emu ***thr_of,
		const struct emu ***cpu_of)
{
	const struct emu_sys *sys = emu_system(out->emu);
	*thr_of = calloc(sys->nthreads + 1, sizeof **thr_of);
	*cpu_of = calloc(sys->ncpus + 1, sizeof **cpu_of);
	if (*thr_of == NULL || *cpu_of == NULL) {
		free(*thr_of);
		free(*cpu_of);
		return -1;
	}
	for (size_t k = 0; k < out->nworkers; k++) {
		const struct par_worker *w = &out->w[k];
		for (size_t t = 0; t < sys->nthreads; t++)
			if ((*thr_of)[t] == NULL && w->own[0][t])
				(*thr_of)[t] = w->emu;
		for (size_t c = 0; c < sys->ncpus; c++)
			if ((*cpu_of)[c] == NULL && w->own[1][c])
				(*cpu_of)[c] = w->emu;
	}
	return 0;
}

/* The records of view f of every worker (f == EMU_MAX_VIEWS: the internal
 * ones), by time, the workers' chunks given back as they are read (their
 * pages under the merged copies, through pl): as merge_vecs. */
static int merge_view(struct par_out *out, size_t f, struct rpool *pl)
{
	size_t nw = out->nworkers;
	struct rvec **vs = calloc(nw + 1, sizeof *vs);
	if (vs == NULL)
		return -1;
	for (size_t k = 0; k < nw; k++)
		vs[k] = f < EMU_MAX_VIEWS ? &out->w[k].v[f] : &out->w[k].iv;
	void *m = NULL;
	size_t n = 0;
	at0_key key = !out->snap0 ? NULL : f < EMU_MAX_VIEWS ? at0_prv : at0_irec;
	int r = merge_vecs(out, vs, f < EMU_MAX_VIEWS ? sizeof **out->rec : sizeof *out->irec, key,
			pl, &m, &n, &out->maplen[f]);
	if (f < EMU_MAX_VIEWS) {
		out->rec[f] = m;
		out->nrec[f] = n;
	} else {
		out->irec = m;
		out->nirec = n;
	}
	if (r == 0)
		for (size_t k = 0; k < nw; k++)
			rv_free(vs[k]);
	free(vs);
	return r;
}

int par_summary(const struct par_out *out, FILE *f)
{
	const struct emu_sys *sys = emu_system(out->emu);
	size_t nw = out->nworkers;
	const struct emu **thr_of, **cpu_of;
	if (owners(out, &thr_of, &cpu_of) != 0)
		return -1;
	const struct emu **all = calloc(nw + 1, sizeof *all);
	if (all == NULL) {
		free(thr_of);
		free(cpu_of);
		return -1;
	}
	for (size_t k = 0; k < nw; k++)
		all[k] = out->w[k].emu;
	/* the rows of no worker's loom: worker 0's */
	for (size_t t = 0; t < sys->nthreads; t++)
		if (thr_of[t] == NULL)
			thr_of[t] = out->emu;
	for (size_t c = 0; c < sys->ncpus; c++)
		if (cpu_of[c] == NULL)
			cpu_of[c] = out->emu;
	emu_summary_split(out->emu, thr_of, cpu_of, all, nw, f);
	free(thr_of);
	free(cpu_of);
	free(all);
	return 0;
}

int par_summary_pack(const struct par_out *out, uint8_t **buf, size_t *len)
{
	const struct emu **thr_of, **cpu_of;
	if (owners(out, &thr_of, &cpu_of) != 0)
		return -1;
	int r = emu_summary_pack(out->emu, thr_of, cpu_of, buf, len);
	free(thr_of);
	free(cpu_of);
	return r;
}

int par_partition(const uint64_t *weight, size_t nl, const uint8_t *may, size_t nw,
		size_t *bin)
{
	size_t *order = calloc(nl + 1, sizeof *order);
	uint64_t *load = calloc(nw + 1, sizeof *load);
	if (order == NULL || load == NULL) {
		free(order);
		free(load);
		return -1;
	}
	for (size_t L = 0; L < nl; L++)
		order[L] = L;
	for (size_t a = 1; a < nl; a++)
		for (size_t b = a; b > 0 && weight[order[b]] > weight[order[b - 1]]; b--) {
			size_t x = order[b];
			order[b] = order[b - 1];
			order[b - 1] = x;
		}
	for (size_t a = 0; a < nl; a++) {
		size_t L = order[a], lightest = nw;
		for (size_t k = 0; k < nw; k++)
			if ((may == NULL || may[L * nw + k]) &&
					(lightest == nw || load[k] < load[lightest]))
				lightest = k;
		bin[L] = lightest == nw ? (size_t) -1 : lightest;
		if (lightest != nw)
			load[lightest] += weight[L];
	}
	free(order);
	free(load);
	return 0;
}

static int wwarn_cmp(const void *a, const void *b)
{
	const struct wwarn *x = *(const struct wwarn *const *) a;
	const struct wwarn *y = *(const struct wwarn *const *) b;
	if (x->clock != y->clock)
		return x->clock < y->clock ? -1 : 1;
	return x->stream < y->stream ? -1 : x->stream > y->stream;
}

/* --salvage: the workers' warnings of the streams cut short, in the serial
 * run's order, into out->warn (taken from the workers): the streams with
 * no whole event, found when the serial reader starts, in stream order,
 * then each when the reader moves past its last whole event, by that
 * event's clock (two streams of two workers whose last events are at one
 * clock: their order is the serial reader's heap's, not known here). 0, 1
 * (out->why), or -1 out of memory. */
static int par_warnings(struct par_out *out)
{
	size_t n = 0;
	for (size_t k = 0; k < out->nworkers; k++)
		n += out->w[k].nwarns;
	if (n == 0)
		return 0;
	struct wwarn **v = calloc(n, sizeof *v);
	out->warn = calloc(n, sizeof *out->warn);
	if (v == NULL || out->warn == NULL) {
		free(v);
		return -1;
	}
	size_t m = 0;
	for (size_t k = 0; k < out->nworkers; k++)
		for (size_t j = 0; j < out->w[k].nwarns; j++)
			v[m++] = &out->w[k].warns[j];
	qsort(v, n, sizeof *v, wwarn_cmp);
	int r = 0;
	for (size_t j = 0; j < n; j++) {
		if (j > 0 && v[j]->clock == v[j - 1]->clock && v[j]->clock != INT64_MIN) {
			snprintf(out->why, sizeof out->why, "streams of two workers cut short "
					"after events at one clock");
			r = 1;
		}
		out->warn[j] = v[j]->msg;
		v[j]->msg = NULL;
	}
	out->nwarn = n;
	free(v);
	return r;
}

/* par_warnings after the join: 0, or 1 (out->why). */
static int par_warned(struct par_out *out)
{
	int pw = par_warnings(out);
	if (pw < 0)
		snprintf(out->why, sizeof out->why, "out of memory for the warnings");
	return pw != 0;
}

/* The workers of in made (out->w, each with its looms) and their budget
 * (*budget: the bytes of records all may hold): 0, 1 (out->why), or -1 out
 * of memory (err). */
static int par_setup(const struct par_in *in, struct par_out *out, double *budget, char *err,
		size_t errlen)
{
	memset(out, 0, sizeof *out);
	const struct emu_sys *sys = in->sys;
	size_t nl = in->only != NULL ? in->nonly : sys->nlooms;
	size_t nw = in->jobs < nl ? in->jobs : nl;
	if (nw < 2 && (in->only == NULL || nw == 0)) {
		snprintf(out->why, sizeof out->why, "one worker");
		return 1;
	}
	out->w = calloc(nw, sizeof *out->w);
	size_t *bin = calloc(nl + 1, sizeof *bin);
	uint64_t *weight = calloc(nl + 1, sizeof *weight);
	uint64_t *lw = calloc(sys->nlooms + 1, sizeof *lw);
	if (out->w == NULL || bin == NULL || weight == NULL || lw == NULL)
		goto oom;
	out->nworkers = nw;
	/* each loom weighs its streams' bytes; the heaviest first, each to
	 * the lightest worker */
	for (size_t t = 0; t < sys->nthreads; t++)
		if (sys->threads[t].stream != NULL)
			lw[sys->threads[t].loom] += sys->threads[t].stream->obs_size;
	for (size_t L = 0; L < nl; L++)
		weight[L] = lw[in->only != NULL ? in->only[L] : L];
	if (par_partition(weight, nl, NULL, nw, bin) != 0)
		goto oom;
	for (size_t k = 0; k < nw; k++) {
		out->w[k].in = in;
		out->w[k].wm = INT64_MIN;
		for (size_t f = 0; f < EMU_MAX_VIEWS; f++)
			out->w[k].v[f].esz = sizeof (struct emu_prv_rec);
		out->w[k].iv.esz = sizeof (struct emu_rec);
		out->w[k].looms = calloc(nl + 1, sizeof *out->w[k].looms);
		if (out->w[k].looms == NULL)
			goto oom;
	}
	for (size_t L = 0; L < nl; L++) {
		struct par_worker *w = &out->w[bin[L]];
		w->looms[w->nlooms++] = in->only != NULL ? in->only[L] : L;
		w->weight += weight[L];
	}
	free(bin);
	free(weight);
	free(lw);
	/* the records held (par_run: until the merge, whose merged copy takes
	 * their pages; par_stream: in the queues and the merge): a quarter of
	 * the memory in all (WEFT_EMU_PAR_BUDGET, in MiB, sets it) */
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	*budget = pages > 0 && psz > 0 ? (double) pages * (double) psz / 4 : 1e9;
	const char *bs = getenv("WEFT_EMU_PAR_BUDGET");
	if (bs != NULL && atof(bs) > 0)
		*budget = atof(bs) * 1048576.0;
	for (size_t k = 0; k < nw; k++)
		out->w[k].budget = (size_t) (*budget / (double) nw);
	return 0;
oom:
	free(bin);
	free(weight);
	free(lw);
	snprintf(err, errlen, "out of memory");
	return -1;
}

static void par_start(struct par_out *out)
{
	for (size_t k = 0; k < out->nworkers; k++) {
		out->w[k].started = pthread_create(&out->w[k].th, NULL, worker_main,
				&out->w[k]) == 0;
		if (!out->w[k].started) {
			wfail(&out->w[k], "a thread could not be started", NULL);
			w_signal(&out->w[k], 1);
		}
	}
}

/* Every worker joined, its CPU time taken; the first failure's reason in
 * out->why (unless it has one) and the first error's message: 0, or 1 when
 * one failed. */
static int par_join(struct par_out *out)
{
	int r = 0;
	for (size_t k = 0; k < out->nworkers; k++) {
		if (out->w[k].started)
			pthread_join(out->w[k].th, NULL);
		out->w[k].started = 0;
		if (k < sizeof out->cpu / sizeof out->cpu[0])
			out->cpu[k] = out->w[k].cpu;
		if (out->w[k].fail && r == 0) {
			if (out->why[0] == '\0')
				snprintf(out->why, sizeof out->why, "%s", out->w[k].why);
			r = 1;
		}
		if (out->w[k].error && !out->error) {
			out->error = 1;
			snprintf(out->emsg, sizeof out->emsg, "%s", out->w[k].emsg);
		}
	}
	return r;
}

/* After the workers: what makes the serial run needed (task types that
 * differ, lost events; out->why), else the run's figures over every
 * worker: 0 or 1. */
static int par_totals(struct par_out *out)
{
	size_t nw = out->nworkers;
	for (size_t k = 0; k < nw; k++)
		if (emu_loss_skipped(out->w[k].emu) > 0) {
			snprintf(out->why, sizeof out->why, "events skipped after lost events");
			return 1;
		}
	for (size_t k = 1; k < nw; k++) {
		if (!same_dyn(out->emu, out->w[k].emu)) {
			snprintf(out->why, sizeof out->why, "the workers know different task types");
			return 1;
		}
		if (emu_has_lost(out->w[k].emu)) {
			snprintf(out->why, sizeof out->why, "runs of lost events, which only the "
					"serial run emulates");
			return 1;
		}
	}
	for (size_t k = 0; k < nw; k++) {
		int64_t d = emu_duration(out->w[k].emu), from, last;
		if (d > out->duration)
			out->duration = d;
		out->nevents += emu_nevents(out->w[k].emu);
		int started = emu_window_span(out->w[k].emu, &from, &last);
		if (started && last > out->end)
			out->end = last;
		out->started |= started;
		out->stopped |= emu_window_stopped(out->w[k].emu);
		out->nmuted += emu_window_nmuted(out->w[k].emu);
	}
	return 0;
}

int par_run(const struct par_in *in, struct par_out *out, char *err, size_t errlen)
{
	double budget;
	int s = par_setup(in, out, &budget, err, errlen);
	if (s != 0)
		return s;
	par_start(out);
	if (par_join(out) != 0)
		return 1;
	if (par_warned(out) != 0)
		return 1;
	out->emu = out->w[0].emu;
	out->nviews = emu_nviews(out->emu);
	if (in->window != NULL && par_window(in, out) != 0)
		return 1;
	if (par_totals(out) != 0)
		return 1;
	/* the workers' emptied chunks, under the merged copies in turn */
	struct rpool pl = { NULL, 0, 0 };
	int m = 0;
	for (size_t f = 0; f < out->nviews && m == 0; f++) {
		m = merge_view(out, f, &pl);
		if (m == 0 && emu_view_at(out->emu, f)->breakdown && !in->raw_bd &&
				par_bd_sort(out, f) != 0) {
			snprintf(out->why, sizeof out->why, "out of memory for the breakdown");
			pool_free(&pl);
			return 1;
		}
	}
	if (m == 0 && in->internal)
		m = merge_view(out, EMU_MAX_VIEWS, &pl);
	pool_free(&pl);
	if (m < 0)
		snprintf(out->why, sizeof out->why, "out of memory for the merge");
	if (m != 0)
		return 1;
	return 0;
}

/* ---- par_stream: the merge of the workers' queues ---- */

/* A queue of records of esz bytes: n from head in p (cap of them). */
struct fifo {
	char *p;
	size_t head, n, cap;
};

static int fifo_put(struct fifo *f, const void *r, size_t k, size_t esz)
{
	if (f->head + f->n + k > f->cap) {
		if (f->head > 0) {
			memmove(f->p, f->p + f->head * esz, f->n * esz);
			f->head = 0;
		}
		if (f->n + k > f->cap) {
			size_t cap = f->cap ? f->cap : 1024;
			while (cap < f->n + k)
				cap *= 2;
			char *p = realloc(f->p, cap * esz);
			if (p == NULL)
				return -1;
			f->p = p;
			f->cap = cap;
		}
	}
	memcpy(f->p + (f->head + f->n) * esz, r, k * esz);
	f->n += k;
	return 0;
}

static inline const char *fifo_at(const struct fifo *f, size_t i, size_t esz)
{
	return f->p + (f->head + i) * esz;
}

static inline int64_t fifo_time(const struct fifo *f, size_t i, size_t esz)
{
	int64_t t;
	memcpy(&t, fifo_at(f, i, esz), sizeof t);
	return t;
}

static void fifo_pop(struct fifo *f, size_t k)
{
	f->head += k;
	f->n -= k;
	if (f->n == 0)
		f->head = 0;
}

/* The records of fifo f (n of them) before time cut. */
static size_t fifo_before(const struct fifo *f, size_t esz, int64_t cut)
{
	size_t i = 0;
	while (i < f->n && fifo_time(f, i, esz) < cut)
		i++;
	return i;
}

#define PS_STREAMS (EMU_MAX_VIEWS + 1) /* the views, then the internal records */

struct par_merge {
	struct pstream ps;
	int locks; /* ps's mutex and conditions made */
	size_t nw, nviews;
	size_t esz[PS_STREAMS];
	/* each worker's records taken from its queue, not merged yet:
	 * pend[k * PS_STREAMS + s]; pbytes[k] of them; iwm[k]: the time the
	 * packets taken reached */
	struct fifo *pend;
	size_t *pbytes;
	int64_t *iwm;
	/* the merged records not handed on yet; the time and the worker of
	 * the last merged in each stream */
	struct fifo out[PS_STREAMS];
	int64_t lt[PS_STREAMS];
	size_t lw[PS_STREAMS];
	int has[PS_STREAMS];
	/* a breakdown view's merged changes (raw), replayed through the
	 * serial run's sorter (bd[f]) into out[f]; bdt[f]: the time of the
	 * last fed (its sorted records are not all out yet) */
	struct emu_bd_replay *bd[EMU_MAX_VIEWS];
	int64_t bdt[EMU_MAX_VIEWS];
	int bdfed[EMU_MAX_VIEWS];
	struct fifo raw;
	/* the batches' arrays, cycled (valid for EMU_BATCH_KEEP more calls) */
	struct fifo set[EMU_BATCH_KEEP + 1][PS_STREAMS];
	size_t cur;
};

static void merge_free(struct par_merge *m)
{
	if (m == NULL)
		return;
	for (size_t k = 0; m->pend != NULL && k < m->nw * PS_STREAMS; k++)
		free(m->pend[k].p);
	for (size_t k = 0; m->ps.q != NULL && k < m->nw; k++) {
		struct pkt *p = m->ps.q[k].head;
		while (p != NULL) {
			struct pkt *n = p->next;
			free(p);
			p = n;
		}
	}
	for (size_t f = 0; f < EMU_MAX_VIEWS; f++)
		emu_bd_replay_free(m->bd[f]);
	free(m->raw.p);
	for (size_t s = 0; s < PS_STREAMS; s++) {
		free(m->out[s].p);
		for (size_t c = 0; c <= EMU_BATCH_KEEP; c++)
			free(m->set[c][s].p);
	}
	if (m->locks) {
		pthread_mutex_destroy(&m->ps.mu);
		pthread_cond_destroy(&m->ps.mcv);
		pthread_cond_destroy(&m->ps.wcv);
	}
	free(m->ps.q);
	free(m->pend);
	free(m->pbytes);
	free(m->iwm);
	free(m);
}

/* The records of stream s of every worker up to time lim (every record
 * before it is taken: the workers' to come are not earlier), by time, onto
 * dst: 0, 1 (two workers with records at one time), -1 (out of memory). */
static int merge_upto(struct par_merge *m, size_t s, int64_t lim, struct fifo *dst)
{
	size_t esz = m->esz[s];
	for (;;) {
		size_t best = m->nw;
		int64_t bt = 0, second = INT64_MAX;
		for (size_t k = 0; k < m->nw; k++) {
			const struct fifo *f = &m->pend[k * PS_STREAMS + s];
			if (f->n == 0)
				continue;
			int64_t t = fifo_time(f, 0, esz);
			if (best == m->nw || t < bt) {
				if (best != m->nw)
					second = bt;
				best = k;
				bt = t;
			} else if (t < second) {
				second = t;
			}
		}
		if (best == m->nw || bt > lim)
			return 0;
		/* two workers at one time: now, or with one merged before */
		if (second == bt || (m->has[s] && m->lt[s] == bt && m->lw[s] != best))
			return 1;
		struct fifo *f = &m->pend[best * PS_STREAMS + s];
		size_t j = 1;
		int64_t t;
		while (j < f->n && (t = fifo_time(f, j, esz)) < second && t <= lim)
			j++;
		if (fifo_put(dst, fifo_at(f, 0, esz), j, esz) != 0)
			return -1;
		m->lt[s] = fifo_time(f, j - 1, esz);
		m->lw[s] = best;
		m->has[s] = 1;
		fifo_pop(f, j);
		m->pbytes[best] -= j * esz;
	}
}

/* A window's time 0 (--from; every worker's records at time 0 are
 * taken): those of stream s, each worker's at time 0 first, by key (the
 * serial run's order of the state at T0: every row is one worker's), onto
 * dst: 0, or -1 out of memory. */
static int merge_at0(struct par_merge *m, size_t s, at0_key key, struct fifo *dst)
{
	size_t esz = m->esz[s];
	for (;;) {
		size_t best = m->nw;
		uint64_t bkey = 0;
		for (size_t k = 0; k < m->nw; k++) {
			const struct fifo *f = &m->pend[k * PS_STREAMS + s];
			if (f->n == 0 || fifo_time(f, 0, esz) != 0)
				continue;
			uint64_t kk = key(fifo_at(f, 0, esz));
			if (best == m->nw || kk < bkey) {
				best = k;
				bkey = kk;
			}
		}
		if (best == m->nw)
			return 0;
		struct fifo *f = &m->pend[best * PS_STREAMS + s];
		size_t j = 1;
		while (j < f->n && fifo_time(f, j, esz) == 0 && key(fifo_at(f, j, esz)) == bkey)
			j++;
		if (fifo_put(dst, fifo_at(f, 0, esz), j, esz) != 0)
			return -1;
		fifo_pop(f, j);
		m->pbytes[best] -= j * esz;
	}
}

/* The sorted records of a breakdown view onto its merged records. */
static int bd_put(void *ctx, const struct emu_prv_rec *r, size_t n)
{
	return fifo_put(ctx, r, n, sizeof *r);
}

/* Stream s merged up to lim onto m->out[s] (a breakdown view's changes
 * through its sorter): as merge_upto. */
static int merge_stream(struct par_merge *m, size_t s, int64_t lim, at0_key key)
{
	if (s >= EMU_MAX_VIEWS || m->bd[s] == NULL)
		return key != NULL ? merge_at0(m, s, key, &m->out[s]) :
			merge_upto(m, s, lim, &m->out[s]);
	m->raw.head = m->raw.n = 0;
	int r = key != NULL ? merge_at0(m, s, key, &m->raw) : merge_upto(m, s, lim, &m->raw);
	if (r != 0 || m->raw.n == 0)
		return r;
	if (emu_bd_replay_feed(m->bd[s], (const struct emu_prv_rec *) (const void *) m->raw.p,
				m->raw.n, bd_put, &m->out[s]) != 0 ||
			emu_bd_replay_flush(m->bd[s], bd_put, &m->out[s]) != 0)
		return -1;
	m->bdt[s] = fifo_time(&m->raw, m->raw.n - 1, m->esz[s]);
	m->bdfed[s] = 1;
	return 0;
}

/* The merged records handed on in batches, as write_merged cuts them over
 * the whole merged arrays: the cut is the time of the record at
 * PAR_MERGED_BATCH past the first not handed on, the earliest over the
 * streams, and a batch holds every record before it (all those at the cut
 * when there are none). Before the end (final 0), every record up to lim
 * is merged and the records to come are not earlier than lim, so a cut
 * found is the whole run's when it is at or before lim, and the records at
 * the cut are all known when it is before lim: 0, or -1 (err). */
static int merge_emit(struct par_merge *m, int64_t lim, int final,
		const struct par_stream_ops *ops, char *err, size_t errlen)
{
	for (;;) {
		int64_t cut = INT64_MAX;
		int left = 0;
		for (size_t s = 0; s < PS_STREAMS; s++) {
			left |= m->out[s].n > 0;
			if (m->out[s].n > PAR_MERGED_BATCH) {
				int64_t t = fifo_time(&m->out[s], PAR_MERGED_BATCH, m->esz[s]);
				cut = t < cut ? t : cut;
			}
		}
		if (!left || (!final && (cut == INT64_MAX || cut > lim)))
			return 0;
		size_t end[PS_STREAMS];
		int some = 0;
		for (size_t s = 0; s < PS_STREAMS; s++) {
			end[s] = fifo_before(&m->out[s], m->esz[s], cut);
			some |= end[s] > 0;
		}
		if (!some) { /* more than a batch at time cut: all of them */
			if (!final && cut >= lim)
				return 0;
			for (size_t s = 0; s < PS_STREAMS; s++)
				end[s] = cut == INT64_MAX ? m->out[s].n :
					fifo_before(&m->out[s], m->esz[s], cut + 1);
		}
		struct fifo *set = m->set[m->cur];
		m->cur = (m->cur + 1) % (EMU_BATCH_KEEP + 1);
		struct emu_batch b;
		memset(&b, 0, sizeof b);
		for (size_t s = 0; s < PS_STREAMS; s++) {
			set[s].head = set[s].n = 0;
			if (end[s] > 0 && fifo_put(&set[s], fifo_at(&m->out[s], 0, m->esz[s]), end[s],
						m->esz[s]) != 0) {
				snprintf(err, errlen, "out of memory");
				return -1;
			}
			fifo_pop(&m->out[s], end[s]);
		}
		static const struct emu_prv_rec no_prv[1];
		static const struct emu_rec no_irec[1];
		for (size_t f = 0; f < m->nviews; f++) {
			b.prv[f] = end[f] > 0 ? (const struct emu_prv_rec *) (const void *) set[f].p :
				no_prv;
			b.nprv[f] = end[f];
		}
		b.internal = end[EMU_MAX_VIEWS] > 0 ? (const struct emu_rec *) (const void *)
			set[EMU_MAX_VIEWS].p : no_irec;
		b.ninternal = end[EMU_MAX_VIEWS];
		if (ops->batch(ops->ctx, &b, err, errlen) != 0)
			return -1;
	}
}

/* Under ps.mu: every record up to the time returned is taken from the
 * queues (the packets not taken come after those taken, and a worker's
 * records to come are not earlier than its last): the merge may go on up
 * to it. */
static int64_t ps_lim(const struct par_merge *m)
{
	int64_t lim = INT64_MAX;
	for (size_t k = 0; k < m->nw; k++) {
		const struct pq *q = &m->ps.q[k];
		int64_t b = q->done && q->head == NULL ? INT64_MAX : m->iwm[k];
		lim = b < lim ? b : lim;
	}
	return lim;
}

/* Gives the run up: the workers told (those waiting for room wake). */
static void ps_stop(struct pstream *ps)
{
	pthread_mutex_lock(&ps->mu);
	__atomic_store_n(&ps->abort, 1, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&ps->wcv);
	pthread_mutex_unlock(&ps->mu);
}

/* A worker's queue's bytes: a few MiB (WEFT_EMU_PAR_QUEUE, in KiB, sets
 * it), within its share of the budget. */
#define PS_QUEUE ((size_t) 1 << 20)

int par_stream(const struct par_in *in, const struct par_stream_ops *ops, struct par_out *out,
		char *err, size_t errlen)
{
	double budget;
	int r = par_setup(in, out, &budget, err, errlen);
	if (r != 0)
		return r;
	size_t nw = out->nworkers;
	struct par_merge *m = calloc(1, sizeof *m);
	if (m == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	out->m = m;
	m->nw = nw;
	m->ps.q = calloc(nw, sizeof *m->ps.q);
	m->pend = calloc(nw * PS_STREAMS, sizeof *m->pend);
	m->pbytes = calloc(nw, sizeof *m->pbytes);
	m->iwm = calloc(nw, sizeof *m->iwm);
	if (m->ps.q == NULL || m->pend == NULL || m->pbytes == NULL || m->iwm == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (pthread_mutex_init(&m->ps.mu, NULL) != 0) {
		snprintf(err, errlen, "a mutex could not be made");
		return -1;
	}
	if (pthread_cond_init(&m->ps.mcv, NULL) != 0) {
		pthread_mutex_destroy(&m->ps.mu);
		snprintf(err, errlen, "a condition could not be made");
		return -1;
	}
	if (pthread_cond_init(&m->ps.wcv, NULL) != 0) {
		pthread_mutex_destroy(&m->ps.mu);
		pthread_cond_destroy(&m->ps.mcv);
		snprintf(err, errlen, "a condition could not be made");
		return -1;
	}
	m->locks = 1;
	m->ps.share = (size_t) (budget / (double) nw);
	size_t cap = PS_QUEUE;
	const char *qs = getenv("WEFT_EMU_PAR_QUEUE");
	if (qs != NULL && atof(qs) > 0)
		cap = (size_t) (atof(qs) * 1024.0);
	m->ps.cap = cap < m->ps.share ? cap : m->ps.share;
	for (size_t s = 0; s < PS_STREAMS; s++)
		m->esz[s] = s < EMU_MAX_VIEWS ? sizeof (struct emu_prv_rec) : sizeof (struct emu_rec);
	for (size_t k = 0; k < nw; k++) {
		out->w[k].ps = &m->ps;
		out->w[k].q = &m->ps.q[k];
		m->iwm[k] = INT64_MIN;
	}
	par_start(out);
	/* the outputs opened once every engine is made */
	int opened = 0, ended = 0, fail = 0, allready = 0;
	int at0 = in->window != NULL && in->window->has_from;
	out->snap0 = at0;
	size_t ndone = 0;
	uint8_t *seen = calloc(nw, 1);
	if (seen == NULL) {
		snprintf(err, errlen, "out of memory");
		r = -1;
		goto stop;
	}
	while (r == 0) {
		struct pkt *got = NULL, **gt = &got;
		int64_t lim = INT64_MAX;
		pthread_mutex_lock(&m->ps.mu);
		for (;;) {
			int took = 0;
			allready = 1;
			lim = ps_lim(m);
			for (size_t k = 0; k < nw; k++) {
				struct pq *q = &m->ps.q[k];
				allready &= q->ready || q->done;
				if (q->done && !seen[k]) {
					seen[k] = 1;
					ndone++;
					took = 1;
					if (out->w[k].fail && !fail) {
						fail = 1;
						snprintf(out->why, sizeof out->why, "%s", out->w[k].why);
					}
				}
				/* a worker's packets, while the merge holds little of
				 * its records, or when its are the earliest (the merge
				 * needs them to go on) */
				while (q->head != NULL && (m->pbytes[k] < m->ps.cap || m->iwm[k] <= lim)) {
					struct pkt *p = q->head;
					q->head = p->next;
					if (q->head == NULL)
						q->tail = NULL;
					q->bytes -= p->bytes;
					p->next = NULL;
					*gt = p;
					gt = &p->next;
					m->pbytes[k] += p->bytes;
					m->iwm[k] = p->wm;
					took = 1;
				}
			}
			if (took)
				pthread_cond_broadcast(&m->ps.wcv);
			if (fail || (allready && !opened) || took || par_stopped(in))
				break;
			pthread_cond_wait(&m->ps.mcv, &m->ps.mu);
		}
		lim = ps_lim(m);
		ended = ndone == nw && lim == INT64_MAX;
		pthread_mutex_unlock(&m->ps.mu);
		/* the packets into each worker's pending records */
		while (got != NULL) {
			struct pkt *p = got;
			got = p->next;
			const char *d = (const char *) p->data;
			for (size_t s = 0; s < PS_STREAMS && r == 0; s++) {
				if (p->n[s] > 0 && fifo_put(&m->pend[p->worker * PS_STREAMS + s], d,
							p->n[s], m->esz[s]) != 0) {
					snprintf(err, errlen, "out of memory");
					r = -1;
				}
				d += p->n[s] * m->esz[s];
			}
			free(p);
		}
		if (r != 0 || fail)
			break;
		if (par_stopped(in)) {
			snprintf(out->why, sizeof out->why, "interrupted");
			fail = 1;
			break;
		}
		if (!opened && allready) {
			/* every engine is made (a worker ends after its engine is
			 * made, or fails) */
			out->emu = out->w[0].emu;
			out->nviews = m->nviews = emu_nviews(out->emu);
			for (size_t f = 0; f < m->nviews && r == 0; f++)
				if (emu_view_at(out->emu, f)->breakdown && !in->raw_bd &&
						(m->bd[f] = emu_bd_replay_new(out->emu, f)) == NULL) {
					snprintf(err, errlen, "out of memory");
					r = -1;
				}
			if (r != 0 || ops->open(ops->ctx, out->emu, err, errlen) != 0) {
				r = -1;
				break;
			}
			opened = 1;
		}
		if (!opened)
			continue;
		/* a window's time 0: every worker's records there, merged by
		 * key before the others (none while a worker may have more) */
		if (at0 && lim <= 0)
			continue;
		for (size_t s = 0; s < PS_STREAMS && at0 && r == 0; s++)
			if (merge_stream(m, s, 0, s < EMU_MAX_VIEWS ? at0_prv : at0_irec) != 0) {
				snprintf(err, errlen, "out of memory");
				r = -1;
			}
		at0 = 0;
		size_t held = 0;
		for (size_t s = 0; s < PS_STREAMS && r == 0 && !fail; s++) {
			int t = merge_stream(m, s, lim, NULL);
			if (t < 0) {
				snprintf(err, errlen, "out of memory");
				r = -1;
			} else if (t > 0) {
				snprintf(out->why, sizeof out->why, "records of two workers at one time");
				fail = 1;
			}
			held += m->out[s].n * m->esz[s];
		}
		for (size_t k = 0; k < nw; k++)
			held += m->pbytes[k];
		if (r == 0 && !fail && (double) held > budget) {
			snprintf(out->why, sizeof out->why,
					"the records would exceed the memory given to them");
			fail = 1;
		}
		if (r != 0 || fail)
			break;
		if (ended)
			break;
		/* a breakdown view's sorted records are out up to the time of
		 * the last change fed */
		int64_t upto = lim;
		for (size_t f = 0; f < m->nviews; f++)
			if (m->bd[f] != NULL && m->bdfed[f] && m->bdt[f] < upto)
				upto = m->bdt[f];
		if (merge_emit(m, upto, 0, ops, err, errlen) != 0)
			r = -1;
	}
stop:
	if (r != 0 || fail || !ended)
		ps_stop(&m->ps);
	par_join(out);
	free(seen);
	if (r != 0)
		return r;
	if (fail || out->why[0] != '\0')
		return 1;
	if (par_warned(out) != 0)
		return 1;
	/* every worker ended well: what makes the run serial after them, then
	 * the last batches */
	if (!opened) {
		/* no worker ended with an engine: not reached (they fail) */
		snprintf(out->why, sizeof out->why, "no engine");
		return 1;
	}
	if (in->window != NULL) {
		/* the workers' states at T0 written after their last event are
		 * used only when one came after T0 (as the serial run's) */
		uint64_t n = 0;
		for (size_t k = 0; k < nw; k++) {
			n += emu_nevents(out->w[k].emu);
			out->snapped |= out->w[k].snap_ev;
		}
		if (n == 0 || (in->window->has_from && !out->snapped)) {
			snprintf(out->why, sizeof out->why, "a window that holds nothing");
			return 1;
		}
	}
	if (par_totals(out) != 0)
		return 1;
	for (size_t f = 0; f < m->nviews; f++)
		if (m->bd[f] != NULL && emu_bd_replay_end(m->bd[f], bd_put, &m->out[f]) != 0) {
			snprintf(out->why, sizeof out->why, "out of memory for the breakdown");
			return 1;
		}
	return merge_emit(m, INT64_MAX, 1, ops, err, errlen) != 0 ? -1 : 0;
}

void par_free(struct par_out *out)
{
	for (size_t k = 0; out->w != NULL && k < out->nworkers; k++) {
		struct par_worker *w = &out->w[k];
		for (size_t r = 0; w->rd != NULL && r < w->nrd; r++) {
			if (w->rd[r].t != NULL)
				weft_close(w->rd[r].t);
			free(w->rd[r].map);
		}
		free(w->rd);
		heard_clear(w);
		free(w->heard);
		for (size_t j = 0; j < w->nwarns; j++)
			free(w->warns[j].msg);
		free(w->warns);
		salv_free(&w->salv);
		if (w->emu != NULL)
			emu_destroy(w->emu);
		free(w->own[0]);
		free(w->own[1]);
		free(w->looms);
		for (size_t f = 0; f < EMU_MAX_VIEWS; f++)
			rv_free(&w->v[f]);
		rv_free(&w->iv);
	}
	free(out->w);
	for (size_t j = 0; j < out->nwarn; j++)
		free(out->warn[j]);
	free(out->warn);
	merge_free(out->m);
	for (size_t f = 0; f <= EMU_MAX_VIEWS; f++)
		rec_release(out, f);
	memset(out, 0, sizeof *out);
}

/* k arrays src[i] of n[i] elements of esz bytes (each beginning with its
 * int64_t time), sorted by time, merged: with key, those at time 0 first
 * by key (a window's state at T0), then by time; emit gets each run of
 * elements of one array in merged order. 0, 1 (two arrays with elements at
 * one time), or -1 (emit's non-zero return, or out of memory). */
static int arr_merge(const void *const *src, const size_t *n, size_t k, size_t esz,
		at0_key key, int (*emit)(void *ctx, const void *r, size_t nr), void *ctx)
{
	size_t *pos = calloc(k + 1, sizeof *pos);
	if (pos == NULL)
		return -1;
	struct arr_src a = { src, esz };
	int r = 0;
	while (key != NULL && r == 0) {
		size_t best = k;
		uint64_t bkey = 0;
		for (size_t i = 0; i < k; i++) {
			if (pos[i] == n[i] || arr_time(&a, i, pos[i]) != 0)
				continue;
			uint64_t kk = key(arr_at(&a, i, pos[i]));
			if (best == k || kk < bkey) {
				best = i;
				bkey = kk;
			}
		}
		if (best == k)
			break;
		size_t j = pos[best];
		while (j < n[best] && arr_time(&a, best, j) == 0 && key(arr_at(&a, best, j)) == bkey)
			j++;
		if (emit(ctx, arr_at(&a, best, pos[best]), j - pos[best]) != 0)
			r = -1;
		pos[best] = j;
	}
	while (r == 0) {
		int64_t bt, second;
		size_t best = earliest(&a, k, pos, n, arr_time, &bt, &second);
		if (best == k)
			break;
		if (second == bt) {
			r = 1;
			break;
		}
		size_t j = pos[best];
		while (j < n[best] && arr_time(&a, best, j) < second)
			j++;
		if (emit(ctx, arr_at(&a, best, pos[best]), j - pos[best]) != 0)
			r = -1;
		pos[best] = j;
	}
	free(pos);
	return r;
}

/* par_merge_each's emit through arr_merge's */
struct prv_emit {
	int (*emit)(void *ctx, const struct emu_prv_rec *r, size_t nr);
	void *ctx;
};

static int prv_emit(void *ctx, const void *r, size_t nr)
{
	const struct prv_emit *p = ctx;
	return p->emit(p->ctx, r, nr);
}

int par_merge_each(const struct emu_prv_rec *const *src, const size_t *n, size_t k,
		int (*emit)(void *ctx, const struct emu_prv_rec *r, size_t nr), void *ctx)
{
	struct prv_emit p = { emit, ctx };
	return arr_merge((const void *const *) src, n, k, sizeof **src, NULL, prv_emit, &p);
}

int par_merge_each_at0(const struct emu_prv_rec *const *src, const size_t *n, size_t k,
		int (*emit)(void *ctx, const struct emu_prv_rec *r, size_t nr), void *ctx)
{
	struct prv_emit p = { emit, ctx };
	return arr_merge((const void *const *) src, n, k, sizeof **src, at0_prv, prv_emit, &p);
}

/* arr_merge into an array */
struct to_array {
	char *out;
	size_t n, esz;
};

static int append(void *ctx, const void *r, size_t nr)
{
	struct to_array *a = ctx;
	memcpy(a->out + a->n * a->esz, r, nr * a->esz);
	a->n += nr;
	return 0;
}

static int merge_to_array(const void *const *src, const size_t *n, size_t k, size_t esz,
		at0_key key, void **out, size_t *nout)
{
	size_t total = 0;
	for (size_t i = 0; i < k; i++)
		total += n[i];
	struct to_array a = { malloc((total + 1) * esz), 0, esz };
	*out = a.out;
	*nout = 0;
	if (a.out == NULL)
		return -1;
	int r = arr_merge(src, n, k, esz, key, append, &a);
	*nout = a.n;
	return r;
}

int par_merge(const struct emu_prv_rec *const *src, const size_t *n, size_t k, int at0,
		struct emu_prv_rec **out, size_t *nout)
{
	void *o;
	int r = merge_to_array((const void *const *) src, n, k, sizeof **src, at0 ? at0_prv : NULL,
			&o, nout);
	*out = o;
	return r;
}

int par_merge_irec(const struct emu_rec *const *src, const size_t *n, size_t k, int at0,
		struct emu_rec **out, size_t *nout)
{
	void *o;
	int r = merge_to_array((const void *const *) src, n, k, sizeof **src, at0 ? at0_irec :
			NULL, &o, nout);
	*out = o;
	return r;
}
