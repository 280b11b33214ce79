/* SPDX-License-Identifier: MIT */
/*
 * test_driver_mt.c - weft_emulate() is reentrant: four calls at once, in
 * four threads, give the files each gives alone.
 *
 * The calls: two runtime-model traces of the conformance corpus (models/),
 * the second of them again into another directory (with the breakdown
 * views), and a trace of the example program examples/zeta (bin/zeta, run
 * into a temporary directory) with its model file added to the call's own
 * registry (the others use the built-in models). The four run at once (a
 * barrier starts them together; the first round also races for the
 * built-in models' one load), in sixteen rounds, each into fresh directories;
 * then each call runs alone. Every file of every concurrent output
 * directory must be byte-identical to the one of the call run alone, and
 * the directories must hold the same files. The zeta output must have the
 * model's channels (its .pcf names "Zeta phase"), so the registry reached
 * the engine. Labelled mt: CI runs it under ThreadSanitizer too.
 * Environment: WEFT_BINARY_DIR (bin/zeta), WEFT_SOURCE_DIR (the model file).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "conformance.h"
#include "driver.h"
#include "model.h"
#include "weft/weft.h"

#define NCALLS 4
#define ROUNDS 16
#define MAX_FILES 64
#define ZETA_TIMEOUT_S 60

struct call {
	char path[4096];
	const char *model_file; /* NULL: the built-in models */
	int breakdown;
	/* the run in a thread */
	char outdir[4200];
	int rc;
	char err[WEFT_ERR_MAX];
	pthread_barrier_t *start;
};

static char base[] = "/tmp/weft-driver-mt-XXXXXX";
static char zeta_model[4200];

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void) st;
	(void) flag;
	(void) ftw;
	return remove(p);
}

/* The call, with a registry of its own when it adds a model file (made in
 * its thread: the first round races for the built-in models' one load). */
static void run_call(struct call *c)
{
	static const char *const formats[] = { "paraver", "perfetto", NULL };
	struct weft_registry *models = NULL;
	if (c->model_file != NULL) {
		models = weft_registry_new(c->err, sizeof c->err);
		if (models == NULL || weft_registry_add_file(models, c->model_file, c->err,
					sizeof c->err) != 0) {
			weft_registry_free(models);
			c->rc = -2;
			return;
		}
	}
	struct weft_emulate_opts o;
	memset(&o, 0, sizeof o);
	o.sz = sizeof o;
	o.path = c->path;
	o.outdir = c->outdir;
	o.formats = formats;
	o.breakdown = c->breakdown;
	o.models = models;
	c->rc = weft_emulate(&o, c->err, sizeof c->err);
	weft_registry_free(models);
}

static void *thread_main(void *arg)
{
	struct call *c = arg;
	pthread_barrier_wait(c->start);
	run_call(c);
	return NULL;
}

/* Runs argv with OVNI_TRACEDIR=dir, killed after ZETA_TIMEOUT_S; its exit
 * status (-1: it did not end by itself). */
static int run_zeta(const char *prog, const char *dir)
{
	pid_t pid = fork();
	if (pid == 0) {
		setenv("OVNI_TRACEDIR", dir, 1);
		int fd = open("/dev/null", O_WRONLY);
		if (fd >= 0)
			dup2(fd, STDOUT_FILENO);
		execl(prog, prog, "4", "5000", (char *) NULL);
		_exit(127);
	}
	if (pid < 0)
		return -1;
	for (int i = 0; i < ZETA_TIMEOUT_S * 100; i++) {
		int st;
		pid_t w = waitpid(pid, &st, WNOHANG);
		if (w == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		struct timespec ts = { 0, 10000000 };
		nanosleep(&ts, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

/* The regular files of dir (sorted names), at most MAX_FILES. */
static size_t list_files(const char *dir, char names[][256])
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		char p[4600];
		struct stat st;
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		if (stat(p, &st) != 0 || !S_ISREG(st.st_mode))
			continue;
		assert_true(n < MAX_FILES);
		snprintf(names[n++], 256, "%s", e->d_name);
	}
	closedir(d);
	qsort(names, n, 256, (int (*)(const void *, const void *)) strcmp);
	return n;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		fail_msg("cannot open %s: %s", path, strerror(errno));
	size_t cap = 1 << 16, n = 0;
	char *b = malloc(cap);
	assert_non_null(b);
	size_t got;
	while ((got = fread(b + n, 1, cap - n, f)) > 0) {
		n += got;
		if (n == cap) {
			cap *= 2;
			b = realloc(b, cap);
			assert_non_null(b);
		}
	}
	fclose(f);
	*len = n;
	return b;
}

/* Every file of got is byte-identical to the one of want, and both hold
 * the same files (at least the Paraver thread timeline). */
static void same_dirs(const char *want, const char *got)
{
	static char a[MAX_FILES][256], b[MAX_FILES][256];
	size_t na = list_files(want, a), nb = list_files(got, b);
	assert_int_equal(na, nb);
	int prv = 0;
	for (size_t i = 0; i < na; i++) {
		assert_string_equal(a[i], b[i]);
		prv |= strcmp(a[i], "thread.prv") == 0;
		char pa[4600], pb[4600];
		snprintf(pa, sizeof pa, "%s/%s", want, a[i]);
		snprintf(pb, sizeof pb, "%s/%s", got, b[i]);
		size_t la, lb;
		char *x = slurp(pa, &la), *y = slurp(pb, &lb);
		if (la != lb || memcmp(x, y, la) != 0)
			fail_msg("%s differs from %s (%zu and %zu bytes)", pb, pa, lb, la);
		free(x);
		free(y);
	}
	assert_true(prv);
}

static void setup_calls(struct call *calls)
{
	const char *conf = weft_conformance_dir();
	static const char *const cases[NCALLS - 1] = { "models/mix-4", "models/rand-nanos6-0",
		"models/rand-nanos6-0" };
	for (int i = 0; i < NCALLS - 1; i++) {
		snprintf(calls[i].path, sizeof calls[i].path, "%s/%s/ovni", conf, cases[i]);
		calls[i].model_file = NULL;
		calls[i].breakdown = i == 2;
	}
	snprintf(calls[3].path, sizeof calls[3].path, "%s/zeta-trace", base);
	calls[3].model_file = zeta_model;
	calls[3].breakdown = 0;
}

static void emulate_at_once(void **state)
{
	(void) state;
	struct call calls[NCALLS];
	memset(calls, 0, sizeof calls);
	setup_calls(calls);
	pthread_barrier_t start;
	for (int round = 0; round < ROUNDS; round++) {
		assert_int_equal(pthread_barrier_init(&start, NULL, NCALLS), 0);
		pthread_t th[NCALLS];
		for (int i = 0; i < NCALLS; i++) {
			snprintf(calls[i].outdir, sizeof calls[i].outdir, "%s/r%d-%d", base, round, i);
			calls[i].start = &start;
			assert_int_equal(pthread_create(&th[i], NULL, thread_main, &calls[i]), 0);
		}
		for (int i = 0; i < NCALLS; i++)
			assert_int_equal(pthread_join(th[i], NULL), 0);
		pthread_barrier_destroy(&start);
		for (int i = 0; i < NCALLS; i++)
			if (calls[i].rc != 0)
				fail_msg("round %d, call %d (%s): %s", round, i, calls[i].path,
						calls[i].err);
	}
	/* each call alone */
	for (int i = 0; i < NCALLS; i++) {
		struct call c = calls[i];
		snprintf(c.outdir, sizeof c.outdir, "%s/serial-%d", base, i);
		run_call(&c);
		if (c.rc != 0)
			fail_msg("call %d (%s) alone: %s", i, c.path, c.err);
	}
	for (int round = 0; round < ROUNDS; round++)
		for (int i = 0; i < NCALLS; i++) {
			char want[4200], got[4200];
			snprintf(want, sizeof want, "%s/serial-%d", base, i);
			snprintf(got, sizeof got, "%s/r%d-%d", base, round, i);
			same_dirs(want, got);
		}
	/* the user model reached the engine of its call only */
	char pcf[4300];
	size_t len;
	snprintf(pcf, sizeof pcf, "%s/serial-3/thread.pcf", base);
	char *text = slurp(pcf, &len);
	text = realloc(text, len + 1);
	assert_non_null(text);
	text[len] = '\0';
	assert_non_null(strstr(text, "Zeta phase"));
	free(text);
	snprintf(pcf, sizeof pcf, "%s/serial-0/thread.pcf", base);
	text = slurp(pcf, &len);
	text = realloc(text, len + 1);
	assert_non_null(text);
	text[len] = '\0';
	assert_null(strstr(text, "Zeta"));
	free(text);
}

/* The zeta trace without its model: refused at its first Z event, by
 * name, while a call with the model runs at once. */
static void user_model_is_per_run(void **state)
{
	(void) state;
	struct call calls[2];
	memset(calls, 0, sizeof calls);
	pthread_barrier_t start;
	assert_int_equal(pthread_barrier_init(&start, NULL, 2), 0);
	pthread_t th[2];
	for (int i = 0; i < 2; i++) {
		snprintf(calls[i].path, sizeof calls[i].path, "%s/zeta-trace", base);
		snprintf(calls[i].outdir, sizeof calls[i].outdir, "%s/per-run-%d", base, i);
		calls[i].model_file = i == 0 ? zeta_model : NULL;
		calls[i].start = &start;
		assert_int_equal(pthread_create(&th[i], NULL, thread_main, &calls[i]), 0);
	}
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	pthread_barrier_destroy(&start);
	if (calls[0].rc != 0)
		fail_msg("with the model: %s", calls[0].err);
	assert_int_equal(calls[1].rc, -1);
	/* no model of this run has the byte Z */
	if (strstr(calls[1].err, "no model is registered for the model byte of this event") ==
			NULL)
		fail_msg("without the model: %s", calls[1].err);
}

static int setup(void **state)
{
	(void) state;
	if (mkdtemp(base) == NULL)
		return -1;
	const char *bin = getenv("WEFT_BINARY_DIR");
	const char *src = getenv("WEFT_SOURCE_DIR");
	if (bin == NULL || src == NULL) {
		fprintf(stderr, "WEFT_BINARY_DIR and WEFT_SOURCE_DIR must be set\n");
		return -1;
	}
	char prog[4200], dir[4200];
	snprintf(prog, sizeof prog, "%s/bin/zeta", bin);
	snprintf(dir, sizeof dir, "%s/zeta-trace", base);
	snprintf(zeta_model, sizeof zeta_model, "%s/examples/zeta/zeta.yaml", src);
	int st = run_zeta(prog, dir);
	if (st != 0) {
		fprintf(stderr, "%s: exit status %d\n", prog, st);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	(void) state;
	return nftw(base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int main(void)
{
	/* absent corpus: skipped (77), before anything is written */
	weft_conformance_dir();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(emulate_at_once),
		cmocka_unit_test(user_model_is_per_run),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
