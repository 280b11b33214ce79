/* SPDX-License-Identifier: MIT */
/*
 * cli_mpi.c - weft-mpi's weft emu --mpi: the ranks' collectives with MPI
 * (struct weft_ranks, driver.h) around weft_emulate_ranks (cli_mpi.h).
 */
#include <limits.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_common.h"
#include "cli_mpi.h"
#include "driver.h"

struct mctx {
	int rank, n;
};

/* Waits for every rank to reach the next collective with 1 ms sleeps, not
 * by spinning in it: a rank that is done early (or every rank while rank 0
 * alone makes a serial run) leaves the CPU to those still working, also
 * when ranks share cores. */
static void quiet_wait(void)
{
	MPI_Request rq;
	int done = 0;
	MPI_Ibarrier(MPI_COMM_WORLD, &rq);
	for (;;) {
		MPI_Test(&rq, &done, MPI_STATUS_IGNORE);
		if (done)
			return;
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
}

/* Every rank's bytes, to every rank (all) or to rank 0: the lengths first,
 * then the bytes in one call, or, beyond INT_MAX bytes in all (MPI counts
 * and displacements are ints), in rounds of at most INT_MAX bytes in all
 * (WEFT_MPI_ROUND sets a smaller bound, for the tests). */
static void xgather(struct mctx *m, int all, const void *buf, size_t len, uint8_t **out,
		size_t *lens)
{
	const char *rb = getenv("WEFT_MPI_ROUND");
	uint64_t round = rb != NULL && atoll(rb) > 0 && atoll(rb) < INT_MAX
		? (uint64_t) atoll(rb) : (uint64_t) INT_MAX;
	size_t n = (size_t) m->n;
	uint64_t mine = len, *ls = calloc(n, sizeof *ls);
	int *cnt = calloc(n, sizeof *cnt), *dsp = calloc(n, sizeof *dsp);
	if (ls == NULL || cnt == NULL || dsp == NULL)
		MPI_Abort(MPI_COMM_WORLD, 1);
	quiet_wait();
	MPI_Allgather(&mine, 1, MPI_UINT64_T, ls, 1, MPI_UINT64_T, MPI_COMM_WORLD);
	uint64_t total = 0, most = 0;
	for (size_t r = 0; r < n; r++) {
		lens[r] = (size_t) ls[r];
		total += ls[r];
		most = ls[r] > most ? ls[r] : most;
	}
	int recv = all || m->rank == 0;
	uint8_t *dst = recv ? malloc((size_t) total + 1) : NULL;
	if (recv && dst == NULL)
		MPI_Abort(MPI_COMM_WORLD, 1);
	if (total <= round) {
		/* one round, straight into place */
		int at = 0;
		for (size_t r = 0; r < n; r++) {
			cnt[r] = (int) ls[r];
			dsp[r] = at;
			at += cnt[r];
		}
		if (all)
			MPI_Allgatherv(buf, cnt[m->rank], MPI_BYTE, dst, cnt, dsp, MPI_BYTE,
					MPI_COMM_WORLD);
		else
			MPI_Gatherv(buf, cnt[m->rank], MPI_BYTE, dst, cnt, dsp, MPI_BYTE, 0,
					MPI_COMM_WORLD);
		free(ls);
		free(cnt);
		free(dsp);
		*out = dst;
		return;
	}
	size_t chunk = (size_t) round / n > 0 ? (size_t) round / n : 1;
	uint8_t *tmp = recv ? malloc((most < chunk ? (size_t) most : chunk) * n + 1) : NULL;
	if (recv && tmp == NULL)
		MPI_Abort(MPI_COMM_WORLD, 1);
	for (uint64_t done = 0; done < most || done == 0; done += chunk) {
		int at = 0;
		for (size_t r = 0; r < n; r++) {
			uint64_t left = ls[r] > done ? ls[r] - done : 0;
			cnt[r] = (int) (left < chunk ? left : chunk);
			dsp[r] = at;
			at += cnt[r];
		}
		const uint8_t *from = (const uint8_t *) buf + (mine > done ? done : 0);
		if (all)
			MPI_Allgatherv(from, cnt[m->rank], MPI_BYTE, tmp, cnt, dsp, MPI_BYTE,
					MPI_COMM_WORLD);
		else
			MPI_Gatherv(from, cnt[m->rank], MPI_BYTE, tmp, cnt, dsp, MPI_BYTE, 0,
					MPI_COMM_WORLD);
		uint64_t off = 0;
		for (size_t r = 0; r < n && recv; r++) {
			if (cnt[r] > 0)
				memcpy(dst + off + done, tmp + dsp[r], (size_t) cnt[r]);
			off += ls[r];
		}
		if (most == 0)
			break;
	}
	free(tmp);
	free(ls);
	free(cnt);
	free(dsp);
	*out = dst;
}

static void m_allgather(void *ctx, const void *buf, size_t len, uint8_t **all, size_t *lens)
{
	xgather(ctx, 1, buf, len, all, lens);
}

static void m_gather0(void *ctx, const void *buf, size_t len, uint8_t **all, size_t *lens)
{
	xgather(ctx, 0, buf, len, all, lens);
}

int cli_emu_mpi(const struct weft_emulate_opts *o, int local, int *rank)
{
	int inited = 0;
	MPI_Initialized(&inited);
	if (!inited && MPI_Init(NULL, NULL) != MPI_SUCCESS) {
		fprintf(stderr, "weft emu: --mpi: MPI_Init failed\n");
		return 1;
	}
	struct mctx m;
	MPI_Comm_rank(MPI_COMM_WORLD, &m.rank);
	*rank = m.rank;
	MPI_Comm_size(MPI_COMM_WORLD, &m.n);
	struct weft_ranks rk = { m.rank, m.n, local, &m, m_allgather, m_gather0 };
	struct weft_emulate_opts ro = *o;
	ro.progress = NULL;
	char err[WEFT_ERR_MAX];
	int who = 0;
	int code = weft_emulate_ranks(&ro, &rk, err, sizeof err, &who);
	if (code != 0 && m.rank == 0) {
		if (code > 128 && cli_stop_sig != 0)
			fprintf(stderr, "weft emu: interrupted by %s; nothing written (the files of "
					"an earlier run are left as they were)\n",
					cli_stop_name(cli_stop_sig));
		else
			fprintf(stderr, "weft emu: rank %d: %s\n", who, err);
	}
	MPI_Finalize();
	return code;
}
