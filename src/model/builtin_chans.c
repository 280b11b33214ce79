/* SPDX-License-Identifier: MIT */
/*
 * builtin_chans.c - the channels the emulator writes for every trace,
 * whatever the models: the thread's state, active tid and affinity, the
 * CPU's running thread (tid, pid, count) and the lost intervals. Defined
 * once here (model_emu.h): the engine's catalogue (src/emu/catalogue.c)
 * takes them from this table, and model_collide.c refuses a model whose
 * Paraver types take theirs. The thread states' names are here too.
 */
#include "model_emu.h"

const struct emu_value_label emu_thread_states[EMU_NSTATES] = {
	{ EMU_ST_UNKNOWN, "Unknown" }, { EMU_ST_RUNNING, "Running" },
	{ EMU_ST_PAUSED, "Paused" },   { EMU_ST_DEAD, "Dead" },
	{ EMU_ST_COOLING, "Cooling" }, { EMU_ST_WARMING, "Warming" },
};

static const struct emu_value_label lost_values[] = {
	{ 1, "Events lost (overwritten before they were written)" },
};

/* In the catalogue's order: the thread's (its .pcf lists them first, in
 * this order), the CPU's (the CPU .pcf lists none of them), then the lost
 * intervals, which the catalogue puts after the models' channels (the .pcf
 * lists them last, and only when a thread lost events). */
const struct emu_builtin_chan emu_builtin_chans[EMU_NBUILTIN_CHANS] = {
	{ "ovni.thread.affinity", EMU_SCOPE_THREAD, EMU_BUILTIN_AFFINITY, 6,
		"Thread: CPU affinity", NULL, 0, NULL, EMU_PCF_ALWAYS, EMU_SHOW_NONE,
		"the built-in thread channel 'CPU affinity'" },
	{ "ovni.thread.tid", EMU_SCOPE_THREAD, EMU_BUILTIN_PLAIN, 2,
		"Thread: TID of the ACTIVE thread", NULL, 0, NULL, EMU_PCF_ALWAYS, EMU_SHOW_NONE,
		"the built-in channels 'TID of the ACTIVE thread' (thread) and 'TID of the "
		"RUNNING thread' (CPU)" },
	{ "ovni.thread.state", EMU_SCOPE_THREAD, EMU_BUILTIN_STATE, 4,
		"Thread: thread state", NULL, EMU_NSTATES, emu_thread_states, EMU_PCF_ALWAYS,
		EMU_SHOW_SLICES, "the built-in thread state" },
	{ "cpu.running.pid", EMU_SCOPE_CPU, EMU_BUILTIN_PLAIN, 1,
		NULL, "CPU: PID of the RUNNING thread", 0, NULL, EMU_PCF_NEVER, EMU_SHOW_NONE,
		"the built-in CPU channel 'PID of the RUNNING thread'" },
	{ "cpu.running.tid", EMU_SCOPE_CPU, EMU_BUILTIN_PLAIN, 2,
		NULL, "CPU: TID of the RUNNING thread", 0, NULL, EMU_PCF_NEVER, EMU_SHOW_SLICES,
		NULL /* type 2: said above */ },
	{ "cpu.running.count", EMU_SCOPE_CPU, EMU_BUILTIN_PLAIN, 3,
		NULL, "CPU: number of RUNNING threads", 0, NULL, EMU_PCF_NEVER, EMU_SHOW_NONE,
		"the built-in CPU channel 'number of RUNNING threads'" },
	{ "ovni.lost", EMU_SCOPE_THREAD | EMU_SCOPE_CPU, EMU_BUILTIN_LOST, 90,
		"Lost events (overwritten by the flight recorder)", "Lost events of a thread on this CPU",
		1, lost_values, EMU_PCF_IF_LOST, EMU_SHOW_SLICES, "the built-in lost events" },
};
