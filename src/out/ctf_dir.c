/* SPDX-License-Identifier: MIT */
/*
 * ctf_dir.c - the output directory of `weft export ctf`: the files are
 * written into a temporary directory beside it (OUT.weft-ctf-XXXXXX, on
 * the same file system), which is renamed to OUT only when the whole
 * trace was written. OUT may be absent or an empty directory; a directory
 * that holds files is replaced only with --force, and only when it is a
 * CTF trace weft wrote (its metadata starts with CTF_META_SIGNATURE, and
 * it holds regular files only): a mistyped -o never removes anything else.
 * No symbolic link is followed: OUT itself, its files, the temporary
 * directory.
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

int ctf_dir_open(struct ctf_dir *d, const char *out, int force, char *err, size_t errlen)
{
	d->dfd = -1;
	d->tmp[0] = '\0';
	size_t n = strlen(out);
	while (n > 1 && out[n - 1] == '/')
		n--; /* "DIR/": the directory itself, beside which the temporary goes */
	if (n == 0 || n + 20 >= sizeof d->tmp) {
		snprintf(err, errlen, "%s: not a usable output directory name", out);
		return -1;
	}
	memcpy(d->out, out, n);
	d->out[n] = '\0';
	int exists;
	if (export_dir_check(d->out, force, "a CTF trace", dir_holds, &exists, err, errlen) != 0)
		return -1;
	memcpy(d->tmp, d->out, n);
	memcpy(d->tmp + n, ".weft-ctf-XXXXXX", sizeof ".weft-ctf-XXXXXX");
	if (mkdtemp(d->tmp) == NULL) {
		snprintf(err, errlen, "%s: cannot make the temporary directory beside it: %s",
				d->out, strerror(errno));
		d->tmp[0] = '\0';
		return -1;
	}
	d->dfd = open(d->tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d->dfd < 0) {
		snprintf(err, errlen, "%s: cannot open: %s", d->tmp, strerror(errno));
		rmdir(d->tmp);
		d->tmp[0] = '\0';
		return -1;
	}
	return 0;
}

int ctf_dir_create(struct ctf_dir *d, const char *name, char *err, size_t errlen)
{
	int fd = openat(d->dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
	if (fd < 0)
		snprintf(err, errlen, "%s/%s: cannot create: %s", d->tmp, name, strerror(errno));
	return fd;
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

void ctf_dir_discard(struct ctf_dir *d)
{
	if (d->dfd >= 0) {
		empty_dir(d->dfd);
		close(d->dfd);
		d->dfd = -1;
	}
	if (d->tmp[0] != '\0')
		rmdir(d->tmp);
	d->tmp[0] = '\0';
}

int ctf_dir_commit(struct ctf_dir *d, int force, char *err, size_t errlen)
{
	/* the permissions a new directory would have */
	mode_t mask = umask(0);
	umask(mask);
	if (fchmod(d->dfd, 0777 & ~mask) != 0 || fsync(d->dfd) != 0) {
		snprintf(err, errlen, "%s: %s", d->tmp, strerror(errno));
		ctf_dir_discard(d);
		return -1;
	}
	/* out may have changed meanwhile: checked again */
	int exists;
	if (export_dir_check(d->out, force, "a CTF trace", dir_holds, &exists, err, errlen) != 0) {
		ctf_dir_discard(d);
		return -1;
	}
	if (exists < 2) {
		/* absent, or an empty directory (rename replaces it) */
		if (rename(d->tmp, d->out) != 0) {
			snprintf(err, errlen, "%s: cannot rename %s to it: %s", d->out, d->tmp,
					strerror(errno));
			ctf_dir_discard(d);
			return -1;
		}
		close(d->dfd);
		d->dfd = -1;
		d->tmp[0] = '\0';
		return 0;
	}
	/* a trace of weft's: swapped with the new one in one step, then its
	 * files (now at tmp) removed */
	if (renameat2(AT_FDCWD, d->tmp, AT_FDCWD, d->out, RENAME_EXCHANGE) != 0) {
		snprintf(err, errlen, "%s: cannot replace it with %s: %s", d->out, d->tmp,
				strerror(errno));
		ctf_dir_discard(d);
		return -1;
	}
	close(d->dfd);
	d->dfd = open(d->tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d->dfd >= 0 && dir_holds(d->dfd) != 1) {
		/* not what was checked (changed meanwhile): left there as it is */
		close(d->dfd);
		d->dfd = -1;
		d->tmp[0] = '\0';
		return 0;
	}
	ctf_dir_discard(d);
	return 0;
}
