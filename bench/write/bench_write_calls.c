/* SPDX-License-Identifier: MIT */
/*
 * bench_write_calls - the floor of bench_write made through the calls that
 * the ovni API makes per event, in a shared library of its own: the
 * floor's clock read, its 12-byte store and its write(2) when the buffer is
 * full, each behind a function called through the PLT as a program calls
 * libovni's (bwc_clock_now, bwc_ev_set_clock, bwc_ev_set_mcv, bwc_ev_emit,
 * the shapes of ovni_clock_now, ovni_ev_set_clock, ovni_ev_set_mcv and
 * ovni_ev_emit). What this side costs beyond the floor is what the API's
 * calls cost; what libovni costs beyond it is libovni's own work.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_write_calls.h"

#define EV_SIZE 12u

/* The thread's buffer (as libovni: initial-exec TLS). */
struct bwc_thread {
	uint8_t *buf;
	size_t size, pos;
	int fd;
	unsigned long writes;
};

static _Thread_local struct bwc_thread bwc __attribute__((tls_model("initial-exec")));

static void write_full(int fd, const uint8_t *p, size_t len)
{
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			fprintf(stderr, "bench_write (child): write: %s\n", strerror(errno));
			_exit(1);
		}
		p += w;
		len -= (size_t) w;
	}
}

void bwc_thread_init(int fd, uint8_t *buf, size_t size)
{
	bwc = (struct bwc_thread){buf, size, 0, fd, 0};
}

unsigned long bwc_thread_fini(void)
{
	if (bwc.pos > 0) {
		write_full(bwc.fd, bwc.buf, bwc.pos);
		bwc.writes++;
		bwc.pos = 0;
	}
	return bwc.writes;
}

uint64_t bwc_clock_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

void bwc_ev_set_clock(struct ovni_ev *ev, uint64_t clock)
{
	ev->header.clock = clock;
}

void bwc_ev_set_mcv(struct ovni_ev *ev, const char *mcv)
{
	ev->header.model = (uint8_t) mcv[0];
	ev->header.category = (uint8_t) mcv[1];
	ev->header.value = (uint8_t) mcv[2];
}

void bwc_ev_emit(struct ovni_ev *ev)
{
	if (bwc.pos + EV_SIZE > bwc.size) {
		write_full(bwc.fd, bwc.buf, bwc.pos);
		bwc.writes++;
		bwc.pos = 0;
	}
	uint8_t *p = bwc.buf + bwc.pos;
	p[0] = ev->header.flags;
	p[1] = ev->header.model;
	p[2] = ev->header.category;
	p[3] = ev->header.value;
	uint64_t c = ev->header.clock;
	memcpy(p + 4, &c, sizeof c);
	bwc.pos += EV_SIZE;
}
