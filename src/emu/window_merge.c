/* SPDX-License-Identifier: MIT */
/*
 * window_merge.c - a window (--from/--to) by the workers of weft emu -j
 * (docs/emu.md, PARALLEL): whether a worker's engine wrote its state at
 * T0, and that state written after its last event when its looms had no
 * event after T0 (the serial run writes every row's state at T0 when any
 * loom has one); under --mpi, the summary's window line of every rank's
 * engines.
 */
#include "emu_internal.h"

int emu_window_waiting(const struct emu *e)
{
	return e->started && e->muted;
}

int emu_window_written(const struct emu *e)
{
	return e->started && !e->muted;
}

int emu_window_late_snapshot(struct emu *e)
{
	if (!e->started || !e->muted)
		return 0;
	if (emu_win_snapshot(e) != 0)
		return -1;
	return emu_flush(e);
}

uint64_t emu_window_nmuted(const struct emu *e)
{
	return e->window.nmuted;
}

void emu_window_add(struct emu *e, int started, int stopped, uint64_t nmuted)
{
	e->started |= started;
	e->window.stopped |= stopped;
	e->window.nmuted = nmuted;
}
