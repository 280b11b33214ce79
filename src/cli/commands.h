/* SPDX-License-Identifier: MIT */
/* commands.h - the subcommands of the weft tool, one file each. */
#ifndef WEFT_CLI_COMMANDS_H
#define WEFT_CLI_COMMANDS_H

/* Each takes argv with argv[0] = the subcommand name and returns the exit code. */
int weft_cmd_dump(int argc, char **argv);
int weft_cmd_top(int argc, char **argv);
int weft_cmd_check(int argc, char **argv);
int weft_cmd_emu(int argc, char **argv);

#endif
