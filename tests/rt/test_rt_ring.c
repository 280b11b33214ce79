/* SPDX-License-Identifier: MIT */
/*
 * test_rt_ring - the flight recorder (WEFT_RING; docs/runtime.md, "Flight
 * recorder").
 *
 * Each case is a forked process (the environment is read once per
 * process) whose threads emit far more than the ring: numbered marks
 * (OM=, value = sequence number) and, now and then, jumbo events of
 * 100 B to 70 KB (some larger than the ring) whose data starts with the
 * sequence number. Every event's clock and size is recorded in memory
 * shared with the parent, with the points where the ring was written
 * (ovni_flush with WEFT_RING_FLUSH=on, a WEFT_RING_SIGNAL dump, the end).
 * The parent computes what each stream must hold: at each write, the
 * longest suffix of the events not yet written whose size fits the ring,
 * followed by the OF[/OF] pair for a flush or a dump; the events before
 * that suffix form one lost run [smallest clock, largest clock, events,
 * bytes]. It asserts stream.obs event by event (sequence numbers and
 * clocks), weft.ring of stream.json entry by entry, and that `weft check`
 * accepts the trace.
 *
 * Cases: ring sizes 4K (jumbo events of 8K+ never fit), 64K and 1M, three
 * threads each; WEFT_RING_FLUSH=on with ovni_flush every few thousand
 * events (several runs) and off (ovni_flush then writes nothing); a
 * SIGUSR2 dump in the middle of a run with WEFT_RING_SIGNAL=USR2, after
 * which the threads keep tracing; bad values of the variables refused
 * with their messages. With the argument "crash": WEFT_CRASH=flush and a
 * ring, a process that aborts leaves the ring and weft.ring with the
 * losses of that last write (a ctest of its own, nosan like test_rt_crash).
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <jansson.h>

#include "ovni.h"
#include "rt_test.h"

#define MAX_THREADS 3
#define MAX_REC 130000
#define MAX_WRITES 64
#define TID0 9100
#define MARK_TYPE 1

struct rec {
	uint64_t clock;
	uint32_t size; /* bytes in the stream */
	uint32_t jumbo;
};

/* A write of the ring: after rec[end - 1], with an OF[/OF] pair or not. */
struct wr {
	long end;
	int pair;
};

struct thr {
	long nrec;
	int nwr;
	struct wr wr[MAX_WRITES];
	struct rec rec[MAX_REC];
};

struct shared {
	int nthreads;
	long nevents;      /* per thread */
	long flush_every;  /* ovni_flush every so many events (0: never) */
	int ring_flush;    /* WEFT_RING_FLUSH=on */
	int use_signal;    /* raise SIGUSR2 after half the events */
	long abort_at;     /* crash case: abort() after so many events */
	char ring[16];     /* WEFT_RING */
	int pid;
	struct thr t[MAX_THREADS];
};

static struct shared *sh;
static pthread_barrier_t barrier;

/* Jumbo data sizes, in turn (the event is 16 bytes more). */
static const uint32_t jumbo_sizes[] = {100, 3000, 9000, 70000};

static void emit_one(struct thr *t, long i)
{
	struct ovni_ev ev;
	memset(&ev, 0, sizeof ev);
	uint64_t clock = ovni_clock_now();
	int64_t value = i;
	int32_t type = MARK_TYPE;
	struct rec *r = &t->rec[t->nrec];
	if (i % 997 == 500) {
		uint32_t n = jumbo_sizes[(i / 997) % 4];
		ovni_ev_set_mcv(&ev, "OB.");
		ovni_ev_set_clock(&ev, clock);
		uint8_t *d = malloc(n);
		memset(d, 0, n);
		memcpy(d, &value, sizeof value);
		memcpy(d + sizeof value, &type, sizeof type);
		ovni_ev_jumbo_emit(&ev, d, n);
		free(d);
		r->size = 16u + n;
		r->jumbo = 1;
	} else {
		ovni_ev_set_mcv(&ev, "OM=");
		ovni_ev_set_clock(&ev, clock);
		uint8_t payload[12];
		memcpy(payload, &value, sizeof value);
		memcpy(payload + sizeof value, &type, sizeof type);
		ovni_payload_add(&ev, payload, (int) sizeof payload);
		ovni_ev_emit(&ev);
		r->size = 24;
		r->jumbo = 0;
	}
	r->clock = clock;
	t->nrec++;
}

static void note_write(struct thr *t, int pair)
{
	t->wr[t->nwr].end = t->nrec;
	t->wr[t->nwr].pair = pair;
	t->nwr++;
}

static void *worker(void *p)
{
	int k = (int) (intptr_t) p;
	struct thr *t = &sh->t[k];
	ovni_thread_init(TID0 + k);
	ovni_thread_require("ovni", "1.1.0");
	ovni_mark_type(MARK_TYPE, 0, "sequence");
	if (k == 0)
		ovni_add_cpu(0, 0);
	for (long i = 0; i < sh->nevents; i++) {
		if (sh->use_signal && i == sh->nevents / 2) {
			pthread_barrier_wait(&barrier);
			if (k == 0)
				raise(SIGUSR2);
			pthread_barrier_wait(&barrier);
		}
		emit_one(t, i);
		/* A dump happens in the first emit after the signal. */
		if (sh->use_signal && i == sh->nevents / 2)
			note_write(t, 1);
		if (sh->abort_at > 0 && i + 1 == sh->abort_at) {
			note_write(t, 0);
			abort();
		}
		if (sh->flush_every > 0 && (i + 1) % sh->flush_every == 0) {
			ovni_flush();
			if (sh->ring_flush)
				note_write(t, 1);
		}
	}
	ovni_thread_free();
	note_write(t, 0);
	return NULL;
}

static void child(void *arg)
{
	sh = arg;
	sh->pid = (int) getpid();
	setenv("WEFT_RING", sh->ring, 1);
	if (sh->ring_flush)
		setenv("WEFT_RING_FLUSH", "on", 1);
	if (sh->use_signal)
		setenv("WEFT_RING_SIGNAL", "USR2", 1);
	if (sh->abort_at > 0)
		setenv("WEFT_CRASH", "flush", 1);
	ovni_proc_init(1, "ring", sh->pid);
	pthread_barrier_init(&barrier, NULL, (unsigned) sh->nthreads);
	pthread_t th[MAX_THREADS];
	for (int k = 0; k < sh->nthreads; k++)
		pthread_create(&th[k], NULL, worker, (void *) (intptr_t) k);
	for (int k = 0; k < sh->nthreads; k++)
		pthread_join(th[k], NULL);
	ovni_proc_fini();
}

/* ---- the parent's model ---- */

struct run {
	uint64_t c0, c1, n, b;
	long at; /* the index in the stream of the first event written after it */
};

/* One expected event: index in rec[], or -1 for OF[ and -2 for OF]. */
struct expect {
	long *ev;
	long nev;
	struct run runs[MAX_WRITES];
	int nruns;
	uint64_t lost_n, lost_b;
};

static void model(const struct thr *t, size_t size, struct expect *x)
{
	memset(x, 0, sizeof *x);
	x->ev = malloc((size_t) (t->nrec + 2 * MAX_WRITES) * sizeof *x->ev);
	long start = 0;
	for (int w = 0; w < t->nwr; w++) {
		long end = t->wr[w].end;
		long j = end;
		size_t total = 0;
		while (j > start && total + t->rec[j - 1].size <= size)
			total += t->rec[--j].size;
		if (j > start) {
			struct run *r = &x->runs[x->nruns++];
			r->c0 = UINT64_MAX;
			for (long i = start; i < j; i++) {
				uint64_t c = t->rec[i].clock;
				r->c0 = c < r->c0 ? c : r->c0;
				r->c1 = c > r->c1 ? c : r->c1;
				r->n++;
				r->b += t->rec[i].size;
			}
			x->lost_n += r->n;
			x->lost_b += r->b;
			r->at = x->nev;
		}
		for (long i = j; i < end; i++)
			x->ev[x->nev++] = i;
		if (t->wr[w].pair) {
			x->ev[x->nev++] = -1;
			x->ev[x->nev++] = -2;
		}
		start = end;
	}
}

static uint64_t jint(json_t *v)
{
	assert_true(json_is_integer(v));
	return (uint64_t) json_integer_value(v);
}

static void check_thread(const char *trace, const struct shared *s, int k, size_t size, int cut)
{
	const struct thr *t = &s->t[k];
	struct expect x;
	model(t, size, &x);
	char *dir = rt_test_path("%s/loom.ring/proc.%d/thread.%d", trace, s->pid, TID0 + k);
	char *obs = rt_test_path("%s/stream.obs", dir);
	char *json = rt_test_path("%s/stream.json", dir);
	struct rt_test_stream st;
	rt_test_stream_load(&st, obs);
	assert_int_equal(st.nev, x.nev);
	for (size_t i = 0; i < st.nev; i++) {
		const struct rt_test_ev *e = &st.ev[i];
		long want = x.ev[i];
		if (want < 0) {
			assert_string_equal(e->mcv, want == -1 ? "OF[" : "OF]");
			continue;
		}
		const struct rec *r = &t->rec[want];
		int64_t value;
		memcpy(&value, e->payload, sizeof value);
		if (value != want || e->clock != r->clock)
			fail_msg("thread %d, event %zu: value %" PRId64 " clock %" PRIu64 ", expected %ld clock %" PRIu64,
				 k, i, value, e->clock, want, r->clock);
		assert_string_equal(e->mcv, r->jumbo ? "OB." : "OM=");
	}
	json_error_t err;
	json_t *doc = json_load_file(json, 0, &err);
	assert_non_null(doc);
	json_t *ring = json_object_get(json_object_get(doc, "weft"), "ring");
	assert_non_null(ring);
	assert_int_equal(jint(json_object_get(ring, "size")), size);
	assert_int_equal(jint(json_object_get(ring, "lost_events")), x.lost_n);
	assert_int_equal(jint(json_object_get(ring, "lost_bytes")), x.lost_b);
	json_t *lost = json_object_get(ring, "lost");
	assert_true(json_is_array(lost));
	assert_int_equal(json_array_size(lost), (size_t) x.nruns);
	for (int i = 0; i < x.nruns; i++) {
		json_t *e = json_array_get(lost, (size_t) i);
		assert_int_equal(json_array_size(e), 5);
		assert_int_equal(jint(json_array_get(e, 0)), x.runs[i].c0);
		assert_int_equal(jint(json_array_get(e, 1)), x.runs[i].c1);
		assert_int_equal(jint(json_array_get(e, 2)), x.runs[i].n);
		assert_int_equal(jint(json_array_get(e, 3)), x.runs[i].b);
		/* where it lies: the offset of the first event written after it,
		 * or the file's end */
		assert_int_equal(jint(json_array_get(e, 4)), (size_t) x.runs[i].at < st.nev
				 ? st.ev[x.runs[i].at].offset : st.len);
	}
	json_t *fin = json_object_get(json_object_get(doc, "ovni"), "finished");
	json_t *cutv = json_object_get(json_object_get(doc, "weft"), "cut");
	if (cut) {
		assert_null(fin);
		assert_non_null(cutv);
	} else {
		assert_int_equal(jint(fin), 1);
		assert_null(cutv);
	}
	json_decref(doc);
	rt_test_stream_free(&st);
	free(x.ev);
	free(dir);
	free(obs);
	free(json);
}

/* `weft check` on the trace: its exit status (-1 if WEFT_BIN is unset). */
static int weft_check(const char *trace)
{
	const char *bin = getenv("WEFT_BIN");
	if (bin == NULL || access(bin, X_OK) != 0)
		return -1;
	char *cmd = rt_test_path("'%s' check '%s' 2>&1", bin, trace);
	FILE *p = popen(cmd, "r");
	free(cmd);
	assert_non_null(p);
	char out[4096];
	size_t n = fread(out, 1, sizeof out - 1, p);
	out[n] = '\0';
	int status = pclose(p);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fprintf(stderr, "%s", out);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* stream.idx of each thread is what `weft index` builds from the stream:
 * one entry for the first event and one for each OF[ (each write by a
 * flush or the signal); a thread written in one write has none (created
 * at the second write, rt/index.c), and `weft index` builds its one entry. */
static void check_index(const char *trace, const struct shared *s)
{
	const char *bin = getenv("WEFT_BIN");
	if (bin == NULL || access(bin, X_OK) != 0)
		return;
	char *idx[MAX_THREADS];
	size_t len[MAX_THREADS];
	char *data[MAX_THREADS];
	for (int k = 0; k < s->nthreads; k++) {
		idx[k] = rt_test_path("%s/loom.ring/proc.%d/thread.%d/stream.idx", trace, s->pid, TID0 + k);
		int pairs = 0;
		for (int w = 0; w < s->t[k].nwr; w++)
			pairs += s->t[k].wr[w].pair;
		if (s->t[k].nwr < 2) {
			assert_int_equal(access(idx[k], F_OK), -1);
			data[k] = NULL;
			len[k] = 16u + 16u * (size_t) (1 + pairs);
			continue;
		}
		data[k] = rt_test_read(idx[k], &len[k]);
		assert_non_null(data[k]);
		assert_int_equal(len[k], 16u + 16u * (size_t) (1 + pairs));
	}
	char *cmd = rt_test_path("'%s' index -q '%s' >/dev/null 2>&1", bin, trace);
	assert_int_equal(system(cmd), 0);
	free(cmd);
	for (int k = 0; k < s->nthreads; k++) {
		size_t n;
		char *again = rt_test_read(idx[k], &n);
		assert_non_null(again);
		assert_int_equal(n, len[k]);
		if (data[k] != NULL)
			assert_memory_equal(again, data[k], n);
		free(again);
		free(data[k]);
		free(idx[k]);
	}
}

/* Runs a case; returns the trace directory (to remove). */
static void run_case(const char *ring, size_t size, int nthreads, long nevents, long flush_every, int ring_flush,
		     int use_signal)
{
	struct shared *s = calloc(1, sizeof *s);
	assert_non_null(s);
	snprintf(s->ring, sizeof s->ring, "%s", ring);
	s->nthreads = nthreads;
	s->nevents = nevents;
	s->flush_every = flush_every;
	s->ring_flush = ring_flush;
	s->use_signal = use_signal;
	char *trace = rt_test_mkdtemp();
	setenv("OVNI_TRACEDIR", trace, 1);
	int ok = rt_test_in_proc(child, s, sizeof *s);
	if (ok) {
		for (int k = 0; k < nthreads; k++)
			check_thread(trace, s, k, size, 0);
		int rc = weft_check(trace);
		if (rc != -1)
			assert_int_equal(rc, 0);
		check_index(trace, s);
	}
	rt_test_rm_rf(trace);
	free(trace);
	free(s);
	assert_true(ok);
}

static void test_ring_4k(void **state)
{
	(void) state;
	run_case("4K", 4096, 3, 20000, 0, 0, 0);
}

static void test_ring_64k(void **state)
{
	(void) state;
	run_case("64k", 65536, 3, 30000, 0, 0, 0);
}

static void test_ring_1m(void **state)
{
	(void) state;
	run_case("1M", 1048576, 3, 120000, 0, 0, 0);
}

static void test_ring_flush_on(void **state)
{
	(void) state;
	run_case("4K", 4096, 2, 20000, 3000, 1, 0);
	run_case("65536", 65536, 2, 30000, 7000, 1, 0);
}

static void test_ring_flush_off(void **state)
{
	(void) state;
	/* ovni_flush without WEFT_RING_FLUSH=on writes nothing. */
	run_case("4K", 4096, 2, 20000, 3000, 0, 0);
}

static void test_ring_signal(void **state)
{
	(void) state;
	run_case("4K", 4096, 2, 20000, 0, 0, 1);
	run_case("64K", 65536, 3, 30000, 0, 0, 1);
}

/* ---- bad values ---- */

static const char *bad_env_name;
static const char *bad_env_value;

static void bad_child(void *arg)
{
	(void) arg;
	setenv(bad_env_name, bad_env_value, 1);
	if (strcmp(bad_env_name, "WEFT_RING") != 0)
		setenv("WEFT_RING", "4K", 1);
	if (strcmp(bad_env_name, "WEFT_FLUSH_MS") == 0)
		unsetenv("WEFT_RING_SIGNAL");
	ovni_proc_init(1, "ring", (int) getpid());
}

static void expect_refused(const char *name, const char *value, const char *msg)
{
	bad_env_name = name;
	bad_env_value = value;
	char *err = NULL;
	int status = rt_test_in_child(bad_child, NULL, &err);
	char *want = rt_test_path("libovni: ovni_proc_init: %s\n", msg);
	if (strcmp(err, want) != 0)
		fail_msg("%s='%s': got '%s', expected '%s'", name, value, err, want);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
	free(want);
	free(err);
}

static void test_ring_bad_env(void **state)
{
	(void) state;
	char *trace = rt_test_mkdtemp();
	setenv("OVNI_TRACEDIR", trace, 1);
	static const char *bad_sizes[] = {"0", "", "12Q", "K", "4KB", "-4K", "512", "1023", "2G", "1025M",
					  "99999999999999999999999", "18014398509481984K"};
	for (size_t i = 0; i < sizeof bad_sizes / sizeof bad_sizes[0]; i++) {
		char *msg = rt_test_path("WEFT_RING='%s' is not a ring size (bytes, with an optional K, M or G "
					 "suffix, from 1K to 1G)",
					 bad_sizes[i]);
		expect_refused("WEFT_RING", bad_sizes[i], msg);
		free(msg);
	}
	expect_refused("WEFT_RING_FLUSH", "yes", "WEFT_RING_FLUSH='yes' is not 'on' or 'off'");
	static const char *bad_signals[] = {"FOO", "SEGV", "SIGKILL", "9", "6", "0", "", "USR3", "999"};
	for (size_t i = 0; i < sizeof bad_signals / sizeof bad_signals[0]; i++) {
		char *msg = rt_test_path(
			"WEFT_RING_SIGNAL='%s' is not a signal libovni can take (USR1, USR2, HUP, INT, QUIT, TERM, "
			"ALRM, WINCH, with or without SIG, or a number other than those of SIGKILL, SIGSTOP and the "
			"WEFT_CRASH signals)",
			bad_signals[i]);
		expect_refused("WEFT_RING_SIGNAL", bad_signals[i], msg);
		free(msg);
	}
	expect_refused("WEFT_FLUSH_MS", "50",
		       "WEFT_RING and WEFT_FLUSH_MS cannot be used together (a flight recorder writes only when "
		       "asked; unset one of them)");
	unsetenv("WEFT_RING");
	unsetenv("WEFT_RING_FLUSH");
	unsetenv("WEFT_RING_SIGNAL");
	unsetenv("WEFT_FLUSH_MS");
	rt_test_rm_rf(trace);
	free(trace);
}

/* ---- WEFT_CRASH=flush ---- */

static void test_ring_crash(void **state)
{
	(void) state;
	struct shared *s = calloc(1, sizeof *s);
	assert_non_null(s);
	snprintf(s->ring, sizeof s->ring, "4K");
	s->nthreads = 1;
	s->nevents = 20000;
	s->flush_every = 6000;
	s->ring_flush = 1;
	s->abort_at = 15000;
	char *trace = rt_test_mkdtemp();
	setenv("OVNI_TRACEDIR", trace, 1);
	int ok = rt_test_in_proc(child, s, sizeof *s);
	assert_false(ok); /* it died by SIGABRT */
	/* Two flushes, then the crash: three writes, three runs. */
	assert_int_equal(s->t[0].nwr, 3);
	check_thread(trace, s, 0, 4096, 1);
	rt_test_rm_rf(trace);
	free(trace);
	free(s);
}

int main(int argc, char **argv)
{
	unsetenv("OVNI_TMPDIR");
	unsetenv("WEFT_BUFSIZE");
	unsetenv("WEFT_FLUSH_MS");
	unsetenv("WEFT_CRASH");
	if (argc > 1 && strcmp(argv[1], "crash") == 0) {
		const struct CMUnitTest crash_tests[] = {
			cmocka_unit_test(test_ring_crash),
		};
		return cmocka_run_group_tests(crash_tests, NULL, NULL);
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ring_4k),
		cmocka_unit_test(test_ring_64k),
		cmocka_unit_test(test_ring_1m),
		cmocka_unit_test(test_ring_flush_on),
		cmocka_unit_test(test_ring_flush_off),
		cmocka_unit_test(test_ring_signal),
		cmocka_unit_test(test_ring_bad_env),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
