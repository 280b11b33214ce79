/* SPDX-License-Identifier: MIT */
/*
 * ovni_names.c - weft under the names of the reference's tools (ovnidump,
 * ovnitop, ovniemu, ovnisort, ovniver: symlinks to weft, see
 * WEFT_OVNI_COMMANDS in CMakeLists.txt). Each takes the reference's flags,
 * translates them to a weft subcommand and prints on stdout what the
 * reference prints there, so that job scripts written for ovni run unchanged.
 *
 *   ovnidump [-x] DIR           weft dump [-x] DIR
 *   ovnitop DIR                 weft top DIR
 *   ovniemu [-c F] [-abdl] DIR  weft emu --paraver -q [-b] [-a] [-v] DIR
 *   ovnisort [-c] [-n N] DIR    weft sort -q [--check] [--look-back N-1] DIR (N: 1000000)
 *   ovniver                     the reference's two lines, then where libovni is
 *
 * Messages on stderr are weft's (they start with "weft <command>: ").
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "weft/weft.h"

#define USAGE_EXIT 2

/* The reference's options of one command. */
struct ref_cmd {
	const char *name;
	const char *flags;    /* flags without an argument */
	const char *with_arg; /* flags that take one */
	const char *usage;
};

struct ref_args {
	int set[128];
	const char *carg; /* the argument of the flag of with_arg */
	const char *path;
};

/* 0: parsed; 1: help printed; USAGE_EXIT: usage error (reported). */
static int parse_ref(const struct ref_cmd *rc, int argc, char **argv, struct ref_args *a)
{
	memset(a, 0, sizeof *a);
	int only_paths = 0;
	for (int i = 1; i < argc; i++) {
		const char *s = argv[i];
		if (only_paths || s[0] != '-' || s[1] == '\0') {
			if (a->path != NULL) {
				fprintf(stderr, "%s: more than one trace directory ('%s' and '%s')\n%s",
						rc->name, a->path, s, rc->usage);
				return USAGE_EXIT;
			}
			a->path = s;
			continue;
		}
		if (strcmp(s, "--") == 0) {
			only_paths = 1;
			continue;
		}
		if (strcmp(s, "--help") == 0) {
			fputs(rc->usage, stdout);
			return 1;
		}
		if (s[1] == '-') {
			fprintf(stderr, "%s: unknown option '%s'\n%s", rc->name, s, rc->usage);
			return USAGE_EXIT;
		}
		for (size_t j = 1; s[j] != '\0'; j++) {
			char ch = s[j];
			if (ch == 'h') {
				fputs(rc->usage, stdout);
				return 1;
			}
			if (strchr(rc->flags, ch) != NULL) {
				a->set[(unsigned char) ch] = 1;
				continue;
			}
			if (strchr(rc->with_arg, ch) != NULL) {
				if (s[j + 1] != '\0') {
					a->carg = s + j + 1;
				} else if (i + 1 < argc) {
					a->carg = argv[++i];
				} else {
					fprintf(stderr, "%s: option '-%c' needs an argument\n%s", rc->name, ch,
							rc->usage);
					return USAGE_EXIT;
				}
				a->set[(unsigned char) ch] = 1;
				break;
			}
			fprintf(stderr, "%s: unknown option '-%c'\n%s", rc->name, ch, rc->usage);
			return USAGE_EXIT;
		}
	}
	if (a->path == NULL) {
		fprintf(stderr, "%s: missing trace directory\n%s", rc->name, rc->usage);
		return USAGE_EXIT;
	}
	return 0;
}

static char s_dump[] = "dump", s_top[] = "top", s_emu[] = "emu", s_hex[] = "-x";
static char s_paraver[] = "--paraver", s_quiet[] = "-q", s_bd[] = "-b", s_all[] = "-a";
static char s_verbose[] = "-v", s_dashdash[] = "--";
static char s_sort[] = "sort", s_check[] = "--check", s_look_back[] = "--look-back";

static const struct ref_cmd ref_dump = {
	"ovnidump", "x", "",
	"Usage: ovnidump [-x] tracedir\n"
	"\n"
	"weft's ovnidump (runs `weft dump`): prints every event of the trace, one per\n"
	"line, in clock order; with -x the payload bytes in hexadecimal instead of the\n"
	"description (the same bytes as the reference's ovnidump -x).\n",
};

static const struct ref_cmd ref_top = {
	"ovnitop", "", "",
	"Usage: ovnitop tracedir\n"
	"\n"
	"weft's ovnitop (runs `weft top`): the number of events of each MCV, most\n"
	"frequent first.\n",
};

static const struct ref_cmd ref_emu = {
	"ovniemu", "abdl", "c",
	"Usage: ovniemu [-c offsetfile] [-abdlh] tracedir\n"
	"\n"
	"weft's ovniemu (runs `weft emu --paraver -q`): writes the Paraver timelines\n"
	"(thread.prv/.pcf/.row, cpu.prv/.pcf/.row) into tracedir.\n"
	"\n"
	"  -c offsetfile  only tracedir/clock-offsets.txt, which is read anyway\n"
	"  -a             enable all models\n"
	"  -b             also the breakdown views\n"
	"  -d             information lines on stderr (weft emu -v)\n"
	"  -l             accepted: weft always makes the checks of the linter mode\n"
	"  -h             this help\n",
};

static const struct ref_cmd ref_sort = {
	"ovnisort", "c", "n",
	"Usage: ovnisort [-c] [-n N] tracedir\n"
	"\n"
	"weft's ovnisort (runs `weft sort`): sorts the events of every unordered region\n"
	"(OU[ ... OU]) of every stream into place, as the reference's ovnisort does; a\n"
	"stream that changes is written beside and renamed over (crash-safe).\n"
	"\n"
	"  -c    change nothing: exit 1 at the first stream that is not sorted\n"
	"  -n N  the reference's ring of N events: a region may reach back N - 1 events\n"
	"        (default 1000000: 999999 events)\n"
	"  -h    this help\n",
};

static int run_dump(int argc, char **argv)
{
	struct ref_args a;
	int r = parse_ref(&ref_dump, argc, argv, &a);
	if (r != 0)
		return r == 1 ? 0 : r;
	char *av[5];
	int n = 0;
	av[n++] = s_dump;
	if (a.set['x'])
		av[n++] = s_hex;
	av[n++] = s_dashdash;
	av[n++] = (char *) a.path;
	av[n] = NULL;
	return weft_cmd_dump(n, av);
}

static int run_top(int argc, char **argv)
{
	struct ref_args a;
	int r = parse_ref(&ref_top, argc, argv, &a);
	if (r != 0)
		return r == 1 ? 0 : r;
	char *av[] = { s_top, s_dashdash, (char *) a.path, NULL };
	return weft_cmd_top(3, av);
}

/* 1 if file is path/clock-offsets.txt itself. */
static int is_trace_offsets(const char *file, const char *path)
{
	char own[4096];
	int n = snprintf(own, sizeof own, "%s/clock-offsets.txt", path);
	struct stat s1, s2;
	if (n < 0 || (size_t) n >= sizeof own || stat(file, &s1) != 0 || stat(own, &s2) != 0)
		return 0;
	return s1.st_dev == s2.st_dev && s1.st_ino == s2.st_ino;
}

static int run_emu(int argc, char **argv)
{
	struct ref_args a;
	int r = parse_ref(&ref_emu, argc, argv, &a);
	if (r != 0)
		return r == 1 ? 0 : r;
	if (a.set['c'] && !is_trace_offsets(a.carg, a.path)) {
		fprintf(stderr, "ovniemu: -c %s: weft reads the clock offsets only from "
				"%s/clock-offsets.txt (loaded automatically); copy the file there "
				"and drop -c\n", a.carg, a.path);
		return USAGE_EXIT;
	}
	char *av[10];
	int n = 0;
	av[n++] = s_emu;
	av[n++] = s_paraver;
	av[n++] = s_quiet;
	if (a.set['b'])
		av[n++] = s_bd;
	if (a.set['a'])
		av[n++] = s_all;
	if (a.set['d'])
		av[n++] = s_verbose;
	av[n++] = s_dashdash;
	av[n++] = (char *) a.path;
	av[n] = NULL;
	return weft_cmd_emu(n, av);
}

static int run_sort(int argc, char **argv)
{
	struct ref_args a;
	int r = parse_ref(&ref_sort, argc, argv, &a);
	if (r != 0)
		return r == 1 ? 0 : r;
	char *av[9];
	char lb[32];
	int n = 0;
	av[n++] = s_sort;
	av[n++] = s_quiet; /* the reference prints nothing on stdout */
	if (a.set['c'])
		av[n++] = s_check;
	if (!a.set['n']) {
		/* the reference's default ring of 1000000 */
		snprintf(lb, sizeof lb, "%u", WEFT_SORT_LOOK_BACK - 1);
		av[n++] = s_look_back;
		av[n++] = lb;
	} else {
		/* the reference's ring of N holds N - 1 events to look back at */
		char *end;
		errno = 0;
		unsigned long long v = strtoull(a.carg, &end, 10);
		if (a.carg[0] < '0' || a.carg[0] > '9' || *end != '\0' || errno != 0 || v < 2) {
			fprintf(stderr, "ovnisort: -n '%s': expected a number of events, 2 or more\n%s",
					a.carg, ref_sort.usage);
			return USAGE_EXIT;
		}
		snprintf(lb, sizeof lb, "%llu", v - 1);
		av[n++] = s_look_back;
		av[n++] = lb;
	}
	av[n++] = s_dashdash;
	av[n++] = (char *) a.path;
	av[n] = NULL;
	return weft_cmd_sort(n, av);
}

/* The reference's two lines (LD_LIBRARY_PATH; build and dynamic versions),
 * then where the libovni is. Exit status 1 if none could be loaded. */
static int run_ver(void)
{
	const char *ldp = getenv("LD_LIBRARY_PATH");
	if (ldp != NULL)
		printf("LD_LIBRARY_PATH set to %s\n", ldp);
	else
		printf("LD_LIBRARY_PATH not set\n");
	struct weft_libovni l;
	int found = weft_libovni_probe(&l) == 0;
	printf("libovni: build v%s (%s), ", WEFT_OVNI_API_VERSION, WEFT_OVNI_API_COMMIT);
	if (!found) {
		printf("dynamic not found (%s)\n", l.err);
		return 1;
	}
	if (!l.loaded) {
		printf("dynamic unknown (%s: %s)\n", l.path, l.err);
		return 1;
	}
	printf("dynamic v%s (%s)\n", l.version, l.commit);
	printf("libovni: loaded from %s (found by %s)\n", l.path, l.found_by);
	return 0;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s != NULL ? s + 1 : p;
}

int weft_ovni_name_run(int argc, char **argv, int *status)
{
	if (argc < 1 || argv[0] == NULL)
		return 0;
	const char *name = base_name(argv[0]);
	if (strcmp(name, "ovnidump") == 0) {
		*status = run_dump(argc, argv);
	} else if (strcmp(name, "ovnitop") == 0) {
		*status = run_top(argc, argv);
	} else if (strcmp(name, "ovniemu") == 0) {
		*status = run_emu(argc, argv);
	} else if (strcmp(name, "ovniver") == 0) {
		*status = run_ver();
	} else if (strcmp(name, "ovnisort") == 0) {
		*status = run_sort(argc, argv);
	} else {
		return 0;
	}
	return 1;
}
