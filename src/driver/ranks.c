/* SPDX-License-Identifier: MIT */
/* ranks.c - weft emu --mpi --local: a rank's streams as bytes, and the
 * shadow trace built from every rank's (ranks.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "obs_format.h"
#include "ranks.h"

/* Deeper than loom.X/proc.P/thread.T is not looked into. */
#define SCAN_DEPTH 4
/* The first event copied into the shadow's stream.obs when at most this
 * long (else its header only: the shadow's copy is never read further). */
#define HEAD_MAX 65536u

/* A path into buf (PATH_MAX): 0, or -1 when it does not fit (then empty). */
__attribute__((format(printf, 2, 3)))
static int pathf(char *buf, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, PATH_MAX, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= PATH_MAX) {
		buf[0] = '\0';
		return -1;
	}
	return 0;
}

void rbuf_put(struct rbuf *b, const void *data, size_t n)
{
	if (b->oom)
		return;
	if (b->n + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->n + n)
			cap *= 2;
		uint8_t *p = realloc(b->p, cap);
		if (p == NULL) {
			b->oom = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	if (n > 0)
		memcpy(b->p + b->n, data, n);
	b->n += n;
}

void rbuf_u64(struct rbuf *b, uint64_t v)
{
	rbuf_put(b, &v, sizeof v);
}

void rbuf_str(struct rbuf *b, const char *s, size_t n)
{
	rbuf_u64(b, n);
	rbuf_put(b, s, n);
}

int rget_u64(struct rget *g, uint64_t *v)
{
	if (g->n - g->at < sizeof *v)
		return 0;
	memcpy(v, g->p + g->at, sizeof *v);
	g->at += sizeof *v;
	return 1;
}

int rget_str(struct rget *g, const uint8_t **s, size_t *n)
{
	uint64_t len;
	if (!rget_u64(g, &len) || len > g->n - g->at)
		return 0;
	*s = g->p + g->at;
	*n = (size_t) len;
	g->at += (size_t) len;
	return 1;
}

/* The file path into b (length first), its first max bytes (trunc), or the
 * whole file, refused beyond max bytes; -1 with err. */
static int put_file(struct rbuf *b, const char *path, size_t max, int trunc, char *err,
		size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (!trunc && (uint64_t) st.st_size > max) {
		snprintf(err, errlen, "%s: %llu bytes: more than the %zu a rank shares", path,
				(unsigned long long) st.st_size, max);
		close(fd);
		return -1;
	}
	size_t want = (uint64_t) st.st_size < max ? (size_t) st.st_size : max;
	char *buf = malloc(want + 1);
	size_t got = 0;
	while (buf != NULL && got < want) {
		ssize_t r = read(fd, buf + got, want - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t) r;
	}
	close(fd);
	if (buf == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	rbuf_str(b, buf, got);
	free(buf);
	return 0;
}

/* The stream file's header and first event (or its header: HEAD_MAX). */
static int put_head(struct rbuf *b, const char *path, uint64_t *size, char *err, size_t errlen)
{
	uint8_t h[WEFT_OBS_HEADER_SIZE + WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*size = (uint64_t) st.st_size;
	ssize_t r;
	do
		r = pread(fd, h, sizeof h, 0);
	while (r < 0 && errno == EINTR);
	close(fd);
	if (r < 0) {
		snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
		return -1;
	}
	size_t n = (size_t) r, whole = n;
	if (n >= WEFT_OBS_HEADER_SIZE + WEFT_EV_HEADER_SIZE) {
		uint8_t flags = h[WEFT_OBS_HEADER_SIZE];
		uint64_t ev = WEFT_EV_HEADER_SIZE + weft_ev_payload_size(flags);
		if (weft_ev_is_jumbo(flags) && n == sizeof h)
			ev = WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD +
				(uint64_t) weft_load_u32(h + WEFT_OBS_HEADER_SIZE + WEFT_EV_HEADER_SIZE);
		whole = ev <= HEAD_MAX ? (size_t) (WEFT_OBS_HEADER_SIZE + ev)
			: WEFT_OBS_HEADER_SIZE + WEFT_EV_HEADER_SIZE;
		if (whole > *size)
			whole = (size_t) *size;
	}
	return put_file(b, path, whole, 1, err, errlen);
}

struct found {
	char **rel;
	size_t n, cap;
};

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/* The directories holding a stream.json under dir/rel (depth levels). */
static int walk(const char *dir, const char *rel, int depth, struct found *f, char *err,
		size_t errlen)
{
	char path[PATH_MAX];
	pathf(path, "%s/%s", dir, rel);
	DIR *d = opendir(path);
	if (d == NULL) {
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return -1;
	}
	int r = 0;
	struct dirent *de;
	while (r == 0 && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		char sub[PATH_MAX], full[PATH_MAX];
		struct stat st;
		if (pathf(sub, "%s/%s", rel, de->d_name) != 0 ||
				pathf(full, "%s/%s", dir, sub) != 0 || stat(full, &st) != 0)
			continue;
		if (S_ISDIR(st.st_mode) && depth > 1) {
			r = walk(dir, sub, depth - 1, f, err, errlen);
		} else if (S_ISREG(st.st_mode) && strcmp(de->d_name, WEFT_STREAM_JSON) == 0) {
			if (f->n == f->cap) {
				size_t cap = f->cap ? 2 * f->cap : 64;
				char **p = realloc(f->rel, cap * sizeof *p);
				if (p == NULL) {
					r = -1;
					snprintf(err, errlen, "out of memory");
					break;
				}
				f->rel = p;
				f->cap = cap;
			}
			if ((f->rel[f->n] = strdup(rel)) == NULL) {
				r = -1;
				snprintf(err, errlen, "out of memory");
				break;
			}
			f->n++;
		}
	}
	closedir(d);
	return r;
}

int ranks_scan(const char *dir, struct rbuf *b, char *err, size_t errlen)
{
	DIR *d = opendir(dir);
	if (d == NULL) {
		snprintf(err, errlen, "%s: cannot open: %s", dir, strerror(errno));
		return -1;
	}
	struct found f = { NULL, 0, 0 };
	int r = 0;
	struct dirent *de;
	while (r == 0 && (de = readdir(d)) != NULL)
		if (strncmp(de->d_name, WEFT_LOOM_PREFIX, strlen(WEFT_LOOM_PREFIX)) == 0 &&
				de->d_name[strlen(WEFT_LOOM_PREFIX)] != '\0') {
			char full[PATH_MAX];
			struct stat st;
			pathf(full, "%s/%s", dir, de->d_name);
			if (stat(full, &st) == 0 && S_ISDIR(st.st_mode))
				r = walk(dir, de->d_name, SCAN_DEPTH - 1, &f, err, errlen);
		}
	closedir(d);
	if (r == 0 && f.n > 1)
		qsort(f.rel, f.n, sizeof *f.rel, cmp_str);
	char path[PATH_MAX];
	pathf(path, "%s/%s", dir, WEFT_CLOCK_OFFSETS);
	if (r == 0 && access(path, F_OK) == 0) {
		rbuf_u64(b, 1);
		r = put_file(b, path, (size_t) 1 << 26, 0, err, errlen);
	} else if (r == 0) {
		rbuf_u64(b, 0);
	}
	rbuf_u64(b, f.n);
	for (size_t i = 0; i < f.n && r == 0; i++) {
		rbuf_str(b, f.rel[i], strlen(f.rel[i]));
		pathf(path, "%s/%s/%s", dir, f.rel[i], WEFT_STREAM_JSON);
		r = put_file(b, path, (size_t) 1 << 26, 0, err, errlen);
		pathf(path, "%s/%s/%s", dir, f.rel[i], WEFT_STREAM_OBS);
		uint64_t size = 0;
		struct rbuf h = { NULL, 0, 0, 0 };
		if (r == 0)
			r = put_head(&h, path, &size, err, errlen);
		rbuf_u64(b, size);
		rbuf_put(b, h.p, h.n);
		free(h.p);
	}
	for (size_t i = 0; i < f.n; i++)
		free(f.rel[i]);
	free(f.rel);
	if (r == 0 && b->oom) {
		snprintf(err, errlen, "out of memory");
		r = -1;
	}
	return r;
}

static int mkdirs(char *path)
{
	for (char *p = path + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		int r = mkdir(path, 0700);
		*p = '/';
		if (r != 0 && errno != EEXIST)
			return -1;
	}
	return mkdir(path, 0700) != 0 && errno != EEXIST ? -1 : 0;
}

static int write_file(const char *path, const uint8_t *data, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	size_t done = 0;
	while (done < n) {
		ssize_t r = write(fd, data + done, n - done);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			close(fd);
			return -1;
		}
		done += (size_t) r;
	}
	return close(fd);
}

/* The loom of relpath rel (its first component) in looms[], added when new. */
static struct rloom *loom_of(struct rloom **looms, size_t *n, const uint8_t *rel, size_t len,
		int nranks)
{
	size_t dl = 0;
	while (dl < len && rel[dl] != '/')
		dl++;
	for (size_t i = 0; i < *n; i++)
		if (strlen((*looms)[i].dir) == dl && memcmp((*looms)[i].dir, rel, dl) == 0)
			return &(*looms)[i];
	struct rloom *p = realloc(*looms, (*n + 1) * sizeof *p);
	if (p == NULL)
		return NULL;
	*looms = p;
	struct rloom *L = &p[*n];
	L->dir = strndup((const char *) rel, dl);
	L->seen = calloc((size_t) nranks, 1);
	L->bytes = 0;
	if (L->dir == NULL || L->seen == NULL) {
		free(L->dir);
		free(L->seen);
		return NULL;
	}
	(*n)++;
	return L;
}

static int cmp_loom(const void *a, const void *b)
{
	return strcmp(((const struct rloom *) a)->dir, ((const struct rloom *) b)->dir);
}

int ranks_shadow(const char *dir, const uint8_t *all, const size_t *lens, int nranks, int me,
		char **shadow, struct rloom **looms, size_t *nlooms, char *err, size_t errlen)
{
	*looms = NULL;
	*nlooms = 0;
	const char *tmp = getenv("TMPDIR");
	char *root = malloc(PATH_MAX);
	if (root == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	pathf(root, "%s/weft-mpi-XXXXXX", tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
	if (mkdtemp(root) == NULL) {
		snprintf(err, errlen, "%s: cannot create the shadow trace: %s", root, strerror(errno));
		free(root);
		return -1;
	}
	*shadow = root;
	char path[PATH_MAX];
	int have_offsets = 0;
	size_t at = 0;
	for (int r = 0; r < nranks; r++) {
		struct rget g = { all + at, lens[r], 0 };
		at += lens[r];
		uint64_t has, ns;
		const uint8_t *s;
		size_t n;
		if (!rget_u64(&g, &has) || (has && !rget_str(&g, &s, &n)))
			goto bad;
		if (has && !have_offsets) {
			pathf(path, "%s/%s", root, WEFT_CLOCK_OFFSETS);
			if (write_file(path, s, n) != 0)
				goto io;
			have_offsets = 1;
		}
		if (!rget_u64(&g, &ns))
			goto bad;
		for (uint64_t i = 0; i < ns; i++) {
			const uint8_t *rel, *json, *head;
			size_t rl, jl, hl;
			uint64_t size;
			if (!rget_str(&g, &rel, &rl) || !rget_str(&g, &json, &jl) ||
					!rget_u64(&g, &size) || !rget_str(&g, &head, &hl))
				goto bad;
			struct rloom *L = loom_of(looms, nlooms, rel, rl, nranks);
			if (L == NULL) {
				snprintf(err, errlen, "out of memory");
				return -1;
			}
			pathf(path, "%s/%.*s", root, (int) rl, (const char *) rel);
			struct stat st;
			int known = stat(path, &st) == 0;
			if (!known) /* a stream counts once towards its loom's bytes */
				L->bytes += size;
			L->seen[r] = 1;
			if (known && r != me)
				continue; /* written already (a rank of the same node) */
			if (mkdirs(path) != 0)
				goto io;
			pathf(path, "%s/%.*s/%s", root, (int) rl, (const char *) rel,
					WEFT_STREAM_JSON);
			if (!known && write_file(path, json, jl) != 0)
				goto io;
			pathf(path, "%s/%.*s/%s", root, (int) rl, (const char *) rel,
					WEFT_STREAM_OBS);
			if (r == me) {
				/* this rank's own file, where it lies */
				char real[PATH_MAX], *rp;
				pathf(real, "%s/%.*s/%s", dir, (int) rl,
						(const char *) rel, WEFT_STREAM_OBS);
				if ((rp = realpath(real, NULL)) == NULL) {
					snprintf(err, errlen, "%s: %s", real, strerror(errno));
					return -1;
				}
				int lr = (unlink(path) == 0 || errno == ENOENT) ? symlink(rp, path) : -1;
				free(rp);
				if (lr != 0)
					goto io;
			} else if (write_file(path, head, hl) != 0) {
				goto io;
			}
		}
	}
	if (*nlooms > 1)
		qsort(*looms, *nlooms, sizeof **looms, cmp_loom);
	return 0;
bad:
	snprintf(err, errlen, "the streams a rank found arrived malformed");
	return -1;
io:
	snprintf(err, errlen, "%s: cannot write the shadow trace: %s", path, strerror(errno));
	return -1;
}

void ranks_looms_free(struct rloom *looms, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(looms[i].dir);
		free(looms[i].seen);
	}
	free(looms);
}

void ranks_rmtree(const char *path)
{
	struct stat st;
	if (lstat(path, &st) != 0)
		return;
	if (S_ISDIR(st.st_mode)) {
		DIR *d = opendir(path);
		struct dirent *de;
		while (d != NULL && (de = readdir(d)) != NULL) {
			if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
				continue;
			char sub[PATH_MAX];
			if (pathf(sub, "%s/%s", path, de->d_name) == 0)
				ranks_rmtree(sub);
		}
		if (d != NULL)
			closedir(d);
		rmdir(path);
	} else {
		unlink(path);
	}
}

void ranks_replace(const char *msg, const char *from, const char *to, char *out, size_t len)
{
	size_t fl = strlen(from), o = 0;
	if (len == 0)
		return;
	while (*msg != '\0' && o + 1 < len) {
		if (fl > 0 && strncmp(msg, from, fl) == 0) {
			int w = snprintf(out + o, len - o, "%s", to);
			o += (size_t) w < len - o ? (size_t) w : len - o - 1;
			msg += fl;
		} else {
			out[o++] = *msg++;
		}
	}
	out[o] = '\0';
}
