/* SPDX-License-Identifier: MIT */
/*
 * export.c - weft_export() (driver.h): the trace opened as `weft export`
 * reads it, then written by the format's writer in src/out (CTF: ctf.h).
 */
#include <stdio.h>
#include <string.h>

#include "ctf.h"
#include "driver.h"
#include "weft/weft.h"

static const struct {
	const char *name, *what;
} formats[] = {
	{ "ctf", "CTF 1.8 (babeltrace2, Trace Compass): TSDL metadata, a data stream per thread" },
};

size_t weft_export_format_count(void)
{
	return sizeof formats / sizeof formats[0];
}

const char *weft_export_format_at(size_t i, const char **what)
{
	if (i >= weft_export_format_count())
		return NULL;
	if (what != NULL)
		*what = formats[i].what;
	return formats[i].name;
}

int weft_export(const struct weft_export_opts *o, struct weft_export_stats *st, char *err,
		size_t errlen)
{
	if (o->sz != sizeof *o) {
		snprintf(err, errlen, "struct weft_export_opts: size %zu, this library's is %zu",
				o->sz, sizeof *o);
		return -1;
	}
	if (o->format == NULL || strcmp(o->format, "ctf") != 0) {
		snprintf(err, errlen, "unknown export format '%s'", o->format ? o->format : "");
		return -1;
	}
	WEFT_OPTS(weft_open_opts, oo, .mode = WEFT_LENIENT, .warn = o->warn, .warn_ctx = o->ctx,
			.clock = WEFT_CLOCK_OFFSET, .backwards = WEFT_BACKWARDS_ERROR,
			.sort = WEFT_SORT_REGIONS, .cut = WEFT_CUT_ERROR,
			.follow_links = o->follow_links);
	struct weft_trace *t = weft_open(o->path, &oo, err, errlen);
	if (t == NULL)
		return -1;
	struct ctf_opts co = {
		.trace = t, .trace_path = o->path, .models = o->models,
		.all_models = o->all_models, .outdir = o->outdir, .force = o->force,
		.stop = o->stop, .progress = o->progress, .ctx = o->ctx,
		.packet_size = o->packet_size,
	};
	struct ctf_stats cs;
	int r = ctf_export(&co, &cs, err, errlen);
	weft_close(t);
	if (r == 0 && st != NULL) {
		st->streams = cs.streams;
		st->events = cs.events;
		st->raw = cs.raw;
		st->classes = cs.classes;
		st->discarded = cs.discarded;
		st->packets = cs.packets;
		st->bytes = cs.bytes;
	}
	return r;
}
