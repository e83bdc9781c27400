#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Crash test of the session view (TAP, issue 9 item 1): a write that returned survives a SIGKILL
# of eosfs. A base tree (small files of 16-byte lines, a 3 MB file of lines, directories) is
# imported and one session mounted (default options). Each round, five writers run at once, each
# in its own subtree and with EOS_OPERATION set to its name (crash-view.py):
#   w1 new files (create, write in several calls, some > 256 KiB, some fsynced, close; some saved
#      editor-style: written under a temp name, renamed into place), w2 one file held open and
#      appended to / overwritten, never closed or fsynced, w3 imported small files opened r+,
#      whole lines overwritten, closed, truncated and extended, w4 the 3 MB imported file held
#      open and written in the middle (partial copy-up) and at the end, w5 mkdir, rmdir, rename
#      (files, directories, lower directories), unlink, chmod, symlink, link, truncate.
# Each applies every operation that returned to a model directory and logs it. After a random
# delay (0.1-1.5 s) eosfs is SIGKILLed; the writers stop at their next call; the dead mount is
# unmounted, fsck must be clean, the session is mounted again and every subtree must equal the
# model: bytes, names, kinds, modes, symlink targets, hard links. The one operation a writer had
# in flight may have taken effect or not (a write: each byte old or new, the size old or new).
# The next round writes on in the same session. At the end: clean unmount, fsck, publish, the
# head must equal the model (export dir onto the base) with the model's hard-link groups, and
# blame must give every line written by writer wN to operation:wN and every imported line to
# original. As root, the whole scenario runs again as the unprivileged user, with half the kills.
#
# Environment: EOS_CRASH_VIEW_KILLS (rounds, one SIGKILL each; default 20), EOS_CRASH_VIEW_SEED
# (the writers' and delays' seed; default random, printed so that a failure can be replayed),
# EOS_CRASH_VIEW_SIGNAL (default KILL; TERM stops eosfs cleanly instead: a control run of the
# same checks, which any version must pass).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/fs-lib.sh"

require_eos_store
tap_tmpdir
fs_require

EOS_CRASH_VIEW_KILLS=${EOS_CRASH_VIEW_KILLS:-20}
EOS_CRASH_VIEW_SEED=${EOS_CRASH_VIEW_SEED:-$(((RANDOM << 15) | RANDOM))}
EOS_CRASH_VIEW_SIGNAL=${EOS_CRASH_VIEW_SIGNAL:-KILL}
export EOS_CRASH_VIEW_KILLS EOS_CRASH_VIEW_SEED EOS_CRASH_VIEW_SIGNAL
S=$T/store
M=$T/mnt
W=$T/work
HELPER=$top_srcdir/tests/integration/crash-view.py
# The interpreter itself, run without site (-S): a version manager's python3 shim and the
# site-packages it loads cost half a second per call; the helper needs only the standard library.
PYTHON=$(python3 -c 'import sys; print(sys.executable)') || bail_out "python3 does not run"
replay="EOS_CRASH_VIEW_SEED=$EOS_CRASH_VIEW_SEED EOS_CRASH_VIEW_KILLS=$EOS_CRASH_VIEW_KILLS"
[[ $EOS_CRASH_VIEW_SIGNAL == KILL ]] || replay+=" EOS_CRASH_VIEW_SIGNAL=$EOS_CRASH_VIEW_SIGNAL"

# Run crash-view.py SUBCOMMAND [ARGS]: its PASS/FAIL lines become TAP lines, DIAG lines
# diagnostics. A helper that dies (a traceback) fails the test and stops it.
helper() {
	local line status
	"$PYTHON" -S "$HELPER" --work "$W" --mnt "$M" --store "$S" --seed "$EOS_CRASH_VIEW_SEED" \
		--eos-store "$EOS_STORE_BIN" --signal "$EOS_CRASH_VIEW_SIGNAL" "$@" \
		>"$T/helper.out" 2>"$T/helper.err"
	status=$?
	while IFS= read -r line; do
		case $line in
		"PASS "*) ok "${line#PASS }" ;;
		"FAIL "*) not_ok "${line#FAIL }" ;;
		*) diag "${line#DIAG }" ;;
		esac
	done <"$T/helper.out"
	if ((status != 0)); then
		not_ok "crash-view.py $* exits 0 (exit status $status)"
		diag "$(cat "$T/helper.err")"
		bail_out "the helper failed; replay with $replay"
	fi
}

# fsck: exit 0 and 0 violations.
expect_fsck_clean() {
	run eos_store --store "$S" --json fsck
	if [[ $rc == 0 && $(json_get 'd["violations"]' <<<"$out" 2>/dev/null) == 0 ]]; then
		ok "$*"
	else
		not_ok "$*"
		show_run
	fi
}

# Unmount the mount of a killed eosfs (lazily when a writer still holds it; a SIGTERM unmounts).
umount_killed() {
	fs_is_mounted "$M" || return 0
	fusermount3 -u "$M" 2>/dev/null || fusermount3 -uz "$M" || return 1
	fs_wait_mounted "$M" 0
}

setup() {
	helper setup
	fs_import "$S" sb "$W/base" || bail_out "import of the base tree failed"
	fs_mount "$M" "$S" sb s || bail_out "mount of session s failed"
}

crash_rounds() {
	local round
	for ((round = 1; round <= EOS_CRASH_VIEW_KILLS; round++)); do
		helper round "$round"
		umount_killed || bail_out "round $round: the killed mount does not unmount ($replay)"
		expect_fsck_clean "round $round: fsck is clean after the SIG$EOS_CRASH_VIEW_SIGNAL"
		fs_mount "$M" "$S" sb s || bail_out "round $round: the remount failed ($replay)"
		helper verify "$round"
	done
}

publish_and_check() {
	helper tidy
	check "the session unmounts cleanly" fs_umount "$M"
	expect_fsck_clean "fsck is clean after the last round"
	run eos_store --store "$S" --json publish --sandbox sb --session s
	expect_rc 0 "the session publishes"
	helper final
}

diag "seed $EOS_CRASH_VIEW_SEED, $EOS_CRASH_VIEW_KILLS rounds ending in SIG$EOS_CRASH_VIEW_SIGNAL (uid $EUID)"
setup
crash_rounds
publish_and_check
EOS_CRASH_VIEW_KILLS=$(((EOS_CRASH_VIEW_KILLS + 1) / 2)) rerun_as_test_user "${BASH_SOURCE[0]}"
((tap_failures == 0)) || diag "replay with $replay"
tap_done
