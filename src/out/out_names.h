/* SPDX-License-Identifier: MIT */
/*
 * out_names.h - part of the outputs' interface (with out.h): the Paraver
 * names of a view, its .pcf text (types and values) and .row text (rows),
 * written into any FILE, for the driver's callers that collect the records
 * with an output of their own (driver.h: weft_emulate_pcf_write). The same
 * text as the Paraver output's files.
 */
#ifndef WEFT_OUT_NAMES_H
#define WEFT_OUT_NAMES_H

#include <stddef.h>
#include <stdio.h>

#include "paraver.h"

/* 0, or -1 on a write error. */
static inline int out_view_pcf_write(FILE *f, const struct emu *emu, size_t view)
{
	return paraver_pcf_write(f, emu, view);
}

static inline int out_view_row_write(FILE *f, const struct emu *emu, size_t view)
{
	return paraver_row_write(f, emu, view);
}

#endif
