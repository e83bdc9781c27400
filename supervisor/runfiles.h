/* SPDX-License-Identifier: MIT */
/*
 * supervisor/runfiles: the files eosd keeps in its state directory while it runs:
 *	<state>/eosd.lock   flock()ed for eosd's whole life, holds its pid (one eosd per state dir)
 *	<state>/eosd.json   {"pid", "socket", "tcp", "version"}, written when ready (0600, atomic
 *	                    rename), removed at a clean exit
 */
#pragma once

#include "common/error.h"

/* mkdir -p path, the directories made with mode 0700. */
int eosd_runfiles_mkdirs(const char *path, struct eos_error *err);
/*
 * Take <state>/eosd.lock and write our pid in it. -EBUSY naming the state directory and the
 * pid of the eosd holding it; a holder that is exiting (a SIGKILLed eosd whose last threads
 * have not gone yet) is waited for, up to 10 s. Once the lock is ours, an eosd.json left by a
 * killed eosd is removed. *ret_fd keeps the lock: close it last.
 */
int eosd_runfiles_lock(const char *state_dir, int *ret_fd, struct eos_error *err);
/* Write <state>/eosd.json (tcp may be NULL): a temporary file of this pid, fsync, rename. */
int eosd_runfiles_write(const char *state_dir, const char *socket, const char *tcp,
			struct eos_error *err);
/* Remove <state>/eosd.json. */
void eosd_runfiles_remove(const char *state_dir);
