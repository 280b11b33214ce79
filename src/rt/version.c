/* SPDX-License-Identifier: MIT */
/*
 * version.c - ovni_version_check_str and ovni_version_get.
 *
 * A program built against ovni.h X.Y.Z runs with this library (1.14.0)
 * when X is our major and Y is not newer than our minor (a newer minor may
 * use API we do not have); the patch level does not matter. A refusal
 * says what the reference says ("incompatible ovni major|minor version:
 * wants <program's>, got <library's>"), after weft's usual prefix.
 */
#include <stdlib.h>

#include "rt_internal.h"

struct semver {
	long major, minor, patch;
};

static int parse_semver(const char *s, struct semver *v)
{
	long parts[3];
	const char *p = s;
	for (int i = 0; i < 3; i++) {
		if (*p < '0' || *p > '9')
			return -1;
		long n = 0;
		while (*p >= '0' && *p <= '9') {
			if (n > 100000000L)
				return -1;
			n = n * 10 + (*p - '0');
			p++;
		}
		parts[i] = n;
		if (i < 2) {
			if (*p != '.')
				return -1;
			p++;
		}
	}
	if (*p != '\0')
		return -1;
	v->major = parts[0];
	v->minor = parts[1];
	v->patch = parts[2];
	return 0;
}

void ovni_version_check_str(const char *version)
{
	static const char func[] = "ovni_version_check_str";
	RT_KEEP_ERRNO;
	struct semver want, have;
	if (version == NULL || parse_semver(version, &want) != 0)
		rt_die(func, "malformed version string '%s' (expected X.Y.Z)", version != NULL ? version : "(null)");
	if (parse_semver(OVNI_LIB_VERSION, &have) != 0)
		rt_die(func, "malformed library version '%s'", OVNI_LIB_VERSION);
	if (want.major != have.major)
		rt_die(func, "incompatible ovni major version: wants %s, got %s", version, OVNI_LIB_VERSION);
	if (want.minor > have.minor)
		rt_die(func, "incompatible ovni minor version: wants %s, got %s", version, OVNI_LIB_VERSION);
}

void ovni_version_get(const char **version, const char **commit)
{
	if (version != NULL)
		*version = OVNI_LIB_VERSION;
	if (commit != NULL)
		*commit = OVNI_GIT_COMMIT;
}
