/* SPDX-License-Identifier: MIT */
/* out_file.c - a file of an output written aside and renamed (out_file.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/random.h>
#endif

#include "out_file.h"

#define TMP_TAG ".weft-"
#define TMP_RAND 6
#define TMP_TRIES 64

void out_file_init(struct out_file *f)
{
	f->path = NULL;
	f->tmp = NULL;
	f->fd = -1;
}

static const char *kind_of(mode_t m)
{
	if (S_ISLNK(m))
		return "a symbolic link";
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	if (S_ISSOCK(m))
		return "a socket";
	return "not a regular file";
}

int out_file_check_path(const char *path, char *err, size_t errlen)
{
	struct stat sb;
	if (lstat(path, &sb) != 0) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "%s: cannot check the file to replace: %s", path,
				strerror(errno));
		return -1;
	}
	if (S_ISREG(sb.st_mode))
		return 0;
	snprintf(err, errlen, "%s: is %s: not replaced (weft replaces only regular files)", path,
			kind_of(sb.st_mode));
	return -1;
}

/* TMP_RAND characters of [0-9A-Za-z], from the kernel's random bytes (else
 * the clock, the process and the attempt). */
static void rand_suffix(char *s, unsigned attempt)
{
	static const char set[] =
		"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
	unsigned char b[TMP_RAND];
	int ok = 0;
#ifdef __linux__
	ok = getrandom(b, sizeof b, GRND_NONBLOCK) == (ssize_t) sizeof b;
#endif
	if (!ok) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		uint64_t x = (uint64_t) ts.tv_nsec ^ (uint64_t) ts.tv_sec << 30 ^
			(uint64_t) getpid() << 12 ^ (uint64_t) attempt * 0x9e3779b97f4a7c15u ^
			(uint64_t) (uintptr_t) s;
		for (size_t i = 0; i < sizeof b; i++) {
			x ^= x >> 29;
			x *= 0xbf58476d1ce4e5b9u;
			b[i] = (unsigned char) (x >> 56);
		}
	}
	for (size_t i = 0; i < TMP_RAND; i++)
		s[i] = set[b[i] % (sizeof set - 1)];
	s[TMP_RAND] = '\0';
}

/* Creates dir/.name.weft-XXXXXX (rw: for reading too); its name in *tmp (malloc'ed). A descriptor,
 * or -1 with err. */
static int create_tmp(const char *dir, const char *name, int rw, char **tmp, char *err,
		size_t errlen)
{
	size_t n = strlen(dir) + strlen(name) + sizeof "/." TMP_TAG + TMP_RAND + 1;
	char *t = malloc(n);
	if (t == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	int k = snprintf(t, n, "%s/.%s" TMP_TAG, dir, name);
	for (unsigned a = 0; a < TMP_TRIES; a++) {
		rand_suffix(t + k, a);
		int fd = open(t, (rw ? O_RDWR : O_WRONLY) | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
		if (fd >= 0) {
			*tmp = t;
			return fd;
		}
		if (errno != EEXIST) {
			snprintf(err, errlen, "cannot create %s/%s (written aside as %s): %s", dir, name,
					t, strerror(errno));
			free(t);
			return -1;
		}
	}
	snprintf(err, errlen, "cannot create %s/%s: no free temporary name beside it", dir, name);
	free(t);
	return -1;
}

int out_file_open(struct out_file *f, const char *dir, const char *name, char *err,
		size_t errlen)
{
	out_file_init(f);
	size_t n = strlen(dir) + strlen(name) + 2;
	f->path = malloc(n);
	if (f->path == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	snprintf(f->path, n, "%s/%s", dir, name);
	if (out_file_check_path(f->path, err, errlen) != 0 ||
			(f->fd = create_tmp(dir, name, 0, &f->tmp, err, errlen)) < 0) {
		free(f->path);
		out_file_init(f);
		return -1;
	}
	return 0;
}

FILE *out_file_stream(struct out_file *f, const char *mode, char *err, size_t errlen)
{
	FILE *s = fdopen(f->fd, mode);
	if (s == NULL) {
		snprintf(err, errlen, "cannot write %s: %s", f->path, strerror(errno));
		return NULL;
	}
	f->fd = -1;
	return s;
}

int out_file_close_fd(struct out_file *f)
{
	if (f->fd < 0)
		return 0;
	int r = close(f->fd) != 0 ? (errno ? errno : EIO) : 0;
	f->fd = -1;
	return r;
}

int out_file_check(const struct out_file *f, char *err, size_t errlen)
{
	return out_file_check_path(f->path, err, errlen);
}

int out_file_commit(struct out_file *f, char *err, size_t errlen)
{
	int r = 0;
	if (f->tmp != NULL && rename(f->tmp, f->path) != 0) {
		snprintf(err, errlen, "cannot replace %s (renaming %s over it): %s", f->path, f->tmp,
				strerror(errno));
		r = -1;
	} else {
		free(f->tmp);
		f->tmp = NULL;
	}
	out_file_discard(f);
	return r;
}

void out_file_discard(struct out_file *f)
{
	out_file_close_fd(f);
	if (f->tmp != NULL)
		unlink(f->tmp);
	free(f->tmp);
	free(f->path);
	out_file_init(f);
}

int out_file_scratch(const char *dir, const char *name, char *err, size_t errlen)
{
	char *tmp = NULL;
	int fd = create_tmp(dir, name, 1, &tmp, err, errlen);
	if (fd < 0)
		return -1;
	unlink(tmp);
	free(tmp);
	return fd;
}
