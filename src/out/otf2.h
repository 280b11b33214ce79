/* SPDX-License-Identifier: MIT */
/*
 * otf2.h - `weft export otf2`: the emulation's thread view written as an
 * OTF2 archive (docs/export.md) through the OTF2 library (Debian's
 * libotf2-trace-dev), an optional dependency: otf2.c is built only when
 * the library is found (WEFT_HAVE_OTF2).
 *
 * An output of the engine's records (out.h), given to the driver through
 * its open_output hook by weft_export (src/driver/export.c): the system
 * tree from the looms, a location group per process, a location per
 * thread with its own event writer; a region per (channel, value) of the
 * thread view's state, single, stack and mark channels, entered and left
 * as the value changes, properly nested per location; a metric per counter
 * channel; the clock properties (1 ns, the trace's first clock as the
 * offset, its duration). The archive is written into a temporary directory
 * beside the output, renamed over it at the commit.
 */
#ifndef WEFT_OUT_OTF2_H
#define WEFT_OUT_OTF2_H

#include <stdint.h>

#include "out.h"

struct out_otf2_stats {
	uint64_t locations, regions, metrics;
	uint64_t enters, leaves, samples; /* the events written */
};

/* The archive into outdir (absent, an empty directory, or with force an
 * OTF2 archive weft wrote), written aside. *st (may be NULL) is filled at
 * the close. NULL with err. */
struct out *out_otf2_open(const char *outdir, int force, const struct emu *emu,
		struct out_otf2_stats *st, char *err, size_t errlen);

#endif
