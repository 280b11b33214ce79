/* SPDX-License-Identifier: MIT */
/*
 * test_oom.c - libweft never aborts when memory runs out: every allocation
 * failure is an error through weft_open()/weft_error() ("out of memory
 * while ..."), and what was built so far is freed by weft_close() (the
 * sanitizer build finds any leak).
 *
 * The reader's objects are linked with -Wl,--wrap for malloc, calloc,
 * realloc, strdup and posix_memalign: the wrappers make the N-th
 * allocation fail (only that one), for N = 1, 2, ... until an open and a
 * full read of a corpus case succeed with no failure injected. Each run
 * must end in success or in an error whose message holds "out of memory";
 * the count of events of a successful run must be the clean run's. Cases:
 * v3/multi-thread (also opened at a process directory inside it: the rest
 * of the trace is read for the system), v3/marks, v3/clock-offsets-ovnisync
 * (clock-offsets.txt), v1/two-procs; each read without read-ahead (one
 * thread: the N-th allocation is the same in each run), strict and lenient
 * with sorting on read. Skips (77) without the corpus.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "weft/weft.h"

/* ---- the allocation wrappers ---- */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t sz);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
int __real_posix_memalign(void **p, size_t align, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t sz);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
int __wrap_posix_memalign(void **p, size_t align, size_t n);

static int armed;
static unsigned long count, fail_at, failed;

static int fail_now(void)
{
	if (!__atomic_load_n(&armed, __ATOMIC_RELAXED))
		return 0;
	unsigned long k = __atomic_add_fetch(&count, 1, __ATOMIC_RELAXED);
	if (k != fail_at)
		return 0;
	__atomic_add_fetch(&failed, 1, __ATOMIC_RELAXED);
	return 1;
}

void *__wrap_malloc(size_t n)
{
	return fail_now() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t sz)
{
	return fail_now() ? NULL : __real_calloc(n, sz);
}

void *__wrap_realloc(void *p, size_t n)
{
	return fail_now() ? NULL : __real_realloc(p, n);
}

char *__wrap_strdup(const char *s)
{
	return fail_now() ? NULL : __real_strdup(s);
}

int __wrap_posix_memalign(void **p, size_t align, size_t n)
{
	return fail_now() ? 12 /* ENOMEM */ : __real_posix_memalign(p, align, n);
}

/* ---- the runs ---- */

static int nfail;

/* Opens and reads path, the fail_at-th allocation failing (0: none).
 * 1 success (*nev: events read), 0 a clean error, -1 a wrong outcome. */
static int run(const char *path, int lenient, unsigned long at, uint64_t *nev, char *msg,
		size_t msglen)
{
	struct weft_open_opts o;
	memset(&o, 0, sizeof o);
	o.sz = sizeof o;
	o.mode = lenient ? WEFT_LENIENT : WEFT_STRICT;
	o.readahead = WEFT_READAHEAD_OFF;
	o.sort = lenient ? WEFT_SORT_REGIONS : WEFT_SORT_NONE;
	o.all_models = 1;
	char err[WEFT_ERR_MAX];
	err[0] = '\0';
	count = 0;
	failed = 0;
	fail_at = at;
	__atomic_store_n(&armed, 1, __ATOMIC_RELAXED);
	struct weft_trace *t = weft_open(path, &o, err, sizeof err);
	int r = 1;
	*nev = 0;
	if (t == NULL) {
		snprintf(msg, msglen, "%s", err);
		r = 0;
	} else {
		struct weft_event ev[64];
		long got;
		while ((got = weft_next_batch(t, ev, 64)) > 0)
			*nev += (uint64_t) got;
		if (got < 0) {
			snprintf(msg, msglen, "%s", weft_error(t));
			r = 0;
		}
		weft_close(t);
	}
	__atomic_store_n(&armed, 0, __ATOMIC_RELAXED);
	if (r == 0 && strstr(msg, "out of memory") == NULL)
		return -1; /* an error that is not the injected failure */
	if (r == 0 && failed == 0)
		return -1;
	return r;
}

static void check_case(const char *path, int lenient)
{
	uint64_t clean, nev;
	char msg[WEFT_ERR_MAX];
	if (run(path, lenient, 0, &clean, msg, sizeof msg) != 1) {
		printf("FAIL %s: does not read without a failure: %s\n", path, msg);
		nfail++;
		return;
	}
	unsigned long n, errors = 0;
	for (n = 1;; n++) {
		int r = run(path, lenient, n, &nev, msg, sizeof msg);
		if (r < 0) {
			printf("FAIL %s (%s), allocation %lu failing: %s\n", path,
					lenient ? "lenient" : "strict", n, msg);
			nfail++;
			return;
		}
		if (r == 1 && nev != clean) {
			printf("FAIL %s, allocation %lu failing: %llu events, not %llu\n", path, n,
					(unsigned long long) nev, (unsigned long long) clean);
			nfail++;
			return;
		}
		if (r == 0)
			errors++;
		if (r == 1 && failed == 0)
			break; /* past the last allocation */
		if (n > 100000) {
			printf("FAIL %s: no end after %lu allocations\n", path, n);
			nfail++;
			return;
		}
	}
	printf("ok %s (%s): %lu allocations, each failing in turn: %lu out-of-memory errors, "
			"%llu events otherwise\n", path, lenient ? "lenient" : "strict", n - 1, errors,
			(unsigned long long) clean);
}

/* The first directory under dir whose name starts with prefix (a static
 * buffer), or NULL. */
static const char *sub_dir(const char *dir, const char *prefix)
{
	static char out[4096];
	DIR *d = opendir(dir);
	if (d == NULL)
		return NULL;
	struct dirent *e;
	char best[256] = "";
	while ((e = readdir(d)) != NULL)
		if (strncmp(e->d_name, prefix, strlen(prefix)) == 0
				&& (best[0] == '\0' || strcmp(e->d_name, best) < 0))
			snprintf(best, sizeof best, "%s", e->d_name);
	closedir(d);
	if (best[0] == '\0')
		return NULL;
	snprintf(out, sizeof out, "%s/%s", dir, best);
	return out;
}

int main(void)
{
	const char *root = getenv("WEFT_CONFORMANCE_DIR");
	if (root == NULL || root[0] == '\0')
		root = getenv("WEFT_CONFORMANCE_DIR_DEFAULT");
	char probe[4096];
	struct stat st;
	snprintf(probe, sizeof probe, "%s/v3/multi-thread/ovni", root ? root : "");
	if (root == NULL || stat(probe, &st) != 0) {
		printf("SKIP: no conformance corpus (WEFT_CONFORMANCE_DIR)\n");
		return 77;
	}
	static const char *const cases[] = { "v3/multi-thread", "v3/marks",
		"v3/clock-offsets-ovnisync", "v1/two-procs" };
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char path[4096];
		snprintf(path, sizeof path, "%s/%s/ovni", root, cases[i]);
		check_case(path, 0);
		check_case(path, 1);
	}
	/* a process directory inside the trace: the system is read from
	 * the whole trace around it */
	const char *loom = sub_dir(probe, "loom.");
	char lpath[4096];
	snprintf(lpath, sizeof lpath, "%s", loom ? loom : "");
	const char *proc = loom ? sub_dir(lpath, "proc.") : NULL;
	if (proc == NULL) {
		printf("FAIL %s: no loom.*/proc.* directory\n", probe);
		nfail++;
	} else {
		char ppath[4096];
		snprintf(ppath, sizeof ppath, "%s", proc);
		check_case(ppath, 0);
	}
	if (nfail > 0) {
		printf("%d failure(s)\n", nfail);
		return 1;
	}
	return 0;
}
