/* SPDX-License-Identifier: MIT */
/* cli_opts.c - the option parser of every weft command (cli_opts.h). */
#include "cli_opts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_WORD 64

size_t cli_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la >= MAX_WORD || lb >= MAX_WORD)
		return (size_t) -1;
	/* d[i][j]: the distance between a[0..i) and b[0..j) */
	static const size_t W = MAX_WORD + 1;
	size_t d[(MAX_WORD + 1) * (MAX_WORD + 1)];
	for (size_t i = 0; i <= la; i++)
		d[i * W] = i;
	for (size_t j = 0; j <= lb; j++)
		d[j] = j;
	for (size_t i = 1; i <= la; i++) {
		for (size_t j = 1; j <= lb; j++) {
			size_t best = d[(i - 1) * W + j - 1] + (a[i - 1] != b[j - 1]);
			if (d[(i - 1) * W + j] + 1 < best)
				best = d[(i - 1) * W + j] + 1;
			if (d[i * W + j - 1] + 1 < best)
				best = d[i * W + j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]
					&& d[(i - 2) * W + j - 2] + 1 < best)
				best = d[(i - 2) * W + j - 2] + 1;
			d[i * W + j] = best;
		}
	}
	return d[la * W + lb];
}

const char *cli_suggest(const char *w, const char *const *cand, size_t n)
{
	size_t len = strlen(w);
	size_t limit = len <= 4 ? 1 : len <= 8 ? 2 : 3;
	const char *best = NULL;
	size_t best_d = limit + 1;
	for (size_t i = 0; i < n; i++) {
		if (cand[i] == NULL)
			continue;
		size_t d = cli_edit_distance(w, cand[i]);
		if (d < best_d) {
			best = cand[i];
			best_d = d;
		}
	}
	return best;
}

int cli_usage_error(const char *cmd, const char *what)
{
	fprintf(stderr, "weft %s: %s; run `weft %s --help`\n", cmd, what, cmd);
	return 2;
}

static size_t count_opts(const struct cli_opt *opts)
{
	size_t n = 0;
	while (opts[n].name != NULL || opts[n].letter != 0)
		n++;
	return n;
}

/* "unknown option 'A'" with the nearest long option (and --help) if near. */
static int unknown(const char *cmd, const struct cli_opt *opts, const char *a)
{
	const char *sugg = NULL;
	if (a[0] == '-' && a[1] == '-') {
		size_t n = count_opts(opts);
		const char **names = calloc(n + 1, sizeof *names);
		if (names == NULL)
			abort();
		for (size_t i = 0; i < n; i++)
			names[i] = opts[i].name;
		names[n] = "help";
		char word[MAX_WORD];
		size_t wl = strcspn(a + 2, "=");
		if (wl < sizeof word) {
			memcpy(word, a + 2, wl);
			word[wl] = '\0';
			sugg = cli_suggest(word, names, n + 1);
		}
		free(names);
	}
	if (sugg != NULL)
		fprintf(stderr, "weft %s: unknown option '%s' (did you mean '--%s'?); run "
				"`weft %s --help`\n", cmd, a, sugg, cmd);
	else
		fprintf(stderr, "weft %s: unknown option '%s'; run `weft %s --help`\n", cmd, a, cmd);
	return 2;
}

static int needs_arg(const char *cmd, const char *opt, const struct cli_opt *o)
{
	fprintf(stderr, "weft %s: option '%s' needs an argument (%s); run `weft %s --help`\n",
			cmd, opt, o->arg, cmd);
	return 2;
}

int cli_opts_parse(const char *cmd, const struct cli_opt *opts, int argc, char **argv,
		cli_opt_fn fn, void *ctx, const char **pos, int *npos)
{
	*npos = 0;
	int only_operands = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (only_operands || a[0] != '-' || a[1] == '\0') {
			pos[(*npos)++] = a;
			continue;
		}
		if (strcmp(a, "--") == 0) {
			only_operands = 1;
			continue;
		}
		if (a[1] == '-') {
			/* --name, --name=VALUE, --name VALUE */
			const char *name = a + 2;
			const char *eq = strchr(name, '=');
			size_t nl = eq != NULL ? (size_t) (eq - name) : strlen(name);
			if (nl == 4 && strncmp(name, "help", 4) == 0 && eq == NULL)
				return CLI_OPTS_HELP;
			const struct cli_opt *o = NULL;
			for (const struct cli_opt *p = opts; p->name != NULL || p->letter != 0; p++)
				if (p->name != NULL && strlen(p->name) == nl
						&& strncmp(p->name, name, nl) == 0)
					o = p;
			if (o == NULL)
				return unknown(cmd, opts, a);
			char spelt[MAX_WORD + 3];
			snprintf(spelt, sizeof spelt, "--%s", o->name);
			const char *val = NULL;
			if (o->arg == NULL && eq != NULL) {
				fprintf(stderr, "weft %s: option '%s' takes no argument; run "
						"`weft %s --help`\n", cmd, spelt, cmd);
				return 2;
			}
			if (o->arg != NULL) {
				if (eq != NULL)
					val = eq + 1;
				else if (i + 1 < argc)
					val = argv[++i];
				else
					return needs_arg(cmd, spelt, o);
			}
			int r = fn(ctx, o->id, spelt, val);
			if (r != 0)
				return r;
			continue;
		}
		/* -x, -xVALUE, -x VALUE, -qv */
		for (const char *c = a + 1; *c != '\0'; c++) {
			if (*c == 'h')
				return CLI_OPTS_HELP;
			const struct cli_opt *o = NULL;
			for (const struct cli_opt *p = opts; p->name != NULL || p->letter != 0; p++)
				if (p->letter == *c)
					o = p;
			char spelt[3] = { '-', *c, '\0' };
			if (o == NULL)
				return unknown(cmd, opts, spelt);
			const char *val = NULL;
			if (o->arg != NULL) {
				if (c[1] != '\0')
					val = c + 1;
				else if (i + 1 < argc)
					val = argv[++i];
				else
					return needs_arg(cmd, spelt, o);
			}
			int r = fn(ctx, o->id, spelt, val);
			if (r != 0)
				return r;
			if (val != NULL)
				break;
		}
	}
	return 0;
}
