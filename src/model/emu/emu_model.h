/* SPDX-License-Identifier: MIT */
/*
 * emu_model.h - the format of an emulation model description.
 *
 * A model is data: the channels it owns, how each channel is shown in the
 * thread and CPU timelines, and, per event (MCV), the guards it checks and
 * the ordered list of actions it applies. The emulation engine (src/emu)
 * interprets these tables; a model only carries C for what cannot be said
 * as data (EMU_OP_HOOK). Descriptions are compiled-in C tables (no parser, no
 * file to find at run time, checked by the compiler); see docs/emu.md.
 *
 * The ovni model (emu_ovni.c) is the first user. The registry at the end
 * lists every model the reference knows, so a trace that needs a model with
 * no description is refused as unsupported instead of being misread.
 */
#ifndef WEFT_EMU_MODEL_H
#define WEFT_EMU_MODEL_H

#include <stddef.h>
#include <stdint.h>

/* Thread states (also the Paraver values of thread type 4). */
enum emu_state {
	EMU_ST_UNKNOWN = 0,
	EMU_ST_RUNNING = 1,
	EMU_ST_PAUSED = 2,
	EMU_ST_DEAD = 3,
	EMU_ST_COOLING = 4,
	EMU_ST_WARMING = 5,
	EMU_NSTATES = 6,
};
#define EMU_STM(s) (1u << (s))

/* ---- channels ---- */

enum emu_chan_kind {
	EMU_CHAN_SINGLE, /* set */
	EMU_CHAN_STACK,  /* push, pop (checked value); visible value = top */
};

/* What a write equal to the value at the end of the previous event does. */
enum emu_dup {
	EMU_DUP_ALLOW,  /* accepted, re-evaluated as any write */
	EMU_DUP_REFUSE, /* the event is refused */
};

/* When the thread view shows the raw value (otherwise null). */
enum emu_track {
	EMU_TRACK_RUN, /* thread Running */
	EMU_TRACK_ACT, /* thread Running, Cooling or Warming */
	EMU_TRACK_ANY, /* always: the raw channel itself */
};

/* Whether a re-evaluation of a view becomes a Paraver record. The first
 * re-evaluation of a (row, type) always does. */
enum emu_policy {
	EMU_POL_SKIPDUP,     /* unless equal to the last record */
	EMU_POL_SKIPDUPNULL, /* unless null and the last record was null */
	EMU_POL_EMITDUP,     /* always */
};

struct emu_value_label {
	int64_t value;
	const char *label;
};

/* Where a family of channels comes from (one channel per member). */
enum emu_family {
	EMU_FAMILY_NONE = 0,
	/* One channel per mark type of the trace metadata (ovni.mark): kind,
	 * PCF label (title) and value labels from the metadata, PRV type =
	 * prv_type + mark type. Selected in actions by EMU_VAL_* `sel`. */
	EMU_FAMILY_MARK_TYPES,
};

struct emu_chan_desc {
	const char *name;
	enum emu_chan_kind kind; /* ignored for families (from metadata) */
	enum emu_dup dup;
	enum emu_track track;
	int prv_type; /* Paraver type (base for a family); 0: not shown */
	enum emu_policy thread_policy;
	enum emu_policy cpu_policy;
	const char *thread_label; /* PCF EVENT_TYPE label in thread.pcf */
	const char *cpu_label;    /* ... in cpu.pcf */
	size_t nvalues;
	const struct emu_value_label *values;
	enum emu_family family;
};

/* ---- events ---- */

/* A value taken by an action. */
enum emu_val_src {
	EMU_VAL_NULL = 0, /* no value (null) */
	EMU_VAL_CONST,    /* k */
	EMU_VAL_I32,      /* signed 32-bit payload field at offset k */
	EMU_VAL_I64,      /* signed 64-bit payload field at offset k */
};

struct emu_val {
	enum emu_val_src src;
	int64_t k;
};

enum emu_op {
	/* Accept, no effect. */
	EMU_OP_NONE = 0,
	/* The thread starts running on CPU `val` (index in its loom, -1 =
	 * the loom's virtual CPU): affinity, state Running, joins the CPU.
	 * Refused when the thread is Running or already has a CPU. */
	EMU_OP_THREAD_START,
	/* State change to `to` from one of the states in `from` (EMU_STM
	 * mask). Leaving for Dead also leaves the CPU and clears affinity. */
	EMU_OP_THREAD_STATE,
	/* The thread moves itself to CPU `val` (needs an active thread with
	 * a CPU; the same CPU is a no-op). */
	EMU_OP_AFFINITY_SELF,
	/* Thread `arg` (tid, searched in the emitter's process, then its
	 * loom) moves to CPU `val` of the emitter's loom. */
	EMU_OP_AFFINITY_REMOTE,
	/* Raw channel writes on `chan` (a family member selected by `sel`). */
	EMU_OP_SET,
	EMU_OP_PUSH,
	EMU_OP_POP,
	/* C code for what a table cannot say. Returns 0 or -1 with the
	 * reason written through emu_hook_fail(). */
	EMU_OP_HOOK,
};

struct emu_hook_ctx; /* given by the engine to hooks (emu.h) */
typedef int (*emu_hook_fn)(struct emu_hook_ctx *ctx);

struct emu_action {
	enum emu_op op;
	const char *chan;   /* channel name (SET/PUSH/POP) */
	struct emu_val val; /* the value or the CPU */
	struct emu_val sel; /* family member (mark type) */
	struct emu_val arg; /* second argument (AFFINITY_REMOTE: tid) */
	int nonzero;        /* refuse a value of 0 */
	enum emu_state to;  /* THREAD_STATE */
	unsigned from;      /* THREAD_STATE: EMU_STM mask of allowed states */
	emu_hook_fn hook;   /* HOOK */
};

/* Payload size rule, checked before any action. */
enum emu_size {
	EMU_SIZE_ANY = 0,
	EMU_SIZE_EXACT,
	EMU_SIZE_ATLEAST,
};

#define EMU_MAX_ACTIONS 3

struct emu_event_desc {
	/* Model, category, value. A value of '*' matches every value byte of
	 * the category not listed on its own. */
	char mcv[4];
	const char *what; /* a few words, used in messages */
	enum emu_size size_rule;
	uint32_t size;
	/* --lint only: the size of the signature (-1: any size, jumbo allowed). */
	int lint_size;
	size_t nactions;
	struct emu_action actions[EMU_MAX_ACTIONS];
};

struct emu_model_desc {
	const char *name; /* the ovni.require key */
	char byte;        /* the model byte of its MCVs */
	const char *version; /* provided, "major.minor.patch" */
	size_t nchans;
	const struct emu_chan_desc *chans;
	size_t nevents;
	const struct emu_event_desc *events;
	/* Optional C hooks: per-thread model state size (bytes, zeroed) and a
	 * finish step after the last event of a complete run. */
	size_t thread_state_size;
	int (*finish)(struct emu_hook_ctx *ctx);
};

/* ---- the registry ---- */

struct emu_model_reg {
	const char *name;
	char byte;
	const char *version;
	const struct emu_model_desc *desc; /* NULL: known, not implemented */
};

extern const struct emu_model_desc emu_model_ovni;

/* Every model the reference registers, in model-byte order. */
size_t emu_model_registry(const struct emu_model_reg **regs);

#endif /* WEFT_EMU_MODEL_H */
