/* SPDX-License-Identifier: MIT */
/* test_api.c - the public reader API on conformance traces. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "conformance.h"
#include "tracewrite.h"
#include "weft/weft.h"

static const char *corpus;

static struct weft_trace *open_case(const char *rel, enum weft_mode mode, enum weft_clock clk)
{
	char path[4096], err[WEFT_ERR_MAX];
	snprintf(path, sizeof path, "%s/%s", corpus, rel);
	WEFT_OPTS(weft_open_opts, o);
	o.mode = mode;
	o.clock = clk;
	struct weft_trace *t = weft_open(path, &o, err, sizeof err);
	if (t == NULL)
		fail_msg("open %s: %s", path, err);
	return t;
}

static void test_two_looms_system(void **state)
{
	(void) state;
	struct weft_trace *t = open_case("v3/two-looms/ovni", WEFT_STRICT, WEFT_CLOCK_OFFSET);
	assert_int_equal(weft_nstreams(t), 4);
	assert_int_equal(weft_nlooms(t), 2);
	const struct weft_loom *a = weft_loom_at(t, 0), *b = weft_loom_at(t, 1);
	assert_string_equal(a->name, "nodeA");
	assert_string_equal(b->name, "nodeB");
	assert_string_equal(a->hostname, "nodeA");
	assert_int_equal(a->has_rank, 1);
	assert_int_equal(a->rank_min, 0);
	assert_int_equal(b->rank_min, 1);
	assert_int_equal(a->ncpus, 2);
	assert_int_equal(a->cpus[0].index, 0);
	assert_int_equal(a->cpus[1].index, 1);
	assert_int_equal(a->nprocs, 1);
	const struct weft_proc *p = a->procs[0];
	assert_int_equal(p->rank, 0);
	assert_int_equal(p->nranks, 2);
	assert_int_equal(p->nthreads, 2);
	assert_true(p->threads[0]->tid < p->threads[1]->tid);
	assert_ptr_equal(p->threads[0]->proc, p);
	assert_ptr_equal(p->loom, a);
	const struct weft_stream *s = p->threads[0]->stream;
	assert_ptr_equal(s->thread, p->threads[0]);
	assert_int_equal(s->meta_version, 3);
	assert_int_equal(s->finished, 1);
	assert_string_equal(s->lib_version, "1.14.0");
	assert_int_equal(s->nreqs, 1);
	assert_string_equal(s->reqs[0].model, "ovni");
	char buf[256];
	/* snprintf-style: the full length, truncated output when it is >= buflen */
	assert_int_equal(weft_stream_attr_json(s, "ovni.loom", buf, sizeof buf), 7);
	assert_string_equal(buf, "\"nodeA\"");
	assert_int_equal(weft_stream_attr_json(s, "ovni.require", buf, sizeof buf), 16);
	assert_string_equal(buf, "{\"ovni\":\"1.1.0\"}");
	assert_int_equal(weft_stream_attr_json(s, "ovni.require", buf, 5), 16);
	assert_string_equal(buf, "{\"ov");
	assert_int_equal(weft_stream_attr_json(s, "ovni.require", buf, 16), 16);
	assert_string_equal(buf, "{\"ovni\":\"1.1.0\"");
	assert_int_equal(weft_stream_attr_json(s, "ovni.require", buf, 17), 16);
	assert_string_equal(buf, "{\"ovni\":\"1.1.0\"}");
	assert_int_equal(weft_stream_attr_json(s, "ovni.require", NULL, 0), 16);
	assert_int_equal(weft_stream_attr_json(s, "ovni.nothere", buf, sizeof buf), 0);
	assert_int_equal(weft_stream_attr_json(s, "ovni.loom.deeper", buf, sizeof buf), 0);
	/* obs_path: the binary stream file as opened */
	char want[8192];
	snprintf(want, sizeof want, "%s/v3/two-looms/ovni/%s/stream.obs", corpus, s->relpath);
	assert_non_null(s->obs_path);
	assert_string_equal(s->obs_path, want);
	/* streams in relpath order */
	for (size_t i = 1; i < weft_nstreams(t); i++)
		assert_true(strcmp(weft_stream_at(t, i - 1)->relpath, weft_stream_at(t, i)->relpath) < 0);
	assert_null(weft_stream_at(t, 4));
	assert_null(weft_loom_at(t, 2));
	weft_close(t);
}

static void test_marks_merged(void **state)
{
	(void) state;
	struct weft_trace *t = open_case("v3/marks/ovni", WEFT_STRICT, WEFT_CLOCK_OFFSET);
	assert_int_equal(weft_nmark_types(t), 3);
	const struct weft_mark_type *m1 = weft_mark_type_at(t, 0);
	const struct weft_mark_type *m2 = weft_mark_type_at(t, 1);
	const struct weft_mark_type *m99 = weft_mark_type_at(t, 2);
	assert_int_equal(m1->type, 1);
	assert_string_equal(m1->title, "Progress");
	assert_int_equal(m1->stack, 0);
	assert_int_equal(m2->type, 2);
	assert_int_equal(m2->stack, 1);
	assert_int_equal(m2->nlabels, 4);
	const char *want[] = { "Blue", "Gray", "Red", "Green" };
	for (int i = 0; i < 4; i++) {
		assert_int_equal(m2->labels[i].value, i + 1);
		assert_string_equal(m2->labels[i].label, want[i]);
	}
	assert_int_equal(m99->type, 99);
	assert_int_equal(m99->labels[0].value, 1000000000000LL);
	weft_close(t);
}

/* Mark types and labels come in the order of first appearance (streams in
 * relpath order, each stream.json in file order), not sorted, as in the
 * reference's Paraver configuration. */
static void test_marks_first_appearance(void **state)
{
	(void) state;
	char *root = tw_tmpdir();
	FILE *f = tw_stream(root, "vm", 1, 1, "\"mark\": {"
			"\"5\": {\"title\": \"Five\", \"chan_type\": \"single\"}, "
			"\"2\": {\"title\": \"Two\", \"chan_type\": \"stack\", "
			"\"labels\": {\"9\": \"nine\", \"1\": \"one\"}}}");
	tw_event(f, "OHx", 100, NULL, 0);
	fclose(f);
	f = tw_stream(root, "vm", 1, 2, "\"mark\": {"
			"\"7\": {\"title\": \"Seven\", \"chan_type\": \"single\"}, "
			"\"2\": {\"title\": \"Two\", \"chan_type\": \"stack\", "
			"\"labels\": {\"3\": \"three\", \"1\": \"one\", \"-4\": \"minus\"}}, "
			"\"5\": {\"title\": \"Five\", \"chan_type\": \"single\"}}");
	tw_event(f, "OHx", 200, NULL, 0);
	fclose(f);
	char err[WEFT_ERR_MAX];
	struct weft_trace *t = weft_open(root, NULL, err, sizeof err);
	if (t == NULL)
		fail_msg("open: %s", err);
	assert_int_equal(weft_nmark_types(t), 3);
	assert_int_equal(weft_mark_type_at(t, 0)->type, 5);
	assert_int_equal(weft_mark_type_at(t, 1)->type, 2);
	assert_int_equal(weft_mark_type_at(t, 2)->type, 7);
	assert_null(weft_mark_type_at(t, 3));
	const struct weft_mark_type *m2 = weft_mark_type_at(t, 1);
	assert_string_equal(m2->title, "Two");
	assert_int_equal(m2->nlabels, 4);
	int64_t wv[] = { 9, 1, 3, -4 };
	const char *wl[] = { "nine", "one", "three", "minus" };
	for (int i = 0; i < 4; i++) {
		assert_int_equal(m2->labels[i].value, wv[i]);
		assert_string_equal(m2->labels[i].label, wl[i]);
	}
	assert_int_equal(weft_mark_type_at(t, 0)->nlabels, 0);
	weft_close(t);
	tw_rmtree(root);
	free(root);
}

/* weft_stream_first_sclock: known at open, before any event is read. */
static void test_first_sclock(void **state)
{
	(void) state;
	struct weft_trace *t = open_case("v3/clock-offsets-edited/ovni", WEFT_STRICT,
			WEFT_CLOCK_OFFSET);
	size_t ns = weft_nstreams(t);
	int64_t firsts[64];
	assert_true(ns <= 64);
	for (size_t i = 0; i < ns; i++)
		assert_int_equal(weft_stream_first_sclock(t, i, &firsts[i]), 1);
	int64_t c;
	assert_int_equal(weft_stream_first_sclock(t, ns, &c), 0);
	/* the first event yielded from each stream has that sclock */
	int seen[64] = { 0 };
	struct weft_event ev;
	int r;
	while ((r = weft_next(t, &ev)) > 0) {
		size_t i = 0;
		while (weft_stream_at(t, i) != ev.stream)
			i++;
		if (!seen[i]) {
			seen[i] = 1;
			assert_int_equal(ev.sclock, firsts[i]);
		}
	}
	assert_int_equal(r, 0);
	/* unchanged by the iteration */
	for (size_t i = 0; i < ns; i++) {
		assert_int_equal(weft_stream_first_sclock(t, i, &c), 1);
		assert_int_equal(c, firsts[i]);
	}
	weft_close(t);

	/* a stream with no events */
	char *root = tw_tmpdir();
	FILE *f = tw_stream(root, "vm", 1, 1, NULL);
	fclose(f);
	f = tw_stream(root, "vm", 1, 2, NULL);
	tw_event(f, "OHx", 12345, NULL, 0);
	fclose(f);
	char err[WEFT_ERR_MAX];
	t = weft_open(root, NULL, err, sizeof err);
	if (t == NULL)
		fail_msg("open: %s", err);
	c = -1;
	assert_int_equal(weft_stream_first_sclock(t, 0, &c), 0);
	assert_int_equal(c, -1);
	assert_int_equal(weft_stream_first_sclock(t, 1, &c), 1);
	assert_int_equal(c, 12345);
	weft_close(t);
	tw_rmtree(root);
	free(root);
}

static void test_clock_offsets(void **state)
{
	(void) state;
	struct weft_trace *t = open_case("v3/clock-offsets-edited/ovni", WEFT_STRICT,
			WEFT_CLOCK_OFFSET);
	assert_int_equal(weft_nlooms(t), 2);
	assert_int_equal(weft_loom_at(t, 0)->clock_offset, 0);
	assert_int_equal(weft_loom_at(t, 1)->clock_offset, 5000000);
	struct weft_event ev;
	int64_t last = INT64_MIN;
	uint64_t n = 0, shifted = 0;
	int r;
	while ((r = weft_next(t, &ev)) > 0) {
		int64_t off = ev.stream->thread->proc->loom->clock_offset;
		assert_int_equal(ev.sclock, ev.rclock + off);
		assert_true(ev.sclock >= last);
		last = ev.sclock;
		shifted += off != 0;
		n++;
	}
	assert_int_equal(r, 0);
	assert_true(shifted > 0);
	assert_int_equal(weft_nevents(t), n);
	assert_int_equal(weft_last_clock(t), last);
	assert_int_equal(weft_next(t, &ev), 0);
	weft_close(t);

	t = open_case("v3/clock-offsets-edited/ovni", WEFT_STRICT, WEFT_CLOCK_RAW);
	last = INT64_MIN;
	while ((r = weft_next(t, &ev)) > 0) {
		assert_true(ev.rclock >= last);
		last = ev.rclock;
	}
	assert_int_equal(r, 0);
	weft_close(t);
}

static void test_open_inside(void **state)
{
	(void) state;
	struct weft_trace *t = open_case("v3/two-procs/ovni/loom.vm/proc.17372/thread.17373",
			WEFT_LENIENT, WEFT_CLOCK_OFFSET);
	assert_int_equal(weft_nstreams(t), 1);
	assert_string_equal(weft_stream_at(t, 0)->relpath, ".");
	struct weft_event ev;
	assert_int_equal(weft_next(t, &ev), 1);
	assert_string_equal(ev.mcv, "OHx");
	assert_int_equal(ev.offset, 8);
	assert_int_equal(ev.payload_size, 16);
	weft_close(t);

	t = open_case("v3/two-procs/ovni/loom.vm/proc.17372", WEFT_LENIENT, WEFT_CLOCK_OFFSET);
	assert_int_equal(weft_nstreams(t), 2);
	assert_string_equal(weft_stream_at(t, 0)->relpath, "thread.17372");
	weft_close(t);

	/* only the other process of this v1 loom lists the CPUs: lenient */
	t = open_case("v1/two-procs/ovni/loom.vm/proc.21807", WEFT_LENIENT, WEFT_CLOCK_OFFSET);
	assert_int_equal(weft_nstreams(t), 2);
	assert_int_equal(weft_stream_at(t, 0)->meta_version, 1);
	assert_string_equal(weft_loom_at(t, 0)->name, "vm");
	assert_int_equal(weft_loom_at(t, 0)->procs[0]->pid, 21807);
	weft_close(t);
}

static void test_jumbo_fields(void **state)
{
	(void) state;
	struct weft_trace *t = open_case("v3/jumbo/ovni", WEFT_STRICT, WEFT_CLOCK_OFFSET);
	struct weft_event ev;
	uint32_t sizes[8];
	int nj = 0, r;
	while ((r = weft_next(t, &ev)) > 0) {
		if (!ev.jumbo)
			continue;
		assert_int_equal(ev.payload_size, ev.jumbo_size + 4);
		assert_ptr_equal(ev.jumbo_data, ev.payload + 4);
		assert_int_equal(ev.flags, 0x13);
		if (nj < 8)
			sizes[nj] = ev.jumbo_size;
		nj++;
	}
	assert_int_equal(r, 0);
	assert_int_equal(nj, 6);
	uint32_t want[] = { 0, 1, 2, 14, 1000, 102400 };
	for (int i = 0; i < 6; i++)
		assert_int_equal(sizes[i], want[i]);
	weft_close(t);
}

static int nwarn;
static char lastwarn[WEFT_ERR_MAX];

static void warn_cb(void *ctx, const char *msg)
{
	assert_string_equal((const char *) ctx, "ctx");
	nwarn++;
	snprintf(lastwarn, sizeof lastwarn, "%s", msg);
}

static void test_errors_are_sticky(void **state)
{
	(void) state;
	char path[4096], err[WEFT_ERR_MAX];
	snprintf(path, sizeof path, "%s/bad/clock-backwards/ovni", corpus);
	WEFT_OPTS(weft_open_opts, o);
	o.mode = WEFT_LENIENT;
	o.warn = warn_cb;
	o.warn_ctx = (void *) "ctx";
	struct weft_trace *t = weft_open(path, &o, err, sizeof err);
	assert_non_null(t);
	struct weft_event ev;
	assert_int_equal(weft_next(t, &ev), 1);
	assert_int_equal(weft_next(t, &ev), 1);
	assert_int_equal(weft_next(t, &ev), -1);
	assert_int_equal(weft_next(t, &ev), -1);
	char want[8192];
	snprintf(want, sizeof want, "%s/loom.vm/proc.17323/thread.17323/stream.obs: offset 48: "
			"event OHp: clock goes backwards from 484561306652 to 484561305245 "
			"within the stream", path);
	assert_string_equal(weft_error(t), want);
	assert_int_equal(weft_nevents(t), 2);
	weft_close(t);

	/* batches: the events before the error first, the error on the next call */
	t = weft_open(path, &o, err, sizeof err);
	assert_non_null(t);
	struct weft_event evs[16];
	assert_int_equal(weft_next_batch(t, evs, 16), 2);
	assert_string_equal(evs[0].mcv, "OHx");
	assert_string_equal(evs[1].mcv, "OHc");
	assert_int_equal(evs[1].offset, 36);
	assert_int_equal(weft_next_batch(t, evs, 16), -1);
	assert_string_equal(weft_error(t), want);
	assert_int_equal(weft_next_batch(t, evs, 16), -1);
	weft_close(t);

	/* batches of one and of many give the same events as weft_next */
	snprintf(path, sizeof path, "%s/v3/clock-ties/ovni", corpus);
	struct weft_trace *a = weft_open(path, NULL, err, sizeof err);
	struct weft_trace *b = weft_open(path, NULL, err, sizeof err);
	assert_non_null(a);
	assert_non_null(b);
	long n;
	size_t total = 0;
	while ((n = weft_next_batch(b, evs, 3)) > 0) {
		for (long i = 0; i < n; i++) {
			assert_int_equal(weft_next(a, &ev), 1);
			assert_string_equal(ev.stream->relpath, evs[i].stream->relpath);
			assert_int_equal(ev.offset, evs[i].offset);
			assert_int_equal(ev.rclock, evs[i].rclock);
			assert_int_equal(ev.payload_size, evs[i].payload_size);
			assert_memory_equal(ev.mcv, evs[i].mcv, 4);
			total++;
		}
	}
	assert_int_equal(n, 0);
	assert_int_equal(weft_next(a, &ev), 0);
	assert_int_equal(total, 24);
	assert_int_equal(weft_nevents(a), 24);
	assert_int_equal(weft_nevents(b), 24);
	assert_int_equal(weft_first_clock(b), 1000);
	assert_int_equal(weft_last_clock(b), 5000);
	weft_close(a);
	weft_close(b);

	nwarn = 0;
	snprintf(path, sizeof path, "%s/bad/require-missing/ovni", corpus);
	t = weft_open(path, &o, err, sizeof err);
	assert_non_null(t);
	assert_int_equal(nwarn, 1);
	snprintf(want, sizeof want, "%s/loom.vm/proc.17323/thread.17323/stream.json: "
			"ovni.require is missing", path);
	assert_string_equal(lastwarn, want);
	weft_close(t);
	/* strict: the same is an error, and err is filled */
	t = weft_open(path, NULL, err, sizeof err);
	assert_null(t);
	assert_string_equal(err, want);
	/* an unknown mode */
	WEFT_OPTS(weft_open_opts, bad);
	bad.mode = (enum weft_mode) 7;
	assert_null(weft_open(path, &bad, err, sizeof err));
	assert_string_equal(err, "weft_open: unknown mode 7");
	/* a tiny err buffer is truncated, not overflowed */
	char small[8];
	assert_null(weft_open(path, NULL, small, sizeof small));
	assert_int_equal(strlen(small), 7);
	weft_close(NULL);
}

int main(void)
{
	corpus = weft_conformance_dir();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_looms_system),
		cmocka_unit_test(test_marks_merged),
		cmocka_unit_test(test_marks_first_appearance),
		cmocka_unit_test(test_first_sclock),
		cmocka_unit_test(test_clock_offsets),
		cmocka_unit_test(test_open_inside),
		cmocka_unit_test(test_jumbo_fields),
		cmocka_unit_test(test_errors_are_sticky),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
