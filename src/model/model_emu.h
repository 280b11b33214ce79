/* SPDX-License-Identifier: MIT */
/*
 * model_emu.h - what a model description says to the emulator.
 *
 * A model is data: the channels it owns, how each is shown in the thread
 * and CPU timelines, and, per event (MCV), the guards it checks and the
 * ordered list of actions it applies. The descriptions are YAML files
 * (docs/models.md) that model_load.c turns into these structs; the engine
 * (src/emu) interprets them. What cannot be said as data is a named
 * built-in primitive of the engine (task machinery, counters, breakdown) or,
 * for the built-in models only, a C hook that reaches the engine through the
 * ops table below (src/model links nothing of src/emu).
 */
#ifndef WEFT_MODEL_EMU_H
#define WEFT_MODEL_EMU_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

struct weft_event;

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
#define EMU_STM_ACTIVE (EMU_STM(EMU_ST_RUNNING) | EMU_STM(EMU_ST_COOLING) | EMU_STM(EMU_ST_WARMING))

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

/* End-of-run check that a stack channel is empty on every thread. */
enum emu_lint_empty {
	EMU_LINT_NO = 0,
	EMU_LINT_COMPLETE, /* after a complete run */
	EMU_LINT_ALWAYS,   /* also after a run stopped by an error */
};

struct emu_value_label {
	int64_t value;
	const char *label;
};

/* How a timeline that draws tracks (Perfetto) shows a channel. */
enum emu_show {
	EMU_SHOW_AUTO = 0, /* slices for a stack or labelled values, else a counter */
	EMU_SHOW_SLICES,
	EMU_SHOW_COUNTER,
	EMU_SHOW_NONE,
};

/* ---- the built-in channels (builtin_chans.c) ---- */

/* The thread states' names (Paraver values 0..5), defined once. */
extern const struct emu_value_label emu_thread_states[EMU_NSTATES];

/* Where a channel is: bits of the views (the thread and CPU timelines). */
#define EMU_SCOPE_THREAD 1u
#define EMU_SCOPE_CPU 2u

/* What the engine writes in a built-in channel. */
enum emu_builtin_what {
	EMU_BUILTIN_PLAIN = 0, /* a number without labels (tid, pid, count) */
	EMU_BUILTIN_STATE,     /* the thread state: emu_thread_states */
	EMU_BUILTIN_AFFINITY,  /* a CPU: value = CPU row + 1, labelled by the CPU */
	EMU_BUILTIN_LOST,      /* 1 over a lost interval */
};

/* When a view's .pcf lists the channel. */
enum emu_pcf_when {
	EMU_PCF_NEVER = 0,
	EMU_PCF_ALWAYS,
	EMU_PCF_IF_LOST, /* only when a thread lost events */
};

struct emu_builtin_chan {
	const char *name;     /* its catalogue name (docs/emu.md, "The channel catalogue") */
	unsigned scope;       /* EMU_SCOPE_* */
	enum emu_builtin_what what;
	int prv_type;         /* in each view of its scope */
	const char *thread_label, *cpu_label; /* PCF labels (NULL: not in that view) */
	size_t nvalues;
	const struct emu_value_label *values;
	enum emu_pcf_when pcf;
	enum emu_show show;   /* how Perfetto draws it (slices or none) */
	const char *collide;  /* model_collide.c's words for its type (NULL: said before) */
};
/* Their indices in emu_builtin_chans. */
enum emu_builtin_index {
	EMU_BI_AFFINITY = 0,
	EMU_BI_TID,
	EMU_BI_STATE,
	EMU_BI_CPU_PID,
	EMU_BI_CPU_TID,
	EMU_BI_CPU_COUNT,
	EMU_BI_LOST,
	EMU_NBUILTIN_CHANS,
};
extern const struct emu_builtin_chan emu_builtin_chans[EMU_NBUILTIN_CHANS];

/* Where a family of channels comes from (one channel per member). */
enum emu_family {
	EMU_FAMILY_NONE = 0,
	/* One channel per mark type of the trace metadata (ovni.mark): kind,
	 * PCF label (title) and value labels from the metadata, PRV type =
	 * prv_type + mark type. Selected in actions by a `sel` value. */
	EMU_FAMILY_MARK_TYPES,
	/* One channel per counter the metadata declares (model counters:
	 * section): PRV type = prv_type + index, label = the counter name. */
	EMU_FAMILY_COUNTERS,
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
	int has_initial;   /* raw value before the first event, set silently */
	int64_t initial;
	int has_fallback;  /* CPU view without a running thread */
	int64_t fallback;
	int zero_ok;       /* a value of 0 is legal */
	enum emu_lint_empty lint_empty;
	int values_from_types; /* the task types follow the values in the PCF */
	enum emu_show show;
};

/* ---- events ---- */

/* A value taken by an action. */
enum emu_val_src {
	EMU_VAL_NULL = 0, /* no value (null) */
	EMU_VAL_CONST,    /* k */
	EMU_VAL_I32,      /* signed 32-bit payload field at offset k */
	EMU_VAL_I64,      /* signed 64-bit payload field at offset k */
	EMU_VAL_U32,      /* unsigned 32-bit payload field at offset k */
	EMU_VAL_U64,      /* unsigned 64-bit (read as signed) at offset k */
	EMU_VAL_TYPE_GID, /* Paraver value of the task type whose u32 id is at k */
	EMU_VAL_TASK_GID, /* Paraver value of the type of the event's task */
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
	/* Raw channel writes on channel `chan` of the model (a family member
	 * selected by `sel`). */
	EMU_OP_SET,
	EMU_OP_PUSH,
	EMU_OP_POP,
	/* C code of a built-in model for what a table cannot say. */
	EMU_OP_HOOK,
	/* Per-thread flag `flag` (index in the model's flag names) := val. */
	EMU_OP_FLAG,
	/* The task machinery (model tasks: section). */
	EMU_OP_TYPE_CREATE,
	EMU_OP_TASK_CREATE,
	EMU_OP_TASK,
	/* Every counter of the model's counter family from a jumbo payload. */
	EMU_OP_COUNTERS,
};

enum emu_task_op {
	EMU_TASK_EXECUTE,
	EMU_TASK_END,
	EMU_TASK_PAUSE,
	EMU_TASK_RESUME,
};

/* Task creation flags. */
#define EMU_TF_PARALLEL 1u
#define EMU_TF_RESURRECT 2u
#define EMU_TF_PAUSE 4u
#define EMU_TF_RELAX 8u
#define EMU_TF_NONZERO_ID 16u /* creation refuses task id 0 */

struct emu_hook_ctx;
typedef int (*emu_hook_fn)(struct emu_hook_ctx *ctx);

struct emu_action {
	enum emu_op op;
	size_t chan;        /* SET/PUSH/POP: channel index in the model */
	struct emu_val val; /* the value, the CPU, the task id */
	struct emu_val sel; /* family member (mark type) */
	struct emu_val arg; /* AFFINITY_REMOTE: tid; TASK: body id */
	enum emu_state to;  /* THREAD_STATE */
	unsigned from;      /* THREAD_STATE: EMU_STM mask of allowed states */
	emu_hook_fn hook;   /* HOOK */
	size_t flag;        /* FLAG */
	unsigned task_flags; /* TASK_CREATE */
	enum emu_task_op task_op; /* TASK */
};

/* Payload size rule, checked before any action. */
enum emu_size {
	EMU_SIZE_ANY = 0,
	EMU_SIZE_EXACT,
	EMU_SIZE_ATLEAST,
};

struct emu_event_desc {
	/* Model, category, value. A value of '*' matches every value byte of
	 * the category not listed on its own. */
	char mcv[4];
	const char *what; /* a few words, used in messages */
	enum emu_size size_rule;
	uint32_t size;
	/* --lint only: the size of the signature (-1: any size, jumbo allowed). */
	int lint_size;
	int jumbo;          /* the event must be a jumbo event */
	const char *warn;   /* accepted with this warning, no effect */
	size_t nactions;
	const struct emu_action *actions;
};

/* What the task machinery writes (model tasks: section). */
enum emu_task_src {
	EMU_TSRC_BODY_ID,
	EMU_TSRC_TASK_ID,
	EMU_TSRC_TYPE_GID,
	EMU_TSRC_APP_ID,
	EMU_TSRC_RANK1, /* rank + 1, only when the process has a rank */
};

#define EMU_TASK_VIEW_MAX 8

struct emu_tasks_desc {
	int present;
	int body_from_payload; /* body id = u32 at 4 (nosv rule) */
	int has_body_chan;     /* push/pop body_value on body_chan at execute/end */
	size_t body_chan;
	int64_t body_value;
	size_t nview;
	struct {
		size_t chan;
		enum emu_task_src src;
	} view[EMU_TASK_VIEW_MAX];
	int pcf_after_error;
};

struct emu_counters_desc {
	const char *metadata; /* the stream.json key, e.g. "nosv.hwc" */
	size_t chan;          /* the family channel */
};

enum emu_breakdown_kind {
	EMU_BD_NONE = 0,
	EMU_BD_TASK,  /* subsystem / task type / idle (nosv, nanos6) */
	EMU_BD_LABEL, /* label, else subsystem (openmp) */
};

struct emu_breakdown_desc {
	enum emu_breakdown_kind kind;
	int prv_type;
	const char *label;
	const char *requires; /* a boolean metadata key every thread must have */
	/* Inputs, by channel index: subsystem, type (or label), idle. */
	size_t subsystem, type, idle;
	int64_t body_value; /* the task-body subsystem value */
};

struct emu_model_desc {
	const char *name;    /* the ovni.require key */
	char byte;           /* the model byte of its MCVs */
	const char *version; /* provided, "major.minor.patch" */
	unsigned guard_states; /* EMU_STM mask; 0: any state */
	int guard_flag;        /* refuse while this flag is set (-1: none) */
	size_t nchans;
	const struct emu_chan_desc *chans;
	size_t nevents;
	const struct emu_event_desc *events;
	/* Flag names used by this model (guard and FLAG actions); flags are
	 * per thread and shared between models by name. */
	size_t nflags;
	const char *const *flags;
	struct emu_tasks_desc tasks;
	int has_counters;
	struct emu_counters_desc counters;
	struct emu_breakdown_desc breakdown;
	int always_enabled;    /* enabled whatever ovni.require says (ovni) */
	int not_in_all;        /* all-models: false: weft emu -a leaves it out
	                          unless a stream requires it (laplace) */
	int end_threads_dead;  /* at the end, every thread must be Dead (ovni) */
	/* thread-end: the event that ends a thread (ovni's OHe): weft emu
	 * --salvage closes each thread cut short at its last event by
	 * applying its actions. has_thread_end: the model names one. */
	int has_thread_end;
	size_t thread_end; /* index in events */
	/* Built-in models: per-thread state of the hooks (bytes, zeroed). */
	size_t thread_state_size;
};

/* ---- hooks: C parts of the built-in models ---- */

struct emu_hook_ops {
	int (*fail)(struct emu_hook_ctx *ctx, const char *fmt, va_list ap);
	void (*warn)(struct emu_hook_ctx *ctx, const char *fmt, va_list ap);
	void (*info)(struct emu_hook_ctx *ctx, const char *fmt, va_list ap);
	enum emu_state (*thread_state)(const struct emu_hook_ctx *ctx);
	int (*lint)(const struct emu_hook_ctx *ctx);
};

struct emu_hook_ctx {
	const struct emu_hook_ops *ops;
	void *engine;
	const struct weft_event *ev;
	const struct emu_event_desc *desc;
	size_t thread;  /* gindex of the emitting thread */
	void *tstate;   /* the model's per-thread state (thread_state_size) */
	int64_t dclock;
};

int emu_hook_fail(struct emu_hook_ctx *ctx, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void emu_hook_warn(struct emu_hook_ctx *ctx, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void emu_hook_info(struct emu_hook_ctx *ctx, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
enum emu_state emu_hook_thread_state(const struct emu_hook_ctx *ctx);
int emu_hook_lint(const struct emu_hook_ctx *ctx);

/* The hooks of the built-in models, by name ("ovni.burst", ...). */
emu_hook_fn emu_hook_by_name(const char *name, size_t *thread_state_size);

#endif /* WEFT_MODEL_EMU_H */
