/* SPDX-License-Identifier: MIT */
/*
 * cmd_export.c - `weft export FORMAT TRACE -o DIR`: the trace written in a
 * format other tools read (driver.h: weft_export; CTF 1.8 for babeltrace2
 * and Trace Compass, src/out/ctf.h; docs/export.md).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "cli_opts.h"
#include "commands.h"
#include "driver.h"

#define CMD "export"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: weft export FORMAT [--force] [-a] [--model FILE]... [--packet-size BYTES]\n"
		"                   [-q] TRACE -o DIR\n"
		"\n"
		"Write the trace at TRACE (a trace directory) in FORMAT into the directory DIR,\n"
		"for the tools that read that format (docs/export.md). Formats:\n");
	for (size_t i = 0; i < weft_export_format_count(); i++) {
		const char *what;
		const char *name = weft_export_format_at(i, &what);
		fprintf(f, "  %-6s %s%s\n", name, what, weft_export_format_built(i) ? "" :
				" (not in this build: it needs the OTF2 library)");
	}
	fprintf(f,
		"\n"
		"ctf: one CTF event class per event of the models the trace enables (ovni,\n"
		"those its streams require, and with -a every one), its payload fields named\n"
		"and typed from the model's description (a jumbo event's data past them as a\n"
		"sequence); an event no description fits is kept as its MCV and payload bytes\n"
		"(weft:raw, weft:raw_jumbo). One data stream per thread (loom, pid, tid, rank\n"
		"and the stream's path in each packet's context); a packet's events_discarded\n"
		"counts the events the stream lacks (weft check's lost events). The timestamps\n"
		"are ns of the clock \"monotonic\", whose offset is the trace's clock offset.\n"
		"The unordered regions (OU[ ... OU]) are sorted while reading; metadata\n"
		"problems are warnings, as in weft dump.\n"
		"\n"
		"otf2: the trace emulated as weft emu does (the models it requires, -a every\n"
		"one, --model), its thread view written through the OTF2 library: a system\n"
		"tree node per loom, a location group per process, a location per thread; a\n"
		"region per value of each channel drawn as slices (thread state, subsystems,\n"
		"task types, MPI and TAMPI functions, marks, ...), entered and left as\n"
		"weft sql's intervals of view 'thread' begin and end, properly nested; a\n"
		"metric per counter; timestamps in ns from the trace's first clock (the\n"
		"global offset). A weft built without the library refuses it (exit 2).\n"
		"\n"
		"DIR is written aside (DIR.weft-FORMAT-XXXXXX beside it), renamed at the end,\n"
		"so a failed or interrupted export leaves DIR as it was. DIR may be absent or\n"
		"an empty directory; a directory that holds files is replaced only with\n"
		"--force and only when it is a trace weft export wrote in FORMAT; a symbolic\n"
		"link is never followed nor replaced.\n"
		"\n"
		"Options:\n"
		"  -o, --output DIR  the directory to write (required)\n"
		"  --force           replace DIR when it holds a trace weft export wrote\n"
		"  -a, --all-models  every model, whatever the streams require (ctf: their\n"
		"                    event classes; otf2: emulated, as weft emu -a)\n"
		"  --model FILE      add the model FILE describes (repeatable; docs/models.md):\n"
		"                    ctf: its events get classes of their own; otf2: its\n"
		"                    channels are emulated\n"
		"  --packet-size BYTES  ctf: packets of at most BYTES (4096 to 1073741824;\n"
		"                    65536 by default); an event larger than that has a\n"
		"                    packet of its own\n"
		"  -q, --quiet       no summary line on stdout\n"
		"  --follow-links    ctf: follow the symbolic links that lead out of TRACE (by\n"
		"                    default each is named in a warning and not followed)\n"
		"  -h, --help        show this help\n"
		"\n"
		"Exit status: 0 success, 1 trace or write error, 2 usage error; SIGINT, SIGTERM\n"
		"or SIGHUP stops the export (nothing written): 128 + the signal's number.\n");
}

enum { X_OUTPUT, X_FORCE, X_ALL, X_MODEL, X_QUIET, X_LINKS, X_PACKET };

static const struct cli_opt export_opts[] = {
	{ "output", 'o', "DIR", X_OUTPUT },
	{ "force", 0, NULL, X_FORCE },
	{ "all-models", 'a', NULL, X_ALL },
	{ "model", 0, "FILE", X_MODEL },
	{ "quiet", 'q', NULL, X_QUIET },
	{ "follow-links", 0, NULL, X_LINKS },
	{ "packet-size", 0, "BYTES", X_PACKET },
	{ NULL, 0, NULL, 0 },
};

struct export_args {
	const char *out, *packet;
	int force, all, quiet;
	struct cli_models *mf;
};

static int export_opt(void *ctx, int id, const char *opt, const char *val)
{
	(void) opt;
	struct export_args *a = ctx;
	switch (id) {
	case X_OUTPUT: a->out = val; break;
	case X_FORCE: a->force = 1; break;
	case X_ALL: a->all = 1; break;
	case X_MODEL: a->mf->files[a->mf->n++] = val; break;
	case X_QUIET: a->quiet = 1; break;
	case X_LINKS: cli_follow_links = 1; break;
	case X_PACKET: a->packet = val; break;
	default: abort();
	}
	return 0;
}

static int run_export(const char *format, const char *path, const struct export_args *a,
		size_t packet, const struct weft_registry *models)
{
	WEFT_OPTS(weft_export_opts, o, .format = format, .path = path, .outdir = a->out,
			.force = a->force, .all_models = a->all, .models = models,
			.follow_links = cli_follow_links, .warn = cli_warn, .ctx = (void *) CMD,
			.progress = cli_progress_emulate, .stop = &cli_stop_sig,
			.packet_size = packet);
	cli_arm_stop();
	struct cli_progress prog;
	cli_progress_start(&prog, CMD, cli_obs_total_dir(path));
	struct weft_export_stats st;
	char err[WEFT_ERR_MAX + 4200];
	int r = weft_export(&o, &st, err, sizeof err);
	cli_progress_end(&prog);
	if (r != 0) {
		if (cli_stop_sig != 0) {
			fprintf(stderr, "weft %s: interrupted by %s; nothing written\n", CMD,
					cli_stop_name(cli_stop_sig));
			return 128 + cli_stop_sig;
		}
		cli_message(CMD, "", err);
		return CLI_EXIT_TRACE;
	}
	if (!a->quiet && strcmp(format, "otf2") == 0)
		printf("weft %s: %s: %" PRIu64 " location%s, %" PRIu64 " region%s, %" PRIu64
				" metric%s, %" PRIu64 " events (%" PRIu64 " enter, %" PRIu64 " leave, %"
				PRIu64 " metric)\n", CMD, a->out, st.streams, st.streams == 1 ? "" : "s",
				st.classes, st.classes == 1 ? "" : "s", st.metrics,
				st.metrics == 1 ? "" : "s", st.events, st.enters, st.leaves, st.samples);
	else if (!a->quiet)
		printf("weft %s: %s: %" PRIu64 " stream%s, %" PRIu64 " event%s (%" PRIu64
				" raw), %" PRIu64 " event classes, %" PRIu64 " events discarded, %"
				PRIu64 " packets, %" PRIu64 " bytes\n", CMD, a->out, st.streams,
				st.streams == 1 ? "" : "s", st.events, st.events == 1 ? "" : "s",
				st.raw, st.classes, st.discarded, st.packets, st.bytes);
	return CLI_EXIT_OK;
}

static int cmd_export(int argc, char **argv, struct cli_models *mf)
{
	struct export_args a = { NULL, NULL, 0, 0, 0, mf };
	const char **pos = cli_operands(argc);
	int npos = 0;
	int pr = cli_opts_parse(CMD, export_opts, argc, argv, export_opt, &a, pos, &npos);
	const char *format = npos > 0 ? pos[0] : NULL, *path = npos > 1 ? pos[1] : NULL;
	int extra = npos > 2;
	free(pos);
	if (pr == CLI_OPTS_HELP) {
		usage(stdout);
		return CLI_EXIT_OK;
	}
	if (pr != 0)
		return CLI_EXIT_USAGE;
	if (format == NULL)
		return cli_usage_error(CMD, "missing FORMAT (ctf or otf2)");
	size_t nf = weft_export_format_count();
	const char *names[8];
	size_t f;
	for (f = 0; f < nf && f < 8; f++) {
		names[f] = weft_export_format_at(f, NULL);
		if (strcmp(names[f], format) == 0)
			break;
	}
	if (f == nf || f == 8) {
		char what[256];
		const char *sugg = cli_suggest(format, names, nf < 8 ? nf : 8);
		if (sugg != NULL)
			snprintf(what, sizeof what, "unknown format '%.64s' (did you mean '%s'?)",
					format, sugg);
		else
			snprintf(what, sizeof what, "unknown format '%.64s' (one of: ctf, otf2)",
					format);
		return cli_usage_error(CMD, what);
	}
	if (!weft_export_format_built(f)) {
		char what[512];
		snprintf(what, sizeof what, "%s: %s", format, WEFT_EXPORT_NO_OTF2);
		return cli_usage_error(CMD, what);
	}
	if (path == NULL)
		return cli_usage_error(CMD, "missing TRACE (a trace directory)");
	if (extra)
		return cli_usage_error(CMD, "more than a FORMAT and a TRACE");
	if (a.out == NULL)
		return cli_usage_error(CMD, "missing -o DIR (the directory to write)");
	if (a.out[0] == '\0')
		return cli_usage_error(CMD, "-o needs a DIR");
	if (cli_follow_links && strcmp(format, "ctf") != 0)
		return cli_usage_error(CMD, "--follow-links is an option of ctf only");
	size_t packet = 0;
	if (a.packet != NULL) {
		char *end;
		unsigned long long v = strtoull(a.packet, &end, 10);
		if (end == a.packet || *end != '\0' || v < 4096 || v > (1ull << 30))
			return cli_usage_error(CMD, "--packet-size needs a number of bytes from "
					"4096 to 1073741824");
		packet = (size_t) v;
		if (strcmp(format, "ctf") != 0)
			return cli_usage_error(CMD, "--packet-size is an option of ctf only");
	}
	/* a malformed model file is refused before anything is read or written */
	struct weft_registry *models = cli_registry(CMD, mf);
	if (models == NULL)
		return CLI_EXIT_TRACE;
	int r = run_export(format, path, &a, packet, models);
	weft_registry_free(models);
	return r;
}

int weft_cmd_export(int argc, char **argv)
{
	struct cli_models mf;
	cli_models_init(&mf, argc);
	int r = cmd_export(argc, argv, &mf);
	free(mf.files);
	return r;
}
