/* SPDX-License-Identifier: MIT */
/*
 * emu_internal.h - the state the parts of the engine share: engine.c
 * (dispatch, raw channels, views and their propagation), threads.c (thread
 * states and CPUs), tasks.c (task types, tasks, bodies), families.c
 * (channel families sized from metadata), breakdown.c, finish.c (end of
 * run, dynamic PCF values) and summary.c.
 */
#ifndef WEFT_EMU_INTERNAL_H
#define WEFT_EMU_INTERNAL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "emu.h"

#define EMU_STACK_MAX 512
#define EMU_MAX_SINKS 4
#define EMU_MAX_FLAGS 8
/* Records buffered before the sinks get them. The sinks may keep the Paraver
 * arrays for EMU_BATCH_KEEP more calls (emu.h), so a writer thread formats
 * one batch while the next ones are made. 4 Ki records (about 100 KB a
 * batch) rather than 16 Ki: a batch stays in the cores' L2 between the
 * emulation writing it and the writer reading it (process CPU on the 10M-event runtime trace, medians of 9
 * alternate runs: 0.751 -> 0.711 s; 8 Ki: 0.710 s; 2 Ki: no better). */
#define EMU_FLUSH_RECS (1u << 12)
/* Room beyond a batch in each array, for the records of the event that
 * reaches EMU_FLUSH_RECS. */
#define EMU_FLUSH_SLACK 1024u
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
	int64_t since; /* dclock of the last write (summary) */
	int64_t val; /* single: value; stack: top */
	int64_t *stack;
	uint32_t depth; /* single: 0 null, 1 set; stack: depth */
	uint32_t cap;
	uint64_t stamp;
	struct last tv; /* the thread view of the channel (beside the value it shows) */
};

struct chan {
	struct emu_chan_info info;
	const struct emu_chan_desc *desc;
	enum emu_chan_kind kind;
	int32_t mark_type;  /* mark family member, else -1 */
	int32_t counter;    /* counter family member, else -1 */
	size_t model;
	uint32_t vis;          /* EMU_STM() of the states where the thread view shows it */
	uint8_t tpol, cpol;    /* desc->thread_policy, desc->cpu_policy */
	uint8_t has_fallback;
	uint8_t zero_ok;
	uint8_t refuse_dup;    /* desc->dup == EMU_DUP_REFUSE */
	int64_t fallback;
	int bd;                /* an input of breakdown view bd - 1, or 0 */
	size_t acc_first;      /* summary: first accumulator of its values, or SIZE_MAX */
	int8_t acc_lut[128];   /* value 0..127 -> index of its label + 1, 0: none or look */
	uint8_t bd_role;       /* which input (breakdown.c) */
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
	unsigned flags; /* per-thread flags (bits of emu.flag_names) */
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

struct tasks_rt; /* tasks.c */

/* What the dispatch reads of an event description, side by side. */
struct ev_rt {
	const struct emu_event_desc *d;
	const struct emu_action *actions;
	size_t nactions;
	uint32_t smin, smax; /* the payload sizes its size rule accepts */
	/* it must be jumbo, it is only warned about, or --lint checks its
	 * size: the checks of event_checks() */
	int slow;
};

/* An MCV's dispatch flattened into one cache line: what run_event reads of
 * the model and of the event's description, and the first action's op, in
 * a direct-mapped table of EMU_DISP_SLOTS found by a hash of the MCV and
 * filled on the MCV's first use. The chain model byte -> model -> 64 Ki
 * table -> description -> action -> op was a dependent load at each step
 * before the jump to the action. */
#define EMU_DISP_SLOTS 512
struct disp_ent {
	_Alignas(64) uint32_t key; /* the MCV's bytes | EMU_DISP_VALID; 0: empty */
	uint32_t smin, smax;
	uint16_t guard_states, guard_bit;
	int16_t idx;               /* the event in m->ev[]; < 0: unknown (as m->disp) */
	uint8_t slow;
	uint8_t op0;               /* actions[0].op (EMU_OP_NONE without actions) */
	uint16_t nactions;
	/* 1: the event's only action is a raw write (op0) of the constant fv
	 * on engine channel fch, done without the action table (run_event) */
	uint8_t fast;
	uint8_t direct;            /* its one action is a task action (run_event) */
	uint32_t fch;
	int64_t fv;
	const struct emu_action *actions;
	const struct emu_event_desc *d;
	struct model_rt *m;
};
_Static_assert(sizeof(struct disp_ent) == 64, "a dispatch entry takes one cache line");
#define EMU_DISP_VALID (1u << 24)

struct model_rt {
	const struct emu_model_desc *desc;
	int16_t *disp; /* [cat << 8 | val]: event index, -1 unknown value, -2 unknown category */
	struct ev_rt *ev;      /* per event: what the dispatch reads of it */
	unsigned guard_states; /* desc->guard_states */
	uint8_t *warned;       /* per event: its warning was printed */
	size_t chan_first, nchans;
	size_t *chan_of_desc;  /* description channel -> first engine channel */
	unsigned char *tstate; /* nthreads * thread_state_size */
	unsigned flag_bit[EMU_MAX_FLAGS]; /* the model's flag i -> bit in thr.flags */
	unsigned guard_bit;    /* 0: no flag guard */
	struct tasks_rt *tasks;
	size_t counter_first, ncounters; /* channels of the counter family */
	char **counter_names;
	struct emu_value_label *dyn; /* task types for the PCF (finish.c) */
	size_t ndyn;
	int dyn_ok;            /* the task-type values were completed */
	int bd;                /* breakdown view index + 1, or 0 */
};

struct mark_ref {
	int64_t type;
	size_t chan;
};

struct map_ent {
	const struct weft_stream *key;
	size_t thread;
};

struct bd_rt; /* The JSON of a dotted key of thread t's stream.json (jansson's json_t,
 * to decref), or NULL when absent. */
struct json_t;
struct json_t *emu_thread_attr(const struct emu *e, size_t t, const char *key);

/* breakdown.c */

struct emu {
	const struct emu_sys *sys;
	struct emu_opts opts;
	size_t nmodels;
	struct model_rt *models;
	int model_of_byte[256];
	struct disp_ent *dtab; /* EMU_DISP_SLOTS */
	const char *flag_names[EMU_MAX_FLAGS];
	size_t nflags;

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
	struct raw *raw;    /* nthreads * nchans, with the thread views */
	struct last *cview; /* ncpus * nchans */
	/* summary: time each labelled value was on top, per thread */
	int64_t *acc;       /* nthreads * nacc */
	size_t nacc;

	struct map_ent *map;
	size_t map_mask;
	const struct weft_stream *last_stream;
	size_t last_thread;

	struct emu_sink sinks[EMU_MAX_SINKS];
	size_t nsinks;
	int internal; /* some sink wants the records other than EMU_REC_PRV */

	/* breakdown views (-b) */
	size_t nbd;
	struct bd_rt *bd[EMU_MAX_BD];
	struct emu_view views[EMU_MAX_VIEWS];

	/* per event */
	uint64_t seq;
	const struct weft_event *ev;
	size_t cur_thread;
	int direct; /* raw writes evaluate their views at once (run_event) */
	const struct emu_event_desc *cur_desc;
	int64_t dclock;
	struct qent *q;
	size_t qlen, qcap;
	/* records of the accepted events not yet given to the sinks */
	struct emu_prv_rec *prv[EMU_MAX_VIEWS];
	size_t nprv[EMU_MAX_VIEWS], prvcap[EMU_MAX_VIEWS];
	/* the sets of Paraver arrays last handed to the sinks, oldest first */
	struct emu_prv_rec *prv_kept[EMU_BATCH_KEEP][EMU_MAX_VIEWS];
	size_t prvcap_kept[EMU_BATCH_KEEP][EMU_MAX_VIEWS];
	struct emu_rec *irecs;
	size_t nirecs, ireccap;

	/* weft emu --from/--to (emu_set_window) */
	struct emu_window win;
	int muted;         /* before T0: no records */
	int win_stopped;   /* an event after T1 was refused */
	int64_t win_from, win_to; /* dclocks, once started */
	int64_t rbase;     /* subtracted from record times (T0's dclock) */
	uint64_t nmuted;   /* events emulated before the window */
	/* Before T0 without breakdown views or losses, the views are not
	 * evaluated: what would have been is marked (thread views by a raw
	 * write, every tracked one by a state change; CPU views by a raw
	 * write of their running thread, all of them by a change of it) and
	 * evaluated once at T0 (engine.c, lazy_mark and lazy_eval). NULL
	 * otherwise. */
	uint8_t *lazy_raw;  /* nthreads x nchans */
	uint8_t *lazy_thr;  /* nthreads */
	uint8_t *lazy_cv;   /* ncpus x nchans */
	uint8_t *lazy_cpu;  /* ncpus */

	int started;
	int64_t first_clock;
	int64_t duration;
	uint64_t nevents;
	int failed;
	int finished;
	char err[WEFT_ERR_MAX];

	/* weft emu --salvage: the threads cut short (emu_thread_cut), NULL
	 * when none; their end checks are waived */
	struct emu_cut *cuts;
	size_t ncut;

	/* threads that lost events (loss.c), NULL when none: per thread, 1
	 * when it is emulated leniently */
	struct emu_loss *loss;
	uint8_t *lossy;
};

struct emu_cut {
	int cut;
	int has_last;
	int64_t last;   /* sclock of its last event (or of its cut: at_cut) */
	int at_cut;     /* closed at the clock of its cut (weft.cut) */
	char why[384];
};

static inline int emu_is_cut(const struct emu *e, size_t t)
{
	return e->cuts != NULL && e->cuts[t].cut;
}

/* The end checks are waived for thread t: cut short, or it lost events. */
static inline int emu_unchecked(const struct emu *e, size_t t)
{
	return emu_is_cut(e, t) || (e->lossy != NULL && e->lossy[t]);
}

extern const char *const emu_state_names[EMU_NSTATES];

/* engine.c */
int emu_fail(struct emu *e, const char *fmt, ...) __attribute__((format(printf, 2, 3), cold));
int emu_vfail(struct emu *e, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
void emu_warn(struct emu *e, size_t thread, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int emu_grow(void **p, size_t *cap, size_t need, size_t elem);
int emu_get_val(struct emu *e, const struct emu_val *v, int64_t *out, int *isnull);
/* A raw write on channel ch of thread t (op: EMU_OP_SET, PUSH or POP). */
int emu_raw_write(struct emu *e, size_t t, size_t ch, enum emu_op op, int64_t v, int isnull);
/* n raw SETs of thread t (channels ch[], values v[], all null when isnull),
 * in order: n emu_raw_write calls. */
int emu_raw_set_n(struct emu *e, size_t t, const size_t *ch, const int64_t *v, size_t n,
		int isnull);
/* The window's start: the state at T0 written at T0; unmutes. */
int emu_win_snapshot(struct emu *e);
/* Room for n more Paraver records of view file (0, or -1: out of memory). */
int emu_prv_grow(struct emu *e, size_t file, size_t n);
/* An internal record (emu_irec) when a sink wants them. */
int emu_irec_add(struct emu *e, int kind, size_t row, int type, int64_t value, int isnull);
/* The value the CPU view of channel ch on CPU c has now (R(C)'s raw value,
 * or the channel's fallback without a running thread). */
void emu_cview_value(const struct emu *e, size_t c, size_t ch, int *isnull, int64_t *v);

/* emu_get_val with a 32-bit unsigned payload field (task ids) inline. */
static inline int emu_get_val_u32(struct emu *e, const struct emu_val *v, int64_t *out,
		int *isnull)
{
	const struct weft_event *ev = e->ev;
	if (__builtin_expect(v->src == EMU_VAL_U32 && (uint64_t) v->k + 4 <= ev->payload_size, 1)) {
		uint32_t x;
		memcpy(&x, ev->payload + v->k, 4);
		*out = x;
		*isnull = 0;
		return 0;
	}
	return emu_get_val(e, v, out, isnull);
}

static inline int emu_qpush(struct emu *e, uint32_t kind, size_t a, size_t b)
{
	if (__builtin_expect(e->qlen == e->qcap, 0) &&
			emu_grow((void **) &e->q, &e->qcap, e->qlen + 1, sizeof *e->q) != 0)
		return emu_fail(e, "out of memory");
	e->q[e->qlen++] = (struct qent) { kind, (uint32_t) a, (uint32_t) b };
	return 0;
}

static inline int emu_irec(struct emu *e, int kind, size_t row, int type, int64_t value,
		int isnull)
{
	if (!e->internal || e->muted)
		return 0;
	return emu_irec_add(e, kind, row, type, value, isnull);
}

static inline int emu_rec(struct emu *e, int file, size_t row, int type, int64_t value)
{
	if (__builtin_expect(e->muted, 0))
		return 0;
	if (__builtin_expect(e->nprv[file] == e->prvcap[file], 0) &&
			emu_prv_grow(e, (size_t) file, 1) != 0)
		return -1;
	struct emu_prv_rec *r = &e->prv[file][e->nprv[file]++];
	r->time = e->dclock - e->rbase;
	r->value = value;
	r->row = (uint32_t) row;
	r->type = type;
	return 0;
}

static inline int emu_is_active(enum emu_state s)
{
	return s == EMU_ST_RUNNING || s == EMU_ST_COOLING || s == EMU_ST_WARMING;
}

static inline const char *emu_tname(const struct emu *e, size_t t)
{
	return e->sys->threads[t].label;
}

/* A CPU's row label without the leading space of physical CPUs. */
static inline const char *emu_cname(const struct emu *e, size_t c)
{
	const char *l = e->sys->cpus[c].label;
	return l[0] == ' ' ? l + 1 : l;
}

/* summary.c: the time the value on top of a labelled channel held. */
static inline void emu_acc(struct emu *e, size_t t, size_t ch, struct raw *R)
{
	const struct chan *C = &e->chans[ch];
	if (C->acc_first != SIZE_MAX) {
		if (R->depth > 0) {
			int64_t v = R->val;
			if (v >= 0 && v < 128 && C->acc_lut[v] > 0) {
				e->acc[t * e->nacc + C->acc_first + (size_t) C->acc_lut[v] - 1] +=
					e->dclock - R->since;
			} else {
				for (size_t i = 0; i < C->info.nvalues; i++) {
					if (C->info.values[i].value == v) {
						e->acc[t * e->nacc + C->acc_first + i] += e->dclock - R->since;
						break;
					}
				}
			}
		}
		R->since = e->dclock;
	}
}

/* Re-evaluates the views the writes of the current step queued, and the
 * breakdown slots (what an event does after its actions). */
int emu_settle(struct emu *e);

/* loss.c */
struct emu_loss;
void emu_loss_destroy(struct emu *e);
/* Before event ev of thread t (at dclock): the lost intervals that began
 * before it (any thread) and those of thread t that end at it. */
int emu_loss_before(struct emu *e, size_t t, const struct weft_event *ev, int64_t dclock);
/* The current event of thread t was refused: 0 when it is skipped (t lost
 * events; counted), -1 when the refusal stands. */
int emu_loss_skip(struct emu *e, size_t t);
/* 1 when model m's guard is waived for thread t (it lost events and its
 * state is unknown). */
int emu_loss_guard_waived(const struct emu *e, size_t t, const struct model_rt *m);
/* The window's start: the lost intervals open at T0. */
int emu_loss_snapshot(struct emu *e);
void emu_loss_summary(const struct emu *e, FILE *out);

/* threads.c */
/* Thread t leaves its CPU and goes to the unknown state (no affinity, no
 * active tid), with the records. */
int emu_thread_forget(struct emu *e, size_t t);
int emu_act_start(struct emu *e, size_t t, const struct emu_action *a);
int emu_act_state(struct emu *e, size_t t, const struct emu_action *a);
int emu_act_aff_self(struct emu *e, size_t t, const struct emu_action *a);
int emu_act_aff_remote(struct emu *e, size_t t, const struct emu_action *a);

/* tasks.c */
int emu_tasks_create(struct emu *e, struct model_rt *m);
void emu_tasks_destroy(struct model_rt *m);
int emu_act_type_create(struct emu *e, size_t t, struct model_rt *m);
int emu_act_task_create(struct emu *e, size_t t, struct model_rt *m, const struct emu_action *a);
int emu_act_task(struct emu *e, size_t t, struct model_rt *m, const struct emu_action *a);
/* The gid of type id `id` in thread t's process (TYPE_GID), or of the task
 * of the current event (TASK_GID). */
int emu_tasks_type_gid(struct emu *e, size_t t, struct model_rt *m, uint32_t id, int64_t *gid);
int emu_tasks_event_gid(struct emu *e, struct model_rt *m, int64_t *gid);
/* The task-type values of the PCF: processes in row order, types in
 * creation order, a repeated (gid, label) once; a gid with two labels is
 * an error. */
int emu_tasks_pcf_values(struct emu *e, struct model_rt *m);
uint32_t emu_type_hash(const char *s, size_t len);
int64_t emu_type_gid(const char *label, size_t len);

/* families.c */
int emu_counters_setup(struct emu *e, struct model_rt *m, char *err, size_t errlen);
int emu_act_counters(struct emu *e, size_t t, struct model_rt *m);

/* The JSON of a dotted key of thread t's stream.json (jansson's json_t,
 * to decref), or NULL when absent. */
struct json_t;
struct json_t *emu_thread_attr(const struct emu *e, size_t t, const char *key);

/* breakdown.c */
int emu_bd_create(struct emu *e, size_t model, char *err, size_t errlen);
void emu_bd_destroy(struct bd_rt *b);
/* A CPU view of channel ch on CPU c was re-evaluated to (isnull, v). */
int emu_bd_input(struct emu *e, size_t c, size_t ch, int isnull, int64_t v);
/* End of an event: write the changed slots. */
int emu_bd_commit(struct emu *e);
/* The window's start: a record of every slot written with a value not 0. */
int emu_bd_snapshot(struct emu *e);
int emu_bd_finish(struct emu *e, size_t bd);

#endif
