/* SPDX-License-Identifier: MIT */
/*
 * otf2_dir.c - the output directory of `weft export otf2` (otf2.h,
 * export_dir.h): the archive (traces.otf2, traces.def, traces/) is written
 * into a temporary directory beside it (OUT.weft-otf2-XXXXXX), renamed to
 * OUT only when the whole archive was written. A directory that holds
 * files is replaced only with --force, and only when it is an archive weft
 * wrote (its anchor file names weft as its creator, and it holds nothing
 * but the archive's files). No symbolic link is followed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "export_dir.h"
#include "otf2_internal.h"

/* The regular files of the directory open at fd, and with sub the
 * sub-directory "traces" too (its regular files), counted in *n; *others
 * set when anything else is there. Removes them when rm. -1 with errno. */
static int scan(int fd, int sub, int rm, int *n, int *others)
{
	int dup_fd = dup(fd);
	DIR *dir = dup_fd < 0 ? NULL : fdopendir(dup_fd);
	if (dir == NULL) {
		if (dup_fd >= 0)
			close(dup_fd);
		return -1;
	}
	rewinddir(dir); /* the descriptor's offset is shared with fd's */
	struct dirent *de;
	while ((de = readdir(dir)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		(*n)++;
		struct stat st;
		if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
			*others = 1;
			continue;
		}
		if (S_ISREG(st.st_mode)) {
			if (rm)
				unlinkat(fd, de->d_name, 0);
			continue;
		}
		if (!sub || !S_ISDIR(st.st_mode) || strcmp(de->d_name, OTF2_ARCHIVE_NAME) != 0) {
			*others = 1;
			continue;
		}
		int sfd = openat(fd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int sn = 0;
		if (sfd < 0 || scan(sfd, 0, rm, &sn, others) != 0)
			*others = 1;
		if (sfd >= 0)
			close(sfd);
		if (rm)
			unlinkat(fd, de->d_name, AT_REMOVEDIR);
	}
	closedir(dir);
	return 0;
}

/* 0 empty, 1 an archive of weft's, 2 anything else; -1 with errno. */
static int dir_holds(int fd)
{
	int n = 0, others = 0;
	if (scan(fd, 1, 0, &n, &others) != 0)
		return -1;
	if (n == 0)
		return 0;
	if (others)
		return 2;
	int afd = openat(fd, OTF2_ARCHIVE_NAME ".otf2", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (afd < 0)
		return 2;
	char head[4096];
	ssize_t r = read(afd, head, sizeof head);
	close(afd);
	size_t sl = strlen(OTF2_CREATOR);
	return r > 0 && memmem(head, (size_t) r, OTF2_CREATOR, sl) != NULL ? 1 : 2;
}

/* Removes the archive in the directory open at fd (its regular files and
 * traces/). */
static void empty_dir(int fd)
{
	int n = 0, others = 0;
	scan(fd, 1, 1, &n, &others);
}

static const struct export_fmt otf2_fmt = {
	.what = "an OTF2 archive", .suffix = ".weft-otf2-XXXXXX", .holds = dir_holds,
	.empty = empty_dir, .sync = 0,
};

int otf2_dir_open(struct export_dir *d, const char *out, int force, char *err, size_t errlen)
{
	return export_dir_open(d, &otf2_fmt, out, force, err, errlen);
}
