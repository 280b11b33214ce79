/* SPDX-License-Identifier: MIT */
/*
 * rt_test.h - helpers of the libovni tests: temporary directories, files,
 * running a trace-writing body in a fresh thread (libovni state is per
 * thread, and a finished thread cannot be initialized again) or in a
 * fresh process (a process is initialized once: ovni_proc_init after
 * ovni_proc_fini is misuse), running a body in a forked child that is
 * expected to abort, and a tiny stream parser built on obs_format.h.
 */
#ifndef WEFT_TESTS_RT_TEST_H
#define WEFT_TESTS_RT_TEST_H

#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "obs_format.h"

static inline void rt_test_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static inline void rt_test_fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "test helper: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

/* A new empty directory under $TMPDIR (or /tmp); malloc'ed path. */
static inline char *rt_test_mkdtemp(void)
{
	const char *base = getenv("TMPDIR");
	if (base == NULL || base[0] == '\0')
		base = "/tmp";
	size_t n = strlen(base) + 32;
	char *p = malloc(n);
	if (p == NULL)
		rt_test_fail("out of memory");
	snprintf(p, n, "%s/weft-rt-XXXXXX", base);
	if (mkdtemp(p) == NULL)
		rt_test_fail("mkdtemp in %s failed: %s", base, strerror(errno));
	return p;
}

static inline int rt_test_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void) st;
	(void) flag;
	(void) ftw;
	return remove(path);
}

/* rm -rf path. */
static inline void rt_test_rm_rf(const char *path)
{
	nftw(path, rt_test_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* The trace directory of a cmocka group using rt_test_group_setup/teardown:
 * a fresh temporary directory set as OVNI_TRACEDIR, with OVNI_TMPDIR and
 * WEFT_BUFSIZE unset (a test sets them itself when it needs them). */
static char *rt_test_dir;

static inline int rt_test_group_setup(void **state)
{
	(void) state;
	rt_test_dir = rt_test_mkdtemp();
	setenv("OVNI_TRACEDIR", rt_test_dir, 1);
	unsetenv("OVNI_TMPDIR");
	unsetenv("WEFT_BUFSIZE");
	return 0;
}

static inline int rt_test_group_teardown(void **state)
{
	(void) state;
	rt_test_rm_rf(rt_test_dir);
	free(rt_test_dir);
	rt_test_dir = NULL;
	return 0;
}

static inline char *rt_test_path(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline char *rt_test_path(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = NULL;
	if (vasprintf(&s, fmt, ap) < 0)
		rt_test_fail("out of memory");
	va_end(ap);
	return s;
}

/* Whole file, NUL-terminated; *len gets its size. NULL if it cannot be read. */
static inline char *rt_test_read(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return NULL;
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap + 1);
	for (;;) {
		if (n == cap) {
			cap *= 2;
			buf = realloc(buf, cap + 1);
		}
		size_t r = fread(buf + n, 1, cap - n, f);
		if (r == 0)
			break;
		n += r;
	}
	fclose(f);
	buf[n] = '\0';
	if (len != NULL)
		*len = n;
	return buf;
}

static inline int rt_test_exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

static inline long long rt_test_file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (long long) st.st_size : -1;
}

/* Number of entries of a directory other than . and .., or -1. */
static inline int rt_test_count_entries(const char *path)
{
	int n = 0;
	char *cmd = rt_test_path("ls -A '%s' 2>/dev/null | wc -l", path);
	if (!rt_test_exists(path)) {
		free(cmd);
		return -1;
	}
	FILE *p = popen(cmd, "r");
	free(cmd);
	if (p == NULL || fscanf(p, "%d", &n) != 1)
		n = -1;
	if (p != NULL)
		pclose(p);
	return n;
}

/* Runs fn(arg) in a new thread and waits for it. */
struct rt_test_thunk {
	void (*fn)(void *);
	void *arg;
};

static inline void *rt_test_thunk_run(void *p)
{
	struct rt_test_thunk *t = p;
	t->fn(t->arg);
	return NULL;
}

static inline void rt_test_in_thread(void (*fn)(void *), void *arg)
{
	struct rt_test_thunk t = {fn, arg};
	pthread_t th;
	if (pthread_create(&th, NULL, rt_test_thunk_run, &t) != 0)
		rt_test_fail("pthread_create failed");
	pthread_join(th, NULL);
}

/* Waits for child pid up to limit_s seconds (polling every millisecond);
 * returns 0 with its wait status in *status, or -1 after killing it
 * (SIGKILL, then reaped) when it was still running. */
static inline int rt_test_wait_bounded(pid_t pid, int limit_s, int *status)
{
	const struct timespec tick = {0, 1000000};
	for (long ms = 0; ms < 1000L * limit_s; ms++) {
		pid_t r = waitpid(pid, status, WNOHANG);
		if (r == pid)
			return 0;
		if (r < 0 && errno != EINTR)
			rt_test_fail("waitpid failed: %s", strerror(errno));
		nanosleep(&tick, NULL);
	}
	kill(pid, SIGKILL);
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
	return -1;
}

/* Runs fn(arg) in a forked child with stderr captured. Returns the wait
 * status; *err gets the child's stderr (malloc'ed). */
static inline int rt_test_in_child(void (*fn)(void *), void *arg, char **err)
{
	int fds[2];
	if (pipe(fds) != 0)
		rt_test_fail("pipe failed: %s", strerror(errno));
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		rt_test_fail("fork failed: %s", strerror(errno));
	if (pid == 0) {
		close(fds[0]);
		dup2(fds[1], STDERR_FILENO);
		close(fds[1]);
		fn(arg);
		_exit(0);
	}
	close(fds[1]);
	size_t cap = 1024, n = 0;
	char *buf = malloc(cap + 1);
	for (;;) {
		if (n == cap) {
			cap *= 2;
			buf = realloc(buf, cap + 1);
		}
		ssize_t r = read(fds[0], buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t) r;
	}
	buf[n] = '\0';
	close(fds[0]);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	*err = buf;
	return status;
}

/* Runs fn(arg) in a forked child and waits for it; fn must not use cmocka
 * assertions (it records what the parent checks). The size bytes at arg
 * are shared with the child: what it writes there comes back. Returns 1
 * if the child exited with status 0; otherwise prints why and returns 0. */
static inline int rt_test_in_proc(void (*fn)(void *), void *arg, size_t size)
{
	size_t len = size > 0 ? size : 1;
	void *shared = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED)
		rt_test_fail("mmap failed: %s", strerror(errno));
	if (size > 0)
		memcpy(shared, arg, size);
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		rt_test_fail("fork failed: %s", strerror(errno));
	if (pid == 0) {
		fn(shared);
		fflush(NULL);
		_exit(0);
	}
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (size > 0)
		memcpy(arg, shared, size);
	munmap(shared, len);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 1;
	if (WIFSIGNALED(status))
		fprintf(stderr, "test process killed by signal %d\n", WTERMSIG(status));
	else
		fprintf(stderr, "test process exited with status %d\n", WEXITSTATUS(status));
	return 0;
}

/* ---- a small stream.obs parser (normal and jumbo events) ---- */

struct rt_test_ev {
	uint8_t flags;
	char mcv[4];
	uint64_t clock;
	const uint8_t *payload; /* normal: payload; jumbo: the data after the size */
	size_t payload_size;    /* normal: 0, 2..16; jumbo: the jumbo size */
	size_t offset;          /* of the event in the file */
};

struct rt_test_stream {
	uint8_t *data;
	size_t len;
	struct rt_test_ev *ev;
	size_t nev;
};

/* Loads and parses a stream.obs; fails the test on any format error, and,
 * unless allow_cut, on a file that ends inside an event (a process killed
 * during a write leaves one: then the events before it are loaded). */
static inline void rt_test_stream_load_opt(struct rt_test_stream *s, const char *path, int allow_cut)
{
	char *data = rt_test_read(path, &s->len);
	if (data == NULL)
		rt_test_fail("cannot read %s", path);
	s->data = (uint8_t *) data;
	if (s->len < WEFT_OBS_HEADER_SIZE || memcmp(s->data, WEFT_OBS_MAGIC, WEFT_OBS_MAGIC_LEN) != 0
	    || weft_load_u32(s->data + WEFT_OBS_MAGIC_LEN) != WEFT_OBS_VERSION)
		rt_test_fail("%s: bad stream header", path);
	size_t cap = 1024;
	s->ev = malloc(cap * sizeof *s->ev);
	s->nev = 0;
	size_t off = WEFT_OBS_HEADER_SIZE;
	while (off < s->len) {
		if (s->len - off < WEFT_EV_HEADER_SIZE) {
			if (allow_cut)
				break;
			rt_test_fail("%s: truncated event header at offset %zu", path, off);
		}
		const uint8_t *p = s->data + off;
		struct rt_test_ev e;
		e.flags = p[WEFT_EV_OFF_FLAGS];
		e.mcv[0] = (char) p[WEFT_EV_OFF_MODEL];
		e.mcv[1] = (char) p[WEFT_EV_OFF_CATEGORY];
		e.mcv[2] = (char) p[WEFT_EV_OFF_VALUE];
		e.mcv[3] = '\0';
		e.clock = weft_load_u64(p + WEFT_EV_OFF_CLOCK);
		e.offset = off;
		size_t size;
		if (weft_ev_is_jumbo(e.flags)) {
			if (s->len - off < WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD) {
				if (allow_cut)
					break;
				rt_test_fail("%s: truncated jumbo at offset %zu", path, off);
			}
			e.payload_size = weft_load_u32(p + WEFT_EV_OFF_PAYLOAD);
			e.payload = p + WEFT_EV_OFF_PAYLOAD + WEFT_EV_JUMBO_SIZE_FIELD;
			size = WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD + e.payload_size;
		} else {
			e.payload_size = weft_ev_payload_size(e.flags);
			e.payload = p + WEFT_EV_OFF_PAYLOAD;
			size = WEFT_EV_HEADER_SIZE + e.payload_size;
		}
		if (s->len - off < size) {
			if (allow_cut)
				break;
			rt_test_fail("%s: truncated event at offset %zu", path, off);
		}
		if (s->nev == cap) {
			cap *= 2;
			s->ev = realloc(s->ev, cap * sizeof *s->ev);
		}
		s->ev[s->nev++] = e;
		off += size;
	}
}

static inline void rt_test_stream_load(struct rt_test_stream *s, const char *path)
{
	rt_test_stream_load_opt(s, path, 0);
}

static inline void rt_test_stream_free(struct rt_test_stream *s)
{
	free(s->data);
	free(s->ev);
	s->data = NULL;
	s->ev = NULL;
}

/* Why libovni will refuse WEFT_CLOCK=tsc here (its checks, made again),
 * or NULL when it will take it. */
static inline const char *rt_test_tsc_refusal(void)
{
#if !defined(__x86_64__)
	return "this is not an x86-64 machine";
#else
	unsigned a, b, c, d;
	if (__get_cpuid(0x80000000u, &a, &b, &c, &d) == 0 || a < 0x80000007u
	    || __get_cpuid(0x80000007u, &a, &b, &c, &d) == 0 || (d & (1u << 8)) == 0)
		return "the CPU's time stamp counter is not invariant";
	char *cs = rt_test_read("/sys/devices/system/clocksource/clocksource0/current_clocksource", NULL);
	int ok = cs != NULL && strcmp(cs, "tsc\n") == 0;
	free(cs);
	return ok ? NULL : "the kernel does not use the time stamp counter as its clocksource";
#endif
}

/* A test that ctest runs a second time with WEFT_CLOCK=tsc: 77 (skipped,
 * saying why) where libovni would refuse it, else 0. */
static inline int rt_test_tsc_skip(const char *name)
{
	const char *clk = getenv("WEFT_CLOCK");
	if (clk == NULL || strcmp(clk, "tsc") != 0)
		return 0;
	const char *why = rt_test_tsc_refusal();
	if (why == NULL)
		return 0;
	fprintf(stderr, "%s: WEFT_CLOCK=tsc is refused here (%s): skipped\n", name, why);
	return 77;
}

#endif
