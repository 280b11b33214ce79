/* SPDX-License-Identifier: MIT */
/*
 * cmd_import.c - `weft import laplace DIR -o TRACE`: a Laplace per-process
 * merge trace (a directory per process, a text file per task, the kernel's
 * references in the file `kernel`) read into an ovni trace of the laplace
 * model (src/model/laplace/laplace.yaml; docs/export.md, "Laplace"). Every
 * file is read twice: once to check it whole and find the canonical pages
 * that several files touch, once to write its stream, with each reference's
 * counts (by kind, pages touched, shared canonical pages) in its payload.
 * The stream files follow src/format's layout, as libovni writes them.
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "commands.h"
#include "laplace.h"
#include "obs_format.h"

static const char usage[] =
	"Usage: weft import laplace DIR -o TRACE [-q]\n"
	"\n"
	"Read the Laplace per-process merge trace at DIR into an ovni trace at TRACE\n"
	"(docs/export.md, \"Laplace\"): each directory of DIR is a process, each file\n"
	"in it a task (a thread of the trace; the file `kernel`: the kernel thread),\n"
	"one record a line:\n"
	"  r w i R W I  a memory reference: tag clock length vpage cpage (16, 1, 5\n"
	"               and 16 lower-case hexadecimal digits), user (r w i) or\n"
	"               kernel (R W I) read, write or instruction fetch\n"
	"  e            an ovni event written by weft split: e clock MCV flags payload\n"
	"  other tags   a kernel record (F, M, ...): tag clock [fields], kept as it is\n"
	"A file's clocks never go back. The events are those of the laplace model\n"
	"(weft dump, emu and sql show them): each reference carries the counts of its\n"
	"task, up to it: its references of that kind, the virtual pages it touched,\n"
	"and the shared canonical pages it touched (those that two or more files\n"
	"touch). A file DIR/index (weft split's) is passed over. TRACE must be absent\n"
	"or empty: the trace is built beside it and renamed to it once complete.\n"
	"Processes get pids 1, 2, ... and files tids 1, 2, ... in name order; each\n"
	"stream.json keeps its names (laplace.dir, laplace.file), which weft split\n"
	"uses, so that `weft split TRACE -o OUT` writes DIR back byte for byte.\n"
	"\n"
	"Options:\n"
	"  -o, --output TRACE  the trace directory to write\n"
	"  -q, --quiet  no summary line on stdout\n"
	"  -h, --help   show this help\n"
	"\n"
	"Malformed input is refused with its file, line and reason (FILE:LINE: why).\n"
	"Exit status: 0 success, 1 malformed input or write error (nothing is left\n"
	"at TRACE), 2 usage error.\n";

enum { IMP_OUTPUT, IMP_QUIET };

static const struct cli_opt import_opts[] = {
	{ "output", 'o', "TRACE", IMP_OUTPUT },
	{ "quiet", 'q', NULL, IMP_QUIET },
	{ NULL, 0, NULL, 0 },
};

struct import_args {
	const char *out;
	int quiet;
};

static int import_opt(void *ctx, int id, const char *opt, const char *val)
{
	(void) opt;
	struct import_args *a = ctx;
	switch (id) {
	case IMP_OUTPUT: a->out = val; break;
	case IMP_QUIET: a->quiet = 1; break;
	default: abort();
	}
	return 0;
}

/* ---- lines, bounded ---- */

struct lreader {
	int fd;
	char *buf;
	size_t start, end, cap;
	int eof;
	unsigned long line;
};

/* The next line (without its newline) in *p, *n: 1; 0 at the end; -1 with
 * why. */
static int next_line(struct lreader *r, char **p, size_t *n, const char **why)
{
	for (;;) {
		char *nl = memchr(r->buf + r->start, '\n', r->end - r->start);
		if (nl != NULL) {
			*p = r->buf + r->start;
			*n = (size_t) (nl - *p);
			r->start += *n + 1;
			r->line++;
			if (*n > LAP_LINE_MAX) {
				*why = "the line is longer than 65536 bytes";
				return -1;
			}
			return 1;
		}
		if (r->end - r->start > LAP_LINE_MAX) {
			r->line++;
			*why = "the line is longer than 65536 bytes";
			return -1;
		}
		if (r->eof) {
			if (r->end > r->start) {
				r->line++;
				*why = "the last line does not end with a newline";
				return -1;
			}
			return 0;
		}
		if (r->start > 0) {
			memmove(r->buf, r->buf + r->start, r->end - r->start);
			r->end -= r->start;
			r->start = 0;
		}
		ssize_t k = read(r->fd, r->buf + r->end, r->cap - r->end);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			r->line++;
			*why = strerror(errno);
			return -1;
		}
		if (k == 0)
			r->eof = 1;
		r->end += (size_t) k;
	}
}

/* ---- records ---- */

enum rkind { R_REF, R_KREC, R_EVENT };

struct rec {
	enum rkind kind;
	char tag;
	uint64_t clock;
	/* R_REF */
	uint32_t len, vpage;
	uint64_t cpage;
	/* R_KREC: the fields (after the clock and its space) */
	const char *text;
	size_t tlen;
	/* R_EVENT */
	char mcv[3];
	uint8_t flags;
	uint8_t *data; /* the payload (a jumbo's data), decoded into ev_buf */
	size_t dlen;
};

/* n lower-case hex digits at s into *v (n <= 16); 0 or -1. */
static int hexn(const char *s, size_t n, uint64_t *v)
{
	uint64_t x = 0;
	for (size_t i = 0; i < n; i++) {
		int d = lap_xdigit((unsigned char) s[i]);
		if (d < 0)
			return -1;
		x = x << 4 | (uint64_t) d;
	}
	*v = x;
	return 0;
}

/* Splits s[0..n) at single spaces into at most max fields; the count, or
 * -1 when a field is empty (two spaces, a space at an end). */
static int fields(const char *s, size_t n, const char **f, size_t *fl, int max)
{
	int k = 0;
	size_t i = 0;
	while (k < max) {
		size_t j = i;
		while (j < n && s[j] != ' ')
			j++;
		if (j == i)
			return -1;
		f[k] = s + i;
		fl[k++] = j - i;
		if (j == n)
			return k;
		i = j + 1;
	}
	return k + 1; /* more than max */
}

/* Parses the line s[0..n) into *r (buf: room for an e record's payload, n/2
 * bytes). 0, or -1 with why (a static text, or written into whybuf). */
static int parse_rec(const char *s, size_t n, struct rec *r, uint8_t *buf, char *whybuf,
		size_t wl, const char **why)
{
	memset(r, 0, sizeof *r);
	if (n == 0) {
		*why = "an empty line";
		return -1;
	}
	if (memchr(s, '\0', n) != NULL) {
		*why = "a NUL byte in the line";
		return -1;
	}
	unsigned char tag = (unsigned char) s[0];
	if (tag <= 0x20 || tag >= 0x7f) {
		*why = "the line does not start with a type tag (a printable character)";
		return -1;
	}
	r->tag = (char) tag;
	if (n < 2 || s[1] != ' ') {
		*why = "a space is expected after the type tag";
		return -1;
	}
	if (n < 18 || hexn(s + 2, 16, &r->clock) != 0 || (n > 18 && s[18] != ' ')) {
		*why = "the clock is not 16 lower-case hexadecimal digits";
		return -1;
	}
	if (r->clock > (uint64_t) INT64_MAX) {
		*why = "the clock is over 7fffffffffffffff (an ovni clock is a signed 64-bit "
			"number)";
		return -1;
	}
	const char *rest = n > 18 ? s + 19 : s + n;
	size_t rl = n > 18 ? n - 19 : 0;
	if (strchr(LAP_REF_TAGS, tag) != NULL) {
		const char *f[4];
		size_t fl[4];
		int k = rl == 0 ? 0 : fields(rest, rl, f, fl, 3);
		if (k != 3) {
			snprintf(whybuf, wl, "a reference has 5 fields (tag clock length vpage "
					"cpage), single spaces between them%s",
					k < 0 ? ": an empty field" : "");
			*why = whybuf;
			return -1;
		}
		uint64_t v;
		r->kind = R_REF;
		if (fl[0] != 1 || hexn(f[0], 1, &v) != 0) {
			*why = "the length is not one lower-case hexadecimal digit";
			return -1;
		}
		r->len = (uint32_t) v;
		if (fl[1] != 5 || hexn(f[1], 5, &v) != 0) {
			*why = "the virtual page is not 5 lower-case hexadecimal digits";
			return -1;
		}
		r->vpage = (uint32_t) v;
		if (fl[2] != 16 || hexn(f[2], 16, &r->cpage) != 0) {
			*why = "the canonical page is not 16 lower-case hexadecimal digits";
			return -1;
		}
		return 0;
	}
	if (tag != LAP_TAG_EVENT) {
		r->kind = R_KREC;
		if (n > 18 && rl == 0) {
			*why = "a kernel record with a space after its clock and no fields";
			return -1;
		}
		r->text = rest;
		r->tlen = rl;
		return 0;
	}
	r->kind = R_EVENT;
	const char *f[4];
	size_t fl[4];
	int k = rl == 0 ? 0 : fields(rest, rl, f, fl, 3);
	if (k != 3) {
		*why = "an e record has 5 fields (e clock MCV flags payload), single spaces "
			"between them";
		return -1;
	}
	uint64_t v;
	if (fl[0] == 3 && f[0][0] != '0') {
		memcpy(r->mcv, f[0], 3);
	} else if (fl[0] == 8 && f[0][0] == '0' && f[0][1] == 'x' && hexn(f[0] + 2, 6, &v) == 0) {
		r->mcv[0] = (char) (v >> 16);
		r->mcv[1] = (char) (v >> 8);
		r->mcv[2] = (char) v;
	} else if (fl[0] == 3) {
		memcpy(r->mcv, f[0], 3);
	} else {
		*why = "the MCV of an e record is 3 characters or 0x and 6 hexadecimal digits";
		return -1;
	}
	if (fl[1] != 2 || hexn(f[1], 2, &v) != 0) {
		*why = "the flags of an e record are 2 lower-case hexadecimal digits";
		return -1;
	}
	r->flags = (uint8_t) v;
	r->data = buf;
	if (!(fl[2] == 1 && f[2][0] == '-')) {
		if (fl[2] % 2 != 0) {
			*why = "the payload of an e record is an even number of hexadecimal digits";
			return -1;
		}
		for (size_t i = 0; i < fl[2]; i += 2) {
			if (hexn(f[2] + i, 2, &v) != 0) {
				*why = "the payload of an e record is not lower-case hexadecimal";
				return -1;
			}
			buf[r->dlen++] = (uint8_t) v;
		}
	}
	if (!weft_ev_is_jumbo(r->flags) && r->dlen != weft_ev_payload_size(r->flags)) {
		snprintf(whybuf, wl, "the payload of an e record has %zu bytes, its flags %02x say "
				"%u", r->dlen, r->flags, weft_ev_payload_size(r->flags));
		*why = whybuf;
		return -1;
	}
	return 0;
}

/* ---- sets of pages ---- */

struct pset {
	uint64_t *k;
	uint8_t *v; /* 0: empty; 1 + the value's bits */
	size_t n, cap;
};

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

/* The slot of key (found or empty); NULL when out of memory. */
static uint8_t *pset_slot(struct pset *s, uint64_t key, int *isnew)
{
	if ((s->n + 1) * 2 > s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1024;
		uint64_t *k = malloc(cap * sizeof *k);
		uint8_t *v = calloc(cap, 1);
		if (k == NULL || v == NULL) {
			free(k);
			free(v);
			return NULL;
		}
		for (size_t i = 0; i < s->cap; i++) {
			if (s->v[i] == 0)
				continue;
			size_t j = mix(s->k[i]) & (cap - 1);
			while (v[j] != 0)
				j = (j + 1) & (cap - 1);
			k[j] = s->k[i];
			v[j] = s->v[i];
		}
		free(s->k);
		free(s->v);
		s->k = k;
		s->v = v;
		s->cap = cap;
	}
	size_t j = mix(key) & (s->cap - 1);
	while (s->v[j] != 0 && s->k[j] != key)
		j = (j + 1) & (s->cap - 1);
	*isnew = s->v[j] == 0;
	if (*isnew) {
		s->k[j] = key;
		s->v[j] = 1;
		s->n++;
	}
	return &s->v[j];
}

static void pset_clear(struct pset *s)
{
	if (s->v != NULL)
		memset(s->v, 0, s->cap);
	s->n = 0;
}

static void pset_free(struct pset *s)
{
	free(s->k);
	free(s->v);
	memset(s, 0, sizeof *s);
}

/* ---- the input's layout ---- */

struct ifile {
	char dir[LAP_NAME_MAX + 1], name[LAP_NAME_MAX + 1];
	int pid, tid;
};

struct import {
	const char *in;
	struct ifile *files;
	size_t nfiles, cap;
	int nprocs;
	uint8_t ev_buf[LAP_LINE_MAX + 8]; /* an e record's payload, a kernel record's text */
	char whybuf[256];
	/* canonical pages -> 1: touched by one file, 3: by two or more */
	struct pset gpages;
	struct pset vseen, cseen; /* per file: the vpages, cpages it touched */
};

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/* The names in dir (sorted, "." and ".." left out), at most 100000; NULL
 * after printing why. */
static char **list_dir(const char *dir, size_t *n)
{
	DIR *d = opendir(dir);
	if (d == NULL) {
		fprintf(stderr, "weft import: %s: cannot read the directory: %s\n", dir,
				strerror(errno));
		return NULL;
	}
	size_t cap = 16;
	char **v = malloc(cap * sizeof *v);
	*n = 0;
	struct dirent *e;
	while (v != NULL && (e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (*n == 100000) {
			fprintf(stderr, "weft import: %s: more than 100000 entries\n", dir);
			break;
		}
		if (*n == cap) {
			cap *= 2;
			char **nv = realloc(v, cap * sizeof *v);
			if (nv == NULL)
				break;
			v = nv;
		}
		if ((v[*n] = strdup(e->d_name)) == NULL)
			break;
		(*n)++;
	}
	int bad = v == NULL || e != NULL;
	closedir(d);
	if (bad) {
		if (v != NULL && *n < 100000)
			fprintf(stderr, "weft import: out of memory\n");
		for (size_t i = 0; v != NULL && i < *n; i++)
			free(v[i]);
		free(v);
		return NULL;
	}
	qsort(v, *n, sizeof *v, cmp_name);
	return v;
}

static void free_names(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static int layout(struct import *I)
{
	size_t np = 0;
	char **procs = list_dir(I->in, &np);
	if (procs == NULL)
		return -1;
	int rc = 0, tid = 0;
	for (size_t p = 0; p < np && rc == 0; p++) {
		char path[8192];
		if ((size_t) snprintf(path, sizeof path, "%s/%s", I->in, procs[p]) >= sizeof path) {
			fprintf(stderr, "weft import: %s: path too long\n", I->in);
			rc = -1;
			break;
		}
		struct stat sb;
		if (lstat(path, &sb) != 0) {
			fprintf(stderr, "weft import: %s: %s\n", path, strerror(errno));
			rc = -1;
			break;
		}
		if (S_ISREG(sb.st_mode) && strcmp(procs[p], LAP_INDEX_FILE) == 0)
			continue;
		if (!S_ISDIR(sb.st_mode)) {
			fprintf(stderr, "weft import: %s: not a directory (a process directory is "
					"expected here; only %s may be a file)\n", path, LAP_INDEX_FILE);
			rc = -1;
			break;
		}
		if (!lap_name_ok(procs[p])) {
			fprintf(stderr, "weft import: %s: a name of letters, digits, '.', '_', '-' "
					"and '+' is expected\n", path);
			rc = -1;
			break;
		}
		I->nprocs++;
		size_t nf = 0;
		char **files = list_dir(path, &nf);
		if (files == NULL) {
			rc = -1;
			break;
		}
		for (size_t f = 0; f < nf && rc == 0; f++) {
			char fp[8192];
			if ((size_t) snprintf(fp, sizeof fp, "%s/%s", path, files[f]) >= sizeof fp) {
				fprintf(stderr, "weft import: %s: path too long\n", path);
				rc = -1;
			} else if (lstat(fp, &sb) != 0 || !S_ISREG(sb.st_mode)) {
				fprintf(stderr, "weft import: %s: not a regular file (a task's trace "
						"is expected)\n", fp);
				rc = -1;
			} else if (!lap_name_ok(files[f])) {
				fprintf(stderr, "weft import: %s: a name of letters, digits, '.', "
						"'_', '-' and '+' is expected\n", fp);
				rc = -1;
			} else if (I->nfiles == 1000000) {
				fprintf(stderr, "weft import: %s: more than 1000000 files\n", I->in);
				rc = -1;
			} else {
				if (I->nfiles == I->cap) {
					size_t cap = I->cap ? I->cap * 2 : 64;
					struct ifile *nv = realloc(I->files, cap * sizeof *nv);
					if (nv == NULL) {
						fprintf(stderr, "weft import: out of memory\n");
						rc = -1;
						break;
					}
					I->files = nv;
					I->cap = cap;
				}
				struct ifile *x = &I->files[I->nfiles++];
				strcpy(x->dir, procs[p]);
				strcpy(x->name, files[f]);
				x->pid = I->nprocs;
				x->tid = ++tid;
			}
		}
		if (rc == 0 && nf == 0) {
			fprintf(stderr, "weft import: %s: no task files in the process directory\n",
					path);
			rc = -1;
		}
		free_names(files, nf);
	}
	if (rc == 0 && I->nprocs == 0) {
		fprintf(stderr, "weft import: %s: no process directories\n", I->in);
		rc = -1;
	}
	free_names(procs, np);
	return rc;
}

/* ---- the passes ---- */

struct obs {
	FILE *f;
	uint64_t nev;
	int started;
};

static int write_ev(struct obs *o, uint8_t flags, const char mcv[3], uint64_t clock,
		const void *p1, size_t n1, const void *p2, size_t n2)
{
	uint8_t h[WEFT_EV_HEADER_SIZE];
	h[WEFT_EV_OFF_FLAGS] = flags;
	h[WEFT_EV_OFF_MODEL] = (uint8_t) mcv[0];
	h[WEFT_EV_OFF_CATEGORY] = (uint8_t) mcv[1];
	h[WEFT_EV_OFF_VALUE] = (uint8_t) mcv[2];
	weft_store_u64(h + WEFT_EV_OFF_CLOCK, clock);
	o->nev++;
	return fwrite(h, 1, sizeof h, o->f) != sizeof h || (n1 > 0 && fwrite(p1, 1, n1, o->f)
			!= n1) || (n2 > 0 && fwrite(p2, 1, n2, o->f) != n2) ? -1 : 0;
}

/* The frame of an imported stream: OHx (on the loom's virtual CPU) before
 * its first record, at its clock, and OHe after its last, at its clock (0
 * for a file without records), so that its thread is Running while its
 * records are emulated and Dead at the end. weft split leaves them out. */
static int frame_start(struct obs *o, uint64_t clock)
{
	uint8_t p[16];
	weft_store_u32(p, (uint32_t) -1);
	weft_store_u32(p + 4, 0);
	weft_store_u64(p + 8, 0);
	o->started = 1;
	return write_ev(o, weft_ev_size_code(sizeof p), "OHx", clock, p, sizeof p, NULL, 0);
}

/* One file: pass 0 checks it and notes its canonical pages; pass 1 writes
 * its events to o. 0, or -1 after printing why. */
static int pass_file(struct import *I, size_t fi, int pass, struct obs *o)
{
	const struct ifile *x = &I->files[fi];
	char path[8192];
	snprintf(path, sizeof path, "%s/%s/%s", I->in, x->dir, x->name);
	struct lreader r = { .fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC),
		.cap = 2 * LAP_LINE_MAX + 2 };
	if (r.fd < 0) {
		fprintf(stderr, "weft import: %s: cannot open: %s\n", path, strerror(errno));
		return -1;
	}
	r.buf = malloc(r.cap);
	if (r.buf == NULL) {
		close(r.fd);
		fprintf(stderr, "weft import: out of memory\n");
		return -1;
	}
	uint64_t last = 0, count[6] = { 0 };
	pset_clear(&I->vseen);
	pset_clear(&I->cseen);
	uint64_t shared = 0;
	int rc = 0, k;
	char *line;
	size_t n;
	const char *why = NULL;
	while ((k = next_line(&r, &line, &n, &why)) > 0) {
		struct rec R;
		if (parse_rec(line, n, &R, I->ev_buf, I->whybuf, sizeof I->whybuf, &why) != 0) {
			k = -1;
			break;
		}
		if (R.clock < last) {
			snprintf(I->whybuf, sizeof I->whybuf, "the clock %016" PRIx64 " is before "
					"the previous record's %016" PRIx64 " (a task's records are "
					"in clock order)", R.clock, last);
			why = I->whybuf;
			k = -1;
			break;
		}
		last = R.clock;
		int isnew;
		if (pass == 0) {
			if (R.kind == R_REF && pset_slot(&I->cseen, R.cpage, &isnew) == NULL)
				goto oom;
			continue;
		}
		char mcv[3];
		if (!o->started && frame_start(o, R.clock) != 0)
			goto wfail;
		if (R.kind == R_REF) {
			int kind = (int) (strchr(LAP_REF_TAGS, R.tag) - LAP_REF_TAGS);
			uint8_t d[4 + LAP_REF_DATA];
			uint8_t *vs = pset_slot(&I->vseen, R.vpage, &isnew);
			if (vs == NULL)
				goto oom;
			uint8_t *cs = pset_slot(&I->cseen, R.cpage, &isnew);
			if (cs == NULL)
				goto oom;
			if (isnew) {
				int dummy;
				uint8_t *g = pset_slot(&I->gpages, R.cpage, &dummy);
				if (g == NULL)
					goto oom;
				shared += *g >= 3;
			}
			count[kind]++;
			weft_store_u32(d, LAP_REF_DATA);
			weft_store_u64(d + 4, R.cpage);
			weft_store_u32(d + 12, R.vpage);
			weft_store_u32(d + 16, R.len);
			weft_store_u64(d + 20, count[kind]);
			weft_store_u64(d + 28, (uint64_t) I->vseen.n);
			weft_store_u64(d + 36, shared);
			mcv[0] = LAP_BYTE;
			mcv[1] = LAP_CAT_REF;
			mcv[2] = R.tag;
			if (write_ev(o, WEFT_EV_FLAG_JUMBO | WEFT_EV_JUMBO_NIBBLE, mcv, R.clock, d,
						sizeof d, NULL, 0) != 0)
				goto wfail;
		} else if (R.kind == R_KREC) {
			uint8_t sz[4];
			weft_store_u32(sz, (uint32_t) R.tlen + 1);
			char *t = (char *) I->ev_buf;
			memcpy(t, R.text, R.tlen);
			t[R.tlen] = '\0';
			mcv[0] = LAP_BYTE;
			mcv[1] = LAP_CAT_KREC;
			mcv[2] = R.tag;
			if (write_ev(o, WEFT_EV_FLAG_JUMBO | WEFT_EV_JUMBO_NIBBLE, mcv, R.clock, sz,
						4, t, R.tlen + 1) != 0)
				goto wfail;
		} else {
			uint8_t sz[4];
			int j = weft_ev_is_jumbo(R.flags);
			weft_store_u32(sz, (uint32_t) R.dlen);
			if (write_ev(o, R.flags, R.mcv, R.clock, sz, j ? 4 : 0, R.data, R.dlen) != 0)
				goto wfail;
		}
	}
	if (k < 0) {
		fprintf(stderr, "weft import: %s:%lu: %s\n", path, r.line, why);
		rc = -1;
		goto out;
	}
	if (pass == 1 && ((!o->started && frame_start(o, 0) != 0) ||
				write_ev(o, 0, "OHe", last, NULL, 0, NULL, 0) != 0))
		goto wfail;
	goto out;
oom:
	fprintf(stderr, "weft import: out of memory\n");
	rc = -1;
	goto out;
wfail:
	fprintf(stderr, "weft import: cannot write the stream of %s: %s\n", path,
			strerror(errno));
	rc = -1;
out:
	free(r.buf);
	close(r.fd);
	return rc;
}

/* After pass 0 of a file: its canonical pages (cseen) counted into gpages:
 * 1 one file, 3 two files or more. */
static int merge_pages(struct import *I)
{
	for (size_t i = 0; i < I->cseen.cap; i++) {
		if (I->cseen.v[i] == 0)
			continue;
		int isnew;
		uint8_t *g = pset_slot(&I->gpages, I->cseen.k[i], &isnew);
		if (g == NULL)
			return -1;
		*g = isnew ? 1 : 3;
	}
	return 0;
}

static int mkdirs(const char *base, const char *a, const char *b, const char *c, char *out,
		size_t n)
{
	snprintf(out, n, "%s/%s", base, a);
	if (mkdir(out, 0777) != 0 && errno != EEXIST)
		return -1;
	size_t l = strlen(out);
	snprintf(out + l, n - l, "/%s", b);
	if (mkdir(out, 0777) != 0 && errno != EEXIST)
		return -1;
	l = strlen(out);
	snprintf(out + l, n - l, "/%s", c);
	return mkdir(out, 0777);
}

static int write_json(const char *dir, const struct ifile *x)
{
	char path[8192];
	snprintf(path, sizeof path, "%s/%s", dir, WEFT_STREAM_JSON);
	int fd = lap_create(path);
	FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
	if (f == NULL) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	int kernel = strcmp(x->name, LAP_KERNEL_FILE) == 0;
	fprintf(f, "{\n"
			"    \"version\": %d,\n"
			"    \"ovni\": {\n"
			"        \"lib\": {\n"
			"            \"version\": \"%s\",\n"
			"            \"commit\": \"%s\"\n"
			"        },\n"
			"        \"part\": \"thread\",\n"
			"        \"tid\": %d,\n"
			"        \"pid\": %d,\n"
			"        \"loom\": \"laplace\",\n"
			"        \"app_id\": 1,\n"
			"        \"require\": {\n"
			"            \"ovni\": \"1.1.0\",\n"
			"            \"laplace\": \"1.0.0\"\n"
			"        },\n"
			"        \"loom_cpus\": [\n"
			"            {\n"
			"                \"index\": 0,\n"
			"                \"phyid\": 0\n"
			"            }\n"
			"        ],\n"
			"        \"finished\": 1\n"
			"    },\n"
			"    \"laplace\": {\n"
			"        \"dir\": \"%s\",\n"
			"        \"file\": \"%s\"%s\n"
			"    }\n"
			"}", WEFT_META_VERSION, WEFT_OVNI_API_VERSION, WEFT_OVNI_API_COMMIT, x->tid,
			x->pid, x->dir, x->name, kernel ? ",\n        \"kernel\": true" : "");
	int bad = ferror(f);
	return (fclose(f) != 0 || bad) ? -1 : 0;
}

static int import_run(struct import *I, const char *tmp, uint64_t *nev)
{
	if (layout(I) != 0)
		return -1;
	for (size_t i = 0; i < I->nfiles; i++) {
		if (pass_file(I, i, 0, NULL) != 0)
			return -1;
		if (merge_pages(I) != 0) {
			fprintf(stderr, "weft import: out of memory\n");
			return -1;
		}
	}
	for (size_t i = 0; i < I->nfiles; i++) {
		const struct ifile *x = &I->files[i];
		char dir[8192], pd[64], td[64];
		snprintf(pd, sizeof pd, "%s%d", WEFT_PROC_PREFIX, x->pid);
		snprintf(td, sizeof td, "%s%d", WEFT_THREAD_PREFIX, x->tid);
		if (mkdirs(tmp, WEFT_LOOM_PREFIX "laplace", pd, td, dir, sizeof dir) != 0) {
			fprintf(stderr, "weft import: cannot create %s: %s\n", dir, strerror(errno));
			return -1;
		}
		if (write_json(dir, x) != 0) {
			fprintf(stderr, "weft import: cannot write %s/%s: %s\n", dir,
					WEFT_STREAM_JSON, strerror(errno));
			return -1;
		}
		char op[8192 + 16];
		snprintf(op, sizeof op, "%s/%s", dir, WEFT_STREAM_OBS);
		int fd = lap_create(op);
		struct obs o = { .f = fd < 0 ? NULL : fdopen(fd, "w"), .nev = 0, .started = 0 };
		if (o.f == NULL) {
			fprintf(stderr, "weft import: cannot create %s: %s\n", op, strerror(errno));
			if (fd >= 0)
				close(fd);
			return -1;
		}
		uint8_t hdr[WEFT_OBS_HEADER_SIZE];
		memcpy(hdr, WEFT_OBS_MAGIC, WEFT_OBS_MAGIC_LEN);
		weft_store_u32(hdr + WEFT_OBS_MAGIC_LEN, WEFT_OBS_VERSION);
		int rc = fwrite(hdr, 1, sizeof hdr, o.f) == sizeof hdr ? 0 : -1;
		if (rc == 0)
			rc = pass_file(I, i, 1, &o);
		else
			fprintf(stderr, "weft import: cannot write %s: %s\n", op, strerror(errno));
		if (fclose(o.f) != 0 && rc == 0) {
			fprintf(stderr, "weft import: cannot write %s: %s\n", op, strerror(errno));
			rc = -1;
		}
		if (rc != 0)
			return -1;
		*nev += o.nev;
	}
	return 0;
}

int weft_cmd_import(int argc, char **argv)
{
	struct import_args a;
	memset(&a, 0, sizeof a);
	const char **pos = cli_operands(argc);
	int npos = 0;
	int r = cli_opts_parse("import", import_opts, argc, argv, import_opt, &a, pos, &npos);
	if (r == CLI_OPTS_HELP) {
		fputs(usage, stdout);
		free(pos);
		return CLI_EXIT_OK;
	}
	if (r == 0 && npos == 0) {
		r = cli_usage_error("import", "missing FORMAT (laplace) and DIR");
	} else if (r == 0 && strcmp(pos[0], "laplace") != 0) {
		fprintf(stderr, "weft import: unknown format '%s' (the one known: laplace); "
				"run `weft import --help`\n", pos[0]);
		r = 2;
	} else if (r == 0 && npos == 1) {
		r = cli_usage_error("import", "missing DIR (a Laplace trace directory)");
	} else if (r == 0 && npos > 2) {
		fprintf(stderr, "weft import: more than one DIR ('%s' and '%s'); run "
				"`weft import --help`\n", pos[1], pos[2]);
		r = 2;
	} else if (r == 0 && a.out == NULL) {
		r = cli_usage_error("import", "missing -o TRACE (the trace directory to write)");
	}
	if (r != 0) {
		free(pos);
		return CLI_EXIT_USAGE;
	}
	struct import *I = calloc(1, sizeof *I);
	if (I == NULL) {
		free(pos);
		return CLI_EXIT_TRACE;
	}
	I->in = pos[1];
	struct lap_outdir od;
	uint64_t nev = 0;
	int code = CLI_EXIT_TRACE;
	if (lap_outdir_open("import", &od, a.out) == 0) {
		int rr = import_run(I, od.tmp, &nev);
		if (lap_outdir_close("import", &od, rr == 0) == 0) {
			code = CLI_EXIT_OK;
			if (!a.quiet)
				printf("%s: %d process%s, %zu stream%s, %" PRIu64 " event%s\n", od.out,
						I->nprocs, I->nprocs == 1 ? "" : "es", I->nfiles,
						I->nfiles == 1 ? "" : "s", nev, nev == 1 ? "" : "s");
		}
	}
	pset_free(&I->gpages);
	pset_free(&I->vseen);
	pset_free(&I->cseen);
	free(I->files);
	free(I);
	free(pos);
	return code;
}
