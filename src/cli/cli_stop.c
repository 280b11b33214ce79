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

static void on_stop(int sig)
{
	if (cli_stop_sig != 0) {
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	cli_stop_sig = sig;
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
