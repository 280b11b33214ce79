/* SPDX-License-Identifier: MIT */
/* conformance.h - where tests find ../shared/conformance, and how they skip. */
#ifndef WEFT_TESTS_CONFORMANCE_H
#define WEFT_TESTS_CONFORMANCE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WEFT_TEST_SKIP 77

/* Notes why this test skips, for the last lines of the ctest run
 * (tests/ctest_skipped.py): one line in $WEFT_SKIP_DIR/<pid>.txt. */
static inline void weft_skip_note(const char *why)
{
	const char *dir = getenv("WEFT_SKIP_DIR");
	if (dir == NULL || dir[0] == '\0')
		return;
	char path[4096], self[4096];
	snprintf(path, sizeof path, "%s/%ld.txt", dir, (long) getpid());
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	self[n > 0 ? n : 0] = '\0';
	const char *base = strrchr(self, '/');
	FILE *f = fopen(path, "w");
	if (f == NULL)
		return;
	fprintf(f, "%s: %s\n", base ? base + 1 : self, why);
	fclose(f);
}

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
	char why[4200];
	snprintf(why, sizeof why, "conformance corpus not found at '%s': skipped",
			dir ? dir : "(unset)");
	fprintf(stderr, "%s\n", why);
	weft_skip_note(why);
	exit(WEFT_TEST_SKIP);
}

#endif
