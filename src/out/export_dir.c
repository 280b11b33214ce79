/* SPDX-License-Identifier: MIT */
/* export_dir.c - the check of weft export's output directory (export_dir.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "export_dir.h"

static const char *kind_of(mode_t m)
{
	return S_ISLNK(m) ? "a symbolic link" : S_ISREG(m) ? "a regular file" :
		S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device" :
		S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" : "not a directory";
}

int export_dir_check(const char *out, int force, const char *what, int (*holds)(int fd),
		int *exists, char *err, size_t errlen)
{
	struct stat st;
	*exists = 0;
	if (lstat(out, &st) != 0) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "%s: cannot check the output directory: %s", out,
				strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s: is %s: not replaced (the output is a directory, and "
				"weft follows no symbolic link)", out, kind_of(st.st_mode));
		return -1;
	}
	int fd = open(out, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int h = fd < 0 ? -1 : holds(fd);
	if (fd >= 0)
		close(fd);
	if (h < 0) {
		snprintf(err, errlen, "%s: cannot read the output directory: %s", out,
				strerror(errno));
		return -1;
	}
	if (h == 0) {
		*exists = 1;
		return 0;
	}
	if (force && h == 2) {
		snprintf(err, errlen, "%s: exists and is not %s weft wrote: not replaced "
				"(even with --force)", out, what);
		return -1;
	}
	if (!force) {
		snprintf(err, errlen, "%s: exists and is not empty: not replaced (--force "
				"replaces %s weft wrote)", out, what);
		return -1;
	}
	*exists = 2;
	return 0;
}
