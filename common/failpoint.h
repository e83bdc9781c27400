/* SPDX-License-Identifier: MIT */
/*
 * Failpoints for crash and atomicity tests (compiled in with --enable-failpoints only).
 *
 *	r = EOS_FAILPOINT("commit.before_write");
 *	if (r < 0)
 *		return r;
 *
 * A failpoint fires when its name is armed, either by eos_failpoint_arm() (tests in-process) or
 * through the EOS_FAILPOINTS environment variable, a comma-separated list of `name` (fail with
 * -EIO), `name=errno-number`, `name=kill` (SIGKILL the process, for crash tests) or
 * `name=wait:PATH` (hold the calling thread: create PATH.waiting, then wait until PATH exists and
 * go on as if disarmed; for tests that need a request in flight at a known point). Without
 * --enable-failpoints EOS_FAILPOINT() is the constant 0 and costs nothing.
 */
#pragma once

#ifdef EOS_FAILPOINTS
/* Return 0, or the armed negative errno; never returns when armed with "kill". Thread-safe. */
int eos_failpoint_check(const char *name);
/* Arm name to fail with code (negative errno), or 0 to disarm. Copies name. */
int eos_failpoint_arm(const char *name, int code);
/* Arm name to hold its callers until path exists, as "name=wait:PATH" does. Copies both. */
int eos_failpoint_arm_wait(const char *name, const char *path);
/* Disarm everything (including the environment's list). */
void eos_failpoint_reset(void);
/* Number of times name was checked since the last reset (armed or not). */
unsigned eos_failpoint_hits(const char *name);
#define EOS_FAILPOINT(name)	eos_failpoint_check(name)
#define EOS_FAILPOINTS_COMPILED 1
#else
#define EOS_FAILPOINT(name)	0
#define EOS_FAILPOINTS_COMPILED 0
#endif
