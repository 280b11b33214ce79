/* SPDX-License-Identifier: MIT */
/*
 * test_sqlite_batches.c - the SQLite output's file is a function of the
 * records in time order, not of where the batches are cut (src/out/sqlite.c,
 * sq_records): the same records given in one batch, and in two batches cut
 * inside one time (the first holding a CPU view record at time 10 that the
 * global order puts after a thread view record at 10 of the second), write
 * the same bytes, and the tracks are numbered in the time order (the thread
 * view's first at one time, then the CPU view's).
 *
 * System: loom "vm" with CPUs 0:0 and 1:1 (then the vCPU), process 7 with
 * thread 70 (without a stream); every built-in model. Records: two thread
 * view channels (ovni.thread.tid, ovni.thread.state) of thread 0 and one CPU
 * view channel (cpu.running.tid) of CPU 0, each 1 at time 1, 0 at 2 (an
 * interval [1, 2) held), 3 at 10 (which stores it, the track made then).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "emu.h"
#include "emu_fixture.h"
#include "model.h"
#include "out.h"

struct fx {
	struct emu_fx_system w;
	struct emu_sys sys;
	struct emu *e;
	char dir[64];
	uint32_t x, y, c; /* the catalogue ids of the three channels */
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof *f);
	assert_non_null(f);
	emu_fx_build(&f->w, &f->sys, 1, 0, NULL, 0);
	f->e = emu_fx_all_models(&f->sys, NULL);
	const struct emu_cat_entry *x = emu_cat_by_name(f->e, "ovni.thread.tid");
	const struct emu_cat_entry *y = emu_cat_by_name(f->e, "ovni.thread.state");
	const struct emu_cat_entry *c = emu_cat_by_name(f->e, "cpu.running.tid");
	assert_non_null(x);
	assert_non_null(y);
	assert_non_null(c);
	f->x = (uint32_t) x->id;
	f->y = (uint32_t) y->id;
	f->c = (uint32_t) c->id;
	snprintf(f->dir, sizeof f->dir, "/tmp/weft-sqlbatch-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char p[128];
	snprintf(p, sizeof p, "%s/timeline.db", f->dir);
	unlink(p);
	rmdir(f->dir);
	emu_destroy(f->e);
	emu_sys_free(&f->sys);
	free(f);
	return 0;
}

/* The database the output writes from the records of nb batches (the
 * thread view's th[k][0..nth[k]), the CPU view's cp[k][0..ncp[k])), its
 * bytes in *len (malloc'd), and its tracks' channels in id order into
 * tracks[0..3). */
static unsigned char *write_db(struct fx *f, size_t nb, const struct emu_prv_rec *const *th,
		const size_t *nth, const struct emu_prv_rec *const *cp, const size_t *ncp,
		size_t *len, int64_t tracks[3])
{
	char err[WEFT_ERR_MAX] = "";
	const struct out_format *fmt = out_format_by_name("sqlite");
	assert_non_null(fmt);
	struct out *o = out_open(fmt, f->dir, f->e, NULL, err, sizeof err);
	if (o == NULL)
		fail_msg("open: %s", err);
	struct emu_sink s = out_sink(o);
	for (size_t k = 0; k < nb; k++) {
		struct emu_batch b;
		memset(&b, 0, sizeof b);
		b.prv[EMU_FILE_THREAD] = th[k];
		b.nprv[EMU_FILE_THREAD] = nth[k];
		b.prv[EMU_FILE_CPU] = cp[k];
		b.nprv[EMU_FILE_CPU] = ncp[k];
		if (s.records(s.self, &b, err, sizeof err) != 0)
			fail_msg("records: %s", err);
	}
	if (out_close(o, 20, err, sizeof err) != 0 || out_commit(o, err, sizeof err) != 0)
		fail_msg("close: %s", err);
	char p[128];
	snprintf(p, sizeof p, "%s/timeline.db", f->dir);
	FILE *in = fopen(p, "rb");
	assert_non_null(in);
	assert_int_equal(fseek(in, 0, SEEK_END), 0);
	long n = ftell(in);
	assert_true(n > 0);
	rewind(in);
	unsigned char *buf = malloc((size_t) n);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t) n, in), (size_t) n);
	fclose(in);
	*len = (size_t) n;
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	assert_int_equal(sqlite3_open_v2(p, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT channel FROM track ORDER BY id", -1, &st,
			NULL), SQLITE_OK);
	size_t i = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		assert_true(i < 3);
		tracks[i++] = sqlite3_column_int64(st, 0);
	}
	assert_int_equal(i, 3);
	sqlite3_finalize(st);
	sqlite3_close(db);
	unlink(p);
	return buf;
}

static void one_time_split(void **state)
{
	struct fx *f = *state;
	/* thread view: x and y of thread 0; CPU view: c of CPU 0 */
	const struct emu_prv_rec th[] = {
		{ 1, 1, 0, f->x }, { 1, 1, 0, f->y }, { 2, 0, 0, f->x }, { 2, 0, 0, f->y },
		{ 10, 3, 0, f->x }, { 10, 3, 0, f->y },
	};
	const struct emu_prv_rec cp[] = { { 1, 1, 0, f->c }, { 2, 0, 0, f->c }, { 10, 3, 0, f->c } };
	/* all in one batch */
	const struct emu_prv_rec *th1[] = { th }, *cp1[] = { cp };
	size_t nth1[] = { 6 }, ncp1[] = { 3 };
	size_t len1, len2;
	int64_t t1[3], t2[3];
	unsigned char *a = write_db(f, 1, th1, nth1, cp1, ncp1, &len1, t1);
	/* the first batch up to x's record at 10 and the CPU's at 10, the
	 * second y's at 10 (the batches follow one another in time) */
	const struct emu_prv_rec *th2[] = { th, th + 5 }, *cp2[] = { cp, cp + 3 };
	size_t nth2[] = { 5, 1 }, ncp2[] = { 3, 0 };
	unsigned char *b = write_db(f, 2, th2, nth2, cp2, ncp2, &len2, t2);
	/* the tracks in time order: x, y (the thread view's at 10), then c */
	assert_int_equal(t1[0], f->x);
	assert_int_equal(t1[1], f->y);
	assert_int_equal(t1[2], f->c);
	assert_memory_equal(t2, t1, sizeof t1);
	assert_int_equal(len2, len1);
	assert_memory_equal(b, a, len1);
	free(a);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(one_time_split),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
