/* SPDX-License-Identifier: MIT */
/*
 * cli_opts.h - the one option parser of every weft command (docs/cli.md,
 * "Options"). A command declares its options once, in a table of struct
 * cli_opt ending with an entry whose name and letter are both empty, and
 * cli_opts_parse reads argv with it:
 *   --name=VALUE, --name VALUE, -l VALUE, -lVALUE, bundled flags -qv, and
 *   "--" (every later argument is an operand); "-" alone is an operand;
 *   -h / --help asks for the help (the command prints it).
 * Every usage error is reported in one form, then the exit status is 2:
 *   weft CMD: unknown option '--ouptut' (did you mean '--output'?); run `weft CMD --help`
 *   weft CMD: option '-o' needs an argument (FILE); run `weft CMD --help`
 *   weft CMD: option '--quiet' takes no argument; run `weft CMD --help`
 */
#ifndef WEFT_CLI_OPTS_H
#define WEFT_CLI_OPTS_H

#include <stddef.h>

struct cli_opt {
	const char *name; /* the long name without "--" ("output"), or NULL */
	char letter;      /* the short letter ('o'), or 0 */
	const char *arg;  /* NULL: a flag; else what the value is ("FILE"), for messages */
	int id;           /* passed to the command's callback */
};

/* Called for each option found, in order: id from the table, opt as the user
 * spelt it ("--from", "-o": for messages), val the value (NULL for a flag).
 * Returns 0, or a non-zero exit status after printing why (2: a usage
 * error). */
typedef int (*cli_opt_fn)(void *ctx, int id, const char *opt, const char *val);

#define CLI_OPTS_HELP (-1)

/* Parses argv[1..argc-1] of command cmd (argv[0] is not read). The operands
 * go to pos (room for argc entries), their count to *npos. Returns 0,
 * CLI_OPTS_HELP when -h or --help came (before "--"; nothing printed), 2
 * after printing a usage error, or fn's non-zero return. */
int cli_opts_parse(const char *cmd, const struct cli_opt *opts, int argc, char **argv,
		cli_opt_fn fn, void *ctx, const char **pos, int *npos);

/* The distance between a and b: insertions, deletions, substitutions and
 * swaps of two neighbours, each 1 (strings up to 63 bytes; longer ones are
 * far from everything). */
size_t cli_edit_distance(const char *a, const char *b);

/* Of the n words cand[0..n-1], the one nearest to w if it is near enough to
 * be a likely misspelling (a distance of at most 1 for words up to 4 bytes,
 * 2 up to 8, 3 beyond), else NULL. */
const char *cli_suggest(const char *w, const char *const *cand, size_t n);

/* Prints "weft CMD: <what>; run `weft CMD --help`" and returns 2. */
int cli_usage_error(const char *cmd, const char *what);

#endif
