/* SPDX-License-Identifier: MIT */
/* cmd_check.c - `weft check PATH`: validate a trace strictly and summarise it. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli_common.h"
#include "commands.h"

static const char usage[] =
	"Usage: weft check PATH\n"
	"\n"
	"Validate the trace at PATH strictly: stream discovery, every stream.json (or\n"
	"v1 metadata.json) and the rules that merge them (threads, processes, looms,\n"
	"CPUs, marks, clock offsets), and every event of every binary stream (headers,\n"
	"sizes, clocks that never go back except inside unordered regions OU[ ... OU],\n"
	"models that some stream requires). Nothing is printed for the events; on\n"
	"success, one summary line (which counts the clocks going back in regions).\n"
	"Streams cut short (the file ends inside an event or the stream header: a run\n"
	"killed mid-write) are all named, one line each (the file, the offset where\n"
	"the partial event starts, what runs past the end), after reading every other\n"
	"stream to its end; such a trace is invalid (weft emu --salvage emulates it).\n"
	"\n"
	"Options:\n"
	"  -h, --help  show this help\n"
	"\n"
	"Exit status: 0 valid, 1 invalid (the first problem is printed; every cut\n"
	"stream), 2 usage error.\n";

int weft_cmd_check(int argc, char **argv)
{
	static const char *const longs[] = { NULL };
	int set[1] = { 0 };
	const char *path;
	int r = cli_parse(argc, argv, "check", usage, "", longs, set, &path);
	if (r == 1)
		return CLI_EXIT_OK;
	if (r != 0)
		return CLI_EXIT_USAGE;
	/* Streams cut short, and threads that did not end (no ovni.finished:
	 * a run killed), are found quietly and all named at the end. */
	struct weft_open_opts opts = { 0 };
	opts.mode = WEFT_STRICT;
	opts.clock = WEFT_CLOCK_OFFSET;
	opts.backwards = WEFT_BACKWARDS_REGIONS;
	opts.cut = WEFT_CUT_QUIET;
	opts.accept_unfinished = 2;
	struct weft_trace *t = cli_open_opts("check", path, &opts);
	if (t == NULL)
		return CLI_EXIT_TRACE;
	static struct weft_ref refs[256]; /* the reading checks; nothing to fill */
	long n;
	struct cli_progress prog;
	cli_progress_start(&prog, "check");
	while ((n = weft_next_refs(t, refs, 256)) > 0)
		cli_progress_tick(&prog, weft_nevents(t));
	cli_progress_end(&prog);
	r = n < 0 ? -1 : 0;
	/* Every stream cut short, in stream order (all known once the
	 * iteration ended; those found before an error otherwise). */
	size_t nbad = 0;
	for (size_t i = 0; i < weft_nstreams(t); i++) {
		struct weft_cut_info ci;
		const char *json = weft_stream_json_path(t, i);
		char msg[WEFT_ERR_MAX + 512];
		if (weft_stream_unfinished(t, i) && ++nbad) {
			snprintf(msg, sizeof msg, "%s: ovni.finished is missing (the thread did not "
					"end with ovni_thread_free)", json ? json : "?");
			cli_message("check", "", msg);
		}
		if (weft_stream_cut(t, i, &ci) && ++nbad) {
			snprintf(msg, sizeof msg, "%s: offset %" PRIu64 ": %s",
					weft_stream_at(t, i)->obs_path, ci.offset, ci.why);
			cli_message("check", "", msg);
		}
	}
	if (r == 0 && nbad > 0) {
		weft_close(t);
		return CLI_EXIT_TRACE;
	}
	if (r < 0) {
		cli_message("check", "", weft_error(t));
		weft_close(t);
		return CLI_EXIT_TRACE;
	}
	size_t nthreads = 0, nprocs = 0;
	for (size_t i = 0; i < weft_nlooms(t); i++) {
		const struct weft_loom *l = weft_loom_at(t, i);
		nprocs += l->nprocs;
		for (size_t k = 0; k < l->nprocs; k++)
			nthreads += l->procs[k]->nthreads;
	}
	size_t ns = weft_nstreams(t), nl = weft_nlooms(t);
	uint64_t nev = weft_nevents(t);
	printf("weft check: %s: valid: %zu stream%s, %zu loom%s, %zu process%s, %zu thread%s, "
			"%" PRIu64 " event%s", path, ns, ns == 1 ? "" : "s", nl, nl == 1 ? "" : "s",
			nprocs, nprocs == 1 ? "" : "es", nthreads, nthreads == 1 ? "" : "s", nev,
			nev == 1 ? "" : "s");
	if (nev > 0)
		/* last >= first: the span fits an unsigned 64-bit value even
		 * from INT64_MIN to INT64_MAX */
		printf(", from %" PRId64 " to %" PRId64 " ns (span %" PRIu64 " ns)",
				weft_first_clock(t), weft_last_clock(t),
				(uint64_t) weft_last_clock(t) - (uint64_t) weft_first_clock(t));
	/* allowed, but worth knowing */
	uint64_t nun = weft_nbackwards(t, 1);
	if (nun > 0)
		printf("; %" PRIu64 " %s backwards inside %s (allowed; weft emu sorts %s on "
				"read)", nun, nun == 1 ? "clock goes" : "clocks go",
				nun == 1 ? "an unordered region" : "unordered regions",
				nun == 1 ? "it" : "them");
	printf("\n");
	weft_close(t);
	if (fflush(stdout) != 0) {
		fprintf(stderr, "weft check: cannot write the output\n");
		return CLI_EXIT_TRACE;
	}
	return CLI_EXIT_OK;
}
