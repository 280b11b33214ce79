/* SPDX-License-Identifier: MIT */
/*
 * window.h - the window of weft emu --from/--to (window.c): before T0 the
 * events are emulated without records (e->muted), at T0 the state is
 * written as it is then, after T1 the emulation stops. Part of struct emu
 * (emu_internal.h).
 */
#ifndef WEFT_EMU_WINDOW_H
#define WEFT_EMU_WINDOW_H

#include <stdint.h>

#include "emu.h"

struct emu;

struct window {
	struct emu_window bounds; /* as given (emu_set_window) */
	int stopped;              /* an event after T1 was refused */
	int64_t from, to;         /* dclocks, once started */
	uint64_t nmuted;          /* events emulated before the window */
};

/* At the first event: the bounds as dclocks, the record base, the lazy
 * views. */
void emu_win_start(struct emu *e);
/* The window's start: the state at T0 written at T0; unmutes. */
int emu_win_snapshot(struct emu *e);

#endif
