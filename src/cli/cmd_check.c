/* SPDX-License-Identifier: MIT */
/* cmd_check.c - `weft check PATH`: validate a trace strictly and summarise it. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "commands.h"
#include "obs_format.h"

static const char usage[] =
	"Usage: weft check [-r] [--model FILE]... PATH\n"
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
	"A stream that a crashed run wrote with WEFT_CRASH=flush is named with the\n"
	"signal (or the exit without ovni_proc_fini) and the clock of the cut; such a\n"
	"trace is invalid too (its threads did not end). Events a stream lacks are\n"
	"listed after the verdict, one line per stream and, for a flight recorder\n"
	"(WEFT_RING), one per run of overwritten events with its clock range.\n"
	"\n"
	"Options:\n"
	"  --model FILE  add the model FILE describes to the run's models\n"
	"              (repeatable; see docs/models.md): a malformed file is\n"
	"              refused (FILE:LINE: reason, exit status 1) before the\n"
	"              trace is read; the checks are those of the trace format\n"
	"  -r, --rates  after the verdict, where the time goes: the events in each\n"
	"              twentieth of the run, with their rate in events per second\n"
	"  --follow-links  follow the symbolic links that lead out of PATH (by\n"
	"              default each is named in a warning and not followed)\n"
	"  -h, --help  show this help\n"
	"\n"
	"Exit status: 0 valid, 1 invalid (the first problem is printed; every cut\n"
	"stream), 2 usage error.\n";

/* ---- --rates: events over the run ----
 * Counts go into NFINE bins of a width that doubles (merging bins pairwise)
 * whenever an event falls past the last one, so the memory is fixed and the
 * span need not be known before the pass. A clock before the first event's
 * (gone back in an unordered region) counts in the first bin. */
#define NFINE 4096u
#define NSHOW 20u

struct rates {
	int any;
	int64_t first;
	uint64_t width; /* ns per fine bin, a power of two */
	uint64_t bins[NFINE];
};

static void rates_add(struct rates *r, int64_t clock)
{
	if (!r->any) {
		r->any = 1;
		r->first = clock;
		r->width = 1;
	}
	uint64_t d = clock > r->first ? (uint64_t) clock - (uint64_t) r->first : 0;
	while (d / r->width >= NFINE) {
		for (unsigned k = 0; k < NFINE / 2; k++)
			r->bins[k] = r->bins[2 * k] + r->bins[2 * k + 1];
		memset(&r->bins[NFINE / 2], 0, NFINE / 2 * sizeof r->bins[0]);
		r->width *= 2;
	}
	r->bins[d / r->width]++;
}

/* A duration in the unit that suits the span (ns, us, ms or s). */
static void fmt_dur(char *buf, size_t n, double ns, double span)
{
	if (span >= 1e9)
		snprintf(buf, n, "%.3f s", ns / 1e9);
	else if (span >= 1e6)
		snprintf(buf, n, "%.3f ms", ns / 1e6);
	else if (span >= 1e3)
		snprintf(buf, n, "%.3f us", ns / 1e3);
	else
		snprintf(buf, n, "%.0f ns", ns);
}

/* The run [first, last] in NSHOW equal parts (fewer for a span of fewer
 * nanoseconds), each with its events, events per second and a bar. */
static void rates_print(const struct rates *r, int64_t last)
{
	if (!r->any)
		return;
	/* the span is d + 1 nanoseconds: d + 1 itself wraps to 0 when the
	 * clocks go from INT64_MIN to INT64_MAX, so only d is computed */
	uint64_t d = last > r->first ? (uint64_t) last - (uint64_t) r->first : 0;
	unsigned nshow = d < NSHOW - 1 ? (unsigned) d + 1 : NSHOW;
	uint64_t part = d / nshow + 1; /* ceil((d + 1) / nshow) */
	double span = (double) d + 1.0;
	uint64_t counts[NSHOW] = { 0 };
	uint64_t most = 0;
	for (unsigned k = 0; k < NFINE; k++) {
		if (r->bins[k] == 0)
			continue;
		/* a fine bin goes to the part holding its start */
		uint64_t at = (uint64_t) k * r->width / part;
		counts[at < nshow ? at : nshow - 1] += r->bins[k];
	}
	for (unsigned k = 0; k < nshow; k++)
		if (counts[k] > most)
			most = counts[k];
	char a[32], b[32];
	fmt_dur(a, sizeof a, (double) part, span);
	printf("events over the run (%u parts of %s, from the first event at clock %" PRId64 "):\n",
			nshow, a, r->first);
	printf("  %12s    %12s  %12s  %14s\n", "from", "to", "events", "events/s");
	for (unsigned k = 0; k < nshow; k++) {
		fmt_dur(a, sizeof a, (double) k * (double) part, span);
		fmt_dur(b, sizeof b, (double) (k + 1) * (double) part, span);
		double rate = (double) counts[k] / ((double) part * 1e-9);
		unsigned bar = most > 0 ? (unsigned) ((counts[k] * 40 + most - 1) / most) : 0;
		printf("  %12s to %12s  %12" PRIu64 "  %14.0f  %.*s\n", a, b,
				counts[k], rate, (int) bar, "########################################");
	}
}

/* ---- what the streams lack (the weft.* keys, docs/reader.md "Losses") ---- */

/* The events stream i lacks, on stdout: a line for the stream, one per
 * overwritten run. */
static void print_lost(const struct weft_trace *t, size_t i, const char *json)
{
	struct weft_loss l;
	if (!weft_stream_loss(t, i, &l))
		return;
	if (l.dropped > 0)
		printf("weft check: %s: %" PRIu64 " event%s lost: emitted by signal handlers while "
				"the thread's buffer was busy, and could not be stored\n", json,
				l.dropped, l.dropped == 1 ? "" : "s");
	if (l.ring && l.lost_events > 0) {
		printf("weft check: %s: %" PRIu64 " event%s (%" PRIu64 " bytes) lost: overwritten "
				"by the flight recorder (WEFT_RING, %" PRIu64 " bytes) in %zu run%s:\n",
				json, l.lost_events, l.lost_events == 1 ? "" : "s", l.lost_bytes,
				l.ring_size, l.nruns, l.nruns == 1 ? "" : "s");
		struct weft_lost_run run;
		for (size_t k = 0; weft_stream_lost_run(t, i, k, &run); k++)
			printf("  clock %" PRId64 " to %" PRId64 ": %" PRIu64 " event%s (%" PRIu64
					" bytes)\n", run.first_sclock, run.last_sclock, run.events,
					run.events == 1 ? "" : "s", run.bytes);
	}
}

static void print_losses(const struct weft_trace *t)
{
	for (size_t i = 0; i < weft_nstreams(t); i++) {
		const char *json = weft_stream_json_path(t, i);
		print_lost(t, i, json ? json : "?");
	}
}

int weft_cmd_check(int argc, char **argv)
{
	static const char *const longs[] = { "--rates", NULL };
	int set[2] = { 0, 0 };
	const char *path;
	struct cli_models mf;
	int r = cli_model_args("check", &argc, argv, &mf);
	if (r == 0)
		r = cli_parse(argc, argv, "check", usage, "r", longs, set, &path);
	if (r != 0) {
		free(mf.files);
		return r == 1 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	}
	/* a malformed model file is refused before the trace is read */
	struct weft_registry *models = cli_registry("check", &mf);
	if (models == NULL)
		return CLI_EXIT_TRACE;
	weft_registry_free(models);
	/* Streams cut short, and threads that did not end (no ovni.finished:
	 * a run killed), are found quietly and all named at the end. */
	WEFT_OPTS(weft_open_opts, opts);
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
	static struct rates rates;
	while ((n = weft_next_refs(t, refs, 256)) > 0) {
		cli_progress_tick(&prog, weft_nevents(t));
		for (long k = 0; set[0] && k < n; k++) {
			int64_t c;
			memcpy(&c, refs[k].raw + WEFT_EV_OFF_CLOCK, sizeof c);
			rates_add(&rates, (int64_t) ((uint64_t) c
						+ (uint64_t) refs[k].stream->clock_offset));
		}
	}
	cli_progress_end(&prog);
	r = n < 0 ? -1 : 0;
	/* Every stream cut short, in stream order (all known once the
	 * iteration ended; those found before an error otherwise). */
	size_t nbad = 0;
	for (size_t i = 0; i < weft_nstreams(t); i++) {
		struct weft_cut_info ci;
		const char *json = weft_stream_json_path(t, i);
		char msg[WEFT_ERR_MAX + 512];
		char why[256];
		if (weft_stream_unfinished_why(t, i, why, sizeof why) && ++nbad) {
			snprintf(msg, sizeof msg, "%s: %s", json ? json : "?", why);
			cli_message("check", "", msg);
		}
		if (weft_stream_cut(t, i, &ci) && ++nbad) {
			snprintf(msg, sizeof msg, "%s: offset %" PRIu64 ": %s",
					weft_stream_at(t, i)->obs_path, ci.offset, ci.why);
			cli_message("check", "", msg);
		}
	}
	if (r == 0 && nbad > 0) {
		print_losses(t);
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
	print_losses(t);
	if (set[0])
		rates_print(&rates, weft_last_clock(t));
	weft_close(t);
	if (fflush(stdout) != 0) {
		fprintf(stderr, "weft check: cannot write the output\n");
		return CLI_EXIT_TRACE;
	}
	return CLI_EXIT_OK;
}
