/* SPDX-License-Identifier: MIT */
/*
 * ctf_packet.c - the data streams of `weft export ctf`: one file per
 * thread, a sequence of packets of at most the packet size (an event
 * larger than that gets a packet of its own), each made in one buffer and
 * written at once, so that a stream holds one packet in memory whatever
 * its length. A packet is its header (the CTF magic, the trace's UUID,
 * stream class 0, the stream's instance id), its context (timestamp_begin,
 * timestamp_end, content_size, packet_size, packet_seq_num,
 * events_discarded, loom_id, pid, tid, rank, loom, path: ctf_meta.c
 * declares the same layout), then its event records. The file is opened
 * for each packet written (O_APPEND, no link followed), so that a trace
 * of many threads needs no descriptor per thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ctf_internal.h"

#define CTF_MAGIC 0xC1FC1FC1u

/* where the context's fields are in the packet */
enum {
	OFF_TS_BEGIN = 32, OFF_TS_END = 40, OFF_CONTENT = 48, OFF_PACKET = 56, OFF_SEQ = 64,
	OFF_DISCARDED = 72, OFF_LOOM_ID = 80, OFF_PID = 84, OFF_TID = 88, OFF_RANK = 92,
	OFF_STRINGS = 96,
};

struct ctf_stream {
	struct export_dir *d;
	char name[64];
	uint8_t *buf;
	size_t cap, len, hdr; /* the packet: its bytes, the header and context's */
	uint64_t ts_begin, ts_end;
	uint64_t pkt_events;  /* in the packet being filled */
	uint64_t seq;         /* packets written */
	uint64_t discarded;   /* events lacking so far */
	uint64_t written_discarded; /* the last packet written said so many */
	uint64_t events, bytes;
	int ended;
};

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

struct ctf_stream *ctf_stream_new(struct export_dir *d, const char *name,
		const struct ctf_stream_info *info, size_t packet_size, char *err, size_t errlen)
{
	struct ctf_stream *s = calloc(1, sizeof *s);
	if (s == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->d = d;
	snprintf(s->name, sizeof s->name, "%s", name);
	size_t nl = strlen(info->loom) + 1, np = strlen(info->path) + 1;
	s->hdr = OFF_STRINGS + nl + np;
	s->cap = packet_size;
	if (s->cap < 2 * s->hdr + 64)
		s->cap = 2 * s->hdr + 64;
	if ((s->buf = malloc(s->cap)) == NULL) {
		free(s);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	uint8_t *b = s->buf;
	memset(b, 0, s->hdr);
	put32(b, CTF_MAGIC);
	memcpy(b + 4, info->uuid, 16);
	put32(b + 20, 0); /* stream class */
	put64(b + 24, info->index);
	put32(b + OFF_LOOM_ID, info->loom_id);
	put32(b + OFF_PID, (uint32_t) info->pid);
	put32(b + OFF_TID, (uint32_t) info->tid);
	put32(b + OFF_RANK, (uint32_t) info->rank);
	memcpy(b + OFF_STRINGS, info->loom, nl);
	memcpy(b + OFF_STRINGS + nl, info->path, np);
	s->len = s->hdr;
	int fd = ctf_dir_create(d, s->name, err, errlen);
	if (fd < 0) {
		ctf_stream_free(s);
		return NULL;
	}
	close(fd);
	return s;
}

/* Writes the packet: the buffer (header, context, events), then extra
 * (an event too large for the buffer; may be NULL). */
static int write_packet(struct ctf_stream *s, const struct iovec *extra, int nextra,
		size_t extra_len, char *err, size_t errlen)
{
	uint64_t bits = (uint64_t) (s->len + extra_len) * 8;
	uint8_t *b = s->buf;
	put64(b + OFF_TS_BEGIN, s->ts_begin);
	put64(b + OFF_TS_END, s->ts_end);
	put64(b + OFF_CONTENT, bits);
	put64(b + OFF_PACKET, bits);
	put64(b + OFF_SEQ, s->seq);
	put64(b + OFF_DISCARDED, s->discarded);
	int fd = openat(s->d->dfd, s->name, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
	int r = fd < 0 ? -1 : ctf_write_all(fd, b, s->len);
	for (int i = 0; r == 0 && i < nextra; i++)
		r = ctf_write_all(fd, extra[i].iov_base, extra[i].iov_len);
	if (fd >= 0 && close(fd) != 0 && r == 0)
		r = -1;
	if (r != 0) {
		snprintf(err, errlen, "%s/%s: cannot write: %s", s->d->tmp, s->name,
				strerror(errno));
		return -1;
	}
	s->bytes += s->len + extra_len;
	s->seq++;
	s->written_discarded = s->discarded;
	s->len = s->hdr;
	s->pkt_events = 0;
	return 0;
}

int ctf_stream_add(struct ctf_stream *s, const struct ctf_rec *r, uint64_t ts, char *err,
		size_t errlen)
{
	size_t need = (size_t) r->nhead + r->nbody + r->nmid + r->ntail;
	if (s->len + need > s->cap && s->pkt_events > 0 &&
			write_packet(s, NULL, 0, 0, err, errlen) != 0)
		return -1;
	if (s->pkt_events == 0)
		s->ts_begin = ts;
	s->ts_end = ts;
	s->pkt_events++;
	s->events++;
	if (s->len + need > s->cap) {
		/* larger than a packet: one of its own, the payload written from
		 * where the reader holds it */
		struct iovec v[4] = {
			{ (void *) r->head, r->nhead }, { (void *) r->body, r->nbody },
			{ (void *) r->mid, r->nmid }, { (void *) r->tail, r->ntail },
		};
		return write_packet(s, v, 4, need, err, errlen);
	}
	uint8_t *w = s->buf + s->len;
	memcpy(w, r->head, r->nhead);
	w += r->nhead;
	memcpy(w, r->body, r->nbody);
	w += r->nbody;
	if (r->nmid > 0) {
		memcpy(w, r->mid, r->nmid);
		w += r->nmid;
		memcpy(w, r->tail, r->ntail);
	}
	s->len += need;
	return 0;
}

int ctf_stream_discard(struct ctf_stream *s, uint64_t n, uint64_t ts, char *err, size_t errlen)
{
	if (n == 0)
		return 0;
	/* the packet before the loss: the one being filled, or an empty one
	 * at ts when none was written (a reader counts the events discarded
	 * between two packets: the first packet's count would be unknown) */
	if (s->pkt_events == 0 && s->seq == 0)
		s->ts_begin = s->ts_end = ts;
	if ((s->pkt_events > 0 || s->seq == 0) && write_packet(s, NULL, 0, 0, err, errlen) != 0)
		return -1;
	s->discarded += n;
	return 0;
}

int ctf_stream_end(struct ctf_stream *s, uint64_t ts, char *err, size_t errlen)
{
	if (s->ended)
		return 0;
	s->ended = 1;
	/* the last events, or the losses after them, or a stream without any */
	if (s->pkt_events > 0 || s->seq == 0 || s->discarded != s->written_discarded) {
		if (s->pkt_events == 0)
			s->ts_begin = s->ts_end = s->seq == 0 ? ts : s->ts_end;
		return write_packet(s, NULL, 0, 0, err, errlen);
	}
	return 0;
}

uint64_t ctf_stream_events(const struct ctf_stream *s)
{
	return s->events;
}

uint64_t ctf_stream_discarded(const struct ctf_stream *s)
{
	return s->discarded;
}

uint64_t ctf_stream_packets(const struct ctf_stream *s)
{
	return s->seq;
}

uint64_t ctf_stream_bytes(const struct ctf_stream *s)
{
	return s->bytes;
}

void ctf_stream_free(struct ctf_stream *s)
{
	if (s == NULL)
		return;
	free(s->buf);
	free(s);
}
