/* SPDX-License-Identifier: MIT */
/* paraver.h - internal: the three Paraver files (.prv, .pcf, .row). */
#ifndef WEFT_OUT_PARAVER_H
#define WEFT_OUT_PARAVER_H

#include <stdio.h>

#include "out.h"

/* .pcf of the thread (cpu = 0) or CPU (cpu = 1) view. */
int paraver_pcf_write(FILE *f, const struct emu *emu, int cpu);
/* .row of the thread (cpu = 0) or CPU (cpu = 1) view. */
int paraver_row_write(FILE *f, const struct emu_sys *sys, int cpu);

#endif
