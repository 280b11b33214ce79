/* SPDX-License-Identifier: MIT */
/*
 * cmd_sort.c - `weft sort [--check] [--look-back N] PATH`: sorts the events
 * of every unordered region (OU[ ... OU]) into place, in every stream, as
 * the reference's ovnisort does (libweft's weft_sort_stream). Crash-safe:
 * a stream that changes is written to STREAM.sorting beside it, flushed to
 * disk and renamed over it, so that an interrupted sort leaves every
 * stream either untouched or sorted; the next sort removes the leftovers.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_common.h"
#include "commands.h"

#define TMP_SUFFIX ".sorting"

static const char usage[] =
	"Usage: weft sort [--check] [--look-back N] [-q] PATH\n"
	"\n"
	"Sort the events of every unordered region (OU[ ... OU], whose events may have\n"
	"clocks before earlier events of their stream, as a runtime writes events it\n"
	"copied late) into place, in every stream of the trace at PATH, as the\n"
	"reference's ovnisort does: the region's events and the events before it that\n"
	"are later than the region's earliest are sorted by clock (equal clocks keep\n"
	"their order). weft emu and weft dump --sort sort regions while reading instead.\n"
	"\n"
	"A stream that changes is written to a new file beside it (stream.obs" TMP_SUFFIX "),\n"
	"flushed to disk and renamed over it: an interrupted sort leaves every stream\n"
	"either untouched or sorted, and the next weft sort removes the leftover file.\n"
	"Streams that need no change are not written.\n"
	"\n"
	"Options:\n"
	"  -c, --check        change nothing: exit 1 at the first stream whose clocks go\n"
	"                     backwards, naming it; 0 when every stream is sorted\n"
	"  -n, --look-back N  how many events before its OU] a region may reach back to\n"
	"                     (its own events count; default 1000000); memory: 24 bytes\n"
	"                     per event of look-back, up to 2.5 times that while sorting\n"
	"  -q, --quiet        no summary line on stdout\n"
	"  --follow-links     follow the symbolic links that lead out of PATH and\n"
	"                     sort the streams there (by default each is named in\n"
	"                     a warning and not followed)\n"
	"  -h, --help         show this help\n"
	"\n"
	"Exit status: 0 success, 1 not sorted (--check) or a trace error, 2 usage error.\n";

/* ---- leftovers of an interrupted sort ---- */

static int n_removed;
static int remove_failed;

static int leftover(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void) ftw;
	size_t n = strlen(path), k = strlen(TMP_SUFFIX);
	if (flag != FTW_F || !S_ISREG(st->st_mode) || n <= k
			|| strcmp(path + n - k, TMP_SUFFIX) != 0)
		return 0;
	/* only beside the stream file it was made for */
	char *base = strdup(path);
	if (base == NULL)
		abort();
	base[n - k] = '\0';
	struct stat bs;
	if (stat(base, &bs) == 0 && S_ISREG(bs.st_mode)) {
		if (unlink(path) == 0) {
			fprintf(stderr, "weft sort: removed %s, left by an interrupted sort\n", path);
			n_removed++;
		} else {
			fprintf(stderr, "weft sort: cannot remove %s (left by an interrupted sort): "
					"%s\n", path, strerror(errno));
			remove_failed = 1;
		}
	}
	free(base);
	return 0;
}

/* ---- writing a stream ---- */

struct writer {
	int fd;
	int err;
	int die; /* the testing hook: die halfway through this stream */
};

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t r = write(fd, p, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		p += r;
		n -= (size_t) r;
	}
	return 0;
}

static int put(void *ctx, const void *buf, size_t len)
{
	struct writer *w = ctx;
	if (w->die) {
		/* WEFT_SORT_DIE_AFTER: a half-written file, then killed */
		write_all(w->fd, buf, len / 2);
		fsync(w->fd);
		raise(SIGKILL);
	}
	if (write_all(w->fd, buf, len) < 0) {
		w->err = errno;
		return -1;
	}
	return 0;
}

/* fsync of the directory holding file, so that a rename in it lasts. */
static int sync_dir_of(const char *file)
{
	char *d = strdup(file);
	if (d == NULL)
		abort();
	char *slash = strrchr(d, '/');
	if (slash == NULL)
		strcpy(d, ".");
	else if (slash == d)
		d[1] = '\0';
	else
		*slash = '\0';
	int fd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int r = fd >= 0 && fsync(fd) == 0 ? 0 : -1;
	if (fd >= 0)
		close(fd);
	free(d);
	return r;
}

static int parse_count(const char *s, size_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (s[0] < '0' || s[0] > '9' || *end != '\0' || errno != 0 || v > SIZE_MAX / 64)
		return -1;
	*out = (size_t) v;
	return 0;
}

static const char *plural(uint64_t n)
{
	return n == 1 ? "" : "s";
}

/* 0: written and renamed over the stream (or nothing to change); 1: an
 * error (reported). */
static int sort_one(struct weft_trace *t, size_t i, size_t look_back, int die,
		struct weft_sort_report *rep)
{
	const struct weft_stream *s = weft_stream_at(t, i);
	size_t n = strlen(s->obs_path);
	char *tmp = malloc(n + sizeof TMP_SUFFIX);
	if (tmp == NULL)
		abort();
	memcpy(tmp, s->obs_path, n);
	memcpy(tmp + n, TMP_SUFFIX, sizeof TMP_SUFFIX);
	struct stat st;
	int code = 1;
	if (stat(s->obs_path, &st) != 0) {
		fprintf(stderr, "weft sort: %s: cannot stat: %s\n", s->obs_path, strerror(errno));
		free(tmp);
		return 1;
	}
	struct writer w = { -1, 0, die };
	w.fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (w.fd < 0 && errno == EEXIST && unlink(tmp) == 0)
		w.fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (w.fd < 0) {
		fprintf(stderr, "weft sort: cannot create %s: %s\n", tmp, strerror(errno));
		free(tmp);
		return 1;
	}
	if (weft_sort_stream(t, i, look_back, put, &w, rep) != 0) {
		if (w.err != 0)
			fprintf(stderr, "weft sort: %s: %s\n", tmp, strerror(w.err));
		else
			fprintf(stderr, "weft sort: %s\n", weft_error(t));
		if (strstr(weft_error(t), "look-back") != NULL)
			fprintf(stderr, "weft sort: a longer look-back (--look-back N, now %zu) may "
					"sort it\n", look_back);
		goto drop;
	}
	if (rep->nmoved == 0) {
		code = 0; /* already in order: the stream stays as it is */
		goto drop;
	}
	if (fchmod(w.fd, st.st_mode & 07777) != 0 || fsync(w.fd) != 0) {
		fprintf(stderr, "weft sort: %s: %s\n", tmp, strerror(errno));
		goto drop;
	}
	if (close(w.fd) != 0) {
		w.fd = -1;
		fprintf(stderr, "weft sort: %s: %s\n", tmp, strerror(errno));
		goto drop;
	}
	w.fd = -1;
	if (rename(tmp, s->obs_path) != 0) {
		fprintf(stderr, "weft sort: cannot rename %s over %s: %s\n", tmp, s->obs_path,
				strerror(errno));
		goto drop;
	}
	if (sync_dir_of(s->obs_path) != 0)
		fprintf(stderr, "weft sort: warning: cannot flush the directory of %s: %s\n",
				s->obs_path, strerror(errno));
	free(tmp);
	return 0;
drop:
	if (w.fd >= 0)
		close(w.fd);
	unlink(tmp);
	free(tmp);
	return code;
}

/* The options of weft sort (cli_opts.h): add one here and in sort_opt. */
enum { SORT_LOOK_BACK, SORT_CHECK, SORT_QUIET, SORT_FOLLOW_LINKS };

static const struct cli_opt sort_opts[] = {
	{ "look-back", 'n', "a number of events", SORT_LOOK_BACK },
	{ "check", 'c', NULL, SORT_CHECK },
	{ "quiet", 'q', NULL, SORT_QUIET },
	{ "follow-links", 0, NULL, SORT_FOLLOW_LINKS },
	{ NULL, 0, NULL, 0 },
};

struct sort_args {
	size_t look_back;
	int check, quiet;
};

static int sort_opt(void *ctx, int id, const char *opt, const char *val)
{
	(void) opt;
	struct sort_args *a = ctx;
	switch (id) {
	case SORT_LOOK_BACK:
		if (parse_count(val, &a->look_back) != 0 || a->look_back == 0) {
			fprintf(stderr, "weft sort: --look-back '%s': expected a number of events "
					"(1 or more)\n", val);
			return CLI_EXIT_USAGE;
		}
		break;
	case SORT_CHECK: a->check = 1; break;
	case SORT_QUIET: a->quiet = 1; break;
	case SORT_FOLLOW_LINKS: cli_follow_links = 1; break;
	default: abort();
	}
	return 0;
}

int weft_cmd_sort(int argc, char **argv)
{
	struct sort_args sa = { WEFT_SORT_LOOK_BACK, 0, 0 };
	const char **pos = cli_operands(argc), *path = NULL;
	int npos = 0;
	int r = cli_opts_parse("sort", sort_opts, argc, argv, sort_opt, &sa, pos, &npos);
	if (r == CLI_OPTS_HELP) {
		free(pos);
		fputs(usage, stdout);
		return CLI_EXIT_OK;
	}
	if (r == 0)
		r = cli_one_path("sort", pos, npos, &path);
	else
		free(pos);
	if (r != 0)
		return CLI_EXIT_USAGE;
	size_t look_back = sa.look_back;
	int check = sa.check, quiet = sa.quiet;

	/* The testing hook (docs/cli.md): killed halfway through writing the
	 * stream after the N-th one replaced. */
	size_t die_after = SIZE_MAX;
	const char *die = getenv("WEFT_SORT_DIE_AFTER");
	if (die != NULL && parse_count(die, &die_after) != 0) {
		fprintf(stderr, "weft sort: WEFT_SORT_DIE_AFTER is '%s'; it must be a number of "
				"streams (or unset)\n", die);
		return CLI_EXIT_TRACE;
	}

	/* One sort of a trace at a time (a second one would take the first
	 * one's files for leftovers). */
	int lock = -1;
	if (!check) {
		lock = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (lock >= 0 && flock(lock, LOCK_EX | LOCK_NB) != 0) {
			if (errno == EWOULDBLOCK) {
				fprintf(stderr, "weft sort: %s: another weft sort is sorting it\n", path);
				close(lock);
				return CLI_EXIT_TRACE;
			}
		}
		if (nftw(path, leftover, 32, FTW_PHYS) != 0 && errno != ENOENT
				&& errno != ENOTDIR) {
			fprintf(stderr, "weft sort: %s: %s\n", path, strerror(errno));
		}
		if (remove_failed) {
			if (lock >= 0)
				close(lock);
			return CLI_EXIT_TRACE;
		}
	}

	struct weft_trace *t = cli_open("sort", path, WEFT_LENIENT, WEFT_CLOCK_RAW,
			WEFT_BACKWARDS_WARN);
	if (t == NULL) {
		if (lock >= 0)
			close(lock);
		return CLI_EXIT_TRACE;
	}
	size_t ns = weft_nstreams(t);
	int code = CLI_EXIT_OK;
	size_t nsorted = 0;
	uint64_t nmoved = 0, nregions = 0;
	for (size_t i = 0; i < ns; i++) {
		const struct weft_stream *s = weft_stream_at(t, i);
		struct weft_sort_report o;
		if (weft_stream_order(t, i, &o) != 0) {
			fprintf(stderr, "weft sort: %s\n", weft_error(t));
			code = CLI_EXIT_TRACE;
			break;
		}
		if (check) {
			if (o.nback > 0) {
				fprintf(stderr, "weft sort: %s: offset %" PRIu64 ": event %s: clock goes "
						"backwards from %" PRId64 " to %" PRId64 " %s: stream '%s' is "
						"not sorted\n", s->obs_path, o.back_offset, o.back_mcv,
						o.back_from, o.back_to, o.back_in_region
						? "inside an unordered region"
						: "outside any unordered region", s->relpath);
				code = CLI_EXIT_TRACE;
				break;
			}
			continue;
		}
		if (o.unclosed)
			fprintf(stderr, "weft sort: warning: %s: offset %" PRIu64 ": the unordered "
					"region opened here is never closed (no OU] follows); its events "
					"are left as they are\n", s->obs_path, o.unclosed_offset);
		struct weft_sort_report rep = o;
		if (o.nregions > 0) {
			int doomed = nsorted == die_after;
			if (sort_one(t, i, look_back, doomed, &rep) != 0) {
				fprintf(stderr, "weft sort: stream '%s' is left as it was%s\n", s->relpath,
						i + 1 < ns ? ", and the streams after it are not sorted" : "");
				code = CLI_EXIT_TRACE;
				break;
			}
			if (rep.nmoved > 0) {
				nsorted++;
				nmoved += rep.nmoved;
				nregions += rep.nregions;
			}
		}
		if (rep.nback > 0)
			fprintf(stderr, "weft sort: warning: %s: offset %" PRIu64 ": event %s: clock "
					"goes backwards from %" PRId64 " to %" PRId64 " %s%s, which no sort "
					"of unordered regions changes: weft emu refuses the stream\n",
					s->obs_path, rep.back_offset, rep.back_mcv, rep.back_from,
					rep.back_to, rep.back_in_region ? "inside an unordered region"
					: "outside any unordered region", rep.nback > 1
					? " (and more after it)" : "");
	}
	if (code == CLI_EXIT_OK && !quiet) {
		if (check)
			printf("weft sort: %s: every stream is sorted (%zu stream%s)\n", path, ns,
					plural(ns));
		else if (nsorted == 0)
			printf("weft sort: %s: nothing to sort (%zu stream%s)\n", path, ns, plural(ns));
		else
			printf("weft sort: %s: %zu of %zu stream%s sorted: %" PRIu64 " event%s "
					"moved, in %" PRIu64 " unordered region%s\n", path, nsorted, ns,
					plural(ns), nmoved, plural(nmoved), nregions, plural(nregions));
	}
	weft_close(t);
	if (lock >= 0)
		close(lock);
	return code;
}
