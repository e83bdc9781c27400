/* SPDX-License-Identifier: MIT */
/*
 * eos-mcp: the MCP server over stdio (doc/mcp.md). Private to cli/eos-mcp*.c.
 *
 *	main (eos-mcp.c)        the command line; one line of stdin at a time into common/mcp.h,
 *	                        whose messages go to stdout, one line each
 *	eos_mcp_host_run()      (eos-mcp-run.c) one tools/call on a thread of its own: the
 *	                        operation over eosd's gateway with eosctl's client (cli/eosctl.h),
 *	                        progress, and a cancel as Ctrl-C for a running command
 *
 * Locking: host->lock guards host->mcp (every eos_mcp_*() call) and stdout; the threads of the
 * calls take it for a moment to send progress and to finish, never while they wait for eosd.
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>

#include "common/mcp.h"

#include "cli/eosctl.h"

struct eos_mcp_host {
	pthread_mutex_t lock;
	pthread_cond_t idle;	   /* signalled when a call finishes */
	pthread_mutex_t open_lock; /* serializes finding (and autostarting) eosd */
	struct eos_mcp *mcp;	   /* under lock */
	struct eosctl_cmd cmd;	   /* state_dir, url, token_file for every session (read-only) */
	FILE *out;		   /* stdout, under lock */
	bool closing; /* stdin ended: a call that never ends by itself is let go (under lock) */
	bool gone;    /* stdout failed: nothing more is written (under lock) */
};

/* Start call on a thread of its own (the start callback of common/mcp.h; under host->lock). */
void eos_mcp_host_start(void *host, struct eos_mcp_call *call);
