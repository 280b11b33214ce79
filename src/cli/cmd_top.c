/* SPDX-License-Identifier: MIT */
/* cmd_top.c - `weft top` (placeholder until the reader lands). */
#include <stdio.h>

#include "commands.h"

int weft_cmd_top(int argc, char **argv)
{
	(void) argc;
	(void) argv;
	fprintf(stderr, "weft top: not implemented yet\n");
	return 2;
}
