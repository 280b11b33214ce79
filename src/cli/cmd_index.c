/* SPDX-License-Identifier: MIT */
/* cmd_index.c - `weft index PATH`: writes the index of every stream. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "commands.h"

static const char usage[] =
	"Usage: weft index [-q] [--model FILE]... PATH\n"
	"\n"
	"Write the index of every stream of the trace at PATH (a trace directory, a\n"
	"directory inside it, or one stream directory): stream.idx beside each\n"
	"stream.obs (for the v1 layouts, thread.TID.idx beside thread.TID[.obs]), the\n"
	"index libovni writes as it traces (docs/reader.md): one entry per flushed\n"
	"buffer, which `weft dump --from` and `weft top --from` use to start reading\n"
	"where the asked time is. For traces written without one (by the reference's\n"
	"libovni, or weft's before the index) or whose stream files changed since\n"
	"(weft sort). Each index is written to a temporary file beside it, then\n"
	"renamed over it: a reader never sees half an index, and running it again\n"
	"writes the same files. One line per stream:\n"
	"  INDEX  N entries\n"
	"When PATH is the top of the trace (the directory that holds the loom.*\n"
	"directories), the trace is then read in full once more (twice if a loom has\n"
	"a clock offset) to write merge.idx there: checkpoints of the merge, so that\n"
	"a seek gives events with equal clocks in several streams in the order of a\n"
	"full read (without it, such ties after --from may come in another order):\n"
	"  merge.idx  N checkpoints\n"
	"\n"
	"Options:\n"
	"  -q, --quiet  no lines on stdout\n"
	"  --follow-links  follow the symbolic links that lead out of PATH and\n"
	"               write indexes there (by default each is named in a\n"
	"               warning and not followed)\n"
	"  --model FILE  add the model FILE describes to the run's models\n"
	"               (repeatable; see docs/models.md): a malformed file is\n"
	"               refused (FILE:LINE: reason, exit status 1) before the\n"
	"               trace is read and anything is written\n"
	"  -h, --help   show this help\n"
	"\n"
	"Metadata problems are warnings. A stream cut short is indexed up to its last\n"
	"whole event. The reference's tools ignore the index files; weft check does\n"
	"not report them.\n"
	"Exit status: 0 success, 1 trace error (an index could not be written),\n"
	"2 usage error.\n";

/* The options of weft index (cli_opts.h): add one here and in index_opt. */
enum { INDEX_QUIET, INDEX_MODEL, INDEX_FOLLOW_LINKS };

static const struct cli_opt index_opts[] = {
	{ "quiet", 'q', NULL, INDEX_QUIET },
	{ "model", 0, "FILE", INDEX_MODEL },
	{ "follow-links", 0, NULL, INDEX_FOLLOW_LINKS },
	{ NULL, 0, NULL, 0 },
};

struct index_args {
	int quiet;
	struct cli_models mf;
};

static int index_opt(void *ctx, int id, const char *opt, const char *val)
{
	(void) opt;
	struct index_args *a = ctx;
	switch (id) {
	case INDEX_QUIET: a->quiet = 1; break;
	case INDEX_MODEL: a->mf.files[a->mf.n++] = val; break;
	case INDEX_FOLLOW_LINKS: cli_follow_links = 1; break;
	default: abort();
	}
	return 0;
}

int weft_cmd_index(int argc, char **argv)
{
	struct index_args a;
	memset(&a, 0, sizeof a);
	cli_models_init(&a.mf, argc);
	const char **pos = cli_operands(argc), *path = NULL;
	int npos = 0;
	int r = cli_opts_parse("index", index_opts, argc, argv, index_opt, &a, pos, &npos);
	if (r == CLI_OPTS_HELP)
		fputs(usage, stdout);
	if (r == 0)
		r = cli_one_path("index", pos, npos, &path);
	else
		free(pos);
	struct cli_models mf = a.mf;
	int set[1] = { a.quiet };
	if (r != 0) {
		free(mf.files);
		return r == CLI_OPTS_HELP ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	}
	/* a malformed model file is refused before anything is read or
	 * written (the index files are those of the trace format) */
	struct weft_registry *models = cli_registry("index", &mf);
	if (models == NULL)
		return CLI_EXIT_TRACE;
	weft_registry_free(models);
	struct weft_trace *t = cli_open_cut("index", path, WEFT_LENIENT, WEFT_CLOCK_RAW,
			WEFT_BACKWARDS_WARN, WEFT_CUT_QUIET);
	if (t == NULL)
		return CLI_EXIT_TRACE;
	int code = CLI_EXIT_OK;
	for (size_t i = 0; i < weft_nstreams(t); i++) {
		char ip[4096];
		uint64_t n = 0;
		if (weft_stream_write_index(t, i, ip, sizeof ip, &n) != 0) {
			cli_message("index", "", weft_error(t));
			code = CLI_EXIT_TRACE;
			break;
		}
		if (!set[0]) {
			char esc[4 * 4096 + 1];
			size_t k = weft_escape(ip, strlen(ip), esc, sizeof esc);
			if (k >= sizeof esc)
				k = sizeof esc - 1;
			printf("%.*s  %" PRIu64 " entr%s\n", (int) k, esc, n, n == 1 ? "y" : "ies");
		}
	}
	if (code == CLI_EXIT_OK) {
		/* the merge index: the same trace read once more (quietly: its
		 * warnings were given) */
		WEFT_OPTS(weft_open_opts, o);
		o.mode = WEFT_LENIENT;
		o.backwards = WEFT_BACKWARDS_WARN;
		o.cut = WEFT_CUT_QUIET;
		o.follow_links = cli_follow_links;
		char ip[4096], err[WEFT_ERR_MAX];
		uint64_t n = 0;
		int m = weft_write_merge_index(path, &o, ip, sizeof ip, &n, err, sizeof err);
		if (m < 0) {
			cli_message("index", "", err);
			code = CLI_EXIT_TRACE;
		} else if (m == 0 && !set[0]) {
			char esc[4 * 4096 + 1];
			size_t k = weft_escape(ip, strlen(ip), esc, sizeof esc);
			if (k >= sizeof esc)
				k = sizeof esc - 1;
			printf("%.*s  %" PRIu64 " checkpoint%s\n", (int) k, esc, n, n == 1 ? "" : "s");
		}
	}
	if (fflush(stdout) != 0 && code == CLI_EXIT_OK) {
		fprintf(stderr, "weft index: cannot write the output\n");
		code = CLI_EXIT_TRACE;
	}
	weft_close(t);
	return code;
}
