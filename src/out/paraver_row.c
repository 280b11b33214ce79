/* SPDX-License-Identifier: MIT */
/* paraver_row.c - the row labels of a Paraver trace (.row). */
#include "paraver.h"

int paraver_row_write(FILE *f, const struct emu_sys *sys, int cpu)
{
	size_t n = cpu ? sys->ncpus : sys->nthreads;
	fprintf(f, "LEVEL NODE SIZE 1\nhostname\n\nLEVEL THREAD SIZE %zu\n", n);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s\n", cpu ? sys->cpus[i].label : sys->threads[i].label);
	return ferror(f) ? -1 : 0;
}
