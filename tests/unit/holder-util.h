/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the holder's tests (test-holder*.c): spawn a real eos-holder through eosd's client
 * over a plain directory as the view, run commands to their end, wait for events. They fail
 * the test (ck_assert) on anything unexpected; waits are bounded only by Check's timeout.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/buf.h"

#include "supervisor/holder-client.h"

/* The plan of a namespace session with a shared network over view (seccomp built once). */
void ht_plan_init(struct eosd_holder_plan *p, const char *view);
/* Spawn and wait until ready (or fail the test with the holder's message). */
struct eosd_holder *ht_spawn(const struct eosd_holder_plan *p);
/* A view: a fresh directory under /tmp, mode 0755 (removed at exit of the test process). */
char *ht_view(void);

/* An exec of cmd with pipes and the tests' environment (PATH, HOME, TERM). */
struct eosd_holder_exec ht_exec(const char *cmd);

/* Block for the next event (the holder's fd polled). */
void ht_next(struct eosd_holder *h, struct eosd_holder_event *ev);
/* Block for the next event of kind (events of other kinds are released and skipped). */
void ht_wait(struct eosd_holder *h, enum eosd_holder_event_kind kind, struct eosd_holder_event *ev);

/* A command run to its end (GONE or EXEC_FAILED). */
struct ht_result {
	struct eos_buf out, err; /* stdout and stderr, or the pty's output in out */
	bool failed;		 /* EXEC_FAILED */
	int error;
	char message[512];
	enum eosd_holder_exit how;
	int code;
	bool lost;
	pid_t subreaper, shell; /* host pids */
};

/* Run x as cmd id; input (NULL: none) goes to its stdin (pipe or pty), then its end. */
void ht_run(struct eosd_holder *h, uint32_t id, const struct eosd_holder_exec *x, const char *input,
	    struct ht_result *r);
void ht_result_release(struct ht_result *r);
/* Run cmd (pipes); the exit code (128 + signal). stdout + stderr of the last call: ht_output. */
int ht_sh(struct eosd_holder *h, const char *cmd);
const char *ht_output(void);

/* Read from fd (blocking) until needle shows up in what was read; fails at its end. */
void ht_read_until(int fd, const char *needle, struct eos_buf *acc);
/* A pidfd for pid (host), or fail. Readable once the process has ended. */
int ht_pidfd(pid_t pid);
/* Wait until the process of pidfd has ended. */
void ht_wait_pidfd(int pidfd);
/* Whether the process of pidfd has ended, now. */
bool ht_pidfd_ended(int pidfd);
/* The path of a built program: $top_builddir/rel. Static buffer. */
const char *ht_built(const char *rel);
