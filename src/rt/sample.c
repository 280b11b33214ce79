/* SPDX-License-Identifier: MIT */
/*
 * sample.c - sampling (WEFT_SAMPLE_MS, weft_rt_sample_every,
 * weft_rt_sample_register, weft_rt_sample_now; docs/runtime.md,
 * "Sampling"): the counters that do not live in the emit path (the
 * thread's CPU time, the hardware counters, the program's registered
 * counters) and the registry of the latter. emit.c records a sample: the
 * buffer's own counters, then these, as events of the "sample" model
 * (src/model/sample/sample.yaml).
 *
 * The registry is an array filled once per slot: a slot is written, then
 * published by a release store of the count, so that a sample (on any
 * thread, possibly in a signal handler) reads it without a lock.
 */
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "rt_internal.h"

#define NAME_MAX_LEN 63

static struct {
	pthread_mutex_t mu; /* writers only */
	uint32_t n;         /* published slots (atomic) */
	struct {
		char name[NAME_MAX_LEN + 1];
		char unit[NAME_MAX_LEN + 1];
		weft_rt_sample_fn fn;
		void *arg;
	} slot[WEFT_RT_SAMPLE_MAX_REGISTERED];
} reg = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* The hardware counters could not be opened: said once per process. */
static int perf_warned;

static int valid_label(const char *s)
{
	if (s == NULL || s[0] == '\0' || strlen(s) > NAME_MAX_LEN)
		return 0;
	for (const char *p = s; *p != '\0'; p++)
		if (*p < 0x20 || *p > 0x7e || *p == '"' || *p == '\\')
			return 0;
	return 1;
}

int weft_rt_sample_register(const char *name, const char *unit, weft_rt_sample_fn fn, void *arg)
{
	static const char func[] = "weft_rt_sample_register";
	RT_KEEP_ERRNO;
	if (!valid_label(name))
		rt_die(func, "the counter name '%s' is not 1 to %d printable bytes (no quote, no backslash)",
		       name != NULL ? name : "(null)", NAME_MAX_LEN);
	if (!valid_label(unit))
		rt_die(func, "the unit '%s' of counter '%s' is not 1 to %d printable bytes (no quote, no backslash)",
		       unit != NULL ? unit : "(null)", name, NAME_MAX_LEN);
	if (fn == NULL)
		rt_die(func, "the function of counter '%s' is NULL", name);
	pthread_mutex_lock(&reg.mu);
	uint32_t i = __atomic_load_n(&reg.n, __ATOMIC_RELAXED);
	if (i >= WEFT_RT_SAMPLE_MAX_REGISTERED) {
		pthread_mutex_unlock(&reg.mu);
		rt_die(func, "cannot register counter '%s': the %d registered counters are taken", name,
		       WEFT_RT_SAMPLE_MAX_REGISTERED);
	}
	snprintf(reg.slot[i].name, sizeof reg.slot[i].name, "%s", name);
	snprintf(reg.slot[i].unit, sizeof reg.slot[i].unit, "%s", unit);
	reg.slot[i].fn = fn;
	reg.slot[i].arg = arg;
	__atomic_store_n(&reg.n, i + 1u, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&reg.mu);
	return (int) i;
}

void weft_rt_sample_now(void)
{
	rt_emit_sample_now("weft_rt_sample_now");
}

static int perf_open(uint64_t config)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof a);
	a.type = PERF_TYPE_HARDWARE;
	a.size = sizeof a;
	a.config = config;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	/* This thread, any CPU. */
	long fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	return fd < 0 ? -1 : (int) fd;
}

void rt_sample_thread_init(const char *func, struct rt_thread *th)
{
	th->perf_fd[0] = -1;
	th->perf_fd[1] = -1;
	if (th->sample_ns != 0)
		rt_sample_start(func, th);
}

/* The events in the first th->wbytes bytes of events of stream.obs, read
 * back (a first weft_rt_sample_now after the buffer was written). */
static uint64_t count_written(const char *func, const struct rt_thread *th)
{
	int fd = open(th->obs_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		rt_die_errno(func, errno, "cannot read back the stream file '%s' to count its events", th->obs_path);
	enum { CHUNK = 65536 };
	uint8_t *chunk = malloc(CHUNK);
	if (chunk == NULL)
		rt_die(func, "out of memory to count the events of '%s'", th->obs_path);
	uint64_t pos = WEFT_OBS_HEADER_SIZE, end = WEFT_OBS_HEADER_SIZE + th->wbytes, n = 0;
	while (pos < end) {
		size_t want = end - pos < CHUNK ? (size_t) (end - pos) : CHUNK;
		ssize_t r = pread(fd, chunk, want, (off_t) pos);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < (ssize_t) WEFT_EV_HEADER_SIZE && (uint64_t) r < end - pos)
			rt_die(func, "cannot read back the stream file '%s' at byte %llu to count its events",
			       th->obs_path, (unsigned long long) pos);
		size_t i = 0, got = (size_t) r;
		/* whole headers only (a jumbo's with its size field) */
		while (i + WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD <= got
		       || (i + WEFT_EV_HEADER_SIZE <= got && !weft_ev_is_jumbo(chunk[i]))) {
			i += rt_ev_stored_size(chunk + i);
			n++;
		}
		if (i == 0)
			rt_die(func, "the stream file '%s' ends inside an event at byte %llu", th->obs_path,
			       (unsigned long long) pos);
		pos += i;
	}
	free(chunk);
	close(fd);
	return n;
}

void rt_sample_start(const char *func, struct rt_thread *th)
{
	if (th->sampling)
		return;
	th->sampling = 1;
	/* Events written before counting started: read back from the file
	 * (with WEFT_OUTPUT=off there is none: the count starts here). */
	th->cnt_off = th->wbytes;
	th->cnt_events = th->wbytes > 0 && !th->output_off ? count_written(func, th) : 0;
	/* The stream's events need the model. */
	if (json_object_set_new(th->require, RT_SAMPLE_MODEL, json_string(RT_SAMPLE_MODEL_VERSION)) != 0)
		rt_die(func, "out of memory for the metadata of '%s'", th->json_path);
	int err = 0;
	th->perf_fd[0] = perf_open(PERF_COUNT_HW_CPU_CYCLES);
	if (th->perf_fd[0] < 0)
		err = errno;
	else if ((th->perf_fd[1] = perf_open(PERF_COUNT_HW_INSTRUCTIONS)) < 0)
		err = errno;
	if (th->perf_fd[1] < 0 && th->perf_fd[0] >= 0) {
		close(th->perf_fd[0]);
		th->perf_fd[0] = -1;
	}
	if (th->perf_fd[0] < 0 && __atomic_exchange_n(&perf_warned, 1, __ATOMIC_RELAXED) == 0)
		fprintf(stderr,
			"libovni: warning: sampling: no cycle and instruction counters (perf_event_open: %s; "
			"see /proc/sys/kernel/perf_event_paranoid): the samples go without them\n",
			strerror(err));
}

void rt_sample_thread_free(struct rt_thread *th)
{
	for (int i = 0; i < 2; i++)
		if (th->perf_fd[i] >= 0) {
			close(th->perf_fd[i]);
			th->perf_fd[i] = -1;
		}
}

static size_t put_val(struct rt_sample_val *out, size_t n, char cat, char val, uint64_t v)
{
	if (n >= RT_SAMPLE_MAX)
		return n;
	out[n].mcv[0] = RT_SAMPLE_BYTE;
	out[n].mcv[1] = cat;
	out[n].mcv[2] = val;
	out[n].v = v;
	return n + 1u;
}

size_t rt_sample_collect(const struct rt_thread *th, struct rt_sample_val *out, size_t n)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
		n = put_val(out, n, 'C', 'c', (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec);
	if (th->perf_fd[0] >= 0) {
		uint64_t cyc = 0, ins = 0;
		if (read(th->perf_fd[0], &cyc, sizeof cyc) == (ssize_t) sizeof cyc
		    && read(th->perf_fd[1], &ins, sizeof ins) == (ssize_t) sizeof ins) {
			n = put_val(out, n, 'C', 'y', cyc);
			n = put_val(out, n, 'C', 'i', ins);
		}
	}
	uint32_t nreg = __atomic_load_n(&reg.n, __ATOMIC_ACQUIRE);
	for (uint32_t i = 0; i < nreg; i++)
		n = put_val(out, n, 'R', (char) ('0' + i), reg.slot[i].fn(reg.slot[i].arg));
	return n;
}

json_t *rt_sample_json(const char *func, const struct rt_thread *th)
{
	if (!th->sampling)
		return NULL;
	json_t *o = json_object();
	json_t *c = json_array();
	if (o == NULL || c == NULL)
		rt_die(func, "out of memory for the metadata of '%s'", th->json_path);
	json_object_set_new(o, "period_ms", json_integer((json_int_t) (th->sample_ns / 1000000u)));
	json_object_set_new(o, "hardware", json_boolean(th->perf_fd[0] >= 0));
	uint32_t nreg = __atomic_load_n(&reg.n, __ATOMIC_ACQUIRE);
	for (uint32_t i = 0; i < nreg; i++) {
		json_t *e = json_object();
		if (e == NULL)
			rt_die(func, "out of memory for the metadata of '%s'", th->json_path);
		json_object_set_new(e, "name", json_string(reg.slot[i].name));
		json_object_set_new(e, "unit", json_string(reg.slot[i].unit));
		json_array_append_new(c, e);
	}
	json_object_set_new(o, "counters", c);
	return o;
}
