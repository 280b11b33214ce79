/* SPDX-License-Identifier: MIT */
/* cli_mpi_exec.c - weft emu --mpi in the weft command: executes weft-mpi
 * (cli_mpi.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_mpi.h"

int cli_emu_mpi_exec(int argc, char **argv)
{
	char self[PATH_MAX], path[PATH_MAX + 16];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0) {
		fprintf(stderr, "weft emu: --mpi: cannot find this program's directory "
				"(/proc/self/exe: %s)\n", strerror(errno));
		return 1;
	}
	self[n] = '\0';
	char *sl = strrchr(self, '/');
	*sl = '\0';
	snprintf(path, sizeof path, "%s/weft-mpi", self);
	char **av = calloc((size_t) argc + 2, sizeof *av);
	if (av == NULL) {
		fprintf(stderr, "weft emu: out of memory\n");
		return 1;
	}
	av[0] = path;
	av[1] = argv[0]; /* "emu" */
	for (int i = 1; i < argc; i++)
		av[i + 1] = argv[i];
	execv(path, av);
	fprintf(stderr, "weft emu: --mpi runs %s, which cannot be started (%s): it is built "
			"where Open MPI is found (docs/emu.md, MPI)\n", path, strerror(errno));
	free(av);
	return 1;
}
