/* SPDX-License-Identifier: MIT */
/*
 * settings.c - libovni's settings, in one place (docs/runtime.md,
 * "Settings"): every WEFT_* variable is a row of one table (its name and
 * its parser). ovni_proc_init reads them all once (rt_settings_read): for
 * each row, the value given by weft_rt_set() if any, else the environment.
 * A new setting is a new row, a field of struct rt_settings and, where it
 * matters, a cross-check in rt_settings_read.
 *
 * weft_rt_set() checks its value at once with the same parser (a bad value
 * stops the program with the variable's own message) and keeps a copy
 * for ovni_proc_init; it is refused once the process is initialized.
 */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

/* ---- parsers: 0, or -1 with the message in err ---- */

#define ERR_MAX 1024

static int fail(char *err, const char *fmt, ...) RT_PRINTF(2, 3);
static int fail(char *err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, ERR_MAX, fmt, ap);
	va_end(ap);
	return -1;
}

/* Decimal digits only, at most max; 0 if bad (with *ok 0). */
static unsigned long long parse_decimal(const char *v, unsigned long long max, int *ok)
{
	unsigned long long n = 0;
	*ok = v[0] != '\0';
	for (const char *p = v; *ok && *p != '\0'; p++) {
		if (*p < '0' || *p > '9' || n > max) {
			*ok = 0;
			break;
		}
		n = n * 10u + (unsigned long long) (*p - '0');
	}
	if (n > max)
		*ok = 0;
	return n;
}

static int parse_bufsize(const char *v, struct rt_settings *s, char *err)
{
	int ok;
	unsigned long long n = parse_decimal(v, RT_BUFSIZE_MAX, &ok);
	if (!ok || n < RT_BUFSIZE_MIN)
		return fail(err, "WEFT_BUFSIZE='%s' is not a buffer size in bytes between %llu and %llu", v,
			    RT_BUFSIZE_MIN, RT_BUFSIZE_MAX);
	s->bufsize = (size_t) n;
	return 0;
}

static int parse_flush_ms(const char *v, struct rt_settings *s, char *err)
{
	int ok;
	unsigned long long n = parse_decimal(v, RT_FLUSH_MS_MAX, &ok);
	if (!ok)
		return fail(err, "WEFT_FLUSH_MS='%s' is not an age in milliseconds between 0 (off) and %llu", v,
			    RT_FLUSH_MS_MAX);
	s->flush_ns = (uint64_t) n * 1000000ull;
	return 0;
}

/* Bytes with an optional K, M or G suffix (powers of 1024); 0 if bad. */
static unsigned long long parse_ring_bytes(const char *v)
{
	unsigned long long n = 0;
	const char *p = v;
	if (*p < '0' || *p > '9')
		return 0;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (n > RT_RING_MAX)
			return 0;
		n = n * 10u + (unsigned long long) (*p - '0');
	}
	unsigned shift = 0;
	switch (*p) {
	case '\0': break;
	case 'k': case 'K': shift = 10; p++; break;
	case 'm': case 'M': shift = 20; p++; break;
	case 'g': case 'G': shift = 30; p++; break;
	default: return 0;
	}
	if (*p != '\0' || n > (RT_RING_MAX >> shift))
		return 0;
	return n << shift;
}

static int parse_ring(const char *v, struct rt_settings *s, char *err)
{
	unsigned long long n = parse_ring_bytes(v);
	if (n < RT_RING_MIN || n > RT_RING_MAX)
		return fail(err,
			    "WEFT_RING='%s' is not a ring size (bytes, with an optional K, M or G suffix, from %lluK "
			    "to %lluG)",
			    v, RT_RING_MIN >> 10, RT_RING_MAX >> 30);
	s->ring_size = (size_t) n;
	return 0;
}

static int parse_ring_flush(const char *v, struct rt_settings *s, char *err)
{
	if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0)
		return fail(err, "WEFT_RING_FLUSH='%s' is not 'on' or 'off'", v);
	s->ring_flush = strcmp(v, "on") == 0;
	return 0;
}

struct sig_name {
	const char *name;
	int signo;
};

static const struct sig_name sig_names[] = {
	{"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"HUP", SIGHUP},   {"INT", SIGINT},
	{"QUIT", SIGQUIT}, {"TERM", SIGTERM}, {"ALRM", SIGALRM}, {"WINCH", SIGWINCH},
};

/* Signals libovni cannot take over: they cannot be caught, or WEFT_CRASH
 * uses them. */
static int reserved_signal(int s)
{
	return s == SIGKILL || s == SIGSTOP || s == SIGSEGV || s == SIGBUS || s == SIGILL || s == SIGFPE
	       || s == SIGABRT;
}

/* A signal name (with or without SIG) or number; 0 if bad. */
static int signal_number(const char *v)
{
	const char *name = strncmp(v, "SIG", 3) == 0 ? v + 3 : v;
	for (size_t i = 0; i < sizeof sig_names / sizeof sig_names[0]; i++)
		if (strcmp(name, sig_names[i].name) == 0)
			return sig_names[i].signo;
	int n = 0;
	if (*v == '\0')
		return 0;
	for (const char *p = v; *p != '\0'; p++) {
		if (*p < '0' || *p > '9' || n > SIGRTMAX)
			return 0;
		n = n * 10 + (*p - '0');
	}
	if (n < 1 || n > SIGRTMAX || reserved_signal(n))
		return 0;
	return n;
}

static int parse_ring_signal(const char *v, struct rt_settings *s, char *err)
{
	int signo = signal_number(v);
	if (signo == 0)
		return fail(err,
			    "WEFT_RING_SIGNAL='%s' is not a signal libovni can take (USR1, USR2, HUP, INT, QUIT, "
			    "TERM, ALRM, WINCH, with or without SIG, or a number other than those of SIGKILL, "
			    "SIGSTOP and the WEFT_CRASH signals)",
			    v);
	s->ring_signo = signo;
	return 0;
}

static int parse_crash(const char *v, struct rt_settings *s, char *err)
{
	if (strcmp(v, "flush") != 0)
		return fail(err, "WEFT_CRASH='%s' is not a crash mode (the only one is 'flush'; unset it for none)",
			    v);
	s->crash = 1;
	return 0;
}

static int parse_filter(const char *v, struct rt_settings *s, char *err)
{
	if (rt_filter_parse(v, &s->filter) != 0)
		return fail(err,
			    "WEFT_FILTER='%s' is not a filter (comma-separated rules, +P to keep or -P to drop the "
			    "events whose model, category and value start with P, 1 to 3 printable bytes, or * for "
			    "every event; at most %d rules, %d bytes)",
			    v, RT_FILTER_MAX_RULES, RT_FILTER_TEXT_MAX - 1);
	return 0;
}

static int parse_output(const char *v, struct rt_settings *s, char *err)
{
	if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0)
		return fail(err,
			    "WEFT_OUTPUT='%s' is not 'on' or 'off' (off: record the events as usual and write none, to "
			    "measure what recording alone costs)",
			    v);
	s->output_off = strcmp(v, "off") == 0;
	return 0;
}

static int parse_clock(const char *v, struct rt_settings *s, char *err)
{
	if (strcmp(v, "tsc") != 0 && strcmp(v, "monotonic") != 0)
		return fail(err, "WEFT_CLOCK='%s' is not a clock ('monotonic', the default, or 'tsc')", v);
	s->clock_tsc = strcmp(v, "tsc") == 0;
	return 0;
}

/* WEFT_SAMPLE_MS bound (one hour). */
#define SAMPLE_MS_MAX 3600000ull

static int parse_sample_ms(const char *v, struct rt_settings *s, char *err)
{
	int ok;
	unsigned long long n = parse_decimal(v, SAMPLE_MS_MAX, &ok);
	if (!ok)
		return fail(err, "WEFT_SAMPLE_MS='%s' is not a sampling period in milliseconds between 0 (off) and %llu",
			    v, SAMPLE_MS_MAX);
	s->sample_ns = (uint64_t) n * 1000000ull;
	return 0;
}

/* ---- the table ---- */

struct setting {
	const char *name;
	int (*parse)(const char *v, struct rt_settings *s, char *err);
};

/* In the order ovni_proc_init reports bad values. */
static const struct setting table[] = {
	{"WEFT_CRASH", parse_crash},
	{"WEFT_BUFSIZE", parse_bufsize},
	{"WEFT_FLUSH_MS", parse_flush_ms},
	{"WEFT_RING", parse_ring},
	{"WEFT_RING_FLUSH", parse_ring_flush},
	{"WEFT_RING_SIGNAL", parse_ring_signal},
	{"WEFT_FILTER", parse_filter},
	{"WEFT_OUTPUT", parse_output},
	{"WEFT_CLOCK", parse_clock},
	{"WEFT_SAMPLE_MS", parse_sample_ms},
};
#define NSETTINGS (sizeof table / sizeof table[0])

/* What weft_rt_set and weft_rt_filter_set were given (under mu). */
static struct {
	pthread_mutex_t mu;
	char *value[NSETTINGS];
	weft_rt_filter_fn filter_fn;
	void *filter_arg;
} calls = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void defaults(struct rt_settings *s)
{
	memset(s, 0, sizeof *s);
	s->bufsize = (size_t) OVNI_MAX_EV_BUF;
}

void rt_settings_read(const char *func, struct rt_settings *s)
{
	char err[ERR_MAX];
	defaults(s);
	pthread_mutex_lock(&calls.mu);
	for (size_t i = 0; i < NSETTINGS; i++) {
		const char *v = calls.value[i] != NULL ? calls.value[i] : getenv(table[i].name);
		if (v != NULL && table[i].parse(v, s, err) != 0)
			rt_die(func, "%s", err);
	}
	s->filter_fn = calls.filter_fn;
	s->filter_arg = calls.filter_arg;
	pthread_mutex_unlock(&calls.mu);
	/* WEFT_RING_FLUSH and WEFT_RING_SIGNAL mean nothing without WEFT_RING. */
	if (s->ring_size == 0) {
		s->ring_flush = 0;
		s->ring_signo = 0;
	}
	if (s->ring_size != 0 && s->flush_ns != 0)
		rt_die(func,
		       "WEFT_RING and WEFT_FLUSH_MS cannot be used together (a flight recorder writes only when "
		       "asked; unset one of them)");
	if (s->ring_size != 0 && s->sample_ns != 0)
		rt_die(func,
		       "WEFT_RING and WEFT_SAMPLE_MS cannot be used together (a flight recorder drops old events, "
		       "so the samples' event counts would not add up; unset one of them)");
}

static void check_not_started(const char *func)
{
	if (rt_proc_started())
		rt_die(func, "called after ovni_proc_init: the settings are read once, by ovni_proc_init");
}

int weft_rt_set(const char *name, const char *value)
{
	static const char func[] = "weft_rt_set";
	RT_KEEP_ERRNO;
	check_not_started(func);
	if (name == NULL)
		rt_die(func, "the setting name is NULL");
	size_t i = 0;
	while (i < NSETTINGS && strcmp(name, table[i].name) != 0)
		i++;
	if (i == NSETTINGS) {
		char known[ERR_MAX];
		size_t n = 0;
		for (size_t k = 0; k < NSETTINGS && n < sizeof known; k++)
			n += (size_t) snprintf(known + n, sizeof known - n, "%s%s", k ? ", " : "", table[k].name);
		rt_die(func, "'%s' is not a libovni setting (the settings are %s)", name, known);
	}
	char *copy = NULL;
	if (value != NULL) {
		char err[ERR_MAX];
		struct rt_settings scratch;
		defaults(&scratch);
		if (table[i].parse(value, &scratch, err) != 0)
			rt_die(func, "%s", err);
		copy = rt_strfmt(func, "%s", value);
	}
	pthread_mutex_lock(&calls.mu);
	free(calls.value[i]);
	calls.value[i] = copy;
	pthread_mutex_unlock(&calls.mu);
	return 0;
}

void weft_rt_filter_set(weft_rt_filter_fn fn, void *arg)
{
	static const char func[] = "weft_rt_filter_set";
	check_not_started(func);
	pthread_mutex_lock(&calls.mu);
	calls.filter_fn = fn;
	calls.filter_arg = fn != NULL ? arg : NULL;
	pthread_mutex_unlock(&calls.mu);
}

int weft_rt_sample_every(unsigned ms)
{
	char v[16];
	snprintf(v, sizeof v, "%u", ms);
	return weft_rt_set("WEFT_SAMPLE_MS", v);
}
