/* SPDX-License-Identifier: MIT */
/*
 * no_tmpfile.so - a test shim (LD_PRELOAD) for a file system without
 * O_TMPFILE: every open() or open64() that asks for O_TMPFILE fails with
 * EOPNOTSUPP, as on file systems that lack it, and its directory is
 * appended, one line each, to the file named by WEFT_NO_TMPFILE_LOG (so
 * the test knows the fallback ran); every other open goes to the kernel.
 * view_cache.py runs `weft view --serve` under it to cover the cache's
 * named temporary file (src/view/cache.c). Not built under sanitizers,
 * whose runtimes must come first among the libraries.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

int open(const char *path, int flags, ...);
int open64(const char *path, int flags, ...);

static int shim_open(const char *path, int flags, mode_t mode)
{
	if ((flags & O_TMPFILE) == O_TMPFILE) {
		const char *log = getenv("WEFT_NO_TMPFILE_LOG");
		if (log != NULL) {
			int fd = (int) syscall(SYS_openat, AT_FDCWD, log,
					O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
			if (fd >= 0) {
				char line[4200];
				int n = snprintf(line, sizeof line, "%s\n", path);
				if (n > 0 && (size_t) n < sizeof line)
					(void) !write(fd, line, (size_t) n);
				close(fd);
			}
		}
		errno = EOPNOTSUPP;
		return -1;
	}
	return (int) syscall(SYS_openat, AT_FDCWD, path, flags, mode);
}

static mode_t mode_of(int flags, va_list ap)
{
	return (flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE ?
		(mode_t) va_arg(ap, unsigned) : 0;
}

int open(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = mode_of(flags, ap);
	va_end(ap);
	return shim_open(path, flags, mode);
}

/* the same function under glibc's other name */
int open64(const char *path, int flags, ...) __attribute__((alias("open")));
