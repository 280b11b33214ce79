/* SPDX-License-Identifier: MIT */
/* bench_tsc.c - whether a benchmark can run WEFT_CLOCK=tsc (bench_tsc.h). */
#include <stdio.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "bench_tsc.h"

int bench_tsc_usable(const char **why)
{
#if defined(__x86_64__)
	unsigned a, b, c, d;
	if (__get_cpuid(0x80000000u, &a, &b, &c, &d) == 0 || a < 0x80000007u
	    || __get_cpuid(0x80000007u, &a, &b, &c, &d) == 0 || (d & (1u << 8)) == 0) {
		*why = "the TSC is not invariant";
		return 0;
	}
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
	char cs[64] = "";
	int ok = f != NULL && fgets(cs, sizeof cs, f) != NULL && strncmp(cs, "tsc", 3) == 0;
	if (f != NULL)
		fclose(f);
	if (!ok)
		*why = "the kernel's clocksource is not tsc";
	return ok;
#else
	*why = "not an x86-64 machine";
	return 0;
#endif
}
