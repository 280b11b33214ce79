/* SPDX-License-Identifier: MIT */
/*
 * threads.c - the system part of the engine: thread states, the CPU each
 * thread runs on, and the CPU's running thread (R(C)), with the records of
 * the system Paraver types (thread 2, 4, 6; CPU 1, 2, 3).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "emu_internal.h"

/* ---- system channels ---- */

/* A thread system channel: a repeated value is refused when `refuse`,
 * ignored otherwise; a second write in one event is refused. */
static int tsys_write(struct emu *e, size_t t, uint32_t chan, int64_t *cur, uint64_t *stamp,
		int64_t v, int refuse, const char *what)
{
	if (*cur == v) {
		if (refuse)
			return emu_fail(e, "%s of thread %s set again to the value it has (%" PRId64 ")",
					what, emu_tname(e, t), v);
		return 0;
	}
	if (*stamp == e->seq)
		return emu_fail(e, "%s of thread %s written twice in one event", what, emu_tname(e, t));
	*stamp = e->seq;
	*cur = v;
	return emu_rec(e, EMU_FILE_THREAD, t, chan, v);
}

static int cpu_write(struct emu *e, size_t c, uint32_t chan, int64_t *cur, uint64_t *stamp,
		int64_t v, const char *what)
{
	if (*cur == v)
		return 0;
	if (*stamp == e->seq)
		return emu_fail(e, "%s of %s written twice in one event", what, emu_cname(e, c));
	*stamp = e->seq;
	*cur = v;
	return emu_rec(e, EMU_FILE_CPU, c, chan, v);
}

static void cpu_busy(struct emu *e, size_t c, int64_t before)
{
	struct cpu *C = &e->cpu[c];
	if (before == 0 && C->nrun > 0)
		C->busy_since = e->dclock;
	else if (before > 0 && C->nrun == 0)
		C->busy += e->dclock - C->busy_since;
}

/* U(C): the CPU's running thread, tid, pid and count. */
static int cpu_update(struct emu *e, size_t c, size_t cause)
{
	struct cpu *C = &e->cpu[c];
	const struct emu_sys_cpu *sc = &e->sys->cpus[c];
	if (!sc->is_virtual && C->nrun >= 2) {
		size_t other = (size_t) (C->run_sum - (int64_t) cause);
		return emu_fail(e, "two Running threads on physical %s (%s and %s)", emu_cname(e, c),
				other < e->nthreads ? emu_tname(e, other) : "?", emu_tname(e, cause));
	}
	int64_t r = C->nrun == 1 ? C->run_sum : -1;
	int64_t tid = r >= 0 ? e->thr[r].tid : 0;
	int64_t pid = r >= 0 ? e->thr[r].pid : 0;
	if (cpu_write(e, c, EMU_BT(EMU_BI_CPU_TID), &C->tidv, &C->st_tid, tid, "running tid") != 0)
		return -1;
	if (cpu_write(e, c, EMU_BT(EMU_BI_CPU_PID), &C->pidv, &C->st_pid, pid, "running pid") != 0)
		return -1;
	if (C->rsel != r) {
		if (C->st_rsel == e->seq)
			return emu_fail(e, "running thread of %s written twice in one event", emu_cname(e, c));
		C->st_rsel = e->seq;
		C->rsel = r;
		if (emu_irec(e, EMU_REC_RSEL, c, 0, r, 0) != 0 ||
				emu_qpush(e, TRIG_RSEL, c, 0) != 0)
			return -1;
	}
	if (!C->nrun_written || C->nrun_v != C->nrun) {
		if (C->st_nrun == e->seq)
			return emu_fail(e, "running count of %s written twice in one event", emu_cname(e, c));
		C->st_nrun = e->seq;
		C->nrun_written = 1;
		C->nrun_v = C->nrun;
		if (emu_rec(e, EMU_FILE_CPU, c, EMU_BT(EMU_BI_CPU_COUNT), C->nrun) != 0 ||
				emu_irec(e, EMU_REC_NRUN, c, 0, C->nrun, 0) != 0)
			return -1;
	}
	return 0;
}

static void cpu_add(struct emu *e, size_t t, int sign)
{
	struct thr *T = &e->thr[t];
	if (T->cpu < 0 || T->state != EMU_ST_RUNNING)
		return;
	struct cpu *C = &e->cpu[T->cpu];
	int64_t before = C->nrun;
	C->nrun += sign;
	C->run_sum += sign * (int64_t) t;
	cpu_busy(e, (size_t) T->cpu, before);
}

static int state_write(struct emu *e, size_t t, enum emu_state to)
{
	struct thr *T = &e->thr[t];
	if (T->st_state == e->seq)
		return emu_fail(e, "state of thread %s written twice in one event", emu_tname(e, t));
	T->st_state = e->seq;
	if (T->state != EMU_ST_UNKNOWN)
		T->time[T->state] += e->dclock - T->since;
	T->since = e->dclock;
	int was_running = T->state == EMU_ST_RUNNING;
	int running = to == EMU_ST_RUNNING;
	if (was_running && !running)
		cpu_add(e, t, -1);
	T->state = to;
	if (!was_running && running)
		cpu_add(e, t, +1);
	if (emu_rec(e, EMU_FILE_THREAD, t, EMU_BT(EMU_BI_STATE), to) != 0)
		return -1;
	return emu_qpush(e, TRIG_STATE, t, 0);
}

static int resolve_cpu(struct emu *e, size_t loom, int64_t index, size_t *out)
{
	const struct emu_loom *L = &e->sys->looms[loom];
	if (index == -1) {
		*out = L->vcpu;
		return 0;
	}
	if (index < 0 || (uint64_t) index >= L->nphys)
		return emu_fail(e, "CPU index %" PRId64 " does not exist in loom %s "
				"(indices 0..%zu, -1 for the virtual CPU)", index, L->name,
				L->nphys ? L->nphys - 1 : 0);
	*out = L->cpu_by_index[index];
	return 0;
}

static int join_cpu(struct emu *e, size_t t, size_t c)
{
	e->thr[t].cpu = (int64_t) c;
	cpu_add(e, t, +1);
	return cpu_update(e, c, t);
}

static int leave_cpu(struct emu *e, size_t t)
{
	size_t c = (size_t) e->thr[t].cpu;
	cpu_add(e, t, -1);
	e->thr[t].cpu = NO_CPU;
	return cpu_update(e, c, t);
}

static int aff_write(struct emu *e, size_t t, int64_t v)
{
	struct thr *T = &e->thr[t];
	return tsys_write(e, t, EMU_BT(EMU_BI_AFFINITY), &T->aff, &T->st_aff, v, 1, "CPU affinity");
}

static int tid_write(struct emu *e, size_t t)
{
	struct thr *T = &e->thr[t];
	int64_t v = emu_is_active(T->state) ? T->tid : 0;
	return tsys_write(e, t, EMU_BT(EMU_BI_TID), &T->tidv, &T->st_tid, v, 0, "active tid");
}


static void list_states(char *buf, size_t len, unsigned mask)
{
	size_t n = 0, k = 0, total = 0;
	buf[0] = '\0';
	for (int s = 0; s < EMU_NSTATES; s++)
		total += (mask >> s) & 1u;
	for (int s = 0; s < EMU_NSTATES; s++) {
		if (!(mask & EMU_STM(s)))
			continue;
		const char *sep = k == 0 ? "" : (k + 1 == total ? " or " : ", ");
		n += (size_t) snprintf(buf + n, len > n ? len - n : 0, "%s%s", sep, emu_state_name(s));
		k++;
	}
}

int emu_act_start(struct emu *e, size_t t, const struct emu_action *a)
{
	struct thr *T = &e->thr[t];
	int64_t idx;
	int isnull;
	if (emu_get_val(e, &a->val, &idx, &isnull) != 0)
		return -1;
	if (T->state == EMU_ST_RUNNING)
		return emu_fail(e, "thread %s is already Running", emu_tname(e, t));
	if (T->cpu >= 0)
		return emu_fail(e, "thread %s is %s and already has %s", emu_tname(e, t),
				emu_state_name(T->state), emu_cname(e, (size_t) T->cpu));
	size_t c = 0;
	if (resolve_cpu(e, T->loom, idx, &c) != 0)
		return -1;
	if (aff_write(e, t, (int64_t) c + 1) != 0 || state_write(e, t, EMU_ST_RUNNING) != 0 ||
			tid_write(e, t) != 0)
		return -1;
	return join_cpu(e, t, c);
}

int emu_act_state(struct emu *e, size_t t, const struct emu_action *a)
{
	struct thr *T = &e->thr[t];
	/* a thread that lost events, in the unknown state: the event sets it */
	if (!(a->from & EMU_STM(T->state)) &&
			!(e->lossy != NULL && e->lossy[t] && T->state == EMU_ST_UNKNOWN)) {
		char allowed[128];
		list_states(allowed, sizeof allowed, a->from);
		return emu_fail(e, "thread %s is %s, but %s needs it %s", emu_tname(e, t),
				emu_state_name(T->state), e->cur_desc->what, allowed);
	}
	if (state_write(e, t, a->to) != 0 || tid_write(e, t) != 0)
		return -1;
	if (T->cpu < 0)
		return 0;
	if (a->to == EMU_ST_DEAD) {
		if (leave_cpu(e, t) != 0)
			return -1;
		return aff_write(e, t, 0);
	}
	return cpu_update(e, (size_t) T->cpu, t);
}

int emu_act_aff_self(struct emu *e, size_t t, const struct emu_action *a)
{
	struct thr *T = &e->thr[t];
	int64_t idx;
	int isnull;
	if (emu_get_val(e, &a->val, &idx, &isnull) != 0)
		return -1;
	/* a thread that lost events, active but on a CPU not known: it joins */
	int join = T->cpu < 0 && e->lossy != NULL && e->lossy[t] && emu_is_active(T->state);
	if (T->cpu < 0 && !join)
		return emu_fail(e, "thread %s has no CPU (it is %s)", emu_tname(e, t), emu_state_name(T->state));
	if (!emu_is_active(T->state))
		return emu_fail(e, "thread %s is %s, but an affinity change needs it Running, "
				"Cooling or Warming", emu_tname(e, t), emu_state_name(T->state));
	size_t c = 0;
	if (resolve_cpu(e, T->loom, idx, &c) != 0)
		return -1;
	if (join) {
		if (join_cpu(e, t, c) != 0)
			return -1;
		return T->aff == (int64_t) c + 1 ? 0 : aff_write(e, t, (int64_t) c + 1);
	}
	if ((int64_t) c == T->cpu)
		return 0;
	if (leave_cpu(e, t) != 0 || join_cpu(e, t, c) != 0)
		return -1;
	return aff_write(e, t, (int64_t) c + 1);
}

int emu_act_aff_remote(struct emu *e, size_t t, const struct emu_action *a)
{
	struct thr *T = &e->thr[t];
	int64_t idx, tid;
	int isnull;
	if (emu_get_val(e, &a->val, &idx, &isnull) != 0 || emu_get_val(e, &a->arg, &tid, &isnull) != 0)
		return -1;
	/* The target: in the emitter's process, then in the rest of its loom. */
	const struct emu_sys *sys = e->sys;
	size_t target = SIZE_MAX;
	const struct emu_proc *P = &sys->procs[T->proc];
	for (size_t i = 0; i < P->nthreads && target == SIZE_MAX; i++)
		if (sys->threads[P->thread_first + i].tid == tid)
			target = P->thread_first + i;
	const struct emu_loom *L = &sys->looms[T->loom];
	for (size_t p = L->proc_first; p < L->proc_first + L->nprocs && target == SIZE_MAX; p++) {
		const struct emu_proc *Q = &sys->procs[p];
		for (size_t i = 0; i < Q->nthreads; i++)
			if (sys->threads[Q->thread_first + i].tid == tid) {
				target = Q->thread_first + i;
				break;
			}
	}
	if (target == SIZE_MAX)
		return emu_fail(e, "no thread with tid %" PRId64 " in loom %s", tid, L->name);
	struct thr *S = &e->thr[target];
	if (S->state == EMU_ST_UNKNOWN || S->state == EMU_ST_DEAD)
		return emu_fail(e, "target thread %s is %s", emu_tname(e, target), emu_state_name(S->state));
	if (S->cpu < 0)
		return emu_fail(e, "target thread %s has no CPU", emu_tname(e, target));
	size_t c = 0;
	if (resolve_cpu(e, T->loom, idx, &c) != 0)
		return -1;
	if (leave_cpu(e, target) != 0 || join_cpu(e, target, c) != 0)
		return -1;
	return aff_write(e, target, (int64_t) c + 1);
}


int emu_thread_forget(struct emu *e, size_t t)
{
	struct thr *T = &e->thr[t];
	if (T->cpu >= 0 && leave_cpu(e, t) != 0)
		return -1;
	if (T->state != EMU_ST_UNKNOWN && state_write(e, t, EMU_ST_UNKNOWN) != 0)
		return -1;
	if (tid_write(e, t) != 0)
		return -1;
	return T->aff != 0 ? aff_write(e, t, 0) : 0;
}
