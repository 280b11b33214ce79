/* SPDX-License-Identifier: MIT */
/*
 * index.c - the stream index beside each stream.obs (stream.idx; the layout
 * and which events it lists are in src/format/idx_format.h).
 *
 * One 16-byte write(2) per buffer written to stream.obs, after it, with the
 * same error handling (rt_write_all: a failure dies naming the file). To find
 * the entry, only the headers of the buffer's first events are read (up to
 * its OF[, the second event unless signal handlers left events pending or an
 * automatic flush held some back), from memory the write just read.
 *
 * The file is created lazily, at the stream's second write (with the first
 * write's entry, kept until then): most short threads write their stream in
 * one buffer, and their index would hold one entry, at the stream's start,
 * which a seek never needs; creating it cost a third inode per thread. No
 * write holds more than rt_index_after bytes, which stream.json records
 * (weft.index_after): a stream with more bytes of events has its index,
 * and a reader warns when it is absent; one with fewer may have none.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "idx_format.h"
#include "rt_internal.h"

void rt_index_open(const char *func, struct rt_thread *th)
{
	th->idx_path = rt_strfmt(func, "%s/" WEFT_STREAM_IDX, th->dir);
	th->idx_fd = -1;
	th->idx_lazy = 1;
	th->idx_writes = 0;
	th->idx_npend = 0;
}

uint64_t rt_index_after(const struct rt_thread *th)
{
	/* The whole allocation of the buffer (thread.c): no write takes more. */
	return (uint64_t) th->bufsize + th->hold_max + sizeof(struct ovni_ev);
}

/* Bytes of the whole event at p (the buffer holds whole events only). */
static inline size_t event_size(const uint8_t *p)
{
	uint8_t flags = p[WEFT_EV_OFF_FLAGS];
	if (weft_ev_is_jumbo(flags))
		return WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD
			+ (size_t) weft_load_u32(p + WEFT_EV_OFF_PAYLOAD);
	return WEFT_EV_HEADER_SIZE + weft_ev_payload_size(flags);
}

/* The entry for len bytes of buf written at th->obs_off (moves obs_off
 * on); 0 if none is due. */
static int index_entry(struct rt_thread *th, const uint8_t *buf, size_t len, uint8_t e[WEFT_IDX_ENTRY_SIZE])
{
	uint64_t at = th->obs_off;
	th->obs_off += len;
	if ((th->idx_fd < 0 && !th->idx_lazy) || len < WEFT_EV_HEADER_SIZE)
		return 0;
	size_t pos = 0;
	if (at != WEFT_OBS_HEADER_SIZE) {
		/* A later buffer: its first OF[, among its first events. */
		unsigned n = 0;
		while (pos + WEFT_EV_HEADER_SIZE <= len && !weft_idx_is_flush_begin(buf + pos)) {
			if (++n == WEFT_IDX_SCAN_EVENTS)
				return 0;
			pos += event_size(buf + pos);
		}
		if (pos + WEFT_EV_HEADER_SIZE > len)
			return 0;
	}
	weft_idx_entry(e, at + pos, weft_load_u64(buf + pos + WEFT_EV_OFF_CLOCK));
	return 1;
}

/* What to write to stream.idx after a write of len bytes (*n bytes at
 * out; 0: nothing), and whether the file is to be created first (1). */
static int index_step(struct rt_thread *th, const uint8_t *buf, size_t len,
		      uint8_t out[WEFT_IDX_HEADER_SIZE + 2 * WEFT_IDX_ENTRY_SIZE], size_t *n)
{
	uint8_t e[WEFT_IDX_ENTRY_SIZE];
	int due = index_entry(th, buf, len, e);
	*n = 0;
	if (!th->idx_lazy) {
		if (due) {
			memcpy(out, e, sizeof e);
			*n = sizeof e;
		}
		return 0;
	}
	if (len == 0)
		return 0;
	if (++th->idx_writes == 1) {
		if (due) {
			memcpy(th->idx_pend, e, sizeof e);
			th->idx_npend = 1;
		}
		return 0;
	}
	/* The second write: the header, the first write's entry, this one's. */
	th->idx_lazy = 0;
	weft_idx_header(out);
	*n = WEFT_IDX_HEADER_SIZE;
	if (th->idx_npend) {
		memcpy(out + *n, th->idx_pend, sizeof th->idx_pend);
		*n += sizeof th->idx_pend;
	}
	if (due) {
		memcpy(out + *n, e, sizeof e);
		*n += sizeof e;
	}
	return 1;
}

void rt_index_note(const char *func, struct rt_thread *th, const uint8_t *buf, size_t len)
{
	uint8_t out[WEFT_IDX_HEADER_SIZE + 2 * WEFT_IDX_ENTRY_SIZE];
	size_t n;
	if (index_step(th, buf, len, out, &n)) {
		th->idx_fd = open(th->idx_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
				0666);
		if (th->idx_fd < 0)
			rt_die_errno(func, errno, "cannot create the stream index '%s'", th->idx_path);
	}
	if (n > 0 && th->idx_fd >= 0)
		rt_write_all(func, th->idx_fd, out, n, th->idx_path);
}

void rt_index_note_raw(struct rt_thread *th, const uint8_t *buf, size_t len)
{
	uint8_t out[WEFT_IDX_HEADER_SIZE + 2 * WEFT_IDX_ENTRY_SIZE];
	size_t n;
	if (index_step(th, buf, len, out, &n)) /* open(2) is async-signal-safe */
		th->idx_fd = open(th->idx_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
				0666);
	if (n > 0 && th->idx_fd >= 0) {
		ssize_t w;
		do
			w = write(th->idx_fd, out, n);
		while (w < 0 && errno == EINTR);
	}
}

void rt_index_close(const char *func, struct rt_thread *th)
{
	if (th->idx_fd >= 0 && close(th->idx_fd) != 0)
		rt_die_errno(func, errno, "cannot close the stream index '%s'", th->idx_path);
	th->idx_fd = -1;
	th->idx_lazy = 0;
}
