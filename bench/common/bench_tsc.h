/* SPDX-License-Identifier: MIT */
/* bench_tsc.h - whether a benchmark can run libovni's WEFT_CLOCK=tsc. */
#ifndef WEFT_BENCH_TSC_H
#define WEFT_BENCH_TSC_H

/* Whether libovni will take WEFT_CLOCK=tsc here (its own checks, in short:
 * an x86-64 CPU with an invariant TSC that the kernel uses as its
 * clocksource): 1, or 0 with *why set to the reason. */
int bench_tsc_usable(const char **why);

#endif
