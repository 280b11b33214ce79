/* SPDX-License-Identifier: MIT */
/*
 * main.c - `weft <command>`: dispatch to the subcommands; under an ovni
 * command name (ovnidump, ovniemu, ...: argv[0]), to ovni_names.c.
 */
#include <stdio.h>
#include <string.h>

#include "cli_opts.h"
#include "commands.h"
#include "weft_version.h"

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{ "dump", weft_cmd_dump, "print every event of a trace in time order" },
	{ "top", weft_cmd_top, "count the events of a trace per MCV" },
	{ "check", weft_cmd_check, "validate a trace strictly and summarise it" },
	{ "emu", weft_cmd_emu, "emulate the trace into Paraver and Perfetto timelines" },
	{ "index", weft_cmd_index, "write the index of every stream (for seeking: dump/top --from)" },
	{ "sort", weft_cmd_sort, "sort the unordered regions of every stream (ovnisort)" },
	{ "sql", weft_cmd_sql, "write a trace as a SQLite database and query it" },
	{ "view", weft_cmd_view, "the timelines as one HTML page (or served), or pictures (PNG, SVG, PDF)" },
	{ "export", weft_cmd_export, "write a trace in another format (CTF 1.8: babeltrace2, Trace Compass)" },
	{ "split", weft_cmd_split, "write a trace in Laplace's per-process layout (a file per task)" },
	{ "import", weft_cmd_import, "read a trace of another format (Laplace) into an ovni trace" },
	{ "version", weft_cmd_version, "weft's version and the libovni programs would load" },
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: weft <command> [options] PATH\n"
		"       weft --help | --version | help [COMMAND]\n"
		"\n"
		"weft reads traces of the ovni trace system (spec v3, and v1).\n"
		"\n"
		"Commands:\n");
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(out,
		"\n"
		"Run `weft help <command>` (or `weft <command> --help`) for the options of a command.\n");
}

int main(int argc, char **argv)
{
	int status;
	if (weft_ovni_name_run(argc, argv, &status))
		return status;
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	const char *cmd = argv[1];
	if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0
			|| (strcmp(cmd, "help") == 0 && argc == 2)) {
		usage(stdout);
		return 0;
	}
	if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
		printf("weft %s (ovni API %s, trace format v3)\n", WEFT_VERSION, "1.14.0");
		return 0;
	}
	/* `weft help CMD` is `weft CMD --help` */
	static char help_opt[] = "--help";
	char *help_argv[3] = { NULL, help_opt, NULL };
	if (strcmp(cmd, "help") == 0) {
		if (argc > 3) {
			fprintf(stderr, "weft help: more than one COMMAND ('%s' and '%s'); run "
					"`weft --help`\n", argv[2], argv[3]);
			return 2;
		}
		cmd = help_argv[0] = argv[2];
	}
	int cargc = cmd == help_argv[0] ? 2 : argc - 1;
	char **cargv = cmd == help_argv[0] ? help_argv : argv + 1;
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
		if (strcmp(cmd, commands[i].name) == 0)
			return commands[i].run(cargc, cargv);
	}
	const char *names[sizeof commands / sizeof commands[0]];
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		names[i] = commands[i].name;
	const char *sugg = cli_suggest(cmd, names, sizeof names / sizeof names[0]);
	if (sugg != NULL)
		fprintf(stderr, "weft: unknown command '%s' (did you mean '%s'?); run `weft --help` "
				"for the list\n", cmd, sugg);
	else
		fprintf(stderr, "weft: unknown command '%s'; run `weft --help` for the list\n",
				cmd);
	return 2;
}
