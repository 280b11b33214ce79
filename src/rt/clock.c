/* SPDX-License-Identifier: MIT */
/*
 * clock.c - the clock of the events (docs/runtime.md, "Clock"):
 * CLOCK_MONOTONIC by default, or with WEFT_CLOCK=tsc the time stamp counter
 * turned into nanoseconds of that same CLOCK_MONOTONIC.
 *
 * CLOCK_MONOTONIC is read by calling the vDSO's clock_gettime directly
 * (rt_clock_mono_ns): the function libc's clock_gettime calls itself,
 * found by rt_clock_setup in the kernel's image (vdso_sym), without libc's
 * wrapper and the PLT. Until then, and where there is none (valgrind hides
 * it; other architectures), libc's clock_gettime.
 *
 * TSC mode. ovni_clock_now (and every clock libovni reads itself: flush
 * pairs, marks, a crash's cut) reads the counter with rdtsc and converts
 * it: ns = base_ns + ((tsc - base_tsc) * mult) >> 32 (one 64-bit
 * multiplication while the ticks since base_tsc times mult fit; beyond,
 * rt_clock_conv_at's two). The parameters are process-wide, published as
 * a latch (two copies, all atomics: readers never wait, not even a signal
 * handler that interrupted an update); each thread converts with its own
 * copy, taken again when the latch moves (emit.c, clock_fast). They are calibrated against CLOCK_MONOTONIC at ovni_proc_init
 * (two readings 10 ms apart) and again at each write of a buffer (at most
 * once a millisecond, by whichever thread gets the calibration lock): the
 * rate is measured over the whole run since the first reading, and the
 * error of the converted clock against CLOCK_MONOTONIC at that moment is
 * corrected linearly over the next interval as long as the last one, by
 * tilting the slope. Each update starts where the old conversion is at
 * that moment, so the converted clock is continuous and never goes back;
 * a thread that read the old parameters a little after an update could
 * return a value a few ns ahead of the new line, so each thread also keeps
 * the last value it returned and never returns less (events stay in
 * order within a thread).
 *
 * The conversion is made when the clock is read, not when the buffer is
 * written: the clock of an event is whatever the program set with
 * ovni_ev_set_clock, which may come from elsewhere (a kernel event's own
 * CLOCK_MONOTONIC stamp), and must not be rewritten. What the write does
 * is the calibration.
 *
 * WEFT_CLOCK=tsc is refused unless the counter is invariant (CPUID leaf
 * 0x80000007, EDX bit 8: it ticks at a constant rate in every power state)
 * and the kernel itself uses it as its clocksource (it checked that the
 * counters of the CPUs agree): elsewhere the conversion would drift or
 * differ between CPUs.
 */
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <time.h>

#include "rt_internal.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

int rt_clock_tsc;

/* The conversion's parameters, twice (a latch): latch even, readers use
 * slot 0; odd, slot 1. An update (under cal_mu) makes latch odd, changes
 * slot 0, makes it even, changes slot 1, so that a reader always has a
 * whole slot, even a signal handler that interrupted the update on its
 * own thread (it never waits). All atomics. */
struct rt_clock_conv rt_clock_slots[2];
uint64_t rt_clock_latch;

/* The calibration (under cal_mu): the first reading and the last update. */
static pthread_mutex_t cal_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t anchor_tsc, anchor_ns, last_tsc;

#define CAL_MIN_NS 1000000ull /* recalibrate at most once a millisecond */

rt_clock_gettime_fn rt_clock_gettime = clock_gettime;

static uint64_t mono_ns(void)
{
	return rt_clock_mono_ns();
}

/* The vDSO (the kernel's ELF image mapped into every process, its address
 * in the auxiliary vector): the address of its function `name` (of the
 * dynamic symbol table, through DT_HASH, which gives the table's size), or
 * NULL. The image is linked at 0: its addresses are offsets from its
 * first PT_LOAD's start. */
static void *vdso_sym(const char *name)
{
	uintptr_t base = (uintptr_t) getauxval(AT_SYSINFO_EHDR);
	if (base == 0)
		return NULL; /* none (e.g. under valgrind) */
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *) base;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64)
		return NULL;
	const ElfW(Phdr) *ph = (const ElfW(Phdr) *) (base + eh->e_phoff);
	uintptr_t bias = 0;
	int have_load = 0;
	const ElfW(Dyn) *dyn = NULL;
	for (unsigned i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD && !have_load) {
			bias = base + ph[i].p_offset - ph[i].p_vaddr;
			have_load = 1;
		} else if (ph[i].p_type == PT_DYNAMIC) {
			dyn = (const ElfW(Dyn) *) (base + ph[i].p_offset);
		}
	}
	if (!have_load || dyn == NULL)
		return NULL;
	const ElfW(Sym) *sym = NULL;
	const char *str = NULL;
	const uint32_t *hash = NULL;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		if (dyn->d_tag == DT_SYMTAB)
			sym = (const ElfW(Sym) *) (bias + dyn->d_un.d_ptr);
		else if (dyn->d_tag == DT_STRTAB)
			str = (const char *) (bias + dyn->d_un.d_ptr);
		else if (dyn->d_tag == DT_HASH)
			hash = (const uint32_t *) (bias + dyn->d_un.d_ptr);
	}
	if (sym == NULL || str == NULL || hash == NULL)
		return NULL;
	for (uint32_t i = 0; i < hash[1]; i++) { /* nchain: the number of symbols */
		if (ELF64_ST_TYPE(sym[i].st_info) == STT_FUNC && sym[i].st_shndx != SHN_UNDEF
		    && strcmp(str + sym[i].st_name, name) == 0)
			return (void *) (bias + sym[i].st_value);
	}
	return NULL;
}

rt_clock_gettime_fn rt_clock_vdso_find(void)
{
#if defined(__x86_64__) || defined(__aarch64__)
#if defined(__x86_64__)
	void *p = vdso_sym("__vdso_clock_gettime");
#else
	void *p = vdso_sym("__kernel_clock_gettime");
#endif
	if (p == NULL)
		return NULL;
	rt_clock_gettime_fn fn;
	memcpy(&fn, &p, sizeof fn); /* an object pointer to a function pointer (POSIX dlsym's way) */
	struct timespec ts;
	if (fn(CLOCK_MONOTONIC, &ts) != 0)
		return NULL;
	return fn;
#else
	return NULL;
#endif
}

static inline uint64_t tsc_read(void)
{
	return rt_tsc_read();
}

const char *rt_clock_tsc_refusal(char *buf, size_t n)
{
#if !defined(__x86_64__)
	snprintf(buf, n, "this is not an x86-64 machine");
	return buf;
#else
	unsigned a, b, c, d;
	if (__get_cpuid(0x80000000u, &a, &b, &c, &d) == 0 || a < 0x80000007u
	    || __get_cpuid(0x80000007u, &a, &b, &c, &d) == 0 || (d & (1u << 8)) == 0) {
		snprintf(buf, n, "the CPU's time stamp counter is not invariant (CPUID 0x80000007 EDX bit 8 is "
				 "clear: its rate may change with the CPU's power state)");
		return buf;
	}
	static const char path[] = "/sys/devices/system/clocksource/clocksource0/current_clocksource";
	FILE *f = fopen(path, "r");
	char cs[64] = "";
	if (f == NULL || fgets(cs, sizeof cs, f) == NULL) {
		if (f != NULL)
			fclose(f);
		snprintf(buf, n, "cannot read the kernel's clocksource from %s", path);
		return buf;
	}
	fclose(f);
	cs[strcspn(cs, "\n")] = '\0';
	if (strcmp(cs, "tsc") != 0) {
		snprintf(buf, n, "the kernel does not use the time stamp counter as its clocksource (%s says '%s': it "
				 "found the counter unreliable or unsynchronized between CPUs)",
			 path, cs);
		return buf;
	}
	return NULL;
#endif
}

/* A (tsc, CLOCK_MONOTONIC) pair read as close together as possible: the
 * tightest of a few tries, the counter taken at the middle. */
static void sample(uint64_t *tsc, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 8; i++) {
		uint64_t t0 = tsc_read();
		uint64_t m = mono_ns();
		uint64_t t1 = tsc_read();
		if (t1 - t0 < best) {
			best = t1 - t0;
			*tsc = t0 + (t1 - t0) / 2u;
			*ns = m;
		}
	}
}

/* (ns << 32) / ticks, the rate in the conversion's fixed point. */
static uint64_t rate_of(uint64_t dns, uint64_t dtsc)
{
	if (dtsc == 0)
		return 1ull << 32;
	unsigned __int128 r = ((unsigned __int128) dns << 32) / dtsc;
	return r > UINT64_MAX ? UINT64_MAX : (uint64_t) r;
}

static void slot_set(struct rt_clock_conv *c, uint64_t base_tsc, uint64_t base_ns, uint64_t mult)
{
	__atomic_store_n(&c->base_tsc, base_tsc, __ATOMIC_SEQ_CST);
	__atomic_store_n(&c->base_ns, base_ns, __ATOMIC_SEQ_CST);
	__atomic_store_n(&c->mult, mult, __ATOMIC_SEQ_CST);
}

static void publish(uint64_t base_tsc, uint64_t base_ns, uint64_t mult)
{
	uint64_t l = __atomic_load_n(&rt_clock_latch, __ATOMIC_RELAXED);
	__atomic_store_n(&rt_clock_latch, l + 1u, __ATOMIC_SEQ_CST);
	slot_set(&rt_clock_slots[0], base_tsc, base_ns, mult);
	__atomic_store_n(&rt_clock_latch, l + 2u, __ATOMIC_SEQ_CST);
	slot_set(&rt_clock_slots[1], base_tsc, base_ns, mult);
}

void rt_clock_setup(const char *func, int tsc)
{
	/* Every process finds the same function (a fork()ed child has the
	 * parent's vDSO at the same address): a plain store. */
	rt_clock_gettime_fn vdso = rt_clock_vdso_find();
	if (vdso != NULL)
		__atomic_store_n(&rt_clock_gettime, vdso, __ATOMIC_RELAXED);
	if (!tsc) {
		__atomic_store_n(&rt_clock_tsc, 0, __ATOMIC_RELEASE);
		return;
	}
	char why[512];
	if (rt_clock_tsc_refusal(why, sizeof why) != NULL)
		rt_die(func, "WEFT_CLOCK=tsc cannot be used here: %s; unset WEFT_CLOCK (or set it to 'monotonic') to "
			     "use CLOCK_MONOTONIC",
		       why);
	pthread_mutex_lock(&cal_mu);
	uint64_t t0 = 0, m0 = 0, t1 = 0, m1 = 0;
	sample(&t0, &m0);
	struct timespec wait = {0, 10000000};
	while (nanosleep(&wait, &wait) != 0)
		;
	sample(&t1, &m1);
	anchor_tsc = t0;
	anchor_ns = m0;
	last_tsc = t1;
	publish(t1, m1, rate_of(m1 - m0, t1 - t0));
	pthread_mutex_unlock(&cal_mu);
	__atomic_store_n(&rt_clock_tsc, 1, __ATOMIC_RELEASE);
}

uint64_t rt_clock_event_now(void)
{
	if (__atomic_load_n(&rt_clock_tsc, __ATOMIC_RELAXED))
		return rt_clock_tsc_ns();
	return mono_ns();
}

void rt_clock_calibrate(void)
{
	if (!__atomic_load_n(&rt_clock_tsc, __ATOMIC_RELAXED))
		return;
	if (pthread_mutex_trylock(&cal_mu) != 0)
		return; /* another thread is at it */
	uint64_t t = 0, m = 0;
	sample(&t, &m);
	struct rt_clock_conv cur;
	rt_clock_conv_get(&cur);
	uint64_t bt = cur.base_tsc;
	uint64_t rate = rate_of(m - anchor_ns, t - anchor_tsc);
	uint64_t interval = t - last_tsc;
	/* at most once a millisecond (in ticks, at the measured rate) */
	if (t <= bt || t <= last_tsc || (((unsigned __int128) interval * rate) >> 32) < CAL_MIN_NS) {
		pthread_mutex_unlock(&cal_mu);
		return;
	}
	uint64_t c = rt_clock_conv_at(&cur, t);
	/* Tilt the slope so that the error is gone after an interval as
	 * long as the last one; within half and one and a half the rate. */
	__int128 err = (__int128) m - (__int128) c;
	__int128 mult = (__int128) rate + (err * ((__int128) 1 << 32)) / (__int128) interval;
	__int128 lo = (__int128) (rate / 2u), hi = (__int128) rate + (__int128) (rate / 2u);
	if (mult < lo)
		mult = lo;
	if (mult > hi)
		mult = hi;
	last_tsc = t;
	publish(t, c, (uint64_t) mult);
	pthread_mutex_unlock(&cal_mu);
}

