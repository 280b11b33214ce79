/* SPDX-License-Identifier: MIT */
/*
 * test_rt_bytes - the three example events of trace spec v3, produced
 * through the public API, must be on disk byte for byte; stream.json must
 * hold exactly the keys and values of a finished v3 thread stream (and the
 * initial one, exactly those of a running stream); an unordered region
 * written on purpose is stored in emit order.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <jansson.h>

#include "ovni.h"
#include "rt_test.h"
#include "weft_version.h"

#define APP 5
#define PID 4321
#define TID 4322
#define LOOM "node1.test"

/* Spec v3, "Normal events": OHe, no payload (12 bytes). */
static const uint8_t ev_ohe[] = {0x00, 0x4f, 0x48, 0x65, 0x01, 0xc5, 0xcf, 0x1d, 0x96, 0xd0, 0x12, 0x00};
/* OHx with i32 0, i32 -1, u64 0 (28 bytes). */
static const uint8_t ev_ohx[] = {0x0f, 0x4f, 0x48, 0x78, 0x58, 0xc1, 0xb0, 0xb5, 0x95, 0x43,
				 0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff,
				 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
/* Spec v3, "Jumbo events": VYc with 14 bytes of data (30 bytes). */
static const uint8_t ev_vyc[] = {0x13, 0x56, 0x59, 0x63, 0xeb, 0xc1, 0x4b, 0x1a, 0x96, 0xd0,
				 0x12, 0x00, 0x0e, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
				 0x74, 0x65, 0x73, 0x74, 0x74, 0x79, 0x70, 0x65, 0x31, 0x00};

struct body {
	char *initial_json; /* stream.json right after ovni_thread_init */
	char *json_path;
	int sizes[3];
};

static void write_trace(void *p)
{
	struct body *b = p;
	ovni_thread_init(TID);
	b->initial_json = rt_test_read(b->json_path, NULL);

	struct ovni_ev ev = {0};
	ovni_ev_set_mcv(&ev, "OHx");
	ovni_ev_set_clock(&ev, 0x00114395b5b0c158ull);
	int32_t cpu = 0, creator = -1;
	uint64_t tag = 0;
	ovni_payload_add(&ev, (const uint8_t *) &cpu, sizeof cpu);
	ovni_payload_add(&ev, (const uint8_t *) &creator, sizeof creator);
	ovni_payload_add(&ev, (const uint8_t *) &tag, sizeof tag);
	b->sizes[0] = ovni_ev_size(&ev);
	ovni_ev_emit(&ev);

	struct ovni_ev jev = {0};
	ovni_ev_set_mcv(&jev, "VYc");
	ovni_ev_set_clock(&jev, 0x0012d0961a4bc1ebull);
	uint8_t data[14] = {0x01, 0x00, 0x00, 0x00, 't', 'e', 's', 't', 't', 'y', 'p', 'e', '1', 0x00};
	ovni_ev_jumbo_emit(&jev, data, sizeof data);

	struct ovni_ev e = {0};
	ovni_ev_set_mcv(&e, "OHe");
	ovni_ev_set_clock(&e, 0x0012d0961dcfc501ull);
	b->sizes[1] = ovni_ev_size(&e);
	b->sizes[2] = ovni_payload_size(&ev);
	ovni_ev_emit(&e);
	ovni_thread_free();
}

static json_t *expected_meta(int finished)
{
	json_error_t err;
	/* weft.index_after: the default buffer, what an automatic flush
	 * may hold back (16 KiB) and its slack (rt/index.c) */
	json_int_t after = (json_int_t) (OVNI_MAX_EV_BUF + 16384 + sizeof(struct ovni_ev));
	json_t *doc = json_pack_ex(&err, 0, "{s:i, s:{s:{s:s, s:s}, s:s, s:i, s:i, s:s, s:i}, s:{s:s, s:I}}",
				   "version", 3, "ovni", "lib", "version", "1.14.0", "commit", OVNI_GIT_COMMIT,
				   "part", "thread", "tid", TID, "pid", PID, "loom", LOOM, "app_id", APP, "weft",
				   "version", WEFT_VERSION, "index_after", after);
	assert_non_null(doc);
	if (finished) {
		json_t *ovni = json_object_get(doc, "ovni");
		json_object_set_new(ovni, "require", json_pack("{s:s}", "ovni", "1.1.0"));
		json_object_set_new(ovni, "finished", json_integer(1));
	}
	return doc;
}

static void assert_json_text(const char *text, json_t *want)
{
	assert_non_null(text);
	json_error_t err;
	json_t *got = json_loads(text, 0, &err);
	assert_non_null(got);
	if (!json_equal(got, want)) {
		char *w = json_dumps(want, JSON_INDENT(4));
		fprintf(stderr, "stream.json differs.\ngot:\n%s\nwant:\n%s\n", text, w);
		free(w);
		fail();
	}
	json_decref(got);
	json_decref(want);
}

static void test_spec_examples(void **state)
{
	(void) state;
	char *dir = rt_test_mkdtemp();
	setenv("OVNI_TRACEDIR", dir, 1);
	unsetenv("OVNI_TMPDIR");
	unsetenv("WEFT_BUFSIZE");
	ovni_version_check();
	ovni_proc_init(APP, LOOM, PID);

	char *tdir = rt_test_path("%s/loom." LOOM "/proc.%d/thread.%d", dir, PID, TID);
	struct body b = {0};
	b.json_path = rt_test_path("%s/stream.json", tdir);
	rt_test_in_thread(write_trace, &b);
	ovni_proc_fini();

	assert_int_equal(b.sizes[0], 28);
	assert_int_equal(b.sizes[1], 12);
	assert_int_equal(b.sizes[2], 16);

	char *obs_path = rt_test_path("%s/stream.obs", tdir);
	size_t len = 0;
	uint8_t *obs = (uint8_t *) rt_test_read(obs_path, &len);
	assert_non_null(obs);
	assert_int_equal(len, 8 + sizeof ev_ohx + sizeof ev_vyc + sizeof ev_ohe);
	static const uint8_t header[8] = {'o', 'v', 'n', 'i', 0x01, 0x00, 0x00, 0x00};
	assert_memory_equal(obs, header, 8);
	assert_memory_equal(obs + 8, ev_ohx, sizeof ev_ohx);
	assert_memory_equal(obs + 8 + sizeof ev_ohx, ev_vyc, sizeof ev_vyc);
	assert_memory_equal(obs + 8 + sizeof ev_ohx + sizeof ev_vyc, ev_ohe, sizeof ev_ohe);

	assert_json_text(b.initial_json, expected_meta(0));
	char *final_json = rt_test_read(b.json_path, NULL);
	assert_json_text(final_json, expected_meta(1));
	/* Pretty-printed with a 4-space indent, like the reference. */
	assert_non_null(strstr(final_json, "{\n    \"version\": 3,\n    \"ovni\": {\n        \"lib\": {"));
	/* No index: the stream was written in one buffer (at
	 * ovni_thread_free), within weft.index_after (rt/index.c). */
	char *idx_path = rt_test_path("%s/stream.idx", tdir);
	assert_int_equal(access(idx_path, F_OK), -1);
	assert_int_equal(errno, ENOENT);
	free(idx_path);
	/* Exactly the two stream files, and no temporary file left. */
	assert_int_equal(rt_test_count_entries(tdir), 2);

	free(final_json);
	free(obs);
	free(obs_path);
	free(b.initial_json);
	free(b.json_path);
	free(tdir);
	rt_test_rm_rf(dir);
	free(dir);
}

static void test_version(void **state)
{
	(void) state;
	const char *v = NULL, *c = NULL;
	ovni_version_get(&v, &c);
	assert_string_equal(v, "1.14.0");
	assert_string_equal(c, OVNI_GIT_COMMIT);
	/* Older minors and any patch of our major are served. */
	ovni_version_check_str("1.0.0");
	ovni_version_check_str("1.14.99");
	ovni_version_check_str("1.2.3");
}

static void test_event_builders(void **state)
{
	(void) state;
	struct ovni_ev ev = {0};
	assert_int_equal(ovni_ev_size(&ev), 12);
	assert_int_equal(ovni_payload_size(&ev), 0);
	ovni_ev_set_clock(&ev, 123456789ull);
	assert_int_equal(ovni_ev_get_clock(&ev), 123456789ull);
	for (int want = 2; want <= 16; want++) {
		struct ovni_ev e = {0};
		uint8_t buf[16];
		for (int i = 0; i < 16; i++)
			buf[i] = (uint8_t) (i + 1);
		/* Built in two pieces: the size nibble accumulates. */
		ovni_payload_add(&e, buf, 2);
		if (want > 2)
			ovni_payload_add(&e, buf + 2, want - 2);
		assert_int_equal(e.header.flags, want - 1);
		assert_int_equal(ovni_payload_size(&e), want);
		assert_int_equal(ovni_ev_size(&e), 12 + want);
		assert_memory_equal(e.payload.u8, buf, (size_t) want);
	}
	uint64_t a = ovni_clock_now();
	uint64_t b = ovni_clock_now();
	assert_true(a > 0 && b >= a);
	assert_int_equal(ovni_thread_isready(), 0);
}

/* An unordered region written on purpose (clocks set with
 * ovni_ev_set_clock, some older than the newest stored), an older event
 * after it, and a clock value of ovni_clock_now emitted again after the
 * thread's own ovni_flush: all stored in emit order, as the reference
 * does (only what a signal handler causes is put back in place). */
struct unordered {
	char dir[4096];
	uint64_t t, c;
};

static void emit_at(const char *mcv, uint64_t clock)
{
	struct ovni_ev ev = {0};
	ovni_ev_set_mcv(&ev, mcv);
	ovni_ev_set_clock(&ev, clock);
	ovni_ev_emit(&ev);
}

static void unordered_proc(void *p)
{
	struct unordered *u = p;
	setenv("OVNI_TRACEDIR", u->dir, 1);
	unsetenv("WEFT_BUFSIZE");
	ovni_proc_init(APP, LOOM, PID);
	ovni_thread_init(TID);
	uint64_t t = ovni_clock_now();
	u->t = t;
	emit_at("OU[", t);
	emit_at("OB.", t + 2);
	emit_at("OB.", t + 1);
	emit_at("OB.", t + 3);
	emit_at("OU]", t + 4);
	emit_at("OB.", t - 5);
	uint64_t c = ovni_clock_now();
	u->c = c;
	emit_at("OB.", c);
	ovni_flush();
	emit_at("OB.", c);
	ovni_thread_free();
	ovni_proc_fini();
}

static void test_unordered_region(void **state)
{
	(void) state;
	char *dir = rt_test_mkdtemp();
	struct unordered u = {0};
	snprintf(u.dir, sizeof u.dir, "%s", dir);
	assert_true(rt_test_in_proc(unordered_proc, &u, sizeof u));
	char *obs_path = rt_test_path("%s/loom." LOOM "/proc.%d/thread.%d/stream.obs", dir, PID, TID);
	size_t len = 0;
	uint8_t *obs = (uint8_t *) rt_test_read(obs_path, &len);
	assert_non_null(obs);
	const char *mcv[] = {"OU[", "OB.", "OB.", "OB.", "OU]", "OB.", "OB.", "OF[", "OF]", "OB."};
	uint64_t t = u.t, c = u.c;
	const uint64_t clock[] = {t, t + 2, t + 1, t + 3, t + 4, t - 5, c, 0, 0, c};
	const size_t n = sizeof clock / sizeof clock[0];
	assert_int_equal(len, 8 + 12 * n);
	uint64_t t0 = 0, t1 = 0;
	for (size_t i = 0; i < n; i++) {
		const uint8_t *ev = obs + 8 + 12 * i;
		uint64_t got;
		memcpy(&got, ev + 4, sizeof got);
		assert_int_equal(ev[0], 0);
		assert_memory_equal(ev + 1, mcv[i], 3);
		if (i == 7)
			t0 = got;
		else if (i == 8)
			t1 = got;
		else
			assert_int_equal(got, clock[i]);
	}
	/* The pair of the flush: read after c, before the last emit. */
	assert_true(t0 > c && t1 >= t0);
	free(obs);
	free(obs_path);
	rt_test_rm_rf(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spec_examples),
		cmocka_unit_test(test_version),
		cmocka_unit_test(test_event_builders),
		cmocka_unit_test(test_unordered_region),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
