/* SPDX-License-Identifier: MIT */
/*
 * ranks.h - the parts of weft emu --mpi (docs/emu.md, MPI) that need no
 * MPI: a rank's streams under its directory (--local) as bytes to share,
 * the shadow trace each rank builds from every rank's (the metadata of all
 * the streams, its own stream files linked, the others' first event only),
 * and the ranks' statuses as bytes. The collectives themselves are the
 * caller's (struct weft_ranks, driver.h).
 */
#ifndef WEFT_DRIVER_RANKS_H
#define WEFT_DRIVER_RANKS_H

#include <stddef.h>
#include <stdint.h>

/* A growing byte buffer. */
struct rbuf {
	uint8_t *p;
	size_t n, cap;
	int oom;
};
void rbuf_put(struct rbuf *b, const void *data, size_t n);
void rbuf_u64(struct rbuf *b, uint64_t v);
void rbuf_str(struct rbuf *b, const char *s, size_t n); /* u64 length, then the bytes */

/* A reader of such bytes: every take fails (0) past the end. */
struct rget {
	const uint8_t *p;
	size_t n, at;
};
int rget_u64(struct rget *g, uint64_t *v);
int rget_str(struct rget *g, const uint8_t **s, size_t *n);

/* The streams found under dir (loom.*\/...\/stream.json and stream.obs, in
 * path order) and its clock-offsets.txt, as bytes (ranks_shadow reads
 * them). 0, or -1 with err (naming the file). */
int ranks_scan(const char *dir, struct rbuf *b, char *err, size_t errlen);

/* The looms of the shadow trace: the loom directory, its streams' bytes,
 * and which ranks found it (seen[rank]). */
struct rloom {
	char *dir;
	uint64_t bytes;
	uint8_t *seen;
};

/* Builds the shadow trace in a new directory under tmp (or $TMPDIR, or
 * /tmp) from every rank's scan (all, lens: in rank order): every stream's
 * stream.json, its stream.obs a link to the file of dir where this rank
 * (me) found it, else the file's header and first event; the
 * clock-offsets.txt of the lowest rank that has one. *shadow: its path
 * (malloc'd); *looms, *nlooms: the looms in name order. 0, or -1 with err. */
int ranks_shadow(const char *dir, const uint8_t *all, const size_t *lens, int nranks, int me,
		char **shadow, struct rloom **looms, size_t *nlooms, char *err, size_t errlen);
void ranks_looms_free(struct rloom *looms, size_t n);

/* Removes the directory tree at path (the shadow trace). */
void ranks_rmtree(const char *path);

/* msg with every occurrence of from replaced by to, into out. */
void ranks_replace(const char *msg, const char *from, const char *to, char *out, size_t len);

#endif
