/* SPDX-License-Identifier: MIT */
/*
 * ctf_dir.c - the output directory of `weft export ctf` (export_dir.h):
 * the files are written into a temporary directory beside it
 * (OUT.weft-ctf-XXXXXX), which is renamed to OUT only when the whole
 * trace was written. A directory that holds files is replaced only with
 * --force, and only when it is a CTF trace weft wrote (its metadata starts
 * with CTF_META_SIGNATURE, and it holds regular files only): a mistyped -o
 * never removes anything else. No symbolic link is followed: OUT itself,
 * its files, the temporary directory.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "export_dir.h"
#include "ctf_internal.h"

int ctf_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t) n;
	}
	return 0;
}

/* What the directory open at fd holds: 0 empty, 1 a trace of weft's (a
 * metadata file with the signature, regular files only), 2 anything
 * else; -1 with errno. */
static int dir_holds(int fd)
{
	int dup_fd = dup(fd);
	if (dup_fd < 0)
		return -1;
	DIR *dir = fdopendir(dup_fd);
	if (dir == NULL) {
		close(dup_fd);
		return -1;
	}
	rewinddir(dir); /* the descriptor's offset is shared with fd's */
	int n = 0, others = 0;
	struct dirent *de;
	while ((de = readdir(dir)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		n++;
		struct stat st;
		if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
			others = 1;
	}
	closedir(dir);
	if (n == 0)
		return 0;
	if (others)
		return 2;
	int mfd = openat(fd, "metadata", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (mfd < 0)
		return 2;
	char head[sizeof CTF_META_SIGNATURE];
	ssize_t r = read(mfd, head, sizeof head - 1);
	close(mfd);
	return r == (ssize_t) sizeof head - 1 && memcmp(head, CTF_META_SIGNATURE, sizeof head - 1)
		== 0 ? 1 : 2;
}

/* Removes the regular files of the directory open at fd (nothing else is
 * there: ours, or checked by dir_holds). */
static void empty_dir(int fd)
{
	int dup_fd = dup(fd);
	DIR *dir = dup_fd < 0 ? NULL : fdopendir(dup_fd);
	if (dir == NULL) {
		if (dup_fd >= 0)
			close(dup_fd);
		return;
	}
	rewinddir(dir); /* the descriptor's offset is shared with fd's */
	struct dirent *de;
	while ((de = readdir(dir)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			unlinkat(fd, de->d_name, 0);
	closedir(dir);
}

static const struct export_fmt ctf_fmt = {
	.what = "a CTF trace", .suffix = ".weft-ctf-XXXXXX", .holds = dir_holds,
	.empty = empty_dir, .sync = 1,
};

int ctf_dir_open(struct export_dir *d, const char *out, int force, char *err, size_t errlen)
{
	return export_dir_open(d, &ctf_fmt, out, force, err, errlen);
}

int ctf_dir_create(struct export_dir *d, const char *name, char *err, size_t errlen)
{
	int fd = openat(d->dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
	if (fd < 0)
		snprintf(err, errlen, "%s/%s: cannot create: %s", d->tmp, name, strerror(errno));
	return fd;
}
