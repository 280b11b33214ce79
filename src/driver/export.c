/* SPDX-License-Identifier: MIT */
/*
 * export.c - weft_export() (driver.h): the trace opened as `weft export`
 * reads it, then written by the format's writer in src/out. CTF (ctf.h)
 * writes the trace's events as they are read; OTF2 (otf2.h) writes what
 * the emulation shows, so it is an output of an emulation run by
 * weft_emulate, given through its open_output hook: one read of the trace
 * feeds the engine, whose thread view's records the sink turns into
 * Enter/Leave and Metric events. It is not a format of the output registry
 * (weft emu -f): its output is a directory written aside and replaced as
 * weft export's are (--force), not files beside the trace's timelines.
 */
#include <stdio.h>
#include <string.h>

#include "ctf.h"
#include "driver.h"
#include "otf2.h"
#include "weft/weft.h"

static const struct {
	const char *name, *what;
	int built;
} formats[] = {
	{ "ctf", "CTF 1.8 (babeltrace2, Trace Compass): TSDL metadata, a data stream per thread",
		1 },
	{ "otf2", "OTF2 (Vampir, Scalasca, otf2-print): the emulation's regions and metrics, "
		"a location per thread",
#ifdef WEFT_HAVE_OTF2
		1
#else
		0
#endif
	},
};

int weft_export_format_built(size_t i)
{
	return i < weft_export_format_count() && formats[i].built;
}

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

#ifdef WEFT_HAVE_OTF2
struct otf2_hook {
	const struct weft_export_opts *o;
	struct out_otf2_stats st;
};

static struct out *open_otf2(void *ctx, const struct emu *emu, char *err, size_t errlen)
{
	struct otf2_hook *h = ctx;
	return out_otf2_open(h->o->outdir, h->o->force, emu, &h->st, err, errlen);
}
#endif

static int export_otf2(const struct weft_export_opts *o, struct weft_export_stats *st,
		char *err, size_t errlen)
{
#ifdef WEFT_HAVE_OTF2
	struct otf2_hook h = { o, { 0 } };
	WEFT_OPTS(weft_emulate_opts, eo, .path = o->path, .formats = NULL,
			.all_models = o->all_models, .models = o->models, .warn = o->warn,
			.ctx = o->ctx, .progress = o->progress, .stop = o->stop,
			.open_output = open_otf2, .hook_ctx = &h);
	if (weft_emulate(&eo, err, errlen) != 0)
		return -1;
	if (st != NULL) {
		memset(st, 0, sizeof *st);
		st->streams = h.st.locations;
		st->events = h.st.enters + h.st.leaves + h.st.samples;
		st->classes = h.st.regions;
		st->metrics = h.st.metrics;
		st->enters = h.st.enters;
		st->leaves = h.st.leaves;
		st->samples = h.st.samples;
	}
	return 0;
#else
	(void) o, (void) st;
	snprintf(err, errlen, "%s", WEFT_EXPORT_NO_OTF2);
	return -1;
#endif
}

int weft_export(const struct weft_export_opts *o, struct weft_export_stats *st, char *err,
		size_t errlen)
{
	if (o->sz != sizeof *o) {
		snprintf(err, errlen, "struct weft_export_opts: size %zu, this library's is %zu",
				o->sz, sizeof *o);
		return -1;
	}
	if (o->format != NULL && strcmp(o->format, "otf2") == 0)
		return export_otf2(o, st, err, errlen);
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
