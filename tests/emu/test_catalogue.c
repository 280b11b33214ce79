/* SPDX-License-Identifier: MIT */
/*
 * test_catalogue.c - the channel catalogue (src/emu/catalogue.h) of an
 * emulation with every built-in model and two mark types: ids are indices,
 * names are unique and dotted lower case, the built-ins come from
 * src/model's table with their Paraver types and views, lookups by name
 * and by (view, type) agree, and every EVENT_TYPE of the thread and CPU
 * .pcf is an entry of that view.
 *
 * System: loom "vm" with CPUs 0:0 and 1:1 (then the vCPU), process 7 with
 * thread 70 (without a stream).
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
#include "paraver.h"

static const struct weft_mark_label m2labels[] = { { 5, "Five" } };
static const struct weft_mark_type marks[2] = {
	{ 1, "Single", 0, 0, NULL },
	{ 42, "Stack", 1, 1, m2labels },
};

struct fx {
	struct emu_fx_system w;
	struct emu_sys sys;
	struct emu *e;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof *f);
	assert_non_null(f);
	/* no stream: the models' metadata lookups (counters) find none */
	emu_fx_build(&f->w, &f->sys, 1, 0, marks, 2);
	size_t n;
	f->e = emu_fx_all_models(&f->sys, &n);
	assert_true(n >= 8);
	*state = f;
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

static void names_unique(void **state)
{
	struct fx *f = *state;
	size_t n = emu_cat_count(f->e);
	assert_true(n > EMU_NBUILTIN_CHANS);
	assert_null(emu_cat_at(f->e, n));
	for (size_t i = 0; i < n; i++) {
		const struct emu_cat_entry *c = emu_cat_at(f->e, i);
		assert_int_equal(c->id, i);
		assert_non_null(c->model);
		assert_non_null(strchr(c->name, '.'));
		for (const char *p = c->name; *p; p++)
			assert_non_null(strchr("abcdefghijklmnopqrstuvwxyz0123456789_-.", *p));
		assert_ptr_equal(emu_cat_by_name(f->e, c->name), c);
		for (size_t j = 0; j < i; j++)
			assert_string_not_equal(emu_cat_at(f->e, j)->name, c->name);
	}
	assert_null(emu_cat_by_name(f->e, "thread.state"));
}

static void builtins(void **state)
{
	struct fx *f = *state;
	const struct emu_cat_entry *s = emu_cat_by_name(f->e, "ovni.thread.state");
	assert_non_null(s);
	assert_ptr_equal(s, emu_cat_builtin(f->e, EMU_BI_STATE));
	assert_int_equal(s->kind, EMU_CAT_STATE);
	assert_int_equal(s->scope, EMU_SCOPE_THREAD);
	assert_int_equal(s->prv_type, 4);
	assert_int_equal(s->nvalues, EMU_NSTATES);
	assert_string_equal(emu_cat_value_label(s, EMU_ST_RUNNING), "Running");
	assert_string_equal(emu_cat_value_label(s, EMU_ST_WARMING), "Warming");
	assert_int_equal(s->track, EMU_CAT_TRACK_SLICES);
	/* type 2: the active tid in the thread view, the running one in the CPU's */
	assert_string_equal(emu_cat_by_type(f->e, EMU_FILE_THREAD, 2)->name, "ovni.thread.tid");
	assert_string_equal(emu_cat_by_type(f->e, EMU_FILE_CPU, 2)->name, "cpu.running.tid");
	assert_string_equal(emu_cat_by_type(f->e, EMU_FILE_CPU, 1)->name, "cpu.running.pid");
	assert_string_equal(emu_cat_by_type(f->e, EMU_FILE_CPU, 3)->name, "cpu.running.count");
	assert_null(emu_cat_by_type(f->e, EMU_FILE_THREAD, 1));
	assert_null(emu_cat_by_type(f->e, EMU_FILE_THREAD, 0));
	const struct emu_cat_entry *a = emu_cat_by_type(f->e, EMU_FILE_THREAD, 6);
	assert_string_equal(a->name, "ovni.thread.affinity");
	assert_int_equal(a->nvalues, 3); /* two CPUs and the vCPU */
	assert_string_equal(emu_cat_value_label(a, 3), "vCPU 0.*");
	const struct emu_cat_entry *l = emu_cat_by_type(f->e, EMU_FILE_CPU, 90);
	assert_string_equal(l->name, "ovni.lost");
	assert_ptr_equal(emu_cat_by_type(f->e, EMU_FILE_THREAD, 90), l);
	for (int b = 0; b < EMU_NBUILTIN_CHANS; b++) {
		const struct emu_cat_entry *c = emu_cat_builtin(f->e, (enum emu_builtin_index) b);
		assert_string_equal(c->name, emu_builtin_chans[b].name);
		assert_int_equal(c->builtin, b);
		assert_int_equal(c->view, EMU_CAT_VIEW_ANY);
		assert_null(c->info);
	}
}

static void models(void **state)
{
	struct fx *f = *state;
	const struct emu_cat_entry *m1 = emu_cat_by_name(f->e, "ovni.mark.1");
	const struct emu_cat_entry *m42 = emu_cat_by_name(f->e, "ovni.mark.42");
	assert_non_null(m1);
	assert_non_null(m42);
	assert_int_equal(m1->kind, EMU_CAT_MARK);
	assert_int_equal(m1->stack, 0);
	assert_int_equal(m42->stack, 1);
	assert_string_equal(m42->thread_label, "Stack");
	assert_string_equal(emu_cat_value_label(m42, 5), "Five");
	assert_ptr_equal(emu_cat_by_type(f->e, EMU_FILE_THREAD, m42->prv_type), m42);
	const struct emu_cat_entry *s = emu_cat_by_name(f->e, "nosv.subsystem");
	assert_non_null(s);
	assert_string_equal(s->model, "nosv");
	assert_int_equal(s->kind, EMU_CAT_STACK);
	assert_int_equal(s->scope, EMU_SCOPE_THREAD | EMU_SCOPE_CPU);
	assert_non_null(s->info);
	assert_ptr_equal(emu_chan_at(f->e, (size_t) s->chan), s->info);
	assert_int_equal(s->prv_type, s->info->prv_type);
	/* every engine channel is one entry */
	for (size_t i = 0; i < emu_nchans(f->e); i++) {
		size_t k = 0;
		for (size_t j = 0; j < emu_cat_count(f->e); j++)
			k += emu_cat_at(f->e, j)->chan == (int) i;
		assert_int_equal(k, 1);
	}
}

/* Every EVENT_TYPE of a view's .pcf is the entry of that (view, type). */
static void pcf_types(void **state)
{
	struct fx *f = *state;
	for (size_t v = 0; v < 2; v++) {
		char *buf = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&buf, &len);
		assert_non_null(m);
		assert_int_equal(paraver_pcf_write(m, f->e, v), 0);
		assert_int_equal(fclose(m), 0);
		size_t ntypes = 0;
		for (const char *p = strstr(buf, "EVENT_TYPE\n0 "); p != NULL;
				p = strstr(p + 1, "EVENT_TYPE\n0 ")) {
			int type = atoi(p + strlen("EVENT_TYPE\n0 "));
			const struct emu_cat_entry *c = emu_cat_by_type(f->e, v, type);
			if (c == NULL)
				fail_msg("view %zu: .pcf type %d has no catalogue entry", v, type);
			const char *label = v == EMU_FILE_THREAD ? c->thread_label : c->cpu_label;
			assert_non_null(label);
			assert_non_null(strstr(p, label));
			ntypes++;
		}
		assert_true(ntypes > 10);
		/* the built-ins of the thread view lead its .pcf */
		if (v == EMU_FILE_THREAD)
			assert_non_null(strstr(buf, "EVENT_TYPE\n0 6          Thread: CPU affinity\n"
					"VALUES\n1     CPU 0.0\n"));
		free(buf);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(names_unique, setup, teardown),
		cmocka_unit_test_setup_teardown(builtins, setup, teardown),
		cmocka_unit_test_setup_teardown(models, setup, teardown),
		cmocka_unit_test_setup_teardown(pcf_types, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
