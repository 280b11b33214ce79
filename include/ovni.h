/* SPDX-License-Identifier: MIT */
/*
 * ovni.h - the ovni 1.14 instrumentation API, as implemented by weft's
 * libovni.
 *
 * This header is a contract: the names, signatures, macros and struct
 * layouts below are those of the public ovni 1.14 API, so that programs
 * written (or already linked) against the reference library work with
 * weft's libovni unchanged.  Do not change a layout or a signature here.
 *
 * The on-disk meaning of these structures is defined once, in
 * src/format/obs_format.h; see docs/runtime.md for the behaviour.
 */
#ifndef OVNI_H
#define OVNI_H

#ifdef __cplusplus
extern "C" {
#endif

/* User code written for ovni relies on these being pulled in. */
#include <limits.h>
#include <linux/limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#pragma GCC visibility push(default)

/* Version of the stream.json layout (trace specification v3). */
#define OVNI_METADATA_VERSION 3

/* Default name of the trace directory, relative to the working directory. */
#define OVNI_TRACEDIR "ovni"
#define OVNI_MAX_HOSTNAME 512

/* Default size of the per-thread event buffer: 2 MiB. */
#define OVNI_MAX_EV_BUF (2 * 1024LL * 1024LL)

/* Binary stream (stream.obs) header. */
#define OVNI_STREAM_MAGIC "ovni"
#define OVNI_STREAM_VERSION 1
#define OVNI_STREAM_EXT ".obs"

/* Version of the ovni model events this library emits. */
#define OVNI_MODEL_VERSION "1.1.0"

/* The ovni API level this library implements (semantic versioning) and the
 * commit it was built from. weft's own version is WEFT_VERSION (weft --version). */
#define OVNI_LIB_VERSION "1.14.0"
#define OVNI_GIT_COMMIT "weft"

enum ovni_ev_flags {
	OVNI_EV_JUMBO = 0x10,
};

/* Jumbo payload: a 32-bit size, then that many bytes of data. */
struct __attribute__((__packed__)) ovni_jumbo_payload {
	uint32_t size;
	uint8_t data[1];
};

/* Payload of a normal event: 0 or 2..16 bytes. */
union __attribute__((__packed__)) ovni_ev_payload {
	int8_t i8[16];
	int16_t i16[8];
	int32_t i32[4];
	int64_t i64[2];

	uint8_t u8[16];
	uint16_t u16[8];
	uint32_t u32[4];
	uint64_t u64[2];

	struct ovni_jumbo_payload jumbo;
};

/* Event header, 12 bytes: flags (high nibble) and payload size code (low
 * nibble), model, category and value characters, clock in nanoseconds. */
struct __attribute__((__packed__)) ovni_ev_header {
	uint8_t flags;
	uint8_t model;
	uint8_t category;
	uint8_t value;
	uint64_t clock;
};

struct __attribute__((__packed__)) ovni_ev {
	struct ovni_ev_header header;
	union ovni_ev_payload payload;
};

struct __attribute__((__packed__)) ovni_stream_header {
	char magic[4];
	uint32_t version;
};

/* ---- version ---- */

/* Aborts if the library cannot serve a program built against this header. */
#define ovni_version_check() ovni_version_check_str(OVNI_LIB_VERSION)
void ovni_version_check_str(const char *version);
void ovni_version_get(const char **version, const char **commit);

/* ---- process ---- */

void ovni_proc_init(int app, const char *loom, int pid);
void ovni_proc_set_rank(int rank, int nranks);
void ovni_proc_fini(void);

/* ---- thread ---- */

void ovni_thread_init(pid_t tid);
void ovni_thread_require(const char *model, const char *version);
void ovni_thread_free(void);
int ovni_thread_isready(void);

/* ---- events ---- */

void ovni_ev_set_mcv(struct ovni_ev *ev, const char *mcv);
uint64_t ovni_ev_get_clock(const struct ovni_ev *ev);
void ovni_ev_set_clock(struct ovni_ev *ev, uint64_t clock);
uint64_t ovni_clock_now(void);
void ovni_payload_add(struct ovni_ev *ev, const uint8_t *buf, int size);
int ovni_ev_size(const struct ovni_ev *ev);
int ovni_payload_size(const struct ovni_ev *ev);
void ovni_ev_emit(struct ovni_ev *ev);
void ovni_ev_jumbo_emit(struct ovni_ev *ev, const uint8_t *buf, uint32_t bufsize);
void ovni_flush(void);

/* ---- CPUs ---- */

void ovni_add_cpu(int index, int phyid);

/* ---- attributes (stream.json, dotted keys) ---- */

int ovni_attr_has(const char *key);
void ovni_attr_set_double(const char *key, double num);
void ovni_attr_set_boolean(const char *key, int value);
void ovni_attr_set_str(const char *key, const char *value);
void ovni_attr_set_json(const char *key, const char *json);
double ovni_attr_get_double(const char *key);
int ovni_attr_get_boolean(const char *key);
const char *ovni_attr_get_str(const char *key);
char *ovni_attr_get_json(const char *key);
void ovni_attr_flush(void);

/* ---- marks ---- */

enum ovni_mark_flags {
	OVNI_MARK_STACK = 1, /* values are pushed and popped, not set */
};

void ovni_mark_type(int32_t type, long flags, const char *title);
void ovni_mark_label(int32_t type, int64_t value, const char *label);
void ovni_mark_push(int32_t type, int64_t value);
void ovni_mark_pop(int32_t type, int64_t value);
void ovni_mark_set(int32_t type, int64_t value);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

#endif /* OVNI_H */
