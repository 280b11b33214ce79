/* SPDX-License-Identifier: MIT */
/* cmd_check.c - `weft check` (placeholder until the reader lands). */
#include <stdio.h>

#include "commands.h"

int weft_cmd_check(int argc, char **argv)
{
	(void) argc;
	(void) argv;
	fprintf(stderr, "weft check: not implemented yet\n");
	return 2;
}
