/* SPDX-License-Identifier: MIT */
/* paraver.h - internal: the three Paraver files (.prv, .pcf, .row). */
#ifndef WEFT_OUT_PARAVER_H
#define WEFT_OUT_PARAVER_H

#include <stdio.h>

#include "out.h"

/* Whether the .pcf of view (EMU_FILE_THREAD or EMU_FILE_CPU) lists the
 * catalogue's entry c (its Paraver type block); lost: a thread lost events
 * (emu_has_lost). The .pcf writer and the view files (cfg/) both ask. */
int paraver_pcf_lists(const struct emu_cat_entry *c, size_t view, int lost);
/* .pcf of a view (EMU_FILE_THREAD, EMU_FILE_CPU, a breakdown view). */
int paraver_pcf_write(FILE *f, const struct emu *emu, size_t view);
/* .row of a view. */
int paraver_row_write(FILE *f, const struct emu *emu, size_t view);
/* Writes a label (text that may come from the trace) with its control
 * characters escaped (weft_escape): a newline would forge a line. */
void paraver_put_label(FILE *f, const char *label);

#endif
