/* SPDX-License-Identifier: MIT */
/*
 * mpi_main.c - weft-mpi: `weft emu` linked with MPI, which `weft emu --mpi`
 * executes (cli_mpi.h). Only the emu command: "weft-mpi emu ARGS".
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"

int main(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "emu") != 0) {
		fprintf(stderr, "weft-mpi: run as `mpirun -n R weft emu --mpi [OPTIONS] PATH` "
				"(docs/emu.md, MPI)\n");
		return 2;
	}
	return weft_cmd_emu(argc - 1, argv + 1);
}
