/* SPDX-License-Identifier: MIT */
/* common/statedir: where eos keeps its state when the caller does not say. */
#pragma once

/*
 * The default store directory: $EOS_STORE, else $EOS_STATE_DIR/store, else (root without
 * $XDG_DATA_HOME) /var/lib/eos/store, else $XDG_DATA_HOME/eos/store, else
 * $HOME/.local/share/eos/store. Caller owns *ret.
 * -ENOENT when none of these variables is set.
 */
int eos_default_store_dir(char **ret);
/*
 * The eos state directory (stores, sessions, tokens): $EOS_STATE_DIR, else (root without
 * $XDG_DATA_HOME) /var/lib/eos, else ${XDG_DATA_HOME:-$HOME/.local/share}/eos. Caller owns
 * *ret. -ENOENT when nothing names one.
 */
int eos_default_state_dir(char **ret);

/*
 * The eos runtime directory (eosd's socket, the session views' mount points; DESIGN §2):
 * $EOS_RUNTIME_DIR, else (root without $XDG_RUNTIME_DIR) /run/eos, else $XDG_RUNTIME_DIR/eos,
 * else /tmp/eos-<uid>. Caller owns *ret. Creating it (mode 0700) is the caller's job.
 */
int eos_default_runtime_dir(char **ret);
