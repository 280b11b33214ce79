/* SPDX-License-Identifier: MIT */
/*
 * picture_sink.h - an output of the emulation (the driver's open_output
 * hook, driver.h) that keeps the timeline of one channel of the catalogue
 * for a picture (picture.h): its changes per row of each view it is in.
 */
#ifndef WEFT_VIEW_PICTURE_SINK_H
#define WEFT_VIEW_PICTURE_SINK_H

#include <stddef.h>

#include "picture.h"

struct emu;
struct out;
struct picture_sink;

/* At most this many changes of the channel are kept (16 bytes each). */
#define PICTURE_MAX_CHANGES ((size_t) 1 << 24)

/* A sink for the channel of that catalogue name (kept, not copied); NULL
 * when out of memory. */
struct picture_sink *picture_sink_new(const char *channel);
/* 1 when the channel is a breakdown view's (the run needs -b). */
int picture_sink_wants_breakdown(const char *channel);
/* The driver's open_output hook (ctx: a picture_sink): the output, or NULL
 * with err ("unknown channel 'x'; did you mean 'y'?"). Each call (the driver
 * may run the emulation twice) starts the timeline anew. */
struct out *picture_sink_open(void *ctx, const struct emu *emu, char *err, size_t errlen);
/* After a run that succeeded: the picture (rows, values, title "<channel>:
 * <label>") moved into *p. 0, or -1 when the run did not reach the close. */
int picture_sink_take(struct picture_sink *s, struct picture *p);
void picture_sink_free(struct picture_sink *s);

#endif
