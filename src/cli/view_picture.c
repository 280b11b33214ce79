/* SPDX-License-Identifier: MIT */
/*
 * view_picture.c - `weft view --png/--svg/--pdf` (view_picture.h): the
 * emulation of the trace into a sink that keeps one channel (src/view/
 * picture_sink.h), then the picture drawn in each format asked for and
 * each file written aside and renamed over its name once every picture is
 * drawn and written.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "driver.h"
#include "model.h"
#include "picture.h"
#include "picture_sink.h"
#include "view_picture.h"
#include "weft/weft.h"

int view_picture_parse_size(const char *s, unsigned *w, unsigned *h, char *err, size_t errlen)
{
	unsigned long a = 0, b = 0;
	const char *p = s;
	int ok = *p >= '0' && *p <= '9';
	for (; ok && *p >= '0' && *p <= '9'; p++) /* saturated: too large all the same */
		a = a > PICTURE_MAX_SIDE ? a : a * 10 + (unsigned long) (*p - '0');
	ok = ok && *p == 'x' && p[1] >= '0' && p[1] <= '9';
	if (ok)
		p++;
	for (; ok && *p >= '0' && *p <= '9'; p++)
		b = b > PICTURE_MAX_SIDE ? b : b * 10 + (unsigned long) (*p - '0');
	if (!ok || *p != '\0') {
		snprintf(err, errlen, "--size '%s' is not a size: give WIDTHxHEIGHT in pixels "
				"(e.g. 1600x900)", s);
		return -1;
	}
	if (a < PICTURE_MIN_SIDE || b < PICTURE_MIN_SIDE || a > PICTURE_MAX_SIDE ||
			b > PICTURE_MAX_SIDE || a * b > PICTURE_MAX_PIXELS) {
		snprintf(err, errlen, "--size '%s': each side must be from %u to %u pixels, and "
				"the picture at most %u pixels in all", s, PICTURE_MIN_SIDE,
				PICTURE_MAX_SIDE, PICTURE_MAX_PIXELS);
		return -1;
	}
	*w = (unsigned) a;
	*h = (unsigned) b;
	return 0;
}

/* A window bound: digits (a clock, ns) or a number with a unit ns, us, ms,
 * s, min (after the trace's first event). 0, or -1 with err. */
static int parse_time(const char *opt, const char *s, int64_t *out, int *rel, char *err,
		size_t errlen)
{
	static const struct { const char *name; uint64_t ns; } units[] = {
		{ "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", 1000000000 },
		{ "min", UINT64_C(60000000000) },
	};
	const char *p = s;
	uint64_t ip = 0, frac = 0, fscale = 1;
	int digits = 0, over = 0;
	for (; *p >= '0' && *p <= '9'; p++, digits++)
		over |= __builtin_mul_overflow(ip, 10, &ip) ||
			__builtin_add_overflow(ip, (uint64_t) (*p - '0'), &ip);
	int has_frac = *p == '.';
	if (has_frac)
		for (p++; *p >= '0' && *p <= '9'; p++)
			if (fscale < UINT64_C(1000000000000)) {
				frac = frac * 10 + (uint64_t) (*p - '0');
				fscale *= 10;
			}
	uint64_t mult = 0;
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
		if (strcmp(p, units[i].name) == 0)
			mult = units[i].ns;
	if (digits == 0 || (*p != '\0' && mult == 0) || (has_frac && mult == 0)) {
		snprintf(err, errlen, "%s '%s' is not a time: give a clock in nanoseconds (e.g. "
				"1500000) or a time after the trace's first event with a unit ns, us, ms, s "
				"or min (e.g. 2.5s)", opt, s);
		return -1;
	}
	*rel = mult != 0;
	uint64_t v = ip;
	if (mult != 0) {
		over |= __builtin_mul_overflow(v, mult, &v);
		over |= __builtin_add_overflow(v, frac * mult / fscale, &v);
	}
	if (over || v > (uint64_t) INT64_MAX) {
		snprintf(err, errlen, "%s '%s': out of range", opt, s);
		return -1;
	}
	*out = (int64_t) v;
	return 0;
}

/* A file written aside (DIR/.NAME.weft-XXXXXX) and renamed later. */
struct aside {
	const char *path;
	char *tmp;
};

static int write_aside(struct aside *a, const unsigned char *data, size_t n, char *err,
		size_t errlen)
{
	struct stat sb;
	if (lstat(a->path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
		snprintf(err, errlen, "%s: is %s: not replaced (weft replaces only regular files)",
				a->path, S_ISLNK(sb.st_mode) ? "a symbolic link" :
				S_ISDIR(sb.st_mode) ? "a directory" : "not a regular file");
		return -1;
	}
	const char *slash = strrchr(a->path, '/');
	size_t dl = slash ? (size_t) (slash - a->path) + 1 : 0;
	const char *base = slash ? slash + 1 : a->path;
	if (*base == '\0') {
		snprintf(err, errlen, "cannot write %s: not a file name", a->path);
		return -1;
	}
	size_t len = dl + strlen(base) + 16;
	if ((a->tmp = malloc(len)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	snprintf(a->tmp, len, "%.*s.%s.weft-XXXXXX", (int) dl, a->path, base);
	int fd = mkstemp(a->tmp);
	if (fd < 0) {
		snprintf(err, errlen, "cannot write %s: %s", a->path, strerror(errno));
		free(a->tmp);
		a->tmp = NULL;
		return -1;
	}
	mode_t mask = umask(0);
	umask(mask);
	int e = fchmod(fd, 0666 & ~mask) != 0 ? errno : 0;
	while (e == 0 && n > 0) {
		ssize_t w = write(fd, data, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			e = errno ? errno : EIO;
			break;
		}
		data += w;
		n -= (size_t) w;
	}
	if (close(fd) != 0 && e == 0)
		e = errno;
	if (e != 0) {
		snprintf(err, errlen, "cannot write %s: %s", a->path, strerror(e));
		unlink(a->tmp);
		free(a->tmp);
		a->tmp = NULL;
		return -1;
	}
	return 0;
}

static int run(const struct view_picture_req *r, struct weft_registry *models,
		struct picture *pic, char *err, size_t errlen)
{
	int64_t from = 0, to = 0;
	int from_rel = 0, to_rel = 0;
	if (r->from != NULL && parse_time("--from", r->from, &from, &from_rel, err, errlen) != 0)
		return -1;
	if (r->to != NULL && parse_time("--to", r->to, &to, &to_rel, err, errlen) != 0)
		return -1;
	if (r->from != NULL && r->to != NULL) {
		if (from_rel != to_rel) {
			snprintf(err, errlen, "--from '%s' and --to '%s' are of different kinds: give "
					"both as clocks or both with a unit", r->from, r->to);
			return -1;
		}
		if (to <= from) {
			snprintf(err, errlen, "--to '%s' is not after --from '%s': the window would be "
					"empty", r->to, r->from);
			return -1;
		}
	}
	const char *channel = r->channel ? r->channel : "ovni.thread.state";
	struct picture_sink *sink = picture_sink_new(channel);
	if (sink == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	static const char *const no_formats[] = { NULL };
	struct weft_emulate_opts o;
	memset(&o, 0, sizeof o);
	o.sz = sizeof o;
	o.path = r->trace;
	o.formats = no_formats;
	o.models = models;
	o.all_models = r->all_models;
	o.breakdown = picture_sink_wants_breakdown(channel);
	o.has_from = r->from != NULL;
	o.has_to = r->to != NULL;
	o.from = from;
	o.to = to;
	o.from_rel = from_rel;
	o.to_rel = to_rel;
	o.from_arg = r->from;
	o.to_arg = r->to;
	o.open_output = picture_sink_open;
	o.hook_ctx = sink;
	int rc = weft_emulate(&o, err, errlen);
	if (rc == 0 && picture_sink_take(sink, pic) != 0) {
		snprintf(err, errlen, "%s: the emulation ended without a timeline", r->trace);
		rc = -1;
	}
	picture_sink_free(sink);
	return rc;
}

int view_picture_run(const struct view_picture_req *r, char *err, size_t errlen)
{
	unsigned w = r->width ? r->width : PICTURE_DEFAULT_W;
	unsigned h = r->height ? r->height : PICTURE_DEFAULT_H;
	if (w < PICTURE_MIN_SIDE || h < PICTURE_MIN_SIDE || w > PICTURE_MAX_SIDE ||
			h > PICTURE_MAX_SIDE || (unsigned long) w * h > PICTURE_MAX_PIXELS) {
		snprintf(err, errlen, "--size '%ux%u': each side must be from %u to %u pixels, and "
				"the picture at most %u pixels in all", w, h, PICTURE_MIN_SIDE,
				PICTURE_MAX_SIDE, PICTURE_MAX_PIXELS);
		return -1;
	}
	const char *paths[3] = { r->png, r->svg, r->pdf };
	if (!paths[0] && !paths[1] && !paths[2]) {
		snprintf(err, errlen, "no picture asked for: give --png, --svg or --pdf FILE");
		return -1;
	}
	struct weft_registry *models = weft_registry_new(err, errlen);
	if (models == NULL)
		return -1;
	for (size_t i = 0; r->models != NULL && r->models[i] != NULL; i++)
		if (weft_registry_add_file(models, r->models[i], err, errlen) != 0) {
			weft_registry_free(models);
			return -1;
		}
	struct picture pic;
	memset(&pic, 0, sizeof pic);
	int rc = run(r, models, &pic, err, errlen);
	weft_registry_free(models);
	if (rc != 0)
		return -1;
	/* the trace in the title */
	size_t tl = strlen(pic.title) + strlen(r->trace) + 8;
	char *title = malloc(tl);
	if (title != NULL) {
		snprintf(title, tl, "%s  (%s)", pic.title, r->trace);
		free(pic.title);
		pic.title = title;
	}
	struct aside files[3] = { { NULL, NULL }, { NULL, NULL }, { NULL, NULL } };
	static const enum picture_format fmts[3] = { PICTURE_PNG, PICTURE_SVG, PICTURE_PDF };
	for (int k = 0; k < 3 && rc == 0; k++) {
		if (paths[k] == NULL)
			continue;
		unsigned char *data = NULL;
		size_t n = 0;
		files[k].path = paths[k];
		rc = picture_render(&pic, fmts[k], w, h, &data, &n, err, errlen);
		if (rc == 0)
			rc = write_aside(&files[k], data, n, err, errlen);
		free(data);
	}
	for (int k = 0; k < 3; k++) {
		if (files[k].tmp == NULL)
			continue;
		if (rc == 0 && rename(files[k].tmp, files[k].path) != 0) {
			snprintf(err, errlen, "cannot replace %s: %s", files[k].path, strerror(errno));
			rc = -1;
		}
		if (rc != 0)
			unlink(files[k].tmp);
		free(files[k].tmp);
	}
	picture_free(&pic);
	picture_end();
	return rc;
}
