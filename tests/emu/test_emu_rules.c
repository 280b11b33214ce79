/* SPDX-License-Identifier: MIT */
/*
 * test_emu_rules.c - the emulator core fed with synthetic events (no files):
 * every illegal sequence of the ovni model is refused with its exact
 * message, legal ones are accepted, and the records come in the reference's
 * order.
 *
 * System: loom "vm" (CPUs index:phyid 0:0 1:1, then vCPU), processes 100
 * (threads 100, 101) and 200 (thread 200); loom "other" (CPU 0:0) with
 * process 300 (thread 300). Marks: type 1 single "Single", type 2 stack
 * "Stack" (label 5 "Five").
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
#include "model.h"

static const struct emu_model_desc *ovni_model(void)
{
	return weft_model_by_name(NULL, "ovni")->emu;
}

static const char *model_name(void *ctx, unsigned char byte)
{
	const struct weft_model_spec *m = weft_model_by_code(ctx, (char) byte);
	return m ? m->name : NULL;
}

static struct weft_stream S[4];
static struct weft_thread T[4];
static struct weft_proc P[3];
static struct weft_loom L[2];
static const struct weft_thread *p0t[2], *p1t[1], *p2t[1];
static const struct weft_proc *l0p[2], *l1p[1];
static const struct weft_cpu l0c[2] = { { 0, 0 }, { 1, 1 } };
static const struct weft_cpu l1c[1] = { { 0, 0 } };
static const struct weft_mark_label m2labels[] = { { 5, "Five" } };
static const struct weft_mark_type marks[2] = {
	{ 1, "Single", 0, 0, NULL },
	{ 2, "Stack", 1, 1, m2labels },
};
static const char *const relpaths[4] = {
	"loom.vm/proc.100/thread.100", "loom.vm/proc.100/thread.101",
	"loom.vm/proc.200/thread.200", "loom.other/proc.300/thread.300",
};
static const int tids[4] = { 100, 101, 200, 300 };

struct fx {
	struct emu_sys sys;
	struct emu *e;
	int lint;
	/* captured Paraver records of the last accepted event: thread.prv
	 * ones, then cpu.prv ones */
	struct cap {
		int file;
		uint32_t row;
		int32_t type;
		int64_t value;
	} recs[64];
	size_t nrecs;
};

static void build_system(void)
{
	memset(S, 0, sizeof S);
	for (int i = 0; i < 4; i++) {
		S[i].relpath = relpaths[i];
		S[i].meta_version = 3;
		S[i].thread = &T[i];
		S[i].finished = 1;
		T[i].tid = tids[i];
		T[i].stream = &S[i];
	}
	T[0].proc = T[1].proc = &P[0];
	T[2].proc = &P[1];
	T[3].proc = &P[2];
	p0t[0] = &T[0];
	p0t[1] = &T[1];
	p1t[0] = &T[2];
	p2t[0] = &T[3];
	P[0] = (struct weft_proc) { 100, 1, -1, 0, &L[0], 2, p0t };
	P[1] = (struct weft_proc) { 200, 2, -1, 0, &L[0], 1, p1t };
	P[2] = (struct weft_proc) { 300, 3, -1, 0, &L[1], 1, p2t };
	l0p[0] = &P[0];
	l0p[1] = &P[1];
	l1p[0] = &P[2];
	L[0] = (struct weft_loom) { "vm", "vm", 0, 0, 0, 2, l0c, 2, l0p };
	L[1] = (struct weft_loom) { "other", "other", 0, 0, 0, 1, l1c, 1, l1p };
}

static int capture(void *self, const struct emu_batch *b, char *err, size_t errlen)
{
	struct fx *f = self;
	(void) err;
	(void) errlen;
	f->nrecs = 0;
	for (int file = 0; file < 2; file++) {
		for (size_t i = 0; i < b->nprv[file] && f->nrecs < 64; i++) {
			const struct emu_prv_rec *r = &b->prv[file][i];
			/* the Paraver type of the record's channel */
			int type = emu_cat_of_prv(f->e, (size_t) file, r)->prv_type;
			f->recs[f->nrecs++] = (struct cap) { file, r->row, type, r->value };
		}
	}
	return 0;
}

static struct fx *fx_new(int lint)
{
	build_system();
	struct fx *f = calloc(1, sizeof *f);
	assert_non_null(f);
	/* Loom order: by name ("other" < "vm"), so rows: thread 300 first. */
	const struct weft_loom *looms[2] = { &L[1], &L[0] };
	char err[WEFT_ERR_MAX];
	assert_int_equal(emu_sys_build(&f->sys, looms, 2, marks, 2, err, sizeof err), 0);
	const struct emu_model_desc *models[] = { ovni_model() };
	struct emu_opts o;
	memset(&o, 0, sizeof o);
	o.lint = lint;
	o.model_name = model_name;
	f->e = emu_create(&f->sys, models, 1, &o, err, sizeof err);
	assert_non_null(f->e);
	struct emu_sink s = { f, capture, 1, 0 };
	assert_int_equal(emu_add_sink(f->e, &s), 0);
	return f;
}

static int setup(void **state)
{
	*state = fx_new(0);
	return 0;
}

static int setup_lint(void **state)
{
	*state = fx_new(1);
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	emu_destroy(f->e);
	emu_sys_free(&f->sys);
	free(f);
	return 0;
}

/* Feeds one event of thread index ti (0: 100, 1: 101, 2: 200, 3: 300). */
static int ev(struct fx *f, int ti, const char *mcv, int64_t clock, const void *payload,
		uint32_t size)
{
	struct weft_event e;
	memset(&e, 0, sizeof e);
	memcpy(e.mcv, mcv, 3);
	e.rclock = e.sclock = clock;
	e.payload = payload;
	e.payload_size = size;
	e.offset = 8;
	e.stream = &S[ti];
	f->nrecs = 0;
	int r = emu_event(f->e, &e);
	emu_flush(f->e);
	return r;
}

static int ev0(struct fx *f, int ti, const char *mcv, int64_t clock)
{
	return ev(f, ti, mcv, clock, NULL, 0);
}

static int ohx(struct fx *f, int ti, int32_t cpu, int64_t clock)
{
	uint8_t p[16] = { 0 };
	memcpy(p, &cpu, 4);
	return ev(f, ti, "OHx", clock, p, 16);
}

static int oas(struct fx *f, int ti, int32_t cpu, int64_t clock)
{
	return ev(f, ti, "OAs", clock, &cpu, 4);
}

static int oar(struct fx *f, int ti, int32_t cpu, int32_t tid, int64_t clock)
{
	int32_t p[2] = { cpu, tid };
	return ev(f, ti, "OAr", clock, p, 8);
}

static int mark(struct fx *f, int ti, const char *mcv, int64_t value, int32_t type,
		int64_t clock)
{
	uint8_t p[12];
	memcpy(p, &value, 8);
	memcpy(p + 8, &type, 4);
	return ev(f, ti, mcv, clock, p, 12);
}

#define REFUSED(f, call, msg) \
	do { \
		assert_int_equal((call), -1); \
		assert_string_equal(emu_error((f)->e), (msg)); \
	} while (0)

#define T100 "loom.vm/proc.100/thread.100: "

/* ---- the state machine: all 36 cells of the transition table ---- */

/* Drives thread 100 into state s (on CPU 0). */
static void goto_state(struct fx *f, enum emu_state s, int64_t *clk)
{
	switch (s) {
	case EMU_ST_UNKNOWN:
		return;
	case EMU_ST_RUNNING:
		assert_int_equal(ohx(f, 0, 0, (*clk)++), 0);
		return;
	case EMU_ST_PAUSED:
		goto_state(f, EMU_ST_RUNNING, clk);
		assert_int_equal(ev0(f, 0, "OHp", (*clk)++), 0);
		return;
	case EMU_ST_COOLING:
		goto_state(f, EMU_ST_RUNNING, clk);
		assert_int_equal(ev0(f, 0, "OHc", (*clk)++), 0);
		return;
	case EMU_ST_WARMING:
		goto_state(f, EMU_ST_PAUSED, clk);
		assert_int_equal(ev0(f, 0, "OHw", (*clk)++), 0);
		return;
	case EMU_ST_DEAD:
		goto_state(f, EMU_ST_RUNNING, clk);
		assert_int_equal(ev0(f, 0, "OHe", (*clk)++), 0);
		return;
	default:
		fail();
	}
}

static void test_transition_table(void **state)
{
	(void) state;
	static const char *const evs[6] = { "OHx", "OHp", "OHr", "OHc", "OHw", "OHe" };
	/* 1 = accepted, per the reference (facts note §6.1). */
	static const int ok[6][6] = {
		/* Unknown */ { 1, 0, 0, 0, 0, 0 },
		/* Running */ { 0, 1, 0, 1, 0, 1 },
		/* Paused  */ { 0, 0, 1, 0, 1, 0 },
		/* Dead    */ { 1, 0, 0, 0, 0, 0 },
		/* Cooling */ { 0, 1, 0, 0, 0, 1 },
		/* Warming */ { 0, 0, 1, 0, 0, 0 },
	};
	for (int s = 0; s < 6; s++) {
		for (int k = 0; k < 6; k++) {
			struct fx *f = fx_new(0);
			int64_t clk = 10;
			goto_state(f, (enum emu_state) s, &clk);
			int r = k == 0 ? ohx(f, 0, 0, clk) : ev0(f, 0, evs[k], clk);
			if ((r == 0) != ok[s][k])
				fail_msg("state %d, event %s: got %d (%s)", s, evs[k], r, emu_error(f->e));
			struct fx *tmp = f;
			teardown((void **) &tmp);
		}
	}
}

static void test_state_before_ohx(void **state)
{
	struct fx *f = *state;
	REFUSED(f, ev0(f, 0, "OHp", 10), T100 "event OHp at clock 10 (offset 8): thread TH 1.100 "
		"is Unknown, but OHp (pause) needs it Running or Cooling");
}

static void test_pause_not_running(void **state)
{
	struct fx *f = *state;
	int64_t clk = 10;
	goto_state(f, EMU_ST_PAUSED, &clk);
	REFUSED(f, ev0(f, 0, "OHp", 20), T100 "event OHp at clock 20 (offset 8): thread TH 1.100 "
		"is Paused, but OHp (pause) needs it Running or Cooling");
}

static void test_second_ohe(void **state)
{
	struct fx *f = *state;
	int64_t clk = 10;
	goto_state(f, EMU_ST_DEAD, &clk);
	REFUSED(f, ev0(f, 0, "OHe", 20), T100 "event OHe at clock 20 (offset 8): thread TH 1.100 "
		"is Dead, but OHe (thread ends) needs it Running or Cooling");
}

static void test_resume_warming_only(void **state)
{
	struct fx *f = *state;
	int64_t clk = 10;
	goto_state(f, EMU_ST_RUNNING, &clk);
	REFUSED(f, ev0(f, 0, "OHw", 20), T100 "event OHw at clock 20 (offset 8): thread TH 1.100 "
		"is Running, but OHw (warming) needs it Paused");
}

static void test_ohx_running(void **state)
{
	struct fx *f = *state;
	assert_int_equal(ohx(f, 0, 0, 10), 0);
	REFUSED(f, ohx(f, 0, 1, 20), T100 "event OHx at clock 20 (offset 8): thread TH 1.100 is "
		"already Running");
}

static void test_ohx_has_cpu(void **state)
{
	struct fx *f = *state;
	int64_t clk = 10;
	goto_state(f, EMU_ST_PAUSED, &clk);
	REFUSED(f, ohx(f, 0, 1, 20), T100 "event OHx at clock 20 (offset 8): thread TH 1.100 is "
		"Paused and already has CPU 1.0");
}

static void test_ohx_payload(void **state)
{
	struct fx *f = *state;
	int16_t p = 0;
	REFUSED(f, ev(f, 0, "OHx", 10, &p, 2), T100 "event OHx at clock 10 (offset 8): OHx "
		"(thread starts running) needs at least 4 payload bytes, it has 2");
}

static void test_ohx_bad_cpu(void **state)
{
	struct fx *f = *state;
	REFUSED(f, ohx(f, 0, 2, 10), T100 "event OHx at clock 10 (offset 8): CPU index 2 does "
		"not exist in loom vm (indices 0..1, -1 for the virtual CPU)");
	struct fx *g = fx_new(0);
	REFUSED(g, ohx(g, 0, -2, 10), T100 "event OHx at clock 10 (offset 8): CPU index -2 does "
		"not exist in loom vm (indices 0..1, -1 for the virtual CPU)");
	teardown((void **) &g);
}

static void test_physical_cpu_conflict(void **state)
{
	struct fx *f = *state;
	assert_int_equal(ohx(f, 0, 1, 10), 0);
	REFUSED(f, ohx(f, 1, 1, 20), "loom.vm/proc.100/thread.101: event OHx at clock 20 "
		"(offset 8): two Running threads on physical CPU 1.1 (TH 1.100 and TH 1.101)");
}

static void test_cooling_shares_cpu(void **state)
{
	struct fx *f = *state;
	assert_int_equal(ohx(f, 0, 0, 10), 0);
	assert_int_equal(ev0(f, 0, "OHc", 11), 0);
	assert_int_equal(ohx(f, 1, 0, 12), 0); /* Running + Cooling is fine */
	REFUSED(f, ev0(f, 0, "OHp", 13) == 0 ? ev0(f, 0, "OHw", 14) == 0 ?
		ev0(f, 0, "OHr", 15) : 0 : 0, T100 "event OHr at clock 15 (offset 8): two "
		"Running threads on physical CPU 1.0 (TH 1.101 and TH 1.100)");
}

static void test_vcpu_many_running(void **state)
{
	struct fx *f = *state;
	assert_int_equal(ohx(f, 0, -1, 10), 0);
	assert_int_equal(ohx(f, 1, -1, 11), 0);
	/* cpu.prv of the vCPU (row 4 of loom vm, gindex 4): tid/pid null, nrun 2 */
	int found = 0;
	for (size_t i = 0; i < f->nrecs; i++)
		if (f->recs[i].file == EMU_FILE_CPU && f->recs[i].type == 3 &&
				f->recs[i].value == 2)
			found = 1;
	assert_true(found);
	assert_int_equal(ohx(f, 2, -1, 12), 0);
}

static void test_thread_never_ends(void **state)
{
	struct fx *f = *state;
	assert_int_equal(ohx(f, 0, 0, 10), 0);
	assert_int_equal(ev0(f, 0, "OHe", 20), 0);
	REFUSED(f, emu_finish(f->e, 1), "loom.other/proc.300/thread.300: thread 300 is Unknown at "
		"the end of the trace; every thread must end with OHe (Dead)");
}

static void test_all_dead_ok(void **state)
{
	struct fx *f = *state;
	for (int t = 0; t < 4; t++) {
		assert_int_equal(ohx(f, t, t == 3 ? 0 : -1, 10 + t), 0);
		assert_int_equal(ev0(f, t, "OHe", 20 + t), 0);
	}
	assert_int_equal(emu_finish(f->e, 1), 0);
	assert_int_equal(emu_duration(f->e), 13);
}

/* ---- affinity ---- */

static void test_oas_paused(void **state)
{
	struct fx *f = *state;
	int64_t clk = 10;
	goto_state(f, EMU_ST_PAUSED, &clk);
	REFUSED(f, oas(f, 0, 1, 20), T100 "event OAs at clock 20 (offset 8): thread TH 1.100 is "
		"Paused, but an affinity change needs it Running, Cooling or Warming");
}

static void test_oas_before_ohx(void **state)
{
	struct fx *f = *state;
	REFUSED(f, oas(f, 0, 1, 10), T100 "event OAs at clock 10 (offset 8): thread TH 1.100 has "
		"no CPU (it is Unknown)");
}

static void test_oas_size(void **state)
{
	struct fx *f = *state;
	assert_int_equal(ohx(f, 0, 0, 10), 0);
	int64_t p = 1;
	REFUSED(f, ev(f, 0, "OAs", 20, &p, 8), T100 "event OAs at clock 20 (offset 8): OAs (own "
		"affinity) needs exactly 4 payload bytes, it has 8");
}

static void test_oas_bad_cpu(void **state)
{
	struct fx *f = *state;
	assert_int_equal(ohx(f, 0, 0, 10), 0);
	REFUSED(f, oas(f, 0, 7, 20), T100 "event OAs at clock 20 (offset 8): CPU index 7 does not "
		"exist in loom vm (indices 0..1, -1 for the virtual CPU)");
}

static void test_oas_same_cpu_noop(void **state)
{
	struct fx *f = *state;
	assert_int_equal(ohx(f, 0, 0, 10), 0);
	assert_int_equal(oas(f, 0, 0, 20), 0);
	assert_int_equal(f->nrecs, 0);
}

static void test_oar_unknown_tid(void **state)
{
	struct fx *f = *state;
	assert_int_equal(ohx(f, 0, 0, 10), 0);
	/* 300 exists, but in another loom */
	REFUSED(f, oar(f, 0, 1, 300, 20), T100 "event OAr at clock 20 (offset 8): no thread with "
		"tid 300 in loom vm");
}

static void test_oar_dead_target(void **state)
{
	struct fx *f = *state;
	assert_int_equal(ohx(f, 0, 0, 10), 0);
	REFUSED(f, oar(f, 0, 1, 200, 20), T100 "event OAr at clock 20 (offset 8): target thread "
		"TH 2.200 is Unknown");
}

static void test_oar_same_cpu_paused(void **state)
{
	struct fx *f = *state;
	assert_int_equal(ohx(f, 0, 0, 10), 0);
	assert_int_equal(ohx(f, 1, 1, 11), 0);
	assert_int_equal(ev0(f, 1, "OHp", 12), 0);
	REFUSED(f, oar(f, 0, 1, 101, 20), T100 "event OAr at clock 20 (offset 8): CPU affinity of "
		"thread TH 1.101 set again to the value it has (4)");
}

static void test_oar_same_cpu_running(void **state)
{
	struct fx *f = *state;
	assert_int_equal(ohx(f, 0, 0, 10), 0);
	assert_int_equal(ohx(f, 1, 1, 11), 0);
	REFUSED(f, oar(f, 0, 1, 101, 20), T100 "event OAr at clock 20 (offset 8): running tid of "
		"CPU 1.1 written twice in one event");
}

static void test_oar_other_process(void **state)
{
	struct fx *f = *state;
	assert_int_equal(ohx(f, 0, 0, 10), 0);
	assert_int_equal(ohx(f, 2, 1, 11), 0);
	assert_int_equal(oar(f, 0, -1, 200, 20), 0);
	/* thread 200 is row 3 (loom other: 300; loom vm: 100, 101, 200) */
	int found = 0;
	for (size_t i = 0; i < f->nrecs; i++) {
		const struct cap *r = &f->recs[i];
		if (r->file == EMU_FILE_THREAD) {
			assert_int_equal(r->row, 3);
			assert_int_equal(r->type, 6);
			assert_int_equal(r->value, 5); /* vCPU of loom vm: gindex 4 */
			found++;
		}
	}
	assert_int_equal(found, 1);
}

/* ---- flushes ---- */

static void test_flush_end_first(void **state)
{
	struct fx *f = *state;
	REFUSED(f, ev0(f, 0, "OF]", 10), T100 "event OF] at clock 10 (offset 8): ovni flush of "
		"thread TH 1.100 is already null");
}

static void test_flush_twice(void **state)
{
	struct fx *f = *state;
	assert_int_equal(ev0(f, 0, "OF[", 10), 0); /* before OHx: accepted */
	REFUSED(f, ev0(f, 0, "OF[", 20), T100 "event OF[ at clock 20 (offset 8): ovni flush of "
		"thread TH 1.100 already holds 1");
}

/* ---- marks ---- */

static void test_mark_size(void **state)
{
	struct fx *f = *state;
	int64_t v = 1;
	REFUSED(f, ev(f, 0, "OM[", 10, &v, 8), T100 "event OM[ at clock 10 (offset 8): OM[ (mark "
		"push) needs exactly 12 payload bytes, it has 8");
}

static void test_mark_undeclared(void **state)
{
	struct fx *f = *state;
	REFUSED(f, mark(f, 0, "OM=", 1, 3, 10), T100 "event OM= at clock 10 (offset 8): mark type "
		"3 is not declared in the metadata");
}

static void test_mark_zero(void **state)
{
	struct fx *f = *state;
	REFUSED(f, mark(f, 0, "OM=", 0, 1, 10), T100 "event OM= at clock 10 (offset 8): mark type "
		"1: value 0 is not allowed");
}

static void test_mark_kind(void **state)
{
	struct fx *f = *state;
	REFUSED(f, mark(f, 0, "OM=", 5, 2, 10), T100 "event OM= at clock 10 (offset 8): mark type "
		"2 is a stack: set it with push and pop");
	struct fx *g = fx_new(0);
	REFUSED(g, mark(g, 0, "OM[", 5, 1, 10), T100 "event OM[ at clock 10 (offset 8): mark type "
		"1 is single: a push needs a stack");
	teardown((void **) &g);
}

static void test_mark_pop_empty(void **state)
{
	struct fx *f = *state;
	REFUSED(f, mark(f, 0, "OM]", 5, 2, 10), T100 "event OM] at clock 10 (offset 8): mark type "
		"2 of thread TH 1.100: pop of 5 from an empty stack");
}

static void test_mark_pop_not_top(void **state)
{
	struct fx *f = *state;
	assert_int_equal(mark(f, 0, "OM[", 5, 2, 10), 0);
	assert_int_equal(mark(f, 0, "OM[", 6, 2, 11), 0);
	REFUSED(f, mark(f, 0, "OM]", 5, 2, 12), T100 "event OM] at clock 12 (offset 8): mark type "
		"2 of thread TH 1.100: pop of 5 but the top is 6");
}

static void test_mark_stack_full(void **state)
{
	struct fx *f = *state;
	for (int i = 0; i < 512; i++)
		assert_int_equal(mark(f, 0, "OM[", i + 1, 2, 10 + i), 0);
	REFUSED(f, mark(f, 0, "OM[", 9, 2, 600), T100 "event OM[ at clock 600 (offset 8): mark "
		"type 2 of thread TH 1.100: stack full (512 values)");
}

static void test_mark_records(void **state)
{
	struct fx *f = *state;
	assert_int_equal(mark(f, 0, "OM[", 5, 2, 10), 0); /* before OHx: no record */
	assert_int_equal(f->nrecs, 0);
	assert_int_equal(ohx(f, 0, 0, 11), 0);
	/* thread.prv: 6 4 2 101 102; cpu.prv: 2 1 3 7 101 102 (facts note §7.6) */
	static const int want[][3] = {
		{ EMU_FILE_THREAD, 6, 3 }, { EMU_FILE_THREAD, 4, 1 }, { EMU_FILE_THREAD, 2, 100 },
		{ EMU_FILE_THREAD, 101, 0 }, { EMU_FILE_THREAD, 102, 5 },
		{ EMU_FILE_CPU, 2, 100 }, { EMU_FILE_CPU, 1, 100 }, { EMU_FILE_CPU, 3, 1 },
		{ EMU_FILE_CPU, 7, 0 }, { EMU_FILE_CPU, 101, 0 }, { EMU_FILE_CPU, 102, 5 },
	};
	assert_int_equal(f->nrecs, sizeof want / sizeof want[0]);
	for (size_t i = 0; i < f->nrecs; i++) {
		assert_int_equal(f->recs[i].file, want[i][0]);
		assert_int_equal(f->recs[i].type, want[i][1]);
		assert_int_equal(f->recs[i].value, want[i][2]);
	}
	/* a re-push of the same value is written again */
	assert_int_equal(mark(f, 0, "OM[", 5, 2, 12), 0);
	assert_int_equal(f->nrecs, 2);
}

/* Asserts the captured records: {file, row, type, value} each. */
static void want_recs(const struct fx *f, const int64_t (*want)[4], size_t n)
{
	if (f->nrecs != n) {
		for (size_t i = 0; i < f->nrecs; i++)
			fprintf(stderr, "got %d %u %d %lld\n", f->recs[i].file, f->recs[i].row,
					f->recs[i].type, (long long) f->recs[i].value);
	}
	assert_int_equal(f->nrecs, n);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(f->recs[i].file, want[i][0]);
		assert_int_equal(f->recs[i].row, want[i][1]);
		assert_int_equal(f->recs[i].type, want[i][2]);
		assert_int_equal(f->recs[i].value, want[i][3]);
	}
}

#define TH EMU_FILE_THREAD
#define CP EMU_FILE_CPU

/* OAs of a Cooling thread to a CPU never used: the new CPU only gets 3:0
 * (its count starts unset), the thread its new affinity. */
static void test_oas_cooling_fresh_cpu(void **state)
{
	struct fx *f = *state;
	assert_int_equal(ohx(f, 0, 0, 10), 0);
	assert_int_equal(ev0(f, 0, "OHc", 11), 0);
	assert_int_equal(oas(f, 0, 1, 12), 0);
	static const int64_t want[][4] = { { TH, 1, 6, 4 }, { CP, 3, 3, 0 } };
	want_recs(f, want, 2);
}

/* Running -> Cooling writes the mark value again on the thread row and
 * clears it on the CPU row. */
static void test_mark_cooling(void **state)
{
	struct fx *f = *state;
	assert_int_equal(ohx(f, 0, 0, 10), 0);
	assert_int_equal(mark(f, 0, "OM=", 7, 1, 11), 0);
	static const int64_t w1[][4] = { { TH, 1, 101, 7 }, { CP, 2, 101, 7 } };
	want_recs(f, w1, 2);
	assert_int_equal(ev0(f, 0, "OHc", 12), 0);
	static const int64_t w2[][4] = {
		{ TH, 1, 4, 4 }, { TH, 1, 101, 7 },
		{ CP, 2, 2, 0 }, { CP, 2, 1, 0 }, { CP, 2, 3, 0 }, { CP, 2, 101, 0 },
	};
	want_recs(f, w2, 6);
}

/* A mark set while Paused shows when the thread is active again. */
static void test_mark_while_paused(void **state)
{
	struct fx *f = *state;
	assert_int_equal(ohx(f, 0, 0, 10), 0);
	assert_int_equal(ev0(f, 0, "OHp", 11), 0);
	assert_int_equal(mark(f, 0, "OM=", 9, 1, 12), 0);
	assert_int_equal(f->nrecs, 0);
	assert_int_equal(ev0(f, 0, "OHw", 13), 0);
	static const int64_t w1[][4] = { { TH, 1, 4, 5 }, { TH, 1, 2, 100 }, { TH, 1, 101, 9 } };
	want_recs(f, w1, 3);
	assert_int_equal(ev0(f, 0, "OHr", 14), 0);
	static const int64_t w2[][4] = {
		{ TH, 1, 4, 1 }, { TH, 1, 101, 9 },
		{ CP, 2, 2, 100 }, { CP, 2, 1, 100 }, { CP, 2, 3, 1 }, { CP, 2, 101, 9 },
	};
	want_recs(f, w2, 6);
}

/* ---- unknown events ---- */

static void test_unknown_events(void **state)
{
	struct fx *f = *state;
	REFUSED(f, ev0(f, 0, "ZZZ", 10), T100 "event ZZZ at clock 10 (offset 8): no model is "
		"registered for the model byte of this event");
	struct fx *g = fx_new(0);
	REFUSED(g, ev0(g, 0, "VTx", 10), T100 "event VTx at clock 10 (offset 8): the nosv model "
		"is not enabled (no stream requires it; -a enables every model)");
	teardown((void **) &g);
	g = fx_new(0);
	REFUSED(g, ev0(g, 0, "OX?", 10), T100 "event OX? at clock 10 (offset 8): unknown event "
		"category of the ovni model");
	teardown((void **) &g);
	g = fx_new(0);
	REFUSED(g, ev0(g, 0, "OHz", 10), T100 "event OHz at clock 10 (offset 8): unknown event of "
		"the ovni model");
	teardown((void **) &g);
	g = fx_new(0);
	REFUSED(g, ev0(g, 0, "\x01\x02\x03", 10), T100 "event \\x01\\x02\\x03 at clock 10 "
		"(offset 8): no model is registered for the model byte of this event");
	teardown((void **) &g);
}

static void test_unknown_stream(void **state)
{
	struct fx *f = *state;
	struct weft_stream other = { .relpath = "loom.x/proc.1/thread.1" };
	struct weft_event e;
	memset(&e, 0, sizeof e);
	memcpy(e.mcv, "OHe", 3);
	e.rclock = e.sclock = 5;
	e.stream = &other;
	REFUSED(f, emu_event(f->e, &e), "loom.x/proc.1/thread.1: event OHe at clock 5 (offset 0): "
		"the event comes from a stream that is not a thread of the system");
}

static void test_accepted_anywhere(void **state)
{
	struct fx *f = *state;
	/* OB, OU (any value byte), OHC without payload, OCn: accepted before OHx */
	assert_int_equal(ev0(f, 0, "OB.", 10), 0);
	assert_int_equal(ev0(f, 0, "OBz", 11), 0);
	assert_int_equal(ev0(f, 0, "OUz", 12), 0);
	assert_int_equal(ev0(f, 0, "OHC", 13), 0);
	int32_t n = 4;
	assert_int_equal(ev(f, 0, "OCn", 14, &n, 4), 0);
	assert_int_equal(ev0(f, 0, "OU]", 15), 0); /* no pairing check by default */
}

/* ---- information and warnings ---- */

static char said[8][WEFT_ERR_MAX];
static size_t nsaid;

static void say(void *ctx, const char *msg)
{
	(void) ctx;
	if (nsaid < 8)
		snprintf(said[nsaid++], sizeof said[0], "%s", msg);
}

static void test_burst_stats(void **state)
{
	(void) state;
	build_system();
	const struct weft_loom *looms[2] = { &L[1], &L[0] };
	struct emu_sys sys;
	char err[WEFT_ERR_MAX];
	assert_int_equal(emu_sys_build(&sys, looms, 2, marks, 2, err, sizeof err), 0);
	const struct emu_model_desc *models[] = { ovni_model() };
	struct emu_opts o;
	memset(&o, 0, sizeof o);
	o.warn = say;
	o.info = say;
	struct emu *e = emu_create(&sys, models, 1, &o, err, sizeof err);
	assert_non_null(e);
	nsaid = 0;
	/* two rounds of 100 bursts; gaps are a permutation of 1..99 (+100 in
	 * the second round): sorted[49] = 50 (150), mean 50 (150), max 99 (199) */
	int64_t clk = 1000;
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 100; i++) {
			if (i > 0)
				clk += (i * 37) % 99 + 1 + round * 100;
			struct weft_event ev;
			memset(&ev, 0, sizeof ev);
			memcpy(ev.mcv, "OB.", 3);
			ev.rclock = ev.sclock = clk;
			ev.stream = &S[0];
			assert_int_equal(emu_event(e, &ev), 0);
		}
		clk += 1000;
	}
	assert_int_equal(nsaid, 3);
	assert_string_equal(said[0], "loom.vm/proc.100/thread.100: burst stats: "
		"median/avg/max = 50/50/99 ns");
	assert_string_equal(said[1], "loom.vm/proc.100/thread.100: burst stats: "
		"median/avg/max = 150/150/199 ns");
	assert_string_equal(said[2], "loom.vm/proc.100/thread.100: large median burst time of "
		"150 ns, check the clock source");
	emu_destroy(e);
	emu_sys_free(&sys);
}

/* ---- --lint ---- */

static void test_lint_payload(void **state)
{
	struct fx *f = *state;
	assert_int_equal(ohx(f, 0, 0, 10), 0);
	int16_t p = 0;
	REFUSED(f, ev(f, 0, "OHp", 20, &p, 2), T100 "event OHp at clock 20 (offset 8): lint: OHp "
		"(pause) has 2 payload bytes; its signature has 0");
	struct fx *g = fx_new(1);
	uint8_t q[4] = { 0 };
	REFUSED(g, ev(g, 0, "OHx", 10, q, 4), T100 "event OHx at clock 10 (offset 8): lint: OHx "
		"(thread starts running) has 4 payload bytes; its signature has 16");
	teardown((void **) &g);
	/* without --lint the same events are accepted */
	g = fx_new(0);
	assert_int_equal(ev(g, 0, "OHx", 10, q, 4), 0);
	assert_int_equal(ev(g, 0, "OHp", 20, &p, 2), 0);
	teardown((void **) &g);
}

static void test_lint_unordered(void **state)
{
	struct fx *f = *state;
	REFUSED(f, ev0(f, 0, "OU]", 10), T100 "event OU] at clock 10 (offset 8): lint: unordered "
		"region closed but none is open");
	struct fx *g = fx_new(1);
	assert_int_equal(ev0(g, 0, "OU[", 10), 0);
	REFUSED(g, ev0(g, 0, "OU[", 11), T100 "event OU[ at clock 11 (offset 8): lint: unordered "
		"region opened inside another one");
	teardown((void **) &g);
}

/* ---- before the first event ---- */

static void test_clock_gate(void **state)
{
	(void) state;
	build_system();
	const struct weft_stream *ss[3] = { &S[0], &S[1], &S[2] };
	int64_t first[3] = { 5, INT64_C(3600000000000) + 5, INT64_C(5) };
	int has[3] = { 1, 1, 1 };
	char err[WEFT_ERR_MAX];
	assert_int_equal(emu_clock_gate(ss, first, has, 3, err, sizeof err), 0); /* exactly 1 h */
	first[1]++;
	assert_int_equal(emu_clock_gate(ss, first, has, 3, err, sizeof err), -1);
	assert_string_equal(err, "first clocks more than 1 h apart (use a clock-offsets.txt): "
		"stream loom.vm/proc.100/thread.101 starts 1.00 h from stream "
		"loom.vm/proc.100/thread.100");
	has[0] = 0;
	assert_int_equal(emu_clock_gate(ss, first, has, 3, err, sizeof err), -1);
	assert_string_equal(err, "first clocks more than 1 h apart (use a clock-offsets.txt): "
		"stream loom.vm/proc.200/thread.200 starts -1.00 h from stream "
		"loom.vm/proc.100/thread.101");
	first[2] = -1;
	assert_int_equal(emu_clock_gate(ss, first, has, 3, err, sizeof err), -1);
	assert_string_equal(err, "loom.vm/proc.200/thread.200: first clock -1 is negative after "
		"the clock offset");
}

static void test_requires(void **state)
{
	(void) state;
	build_system();
	struct weft_model_req nosv[] = { { "ovni", "1.1.0" }, { "nosv", "2.8.0" } };
	struct weft_model_req bad[] = { { "ovni", "1.2.0" } };
	struct weft_model_req good[] = { { "ovni", "1.1.9-rc1" }, { "mymodel", "9.9.9" },
		{ "mpi", "1.0.3" }, { "nanos6", "1.0.0" } };
	const struct weft_stream *ss[1] = { &S[0] };
	const struct emu_model_desc *out[16];
	size_t n = 99;
	char err[WEFT_ERR_MAX];
	S[0].nreqs = 2;
	S[0].reqs = nosv;
	assert_int_equal(emu_select_models(NULL, ss, 1, 0, out, &n, err, sizeof err), -1);
	assert_string_equal(err, "loom.vm/proc.100/thread.100: unsupported nosv model version "
		"(want 2.8.0, have 2.7.0)");
	S[0].nreqs = 1;
	S[0].reqs = bad;
	assert_int_equal(emu_select_models(NULL, ss, 1, 0, out, &n, err, sizeof err), -1);
	assert_string_equal(err, "loom.vm/proc.100/thread.100: unsupported ovni model version "
		"(want 1.2.0, have 1.1.0)");
	/* Unknown names ignored; the others enabled, in model-byte order. */
	S[0].nreqs = 4;
	S[0].reqs = good;
	assert_int_equal(emu_select_models(NULL, ss, 1, 0, out, &n, err, sizeof err), 0);
	assert_int_equal(n, 3);
	assert_string_equal(out[0]->name, "nanos6");
	assert_string_equal(out[1]->name, "mpi");
	assert_string_equal(out[2]->name, "ovni");
	/* -a: all eight, in byte order 6 D K M O P T V. */
	S[0].nreqs = 0;
	assert_int_equal(emu_select_models(NULL, ss, 1, 1, out, &n, err, sizeof err), 0);
	assert_int_equal(n, 8);
	const char order[] = "6DKMOPTV";
	for (size_t i = 0; i < 8; i++)
		assert_int_equal(out[i]->byte, order[i]);
	assert_int_equal(emu_version_compatible("1.1", "1.1.0"), 0);
	assert_int_equal(emu_version_compatible("1.0.7", "1.1.0"), 1);
}

static void test_rows(void **state)
{
	struct fx *f = *state;
	const struct emu_sys *s = &f->sys;
	assert_int_equal(s->nthreads, 4);
	assert_string_equal(s->threads[0].label, "TH 3.300");
	assert_string_equal(s->threads[1].label, "TH 1.100");
	assert_string_equal(s->threads[3].label, "TH 2.200");
	assert_int_equal(s->ncpus, 5);
	assert_string_equal(s->cpus[0].label, " CPU 0.0");
	assert_string_equal(s->cpus[1].label, "vCPU 0.*");
	assert_string_equal(s->cpus[2].label, " CPU 1.0");
	assert_string_equal(s->cpus[4].label, "vCPU 1.*");
}

static void test_pcf_collision(void **state)
{
	(void) state;
	build_system();
	static const struct weft_mark_label coll[] = { { 1, "a" }, { INT64_C(4294967297), "b" } };
	struct weft_mark_type mt[1] = { { 7, "Coll", 1, 2, coll } };
	const struct weft_loom *looms[1] = { &L[0] };
	struct emu_sys sys;
	char err[WEFT_ERR_MAX];
	assert_int_equal(emu_sys_build(&sys, looms, 1, mt, 1, err, sizeof err), 0);
	const struct emu_model_desc *models[] = { ovni_model() };
	assert_null(emu_create(&sys, models, 1, NULL, err, sizeof err));
	assert_string_equal(err, "Coll: two value labels collide as the 32-bit Paraver value 1");
	emu_sys_free(&sys);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
#define TL(fn) cmocka_unit_test_setup_teardown(fn, setup_lint, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_transition_table),
		T(test_state_before_ohx),
		T(test_pause_not_running),
		T(test_second_ohe),
		T(test_resume_warming_only),
		T(test_ohx_running),
		T(test_ohx_has_cpu),
		T(test_ohx_payload),
		T(test_ohx_bad_cpu),
		T(test_physical_cpu_conflict),
		T(test_cooling_shares_cpu),
		T(test_vcpu_many_running),
		T(test_thread_never_ends),
		T(test_all_dead_ok),
		T(test_oas_paused),
		T(test_oas_before_ohx),
		T(test_oas_size),
		T(test_oas_bad_cpu),
		T(test_oas_same_cpu_noop),
		T(test_oar_unknown_tid),
		T(test_oar_dead_target),
		T(test_oar_same_cpu_paused),
		T(test_oar_same_cpu_running),
		T(test_oar_other_process),
		T(test_flush_end_first),
		T(test_flush_twice),
		T(test_mark_size),
		T(test_mark_undeclared),
		T(test_mark_zero),
		T(test_mark_kind),
		T(test_mark_pop_empty),
		T(test_mark_pop_not_top),
		T(test_mark_stack_full),
		T(test_mark_records),
		T(test_oas_cooling_fresh_cpu),
		T(test_mark_cooling),
		T(test_mark_while_paused),
		T(test_unknown_events),
		T(test_unknown_stream),
		T(test_accepted_anywhere),
		cmocka_unit_test(test_burst_stats),
		TL(test_lint_payload),
		TL(test_lint_unordered),
		cmocka_unit_test(test_clock_gate),
		cmocka_unit_test(test_requires),
		T(test_rows),
		cmocka_unit_test(test_pcf_collision),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
