/* SPDX-License-Identifier: MIT */
/* cmd_emu.c - `weft emu` (placeholder until the emulator lands). */
#include <stdio.h>

#include "commands.h"

int weft_cmd_emu(int argc, char **argv)
{
	(void) argc;
	(void) argv;
	fprintf(stderr, "weft emu: not implemented yet\n");
	return 2;
}
