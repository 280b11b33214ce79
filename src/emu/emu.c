/* SPDX-License-Identifier: MIT */
/*
 * emu.c - the emulation engine.
 *
 * Per event: find the emitting thread, look the MCV up in the dispatch table
 * of its model, check the event's guards, run its actions. Actions make
 * direct writes (the thread and CPU system channels, raw model channels);
 * each write that changes something is queued, and the queue is walked to
 * re-evaluate the views that depend on it (thread views on a state change,
 * CPU views when a CPU's running thread changes, both on a raw write). The
 * records of an event are buffered and handed to the sinks only if the
 * whole event was accepted. See docs/emu.md for the rules and their order.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu.h"

#define EMU_STACK_MAX 512
#define EMU_MAX_SINKS 4
/* Records buffered before the sinks get them. The sinks may keep the Paraver
 * arrays until their next call (two sets alternate), so a writer thread can
 * format one batch while the next is made: large batches, few handoffs. */
#define EMU_FLUSH_RECS (1u << 14)
#define NO_CPU INT64_C(-1)

enum trig {
	TRIG_STATE = 1, /* a: thread */
	TRIG_RSEL,      /* a: cpu */
	TRIG_RAW,       /* a: thread, b: chan */
};

struct qent {
	uint32_t kind, a, b;
};

/* Last record of a (row, type): 0 never, 1 null, 2 value. */
struct last {
	int64_t v;
	uint64_t stamp; /* event of the last re-evaluation */
	uint8_t st;
};

struct raw {
	int64_t val; /* single: value; stack: top */
	int64_t *stack;
	uint32_t depth; /* single: 0 null, 1 set; stack: depth */
	uint32_t cap;
	uint64_t stamp;
};

struct chan {
	struct emu_chan_info info;
	const struct emu_chan_desc *desc;
	enum emu_chan_kind kind;
	int32_t mark_type;
	size_t model;
	uint32_t vis;          /* EMU_STM() of the states where the thread view shows it */
	uint8_t tpol, cpol;    /* desc->thread_policy, desc->cpu_policy */
};

struct thr {
	enum emu_state state;
	int64_t cpu; /* CPU gindex or -1 */
	int tid, pid;
	size_t proc, loom;
	int64_t aff;   /* 0 = null, else CPU gindex + 1 */
	int64_t tidv;  /* 0 = null */
	uint64_t st_aff, st_tid, st_state;
	int64_t since;
	int64_t time[EMU_NSTATES];
	int ou_open; /* lint */
};

struct cpu {
	int64_t nrun;
	int64_t run_sum;
	int64_t nrun_v;
	int nrun_written;
	int64_t tidv, pidv; /* 0 = null */
	int64_t rsel;       /* -1 = null */
	uint64_t st_tid, st_pid, st_rsel, st_nrun;
	int64_t busy_since;
	int64_t busy;
};

struct model_rt {
	const struct emu_model_desc *desc;
	int16_t *disp; /* [cat << 8 | val]: event index, -1 unknown value, -2 unknown category */
	uint32_t *smin, *smax; /* per event: the payload sizes its size rule accepts */
	size_t chan_first, nchans;
	unsigned char *tstate; /* nthreads * thread_state_size */
};

struct mark_ref {
	int64_t type;
	size_t chan;
};

static int cmp_mark_ref(const void *a, const void *b)
{
	const struct mark_ref *x = a, *y = b;
	return (x->type > y->type) - (x->type < y->type);
}

struct map_ent {
	const struct weft_stream *key;
	size_t thread;
};

struct emu {
	const struct emu_sys *sys;
	struct emu_opts opts;
	size_t nmodels;
	struct model_rt *models;
	int model_of_byte[256];

	size_t nchans;
	struct chan *chans;
	size_t ntracked;
	size_t *tracked; /* channels with a RUN or ACT thread view, in order */
	struct mark_ref *mark_chan; /* mark type -> chan index, sorted by type */
	size_t nmark_chan;
	int32_t mark_direct[256]; /* types 0..255: chan index + 1, 0 none */

	size_t nthreads, ncpus;
	struct thr *thr;
	struct cpu *cpu;
	struct raw *raw;    /* nthreads * nchans */
	struct last *tview; /* nthreads * nchans */
	struct last *cview; /* ncpus * nchans */

	struct map_ent *map;
	size_t map_mask;
	const struct weft_stream *last_stream;
	size_t last_thread;

	struct emu_sink sinks[EMU_MAX_SINKS];
	size_t nsinks;
	int internal; /* some sink wants the records other than EMU_REC_PRV */

	/* per event */
	uint64_t seq;
	const struct weft_event *ev;
	size_t cur_thread;
	const struct emu_event_desc *cur_desc;
	int64_t dclock;
	struct qent *q;
	size_t qlen, qcap;
	/* records of the accepted events not yet given to the sinks, and where
	 * the current event's records start */
	struct emu_prv_rec *prv[2];
	size_t nprv[2], prvcap[2];
	/* the sets of Paraver arrays last handed to the sinks, oldest first */
	struct emu_prv_rec *prv_kept[EMU_BATCH_KEEP][2];
	size_t prvcap_kept[EMU_BATCH_KEEP][2];
	struct emu_rec *irecs;
	size_t nirecs, ireccap;

	int started;
	int64_t first_clock;
	int64_t duration;
	uint64_t nevents;
	int failed;
	char err[WEFT_ERR_MAX];
};

static const char *const state_names[EMU_NSTATES] = {
	"Unknown", "Running", "Paused", "Dead", "Cooling", "Warming",
};

/* ---- messages ---- */

static void fmt_mcv(char *buf, size_t len, const char mcv[3])
{
	size_t n = 0;
	buf[0] = '\0';
	for (int i = 0; i < 3 && n + 5 < len; i++) {
		unsigned char c = (unsigned char) mcv[i];
		if (c >= 0x21 && c < 0x7f) {
			buf[n++] = (char) c;
			buf[n] = '\0';
		} else {
			n += (size_t) snprintf(buf + n, len - n, "\\x%02x", c);
		}
	}
}

__attribute__((format(printf, 2, 0), cold))
static int vfail(struct emu *e, const char *fmt, va_list ap)
{
	char reason[WEFT_ERR_MAX - 256];
	vsnprintf(reason, sizeof reason, fmt, ap);
	if (e->ev != NULL) {
		char mcv[16];
		fmt_mcv(mcv, sizeof mcv, e->ev->mcv);
		const char *where = e->ev->stream && e->ev->stream->relpath ?
				e->ev->stream->relpath : "?";
		int n = snprintf(e->err, sizeof e->err, "%s: event %s at clock %" PRId64 " (offset %" PRIu64
				"): %s", where, mcv, e->ev->rclock, e->ev->offset, reason);
		(void) n;
	} else {
		snprintf(e->err, sizeof e->err, "%s", reason);
	}
	e->failed = 1;
	return -1;
}

__attribute__((format(printf, 2, 3), cold, noinline))
static int fail(struct emu *e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfail(e, fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- small buffers ---- */

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap * 2 : 64;
	while (n < need)
		n *= 2;
	void *np = realloc(*p, n * elem);
	if (np == NULL)
		return -1;
	*p = np;
	*cap = n;
	return 0;
}

static inline int qpush(struct emu *e, uint32_t kind, size_t a, size_t b)
{
	if (__builtin_expect(e->qlen == e->qcap, 0) &&
			grow((void **) &e->q, &e->qcap, e->qlen + 1, sizeof *e->q) != 0)
		return fail(e, "out of memory");
	e->q[e->qlen++] = (struct qent) { kind, (uint32_t) a, (uint32_t) b };
	return 0;
}

static inline int rec(struct emu *e, int file, size_t row, int type, int64_t value)
{
	if (__builtin_expect(e->nprv[file] == e->prvcap[file], 0) &&
			grow((void **) &e->prv[file], &e->prvcap[file], e->nprv[file] + 1,
				sizeof *e->prv[file]) != 0)
		return fail(e, "out of memory");
	struct emu_prv_rec *r = &e->prv[file][e->nprv[file]++];
	r->time = e->dclock;
	r->value = value;
	r->row = (uint32_t) row;
	r->type = type;
	return 0;
}

static int irec(struct emu *e, int kind, size_t row, int type, int64_t value, int isnull)
{
	if (!e->internal)
		return 0;
	if (__builtin_expect(e->nirecs == e->ireccap, 0) &&
			grow((void **) &e->irecs, &e->ireccap, e->nirecs + 1, sizeof *e->irecs) != 0)
		return fail(e, "out of memory");
	struct emu_rec *r = &e->irecs[e->nirecs++];
	r->time = e->dclock;
	r->value = isnull ? 0 : value;
	r->row = (uint32_t) row;
	r->type = type;
	r->kind = (uint8_t) kind;
	r->isnull = (uint8_t) isnull;
	return 0;
}

/* ---- stream -> thread map ---- */

static size_t ptr_hash(const void *p)
{
	uint64_t x = (uint64_t) (uintptr_t) p;
	x ^= x >> 33;
	x *= UINT64_C(0xff51afd7ed558ccd);
	x ^= x >> 33;
	return (size_t) x;
}

static int map_build(struct emu *e)
{
	size_t n = 16;
	while (n < e->nthreads * 2 + 2)
		n *= 2;
	e->map = calloc(n, sizeof *e->map);
	if (e->map == NULL)
		return -1;
	e->map_mask = n - 1;
	for (size_t t = 0; t < e->nthreads; t++) {
		const struct weft_stream *s = e->sys->threads[t].stream;
		if (s == NULL)
			continue;
		size_t h = ptr_hash(s) & e->map_mask;
		while (e->map[h].key != NULL && e->map[h].key != s)
			h = (h + 1) & e->map_mask;
		e->map[h].key = s;
		e->map[h].thread = t;
	}
	return 0;
}

static size_t map_find(const struct emu *e, const struct weft_stream *s)
{
	if (s == NULL)
		return SIZE_MAX;
	size_t h = ptr_hash(s) & e->map_mask;
	while (e->map[h].key != NULL) {
		if (e->map[h].key == s)
			return e->map[h].thread;
		h = (h + 1) & e->map_mask;
	}
	return SIZE_MAX;
}

/* ---- construction ---- */

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
	return (x > y) - (x < y);
}

/* PCF values are written as 32-bit ints: two values that collide after the
 * cast cannot both be labelled. */
static int check_pcf_values(struct emu *e, const struct chan *c, char *err, size_t errlen)
{
	size_t n = c->info.nvalues;
	if (n < 2)
		return 0;
	int64_t *v = malloc(n * sizeof *v);
	if (v == NULL)
		return -1;
	for (size_t i = 0; i < n; i++) {
		int64_t x = c->info.values ? c->info.values[i].value : c->info.mvalues[i].value;
		v[i] = (int64_t) (int32_t) (uint32_t) (uint64_t) x;
	}
	qsort(v, n, sizeof *v, cmp_i64);
	for (size_t i = 1; i < n; i++) {
		if (v[i] == v[i - 1]) {
			snprintf(err, errlen, "%s: two value labels collide as the 32-bit "
					"Paraver value %" PRId64, c->info.thread_label, v[i]);
			free(v);
			(void) e;
			return -1;
		}
	}
	free(v);
	return 0;
}

static int add_chan(struct emu *e, size_t *cap, const struct chan *c)
{
	if (grow((void **) &e->chans, cap, e->nchans + 1, sizeof *e->chans) != 0)
		return -1;
	struct chan *n = &e->chans[e->nchans++];
	*n = *c;
	switch (c->desc->track) {
	case EMU_TRACK_ANY:
		n->vis = ~0u;
		break;
	case EMU_TRACK_ACT:
		n->vis = EMU_STM(EMU_ST_RUNNING) | EMU_STM(EMU_ST_COOLING) | EMU_STM(EMU_ST_WARMING);
		break;
	default:
		n->vis = EMU_STM(EMU_ST_RUNNING);
		break;
	}
	n->tpol = (uint8_t) c->desc->thread_policy;
	n->cpol = (uint8_t) c->desc->cpu_policy;
	return 0;
}

static void build_dispatch(struct model_rt *m)
{
	for (size_t i = 0; i < 65536; i++)
		m->disp[i] = -2;
	/* Categories present, then wildcards, then exact values. */
	for (size_t i = 0; i < m->desc->nevents; i++) {
		size_t c = (unsigned char) m->desc->events[i].mcv[1];
		for (size_t v = 0; v < 256; v++)
			if (m->disp[c << 8 | v] == -2)
				m->disp[c << 8 | v] = -1;
	}
	for (size_t i = 0; i < m->desc->nevents; i++) {
		const char *mcv = m->desc->events[i].mcv;
		size_t c = (unsigned char) mcv[1];
		if (mcv[2] == '*')
			for (size_t v = 0; v < 256; v++)
				if (m->disp[c << 8 | v] == -1)
					m->disp[c << 8 | v] = (int16_t) i;
	}
	for (size_t i = 0; i < m->desc->nevents; i++) {
		const char *mcv = m->desc->events[i].mcv;
		if (mcv[2] != '*')
			m->disp[(size_t) (unsigned char) mcv[1] << 8 | (unsigned char) mcv[2]] =
				(int16_t) i;
	}
}

struct emu *emu_create(const struct emu_sys *sys, const struct emu_model_desc *const *models,
		size_t nmodels, const struct emu_opts *opts, char *err, size_t errlen)
{
	struct emu *e = calloc(1, sizeof *e);
	if (e == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	e->sys = sys;
	if (opts != NULL)
		e->opts = *opts;
	e->nthreads = sys->nthreads;
	e->ncpus = sys->ncpus;
	for (size_t i = 0; i < 256; i++)
		e->model_of_byte[i] = -1;
	e->nmodels = nmodels;
	e->models = calloc(nmodels + 1, sizeof *e->models);
	size_t nfam = 0;
	for (size_t mi = 0; mi < nmodels; mi++)
		for (size_t ci = 0; ci < models[mi]->nchans; ci++)
			nfam += models[mi]->chans[ci].family == EMU_FAMILY_MARK_TYPES;
	e->mark_chan = calloc(sys->nmarks * nfam + 1, sizeof *e->mark_chan);
	if (e->models == NULL || e->mark_chan == NULL)
		goto oom;
	size_t chcap = 0;
	for (size_t mi = 0; mi < nmodels; mi++) {
		struct model_rt *m = &e->models[mi];
		m->desc = models[mi];
		e->model_of_byte[(unsigned char) m->desc->byte] = (int) mi;
		m->disp = malloc(65536 * sizeof *m->disp);
		if (m->disp == NULL)
			goto oom;
		build_dispatch(m);
		m->smin = calloc(m->desc->nevents + 1, sizeof *m->smin);
		m->smax = calloc(m->desc->nevents + 1, sizeof *m->smax);
		if (m->smin == NULL || m->smax == NULL)
			goto oom;
		for (size_t k = 0; k < m->desc->nevents; k++) {
			const struct emu_event_desc *d = &m->desc->events[k];
			m->smin[k] = d->size_rule == EMU_SIZE_ANY ? 0 : d->size;
			m->smax[k] = d->size_rule == EMU_SIZE_EXACT ? d->size : UINT32_MAX;
		}
		m->chan_first = e->nchans;
		for (size_t ci = 0; ci < m->desc->nchans; ci++) {
			const struct emu_chan_desc *d = &m->desc->chans[ci];
			struct chan c = { 0 };
			c.desc = d;
			c.model = mi;
			c.info.name = d->name;
			if (d->family == EMU_FAMILY_MARK_TYPES) {
				for (size_t k = 0; k < sys->nmarks; k++) {
					const struct emu_mark *mk = &sys->marks[k];
					c.kind = mk->stack ? EMU_CHAN_STACK : EMU_CHAN_SINGLE;
					c.mark_type = mk->type;
					c.info.prv_type = d->prv_type + mk->type;
					c.info.thread_label = mk->title;
					c.info.cpu_label = mk->title;
					c.info.nvalues = mk->nlabels;
					c.info.values = NULL;
					c.info.mvalues = mk->labels;
					c.info.stack = mk->stack;
					e->mark_chan[e->nmark_chan].type = mk->type;
					e->mark_chan[e->nmark_chan++].chan = e->nchans;
					if (check_pcf_values(e, &c, err, errlen) != 0)
						goto fail;
					if (add_chan(e, &chcap, &c) != 0)
						goto oom;
				}
			} else {
				c.kind = d->kind;
				c.mark_type = -1;
				c.info.prv_type = d->prv_type;
				c.info.thread_label = d->thread_label;
				c.info.cpu_label = d->cpu_label;
				c.info.nvalues = d->nvalues;
				c.info.values = d->values;
				c.info.stack = d->kind == EMU_CHAN_STACK;
				if (check_pcf_values(e, &c, err, errlen) != 0)
					goto fail;
				if (add_chan(e, &chcap, &c) != 0)
					goto oom;
			}
		}
		m->nchans = e->nchans - m->chan_first;
		if (m->desc->thread_state_size > 0) {
			m->tstate = calloc(sys->nthreads + 1, m->desc->thread_state_size);
			if (m->tstate == NULL)
				goto oom;
		}
	}
	qsort(e->mark_chan, e->nmark_chan, sizeof *e->mark_chan, cmp_mark_ref);
	for (size_t k = 0; k < e->nmark_chan; k++)
		if (e->mark_chan[k].type >= 0 && e->mark_chan[k].type < 256)
			e->mark_direct[e->mark_chan[k].type] = (int32_t) e->mark_chan[k].chan + 1;
	size_t nt = e->nthreads, nc = e->ncpus, nch = e->nchans;
	e->tracked = calloc(nch + 1, sizeof *e->tracked);
	if (e->tracked == NULL)
		goto oom;
	for (size_t c = 0; c < nch; c++)
		if (e->chans[c].desc->track != EMU_TRACK_ANY)
			e->tracked[e->ntracked++] = c;
	e->thr = calloc(nt + 1, sizeof *e->thr);
	e->cpu = calloc(nc + 1, sizeof *e->cpu);
	e->raw = calloc(nt * nch + 1, sizeof *e->raw);
	e->tview = calloc(nt * nch + 1, sizeof *e->tview);
	e->cview = calloc(nc * nch + 1, sizeof *e->cview);
	if (!e->thr || !e->cpu || !e->raw || !e->tview || !e->cview)
		goto oom;
	for (size_t t = 0; t < nt; t++) {
		const struct emu_sys_thread *st = &sys->threads[t];
		e->thr[t].cpu = NO_CPU;
		e->thr[t].tid = st->tid;
		e->thr[t].proc = st->proc;
		e->thr[t].loom = st->loom;
		e->thr[t].pid = sys->procs[st->proc].pid;
	}
	for (size_t c = 0; c < nc; c++)
		e->cpu[c].rsel = -1;
	if (map_build(e) != 0)
		goto oom;
	return e;
oom:
	snprintf(err, errlen, "out of memory creating the emulator");
fail:
	emu_destroy(e);
	return NULL;
}

void emu_destroy(struct emu *e)
{
	if (e == NULL)
		return;
	for (size_t m = 0; m < e->nmodels && e->models; m++) {
		free(e->models[m].disp);
		free(e->models[m].smin);
		free(e->models[m].smax);
		free(e->models[m].tstate);
	}
	if (e->raw != NULL)
		for (size_t i = 0; i < e->nthreads * e->nchans; i++)
			free(e->raw[i].stack);
	free(e->models);
	free(e->mark_chan);
	free(e->chans);
	free(e->tracked);
	free(e->thr);
	free(e->cpu);
	free(e->raw);
	free(e->tview);
	free(e->cview);
	free(e->map);
	free(e->q);
	free(e->prv[0]);
	free(e->prv[1]);
	for (size_t k = 0; k < EMU_BATCH_KEEP; k++) {
		free(e->prv_kept[k][0]);
		free(e->prv_kept[k][1]);
	}
	free(e->irecs);
	free(e);
}

int emu_add_sink(struct emu *e, const struct emu_sink *sink)
{
	if (e->nsinks == EMU_MAX_SINKS) {
		snprintf(e->err, sizeof e->err, "too many output sinks");
		return -1;
	}
	e->sinks[e->nsinks++] = *sink;
	if (sink->internal)
		e->internal = 1;
	return 0;
}

const char *emu_error(const struct emu *e) { return e->err; }
const struct emu_sys *emu_system(const struct emu *e) { return e->sys; }
int64_t emu_duration(const struct emu *e) { return e->duration; }
uint64_t emu_nevents(const struct emu *e) { return e->nevents; }
size_t emu_nchans(const struct emu *e) { return e->nchans; }
const struct emu_chan_info *emu_chan_at(const struct emu *e, size_t i) { return &e->chans[i].info; }

/* ---- system channels ---- */

static int is_active(enum emu_state s)
{
	return s == EMU_ST_RUNNING || s == EMU_ST_COOLING || s == EMU_ST_WARMING;
}

static const char *tname(const struct emu *e, size_t t)
{
	return e->sys->threads[t].label;
}

/* A CPU's row label without the leading space of physical CPUs. */
static const char *cname(const struct emu *e, size_t c)
{
	const char *l = e->sys->cpus[c].label;
	return l[0] == ' ' ? l + 1 : l;
}

/* A thread system channel: a repeated value is refused when `refuse`,
 * ignored otherwise; a second write in one event is refused. */
static int tsys_write(struct emu *e, size_t t, int type, int64_t *cur, uint64_t *stamp,
		int64_t v, int refuse, const char *what)
{
	if (*cur == v) {
		if (refuse)
			return fail(e, "%s of thread %s set again to the value it has (%" PRId64 ")",
					what, tname(e, t), v);
		return 0;
	}
	if (*stamp == e->seq)
		return fail(e, "%s of thread %s written twice in one event", what, tname(e, t));
	*stamp = e->seq;
	*cur = v;
	return rec(e, EMU_FILE_THREAD, t, type, v);
}

static int cpu_write(struct emu *e, size_t c, int type, int64_t *cur, uint64_t *stamp,
		int64_t v, const char *what)
{
	if (*cur == v)
		return 0;
	if (*stamp == e->seq)
		return fail(e, "%s of %s written twice in one event", what, cname(e, c));
	*stamp = e->seq;
	*cur = v;
	return rec(e, EMU_FILE_CPU, c, type, v);
}

static void cpu_busy(struct emu *e, size_t c, int64_t before)
{
	struct cpu *C = &e->cpu[c];
	if (before == 0 && C->nrun > 0)
		C->busy_since = e->dclock;
	else if (before > 0 && C->nrun == 0)
		C->busy += e->dclock - C->busy_since;
}

/* U(C): the CPU's running thread, tid, pid and count. */
static int cpu_update(struct emu *e, size_t c, size_t cause)
{
	struct cpu *C = &e->cpu[c];
	const struct emu_sys_cpu *sc = &e->sys->cpus[c];
	if (!sc->is_virtual && C->nrun >= 2) {
		size_t other = (size_t) (C->run_sum - (int64_t) cause);
		return fail(e, "two Running threads on physical %s (%s and %s)", cname(e, c),
				other < e->nthreads ? tname(e, other) : "?", tname(e, cause));
	}
	int64_t r = C->nrun == 1 ? C->run_sum : -1;
	int64_t tid = r >= 0 ? e->thr[r].tid : 0;
	int64_t pid = r >= 0 ? e->thr[r].pid : 0;
	if (cpu_write(e, c, 2, &C->tidv, &C->st_tid, tid, "running tid") != 0)
		return -1;
	if (cpu_write(e, c, 1, &C->pidv, &C->st_pid, pid, "running pid") != 0)
		return -1;
	if (C->rsel != r) {
		if (C->st_rsel == e->seq)
			return fail(e, "running thread of %s written twice in one event", cname(e, c));
		C->st_rsel = e->seq;
		C->rsel = r;
		if (irec(e, EMU_REC_RSEL, c, 0, r, 0) != 0 ||
				qpush(e, TRIG_RSEL, c, 0) != 0)
			return -1;
	}
	if (!C->nrun_written || C->nrun_v != C->nrun) {
		if (C->st_nrun == e->seq)
			return fail(e, "running count of %s written twice in one event", cname(e, c));
		C->st_nrun = e->seq;
		C->nrun_written = 1;
		C->nrun_v = C->nrun;
		if (rec(e, EMU_FILE_CPU, c, 3, C->nrun) != 0 ||
				irec(e, EMU_REC_NRUN, c, 0, C->nrun, 0) != 0)
			return -1;
	}
	return 0;
}

static void cpu_add(struct emu *e, size_t t, int sign)
{
	struct thr *T = &e->thr[t];
	if (T->cpu < 0 || T->state != EMU_ST_RUNNING)
		return;
	struct cpu *C = &e->cpu[T->cpu];
	int64_t before = C->nrun;
	C->nrun += sign;
	C->run_sum += sign * (int64_t) t;
	cpu_busy(e, (size_t) T->cpu, before);
}

static int state_write(struct emu *e, size_t t, enum emu_state to)
{
	struct thr *T = &e->thr[t];
	if (T->st_state == e->seq)
		return fail(e, "state of thread %s written twice in one event", tname(e, t));
	T->st_state = e->seq;
	if (T->state != EMU_ST_UNKNOWN)
		T->time[T->state] += e->dclock - T->since;
	T->since = e->dclock;
	int was_running = T->state == EMU_ST_RUNNING;
	int running = to == EMU_ST_RUNNING;
	if (was_running && !running)
		cpu_add(e, t, -1);
	T->state = to;
	if (!was_running && running)
		cpu_add(e, t, +1);
	if (rec(e, EMU_FILE_THREAD, t, 4, to) != 0)
		return -1;
	return qpush(e, TRIG_STATE, t, 0);
}

static int resolve_cpu(struct emu *e, size_t loom, int64_t index, size_t *out)
{
	const struct emu_loom *L = &e->sys->looms[loom];
	if (index == -1) {
		*out = L->vcpu;
		return 0;
	}
	if (index < 0 || (uint64_t) index >= L->nphys)
		return fail(e, "CPU index %" PRId64 " does not exist in loom %s "
				"(indices 0..%zu, -1 for the virtual CPU)", index, L->name,
				L->nphys ? L->nphys - 1 : 0);
	*out = L->cpu_by_index[index];
	return 0;
}

static int join_cpu(struct emu *e, size_t t, size_t c)
{
	e->thr[t].cpu = (int64_t) c;
	cpu_add(e, t, +1);
	return cpu_update(e, c, t);
}

static int leave_cpu(struct emu *e, size_t t)
{
	size_t c = (size_t) e->thr[t].cpu;
	cpu_add(e, t, -1);
	e->thr[t].cpu = NO_CPU;
	return cpu_update(e, c, t);
}

static int aff_write(struct emu *e, size_t t, int64_t v)
{
	struct thr *T = &e->thr[t];
	return tsys_write(e, t, 6, &T->aff, &T->st_aff, v, 1, "CPU affinity");
}

static int tid_write(struct emu *e, size_t t)
{
	struct thr *T = &e->thr[t];
	int64_t v = is_active(T->state) ? T->tid : 0;
	return tsys_write(e, t, 2, &T->tidv, &T->st_tid, v, 0, "active tid");
}

/* ---- actions ---- */

static inline __attribute__((always_inline))
int get_val(struct emu *e, const struct emu_val *v, int64_t *out, int *isnull)
{
	const struct weft_event *ev = e->ev;
	*isnull = 0;
	*out = 0;
	switch (v->src) {
	case EMU_VAL_NULL:
		*isnull = 1;
		*out = 0;
		return 0;
	case EMU_VAL_CONST:
		*out = v->k;
		return 0;
	case EMU_VAL_I32: {
		int32_t x;
		if ((uint64_t) v->k + 4 > ev->payload_size)
			return fail(e, "payload of %" PRIu32 " bytes has no 32-bit field at offset %"
					PRId64, ev->payload_size, v->k);
		memcpy(&x, ev->payload + v->k, 4);
		*out = x;
		return 0;
	}
	case EMU_VAL_I64: {
		int64_t x;
		if ((uint64_t) v->k + 8 > ev->payload_size)
			return fail(e, "payload of %" PRIu32 " bytes has no 64-bit field at offset %"
					PRId64, ev->payload_size, v->k);
		memcpy(&x, ev->payload + v->k, 8);
		*out = x;
		return 0;
	}
	}
	return fail(e, "bad value source in the model description");
}

static void list_states(char *buf, size_t len, unsigned mask)
{
	size_t n = 0, k = 0, total = 0;
	buf[0] = '\0';
	for (int s = 0; s < EMU_NSTATES; s++)
		total += (mask >> s) & 1u;
	for (int s = 0; s < EMU_NSTATES; s++) {
		if (!(mask & EMU_STM(s)))
			continue;
		const char *sep = k == 0 ? "" : (k + 1 == total ? " or " : ", ");
		n += (size_t) snprintf(buf + n, len > n ? len - n : 0, "%s%s", sep, state_names[s]);
		k++;
	}
}

static int act_start(struct emu *e, size_t t, const struct emu_action *a)
{
	struct thr *T = &e->thr[t];
	int64_t idx;
	int isnull;
	if (get_val(e, &a->val, &idx, &isnull) != 0)
		return -1;
	if (T->state == EMU_ST_RUNNING)
		return fail(e, "thread %s is already Running", tname(e, t));
	if (T->cpu >= 0)
		return fail(e, "thread %s is %s and already has %s", tname(e, t),
				state_names[T->state], cname(e, (size_t) T->cpu));
	size_t c = 0;
	if (resolve_cpu(e, T->loom, idx, &c) != 0)
		return -1;
	if (aff_write(e, t, (int64_t) c + 1) != 0 || state_write(e, t, EMU_ST_RUNNING) != 0 ||
			tid_write(e, t) != 0)
		return -1;
	return join_cpu(e, t, c);
}

static int act_state(struct emu *e, size_t t, const struct emu_action *a)
{
	struct thr *T = &e->thr[t];
	if (!(a->from & EMU_STM(T->state))) {
		char allowed[128];
		list_states(allowed, sizeof allowed, a->from);
		return fail(e, "thread %s is %s, but %s needs it %s", tname(e, t),
				state_names[T->state], e->cur_desc->what, allowed);
	}
	if (state_write(e, t, a->to) != 0 || tid_write(e, t) != 0)
		return -1;
	if (T->cpu < 0)
		return 0;
	if (a->to == EMU_ST_DEAD) {
		if (leave_cpu(e, t) != 0)
			return -1;
		return aff_write(e, t, 0);
	}
	return cpu_update(e, (size_t) T->cpu, t);
}

static int act_aff_self(struct emu *e, size_t t, const struct emu_action *a)
{
	struct thr *T = &e->thr[t];
	int64_t idx;
	int isnull;
	if (get_val(e, &a->val, &idx, &isnull) != 0)
		return -1;
	if (T->cpu < 0)
		return fail(e, "thread %s has no CPU (it is %s)", tname(e, t), state_names[T->state]);
	if (!is_active(T->state))
		return fail(e, "thread %s is %s, but an affinity change needs it Running, "
				"Cooling or Warming", tname(e, t), state_names[T->state]);
	size_t c = 0;
	if (resolve_cpu(e, T->loom, idx, &c) != 0)
		return -1;
	if ((int64_t) c == T->cpu)
		return 0;
	if (leave_cpu(e, t) != 0 || join_cpu(e, t, c) != 0)
		return -1;
	return aff_write(e, t, (int64_t) c + 1);
}

static int act_aff_remote(struct emu *e, size_t t, const struct emu_action *a)
{
	struct thr *T = &e->thr[t];
	int64_t idx, tid;
	int isnull;
	if (get_val(e, &a->val, &idx, &isnull) != 0 || get_val(e, &a->arg, &tid, &isnull) != 0)
		return -1;
	/* The target: in the emitter's process, then in the rest of its loom. */
	const struct emu_sys *sys = e->sys;
	size_t target = SIZE_MAX;
	const struct emu_proc *P = &sys->procs[T->proc];
	for (size_t i = 0; i < P->nthreads && target == SIZE_MAX; i++)
		if (sys->threads[P->thread_first + i].tid == tid)
			target = P->thread_first + i;
	const struct emu_loom *L = &sys->looms[T->loom];
	for (size_t p = L->proc_first; p < L->proc_first + L->nprocs && target == SIZE_MAX; p++) {
		const struct emu_proc *Q = &sys->procs[p];
		for (size_t i = 0; i < Q->nthreads; i++)
			if (sys->threads[Q->thread_first + i].tid == tid) {
				target = Q->thread_first + i;
				break;
			}
	}
	if (target == SIZE_MAX)
		return fail(e, "no thread with tid %" PRId64 " in loom %s", tid, L->name);
	struct thr *S = &e->thr[target];
	if (S->state == EMU_ST_UNKNOWN || S->state == EMU_ST_DEAD)
		return fail(e, "target thread %s is %s", tname(e, target), state_names[S->state]);
	if (S->cpu < 0)
		return fail(e, "target thread %s has no CPU", tname(e, target));
	size_t c = 0;
	if (resolve_cpu(e, T->loom, idx, &c) != 0)
		return -1;
	if (leave_cpu(e, target) != 0 || join_cpu(e, target, c) != 0)
		return -1;
	return aff_write(e, target, (int64_t) c + 1);
}

static inline int find_mark_chan(struct emu *e, int64_t type, size_t *out)
{
	if ((uint64_t) type < 256) {
		int32_t c = e->mark_direct[type];
		if (c > 0) {
			*out = (size_t) c - 1;
			return 0;
		}
	}
	size_t lo = 0, hi = e->nmark_chan;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int64_t mt = e->mark_chan[mid].type;
		if (mt == type) {
			*out = e->mark_chan[mid].chan;
			return 0;
		}
		if (mt < type)
			lo = mid + 1;
		else
			hi = mid;
	}
	return fail(e, "mark type %" PRId64 " is not declared in the metadata", type);
}

static size_t find_chan(struct emu *e, size_t model, const char *name)
{
	const struct model_rt *m = &e->models[model];
	for (size_t i = m->chan_first; i < m->chan_first + m->nchans; i++)
		if (strcmp(e->chans[i].desc->name, name) == 0)
			return i;
	return SIZE_MAX;
}

static const char *chan_what(const struct chan *c, char *buf, size_t len)
{
	if (c->mark_type >= 0)
		snprintf(buf, len, "mark type %d", c->mark_type);
	else
		snprintf(buf, len, "channel %s", c->info.name);
	return buf;
}

static int act_raw(struct emu *e, size_t t, size_t model, const struct emu_action *a)
{
	size_t ch = 0;
	char what[64];
	if (a->sel.src != EMU_VAL_NULL) {
		int64_t type;
		int isnull;
		if (get_val(e, &a->sel, &type, &isnull) != 0 || find_mark_chan(e, type, &ch) != 0)
			return -1;
	} else {
		ch = find_chan(e, model, a->chan);
		if (ch == SIZE_MAX)
			return fail(e, "model description: no channel %s", a->chan);
	}
	const struct chan *C = &e->chans[ch];
#define WHAT chan_what(C, what, sizeof what)
	int64_t v;
	int isnull;
	if (get_val(e, &a->val, &v, &isnull) != 0)
		return -1;
	if (a->nonzero && !isnull && v == 0)
		return fail(e, "%s: value 0 is not allowed", WHAT);
	if (a->op == EMU_OP_SET && C->kind != EMU_CHAN_SINGLE)
		return fail(e, "%s is a stack: set it with push and pop", WHAT);
	if (a->op != EMU_OP_SET && C->kind != EMU_CHAN_STACK)
		return fail(e, "%s is single: %s needs a stack", WHAT,
				a->op == EMU_OP_PUSH ? "a push" : "a pop");
	struct raw *R = &e->raw[t * e->nchans + ch];
	if (R->stamp == e->seq)
		return fail(e, "%s of thread %s written twice in one event", WHAT, tname(e, t));
	int kind;
	switch (a->op) {
	case EMU_OP_SET:
		if (C->desc->dup == EMU_DUP_REFUSE &&
				((isnull && R->depth == 0) || (!isnull && R->depth == 1 && R->val == v))) {
			if (isnull)
				return fail(e, "%s of thread %s is already null", WHAT, tname(e, t));
			return fail(e, "%s of thread %s already holds %" PRId64, WHAT, tname(e, t), v);
		}
		R->depth = isnull ? 0 : 1;
		R->val = isnull ? 0 : v;
		kind = EMU_REC_RAW_SET;
		break;
	case EMU_OP_PUSH:
		if (C->desc->dup == EMU_DUP_REFUSE && R->depth > 0 && R->val == v)
			return fail(e, "%s of thread %s already has %" PRId64 " on top", WHAT,
					tname(e, t), v);
		if (R->depth == EMU_STACK_MAX)
			return fail(e, "%s of thread %s: stack full (%d values)", WHAT, tname(e, t),
					EMU_STACK_MAX);
		if (R->depth == R->cap) {
			size_t cap = R->cap;
			if (grow((void **) &R->stack, &cap, R->depth + 1, sizeof *R->stack) != 0)
				return fail(e, "out of memory");
			R->cap = (uint32_t) cap;
		}
		R->stack[R->depth++] = v;
		R->val = v;
		kind = EMU_REC_RAW_PUSH;
		break;
	default:
		if (R->depth == 0)
			return fail(e, "%s of thread %s: pop of %" PRId64 " from an empty stack", WHAT,
					tname(e, t), v);
		if (R->val != v)
			return fail(e, "%s of thread %s: pop of %" PRId64 " but the top is %" PRId64,
					WHAT, tname(e, t), v, R->val);
		R->depth--;
		R->val = R->depth > 0 ? R->stack[R->depth - 1] : 0;
		kind = EMU_REC_RAW_POP;
		break;
	}
	R->stamp = e->seq;
	if (irec(e, kind, t, C->info.prv_type, v, isnull) != 0)
		return -1;
	return qpush(e, TRIG_RAW, t, ch);
}
#undef WHAT

/* ---- propagation ---- */

static inline int visible(const struct emu *e, size_t t, const struct chan *c)
{
	return (c->vis >> e->thr[t].state) & 1u;
}

static inline int view_emit(struct emu *e, struct last *L, enum emu_policy pol, int file, size_t row,
		int type, int64_t v, int isnull)
{
	if (type == 0)
		return 0;
	if (L->st != 0) {
		int lastnull = L->st == 1;
		switch (pol) {
		case EMU_POL_SKIPDUP:
			if (lastnull == isnull && (isnull || L->v == v))
				return 0;
			break;
		case EMU_POL_SKIPDUPNULL:
			if (isnull && lastnull)
				return 0;
			break;
		case EMU_POL_EMITDUP:
			break;
		}
	}
	L->st = isnull ? 1 : 2;
	L->v = v;
	return rec(e, file, row, type, isnull ? 0 : v);
}

static inline int eval_tview(struct emu *e, size_t t, size_t ch)
{
	size_t nch = e->nchans;
	struct last *L = &e->tview[t * nch + ch];
	if (L->stamp == e->seq)
		return 0;
	L->stamp = e->seq;
	const struct chan *C = &e->chans[ch];
	const struct raw *R = &e->raw[t * nch + ch];
	int isnull = !visible(e, t, C) || R->depth == 0;
	return view_emit(e, L, (enum emu_policy) C->tpol, EMU_FILE_THREAD, t, C->info.prv_type,
			R->val, isnull);
}

static inline int eval_cview(struct emu *e, size_t c, size_t ch)
{
	size_t nch = e->nchans;
	struct last *L = &e->cview[c * nch + ch];
	if (L->stamp == e->seq)
		return 0;
	L->stamp = e->seq;
	const struct chan *C = &e->chans[ch];
	int64_t r = e->cpu[c].rsel;
	int isnull = 1;
	int64_t v = 0;
	if (r >= 0) {
		const struct raw *R = &e->raw[(size_t) r * nch + ch];
		isnull = R->depth == 0;
		v = R->val;
	}
	return view_emit(e, L, (enum emu_policy) C->cpol, EMU_FILE_CPU, c, C->info.prv_type, v,
			isnull);
}

/* Walks the writes of the event in order and re-evaluates their dependent
 * views. Views have no dependents, so evaluating them during the walk
 * gives the same order as queueing them after the triggers. */
static int propagate(struct emu *e)
{
	size_t nch = e->nchans;
	for (size_t i = 0; i < e->qlen; i++) {
		struct qent q = e->q[i];
		switch (q.kind) {
		case TRIG_STATE:
			for (size_t k = 0; k < e->ntracked; k++)
				if (eval_tview(e, q.a, e->tracked[k]) != 0)
					return -1;
			break;
		case TRIG_RSEL:
			for (size_t c = 0; c < nch; c++)
				if (eval_cview(e, q.a, c) != 0)
					return -1;
			break;
		case TRIG_RAW: {
			const struct chan *C = &e->chans[q.b];
			if (visible(e, q.a, C) && eval_tview(e, q.a, q.b) != 0)
				return -1;
			int64_t cpu = e->thr[q.a].cpu;
			if (cpu >= 0 && e->cpu[cpu].rsel == (int64_t) q.a &&
					eval_cview(e, (size_t) cpu, q.b) != 0)
				return -1;
			break;
		}
		}
	}
	return 0;
}

/* ---- the event ---- */

static int lint_event(struct emu *e, const struct emu_event_desc *d)
{
	const struct weft_event *ev = e->ev;
	if (d->lint_size < 0)
		return 0;
	if (ev->jumbo)
		return fail(e, "lint: %s is a jumbo event; its signature is a normal event of %d "
				"payload bytes", d->what, d->lint_size);
	if (ev->payload_size != (uint32_t) d->lint_size)
		return fail(e, "lint: %s has %" PRIu32 " payload bytes; its signature has %d",
				d->what, ev->payload_size, d->lint_size);
	return 0;
}

static int run_event(struct emu *e, size_t t)
{
	const struct weft_event *ev = e->ev;
	unsigned char mb = (unsigned char) ev->mcv[0];
	int mi = e->model_of_byte[mb];
	if (mi < 0) {
		const struct emu_model_reg *regs;
		size_t nregs = emu_model_registry(&regs);
		for (size_t i = 0; i < nregs; i++)
			if ((unsigned char) regs[i].byte == mb)
				return fail(e, "the %s model is not enabled (no stream requires it, "
						"or weft emu does not support it)", regs[i].name);
		return fail(e, "no model is registered for the model byte of this event");
	}
	struct model_rt *m = &e->models[mi];
	/* Two byte loads, not one 16-bit load: the reader stores the MCV a
	 * byte at a time and a wider load would miss store forwarding. */
	size_t cat = (unsigned char) ev->mcv[1];
	__asm__("" : "+r"(cat));
	size_t val = (unsigned char) ev->mcv[2];
	int idx = m->disp[cat << 8 | val];
	if (idx == -2)
		return fail(e, "unknown event category of the %s model", m->desc->name);
	if (idx < 0)
		return fail(e, "unknown event of the %s model", m->desc->name);
	const struct emu_event_desc *d = &m->desc->events[idx];
	e->cur_desc = d;
	uint32_t ps = ev->payload_size;
	if (__builtin_expect(ps < m->smin[idx] || ps > m->smax[idx], 0)) {
		if (d->size_rule == EMU_SIZE_EXACT)
			return fail(e, "%s needs exactly %" PRIu32 " payload bytes, it has %" PRIu32,
					d->what, d->size, ps);
		return fail(e, "%s needs at least %" PRIu32 " payload bytes, it has %" PRIu32,
				d->what, d->size, ps);
	}
	if (e->opts.lint && lint_event(e, d) != 0)
		return -1;
	for (size_t i = 0; i < d->nactions; i++) {
		const struct emu_action *a = &d->actions[i];
		int r = 0;
		switch (a->op) {
		case EMU_OP_NONE:
			break;
		case EMU_OP_THREAD_START:
			r = act_start(e, t, a);
			break;
		case EMU_OP_THREAD_STATE:
			r = act_state(e, t, a);
			break;
		case EMU_OP_AFFINITY_SELF:
			r = act_aff_self(e, t, a);
			break;
		case EMU_OP_AFFINITY_REMOTE:
			r = act_aff_remote(e, t, a);
			break;
		case EMU_OP_SET:
		case EMU_OP_PUSH:
		case EMU_OP_POP:
			r = act_raw(e, t, (size_t) mi, a);
			break;
		case EMU_OP_HOOK: {
			struct emu_hook_ctx ctx = { e, ev, d, t, NULL, e->dclock };
			if (m->tstate != NULL)
				ctx.tstate = m->tstate + t * m->desc->thread_state_size;
			r = a->hook(&ctx);
			break;
		}
		}
		if (r != 0)
			return -1;
	}
	return propagate(e);
}

int emu_event(struct emu *e, const struct weft_event *ev)
{
	if (e->failed)
		return -1;
	e->ev = ev;
	size_t t;
	if (ev->stream == e->last_stream) {
		t = e->last_thread;
	} else {
		t = map_find(e, ev->stream);
		e->last_stream = ev->stream;
		e->last_thread = t;
	}
	if (t == SIZE_MAX)
		return fail(e, "the event comes from a stream that is not a thread of the system");
	if (!e->started) {
		e->started = 1;
		e->first_clock = ev->sclock;
	}
	e->dclock = ev->sclock - e->first_clock;
	e->duration = e->dclock;
	e->seq++;
	e->nevents++;
	e->cur_thread = t;
	e->qlen = 0;
	/* Kept in registers (a 16-byte copy of nprv[] would load across two
	 * 8-byte stores of the previous event and miss store forwarding). */
	size_t n0 = e->nprv[0], n1 = e->nprv[1], ni = e->nirecs;
	if (run_event(e, t) != 0) {
		/* Nothing of a refused event is written; what came before is. */
		e->nprv[0] = n0;
		e->nprv[1] = n1;
		e->nirecs = ni;
		return -1;
	}
	if (e->nprv[0] + e->nprv[1] + e->nirecs >= EMU_FLUSH_RECS)
		return emu_flush(e);
	return 0;
}

int emu_flush(struct emu *e)
{
	if (e->nprv[0] + e->nprv[1] + e->nirecs == 0)
		return e->failed ? -1 : 0;
	struct emu_batch b = {
		{ e->prv[0], e->prv[1] }, { e->nprv[0], e->nprv[1] }, e->irecs, e->nirecs,
	};
	struct emu_batch bp = b;
	bp.internal = NULL;
	bp.ninternal = 0;
	int r = 0;
	for (size_t s = 0; s < e->nsinks; s++) {
		char err[WEFT_ERR_MAX];
		if (e->sinks[s].records(e->sinks[s].self, e->sinks[s].internal ? &b : &bp,
				err, sizeof err) != 0) {
			if (!e->failed)
				snprintf(e->err, sizeof e->err, "%s", err);
			e->failed = 1;
			r = -1;
		}
	}
	/* The sinks may still read this set during their next EMU_BATCH_KEEP
	 * calls: fill the oldest kept one, which they are done with. */
	for (int f = 0; f < 2; f++) {
		struct emu_prv_rec *tp = e->prv_kept[0][f];
		size_t tc = e->prvcap_kept[0][f];
		for (size_t k = 0; k + 1 < EMU_BATCH_KEEP; k++) {
			e->prv_kept[k][f] = e->prv_kept[k + 1][f];
			e->prvcap_kept[k][f] = e->prvcap_kept[k + 1][f];
		}
		e->prv_kept[EMU_BATCH_KEEP - 1][f] = e->prv[f];
		e->prvcap_kept[EMU_BATCH_KEEP - 1][f] = e->prvcap[f];
		e->prv[f] = tp;
		e->prvcap[f] = tc;
	}
	e->nprv[0] = e->nprv[1] = e->nirecs = 0;
	return r != 0 || e->failed ? -1 : 0;
}

int emu_finish(struct emu *e)
{
	if (e->failed || emu_flush(e) != 0)
		return -1;
	e->ev = NULL;
	for (size_t mi = 0; mi < e->nmodels; mi++) {
		const struct model_rt *m = &e->models[mi];
		if (m->desc->finish == NULL)
			continue;
		struct emu_hook_ctx ctx = { e, NULL, NULL, SIZE_MAX, m->tstate, e->duration };
		if (m->desc->finish(&ctx) != 0)
			return -1;
	}
	for (size_t t = 0; t < e->nthreads; t++) {
		if (e->thr[t].state != EMU_ST_DEAD)
			return fail(e, "%s: thread %d is %s at the end of the trace; every thread "
					"must end with OHe (Dead)", e->sys->threads[t].relpath,
					e->thr[t].tid, state_names[e->thr[t].state]);
	}
	return 0;
}

/* ---- hooks ---- */

int emu_hook_fail(struct emu_hook_ctx *ctx, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ctx->emu->ev = ctx->ev;
	vfail(ctx->emu, fmt, ap);
	va_end(ap);
	return -1;
}

__attribute__((format(printf, 3, 0)))
static void hook_vsay(struct emu_hook_ctx *ctx, void (*say)(void *, const char *),
		const char *fmt, va_list ap)
{
	struct emu *e = ctx->emu;
	if (say == NULL)
		return;
	char msg[WEFT_ERR_MAX], full[WEFT_ERR_MAX + 256];
	vsnprintf(msg, sizeof msg, fmt, ap);
	if (ctx->thread < e->nthreads)
		snprintf(full, sizeof full, "%s: %s", e->sys->threads[ctx->thread].relpath, msg);
	else
		snprintf(full, sizeof full, "%s", msg);
	say(e->opts.warn_ctx, full);
}

void emu_hook_warn(struct emu_hook_ctx *ctx, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	hook_vsay(ctx, ctx->emu->opts.warn, fmt, ap);
	va_end(ap);
}

void emu_hook_info(struct emu_hook_ctx *ctx, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	hook_vsay(ctx, ctx->emu->opts.info, fmt, ap);
	va_end(ap);
}

enum emu_state emu_hook_thread_state(const struct emu_hook_ctx *ctx)
{
	return ctx->emu->thr[ctx->thread].state;
}

int emu_hook_tid(const struct emu_hook_ctx *ctx)
{
	return ctx->emu->thr[ctx->thread].tid;
}

int emu_hook_lint(const struct emu_hook_ctx *ctx)
{
	return ctx->emu->opts.lint;
}

/* ---- summary ---- */


void emu_summary(const struct emu *e, FILE *out)
{
	int64_t end = e->duration;
	fprintf(out, "duration: %" PRId64 " ns, %" PRIu64 " events\n", end, e->nevents);
	fprintf(out, "%-24s %14s %14s %14s %14s %14s\n", "thread (time in ns)", "Running",
			"Paused", "Cooling", "Warming", "Dead");
	static const int order[] = { EMU_ST_RUNNING, EMU_ST_PAUSED, EMU_ST_COOLING,
		EMU_ST_WARMING, EMU_ST_DEAD };
	for (size_t t = 0; t < e->nthreads; t++) {
		const struct thr *T = &e->thr[t];
		fprintf(out, "%-24s", e->sys->threads[t].label);
		for (size_t k = 0; k < 5; k++) {
			int s = order[k];
			int64_t v = T->time[s];
			if ((int) T->state == s && end > T->since)
				v += end - T->since;
			fprintf(out, " %14" PRId64, v);
		}
		fputc('\n', out);
	}
	fprintf(out, "%-24s %14s\n", "CPU", "running");
	for (size_t c = 0; c < e->ncpus; c++) {
		const struct cpu *C = &e->cpu[c];
		int64_t busy = C->busy;
		if (C->nrun > 0 && end > C->busy_since)
			busy += end - C->busy_since;
		double frac = end > 0 ? 100.0 * (double) busy / (double) end : 0.0;
		fprintf(out, "%-24s %13.2f%%\n", e->sys->cpus[c].label[0] == ' ' ?
				e->sys->cpus[c].label + 1 : e->sys->cpus[c].label, frac);
	}
}
