/* SPDX-License-Identifier: MIT */
/*
 * emu_internal.h - the state the parts of the engine share, struct emu,
 * composed of a sub-object per part declared in the part's header:
 * dispatch.c (dispatch.h: the models, an event to its actions, emu_event),
 * chan_views.c (chan_views.h: channels, raw writes), propagate.c
 * (propagate.h: the views' re-evaluation), batch.c (batch.h: records and
 * sinks), window.c (window.h: --from/--to); engine.c (creation, messages,
 * hooks), threads.c (thread states and CPUs), tasks.c (task types, tasks,
 * bodies), families.c (channel families sized from metadata),
 * breakdown.c, finish.c (end of run, dynamic PCF values), summary.c and
 * loss.c. The per-event fast paths are inline in fastpath.h.
 */
#ifndef WEFT_EMU_INTERNAL_H
#define WEFT_EMU_INTERNAL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "emu.h"

#define EMU_STACK_MAX 512
#define NO_CPU INT64_C(-1)

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
	uint32_t cat;          /* its catalogue id: what its raw records carry */
	int32_t vrec;          /* ... and its view records: the id when it has a
	                          Paraver type (its views make records), else -1 */
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
	unsigned flags; /* per-thread flags (bits of emu.disp.flag_names) */
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

/* The parts of the engine that own a sub-object of struct emu. */
#include "batch.h"
#include "chan_views.h"
#include "dispatch.h"
#include "propagate.h"
#include "window.h"

struct tasks_rt; /* tasks.c */

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

struct bd_rt; /* breakdown.c */

/* The engine: the state the parts share (the system, threads, CPUs,
 * channels, raw values and views), the current step, and a sub-object per
 * part (its header names the file that owns it). */
struct emu {
	const struct emu_sys *sys;
	struct emu_opts opts;

	/* the current step (one event, or a step of loss.c or a thread's end) */
	uint64_t seq;
	const struct weft_event *ev;
	size_t cur_thread;
	const struct emu_event_desc *cur_desc;
	int64_t dclock;
	int64_t rbase;     /* subtracted from record times (T0's dclock, window.c) */
	int muted;         /* before T0: no records (window.c) */

	struct dispatch disp;  /* dispatch.c */
	struct prop prop;      /* propagate.c */
	struct batches batch;  /* batch.c */

	/* shared state: threads, CPUs, channels, raw values and views */
	size_t nthreads, ncpus;
	struct thr *thr;
	struct cpu *cpu;
	size_t nchans;
	struct chan *chans;
	struct raw *raw;    /* nthreads * nchans, with the thread views */
	struct last *cview; /* ncpus * nchans */
	/* summary: time each labelled value was on top, per thread */
	int64_t *acc;       /* nthreads * nacc */
	size_t nacc;
	struct chan_index cidx; /* chan_views.c */

	/* breakdown views (-b, breakdown.c) */
	size_t nbd;
	struct bd_rt *bd[EMU_MAX_BD];
	struct emu_view views[EMU_MAX_VIEWS];

	/* the channel catalogue (catalogue.c) */
	struct emu_cat_entry *cat;
	size_t ncat;
	size_t cat_builtin[EMU_NBUILTIN_CHANS]; /* emu_builtin_index -> id */
	uint32_t cat_view[EMU_MAX_VIEWS];       /* breakdown view -> its entry's id */
	struct emu_value_label *cat_cpus;        /* the affinity's labels */

	struct window window;  /* window.c */

	int started;
	int64_t first_clock;
	int has_origin;     /* emu_set_origin: first_clock given, not the first event's */
	int64_t origin;
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

/* A built-in channel's catalogue id: what its records carry. */
#define EMU_BT(b) ((uint32_t) e->cat_builtin[(b)])
/* A thread state's name (src/model's one table). */
#define emu_state_name(s) (emu_thread_states[(s)].label)

/* catalogue.c: built at the end of emu_create(); freed by emu_destroy(). */
int emu_cat_build(struct emu *e);
void emu_cat_destroy(struct emu *e);

/* engine.c: messages, buffers */
int emu_fail(struct emu *e, const char *fmt, ...) __attribute__((format(printf, 2, 3), cold));
int emu_vfail(struct emu *e, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
void emu_warn(struct emu *e, size_t thread, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int emu_grow(void **p, size_t *cap, size_t need, size_t elem);
/* dispatch.c: a value of an action */
int emu_get_val(struct emu *e, const struct emu_val *v, int64_t *out, int *isnull);
/* chan_views.c: a raw write on channel ch of thread t (op: EMU_OP_SET, PUSH or POP). */
int emu_raw_write(struct emu *e, size_t t, size_t ch, enum emu_op op, int64_t v, int isnull);
/* n raw SETs of thread t (channels ch[], values v[], all null when isnull),
 * in order: n emu_raw_write calls. */
int emu_raw_set_n(struct emu *e, size_t t, const size_t *ch, const int64_t *v, size_t n,
		int isnull);
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
	if (__builtin_expect(e->prop.qlen == e->prop.qcap, 0) &&
			emu_grow((void **) &e->prop.q, &e->prop.qcap, e->prop.qlen + 1, sizeof *e->prop.q) != 0)
		return emu_fail(e, "out of memory");
	e->prop.q[e->prop.qlen++] = (struct qent) { kind, (uint32_t) a, (uint32_t) b };
	return 0;
}

static inline int emu_irec(struct emu *e, int kind, size_t row, uint32_t chan, int64_t value,
		int isnull)
{
	if (!(e->batch.internal & 1u << kind) || e->muted)
		return 0;
	return emu_irec_add(e, kind, row, chan, value, isnull);
}

/* A record of view `file`: row, channel (catalogue id), value. */
static inline int emu_rec(struct emu *e, int file, size_t row, uint32_t chan, int64_t value)
{
	if (__builtin_expect(e->muted, 0))
		return 0;
	if (__builtin_expect(e->batch.nprv[file] == e->batch.prvcap[file], 0) &&
			emu_prv_grow(e, (size_t) file, 1) != 0)
		return -1;
	struct emu_prv_rec *r = &e->batch.prv[file][e->batch.nprv[file]++];
	r->time = e->dclock - e->rbase;
	r->value = value;
	r->row = (uint32_t) row;
	r->chan = chan;
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
/* The labelled value i of a channel (its values, or a mark type's). */
static inline int64_t emu_chan_value(const struct chan *C, size_t i)
{
	return C->info.values != NULL ? C->info.values[i].value : C->info.mvalues[i].value;
}

static inline const char *emu_chan_vlabel(const struct chan *C, size_t i)
{
	return C->info.values != NULL ? C->info.values[i].label : C->info.mvalues[i].label;
}

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
					if (emu_chan_value(C, i) == v) {
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
/* The summary's lost lines: each thread's figures from thr_of[t] (NULL:
 * e's), the skipped refusals' rules from e (a run made by several engines
 * is kept only when none skipped any: emu_loss_skipped). */
void emu_loss_summary(const struct emu *e, const struct emu *const *thr_of, FILE *out);

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
/* The window's start: a record of every slot written with a value not 0
 * (emu_bd_raw: of each CPU whose value changed, its value). */
int emu_bd_snapshot(struct emu *e);
int emu_bd_finish(struct emu *e, size_t bd);

#endif
