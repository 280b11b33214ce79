/* SPDX-License-Identifier: MIT */
/* commands.h - the subcommands of the weft tool, one file each. */
#ifndef WEFT_CLI_COMMANDS_H
#define WEFT_CLI_COMMANDS_H

/* Each takes argv with argv[0] = the subcommand name and returns the exit code. */
int weft_cmd_dump(int argc, char **argv);
int weft_cmd_top(int argc, char **argv);
int weft_cmd_check(int argc, char **argv);
int weft_cmd_emu(int argc, char **argv);
int weft_cmd_version(int argc, char **argv);
int weft_cmd_sort(int argc, char **argv);
int weft_cmd_index(int argc, char **argv);
int weft_cmd_sql(int argc, char **argv);
int weft_cmd_view(int argc, char **argv);
int weft_cmd_export(int argc, char **argv);
int weft_cmd_split(int argc, char **argv);
int weft_cmd_import(int argc, char **argv);

/* The libovni.so.1 a program would load (cmd_version.c). */
struct weft_libovni {
	char path[4096];      /* where it was found ("" if nowhere) */
	const char *found_by; /* which step of the search found it */
	int loaded;           /* 1: version and commit were read */
	char version[64], commit[64];
	char err[4096 + 512]; /* why not found / not loaded */
	int has_other;        /* found in weft's directory, and the system has another */
	char other[4096];
};
/* Fills l; 0 if a libovni.so.1 was found (l->loaded says if it could be
 * loaded), -1 if none (l->err says where it looked). */
int weft_libovni_probe(struct weft_libovni *l);

/* When weft runs under an ovni command name (ovnidump, ovnitop, ovniemu,
 * ovnisort, ovniver: the basename of argv[0]), runs it with the
 * reference's flags and returns 1 with its exit status in *status; returns 0
 * for any other name (ovni_names.c). */
int weft_ovni_name_run(int argc, char **argv, int *status);

#endif
