/* SPDX-License-Identifier: MIT */
/*
 * otf2_dir.c - the output directory of `weft export otf2` (otf2.h): the
 * archive (traces.otf2, traces.def, traces/) is written into a temporary
 * directory beside it (OUT.weft-otf2-XXXXXX), renamed to OUT only when the
 * whole archive was written. OUT may be absent or an empty directory; one
 * that holds files is replaced only with --force, and only when it is an
 * archive weft wrote (its anchor file names weft as its creator, and it
 * holds nothing but the archive's files). No symbolic link is followed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
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

int otf2_dir_open(struct otf2_dir *d, const char *out, int force, char *err, size_t errlen)
{
	d->tmp[0] = '\0';
	size_t n = strlen(out);
	while (n > 1 && out[n - 1] == '/')
		n--;
	if (n == 0 || n + 20 >= sizeof d->tmp) {
		snprintf(err, errlen, "%s: not a usable output directory name", out);
		return -1;
	}
	memcpy(d->out, out, n);
	d->out[n] = '\0';
	int exists;
	if (export_dir_check(d->out, force, "an OTF2 archive", dir_holds, &exists, err, errlen) != 0)
		return -1;
	memcpy(d->tmp, d->out, n);
	memcpy(d->tmp + n, ".weft-otf2-XXXXXX", sizeof ".weft-otf2-XXXXXX");
	if (mkdtemp(d->tmp) == NULL) {
		snprintf(err, errlen, "%s: cannot make the temporary directory beside it: %s",
				d->out, strerror(errno));
		d->tmp[0] = '\0';
		return -1;
	}
	return 0;
}

/* Removes the directory at path (what an archive holds), not following
 * links. */
static void remove_tree(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		int n = 0, others = 0;
		scan(fd, 1, 1, &n, &others);
		close(fd);
	}
	rmdir(path);
}

void otf2_dir_discard(struct otf2_dir *d)
{
	if (d->tmp[0] != '\0')
		remove_tree(d->tmp);
	d->tmp[0] = '\0';
}

int otf2_dir_commit(struct otf2_dir *d, int force, char *err, size_t errlen)
{
	mode_t mask = umask(0);
	umask(mask);
	if (chmod(d->tmp, 0777 & ~mask) != 0) {
		snprintf(err, errlen, "%s: %s", d->tmp, strerror(errno));
		otf2_dir_discard(d);
		return -1;
	}
	int exists;
	if (export_dir_check(d->out, force, "an OTF2 archive", dir_holds, &exists, err, errlen) != 0) {
		otf2_dir_discard(d);
		return -1;
	}
	if (exists < 2) {
		if (rename(d->tmp, d->out) != 0) {
			snprintf(err, errlen, "%s: cannot rename %s to it: %s", d->out, d->tmp,
					strerror(errno));
			otf2_dir_discard(d);
			return -1;
		}
		d->tmp[0] = '\0';
		return 0;
	}
	/* an archive of weft's: swapped with the new one in one step, then its
	 * files (now at tmp) removed when they are still what was checked */
	if (renameat2(AT_FDCWD, d->tmp, AT_FDCWD, d->out, RENAME_EXCHANGE) != 0) {
		snprintf(err, errlen, "%s: cannot replace it with %s: %s", d->out, d->tmp,
				strerror(errno));
		otf2_dir_discard(d);
		return -1;
	}
	int fd = open(d->tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int h = fd < 0 ? -1 : dir_holds(fd);
	if (fd >= 0)
		close(fd);
	if (h == 1)
		remove_tree(d->tmp);
	d->tmp[0] = '\0';
	return 0;
}
