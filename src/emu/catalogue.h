/* SPDX-License-Identifier: MIT */
/*
 * catalogue.h - the channel catalogue: every channel an emulation produces,
 * one entry each, and what each output needs to show it (docs/emu.md, "The
 * channel catalogue"; docs/architecture.md). The outputs (src/out), the
 * Python module and the driver read channels here, never by Paraver type
 * numbers or state names of their own.
 *
 * The entries, in id order: the thread's built-in channels (affinity,
 * active tid, state), the CPU's (running thread's pid, tid, count), each
 * enabled model's channels in model-byte order (a family expanded: a mark
 * channel per mark type of the trace, a counter channel per counter), the
 * lost intervals, then the breakdown views (-b). The built-ins come from
 * src/model's table (model_emu.h, emu_builtin_chans).
 */
#ifndef WEFT_EMU_CATALOGUE_H
#define WEFT_EMU_CATALOGUE_H

#include <stddef.h>

#include "emu.h"

/* The views an entry is in: bit k for view k (EMU_SCOPE_THREAD is view 0,
 * EMU_SCOPE_CPU view 1, a breakdown view k its bit). */
#define EMU_SCOPE_VIEW(k) (1u << (k))

enum emu_cat_kind {
	EMU_CAT_STATE = 0, /* the thread state */
	EMU_CAT_SINGLE,    /* set: one value at a time */
	EMU_CAT_STACK,     /* push and pop: the top shows */
	EMU_CAT_COUNTER,   /* a counter family member: numbers */
	EMU_CAT_MARK,      /* a mark type (single or stack, see .stack) */
};

/* When the thread view shows the raw value (the model's `view:`). */
enum emu_cat_view {
	EMU_CAT_VIEW_RUN = 0, /* while the thread is Running */
	EMU_CAT_VIEW_ACT,     /* Running, Cooling or Warming */
	EMU_CAT_VIEW_ANY,     /* always: the raw value itself */
};

/* What Perfetto draws for it. */
enum emu_cat_track {
	EMU_CAT_TRACK_NONE = 0,
	EMU_CAT_TRACK_SLICES,
	EMU_CAT_TRACK_COUNTER,
};

struct emu_cat_entry {
	size_t id;           /* its index: stable for a run's models and metadata */
	const char *name;    /* dotted, lower case: "ovni.thread.state", "nosv.subsystem" */
	const char *model;   /* "ovni" for the built-ins */
	unsigned scope;      /* EMU_SCOPE_* bits: the views it is in */
	enum emu_cat_kind kind;
	int stack;           /* pushed and popped (a stack, or a stacked mark type) */
	/* its value labels: values, or mvalues (a mark type); a task type
	 * channel's further labels are info->dyn, known after emu_finish() */
	size_t nvalues;
	const struct emu_value_label *values;
	const struct weft_mark_label *mvalues;
	/* Paraver: its type (0: not written), its PCF labels per view, and
	 * when a view's .pcf lists it */
	int prv_type;
	const char *thread_label, *cpu_label;
	enum emu_pcf_when pcf;
	enum emu_cat_track track; /* Perfetto */
	enum emu_cat_view view;
	int builtin;         /* its emu_builtin_index, or -1 */
	int chan;            /* a model's channel: its index (emu_chan_at), else -1 */
	const struct emu_chan_info *info; /* ... and its info, else NULL */
	int bd_view;         /* a breakdown: its view, else -1 */
};

size_t emu_cat_count(const struct emu *e);
const struct emu_cat_entry *emu_cat_at(const struct emu *e, size_t id);
/* NULL when no entry has that name. */
const struct emu_cat_entry *emu_cat_by_name(const struct emu *e, const char *name);
/* The entry whose records of Paraver type `type` a view holds; NULL for
 * type 0 or a type of no entry. */
const struct emu_cat_entry *emu_cat_by_type(const struct emu *e, size_t view, int type);
/* The entry a record of view `view` belongs to, and the entry of a raw
 * internal record (EMU_REC_RAW_*); NULL when it has none. Records carry
 * the entry's id (chan): these are an index, O(1). Consumers name a
 * record's channel through these only. */
const struct emu_cat_entry *emu_cat_of_prv(const struct emu *e, size_t view,
		const struct emu_prv_rec *r);
const struct emu_cat_entry *emu_cat_of_raw(const struct emu *e, const struct emu_rec *r);
/* A built-in entry (emu_builtin_index). */
const struct emu_cat_entry *emu_cat_builtin(const struct emu *e, enum emu_builtin_index b);
/* The label of value v in the entry (NULL: none; a task type's from
 * info->dyn once known). */
const char *emu_cat_value_label(const struct emu_cat_entry *c, int64_t v);

#endif /* WEFT_EMU_CATALOGUE_H */
