/* SPDX-License-Identifier: MIT */
/* out.c - the part of the output interface shared by every format. */
#include <string.h>

#include "out.h"

static const struct out_format formats[] = {
	{ "paraver", "<view>.prv/.pcf/.row for each view (thread, cpu, breakdowns)",
		out_paraver_open },
	{ "paraver-cfg", "cfg/: Paraver view files (.cfg), one per view of each channel",
		out_paraver_cfg_open },
	{ "perfetto", "perfetto.pftrace (Perfetto protobuf TrackEvents)", out_perfetto_open },
	{ "sqlite", "timeline.db (SQLite: the system, channels, intervals, streams and events; weft sql)",
		out_sqlite_open },
};

size_t out_format_count(void)
{
	return sizeof formats / sizeof formats[0];
}

const struct out_format *out_format_at(size_t i)
{
	return i < out_format_count() ? &formats[i] : NULL;
}

const struct out_format *out_format_by_name(const char *name)
{
	for (size_t i = 0; i < out_format_count(); i++)
		if (strcmp(formats[i].name, name) == 0)
			return &formats[i];
	return NULL;
}

struct emu_sink out_sink(struct out *o)
{
	struct emu_sink s = { o, o->ops->records, o->ops->internal };
	return s;
}

int out_close(struct out *o, int64_t duration, char *err, size_t errlen)
{
	if (o == NULL)
		return 0;
	return o->ops->close(o, duration, err, errlen);
}

int out_commit(struct out *o, char *err, size_t errlen)
{
	if (o == NULL || o->ops->commit == NULL)
		return 0;
	return o->ops->commit(o, err, errlen);
}

void out_discard(struct out *o)
{
	if (o != NULL && o->ops->discard != NULL)
		o->ops->discard(o);
}

int out_input(struct out *o, const struct out_input *in, char *err, size_t errlen)
{
	if (o == NULL || o->ops->input == NULL)
		return 0;
	return o->ops->input(o, in, err, errlen);
}

int out_events(struct out *o, const struct weft_event *evs, size_t n, char *err, size_t errlen)
{
	if (o == NULL || o->ops->events == NULL)
		return 0;
	return o->ops->events(o, evs, n, err, errlen);
}
