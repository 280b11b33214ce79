/* SPDX-License-Identifier: MIT */
/*
 * cli_stop.c - the stop signals of the commands that write files (weft emu,
 * weft view): the first SIGINT, SIGTERM or SIGHUP asks the run to stop (the
 * driver reads cli_stop_sig before each batch and removes its temporaries),
 * a second one ends the program at once.
 */
#include <signal.h>

#include "cli_common.h"

volatile sig_atomic_t cli_stop_sig;

/* The flag is stored and read atomically (lock-free: safe in a handler),
 * since the handler runs in any thread and weft emu -j's workers and merge
 * read it in others. */
static void on_stop(int sig)
{
	if (__atomic_load_n(&cli_stop_sig, __ATOMIC_RELAXED) != 0) {
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	__atomic_store_n(&cli_stop_sig, sig, __ATOMIC_RELAXED);
}

void cli_arm_stop(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	cli_catch_stop(on_stop, sigs, sizeof sigs / sizeof sigs[0]);
}

const char *cli_stop_name(int sig)
{
	return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "SIGHUP";
}
