/* SPDX-License-Identifier: MIT */
/* export_dir.c - weft export's output directory (export_dir.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
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

/* Returns -1 with err if out is refused, else 0 with *exists: 0 absent,
 * 1 an empty directory, 2 an export of weft's to replace. */
static int check(const char *out, int force, const struct export_fmt *fmt, int *exists,
		char *err, size_t errlen)
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
	int h = fd < 0 ? -1 : fmt->holds(fd);
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
				"(even with --force)", out, fmt->what);
		return -1;
	}
	if (!force) {
		snprintf(err, errlen, "%s: exists and is not empty: not replaced (--force "
				"replaces %s weft wrote)", out, fmt->what);
		return -1;
	}
	*exists = 2;
	return 0;
}

int export_dir_open(struct export_dir *d, const struct export_fmt *fmt, const char *out,
		int force, char *err, size_t errlen)
{
	d->dfd = -1;
	d->tmp[0] = '\0';
	d->fmt = fmt;
	size_t n = strlen(out), sl = strlen(fmt->suffix);
	while (n > 1 && out[n - 1] == '/')
		n--; /* "DIR/": the directory itself, beside which the temporary goes */
	if (n == 0 || n + 20 >= sizeof d->tmp || sl >= 20) {
		snprintf(err, errlen, "%s: not a usable output directory name", out);
		return -1;
	}
	memcpy(d->out, out, n);
	d->out[n] = '\0';
	int exists;
	if (check(d->out, force, fmt, &exists, err, errlen) != 0)
		return -1;
	memcpy(d->tmp, d->out, n);
	memcpy(d->tmp + n, fmt->suffix, sl + 1);
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

void export_dir_discard(struct export_dir *d)
{
	if (d->dfd >= 0) {
		d->fmt->empty(d->dfd);
		close(d->dfd);
		d->dfd = -1;
	}
	if (d->tmp[0] != '\0')
		rmdir(d->tmp);
	d->tmp[0] = '\0';
}

int export_dir_commit(struct export_dir *d, int force, char *err, size_t errlen)
{
	/* the permissions a new directory would have */
	mode_t mask = umask(0);
	umask(mask);
	if (fchmod(d->dfd, 0777 & ~mask) != 0 || (d->fmt->sync && fsync(d->dfd) != 0)) {
		snprintf(err, errlen, "%s: %s", d->tmp, strerror(errno));
		export_dir_discard(d);
		return -1;
	}
	/* out may have changed meanwhile: checked again */
	int exists;
	if (check(d->out, force, d->fmt, &exists, err, errlen) != 0) {
		export_dir_discard(d);
		return -1;
	}
	if (exists < 2) {
		/* absent, or an empty directory (rename replaces it) */
		if (rename(d->tmp, d->out) != 0) {
			snprintf(err, errlen, "%s: cannot rename %s to it: %s", d->out, d->tmp,
					strerror(errno));
			export_dir_discard(d);
			return -1;
		}
		close(d->dfd);
		d->dfd = -1;
		d->tmp[0] = '\0';
		return 0;
	}
	/* an export of weft's: swapped with the new one in one step, then its
	 * files (now at tmp) removed when they are still what was checked */
	if (renameat2(AT_FDCWD, d->tmp, AT_FDCWD, d->out, RENAME_EXCHANGE) != 0) {
		snprintf(err, errlen, "%s: cannot replace it with %s: %s", d->out, d->tmp,
				strerror(errno));
		export_dir_discard(d);
		return -1;
	}
	close(d->dfd);
	d->dfd = open(d->tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d->dfd >= 0 && d->fmt->holds(d->dfd) == 1) {
		export_dir_discard(d);
		return 0;
	}
	/* not what was checked (changed meanwhile): left there as it is */
	if (d->dfd >= 0)
		close(d->dfd);
	d->dfd = -1;
	d->tmp[0] = '\0';
	return 0;
}
