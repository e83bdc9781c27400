#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# A change of mode, owner, times or size that returned survives a SIGKILL of eosfs (TAP; doc/fs.md,
# "Persistence"): such a change of an upper node is a journal record, not a store write, until
# the next checkpoint. A session is mounted with eosfs's default options; files are created and
# written, then changed as tar and cp -p change what they extract (chown as root, chmod, times to
# the nanosecond), a directory and a symlink too, and a lower file is changed twice (its first
# change is its copy-up); files are truncated and rewritten with O_TRUNC, lower and upper. eosfs is SIGKILLed at once; after a remount every change is there, and
# again after a clean unmount and one more mount; fsck is clean and a publish carries the modes.
# As root, the same runs again as the unprivileged user.

# Helpers below only run through `check`, which shellcheck cannot follow.
# shellcheck disable=SC2317

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=fs-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/fs-lib.sh"

require_eos_store
tap_tmpdir
fs_require
S=$T/store
M=$T/mnt

# What the checks compare: mode, owner, mtime, atime and ctime (nanoseconds) of each changed path.
attrs() {
	local p
	for p in tar.txt dir link lower.txt mixed.txt trunc.txt lower2.txt trunc2.txt; do
		stat -c "$p %a %u:%g %y %x %z" "$M/$p" || return 1
	done
}

change_everything() {
	printf 'extracted\n' >"$M/tar.txt" &&
		if ((EUID == 0)); then chown 1234:5678 "$M/tar.txt"; fi &&
		chmod 0751 "$M/tar.txt" &&
		touch -m -d @1500000000.000000007 "$M/tar.txt" &&
		touch -a -d @1400000000.000000005 "$M/tar.txt" &&
		mkdir "$M/dir" && chmod 0700 "$M/dir" && touch -m -d @1600000000 "$M/dir" &&
		ln -s tar.txt "$M/link" && touch -h -m -d @1300000000.25 "$M/link" &&
		chmod 0600 "$M/lower.txt" && chmod 0640 "$M/lower.txt" &&
		printf 'mixed\n' >"$M/mixed.txt" && chmod 0604 "$M/mixed.txt" &&
		printf 'more\n' >>"$M/mixed.txt" &&
		printf 'abcdefghij' >"$M/trunc.txt" && truncate -s 4 "$M/trunc.txt" &&
		printf 'rewritten\n' >"$M/lower2.txt" && printf 'again\n' >"$M/trunc2.txt" &&
		printf 'over\n' >"$M/trunc2.txt"
}

# The sizes and bytes of the truncated files.
contents() {
	local p
	for p in trunc.txt lower2.txt trunc2.txt; do
		printf '%s %s %s\n' "$p" "$(stat -c %s "$M/$p")" "$(od -An -c "$M/$p" | tr -s ' ')"
	done
}

mkdir -p "$T/src"
printf 'lower\n' >"$T/src/lower.txt"
printf 'lower two, longer than what replaces it\n' >"$T/src/lower2.txt"
check "import a base" fs_import "$S" attrs "$T/src"
check "mount a session" fs_mount "$M" "$S" attrs s1
check "create, write and change mode, owner and times" change_everything
want=$(attrs)
want_contents=$(contents)
check "trunc.txt is 4 bytes before the kill" grep -q '^trunc.txt 4 ' <<<"$want_contents"
check "the mode of tar.txt is 751 before the kill" grep -q '^tar.txt 751 ' <<<"$want"

check "SIGKILL eosfs; the dead mount is gone" fs_kill "$M"
check "mount the session again" fs_mount "$M" "$S" attrs s1
expect_output "$want" "after the SIGKILL every acknowledged change of mode, owner and times is there" \
	attrs
check "the contents are there too" grep -qx more "$M/mixed.txt"
check "truncated and rewritten files hold their last bytes" test "$(contents)" = "$want_contents"
check "unmount cleanly" fs_umount "$M"
check "mount once more" fs_mount "$M" "$S" attrs s1
expect_output "$want" "the same after a clean unmount and a mount (the replay was checkpointed)" \
	attrs
check "unmount" fs_umount "$M"
fs_fsck_publish "$S" attrs s1
run eos_store --store "$S" stat --sandbox attrs tar.txt
check "the head has tar.txt with mode 0751" grep -q '751' <<<"$out"

rerun_as_test_user "${BASH_SOURCE[0]}"
tap_done
