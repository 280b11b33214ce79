/* SPDX-License-Identifier: MIT */
/* cmd_dump.c - `weft dump` (placeholder until the reader lands). */
#include <stdio.h>

#include "commands.h"

int weft_cmd_dump(int argc, char **argv)
{
	(void) argc;
	(void) argv;
	fprintf(stderr, "weft dump: not implemented yet\n");
	return 2;
}
