/* SPDX-License-Identifier: MIT */
/* paraver_pcf.c - the configuration of a Paraver trace (.pcf): options,
 * colours and one EVENT_TYPE block per type with its value labels. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "paraver.h"

void paraver_put_label(FILE *f, const char *label)
{
	size_t n = strlen(label);
	if (weft_escape_clean(label, n) == n) {
		fputs(label, f);
		return;
	}
	char buf[512];
	size_t len = weft_escape(label, n, buf, sizeof buf);
	if (len < sizeof buf) {
		fputs(buf, f);
		return;
	}
	char *heap = malloc(len + 1);
	if (heap == NULL) {
		fputs(buf, f); /* truncated, still escaped */
		return;
	}
	weft_escape(label, n, heap, len + 1);
	fputs(heap, f);
	free(heap);
}

static void header(FILE *f)
{
	fprintf(f, "DEFAULT_OPTIONS\n\n");
	fprintf(f, "%-20s%s\n", "LEVEL", "THREAD");
	fprintf(f, "%-20s%s\n", "UNITS", "NANOSEC");
	fprintf(f, "%-20s%s\n", "LOOK_BACK", "100");
	fprintf(f, "%-20s%s\n", "SPEED", "1");
	fprintf(f, "%-20s%s\n", "FLAG_ICONS", "ENABLED");
	fprintf(f, "%-20s%s\n", "NUM_OF_STATE_COLORS", "1000");
	fprintf(f, "%-20s%s\n", "YMAX_SCALE", "37");
	fprintf(f, "\n\nDEFAULT_SEMANTIC\n\n");
	fprintf(f, "%-20s%s\n", "THREAD_FUNC", "State As Is");
	fprintf(f, "\n\nSTATES_COLOR\n");
	for (size_t i = 0; i < OUT_NCOLORS; i++)
		fprintf(f, "%-3zu {%3u, %3u, %3u}\n", i, out_colors[i][0], out_colors[i][1],
				out_colors[i][2]);
}

static void type_begin(FILE *f, int type, const char *label)
{
	fprintf(f, "\n\nEVENT_TYPE\n0 %-10d ", type);
	paraver_put_label(f, label);
	fputs("\nVALUES\n", f);
}

/* Values are written as 32-bit ints, as the reference does. */
static void value(FILE *f, int64_t v, const char *label)
{
	fprintf(f, "%-4d ", (int32_t) (uint32_t) (uint64_t) v);
	paraver_put_label(f, label);
	fputc('\n', f);
}

int paraver_pcf_lists(const struct emu_cat_entry *c, size_t view, int lost)
{
	return (c->scope & EMU_SCOPE_VIEW(view)) && c->prv_type != 0 && c->pcf != EMU_PCF_NEVER
		&& (c->pcf != EMU_PCF_IF_LOST || lost);
}

int paraver_pcf_write(FILE *f, const struct emu *emu, size_t view)
{
	const struct emu_view *v = emu_view_at(emu, view);
	header(f);
	if (v->breakdown) {
		const struct emu_value_label *vals;
		size_t nv;
		if (emu_view_values(emu, view, &vals, &nv)) {
			type_begin(f, v->prv_type, v->label);
			for (size_t k = 0; k < nv; k++)
				value(f, vals[k].value, vals[k].label);
		}
		return ferror(f) ? -1 : 0;
	}
	/* The catalogue's entries of this view that its .pcf lists, in id
	 * order: the thread's built-ins, the models' channels, the lost
	 * intervals (only when a thread lost events). */
	int cpu = view == EMU_FILE_CPU;
	int lost = emu_has_lost(emu);
	for (size_t i = 0; i < emu_cat_count(emu); i++) {
		const struct emu_cat_entry *c = emu_cat_at(emu, i);
		if (!paraver_pcf_lists(c, view, lost))
			continue;
		type_begin(f, c->prv_type, cpu ? c->cpu_label : c->thread_label);
		for (size_t k = 0; k < c->nvalues; k++) {
			if (c->values != NULL)
				value(f, c->values[k].value, c->values[k].label);
			else
				value(f, c->mvalues[k].value, c->mvalues[k].label);
		}
		for (size_t k = 0; c->info != NULL && k < c->info->ndyn; k++)
			value(f, c->info->dyn[k].value, c->info->dyn[k].label);
	}
	return ferror(f) ? -1 : 0;
}
