/* SPDX-License-Identifier: MIT */
/*
 * test_engine_parts.c - each part of the engine with a tiny synthetic model
 * ("tiny", byte 'Q', parsed from the YAML below) and no ovni: the thread
 * states and CPUs driven by the model's own events (threads.c), dispatch,
 * guards, flags and raw channels with their views and policies
 * (engine.c), the task machinery (tasks.c), the breakdown view
 * (breakdown.c), the end of a run (finish.c), the summary (summary.c),
 * and the lost intervals as records of their own (loss.c) with the
 * ovni.lost view records out.c derives from them.
 *
 * System: loom "vm" with CPUs 0:0 and 1:1 (then the vCPU), process 7
 * (rank 0) with threads 70 and 71.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "emu.h"
#include "emu_fixture.h"
#include "model.h"
#include "out.h"

static const char tiny_yaml[] =
	"weft-model: 1\n"
	"name: tiny\n"
	"byte: Q\n"
	"version: 1.0.0\n"
	"guard: {unless-flag: off}\n"
	"channels:\n"
	"  - {name: subsystem, kind: stack, view: act, prv: 50, label: Tiny subsystem,\n"
	"     values: [[1, Body], [2, Busy], [3, Wait]], lint-empty: complete}\n"
	"  - {name: type, view: run, prv: 51, policy: skipdupnull, label: Tiny type,\n"
	"     values-from: task-types}\n"
	"  - {name: idle, view: run, prv: 52, duplicates: refuse, initial: 100,\n"
	"     cpu-fallback: 101, label: Tiny idle, values: [[100, On], [101, Rest]]}\n"
	"  - {name: note, view: any, prv: 53, policy: emitdup, label: Tiny note}\n"
	"tasks: {body-id: one, body-channel: [subsystem, 1], view: [[type, type-gid]]}\n"
	"breakdown: {prv: 60, label: Tiny breakdown, kind: task}\n"
	"pairs:\n"
	"  - ['QB[', 'QB]', subsystem, 2]\n"
	"events:\n"
	"  - {mcv: QHx, args: [i32 cpu], size: '>= 4', do: [thread-start: i32@0]}\n"
	"  - {mcv: QHp, do: [thread-state: {to: paused, from: [running]}]}\n"
	"  - {mcv: QHr, do: [thread-state: {to: running, from: [paused]}]}\n"
	"  - {mcv: QHe, do: [thread-state: {to: dead, from: [running]}]}\n"
	"  - {mcv: QIr, do: [set: [idle, 101]]}\n"
	"  - {mcv: QIo, do: [set: [idle, 100]]}\n"
	"  - {mcv: QN=, args: [i64 v], size: '== 8', do: [set: [note, i64@0]]}\n"
	"  - {mcv: QFo, do: [flag: [off, 1]]}\n"
	"  - {mcv: QFi, do: [flag: [off, 0]]}\n"
	"  - {mcv: QYc, jumbo: true, args: [u32 id, str label], do: [type-create: {}]}\n"
	"  - {mcv: QTc, args: [u32 id, u32 type], size: '== 8', do: [task-create: {flags: [pause]}]}\n"
	"  - {mcv: QTx, args: [u32 id], size: '>= 4', do: [task: {op: execute, id: u32@0}]}\n"
	"  - {mcv: QTe, args: [u32 id], size: '>= 4', do: [task: {op: end, id: u32@0}]}\n"
	"  - {mcv: QTp, args: [u32 id], size: '>= 4', do: [task: {op: pause, id: u32@0}]}\n"
	"  - {mcv: QTr, args: [u32 id], size: '>= 4', do: [task: {op: resume, id: u32@0}]}\n";

static struct weft_model_spec *tiny;

struct cap {
	int view;
	uint32_t row;
	int32_t type;
	int64_t value;
};

struct fx {
	struct emu_fx_system w;
	struct emu_sys sys;
	struct emu *e;
	struct cap recs[64];
	size_t nrecs;
	char warn[512];
};

static int capture(void *self, const struct emu_batch *b, char *err, size_t errlen)
{
	struct fx *f = self;
	(void) err;
	(void) errlen;
	for (int v = 0; v < EMU_MAX_VIEWS; v++)
		for (size_t i = 0; i < b->nprv[v] && f->nrecs < 64; i++)
			f->recs[f->nrecs++] = (struct cap) { v, b->prv[v][i].row,
				emu_cat_of_prv(f->e, (size_t) v, &b->prv[v][i])->prv_type,
				b->prv[v][i].value };
	return 0;
}

static void on_warn(void *ctx, const char *msg)
{
	struct fx *f = ctx;
	snprintf(f->warn, sizeof f->warn, "%s", msg);
}

static struct fx *fx_new(int breakdown)
{
	struct fx *f = calloc(1, sizeof *f);
	assert_non_null(f);
	emu_fx_build(&f->w, &f->sys, 2, 1, NULL, 0);
	char err[WEFT_ERR_MAX];
	const struct emu_model_desc *models[1] = { tiny->emu };
	struct emu_opts o;
	memset(&o, 0, sizeof o);
	o.breakdown = breakdown;
	o.warn = on_warn;
	o.warn_ctx = f;
	f->e = emu_create(&f->sys, models, 1, &o, err, sizeof err);
	assert_non_null(f->e);
	struct emu_sink s = { f, capture, 0, 0 };
	assert_int_equal(emu_add_sink(f->e, &s), 0);
	return f;
}

static void fx_free(struct fx *f)
{
	emu_destroy(f->e);
	emu_sys_free(&f->sys);
	free(f);
}

static int ev(struct fx *f, int ti, const char *mcv, int64_t clock, const void *p, uint32_t n,
		int jumbo)
{
	struct weft_event e;
	memset(&e, 0, sizeof e);
	memcpy(e.mcv, mcv, 3);
	e.rclock = e.sclock = clock;
	e.payload = p;
	e.payload_size = n;
	e.jumbo = jumbo;
	if (jumbo) {
		e.jumbo_data = (const uint8_t *) p + 4;
		e.jumbo_size = n - 4;
	}
	e.offset = 8;
	e.stream = &f->w.streams[ti];
	f->nrecs = 0;
	int r = emu_event(f->e, &e);
	emu_flush(f->e);
	return r;
}

static int ev0(struct fx *f, int ti, const char *mcv, int64_t clock)
{
	return ev(f, ti, mcv, clock, NULL, 0, 0);
}

static int ev32(struct fx *f, int ti, const char *mcv, int64_t clock, uint32_t a)
{
	return ev(f, ti, mcv, clock, &a, 4, 0);
}

static int ev2x32(struct fx *f, int ti, const char *mcv, int64_t clock, uint32_t a, uint32_t b)
{
	uint32_t p[2] = { a, b };
	return ev(f, ti, mcv, clock, p, 8, 0);
}

static int type_create(struct fx *f, int ti, int64_t clock, uint32_t id, const char *label)
{
	uint8_t p[64];
	uint32_t size = (uint32_t) (4 + strlen(label) + 1);
	memcpy(p, &size, 4);
	memcpy(p + 4, &id, 4);
	memcpy(p + 8, label, strlen(label) + 1);
	return ev(f, ti, "QYc", clock, p, 4 + size, 1);
}

/* The records of the last event, as "view:row:type:value ..." */
static const char *recs(struct fx *f)
{
	static char buf[1024];
	size_t n = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < f->nrecs; i++)
		n += (size_t) snprintf(buf + n, sizeof buf - n, "%s%d:%u:%d:%lld", i ? " " : "",
				f->recs[i].view, f->recs[i].row, f->recs[i].type,
				(long long) f->recs[i].value);
	return buf;
}

#define T0 "loom.vm/proc.7/thread.70: "

/* ---- threads.c: the model's own events drive the thread and CPU ---- */

static void test_threads(void **state)
{
	(void) state;
	struct fx *f = fx_new(0);
	assert_int_equal(ev32(f, 0, "QHx", 100, 1), 0);
	/* thread: affinity 6, state 4, tid 2, then the views in channel order
	 * (idle shows its initial 100); CPU 1: tid, pid, count, then views (the
	 * idle channel's CPU view). */
	assert_string_equal(recs(f), "0:0:6:2 0:0:4:1 0:0:2:70 0:0:50:0 0:0:51:0 0:0:52:100 "
			"1:1:2:70 1:1:1:7 1:1:3:1 1:1:50:0 1:1:51:0 1:1:52:100 1:1:53:0");
	assert_int_equal(ev0(f, 0, "QHp", 110), 0);
	/* RUN views go null, ACT too (Paused); the CPU falls back to 101; the
	 * emitdup channel writes its CPU view again */
	assert_string_equal(recs(f), "0:0:4:2 0:0:2:0 0:0:52:0 1:1:2:0 1:1:1:0 1:1:3:0 1:1:52:101 "
			"1:1:53:0");
	assert_int_equal(ev0(f, 0, "QHp", 120), -1);
	assert_string_equal(emu_error(f->e), T0 "event QHp at clock 120 (offset 8): thread TH 1.70 "
			"is Paused, but QHp needs it Running");
	fx_free(f);
}

/* ---- engine.c: dispatch, guards, flags, raw writes, policies ---- */

static void test_dispatch_and_guards(void **state)
{
	(void) state;
	struct fx *f = fx_new(0);
	assert_int_equal(ev0(f, 0, "QZz", 90), -1);
	assert_string_equal(emu_error(f->e), T0 "event QZz at clock 90 (offset 8): unknown event "
			"category of the tiny model");
	fx_free(f);
	f = fx_new(0);
	assert_int_equal(ev0(f, 0, "QHz", 90), -1);
	assert_string_equal(emu_error(f->e), T0 "event QHz at clock 90 (offset 8): unknown event "
			"of the tiny model");
	fx_free(f);
	f = fx_new(0);
	assert_int_equal(ev0(f, 0, "QHx", 90), -1);
	assert_string_equal(emu_error(f->e), T0 "event QHx at clock 90 (offset 8): QHx needs at "
			"least 4 payload bytes, it has 0");
	fx_free(f);
	/* A flag set by one event guards the model's events until cleared. */
	f = fx_new(0);
	assert_int_equal(ev32(f, 0, "QHx", 100, 0), 0);
	assert_int_equal(ev0(f, 0, "QFo", 101), 0);
	assert_int_equal(ev0(f, 1, "QFo", 101), 0); /* per thread */
	assert_int_equal(ev0(f, 0, "QB[", 102), -1);
	assert_string_equal(emu_error(f->e), T0 "event QB[ at clock 102 (offset 8): thread TH 1.70 "
			"is flagged (flag off), and events of the tiny model are refused then");
	fx_free(f);
}

static void test_channels(void **state)
{
	(void) state;
	struct fx *f = fx_new(0);
	assert_int_equal(ev32(f, 0, "QHx", 100, 0), 0);
	/* a pair pushes and pops its value; the pop checks the top */
	assert_int_equal(ev0(f, 0, "QB[", 110), 0);
	assert_string_equal(recs(f), "0:0:50:2 1:0:50:2");
	/* duplicates allowed; under skipdup the same value makes no record */
	assert_int_equal(ev0(f, 0, "QB[", 111), 0);
	assert_string_equal(recs(f), "");
	assert_int_equal(ev0(f, 0, "QB]", 112), 0);
	assert_int_equal(ev0(f, 0, "QB]", 113), 0);
	assert_string_equal(recs(f), "0:0:50:0 1:0:50:0");
	assert_int_equal(ev0(f, 0, "QB]", 114), -1);
	assert_string_equal(emu_error(f->e), T0 "event QB] at clock 114 (offset 8): tiny subsystem "
			"of thread TH 1.70: pop of 2 from an empty stack");
	fx_free(f);
	/* refused duplicate; an ANY channel with EMITDUP writes every time */
	f = fx_new(0);
	assert_int_equal(ev32(f, 0, "QHx", 100, 0), 0);
	assert_int_equal(ev0(f, 0, "QIo", 101), -1);
	assert_string_equal(emu_error(f->e), T0 "event QIo at clock 101 (offset 8): tiny idle of "
			"thread TH 1.70 already holds 100");
	fx_free(f);
	f = fx_new(0);
	int64_t v = 5;
	assert_int_equal(ev(f, 1, "QN=", 100, &v, 8, 0), 0); /* before QHx: ANY is shown */
	assert_string_equal(recs(f), "0:1:53:5");
	assert_int_equal(ev(f, 1, "QN=", 101, &v, 8, 0), 0);
	assert_string_equal(recs(f), "0:1:53:5");
	v = 0;
	assert_int_equal(ev(f, 1, "QN=", 102, &v, 8, 0), -1);
	assert_string_equal(emu_error(f->e), "loom.vm/proc.7/thread.71: event QN= at clock 102 "
			"(offset 8): tiny note: value 0 is not allowed");
	fx_free(f);
}

/* ---- tasks.c ---- */

static void test_tasks(void **state)
{
	(void) state;
	struct fx *f = fx_new(0);
	assert_int_equal(ev32(f, 0, "QHx", 100, 0), 0);
	assert_int_equal(type_create(f, 0, 101, 5, "mytype"), 0);
	assert_int_equal(ev2x32(f, 0, "QTc", 102, 1, 5), 0);
	assert_int_equal(ev32(f, 0, "QTx", 103, 1), 0);
	/* body channel push, then the view: the type's gid (mytype) */
	assert_string_equal(recs(f), "0:0:50:1 0:0:51:2004224627 1:0:50:1 1:0:51:2004224627");
	assert_int_equal(ev32(f, 0, "QTp", 104, 1), 0);
	assert_string_equal(recs(f), "0:0:51:0 1:0:51:0");
	assert_int_equal(ev32(f, 0, "QTx", 105, 1), -1);
	assert_string_equal(emu_error(f->e), T0 "event QTx at clock 105 (offset 8): cannot execute "
			"body 1 of task 1: it is Paused");
	fx_free(f);
	f = fx_new(0);
	assert_int_equal(ev32(f, 0, "QHx", 100, 0), 0);
	assert_int_equal(type_create(f, 0, 101, 5, ""), 0);
	assert_int_equal(type_create(f, 0, 102, 5, "again"), -1);
	assert_string_equal(emu_error(f->e), T0 "event QYc at clock 102 (offset 8): task type 5 is "
			"already defined in process 7");
	fx_free(f);
	f = fx_new(0);
	assert_int_equal(ev32(f, 0, "QHx", 100, 0), 0);
	assert_int_equal(ev2x32(f, 0, "QTc", 101, 1, 9), -1);
	assert_string_equal(emu_error(f->e), T0 "event QTc at clock 101 (offset 8): task 1: task "
			"type 9 does not exist in process 7");
	fx_free(f);
	/* the end step lists the types (empty label: "(unlabeled task type N)") */
	f = fx_new(0);
	assert_int_equal(ev32(f, 0, "QHx", 100, 0), 0);
	assert_int_equal(type_create(f, 0, 101, 2, ""), 0);
	assert_int_equal(ev0(f, 0, "QHe", 102), 0);
	assert_int_equal(ev32(f, 1, "QHx", 103, 1), 0);
	assert_int_equal(ev0(f, 1, "QHe", 104), 0);
	assert_int_equal(emu_finish(f->e, 1), 0);
	const struct emu_chan_info *c = emu_chan_at(f->e, 1);
	assert_string_equal(c->name, "type");
	assert_int_equal(c->ndyn, 1);
	assert_int_equal(c->dyn[0].value, 77997064);
	assert_string_equal(c->dyn[0].label, "(unlabeled task type 2)");
	fx_free(f);
}

static void test_type_hash(void **state)
{
	(void) state;
	assert_int_equal(emu_type_gid_of("testtype1"), 1690940984);
	assert_int_equal(emu_type_gid_of("(unlabeled task type 2)"), 77997064);
	assert_int_equal(emu_type_gid_of("alpha"), 660719635);
	assert_int_equal(emu_type_gid_of("mytype"), 2004224627);
	assert_int_equal(emu_type_gid_of("main task.1"), 1541689984);
	/* 12 bytes and more: the block loop */
	assert_true(emu_type_gid_of("a label longer than twelve bytes") >= 1000);
}

/* ---- breakdown.c ---- */

static void test_breakdown(void **state)
{
	(void) state;
	struct fx *f = fx_new(1);
	assert_int_equal(emu_nviews(f->e), 3);
	assert_string_equal(emu_view_at(f->e, 2)->name, "tiny-breakdown");
	assert_int_equal(emu_view_at(f->e, 2)->nrows, 2);
	/* first OHx: the CPU's value becomes 2 (empty subsystem): all slots */
	assert_int_equal(ev32(f, 0, "QHx", 100, 1), 0);
	size_t n = 0;
	for (size_t i = 0; i < f->nrecs; i++)
		if (f->recs[i].view == 2)
			n++;
	assert_int_equal(n, 2);
	assert_int_equal(ev0(f, 0, "QB[", 110), 0);
	assert_string_equal(recs(f), "0:0:50:2 1:1:50:2");       /* 2 -> 2: no slot change */
	assert_int_equal(ev0(f, 0, "QIr", 111), 0);                /* idle: 101 replaces it */
	assert_string_equal(recs(f), "0:0:52:101 1:1:52:101 2:1:60:101");
	char label[32];
	emu_view_row_label(f->e, 2, 0, label, sizeof label);
	assert_string_equal(label, "~CPU    2");
	fx_free(f);
}

/* ---- finish.c ---- */

static void test_finish(void **state)
{
	(void) state;
	struct fx *f = fx_new(0);
	assert_int_equal(ev32(f, 0, "QHx", 100, 0), 0);
	assert_int_equal(ev0(f, 0, "QB[", 101), 0);
	assert_int_equal(ev0(f, 0, "QHe", 102), 0);
	assert_int_equal(emu_finish(f->e, 1), -1);
	assert_string_equal(emu_error(f->e), "loom.vm/proc.7/thread.70: thread TH 1.70 ends with 1 "
			"value left on the tiny subsystem stack (top 2); it must be empty at the end");
	fx_free(f);
	/* after an error, a "complete" check is not made */
	f = fx_new(0);
	assert_int_equal(ev32(f, 0, "QHx", 100, 0), 0);
	assert_int_equal(ev0(f, 0, "QB[", 101), 0);
	assert_int_equal(ev0(f, 0, "QB]", 102), 0);
	assert_int_equal(ev0(f, 0, "QB]", 103), -1);
	assert_int_equal(emu_finish(f->e, 0), -1);
	assert_string_equal(emu_error(f->e), T0 "event QB] at clock 103 (offset 8): tiny subsystem "
			"of thread TH 1.70: pop of 2 from an empty stack");
	fx_free(f);
}

/* ---- summary.c ---- */

static void test_summary(void **state)
{
	(void) state;
	struct fx *f = fx_new(0);
	assert_int_equal(ev32(f, 0, "QHx", 100, 0), 0);
	assert_int_equal(ev0(f, 0, "QB[", 100), 0);
	assert_int_equal(ev0(f, 0, "QB]", 175), 0);
	assert_int_equal(ev0(f, 0, "QHe", 200), 0);
	assert_int_equal(emu_finish(f->e, 1), 0);
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	emu_summary(f->e, m);
	fclose(m);
	assert_non_null(strstr(buf, "tiny.subsystem: share of the run per thread (raw: the "
				"value the model wrote, whether or not the thread ran)\n"
				"  TH 1.70                 Busy 75.0% (75 ns)\n"));
	assert_non_null(strstr(buf, "tiny.idle: share of the run per thread (raw: the value "
				"the model wrote, whether or not the thread ran)\n"
				"  TH 1.70                 On 100.0% (100 ns)\n"
				"  TH 1.71                 On 100.0% (100 ns)\n"));
	free(buf);
	fx_free(f);
}


/* ---- loss.c: lost intervals, a record kind of their own ---- */

struct lostcap {
	struct emu_lost_rec recs[8];
	size_t n;
	int ovni_lost_in_views; /* view records of ovni.lost (there must be none) */
	const struct emu *e;
};

static int lost_capture(void *self, const struct emu_batch *b, char *err, size_t errlen)
{
	struct lostcap *c = self;
	(void) err;
	(void) errlen;
	for (size_t i = 0; i < b->nlost && c->n < 8; i++)
		c->recs[c->n++] = b->lost[i];
	uint32_t lost = (uint32_t) emu_cat_builtin(c->e, EMU_BI_LOST)->id;
	for (int v = 0; v < 2; v++)
		for (size_t i = 0; i < b->nprv[v]; i++)
			c->ovni_lost_in_views += b->prv[v][i].chan == lost;
	return 0;
}

/* An output that takes no lost records: out.c derives its ovni.lost ones. */
struct derived {
	struct out base;
	const struct emu *e;
	char text[512]; /* "view:row:time:value" of its ovni.lost records */
	size_t len;
};

static int derived_records(void *self, const struct emu_batch *b, char *err, size_t errlen)
{
	struct derived *d = self;
	(void) err;
	(void) errlen;
	assert_null(b->lost);
	for (int v = 0; v < 2; v++)
		for (size_t i = 0; i < b->nprv[v]; i++) {
			const struct emu_prv_rec *r = &b->prv[v][i];
			if (emu_cat_of_prv(d->e, (size_t) v, r)->builtin != EMU_BI_LOST)
				continue;
			d->len += (size_t) snprintf(d->text + d->len, sizeof d->text - d->len,
					"%s%d:%u:%lld:%lld", d->len ? " " : "", v, r->row,
					(long long) r->time, (long long) r->value);
		}
	return 0;
}

static const struct out_ops derived_ops = { .name = "derived", .records = derived_records };

static void test_lost_records(void **state)
{
	(void) state;
	struct fx *f = fx_new(0);
	struct lostcap c = { .e = f->e };
	struct emu_sink s = { &c, lost_capture, 0, 1 };
	assert_int_equal(emu_add_sink(f->e, &s), 0);
	struct derived d = { .base = { &derived_ops, NULL }, .e = f->e };
	struct emu_sink ds = out_sink(&d.base);
	assert_int_equal(ds.lost, 1);
	assert_int_equal(emu_add_sink(f->e, &ds), 0);
	/* thread 70 lost 3 events (48 bytes) at clocks 104..106 and then 2
	 * (40 bytes) at 107..108, with no event between: one interval */
	const struct emu_lost_run runs[2] = {
		{ .first_sclock = 104, .last_sclock = 106, .events = 3, .bytes = 48 },
		{ .first_sclock = 107, .last_sclock = 108, .events = 2, .bytes = 40 },
	};
	assert_int_equal(emu_thread_lost(f->e, 0, runs, 2, 0), 0);
	assert_true(emu_has_lost(f->e));
	assert_int_equal(ev32(f, 0, "QHx", 100, 1), 0);
	/* thread 71 runs on CPU 0 meanwhile: the interval begins at its
	 * event at 105 (the first after clock 104) */
	assert_int_equal(ev32(f, 1, "QHx", 105, 0), 0);
	assert_int_equal(c.n, 1);
	/* thread 70's next event (after both runs) ends it */
	assert_int_equal(ev0(f, 0, "QIr", 110), 0);
	assert_int_equal(emu_finish(f->e, 0), 0);
	assert_int_equal(c.n, 2);
	uint32_t lost = (uint32_t) emu_cat_builtin(f->e, EMU_BI_LOST)->id;
	const struct emu_lost_rec *b = &c.recs[0], *e = &c.recs[1];
	/* BEGIN: at 4 ns (clock 104), on CPU 1, the first run's loss known */
	assert_int_equal(b->phase, EMU_LOST_BEGIN);
	assert_int_equal(b->thread, 0);
	assert_int_equal(b->cpu, 1);
	assert_int_equal(b->begin, 4);
	assert_int_equal(b->end, -1);
	assert_int_equal(b->events, 3);
	assert_int_equal(b->bytes, 48);
	assert_int_equal(b->chan, lost);
	assert_int_equal(b->snapshot, 0);
	/* END: the whole interval, 4 to 10 ns, both runs */
	assert_int_equal(e->phase, EMU_LOST_END);
	assert_int_equal(e->thread, 0);
	assert_int_equal(e->cpu, 1);
	assert_int_equal(e->begin, 4);
	assert_int_equal(e->end, 10);
	assert_int_equal(e->events, 5);
	assert_int_equal(e->bytes, 88);
	/* the engine's views hold no ovni.lost record ... */
	assert_int_equal(c.ovni_lost_in_views, 0);
	/* ... an output without .lost gets them derived: the thread's row and
	 * its CPU's (row 1), 1 at 4 ns, 0 at 10 ns */
	assert_string_equal(d.text, "0:0:4:1 1:1:4:1 0:0:10:0 1:1:10:0");
	out_discard(&d.base); /* frees what out.c made for it */
	fx_free(f);
}

static int group_setup(void **state)
{
	(void) state;
	char err[512];
	tiny = weft_model_parse(tiny_yaml, sizeof tiny_yaml - 1, "tiny.yaml", err, sizeof err);
	if (tiny == NULL)
		fprintf(stderr, "%s\n", err);
	return tiny == NULL ? -1 : 0;
}

static int group_teardown(void **state)
{
	(void) state;
	weft_model_free(tiny);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_dispatch_and_guards),
		cmocka_unit_test(test_channels),
		cmocka_unit_test(test_tasks),
		cmocka_unit_test(test_type_hash),
		cmocka_unit_test(test_breakdown),
		cmocka_unit_test(test_finish),
		cmocka_unit_test(test_summary),
		cmocka_unit_test(test_lost_records),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
