/* SPDX-License-Identifier: MIT */
/*
 * test_rt_sample - sampling (WEFT_SAMPLE_MS, weft_rt_sample_register,
 * weft_rt_sample_now; docs/runtime.md, "Sampling").
 *
 * periodic: four threads emit for 60 ms each with WEFT_SAMPLE_MS=1 and a
 *   16 KiB buffer (flushes), runs of events of one size and stretches of
 *   mixed sizes and jumbo events (the counting walks both ways). In each stream every sample adds up to what
 *   the stream holds before it: WCe is the number of events before it,
 *   WCb + WCu the bytes before it, WCf the OF[ before it, WCt the sum of
 *   the OF] - OF[ before it, WCl and WCx 0, WR0 (a registered counter:
 *   the thread's OB. events) the OB. before it; the CPU time grows. The
 *   number of samples is bounded by the thread's span (at most span/1 ms
 *   + 1) and from below by its busy stretches: every 1 ms deadline that
 *   falls inside a stretch of events less than 200 us apart gets its
 *   sample (sum over the stretches of floor((length - 200 us) / 1 ms),
 *   less one for the first period). That is the tolerance for a loaded
 *   2-core machine: a thread that is not scheduled emits nothing and
 *   records no sample, as documented, and the stream shows when.
 * now: weft_rt_sample_now() without WEFT_SAMPLE_MS records every counter,
 *   the two registered ones with their values, at once; cycles and
 *   instructions appear, or the one warning on stderr does; stream.json
 *   lists the registered counters; weft emu's thread.prv and weft sql's
 *   intervals hold the values exactly. `test_rt_sample keep DIR` writes
 *   that trace into DIR for tests/rt/sample_python.py.
 * now_late: a first weft_rt_sample_now after the buffer was written: the
 *   events written before are counted too (read back from stream.obs).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <jansson.h>

#include "ovni.h"
#include "rt_test.h"
#include "weft/rt.h"

#define NTHREADS 4
#define RUN_NS 60000000ull
#define PERIOD_NS 1000000ull
#define GAP_NS 200000ull
#define WARNING                                                                                                    \
	"libovni: warning: sampling: no cycle and instruction counters (perf_event_open: "

static void emit(const char *mcv, const void *payload, int size)
{
	struct ovni_ev ev = {0};
	ovni_ev_set_mcv(&ev, mcv);
	ovni_ev_set_clock(&ev, ovni_clock_now());
	if (size > 0)
		ovni_payload_add(&ev, payload, size);
	ovni_ev_emit(&ev);
}

static void emit_ohx(void)
{
	uint8_t pl[16] = {0};
	int32_t tid = -1;
	memcpy(pl + 4, &tid, sizeof tid);
	emit("OHx", pl, (int) sizeof pl);
}

/* ---- periodic ---- */

struct pchild {
	char dir[512];
	int pid;
	int tid[NTHREADS];
};

static _Thread_local uint64_t bursts;

static uint64_t count_bursts(void *arg)
{
	(void) arg;
	return bursts;
}

static void *periodic_thread(void *p)
{
	int *tid = p;
	*tid = (int) gettid();
	ovni_thread_init(*tid);
	emit_ohx();
	uint64_t t0 = ovni_clock_now();
	for (uint64_t i = 0; ovni_clock_now() - t0 < RUN_NS; i++) {
		/* counted first: the sample this emit may record follows it;
		 * runs of one size and stretches of mixed sizes (payloads of
		 * 4 and 8 bytes, a jumbo event now and then) */
		static const uint8_t pl[40] = {1, 2, 3, 4, 5, 6, 7, 8};
		bursts++;
		if (i % 1000 == 999) {
			struct ovni_ev ev = {0};
			ovni_ev_set_mcv(&ev, "OB.");
			ovni_ev_set_clock(&ev, ovni_clock_now());
			ovni_ev_jumbo_emit(&ev, pl, (uint32_t) (i % 40));
		} else {
			emit("OB.", pl, i % 50 < 40 ? 0 : i % 2 == 0 ? 4 : 8);
		}
		if (i % 5000 == 4999)
			ovni_flush();
	}
	emit("OHe", NULL, 0);
	ovni_thread_free();
	return NULL;
}

static void periodic_main(void *p)
{
	struct pchild *ch = p;
	ch->pid = (int) getpid();
	setenv("OVNI_TRACEDIR", ch->dir, 1);
	setenv("WEFT_SAMPLE_MS", "1", 1);
	setenv("WEFT_BUFSIZE", "16384", 1);
	if (weft_rt_sample_register("bursts", "events", count_bursts, NULL) != 0)
		_exit(3);
	ovni_proc_init(1, "smp", ch->pid);
	pthread_t th[NTHREADS];
	for (int i = 0; i < NTHREADS; i++)
		if (pthread_create(&th[i], NULL, periodic_thread, &ch->tid[i]) != 0)
			_exit(4);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	ovni_proc_fini();
}

static uint64_t u64_of(const struct rt_test_ev *e)
{
	assert_int_equal(e->payload_size, 8);
	return weft_load_u64(e->payload);
}

static int is_flush(const struct rt_test_ev *e)
{
	return strcmp(e->mcv, "OF[") == 0 || strcmp(e->mcv, "OF]") == 0;
}

/* The sample that starts at event i: its events' values by MCV (the
 * OF[/OF] of a flush that happened in the middle skipped). */
static void sample_at(const struct rt_test_stream *st, size_t i, const char *mcv, uint64_t *v, int *found)
{
	*found = 0;
	for (size_t k = i; k < st->nev; k++) {
		const struct rt_test_ev *e = &st->ev[k];
		if (k > i && strcmp(e->mcv, "WCe") == 0)
			return;
		if (e->mcv[0] != 'W' && !is_flush(e))
			return;
		if (strcmp(e->mcv, mcv) == 0) {
			*v = u64_of(e);
			*found = 1;
			return;
		}
	}
}

static uint64_t sample_get(const struct rt_test_stream *st, size_t i, const char *mcv)
{
	uint64_t v = 0;
	int found;
	sample_at(st, i, mcv, &v, &found);
	if (!found)
		fail_msg("the sample at event %zu has no %s", i, mcv);
	return v;
}

static void check_periodic_stream(const char *obs)
{
	struct rt_test_stream st;
	rt_test_stream_load(&st, obs);
	uint64_t nbursts = 0, nflush = 0, flush_sum = 0, open_at = 0, cpu = 0;
	size_t nsamples = 0;
	/* the program's events: busy stretches and span */
	uint64_t first = 0, last = 0, run_start = 0, prev = 0, lower = 0;
	int seen = 0;
	for (size_t i = 0; i < st.nev; i++) {
		const struct rt_test_ev *e = &st.ev[i];
		if (strcmp(e->mcv, "WCe") == 0) {
			nsamples++;
			assert_int_equal(sample_get(&st, i, "WCe"), i);
			uint64_t bytes = sample_get(&st, i, "WCb") + sample_get(&st, i, "WCu");
			assert_int_equal(bytes, e->offset - WEFT_OBS_HEADER_SIZE);
			assert_int_equal(sample_get(&st, i, "WCf"), nflush);
			assert_int_equal(sample_get(&st, i, "WCt"), flush_sum);
			assert_int_equal(sample_get(&st, i, "WCl"), 0);
			assert_int_equal(sample_get(&st, i, "WCx"), 0);
			assert_int_equal(sample_get(&st, i, "WR0"), nbursts);
			uint64_t c = sample_get(&st, i, "WCc");
			assert_true(c >= cpu && c > 0);
			cpu = c;
			continue;
		}
		if (strcmp(e->mcv, "OF[") == 0) {
			nflush++;
			open_at = e->clock;
		} else if (strcmp(e->mcv, "OF]") == 0) {
			flush_sum += e->clock - open_at;
		} else if (e->mcv[0] == 'O') {
			if (strcmp(e->mcv, "OB.") == 0)
				nbursts++;
			if (!seen) {
				first = run_start = e->clock;
				seen = 1;
			} else if (e->clock - prev > GAP_NS) {
				if (prev - run_start > GAP_NS)
					lower += (prev - run_start - GAP_NS) / PERIOD_NS;
				run_start = e->clock;
			}
			prev = last = e->clock;
		}
	}
	if (prev - run_start > GAP_NS)
		lower += (prev - run_start - GAP_NS) / PERIOD_NS;
	lower = lower > 0 ? lower - 1 : 0;
	uint64_t upper = (last - first) / PERIOD_NS + 1;
	print_message("%s: %zu samples over %.1f ms (busy-stretch bound %llu, span bound %llu)\n", obs, nsamples,
		      (double) (last - first) / 1e6, (unsigned long long) lower, (unsigned long long) upper);
	assert_true(nsamples >= lower);
	assert_true(nsamples <= upper);
	assert_true(nsamples >= 1);
	assert_true(nflush > 0);
	rt_test_stream_free(&st);
}

static void test_periodic(void **s)
{
	(void) s;
	struct pchild ch;
	memset(&ch, 0, sizeof ch);
	snprintf(ch.dir, sizeof ch.dir, "%s/periodic", rt_test_dir);
	assert_true(rt_test_in_proc(periodic_main, &ch, sizeof ch));
	for (int i = 0; i < NTHREADS; i++) {
		char *obs = rt_test_path("%s/loom.smp/proc.%d/thread.%d/stream.obs", ch.dir, ch.pid, ch.tid[i]);
		check_periodic_stream(obs);
		free(obs);
		char *js = rt_test_path("%s/loom.smp/proc.%d/thread.%d/stream.json", ch.dir, ch.pid, ch.tid[i]);
		json_error_t jerr;
		json_t *doc = json_load_file(js, 0, &jerr);
		assert_non_null(doc);
		json_t *smp = json_object_get(json_object_get(doc, "weft"), "sample");
		assert_int_equal(json_integer_value(json_object_get(smp, "period_ms")), 1);
		assert_string_equal(json_string_value(json_object_get(
					    json_object_get(json_object_get(doc, "ovni"), "require"), "sample")),
				    "1.0.0");
		json_decref(doc);
		free(js);
	}
}

/* ---- weft_rt_sample_now ---- */

static uint64_t value_of(void *arg)
{
	return *(uint64_t *) arg;
}

struct nchild {
	char dir[512];
};

static void now_main(void *p)
{
	struct nchild *ch = p;
	static uint64_t alpha = 7, beta = 123456789012ull;
	int pid = (int) getpid();
	setenv("OVNI_TRACEDIR", ch->dir, 1);
	unsetenv("WEFT_SAMPLE_MS");
	if (weft_rt_sample_register("alpha", "items", value_of, &alpha) != 0
	    || weft_rt_sample_register("beta", "bytes", value_of, &beta) != 1)
		_exit(3);
	ovni_proc_init(1, "now", pid);
	ovni_thread_init(pid);
	ovni_add_cpu(0, 0);
	emit_ohx();
	for (int i = 0; i < 3; i++)
		emit("OB.", NULL, 0);
	weft_rt_sample_now();
	emit("OB.", NULL, 0);
	alpha = 8;
	weft_rt_sample_now();
	emit("OHe", NULL, 0);
	ovni_thread_free();
	ovni_proc_fini();
}

/* Writes the sample_now trace into dir; *hw: whether the hardware
 * counters were there (else the warning was checked). */
static void write_now_trace(const char *dir, int *hw)
{
	struct nchild ch;
	memset(&ch, 0, sizeof ch);
	snprintf(ch.dir, sizeof ch.dir, "%s", dir);
	char *err = NULL;
	int status = rt_test_in_child(now_main, &ch, &err);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	*hw = strstr(err, WARNING) == NULL;
	if (*hw) {
		assert_string_equal(err, "");
	} else {
		/* one line, once */
		assert_true(strncmp(err, WARNING, strlen(WARNING)) == 0);
		assert_non_null(strstr(err, "): the samples go without them\n"));
		assert_int_equal(strchr(err, '\n') - err + 1, strlen(err));
	}
	free(err);
}

static void test_now(void **s)
{
	(void) s;
	char *dir = rt_test_path("%s/now", rt_test_dir);
	int hw;
	write_now_trace(dir, &hw);
	char *tdir = rt_test_path("%s/loom.now", dir);
	char *obs = NULL, *js = NULL;
	/* the only process and thread */
	char *cmd = rt_test_path("ls -d %s/proc.*/thread.*", tdir);
	FILE *ls = popen(cmd, "r");
	char line[1024];
	assert_non_null(fgets(line, sizeof line, ls));
	pclose(ls);
	line[strcspn(line, "\n")] = '\0';
	obs = rt_test_path("%s/stream.obs", line);
	js = rt_test_path("%s/stream.json", line);

	struct rt_test_stream st;
	rt_test_stream_load(&st, obs);
	const char *hwpart = hw ? " WCy WCi" : "";
	char want[512];
	snprintf(want, sizeof want,
		 "OHx OB. OB. OB. WCe WCb WCu WCf WCt WCl WCx WCc%s WR0 WR1 OB. WCe WCb WCu WCf WCt WCl WCx WCc%s WR0 "
		 "WR1 OHe",
		 hwpart, hwpart);
	char got[512] = "";
	for (size_t i = 0; i < st.nev; i++) {
		strcat(got, i > 0 ? " " : "");
		strcat(got, st.ev[i].mcv);
	}
	assert_string_equal(got, want);
	size_t per = hw ? 12 : 10; /* events of one sample */
	size_t second = 4 + per + 1;
	/* the first sample: 4 events, 28 + 3 * 12 bytes, all in the buffer */
	assert_int_equal(sample_get(&st, 4, "WCe"), 4);
	assert_int_equal(sample_get(&st, 4, "WCb"), 0);
	assert_int_equal(sample_get(&st, 4, "WCu"), 64);
	assert_int_equal(sample_get(&st, 4, "WCf"), 0);
	assert_int_equal(sample_get(&st, 4, "WCt"), 0);
	assert_int_equal(sample_get(&st, 4, "WR0"), 7);
	assert_int_equal(sample_get(&st, 4, "WR1"), 123456789012ull);
	assert_int_equal(sample_get(&st, second, "WCe"), second);
	assert_int_equal(sample_get(&st, second, "WCu"), 64 + per * 20 + 12);
	assert_int_equal(sample_get(&st, second, "WR0"), 8);
	assert_int_equal(sample_get(&st, second, "WR1"), 123456789012ull);
	/* all the events of a sample carry one clock, the newest stored */
	for (size_t i = 4; i < 4 + per; i++)
		assert_int_equal(st.ev[i].clock, st.ev[4].clock);
	assert_true(st.ev[4].clock >= st.ev[3].clock);
	uint64_t first_ev = st.ev[0].clock, c1 = st.ev[4].clock, c2 = st.ev[second].clock;
	rt_test_stream_free(&st);

	json_error_t jerr;
	json_t *doc = json_load_file(js, 0, &jerr);
	assert_non_null(doc);
	char *text = json_dumps(json_object_get(json_object_get(doc, "weft"), "sample"), JSON_COMPACT | JSON_SORT_KEYS);
	snprintf(want, sizeof want,
		 "{\"counters\":[{\"name\":\"alpha\",\"unit\":\"items\"},{\"name\":\"beta\",\"unit\":\"bytes\"}],"
		 "\"hardware\":%s,\"period_ms\":0}",
		 hw ? "true" : "false");
	assert_string_equal(text, want);
	free(text);
	json_decref(doc);

	const char *bin = getenv("WEFT_BIN");
	if (bin == NULL || access(bin, X_OK) != 0) {
		print_message("WEFT_BIN is unset: the outputs are not checked\n");
	} else {
		/* Paraver: the records of types 1300 (events), 1310 and 1311
		 * (registered), at the samples' times */
		char *run = rt_test_path("timeout 60 '%s' emu -q '%s' >/dev/null 2>&1", bin, dir);
		assert_int_equal(system(run), 0);
		free(run);
		char *prv = rt_test_path("%s/thread.prv", dir);
		FILE *f = fopen(prv, "r");
		assert_non_null(f);
		char recs[1024] = "";
		char l2[4096];
		while (fgets(l2, sizeof l2, f) != NULL) {
			unsigned long long t;
			int n = 0;
			if (sscanf(l2, "2:%*d:%*d:%*d:%*d:%llu:%n", &t, &n) != 1 || n == 0)
				continue;
			for (char *q = l2 + n; *q != '\0' && *q != '\n';) {
				unsigned long long ty, v;
				int m = 0;
				if (sscanf(q, "%llu:%llu%n", &ty, &v, &m) != 2)
					break;
				if (ty == 1300 || ty == 1310 || ty == 1311) {
					char one[96];
					snprintf(one, sizeof one, "%llu@%llu=%llu ", ty, t, v);
					strcat(recs, one);
				}
				q += m;
				if (*q == ':')
					q++;
			}
		}
		fclose(f);
		free(prv);
		unsigned long long r1 = c1 - first_ev, r2 = c2 - first_ev;
		snprintf(want, sizeof want, "1300@%llu=4 1310@%llu=7 1311@%llu=123456789012 1300@%llu=%zu 1310@%llu=8 ", r1,
			 r1, r1, r2, second, r2);
		assert_string_equal(recs, want);
		/* SQL: the thread intervals of the sample channels */
		char *q = rt_test_path("timeout 60 '%s' sql '%s' \"select c.name, i.value from interval i join channel c "
				       "on c.id = i.channel where i.view = 'thread' and c.name in ('sample.events', "
				       "'sample.registered0', 'sample.registered1') order by c.id, i.start\" 2>&1",
				       bin, dir);
		FILE *p = popen(q, "r");
		free(q);
		char out[2048] = "";
		size_t n = fread(out, 1, sizeof out - 1, p);
		out[n] = '\0';
		assert_int_equal(pclose(p), 0);
		snprintf(want, sizeof want,
			 "name                       value\n"
			 "------------------  ------------\n"
			 "sample.events                  4\n"
			 "sample.events       %12zu\n"
			 "sample.registered0             7\n"
			 "sample.registered0             8\n"
			 "sample.registered1  123456789012\n",
			 second);
		assert_string_equal(out, want);
	}
	free(obs);
	free(js);
	free(cmd);
	free(tdir);
	free(dir);
}

/* ---- a first weft_rt_sample_now after the buffer was written ---- */

struct lchild {
	char dir[512];
	int pid;
};

static void late_main(void *p)
{
	struct lchild *ch = p;
	ch->pid = (int) getpid();
	setenv("OVNI_TRACEDIR", ch->dir, 1);
	unsetenv("WEFT_SAMPLE_MS");
	ovni_proc_init(1, "late", ch->pid);
	ovni_thread_init(ch->pid);
	emit_ohx();
	for (int i = 0; i < 3; i++)
		emit("OB.", NULL, 0);
	ovni_flush(); /* writes the four events; OF[ OF] in the buffer */
	for (int i = 0; i < 2; i++)
		emit("OB.", NULL, 0);
	weft_rt_sample_now();
	emit("OHe", NULL, 0);
	ovni_thread_free();
	ovni_proc_fini();
}

static void test_now_late(void **s)
{
	(void) s;
	struct lchild ch;
	memset(&ch, 0, sizeof ch);
	snprintf(ch.dir, sizeof ch.dir, "%s/late", rt_test_dir);
	assert_true(rt_test_in_proc(late_main, &ch, sizeof ch));
	char *obs = rt_test_path("%s/loom.late/proc.%d/thread.%d/stream.obs", ch.dir, ch.pid, ch.pid);
	struct rt_test_stream st;
	rt_test_stream_load(&st, obs);
	assert_true(st.nev > 8);
	assert_string_equal(st.ev[8].mcv, "WCe");
	/* the four events written before counting started are counted */
	assert_int_equal(sample_get(&st, 8, "WCe"), 8);
	assert_int_equal(sample_get(&st, 8, "WCb"), 28 + 3 * 12);
	assert_int_equal(sample_get(&st, 8, "WCu"), 2 * 12 + 2 * 12);
	assert_int_equal(sample_get(&st, 8, "WCf"), 1);
	assert_string_equal(st.ev[4].mcv, "OF[");
	assert_string_equal(st.ev[5].mcv, "OF]");
	assert_int_equal(sample_get(&st, 8, "WCt"), st.ev[5].clock - st.ev[4].clock);
	rt_test_stream_free(&st);
	free(obs);
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "keep") == 0) {
		/* tests/rt/sample_python.py: the sample_now trace into argv[2] */
		int hw;
		write_now_trace(argv[2], &hw);
		printf("%s\n", hw ? "hardware" : "no hardware");
		return 0;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_now),
		cmocka_unit_test(test_now_late),
		cmocka_unit_test(test_periodic),
	};
	return cmocka_run_group_tests(tests, rt_test_group_setup, rt_test_group_teardown);
}
