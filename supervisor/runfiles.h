/* SPDX-License-Identifier: MIT */
/*
 * supervisor/runfiles: the files eosd keeps in its state directory while it runs:
 *	<state>/eosd.lock   flock()ed for eosd's whole life, holds its pid (one eosd per state dir)
 *	<state>/eosd.json   {"pid", "socket", "tcp", "runtime_dir", "version"}, written when ready
 *	                    (0600, atomic rename), removed at a clean exit
 * and its directory in the runtime directory (eos_default_runtime_dir(), shared by every eosd
 * of the user): <runtime>/<key>/, key the first EOSD_RUNTIME_KEY_LEN hex digits of the SHA-256
 * of the state directory's real path, holding eosd.sock and sessions/. Two eosd of different
 * state directories never share a file there; an eosd of the same one finds the same path.
 */
#pragma once

#include "common/error.h"

enum {
	EOSD_RUNTIME_KEY_LEN = 16,
};

/* mkdir -p path, the directories made with mode 0700. */
int eosd_runfiles_mkdirs(const char *path, struct eos_error *err);
/*
 * Take <state>/eosd.lock and write our pid in it. -EBUSY naming the state directory and the
 * pid of the eosd holding it; a holder that is exiting (a SIGKILLed eosd whose last threads
 * have not gone yet) is waited for, up to 10 s. Once the lock is ours, an eosd.json left by a
 * killed eosd is removed. *ret_fd keeps the lock: close it last.
 */
int eosd_runfiles_lock(const char *state_dir, int *ret_fd, struct eos_error *err);
/*
 * eosd's runtime directory for state_dir (a real path): <runtime>/<key> (see above). Caller
 * owns *ret. -ENOENT when there is no runtime directory (no $HOME-less fallback is missing: see
 * eos_default_runtime_dir()).
 */
int eosd_runfiles_runtime_dir(const char *state_dir, char **ret, struct eos_error *err);
/*
 * The default socket, <runtime_dir>/eosd.sock. -ENAMETOOLONG naming it and the ways out when it
 * is longer than a Unix socket's path may be (107 bytes). Caller owns *ret.
 */
int eosd_runfiles_socket(const char *runtime_dir, char **ret, struct eos_error *err);
/* Write <state>/eosd.json (tcp may be NULL): a temporary file of this pid, fsync, rename. */
int eosd_runfiles_write(const char *state_dir, const char *socket, const char *tcp,
			const char *runtime_dir, struct eos_error *err);
/* Remove <state>/eosd.json. */
void eosd_runfiles_remove(const char *state_dir);
