/* SPDX-License-Identifier: MIT */
/* views_text.c - the Paraver names of a run's views (.pcf and .row text)
 * for the callers of weft_emulate() that collect the records with an output
 * of their own (driver.h; python/_weft.c). */
#include "driver.h"
#include "out_names.h"

int weft_emulate_pcf_write(FILE *f, const struct emu *emu, size_t view)
{
	return out_view_pcf_write(f, emu, view);
}

int weft_emulate_row_write(FILE *f, const struct emu *emu, size_t view)
{
	return out_view_row_write(f, emu, view);
}
