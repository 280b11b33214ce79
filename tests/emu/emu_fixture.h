/* SPDX-License-Identifier: MIT */
/*
 * emu_fixture.h - the system that the engine's cmocka tests build by hand
 * (test_catalogue.c, test_engine_parts.c, tests/sql/test_sqlite_batches.c):
 * loom "vm" with CPUs 0:0 and 1:1 (then the vCPU), process 7 (rank 0 of 1)
 * with thread 70, or threads 70 and 71; and an engine over it with every
 * built-in model. Include it after cmocka.h.
 */
#ifndef WEFT_TESTS_EMU_FIXTURE_H
#define WEFT_TESTS_EMU_FIXTURE_H

#include <stddef.h>
#include <string.h>

#include "emu.h"
#include "model.h"

#define EMU_FX_MAX_THREADS 2

/* What the system's weft structs point to: the caller keeps it where it
 * is (in its fixture) while the system and its engines are used. */
struct emu_fx_system {
	struct weft_stream streams[EMU_FX_MAX_THREADS];
	struct weft_thread threads[EMU_FX_MAX_THREADS];
	struct weft_proc proc;
	struct weft_loom loom;
	struct weft_cpu cpus[2];
	const struct weft_thread *proc_threads[EMU_FX_MAX_THREADS];
	const struct weft_proc *loom_procs[1];
};

/* Fills s with nthreads threads (1 or 2, tids 70 and 71) and builds sys
 * from it with the mark types marks[0..nmarks). With streams, each thread
 * has a stream loom.vm/proc.7/thread.TID (metadata version 3, finished);
 * without, none: the models' metadata lookups (counters) then find none (a
 * hand-made weft_stream is not the reader's). */
static inline void emu_fx_build(struct emu_fx_system *s, struct emu_sys *sys, size_t nthreads,
		int streams, const struct weft_mark_type *marks, size_t nmarks)
{
	static const char *const rel[EMU_FX_MAX_THREADS] = {
		"loom.vm/proc.7/thread.70", "loom.vm/proc.7/thread.71",
	};
	assert_true(nthreads >= 1 && nthreads <= EMU_FX_MAX_THREADS);
	memset(s, 0, sizeof *s);
	for (size_t i = 0; i < nthreads; i++) {
		if (streams) {
			s->streams[i].relpath = rel[i];
			s->streams[i].meta_version = 3;
			s->streams[i].thread = &s->threads[i];
			s->streams[i].finished = 1;
			s->threads[i].stream = &s->streams[i];
		}
		s->threads[i].tid = 70 + (int) i;
		s->threads[i].proc = &s->proc;
		s->proc_threads[i] = &s->threads[i];
	}
	s->proc = (struct weft_proc) { 7, 1, 0, 1, &s->loom, nthreads, s->proc_threads };
	s->loom_procs[0] = &s->proc;
	s->cpus[0] = (struct weft_cpu) { 0, 0 };
	s->cpus[1] = (struct weft_cpu) { 1, 1 };
	s->loom = (struct weft_loom) { "vm", "vm", 0, 1, 0, 2, s->cpus, 1, s->loom_procs };
	const struct weft_loom *looms[1] = { &s->loom };
	char err[WEFT_ERR_MAX];
	assert_int_equal(emu_sys_build(sys, looms, 1, marks, nmarks, err, sizeof err), 0);
}

/* An engine over sys with every built-in model, their number in *nmodels
 * (unless nmodels is NULL). */
static inline struct emu *emu_fx_all_models(const struct emu_sys *sys, size_t *nmodels)
{
	const struct emu_model_desc *models[64];
	size_t n = 0;
	char err[WEFT_ERR_MAX];
	assert_true(weft_model_count(NULL) <= 64);
	assert_int_equal(emu_select_models(NULL, NULL, 0, 1, models, &n, err, sizeof err), 0);
	struct emu *e = emu_create(sys, models, n, NULL, err, sizeof err);
	assert_non_null(e);
	if (nmodels != NULL)
		*nmodels = n;
	return e;
}

#endif
