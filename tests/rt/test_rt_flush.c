/* SPDX-License-Identifier: MIT */
/*
 * test_rt_flush - where OF[/OF] land.
 *   automatic: the buffer (WEFT_BUFSIZE=256) is written when an event
 *     does not fit; the OF[/OF] pair follows that event, with
 *     event clock <= OF[ clock <= OF] clock; an exactly full buffer does
 *     not flush; a jumbo can trigger it too; the pair of an automatic
 *     flush is kept by ovni_thread_free;
 *   explicit: ovni_flush writes the buffer; its pair is written by the next
 *     flush, and the pair of the last ovni_flush before ovni_thread_free is
 *     dropped when nothing follows it, as in the reference (whose
 *     ovni_thread_free does not flush): a stream ending with
 *     "ovni_flush(); ovni_thread_free();" has the very bytes of the
 *     reference's (v3/single-basic replayed). Events emitted after the last
 *     ovni_flush are written, after its pair.
 * Each case is a process of its own (rt_test_in_proc).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "ovni.h"
#include "rt_test.h"

#define BUFSIZE 256
#define NEV 200
#define MAXREC 16

static int next_tid = 1000;

struct body {
	int tid;
	const char *bufsize; /* WEFT_BUFSIZE, or NULL */
	void (*fn)(struct body *);
	const int *sizes; /* payload size pattern */
	int nsizes;
	long long size_after_flush[3];
	/* explicit cases: the clock of each event emitted, and clocks read
	 * just before and after each ovni_flush */
	uint64_t ev_clock[MAXREC];
	int nev;
	uint64_t before[3], after[3];
	/* corpus replay */
	const uint8_t *replay;
	size_t replay_len;
};

static uint8_t pay(int i, int j)
{
	return (uint8_t) (i * 7 + j);
}

static void emit_sized(int i, int psize)
{
	struct ovni_ev ev = {0};
	ovni_ev_set_mcv(&ev, "Utp");
	ovni_ev_set_clock(&ev, ovni_clock_now());
	uint8_t buf[16];
	for (int j = 0; j < psize; j++)
		buf[j] = pay(i, j);
	if (psize > 0)
		ovni_payload_add(&ev, buf, psize);
	ovni_ev_emit(&ev);
}

static void thread_main(void *p)
{
	struct body *b = p;
	b->fn(b);
}

/* The child process: one ovni process, one thread running b->fn. */
static void proc_main(void *p)
{
	struct body *b = p;
	if (b->bufsize != NULL)
		setenv("WEFT_BUFSIZE", b->bufsize, 1);
	else
		unsetenv("WEFT_BUFSIZE");
	ovni_proc_init(1, "vm", 77);
	rt_test_in_thread(thread_main, b);
	ovni_proc_fini();
}

/* Runs b in a process of its own; returns the path of its stream.obs. */
static char *run(struct body *b)
{
	b->tid = next_tid++;
	assert_true(rt_test_in_proc(proc_main, b, sizeof *b));
	return rt_test_path("%s/loom.vm/proc.77/thread.%d/stream.obs", rt_test_dir, b->tid);
}

static void auto_body(struct body *b)
{
	ovni_thread_init(b->tid);
	for (int i = 0; i < NEV; i++)
		emit_sized(i, b->sizes[i % b->nsizes]);
	ovni_thread_free();
}

static void check_auto(const int *sizes, int nsizes)
{
	struct body b = {.bufsize = "256", .fn = auto_body, .sizes = sizes, .nsizes = nsizes};
	char *obs = run(&b);

	/* Which events must be followed by a flush pair, from the rule. */
	int pair_after[NEV] = {0};
	int npairs = 0;
	size_t used = 0;
	for (int i = 0; i < NEV; i++) {
		size_t sz = 12u + (size_t) sizes[i % nsizes];
		if (used + sz > BUFSIZE) {
			pair_after[i] = 1;
			npairs++;
			used = sz + 24u;
		} else {
			used += sz;
		}
	}
	assert_true(npairs >= 5);

	struct rt_test_stream s;
	rt_test_stream_load(&s, obs);
	assert_int_equal(s.nev, (size_t) (NEV + 2 * npairs));
	size_t k = 0;
	uint64_t last = 0;
	for (int i = 0; i < NEV; i++) {
		struct rt_test_ev *e = &s.ev[k++];
		assert_string_equal(e->mcv, "Utp");
		assert_int_equal(e->payload_size, (size_t) sizes[i % nsizes]);
		for (size_t j = 0; j < e->payload_size; j++)
			assert_int_equal(e->payload[j], pay(i, (int) j));
		assert_true(e->clock >= last);
		last = e->clock;
		if (pair_after[i]) {
			struct rt_test_ev *b0 = &s.ev[k++];
			struct rt_test_ev *b1 = &s.ev[k++];
			assert_string_equal(b0->mcv, "OF[");
			assert_string_equal(b1->mcv, "OF]");
			assert_int_equal(b0->flags, 0);
			assert_int_equal(b1->flags, 0);
			assert_true(e->clock <= b0->clock);
			assert_true(b0->clock <= b1->clock);
			last = b1->clock;
		}
	}
	assert_int_equal(k, s.nev);
	rt_test_stream_free(&s);
	free(obs);
}

static void test_auto_no_payload(void **st)
{
	(void) st;
	static const int sizes[] = {0};
	check_auto(sizes, 1);
}

static void test_auto_exact_fill(void **st)
{
	(void) st;
	/* 16-byte events: 16 fill the 256-byte buffer exactly. */
	static const int sizes[] = {4};
	check_auto(sizes, 1);
}

static void test_auto_mixed(void **st)
{
	(void) st;
	static const int sizes[] = {0, 2, 16, 5, 3, 11, 8};
	check_auto(sizes, 7);
}

static void test_auto_max_payload(void **st)
{
	(void) st;
	static const int sizes[] = {16};
	check_auto(sizes, 1);
}

/* Emits a payload-less event at the current clock and records the clock. */
static void emit_rec(struct body *b, const char *mcv)
{
	struct ovni_ev ev = {0};
	ovni_ev_set_mcv(&ev, mcv);
	uint64_t c = ovni_clock_now();
	b->ev_clock[b->nev++] = c;
	ovni_ev_set_clock(&ev, c);
	ovni_ev_emit(&ev);
}

static void flush_rec(struct body *b, int k, const char *obs)
{
	b->before[k] = ovni_clock_now();
	ovni_flush();
	b->after[k] = ovni_clock_now();
	if (obs != NULL)
		b->size_after_flush[k] = rt_test_file_size(obs);
}

static void explicit_body(struct body *b)
{
	char *obs = rt_test_path("%s/loom.vm/proc.77/thread.%d/stream.obs", rt_test_dir, b->tid);
	ovni_thread_init(b->tid);
	for (int i = 0; i < 3; i++)
		emit_rec(b, "Utp");
	flush_rec(b, 0, obs);
	for (int i = 3; i < 5; i++)
		emit_rec(b, "Utp");
	flush_rec(b, 1, obs);
	emit_rec(b, "OHe");
	flush_rec(b, 2, obs);
	ovni_thread_free();
	free(obs);
}

/* Appends a payload-less event to want. */
static size_t put_event(uint8_t *want, size_t off, const char *mcv, uint64_t clock)
{
	want[off + WEFT_EV_OFF_FLAGS] = 0;
	want[off + WEFT_EV_OFF_MODEL] = (uint8_t) mcv[0];
	want[off + WEFT_EV_OFF_CATEGORY] = (uint8_t) mcv[1];
	want[off + WEFT_EV_OFF_VALUE] = (uint8_t) mcv[2];
	weft_store_u64(want + off + WEFT_EV_OFF_CLOCK, clock);
	return off + WEFT_EV_HEADER_SIZE;
}

/* The OF[/OF] pair at byte off of data: its clocks lie within the flush
 * (between the clocks read before and after ovni_flush). */
static void check_pair(const uint8_t *data, size_t off, uint64_t before, uint64_t after, uint64_t *t0,
		       uint64_t *t1)
{
	*t0 = weft_load_u64(data + off + WEFT_EV_OFF_CLOCK);
	*t1 = weft_load_u64(data + off + WEFT_EV_HEADER_SIZE + WEFT_EV_OFF_CLOCK);
	assert_true(before <= *t0);
	assert_true(*t0 <= *t1);
	assert_true(*t1 <= after);
}

static void test_explicit(void **st)
{
	(void) st;
	struct body b = {.fn = explicit_body};
	char *obs = run(&b);

	/* The pair of a flush is written by the next one. */
	assert_int_equal(b.size_after_flush[0], 8 + 3 * 12);
	assert_int_equal(b.size_after_flush[1], 8 + 3 * 12 + 24 + 2 * 12);
	assert_int_equal(b.size_after_flush[2], 8 + 3 * 12 + 24 + 2 * 12 + 24 + 12);

	/* The pair of the last flush is not: the file is exactly
	 * header U U U OF[ OF] U U OF[ OF] OHe, as the reference writes it. */
	size_t len = 0;
	uint8_t *data = (uint8_t *) rt_test_read(obs, &len);
	assert_non_null(data);
	assert_int_equal(len, 8 + 10 * 12);
	uint64_t p0[2], p1[2];
	check_pair(data, 8 + 3 * 12, b.before[0], b.after[0], &p0[0], &p0[1]);
	check_pair(data, 8 + 3 * 12 + 24 + 2 * 12, b.before[1], b.after[1], &p1[0], &p1[1]);
	uint8_t want[8 + 10 * 12];
	memcpy(want, WEFT_OBS_MAGIC, WEFT_OBS_MAGIC_LEN);
	weft_store_u32(want + WEFT_OBS_MAGIC_LEN, WEFT_OBS_VERSION);
	size_t off = WEFT_OBS_HEADER_SIZE;
	off = put_event(want, off, "Utp", b.ev_clock[0]);
	off = put_event(want, off, "Utp", b.ev_clock[1]);
	off = put_event(want, off, "Utp", b.ev_clock[2]);
	off = put_event(want, off, "OF[", p0[0]);
	off = put_event(want, off, "OF]", p0[1]);
	off = put_event(want, off, "Utp", b.ev_clock[3]);
	off = put_event(want, off, "Utp", b.ev_clock[4]);
	off = put_event(want, off, "OF[", p1[0]);
	off = put_event(want, off, "OF]", p1[1]);
	off = put_event(want, off, "OHe", b.ev_clock[5]);
	assert_int_equal(off, sizeof want);
	assert_memory_equal(data, want, sizeof want);
	free(data);
	free(obs);
}

/* Events after the last ovni_flush are written, after its pair; a flush
 * right after another one writes the first one's pair. */
static void after_flush_body(struct body *b)
{
	ovni_thread_init(b->tid);
	emit_rec(b, "OHx");
	flush_rec(b, 0, NULL);
	emit_rec(b, "OHe");
	ovni_thread_free();
}

static void twice_body(struct body *b)
{
	ovni_thread_init(b->tid);
	emit_rec(b, "OHx");
	flush_rec(b, 0, NULL);
	flush_rec(b, 1, NULL);
	ovni_thread_free();
}

static void only_flush_body(struct body *b)
{
	ovni_thread_init(b->tid);
	flush_rec(b, 0, NULL);
	ovni_thread_free();
}

static void test_events_after_last_flush(void **st)
{
	(void) st;
	struct body b = {.fn = after_flush_body};
	char *obs = run(&b);
	size_t len = 0;
	uint8_t *data = (uint8_t *) rt_test_read(obs, &len);
	assert_non_null(data);
	assert_int_equal(len, 8 + 4 * 12);
	uint64_t t0, t1;
	check_pair(data, 8 + 12, b.before[0], b.after[0], &t0, &t1);
	uint8_t want[8 + 4 * 12];
	memcpy(want, data, WEFT_OBS_HEADER_SIZE);
	size_t off = WEFT_OBS_HEADER_SIZE;
	off = put_event(want, off, "OHx", b.ev_clock[0]);
	off = put_event(want, off, "OF[", t0);
	off = put_event(want, off, "OF]", t1);
	off = put_event(want, off, "OHe", b.ev_clock[1]);
	assert_memory_equal(data, want, sizeof want);
	free(data);
	free(obs);
}

static void test_two_flushes_then_free(void **st)
{
	(void) st;
	struct body b = {.fn = twice_body};
	char *obs = run(&b);
	struct rt_test_stream s;
	rt_test_stream_load(&s, obs);
	assert_int_equal(s.len, 8 + 3 * 12);
	assert_int_equal(s.nev, 3);
	assert_string_equal(s.ev[0].mcv, "OHx");
	assert_int_equal(s.ev[0].clock, b.ev_clock[0]);
	assert_string_equal(s.ev[1].mcv, "OF[");
	assert_string_equal(s.ev[2].mcv, "OF]");
	uint64_t t0, t1;
	check_pair(s.data, 8 + 12, b.before[0], b.after[0], &t0, &t1);
	rt_test_stream_free(&s);
	free(obs);
}

static void test_only_flush(void **st)
{
	(void) st;
	struct body b = {.fn = only_flush_body};
	char *obs = run(&b);
	/* Just the header, as the reference leaves it. */
	assert_int_equal(rt_test_file_size(obs), 8);
	free(obs);
}

/* Replays the events of the reference's v3/single-basic (OHx with a
 * 16-byte payload, 9 payload-less events, then ovni_flush and
 * ovni_thread_free): the stream.obs must be byte for byte the
 * reference's, with no final OF[/OF]. */
static void replay_body(struct body *b)
{
	ovni_thread_init(b->tid);
	ovni_add_cpu(0, 0);
	size_t off = WEFT_OBS_HEADER_SIZE;
	while (off + WEFT_EV_HEADER_SIZE <= b->replay_len) {
		const uint8_t *p = b->replay + off;
		struct ovni_ev ev = {0};
		char mcv[3] = {(char) p[WEFT_EV_OFF_MODEL], (char) p[WEFT_EV_OFF_CATEGORY],
			       (char) p[WEFT_EV_OFF_VALUE]};
		ovni_ev_set_mcv(&ev, mcv);
		ovni_ev_set_clock(&ev, weft_load_u64(p + WEFT_EV_OFF_CLOCK));
		size_t n = weft_ev_payload_size(p[WEFT_EV_OFF_FLAGS]);
		if (n > 0)
			ovni_payload_add(&ev, p + WEFT_EV_OFF_PAYLOAD, (int) n);
		ovni_ev_emit(&ev);
		off += WEFT_EV_HEADER_SIZE + n;
	}
	ovni_flush();
	ovni_thread_free();
}

static void test_replay_single_basic(void **st)
{
	(void) st;
	const char *dir = getenv("WEFT_CONFORMANCE_DIR");
	if (dir == NULL || dir[0] == '\0')
		dir = getenv("WEFT_CONFORMANCE_DIR_DEFAULT");
	char *ref = rt_test_path("%s/v3/single-basic/ovni/loom.vm/proc.17323/thread.17323/stream.obs",
				 dir != NULL ? dir : "");
	size_t ref_len = 0;
	uint8_t *ref_data = (uint8_t *) rt_test_read(ref, &ref_len);
	if (ref_data == NULL) {
		const char *ci = getenv("CI");
		fprintf(stderr, "conformance case not found: %s\n", ref);
		free(ref);
		if (ci != NULL && strcmp(ci, "true") == 0)
			fail();
		skip();
	}
	/* 10 events, the last an OHe, and no OF[/OF] (see its dump.txt). */
	assert_int_equal(ref_len, 144);
	struct body b = {.fn = replay_body, .replay = ref_data, .replay_len = ref_len};
	char *obs = run(&b);
	size_t len = 0;
	uint8_t *data = (uint8_t *) rt_test_read(obs, &len);
	assert_non_null(data);
	assert_int_equal(len, ref_len);
	assert_memory_equal(data, ref_data, ref_len);
	free(data);
	free(ref_data);
	free(ref);
	free(obs);
}

static void jumbo_body(struct body *b)
{
	ovni_thread_init(b->tid);
	for (int i = 0; i < 10; i++)
		emit_sized(i, 0); /* 120 bytes */
	uint8_t data[150];
	for (int j = 0; j < 150; j++)
		data[j] = (uint8_t) j;
	struct ovni_ev ev = {0};
	ovni_ev_set_mcv(&ev, "VYc");
	ovni_ev_set_clock(&ev, ovni_clock_now());
	ovni_ev_jumbo_emit(&ev, data, sizeof data); /* 166 bytes: does not fit */
	for (int i = 0; i < 5; i++)
		ovni_mark_push(3, i); /* 24 bytes: 166 + 24 + 3 * 24 = 262 > 256 */
	ovni_thread_free();
}

static void test_auto_jumbo_and_marks(void **st)
{
	(void) st;
	struct body b = {.bufsize = "256", .fn = jumbo_body};
	char *obs = run(&b);

	struct rt_test_stream s;
	rt_test_stream_load(&s, obs);
	static const char *want[] = {"Utp", "Utp", "Utp", "Utp", "Utp", "Utp", "Utp", "Utp", "Utp", "Utp",
				     "VYc", "OF[", "OF]", "OM[", "OM[", "OM[", "OF[", "OF]", "OM[", "OM["};
	assert_int_equal(s.nev, sizeof want / sizeof want[0]);
	for (size_t i = 0; i < s.nev; i++)
		assert_string_equal(s.ev[i].mcv, want[i]);
	struct rt_test_ev *j = &s.ev[10];
	assert_int_equal(j->flags, 0x13);
	assert_int_equal(j->payload_size, 150);
	for (int k = 0; k < 150; k++)
		assert_int_equal(j->payload[k], k);
	assert_true(j->clock <= s.ev[11].clock && s.ev[11].clock <= s.ev[12].clock);
	/* Mark payload: i64 value, then i32 type. */
	struct rt_test_ev *m = &s.ev[13];
	assert_int_equal(m->flags, 0x0b);
	static const uint8_t mark0[12] = {0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0};
	assert_memory_equal(m->payload, mark0, 12);
	assert_int_equal(s.ev[19].payload[0], 4);
	rt_test_stream_free(&s);
	free(obs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_auto_no_payload),
		cmocka_unit_test(test_auto_exact_fill),
		cmocka_unit_test(test_auto_mixed),
		cmocka_unit_test(test_auto_max_payload),
		cmocka_unit_test(test_explicit),
		cmocka_unit_test(test_events_after_last_flush),
		cmocka_unit_test(test_two_flushes_then_free),
		cmocka_unit_test(test_only_flush),
		cmocka_unit_test(test_replay_single_basic),
		cmocka_unit_test(test_auto_jumbo_and_marks),
	};
	return cmocka_run_group_tests(tests, rt_test_group_setup, rt_test_group_teardown);
}
