/* SPDX-License-Identifier: MIT */
/*
 * fs.c - file system helpers of libovni: formatted paths, mkdir -p, full
 * writes, atomic file replacement and moving a directory tree into
 * another, file by file (used to bring OVNI_TMPDIR streams into the trace
 * directory, over those of an earlier run).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt_internal.h"

char *rt_strfmt(const char *func, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = NULL;
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		rt_die(func, "out of memory while building a path");
	return s;
}

void rt_mkdir_p(const char *func, const char *path)
{
	/* The parents usually exist (every thread's directory but the first
	 * is one mkdir(2) from them): try the whole path first. */
	if (mkdir(path, 0777) == 0)
		return;
	size_t len = strlen(path);
	char *tmp = malloc(len + 1);
	if (tmp == NULL)
		rt_die(func, "out of memory while creating the directory '%s'", path);
	memcpy(tmp, path, len + 1);
	/* Create every prefix ending before a '/', then the whole path. A
	 * parent that vanishes meanwhile (another process's ovni_proc_fini
	 * removing an OVNI_TMPDIR directory it found empty) means start
	 * again, a few times. */
	int restarts = 0;
	for (size_t i = 1; i <= len; i++) {
		if (tmp[i] != '/' && tmp[i] != '\0')
			continue;
		char saved = tmp[i];
		tmp[i] = '\0';
		if (mkdir(tmp, 0777) != 0) {
			int err = errno;
			struct stat st;
			if (err == ENOENT && i > 1 && restarts < 16) {
				tmp[i] = saved;
				restarts++;
				i = 0;
				continue;
			}
			if (err != EEXIST || stat(tmp, &st) != 0 || !S_ISDIR(st.st_mode)) {
				if (err == EEXIST)
					err = ENOTDIR;
				rt_die_errno(func, err, "cannot create the directory '%s'", tmp);
			}
		}
		tmp[i] = saved;
	}
	free(tmp);
}

void rt_write_all(const char *func, int fd, const void *buf, size_t len, const char *path)
{
	const uint8_t *p = buf;
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			rt_die_errno(func, errno, "cannot write the stream file '%s'", path);
		}
		if (w == 0)
			rt_die(func, "cannot write the stream file '%s': write returned 0", path);
		p += w;
		len -= (size_t) w;
	}
}

void rt_write_file_atomic(const char *func, const char *path, const char *text)
{
	char *tmp = rt_strfmt(func, "%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0)
		rt_die_errno(func, errno, "cannot create the metadata file '%s'", tmp);
	rt_write_all(func, fd, text, strlen(text), tmp);
	if (close(fd) != 0)
		rt_die_errno(func, errno, "cannot close the metadata file '%s'", tmp);
	if (rename(tmp, path) != 0)
		rt_die_errno(func, errno, "cannot rename '%s' to the metadata file '%s'", tmp, path);
	free(tmp);
}

int rt_write_file_over(const char *func, const char *path, const char *text, size_t len, int create)
{
	int flags = O_WRONLY | O_CLOEXEC | (create ? O_CREAT | O_EXCL : 0);
	int fd = open(path, flags, 0666);
	if (fd < 0) {
		if (create && errno == EEXIST)
			return 0;
		rt_die_errno(func, errno, "cannot open the metadata file '%s'", path);
	}
	rt_write_all(func, fd, text, len, path);
	if (close(fd) != 0)
		rt_die_errno(func, errno, "cannot close the metadata file '%s'", path);
	return 1;
}

/* Copies the file src (its stat st) into the new file dst, times kept. */
static void copy_file(const char *func, const char *src, const char *dst, const struct stat *st)
{
	mode_t mode = st->st_mode;
	int in = open(src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (in < 0)
		rt_die_errno(func, errno, "cannot open '%s' to move it into the trace directory", src);
	int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode & 0777);
	if (out < 0)
		rt_die_errno(func, errno, "cannot create '%s' in the trace directory", dst);
	static const size_t chunk = 1u << 20;
	char *buf = malloc(chunk);
	if (buf == NULL)
		rt_die(func, "out of memory while copying '%s'", src);
	for (;;) {
		ssize_t r = read(in, buf, chunk);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			rt_die_errno(func, errno, "cannot read '%s' to move it into the trace directory", src);
		}
		if (r == 0)
			break;
		rt_write_all(func, out, buf, (size_t) r, dst);
	}
	free(buf);
	close(in);
	/* The times too: a reader tells a stale stream.idx by its mtime
	 * against stream.obs's. */
	struct timespec ts[2] = { st->st_atim, st->st_mtim };
	if (futimens(out, ts) != 0)
		rt_die_errno(func, errno, "cannot set the times of '%s'", dst);
	if (close(out) != 0)
		rt_die_errno(func, errno, "cannot close '%s' in the trace directory", dst);
}

/* Moves the file src over dst: rename(2), which replaces dst (a link
 * itself, not what it points to); across file systems, a copy written
 * aside in dst's directory, renamed over dst, then src removed. */
static void move_file(const char *func, const char *src, const char *dst, const struct stat *st)
{
	if (rename(src, dst) == 0)
		return;
	if (errno != EXDEV)
		rt_die_errno(func, errno, "cannot move '%s' to '%s'", src, dst);
	char *aside = rt_strfmt(func, "%s.move.tmp", dst);
	/* One left by an earlier run that died here (a link is removed, not
	 * followed). */
	if (unlink(aside) != 0 && errno != ENOENT)
		rt_die_errno(func, errno, "cannot remove '%s'", aside);
	copy_file(func, src, aside, st);
	if (rename(aside, dst) != 0)
		rt_die_errno(func, errno, "cannot rename '%s' to '%s'", aside, dst);
	if (unlink(src) != 0)
		rt_die_errno(func, errno, "cannot remove '%s' after copying it", src);
	free(aside);
}

void rt_move_tree(const char *func, const char *src, const char *dst)
{
	if (mkdir(dst, 0777) != 0) {
		int err = errno;
		struct stat st;
		if (err != EEXIST)
			rt_die_errno(func, err, "cannot create the directory '%s'", dst);
		if (lstat(dst, &st) != 0 || !S_ISDIR(st.st_mode))
			rt_die(func, "cannot move '%s' into '%s': that exists and is not a directory (a link is "
				     "not followed)", src, dst);
	}
	DIR *d = opendir(src);
	if (d == NULL)
		rt_die_errno(func, errno, "cannot open the directory '%s'", src);
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		char *s = rt_strfmt(func, "%s/%s", src, de->d_name);
		char *t = rt_strfmt(func, "%s/%s", dst, de->d_name);
		struct stat st;
		if (lstat(s, &st) != 0)
			rt_die_errno(func, errno, "cannot stat '%s'", s);
		if (S_ISDIR(st.st_mode))
			rt_move_tree(func, s, t);
		else
			move_file(func, s, t, &st);
		free(s);
		free(t);
	}
	closedir(d);
	if (rmdir(src) != 0)
		rt_die_errno(func, errno, "cannot remove the directory '%s' after moving what it held", src);
}
