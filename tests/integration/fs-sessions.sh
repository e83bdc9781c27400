#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Workspace sessions through eosfs: several sessions served by one process stay isolated from
# each other and from the published tree, writes are attributed to the operation named by
# EOS_OPERATION (else to the session), SIGTERM unmounts cleanly, the delta survives a restart,
# eos-store shows and removes sessions, a failed start-up leaves no session behind, and eos-store
# waits for an eosfs that is shutting down (but not for one that serves).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/fs-lib.sh"

require_eos_store
tap_tmpdir
fs_require

S=$T/store
A=$T/a
B=$T/b

setup() {
	mkdir -p "$T/base/src" "$A" "$B"
	printf 'one\ntwo\n' >"$T/base/src/f.txt"
	printf 'keep\n' >"$T/base/keep.txt"
	fs_import "$S" sb "$T/base" || bail_out "import failed"
}

# Field $1 of the delta row of path $2 (session $3), from eos-store delta --json.
delta_field() {
	eos_store --store "$S" --json delta --sandbox sb "$3" |
		json_get "[c for c in d['changes'] if c['path'] == '$2'][0]$1"
}

two_sessions() {
	run "$EOSFS_BIN" --store "$S" --sandbox sb --session "a:$A" --session "b:$B" \
		--pid-file "$T/eosfs.pid"
	expect_rc 0 "one eosfs serves sessions a and b"
	fs_mounts+=("$A" "$B")
	check "a is mounted" fs_wait_mounted "$A" 1
	check "b is mounted" fs_wait_mounted "$B" 1
}

test_isolation() {
	printf 'ONE\ntwo\n' >"$A/src/f.txt"
	mkdir "$A/new"
	rm "$A/keep.txt"
	check "a sees its edit" grep -qx ONE "$A/src/f.txt"
	check "b still sees the base content" grep -qx one "$B/src/f.txt"
	check "b does not see a's new directory" not test -e "$B/new"
	check "b still has the file a deleted" test -f "$B/keep.txt"
	echo b-only >"$B/b.txt"
	check "a does not see b's new file" not test -e "$A/b.txt"
}

test_provenance() {
	EOS_OPERATION=req-91 sh -c "printf 'tail\n' >>'$A/src/f.txt'"
	printf 'x\n' >"$A/new/plain.txt"
}

test_store_owned() {
	run eos_store --store "$S" ls
	expect_rc_match 1 err "in use by pid $(cat "$T/eosfs.pid")" \
		"eos-store is refused while eosfs owns the store, naming its pid"
	check "... at once: a serving eosfs is not waited for" not grep -q waiting <<<"$err"
}

test_sigterm() {
	local pid i
	pid=$(cat "$T/eosfs.pid")
	kill -TERM "$pid"
	for ((i = 0; i < 200; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	check "SIGTERM stops eosfs" not kill -0 "$pid" 2>/dev/null
	check "SIGTERM unmounted a" not fs_is_mounted "$A"
	check "SIGTERM unmounted b" not fs_is_mounted "$B"
}

test_published_unchanged() {
	run eos_store --store "$S" cat --sandbox sb src/f.txt
	check "the published file is unchanged" test "$out" = $'one\ntwo'
	run eos_store --store "$S" ls --sandbox sb
	check "the published tree still has keep.txt" grep -q keep.txt <<<"$out"
}

test_delta() {
	run eos_store --store "$S" --json sessions --sandbox sb
	check "eos-store lists both sessions" test \
		"$(json_get '[s["name"] for s in d["sessions"]]' <<<"$out")" = '["a", "b"]'
	check "a's edit is a put" test "$(delta_field "['change']" src/f.txt a)" = put
	check "a's deletion is listed" test "$(delta_field "['change']" keep.txt a)" = delete
	check "bytes written under EOS_OPERATION belong to that operation" test \
		"$(delta_field "['writes'][-1]['owner']" src/f.txt a)" = operation:req-91
	check "other writes belong to the session" test \
		"$(delta_field "['writes'][0]['owner']" src/f.txt a)" = workspace_session:a
	check "a plain write belongs to the session" test \
		"$(delta_field "['writes'][0]['owner']" new/plain.txt a)" = workspace_session:a
}

test_resume() {
	fs_mount "$A" "$S" sb a || bail_out "remount of a failed"
	check "a's edit survived the restart" test "$(cat "$A/src/f.txt")" = $'ONE\ntwo\ntail'
	check "a's deletion survived the restart" not test -e "$A/keep.txt"
	check "unmount a" fs_umount "$A"
}

test_remove() {
	run eos_store --store "$S" rm-session --sandbox sb b
	expect_rc 0 "rm-session removes b"
	run eos_store --store "$S" --json sessions --sandbox sb
	check "b is gone" test "$(json_get '[s["name"] for s in d["sessions"]]' <<<"$out")" = '["a"]'
	fs_mount "$B" "$S" sb b || bail_out "mount of a new b failed"
	check "a new session b starts from the published tree" not test -e "$B/b.txt"
	check "unmount b" fs_umount "$B"
}

# The sessions of sandbox sb (names, space-separated) and its leases.
sessions_and_leases() {
	eos_store --store "$S" --json sessions --sandbox sb | json_get '" ".join(s["name"] for s in d["sessions"])'
	eos_store --store "$S" --json leases --sandbox sb | json_get '" ".join(l["name"] for l in d["leases"])'
}

# A start-up that fails changes nothing: no session, no lease, no mount.
test_failed_startup() {
	local before
	before=$(sessions_and_leases)
	mkdir -p "$T/full" "$T/empty"
	: >"$T/full/x"
	run "$EOSFS_BIN" --store "$S" --sandbox sb --session n1 "$T/missing"
	expect_rc_match 1 err "$T/missing" "eosfs with a missing mount point fails naming it"
	run "$EOSFS_BIN" --store "$S" --sandbox sb --session n1 "$T/full"
	expect_rc_match 1 err "not empty" "eosfs with a non-empty mount point fails"
	run "$EOSFS_BIN" --store "$S" --sandbox sb --session "n1:$T/empty" --session "n2:$T/missing"
	expect_rc_match 1 err "$T/missing" "eosfs fails when any of its mount points is missing"
	check "... and mounted none of them" not fs_is_mounted "$T/empty"
	run "$EOSFS_BIN" --store "$S" --sandbox sb --session n1 -o no_such_fuse_option "$T/empty"
	expect_rc_match 1 err no_such_fuse_option "eosfs with a bad FUSE option fails naming it"
	run "$EOSFS_BIN" --store "$S" --sandbox nosb --session n1 "$T/empty"
	expect_rc_match 1 err nosb "eosfs with a missing sandbox fails naming it"
	check "the failed start-ups left no session and no lease" \
		test "$(sessions_and_leases)" = "$before"
}

# An eosfs whose mounts are gone but which has not finished yet is waited for; here a file held
# open across a lazy unmount keeps it alive for as long as the test wants.
test_wait_for_shutdown() {
	local pid waiter i
	fs_mount "$A" "$S" sb a || bail_out "mount of a failed"
	pid=$(cat "$A.pid")
	exec 7<"$A/src/f.txt"
	fusermount3 -uz "$A"
	check "a lazily unmounted view leaves the mount table" not fs_is_mounted "$A"
	run env EOS_STORE_WAIT=0.1 "$EOS_STORE_BIN" --store "$S" ls
	expect_rc_match 1 err "in use by pid $pid, which did not finish closing it" \
		"after its wait, eos-store fails naming the eosfs that holds on"
	check "... and said that it was waiting" grep -q "being closed by pid $pid: waiting" <<<"$err"
	# (without fd 7, or the waiter itself would keep eosfs alive)
	EOS_STORE_WAIT=60 "$EOS_STORE_BIN" --store "$S" ls >"$T/wait.out" 2>"$T/wait.err" 7<&- &
	waiter=$!
	track_pid "$waiter"
	for ((i = 0; i < 200; i++)); do
		grep -q waiting "$T/wait.err" || ! kill -0 "$waiter" 2>/dev/null && break
		sleep 0.05
	done
	check "eos-store waits for the eosfs that is shutting down" grep -q waiting "$T/wait.err"
	exec 7<&-
	wait "$waiter"
	check "... and opens the store once it has gone" test "$?" = 0 -a -s "$T/wait.out"
	fs_mount "$A" "$S" sb a || bail_out "mount of a failed"
	fusermount3 -u "$A"
	run eos_store --store "$S" ls
	expect_rc_match 0 out sb "eos-store right after fusermount3 -u opens the store"
}

setup
two_sessions
test_isolation
test_provenance
test_store_owned
test_sigterm
test_published_unchanged
test_delta
test_resume
test_remove
test_failed_startup
test_wait_for_shutdown
rerun_as_test_user "${BASH_SOURCE[0]}"
tap_done
