/* SPDX-License-Identifier: MIT */
/*
 * test_rt_clock - WEFT_CLOCK=tsc (docs/runtime.md, "Clock"). Where libovni
 * refuses the TSC (not x86-64, a TSC that is not invariant, a kernel that
 * does not use it as its clocksource), the refusal's message is checked
 * and the rest is skipped, saying why. Elsewhere the same three-thread
 * program (256-byte buffers: the clock is calibrated again at many writes)
 * runs with WEFT_CLOCK=monotonic and WEFT_CLOCK=tsc: in TSC mode,
 * ovni_clock_now stays within 1 ms of CLOCK_MONOTONIC and never goes back
 * on a thread; weft check accepts both traces; per thread, the events are
 * the same in the same order; and weft emu gives the same states (the
 * Paraver thread rows' values in order, times and tids aside). Each run is a forked
 * child (a process is initialized once).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "ovni.h"
#include "rt_setting.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#define NWORKERS 2
#define ROUNDS 400

struct child {
	char clock[16];
	char dir[512];
	int pid;
	int bad; /* set by the child: what went wrong, 0 if nothing */
	long long worst_ns; /* the largest |ovni_clock_now - CLOCK_MONOTONIC| seen */
};

static struct child *cur;

static uint64_t mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

/* ovni_clock_now, checked against CLOCK_MONOTONIC read around it and
 * against the thread's previous value. */
static uint64_t clk(uint64_t *prev)
{
	uint64_t a = mono();
	uint64_t c = ovni_clock_now();
	uint64_t b = mono();
	if (c < *prev)
		__atomic_store_n(&cur->bad, 1, __ATOMIC_SEQ_CST);
	long long d = c < a ? (long long) (a - c) : c > b ? (long long) (c - b) : 0;
	long long w = __atomic_load_n(&cur->worst_ns, __ATOMIC_SEQ_CST);
	while (d > w && !__atomic_compare_exchange_n(&cur->worst_ns, &w, d, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		;
	*prev = c;
	return c;
}

static void emit(const char *mcv, uint64_t *prev, const void *pl, int n)
{
	rt_test_emit(mcv, clk(prev), pl, n);
}

static void ohx(int cpu, int creator, uint64_t *prev)
{
	uint8_t pl[16] = {0};
	int32_t c = cpu, t = creator;
	memcpy(pl, &c, sizeof c);
	memcpy(pl + 4, &t, sizeof t);
	emit("OHx", prev, pl, (int) sizeof pl);
}

static void *worker(void *p)
{
	int k = (int) (intptr_t) p;
	uint64_t prev = 0;
	ovni_thread_init(gettid());
	ohx(k + 1, cur->pid, &prev);
	for (int r = 0; r < ROUNDS; r++) {
		emit("OB.", &prev, NULL, 0);
		ovni_mark_push(1, 1 + r % 3);
		emit("OHp", &prev, NULL, 0);
		emit("OHr", &prev, NULL, 0);
		ovni_mark_pop(1, 1 + r % 3);
		if (r % 100 == 0)
			ovni_flush();
	}
	emit("OHe", &prev, NULL, 0);
	ovni_flush();
	ovni_thread_free();
	return NULL;
}

static void child_main(void *p)
{
	struct child *ch = p;
	cur = ch;
	ch->pid = (int) getpid();
	setenv("OVNI_TRACEDIR", ch->dir, 1);
	setenv("WEFT_CLOCK", ch->clock, 1);
	setenv("WEFT_BUFSIZE", "256", 1);
	ovni_proc_init(1, "clk", ch->pid);
	ovni_thread_init(ch->pid);
	for (int i = 0; i <= NWORKERS; i++)
		ovni_add_cpu(i, i);
	ovni_mark_type(1, OVNI_MARK_STACK, "Phase");
	uint64_t prev = 0;
	ohx(0, -1, &prev);
	pthread_t th[NWORKERS];
	for (int k = 0; k < NWORKERS; k++) {
		uint8_t pl[12] = {0};
		int32_t c = k + 1;
		memcpy(pl, &c, sizeof c);
		emit("OHC", &prev, pl, (int) sizeof pl);
		/* one worker after the other: their tids come in this order */
		pthread_create(&th[k], NULL, worker, (void *) (intptr_t) k);
		pthread_join(th[k], NULL);
	}
	emit("OHe", &prev, NULL, 0);
	ovni_flush();
	ovni_thread_free();
	ovni_proc_fini();
}

/* Whether libovni will take the TSC here (its checks, made again). */
static const char *tsc_refusal(void)
{
	return rt_test_tsc_refusal();
}

static void run(const char *clock, struct child *ch)
{
	memset(ch, 0, sizeof *ch);
	snprintf(ch->clock, sizeof ch->clock, "%s", clock);
	snprintf(ch->dir, sizeof ch->dir, "%s/%s", rt_test_dir, clock);
	assert_true(rt_test_in_proc(child_main, ch, sizeof *ch));
	assert_int_equal(ch->bad, 0);
}

/* Each thread's events, in order, without clocks: one line per thread
 * ("<thread index>: MCV MCV ..."), threads in tid order. */
static char *thread_events(const struct child *ch)
{
	size_t cap = 1 << 20;
	char *all = calloc(1, cap);
	char *ls = rt_test_path("ls '%s/loom.clk/proc.%d' | sort -t. -k2 -n", ch->dir, ch->pid);
	int rc = -1;
	char *names = rt_test_sh(ls, &rc);
	free(ls);
	assert_int_equal(rc, 0);
	int idx = 0;
	for (char *line = strtok(names, "\n"); line != NULL; line = strtok(NULL, "\n"), idx++) {
		char *obs = rt_test_path("%s/loom.clk/proc.%d/%s/stream.obs", ch->dir, ch->pid, line);
		struct rt_test_stream st;
		rt_test_stream_load(&st, obs);
		size_t n = strlen(all);
		n += (size_t) snprintf(all + n, cap - n, "%d:", idx);
		for (size_t i = 0; i < st.nev && n + 8 < cap; i++) {
			if (st.ev[i].mcv[0] == 'O' && st.ev[i].mcv[1] == 'F')
				continue; /* where the flushes fall may differ */
			n += (size_t) snprintf(all + n, cap - n, " %s", st.ev[i].mcv);
		}
		snprintf(all + n, cap - n, "\n");
		rt_test_stream_free(&st);
		free(obs);
	}
	free(names);
	assert_int_equal(idx, NWORKERS + 1);
	return all;
}

/* The states weft emu gives the thread rows: thread.prv's state and event
 * records ("2:" lines), each without its CPU and time, in order per row;
 * the flushing channel left out (where flushes fall may differ), and the
 * TID channel (its values are the runs' tids). */
static char *emulated_states(const struct child *ch)
{
	char *args = rt_test_path("emu -q -f paraver:aux=no -o '%s/emu'", ch->dir);
	int rc = -1;
	char *out = rt_test_weft(args, ch->dir, &rc);
	free(args);
	assert_non_null(out);
	if (rc != 0)
		fprintf(stderr, "weft emu: %s\n", out);
	assert_int_equal(rc, 0);
	free(out);
	char *prv = rt_test_path("%s/emu/thread.prv", ch->dir);
	char *text = rt_test_read(prv, NULL);
	assert_non_null(text);
	free(prv);
	size_t cap = strlen(text) + 1, n = 0;
	char *res = calloc(1, cap);
	for (char *line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n")) {
		if (line[0] != '2' || line[1] != ':')
			continue;
		/* 2:cpu:appl:task:thread:time:type:value[:type:value]... */
		char *f[64];
		int nf = 0;
		for (char *tok = strtok_r(line, ":", &line); tok != NULL && nf < 64; tok = strtok_r(NULL, ":", &line))
			f[nf++] = tok;
		for (int k = 6; k + 1 < nf; k += 2) {
			if (strcmp(f[k], "7") == 0 || strcmp(f[k], "2") == 0)
				continue; /* ovni's flushing channel; the TID channel (tids differ) */
			n += (size_t) snprintf(res + n, cap - n, "%s.%s.%s %s=%s\n", f[2], f[3], f[4], f[k], f[k + 1]);
		}
	}
	free(text);
	/* per row, in order: a stable sort by row */
	char *sorted = rt_test_path("%s/states.txt", ch->dir);
	FILE *o = fopen(sorted, "w");
	assert_non_null(o);
	fputs(res, o);
	fclose(o);
	free(res);
	char *sortcmd = rt_test_path("sort -s -t' ' -k1,1 '%s'", sorted);
	res = rt_test_sh(sortcmd, &rc);
	assert_int_equal(rc, 0);
	free(sortcmd);
	free(sorted);
	return res;
}

static void test_tsc(void **s)
{
	(void) s;
	const char *why = tsc_refusal();
	if (why != NULL) {
		char *err = rt_test_refused("WEFT_CLOCK", "tsc");
		const char *want = "libovni: ovni_proc_init: WEFT_CLOCK=tsc cannot be used here: ";
		assert_memory_equal(err, want, strlen(want));
		assert_non_null(strstr(err, "; unset WEFT_CLOCK (or set it to 'monotonic') to use CLOCK_MONOTONIC\n"));
		free(err);
		print_message("skipped: WEFT_CLOCK=tsc is refused on this machine (%s); its message was checked\n", why);
		skip();
	}
	struct child mono_run, tsc_run;
	run("monotonic", &mono_run);
	run("tsc", &tsc_run);
	print_message("TSC clock: at most %lld ns from CLOCK_MONOTONIC\n", tsc_run.worst_ns);
	assert_true(tsc_run.worst_ns < 1000000);
	/* the TSC run says so in its metadata (weft.clock), the other not */
	for (int k = 0; k < 2; k++) {
		const struct child *ch = k == 0 ? &mono_run : &tsc_run;
		char *json = rt_test_path("%s/loom.clk/proc.%d/thread.%d/stream.json", ch->dir, ch->pid, ch->pid);
		char *text = rt_test_read(json, NULL);
		assert_non_null(text);
		if (k == 0)
			assert_null(strstr(text, "\"clock\""));
		else
			assert_non_null(strstr(text, "\"clock\": \"tsc\""));
		free(text);
		free(json);
	}
	char *e1 = thread_events(&mono_run);
	char *e2 = thread_events(&tsc_run);
	assert_string_equal(e1, e2);
	free(e1);
	free(e2);
	const char *bin = getenv("WEFT_BIN");
	if (bin == NULL || access(bin, X_OK) != 0) {
		print_message("WEFT_BIN is unset: weft check and weft emu are not run\n");
		return;
	}
	int rc = -1;
	for (int k = 0; k < 2; k++) {
		char *out = rt_test_weft("check", k == 0 ? mono_run.dir : tsc_run.dir, &rc);
		assert_non_null(out);
		if (rc != 0)
			fprintf(stderr, "%s\n", out);
		assert_int_equal(rc, 0);
		assert_non_null(strstr(out, ": valid: 3 streams, 1 loom, 1 process, 3 threads, "));
		free(out);
	}
	char *s1 = emulated_states(&mono_run);
	char *s2 = emulated_states(&tsc_run);
	assert_true(strlen(s1) > 1000);
	assert_string_equal(s1, s2);
	free(s1);
	free(s2);
}

static void test_bad(void **s)
{
	(void) s;
	char *err = rt_test_refused("WEFT_CLOCK", "rdtsc");
	assert_string_equal(err,
			    "libovni: ovni_proc_init: WEFT_CLOCK='rdtsc' is not a clock ('monotonic', the default, or "
			    "'tsc')\n");
	free(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tsc),
		cmocka_unit_test(test_bad),
	};
	return cmocka_run_group_tests(tests, rt_test_group_setup, rt_test_group_teardown);
}
