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
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "idx_format.h"
#include "rt_internal.h"

void rt_index_open(const char *func, struct rt_thread *th)
{
	th->idx_path = rt_strfmt(func, "%s/" WEFT_STREAM_IDX, th->dir);
	th->idx_fd = open(th->idx_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (th->idx_fd < 0)
		rt_die_errno(func, errno, "cannot create the stream index '%s'", th->idx_path);
	uint8_t h[WEFT_IDX_HEADER_SIZE];
	weft_idx_header(h);
	rt_write_all(func, th->idx_fd, h, sizeof h, th->idx_path);
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
	if (th->idx_fd < 0 || len < WEFT_EV_HEADER_SIZE)
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

void rt_index_note(const char *func, struct rt_thread *th, const uint8_t *buf, size_t len)
{
	uint8_t e[WEFT_IDX_ENTRY_SIZE];
	if (index_entry(th, buf, len, e))
		rt_write_all(func, th->idx_fd, e, sizeof e, th->idx_path);
}

void rt_index_note_raw(struct rt_thread *th, const uint8_t *buf, size_t len)
{
	uint8_t e[WEFT_IDX_ENTRY_SIZE];
	if (index_entry(th, buf, len, e)) {
		ssize_t w;
		do
			w = write(th->idx_fd, e, sizeof e);
		while (w < 0 && errno == EINTR);
	}
}

void rt_index_close(const char *func, struct rt_thread *th)
{
	if (th->idx_fd >= 0 && close(th->idx_fd) != 0)
		rt_die_errno(func, errno, "cannot close the stream index '%s'", th->idx_path);
	th->idx_fd = -1;
}
