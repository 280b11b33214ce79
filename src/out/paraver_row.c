/* SPDX-License-Identifier: MIT */
/* paraver_row.c - the row labels of a Paraver trace (.row). */
#include "paraver.h"

int paraver_row_write(FILE *f, const struct emu *emu, size_t view)
{
	const struct emu_sys *sys = emu_system(emu);
	const struct emu_view *v = emu_view_at(emu, view);
	if (v->breakdown) {
		/* Without its labels (the model's end step stopped), the
		 * reference leaves the file empty. */
		const struct emu_value_label *vals;
		size_t nv;
		if (!emu_view_values(emu, view, &vals, &nv))
			return 0;
	}
	size_t n = v->nrows;
	fprintf(f, "LEVEL NODE SIZE 1\nhostname\n\nLEVEL THREAD SIZE %zu\n", n);
	for (size_t i = 0; i < n; i++) {
		char buf[64];
		const char *l = buf;
		if (view == EMU_FILE_THREAD)
			l = sys->threads[i].label;
		else if (view == EMU_FILE_CPU)
			l = sys->cpus[i].label;
		else
			emu_view_row_label(emu, view, i, buf, sizeof buf);
		paraver_put_label(f, l);
		fputc('\n', f);
	}
	return ferror(f) ? -1 : 0;
}
