/* SPDX-License-Identifier: MIT */
/*
 * cmd_view.c - `weft view TRACE --png/--svg/--pdf FILE`: pictures of a
 * window of the timeline (view_picture.h). A minimal front end for the
 * pictures; the HTML page of weft view has its own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "cli_opts.h"
#include "commands.h"
#include "view_picture.h"

static void view_usage(FILE *f)
{
	fprintf(f,
		"Usage: weft view [--png FILE] [--svg FILE] [--pdf FILE] [--size WxH]\n"
		"                 [--channel NAME] [--from T0] [--to T1] [--model FILE]... TRACE\n"
		"\n"
		"Draw a window of the trace's timeline: a row per thread, then per CPU, each\n"
		"interval in the colour of its value, a time axis, a legend and the time per\n"
		"value in the window.\n"
		"\n"
		"  --png FILE, --svg FILE, --pdf FILE  the pictures to write (one or more)\n"
		"  --size WxH      the size in pixels (default 1600x900; each side 200 to\n"
		"                  16384, at most 67108864 pixels)\n"
		"  --channel NAME  the channel drawn, a catalogue name (default\n"
		"                  ovni.thread.state; e.g. nosv.subsystem, cpu.running.pid)\n"
		"  --from T0, --to T1  the window, as weft emu takes it\n"
		"  --model FILE    add the model described by FILE (repeatable)\n"
		"  -h, --help      this help\n"
		"Each file is written aside and renamed over FILE once every picture is\n"
		"drawn. Exit status: 0, 1 when the trace or a file fails, 2 on usage errors.\n"
		"See docs/pictures.md.\n");
}

enum { V_PNG, V_SVG, V_PDF, V_SIZE, V_CHANNEL, V_FROM, V_TO, V_MODEL };

static const struct cli_opt view_opts[] = {
	{ "png", 0, "FILE", V_PNG },
	{ "svg", 0, "FILE", V_SVG },
	{ "pdf", 0, "FILE", V_PDF },
	{ "size", 0, "WxH", V_SIZE },
	{ "channel", 0, "NAME", V_CHANNEL },
	{ "from", 0, "a time", V_FROM },
	{ "to", 0, "a time", V_TO },
	{ "model", 0, "FILE", V_MODEL },
	{ NULL, 0, NULL, 0 },
};

struct view_args {
	struct view_picture_req req;
	const char *size;
	const char **models;
	int nmodels;
};

static int view_opt(void *ctx, int id, const char *opt, const char *val)
{
	(void) opt;
	struct view_args *a = ctx;
	switch (id) {
	case V_PNG: a->req.png = val; break;
	case V_SVG: a->req.svg = val; break;
	case V_PDF: a->req.pdf = val; break;
	case V_SIZE: a->size = val; break;
	case V_CHANNEL: a->req.channel = val; break;
	case V_FROM: a->req.from = val; break;
	case V_TO: a->req.to = val; break;
	case V_MODEL: a->models[a->nmodels++] = val; break;
	default: abort();
	}
	return 0;
}

int weft_cmd_view(int argc, char **argv)
{
	struct view_args a;
	memset(&a, 0, sizeof a);
	a.models = calloc((size_t) argc + 1, sizeof *a.models);
	const char **pos = cli_operands(argc);
	if (a.models == NULL)
		abort();
	int npos = 0;
	int pr = cli_opts_parse("view", view_opts, argc, argv, view_opt, &a, pos, &npos);
	const char *trace = pos[0];
	free(pos);
	int rc = 0;
	char err[WEFT_ERR_MAX];
	if (pr == CLI_OPTS_HELP) {
		view_usage(stdout);
	} else if (pr != 0) {
		rc = pr;
	} else if (npos != 1) {
		rc = cli_usage_error("view", "expected one TRACE");
	} else if (a.size != NULL && view_picture_parse_size(a.size, &a.req.width, &a.req.height,
				err, sizeof err) != 0) {
		fprintf(stderr, "weft view: %s\n", err);
		rc = 2;
	} else if (!a.req.png && !a.req.svg && !a.req.pdf) {
		rc = cli_usage_error("view", "no picture asked for: give --png, --svg or --pdf FILE");
	} else {
		a.req.trace = trace;
		a.req.models = a.models;
		if (view_picture_run(&a.req, err, sizeof err) != 0) {
			cli_message("view", "", err);
			rc = 1;
		}
	}
	free(a.models);
	return rc;
}
