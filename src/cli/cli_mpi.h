/* SPDX-License-Identifier: MIT */
/*
 * cli_mpi.h - weft emu --mpi (docs/emu.md, MPI). The weft command links no
 * MPI: with --mpi it executes weft-mpi, its sibling built where Open MPI is
 * found (the same emu command, linked with MPI: mpi_main.c), with the same
 * arguments; the process stays the one mpirun started.
 */
#ifndef WEFT_CLI_MPI_H
#define WEFT_CLI_MPI_H

struct weft_emulate_opts;

/* weft: executes weft-mpi (next to this program) as "weft-mpi emu ARGS";
 * returns only when it cannot (1, with a message). cli_mpi_exec.c. */
int cli_emu_mpi_exec(int argc, char **argv);

/* weft-mpi: the run by the job's ranks (weft_emulate_ranks); the job's
 * exit status, the message (and the summary) printed once, by rank 0;
 * *rank: this process's. cli_mpi.c. */
int cli_emu_mpi(const struct weft_emulate_opts *o, int local, int *rank);

#endif
