/* SPDX-License-Identifier: MIT */
/*
 * common/mcp-run: what an MCP host does with a tools/call besides handing it to eosd, shared by
 * the two hosts — eos-mcp over stdio (cli/eos-mcp-run.c) and eosd's /mcp endpoint
 * (supervisor/mcp-http-call.c) — so that both answer alike (doc/mcp.md, "Progress", "Cancel"):
 *
 *	eos_mcp_instructions	what initialize tells the client eos is;
 *	eos_mcp_run_check()	refuses what MCP cannot carry: events follow without a
 *				progressToken (its events would have nowhere to go);
 *	eos_mcp_event_text()	an event of eosd's stream as the message of notifications/progress
 *				("create_sandbox: import files 1200/3000 bytes 9830400/28675500",
 *				"event: {…}");
 *	struct eos_mcp_command	a command (an operation with yield_time_ms: exec_command,
 *				write_command_stdin) followed in steps of EOS_MCP_STEP_MS up to the
 *				yield the caller asked for. Each step that finds it running is a
 *				progress message; a cancel becomes "\u0003" (Ctrl-C) in the next
 *				step; the steps' outputs are joined, so that the result is what one
 *				reply with that yield would have been.
 *
 * Nothing here does I/O or locks: the host makes each request and passes its reply in.
 *
 * Calling sequence of a command:
 *	eos_mcp_command_begin(&cmd, args, now, &first);		→ the host calls op with first
 *	while (eos_mcp_command_next(&cmd, ok, reply, cancelled, now, &next, msg, n) > 0)
 *		→ progress msg when msg[0], then the host calls write_command_stdin with next
 *	result = eos_mcp_command_result(&cmd, &ok);		→ the call's result
 *	eos_mcp_command_release(&cmd);
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/catalog.h"
#include "common/error.h"
#include "common/mcp.h"

enum {
	EOS_MCP_STEP_MS = 500,		/* the longest a command's reply is waited for at once */
	EOS_MCP_CANCEL_YIELD_MS = 5000, /* for a command sent Ctrl-C to end */
};

/* initialize's instructions: what eos is and the usual flow of a session. */
extern const char eos_mcp_instructions[];

/* -EINVAL naming the problem when call asks for what MCP cannot carry, else 0. */
int eos_mcp_run_check(struct eos_mcp_call *call, struct eos_error *err);

/*
 * The progress message of event name (its data: JSON text) that eosd sent while running op:
 * a "progress" event as "op: phase files N/T bytes N/T", any other as "name: data". Caller
 * frees; NULL when out of memory.
 */
char *eos_mcp_event_text(const struct eos_op *op, const char *name, const char *data);

/* Whether op answers with a command's reply (it has yield_time_ms): followed in steps. */
bool eos_mcp_op_is_command(const struct eos_op *op);

/* A command followed in steps. Embedded; private fields. */
struct eos_mcp_command {
	int64_t deadline_ns; /* CLOCK_MONOTONIC: the yield the caller asked for */
	int max_out;	     /* the caller's max_output_bytes */
	struct eos_buf out;  /* the steps' outputs */
	bool truncated;	     /* a step's output was cut */
	json_t *doc;	     /* the last reply (owned) */
	bool ok;	     /* it was a success */
	bool cancel_sent;
};

/*
 * Begin following the command of args (the caller's, checked: yield_time_ms, max_output_bytes)
 * at now_ns. *ret_first: the first request's arguments, args with the yield cut to one step
 * (caller owns). -ENOMEM.
 */
int eos_mcp_command_begin(struct eos_mcp_command *m, const json_t *args, int64_t now_ns,
			  json_t **ret_first);
/*
 * A step's reply doc (stolen; ok: a success, else the error envelope) at now_ns. 0: the command
 * is done with (ended, its yield passed, a step failed, or the cancel sent); 1: another step
 * is due, *ret_next its write_command_stdin arguments (caller owns) and progress[n] the message
 * to send first ("" after a cancel). cancelled: the client cancelled the call, the next step
 * sends Ctrl-C and is the last. -ENOMEM.
 */
int eos_mcp_command_next(struct eos_mcp_command *m, bool ok, json_t *doc, bool cancelled,
			 int64_t now_ns, json_t **ret_next, char *progress, size_t n);
/* The call's result (caller owns; NULL before any reply): the last reply, outputs joined. */
json_t *eos_mcp_command_result(struct eos_mcp_command *m, bool *ret_ok);
/* Release m (its buffers and reply); idempotent. */
void eos_mcp_command_release(struct eos_mcp_command *m);
