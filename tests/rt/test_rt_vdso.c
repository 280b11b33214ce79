/* SPDX-License-Identifier: MIT */
/*
 * test_rt_vdso - the clock without WEFT_CLOCK=tsc (docs/runtime.md, "The
 * write path's cost"): libovni calls the vDSO's clock_gettime directly,
 * found in the image that AT_SYSINFO_EHDR names. Linked with the static
 * library to reach the internal functions:
 *   - rt_clock_vdso_find gives the very function that the dynamic loader
 *     gives for the vDSO's versioned symbol (dlvsym on linux-vdso.so.1), on
 *     x86-64 and aarch64 (skipped elsewhere and where there is no vDSO);
 *   - before ovni_proc_init the clock is libc's clock_gettime, after it
 *     the vDSO's function, and ovni_clock_now (as the events'
 *     clocks) stays between two CLOCK_MONOTONIC reads around it and never
 *     goes back, in a forked child (a process is initialized once).
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/auxv.h>
#include <cmocka.h>

#include "ovni.h"
#include "rt_internal.h"
#include "rt_test.h"

#define READS 200000

#if defined(__x86_64__)
#define VDSO_NAME "__vdso_clock_gettime"
#define VDSO_VERSION "LINUX_2.6"
#elif defined(__aarch64__)
#define VDSO_NAME "__kernel_clock_gettime"
#define VDSO_VERSION "LINUX_2.6.39"
#endif

/* The vDSO's clock_gettime as the dynamic loader finds it, or NULL. */
static void *loader_vdso(void)
{
#if defined(VDSO_NAME)
	if (getauxval(AT_SYSINFO_EHDR) == 0)
		return NULL;
	void *h = dlopen("linux-vdso.so.1", RTLD_LAZY | RTLD_NOLOAD);
	if (h == NULL)
		return NULL;
	void *p = dlvsym(h, VDSO_NAME, VDSO_VERSION);
	dlclose(h);
	return p;
#else
	return NULL;
#endif
}

static uint64_t mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

static void test_find(void **s)
{
	(void) s;
	void *want = loader_vdso();
	if (want == NULL) {
		fprintf(stderr, "test_rt_vdso: no vDSO clock_gettime the loader knows here (%s)\n",
			getauxval(AT_SYSINFO_EHDR) == 0 ? "no vDSO" : "not x86-64 or aarch64");
		skip();
	}
	rt_clock_gettime_fn got = rt_clock_vdso_find();
	void *gp;
	memcpy(&gp, &got, sizeof gp);
	assert_ptr_equal(gp, want);
}

struct child {
	char dir[512];
	int before_libc;   /* rt_clock_gettime was libc's before ovni_proc_init */
	int after_vdso;    /* it was rt_clock_vdso_find's after it */
	int has_vdso;      /* rt_clock_vdso_find found one */
	long outside;      /* reads outside [a, b] */
	long back;         /* reads below the one before */
	long reads;
};

static void child_main(void *p)
{
	struct child *ch = p;
	setenv("OVNI_TRACEDIR", ch->dir, 1);
	unsetenv("WEFT_CLOCK");
	rt_clock_gettime_fn libc = clock_gettime;
	ch->before_libc = __atomic_load_n(&rt_clock_gettime, __ATOMIC_RELAXED) == libc;
	int pid = (int) getpid();
	ovni_proc_init(1, "vdso", pid);
	rt_clock_gettime_fn vdso = rt_clock_vdso_find();
	ch->has_vdso = vdso != NULL;
	ch->after_vdso = __atomic_load_n(&rt_clock_gettime, __ATOMIC_RELAXED) == (vdso != NULL ? vdso : libc);
	ovni_thread_init(pid);
	uint64_t prev = 0;
	for (long i = 0; i < READS; i++) {
		uint64_t a = mono();
		uint64_t c = ovni_clock_now();
		uint64_t b = mono();
		if (c < a || c > b)
			ch->outside++;
		if (c < prev)
			ch->back++;
		prev = c;
		ch->reads++;
	}
	ovni_thread_free();
	ovni_proc_fini();
}

static void test_hot_path(void **s)
{
	(void) s;
	struct child ch;
	memset(&ch, 0, sizeof ch);
	snprintf(ch.dir, sizeof ch.dir, "%s/hot", rt_test_dir);
	assert_true(rt_test_in_proc(child_main, &ch, sizeof ch));
	assert_int_equal(ch.before_libc, 1);
	assert_int_equal(ch.after_vdso, 1);
	assert_int_equal(ch.has_vdso, loader_vdso() != NULL);
	assert_int_equal(ch.reads, READS);
	assert_int_equal(ch.outside, 0);
	assert_int_equal(ch.back, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_find),
		cmocka_unit_test(test_hot_path),
	};
	return cmocka_run_group_tests(tests, rt_test_group_setup, rt_test_group_teardown);
}
