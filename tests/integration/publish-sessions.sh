#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Publishing sessions through the real filesystem (TAP): two processes with EOS_OPERATION=op-a
# and op-b write different lines of one file in a mounted session, a third saves another file
# editor-style (temp file renamed over it); `eos-store publish` is refused while eosfs holds the
# store (naming its pid), then publishes one layer after the unmount, and `eos-store blame` shows
# each operation on the lines it wrote. `eos-store write` publishes one layer owned by its
# operation. Two sessions merging and a third rejected (JSON error of kind "conflict" listing the
# conflicts, exit status non-zero), retained, fixed and published on retry. A session that moves a
# directory publishes it with its unchanged children and its changes below; of three sessions
# renaming one directory to three names, only the first publishes (the others are rename
# conflicts naming both paths) and the head holds one copy. As root the whole
# script runs again as the unprivileged user (like fs-sessions.sh).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/fs-lib.sh"

require_eos_store
tap_tmpdir
fs_require

S=$T/store
M=$T/mnt

setup() {
	mkdir -p "$T/base/src" "$M"
	printf 'one\ntwo\n' >"$T/base/src/f.txt"
	printf 'a\nb\nc\n' >"$T/base/edit.txt"
	printf 'keep\n' >"$T/base/keep.txt"
	mkdir -p "$T/base/tree/sub"
	printf 't1\nt2\n' >"$T/base/tree/top.txt"
	printf 'x\n' >"$T/base/tree/sub/x"
	printf 'y\n' >"$T/base/tree/sub/y"
	mkdir -p "$T/base/linux/usb/host"
	printf 'core\n' >"$T/base/linux/usb/core.c"
	printf 'ehci\n' >"$T/base/linux/usb/host/ehci.c"
	printf 'readme\n' >"$T/base/linux/README"
	fs_import "$S" sb "$T/base" || bail_out "import failed"
}

# Owner of line $2 of path $1 at the head, from eos-store blame --json.
owner_of_line() {
	eos_store --store "$S" --json blame --sandbox sb "$1" | json_get "
[r['owner'] for r in d['ranges'] if r['start_line'] <= $2 < r['start_line'] + r['line_count']][0]"
}

# Number of retained layers.
layer_count() {
	eos_store --store "$S" --json log --sandbox sb | json_get 'len(d["layers"])'
}

# Field $1 of the JSON document in $out.
out_field() {
	json_get "$1" <<<"$out"
}

test_write_log_provenance() {
	fs_mount "$M" "$S" sb p || bail_out "mount of session p failed"
	EOS_OPERATION=op-a sh -c "printf 'l1\nl2\nl3\nl4\n' >'$M/new.txt'"
	EOS_OPERATION=op-b sh -c \
		"printf 'L3\n' | dd of='$M/new.txt' bs=1 seek=6 conv=notrunc status=none"
	EOS_OPERATION=op-c sh -c "printf 'a\nB\nc\n' >'$M/.edit.txt.tmp' &&
		mv '$M/.edit.txt.tmp' '$M/edit.txt'"
	check "the session sees both writes" test "$(cat "$M/new.txt")" = $'l1\nl2\nL3\nl4'
	run eos_store --store "$S" --json publish --sandbox sb --session p
	if [[ $rc != 0 && $err == *"pid $(cat "$M.pid")"* ]]; then
		ok "publish is refused while eosfs holds the store, naming its pid"
	else
		not_ok "publish is refused while eosfs holds the store, naming its pid"
		show_run
	fi
	check "the refusal is a JSON error" test "$(out_field 'd["error"]["kind"]')" = busy
	check "unmount p" fs_umount "$M"
}

test_publish_session() {
	local layers
	layers=$(layer_count)
	run eos_store --store "$S" --json publish --sandbox sb --session p
	expect_rc 0 "publish of session p succeeds after the unmount"
	check "the publish reports status published" test "$(out_field 'd["status"]')" = published
	check "the layer belongs to the session" \
		test "$(out_field 'd["owner"]')" = workspace_session:p
	check "exactly one layer was added" test "$(layer_count)" = $((layers + 1))
	run eos_store --store "$S" cat --sandbox sb new.txt
	check "the published file holds both writes" test "$out" = $'l1\nl2\nL3\nl4'
	check "blame: line 1 is op-a's" test "$(owner_of_line new.txt 1)" = operation:op-a
	check "blame: line 2 is op-a's" test "$(owner_of_line new.txt 2)" = operation:op-a
	check "blame: line 3 is op-b's" test "$(owner_of_line new.txt 3)" = operation:op-b
	check "blame: line 4 is op-a's" test "$(owner_of_line new.txt 4)" = operation:op-a
	check "editor save: line 1 stays original" test "$(owner_of_line edit.txt 1)" = original
	check "editor save: line 2 is op-c's" test "$(owner_of_line edit.txt 2)" = operation:op-c
	check "editor save: line 3 stays original" test "$(owner_of_line edit.txt 3)" = original
	check "the temp file was not published" \
		not eos_store --store "$S" cat --sandbox sb .edit.txt.tmp 2>/dev/null
	run eos_store --store "$S" --json delta --sandbox sb p
	check "the published session has no changes left" test "$(out_field 'len(d["changes"])')" = 0
}

test_write() {
	local layers
	layers=$(layer_count)
	printf 'w1\nw2\n' >"$T/content"
	run eos_store --store "$S" --json write --sandbox sb --path w/x.txt --operation op-x \
		<"$T/content"
	expect_rc 0 "write publishes standard input"
	check "the write reports its owner" test "$(out_field 'd["owner"]')" = operation:op-x
	check "write adds one layer" test "$(layer_count)" = $((layers + 1))
	run eos_store --store "$S" --json log --sandbox sb
	check "the new layer is owned by operation:op-x" \
		test "$(out_field 'd["layers"][-1]["owner"]')" = operation:op-x
	run eos_store --store "$S" cat --sandbox sb w/x.txt
	check "the written file holds the input" test "$out" = $'w1\nw2'
	check "blame: the written lines are op-x's" test "$(owner_of_line w/x.txt 2)" = operation:op-x
}

# Mount session $1 at $M / unmount it.
open_session() {
	fs_mount "$M" "$S" sb "$1" || bail_out "mount of session $1 failed"
}

close_session() {
	fs_umount "$M" || bail_out "unmount of $M failed"
}

test_merge_and_reject() {
	local layers
	# three sessions on the same head: a and b edit different lines, c the same line as a
	open_session a
	printf 'ONE\ntwo\n' >"$M/src/f.txt"
	close_session
	open_session b
	printf 'one\ntwo\ntail\n' >"$M/src/f.txt"
	close_session
	open_session c
	printf 'uno\ntwo\n' >"$M/src/f.txt"
	echo c >"$M/c.txt"
	close_session
	run eos_store --store "$S" --json publish --sandbox sb --session a
	expect_rc 0 "publish a"
	run eos_store --store "$S" --json publish --sandbox sb --session b
	expect_rc 0 "publish b merges with a"
	check "b's publish reports one merged path" test "$(out_field 'd["merged"]')" = 1
	run eos_store --store "$S" cat --sandbox sb src/f.txt
	check "the head holds both edits" test "$out" = $'ONE\ntwo\ntail'
	check "blame: line 1 is a's" test "$(owner_of_line src/f.txt 1)" = workspace_session:a
	check "blame: line 2 is original" test "$(owner_of_line src/f.txt 2)" = original
	check "blame: line 3 is b's" test "$(owner_of_line src/f.txt 3)" = workspace_session:b
	layers=$(layer_count)
	run eos_store --store "$S" --json publish --sandbox sb --session c
	if [[ $rc != 0 ]]; then
		ok "publish c is rejected (exit status $rc)"
	else
		not_ok "publish c is rejected"
		show_run
	fi
	check "the rejection is a JSON error of kind conflict" \
		test "$(out_field 'd["error"]["kind"]')" = conflict
	check "the rejection lists src/f.txt as a content conflict" test "$(out_field '
[c["kind"] for c in (d["error"].get("details") or d["error"])["conflicts"]
 if c["path"] == "src/f.txt"]')" = '["content"]'
	check "the rejection gives the conflicting lines" test "$(out_field '
[c["lines"][0]["base_start"] for c in (d["error"].get("details") or d["error"])["conflicts"]
 if c["path"] == "src/f.txt"]')" = '[1]'
	check "a rejection adds no layer" test "$(layer_count)" = "$layers"
	run eos_store --store "$S" cat --sandbox sb c.txt
	check "nothing of c was written" test "$rc" != 0
	run eos_store --store "$S" --json delta --sandbox sb c
	check "c keeps its changes" test "$(out_field '
sorted(c["path"] for c in d["changes"] if c["change"] == "put")')" = '["c.txt", "src/f.txt"]'
	# c takes a's line instead of its own and publishes again: it merges
	open_session c
	printf 'ONE\ntwo\n' >"$M/src/f.txt"
	close_session
	run eos_store --store "$S" --json publish --sandbox sb --session c
	expect_rc 0 "the fixed session c publishes"
	run eos_store --store "$S" cat --sandbox sb c.txt
	check "c's other change is published" test "$out" = c
	run eos_store --store "$S" cat --sandbox sb src/f.txt
	check "the head still holds a's and b's edits" test "$out" = $'ONE\ntwo\ntail'
	check "the retry added one layer" test "$(layer_count)" = $((layers + 1))
}

# Names in directory $1 at the head, space-separated.
head_names() {
	eos_store --store "$S" --json ls --sandbox sb "$1" | json_get '" ".join(e["name"] for e in d["entries"])'
}

# A moved directory brings its unchanged children along; changes below it are kept.
test_moved_directory() {
	open_session m
	mv "$M/tree" "$M/moved"
	rm "$M/moved/sub/y"
	echo z >"$M/moved/sub/z"
	close_session
	run eos_store --store "$S" --json publish --sandbox sb --session m
	expect_rc 0 "publish a session that moved a directory"
	run eos_store --store "$S" stat --sandbox sb tree
	check "the old name is gone" test "$rc" != 0
	check "the moved directory holds its children" test "$(head_names moved)" = "sub top.txt"
	check "below it, the deletion and the new file are published" \
		test "$(head_names moved/sub)" = "x z"
	run eos_store --store "$S" cat --sandbox sb moved/top.txt
	check "a moved file keeps its bytes" test "$out" = $'t1\nt2'
	check "a moved file keeps its line owners" test "$(owner_of_line moved/top.txt 2)" = original
}

# The conflicts of the rejection in $out as [kind, path, detail] lists.
out_conflicts() {
	out_field '[[c["kind"], c["path"], c["detail"]] for c in
 ((d.get("error") or {}).get("details") or d.get("error") or {}).get("conflicts", [])]'
}

# Three sessions rename one lower directory (and a file) to three names: the first publishes,
# the others are rename conflicts naming both paths, and the head holds one copy.
test_renamed_three_times() {
	local i layers
	for i in 1 2 3; do
		open_session "usb$i"
		mv "$M/linux/usb" "$M/usb-$i"
		mv "$M/linux/README" "$M/README-$i"
		close_session
	done
	run eos_store --store "$S" --json publish --sandbox sb --session usb1
	expect_rc 0 "the first of three renames publishes"
	layers=$(layer_count)
	for i in 2 3; do
		run eos_store --store "$S" --json publish --sandbox sb --session "usb$i"
		check "rename $i is rejected as rename conflicts naming both paths" \
			test "$(out_conflicts)" = "[[\"rename\", \"README-$i\", \"linux/README\"], \
[\"rename\", \"usb-$i\", \"linux/usb\"]]"
	done
	check "the rejections add no layer" test "$(layer_count)" = "$layers"
	check "the head holds one copy" test "$(head_names "")" = \
		"README-1 c.txt edit.txt keep.txt linux moved new.txt src usb-1 w"
	check "the copy holds the children" test "$(head_names usb-1)" = "core.c host"
}

test_fsck() {
	run eos_store --store "$S" --json fsck
	expect_rc 0 "fsck is clean"
}

setup
test_write_log_provenance
test_publish_session
test_write
test_merge_and_reject
test_moved_directory
test_renamed_three_times
test_fsck
rerun_as_test_user "${BASH_SOURCE[0]}"
tap_done
