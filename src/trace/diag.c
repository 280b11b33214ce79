/* SPDX-License-Identifier: MIT */
/* diag.c - errors and warnings as values, and small helpers. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trace_diag.h"
#include "trace_meta.h"
#include "trace_util.h"

WEFT_PRINTF(3, 0) static void vformat(char *buf, size_t len, const char *fmt, va_list ap)
{
	if (len == 0)
		return;
	vsnprintf(buf, len, fmt, ap);
}

int weft_fail(struct weft_diag *d, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vformat(d->err, d->errlen, fmt, ap);
	va_end(ap);
	d->failed = 1;
	return -1;
}

WEFT_PRINTF(2, 0) static void vwarn(struct weft_diag *d, const char *fmt, va_list ap)
{
	if (d->warn == NULL)
		return;
	char msg[WEFT_ERR_MAX];
	vformat(msg, sizeof msg, fmt, ap);
	d->warn(d->warn_ctx, msg);
}

int weft_warnf(struct weft_diag *d, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vwarn(d, fmt, ap);
	va_end(ap);
	return 0;
}

int weft_breach(struct weft_diag *d, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (d->mode == WEFT_LENIENT) {
		vwarn(d, fmt, ap);
		va_end(ap);
		return 0;
	}
	vformat(d->err, d->errlen, fmt, ap);
	va_end(ap);
	d->failed = 1;
	return -1;
}

int weft_oom(struct weft_diag *d, const char *fmt, ...)
{
	char what[WEFT_ERR_MAX];
	va_list ap;
	va_start(ap, fmt);
	vformat(what, sizeof what, fmt, ap);
	va_end(ap);
	d->oom = 1;
	return weft_fail(d, "out of memory while %s", what);
}

char *weft_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = malloc(n);
	if (p != NULL)
		memcpy(p, s, n);
	return p;
}

char *weft_path_join(const char *a, const char *b)
{
	if (strcmp(b, ".") == 0)
		return weft_strdup(a);
	size_t la = strlen(a), lb = strlen(b);
	while (la > 1 && a[la - 1] == '/')
		la--;
	char *p = malloc(la + lb + 2);
	if (p == NULL)
		return NULL;
	memcpy(p, a, la);
	p[la] = '/';
	memcpy(p + la + 1, b, lb + 1);
	return p;
}

void *weft_calloc(size_t n, size_t sz)
{
	return calloc(n ? n : 1, sz ? sz : 1);
}

int weft_read_small_file(const char *path, size_t max, char **out, size_t *outlen,
		struct weft_diag *d)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return weft_fail(d, "%s: cannot open: %s", path, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) != 0) {
		int e = errno;
		close(fd);
		return weft_fail(d, "%s: cannot stat: %s", path, strerror(e));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return weft_fail(d, "%s: not a regular file", path);
	}
	if ((uint64_t) st.st_size > max) {
		close(fd);
		return weft_fail(d, "%s: too large for a metadata file (%lld bytes, at most %zu)",
				path, (long long) st.st_size, max);
	}
	size_t size = (size_t) st.st_size;
	char *buf = malloc(size + 1);
	if (buf == NULL) {
		close(fd);
		weft_oom(d, "reading %s (%zu bytes)", path, size + 1);
		return -2;
	}
	size_t got = 0;
	while (got < size) {
		ssize_t r = read(fd, buf + got, size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			free(buf);
			close(fd);
			return weft_fail(d, "%s: read failed: %s", path, strerror(e));
		}
		if (r == 0)
			break;
		got += (size_t) r;
	}
	close(fd);
	buf[got] = '\0';
	*out = buf;
	*outlen = got;
	return 0;
}
