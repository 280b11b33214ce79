/* SPDX-License-Identifier: MIT */
/*
 * cpu.c - ovni_add_cpu: the loom CPUs, recorded in the calling thread's
 * ovni.loom_cpus (written at once, so that a run killed later still has
 * its CPUs on disk: rt_meta_touch).
 */
#include "obs_format.h"
#include "rt_internal.h"

void ovni_add_cpu(int index, int phyid)
{
	static const char func[] = "ovni_add_cpu";
	RT_KEEP_ERRNO;
	struct rt_thread *th = rt_thread_get(func);
	if (index < 0)
		rt_die(func, "the CPU index %d is negative", index);
	if (phyid < 0)
		rt_die(func, "the physical id %d of CPU %d is negative", phyid, index);
	if (th->loom_cpus == NULL) {
		th->loom_cpus = json_array();
		if (th->loom_cpus == NULL)
			rt_die(func, "out of memory for the CPU list of '%s'", th->json_path);
	}
	json_t *cpu = json_object();
	if (cpu == NULL || json_object_set_new(cpu, WEFT_KEY_CPU_INDEX, json_integer(index)) != 0
	    || json_object_set_new(cpu, WEFT_KEY_CPU_PHYID, json_integer(phyid)) != 0
	    || json_array_append_new(th->loom_cpus, cpu) != 0)
		rt_die(func, "out of memory for the CPU list of '%s'", th->json_path);
	rt_meta_touch(func, th);
}
