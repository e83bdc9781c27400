#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# A full disk through a mounted session (TAP; issue 9, item 5): the store alone on a 64 MiB tmpfs,
# one session mounted with eosfs's default options. Writing into the view until it is refused
# gives ENOSPC, never a crash or EIO: eosfs keeps serving, the view's df says the space is gone,
# names and directories can still be made, and rm frees space so that writing works again. With
# the filesystem filled from outside below the store's hard reserve, new names are refused with
# ENOSPC and leave nothing behind, while rm still works. Once the space is back everything works
# again; after the unmount fsck (the session's data files included) is clean and the session
# publishes exactly what the view showed. As root the script runs in a mount namespace of its
# own, then again as the unprivileged user in a user namespace.

# Helpers below only run through `check`, which shellcheck cannot follow.
# shellcheck disable=SC2317

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=fs-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/fs-lib.sh"
# shellcheck source=small-fs.sh
source "$(dirname "${BASH_SOURCE[0]}")/small-fs.sh"

small_fs_reexec "$@"
require_eos_store
tap_tmpdir
fs_require
small_fs_create "$T/fs" 64m
S=$T/fs/store
M=$T/mnt

alive() {
	kill -0 "$(cat "$M.pid")" 2>/dev/null
}

# Run a shell command line in the view; $rc and $err as run() sets them.
in_view() {
	run bash -c "$1"
}

expect_enospc() {
	expect_rc_match 1 err "No space left on device" "$@"
}

setup() {
	mkdir -p "$T/src/dir"
	printf 'lower %s\n' one >"$T/src/dir/one.txt"
	printf 'lower %s\n' two >"$T/src/two.txt"
	head -c $((2 << 20)) /dev/urandom >"$T/src/big.bin"
	run eos_store --store "$S" import "$T/src" --sandbox full
	expect_rc 0 "import the base onto the small filesystem"
	check "mount a session" fs_mount "$M" "$S" full s1
}

# Wait (up to 20 s) until the view's df shows at least $1 bytes available.
wait_for_room() {
	local i
	for ((i = 0; i < 200; i++)); do
		(($(stat -f -c '%a * %S' "$M") >= $1)) && return 0
		sleep 0.1
	done
	return 1
}

test_fill_through_view() {
	in_view "dd if=/dev/zero of='$M/fill' bs=1M count=200 status=none"
	expect_enospc "a 200 MiB write into the view stops with ENOSPC"
	check "eosfs is still serving after ENOSPC" alive
	check "the acknowledged part of the write is readable" test -s "$M/fill"
	in_view "dd if=/dev/zero of='$M/more' bs=64k count=1000 status=none"
	expect_enospc "small writes go on up to the reserve, then get ENOSPC too"
	check "the view's df shows no room for data" \
		test "$(stat -f -c '%a' "$M")" -lt $((2 << 20 >> 12))
	check "ls works on a full view" ls -la "$M" "$M/dir"
	check "a lower file reads on a full view" grep -q 'lower one' "$M/dir/one.txt"
	check "mkdir works above the hard reserve" mkdir "$M/newdir"
	check "chmod works above the hard reserve" chmod 0700 "$M/two.txt"
	check "rm of the big file works" rm "$M/fill"
	check "rm of a lower file works" rm "$M/big.bin"
	# close(2) returns before the kernel releases the file (FUSE sends RELEASE after it): the
	# view frees a removed file's data when the release comes
	check "the space of the removed files comes back" wait_for_room $((2 << 20))
	in_view "head -c 1048576 /dev/urandom >'$M/newdir/after.bin' && cp '$M/newdir/after.bin' '$T/after.bin'"
	expect_rc 0 "after rm, a 1 MiB write works again"
	check "the new file reads back" cmp "$M/newdir/after.bin" "$T/after.bin"
	rm -f "$M/more"
}

test_below_hard_reserve() {
	small_fs_fill "$T/fs" 65536 || bail_out "cannot fill '$T/fs'"
	in_view "mkdir '$M/refused'"
	expect_enospc "below the hard reserve, mkdir fails with ENOSPC"
	check "the refused directory does not exist" not test -e "$M/refused"
	in_view "echo data >'$M/refused.txt'"
	expect_enospc "below the hard reserve, a new file fails with ENOSPC"
	check "the refused file does not exist" not test -e "$M/refused.txt"
	check "rm works at any fill level" rm "$M/dir/one.txt"
	check "the removed name is gone" not test -e "$M/dir/one.txt"
	check "eosfs is still serving below the hard reserve" alive
	small_fs_unfill "$T/fs"
	check "with the space back, mkdir works" mkdir "$M/refused"
	in_view "echo data >'$M/refused/ok.txt'"
	expect_rc 0 "with the space back, writes work"
}

test_publish_after() {
	check "unmount" fs_umount "$M"
	run eos_store --store "$S" --json fsck
	expect_rc 0 "fsck is clean, the session's data files included"
	check "fsck checked the session" test "$(json_get 'd["sessions"]' <<<"$out")" = 1
	run eos_store --store "$S" publish --sandbox full --session s1
	expect_rc 0 "the session publishes"
	eos_store --store "$S" cat --sandbox full newdir/after.bin >"$T/published.bin"
	check "the head has the file written after rm" cmp "$T/published.bin" "$T/after.bin"
	run eos_store --store "$S" stat --sandbox full big.bin
	expect_rc 1 "the head no longer has the removed lower file"
	run eos_store --store "$S" stat --sandbox full refused/ok.txt
	expect_rc 0 "the head has the file made once the space was back"
	run eos_store --store "$S" stat --sandbox full refused.txt
	expect_rc 1 "the head has no trace of the refused file"
}

setup
test_fill_through_view
test_below_hard_reserve
test_publish_after
rerun_as_test_user "$0"
tap_done
