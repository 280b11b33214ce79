/* SPDX-License-Identifier: MIT */
/* conformance.h - where tests find ../shared/conformance, and how they skip. */
#ifndef WEFT_TESTS_CONFORMANCE_H
#define WEFT_TESTS_CONFORMANCE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define WEFT_TEST_SKIP 77

/* Returns the conformance directory, or exits: 77 (skipped) when it is
 * absent, 1 when it is absent under CI=true. */
static inline const char *weft_conformance_dir(void)
{
	const char *dir = getenv("WEFT_CONFORMANCE_DIR");
	if (dir == NULL || dir[0] == '\0')
		dir = getenv("WEFT_CONFORMANCE_DIR_DEFAULT");
	struct stat st;
	if (dir != NULL && stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
		return dir;
	const char *ci = getenv("CI");
	if (ci != NULL && strcmp(ci, "true") == 0) {
		fprintf(stderr, "conformance corpus not found at '%s' (CI=true: this is a failure)\n",
			dir ? dir : "(unset)");
		exit(1);
	}
	fprintf(stderr, "conformance corpus not found at '%s': skipped\n", dir ? dir : "(unset)");
	exit(WEFT_TEST_SKIP);
}

#endif
