#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Every session publishes (TAP): the property test of issue 9 item 2. For each seed, a sandbox is
# imported from a generated base tree and two sessions of it, a and b, are mounted with eosfs
# (its default options). Each round, tests/integration/publish-model runs seeded random
# operations through each mounted view (a everywhere but `b/`, b in `b/`, both on their own
# lines of shared.txt), snapshots both views (bytes, type, mode, link counts, hard-link groups,
# symlink targets, xattrs), unmounts, and publishes both with `eos-store publish`, in an order
# that changes every round: the second publish merges with the first. After each publish a
# read-only mount of the new head must equal the publisher's snapshot in its territory and the
# previous head elsewhere, and at the start of the next round each session must show the head
# its publish produced. As root, the whole script runs again as the unprivileged user.
#
# Environment: EOS_PUBMODEL_SEED (the first seed; default random, printed), EOS_PUBMODEL_SEEDS
# (seeds, default 1), EOS_PUBMODEL_ROUNDS (rounds per seed, default 3), EOS_PUBMODEL_OPS
# (operations per session and round, default 120). A longer run:
#	EOS_PUBMODEL_SEEDS=20 EOS_PUBMODEL_ROUNDS=6 EOS_PUBMODEL_OPS=400 tests/integration/publish-model.sh
# Replay a failure: EOS_PUBMODEL_SEED=N EOS_PUBMODEL_SEEDS=1 tests/integration/publish-model.sh;
# EOS_PUBMODEL_KEEP=DIR copies the operation log and the snapshots there when a check fails.

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=fs-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/fs-lib.sh"

PM_BIN=$top_builddir/tests/integration/publish-model
seed0=${EOS_PUBMODEL_SEED:-$(((RANDOM << 15) | RANDOM))}
nseeds=${EOS_PUBMODEL_SEEDS:-1}
rounds=${EOS_PUBMODEL_ROUNDS:-3}
ops=${EOS_PUBMODEL_OPS:-120}
who=root
((EUID == 0)) || who="uid $EUID"

set_xattr() {
	python3 -c 'import os, sys; os.setxattr(sys.argv[1], sys.argv[2], sys.argv[3].encode())' "$@"
}

# The base tree: nested and empty directories, a lower directory to rename (linux/usb), text,
# binary, empty and large (partially copied up) files, odd modes, symlinks, hard links, xattrs;
# b/ for session b; shared.txt, whose lines both sessions edit.
make_base() {
	local d=$1 i
	mkdir -p "$d/src/lib/deep" "$d/docs/api" "$d/empty" "$d/a/b/c/d" "$d/linux/usb/host" \
		"$d/data" "$d/b/y" "$d/b/empty"
	printf 'int main(void) { return 0; }\n' >"$d/src/main.c"
	seq 1 200 >"$d/src/util.c"
	printf '#pragma once\n' >"$d/src/lib/deep/x.h"
	head -c 100000 /dev/urandom >"$d/src/lib/blob.bin"
	head -c 1500000 /dev/urandom >"$d/big.bin"
	head -c 1200000 /dev/urandom >"$d/data/huge.bin"
	head -c 4096 /dev/urandom >"$d/docs/page"
	: >"$d/docs/empty.txt"
	seq 1 3000 >"$d/a/b/c/d/numbers"
	printf 'usb core\n' >"$d/linux/usb/core.c"
	printf 'usb hub\n' >"$d/linux/usb/hub.c"
	printf 'ehci\n' >"$d/linux/usb/host/ehci.c"
	chmod 0600 "$d/docs/page"
	chmod 0755 "$d/src/main.c"
	chmod 0750 "$d/docs/api"
	ln -s src/main.c "$d/link"
	ln -s missing "$d/dangling"
	ln "$d/src/main.c" "$d/hardlink"
	ln "$d/linux/usb/hub.c" "$d/linux/hub-link.c"
	for ((i = 0; i < SHARED_LINES; i++)); do
		printf 'line %02d as imported\n' "$i"
	done >"$d/shared.txt"
	printf 'b text\n' >"$d/b/x.txt"
	printf 'b code\n' >"$d/b/y/z.c"
	head -c 1100000 /dev/urandom >"$d/b/big.bin"
	ln -s x.txt "$d/b/link"
	ln "$d/b/x.txt" "$d/b/hl"
	set_xattr "$d/src/main.c" user.origin imported
	set_xattr "$d/docs" user.kind docs
	set_xattr "$d/b/y/z.c" user.b b-side
}
SHARED_LINES=40

# Mount the sandbox's head read-only at $T/ro and write its snapshot to $1.
snap_head() {
	local out=$1 mnt=$T/ro r pid
	mkdir -p "$mnt"
	"$EOSFS_BIN" --store "$S" --sandbox "$sandbox" --version "$(head_version)" --read-only \
		--pid-file "$mnt.pid" "$mnt" || return 1
	fs_mounts+=("$mnt")
	fs_wait_mounted "$mnt" 1 || return 1
	"$PM_BIN" snap "$mnt" >"$out"
	r=$?
	pid=$(cat "$mnt.pid") && fusermount3 -u "$mnt" && wait_exit "$pid" || return 1
	return $r
}

head_version() {
	"$EOS_STORE_BIN" --store "$S" --json ls |
		json_get "[s['head'] for s in d['sandboxes'] if s['id'] == '$sandbox'][0]"
}

# Mount sessions a and b, served by one eosfs process.
mount_sessions() {
	mkdir -p "$W/a" "$W/b"
	"$EOSFS_BIN" --store "$S" --sandbox "$sandbox" --session "a:$W/a" --session "b:$W/b" \
		--pid-file "$W/a.pid" || return 1
	fs_mounts+=("$W/a" "$W/b")
	fs_wait_mounted "$W/a" 1 && fs_wait_mounted "$W/b" 1
}

# Wait for process $1 to exit: an eosfs writes its sessions' metadata and closes the store
# after the unmount (up to two minutes on a loaded machine).
wait_exit() {
	wait_pid_gone "$1" 120 && return 0
	diag "eosfs $1 still runs: $(ps -o stat=,etime= -p "$1")"
	return 1
}

umount_sessions() {
	local pid
	pid=$(cat "$W/a.pid") && fusermount3 -u "$W/b" && fusermount3 -u "$W/a" && wait_exit "$pid"
}

# Show what failed: the differences, the last operations, and how to replay.
report() {
	local diff_file=$1
	[[ -n $diff_file ]] && diag "$(head -n 40 "$diff_file")"
	diag "last operations:" "$(tail -n 30 "$W/ops.log")"
	if [[ -n ${EOS_PUBMODEL_KEEP:-} ]]; then
		mkdir -p "$EOS_PUBMODEL_KEEP" && cp "$W"/*.log "$W"/*.snap "$W"/*.start "$W"/expect \
			"$EOS_PUBMODEL_KEEP"/ 2>/dev/null
		diag "operations and snapshots copied to $EOS_PUBMODEL_KEEP"
	fi
	diag "replay: EOS_PUBMODEL_SEED=$seed EOS_PUBMODEL_SEEDS=1 EOS_PUBMODEL_ROUNDS=$rounds" \
		"EOS_PUBMODEL_OPS=$ops $0"
}

# compare DESC EXPECTED ACTUAL: one TAP line.
compare() {
	if diff -u "$2" "$3" >"$W/diff"; then
		ok "$1"
		return 0
	fi
	not_ok "$1"
	report "$W/diff"
	return 1
}

# Publish session $1 (round $2) and check the new head against its snapshot.
publish_side() {
	local side=$1 round=$2
	run "$EOS_STORE_BIN" --store "$S" publish --sandbox "$sandbox" --session "$side"
	if ((rc != 0)); then
		not_ok "$who seed $seed round $round: session $side publishes"
		show_run
		report ""
		return 1
	fi
	ok "$who seed $seed round $round: session $side publishes"
	"$PM_BIN" expect "$side" "$W/$side.snap" "$W/head.snap" >"$W/expect" || return 1
	snap_head "$W/head.snap" || bail_out "cannot snapshot the head of '$sandbox'"
	cp "$W/head.snap" "$W/$side.start"
	compare "$who seed $seed round $round: the head equals session $side's view" \
		"$W/expect" "$W/head.snap"
}

# One round: check the sessions show their heads, operate, snapshot, unmount, publish both.
round() {
	local r=$1 side first second
	mount_sessions || bail_out "cannot mount sessions of '$sandbox'"
	for side in a b; do
		"$PM_BIN" snap "$W/$side" >"$W/$side.snap" || bail_out "cannot snapshot session $side"
		compare "$who seed $seed round $r: session $side shows the head it published" \
			"$W/$side.start" "$W/$side.snap" || return 1
	done
	for side in a b; do
		run "$PM_BIN" ops --seed "$seed" --round "$r" --side "$side" --ops "$ops" \
			--log "$W/ops.log" "$W/$side"
		if ((rc != 0)); then
			not_ok "$who seed $seed round $r: session $side: $ops operations"
			show_run
			report ""
			return 1
		fi
		"$PM_BIN" snap "$W/$side" >"$W/$side.snap" || bail_out "cannot snapshot session $side"
	done
	umount_sessions || bail_out "cannot unmount the sessions of '$sandbox'"
	first=a second=b
	(((seed + r) % 2)) && first=b second=a
	publish_side "$first" "$r" && publish_side "$second" "$r"
}

one_seed() {
	local r
	seed=$1 sandbox=pm-$1 W=$T/seed-$1
	mkdir -p "$W"
	: >"$W/ops.log"
	fs_import "$S" "$sandbox" "$T/base" || bail_out "cannot import the base tree"
	snap_head "$W/head.snap" || bail_out "cannot snapshot the imported tree"
	cp "$W/head.snap" "$W/a.start"
	cp "$W/head.snap" "$W/b.start"
	for ((r = 1; r <= rounds; r++)); do
		round "$r" || return
	done
	run "$EOS_STORE_BIN" --store "$S" fsck
	expect_rc 0 "$who seed $seed: fsck is clean after $rounds rounds"
}

main() {
	local i
	tap_tmpdir
	fs_require
	require_eos_store
	[[ -x $PM_BIN ]] || bail_out "'$PM_BIN' is missing (make check builds it)"
	S=$T/store
	diag "$who: seeds $seed0..$((seed0 + nseeds - 1)), $rounds rounds of $ops operations" \
		"(replay with EOS_PUBMODEL_SEED=$seed0)"
	make_base "$T/base" || bail_out "cannot create the base tree"
	for ((i = 0; i < nseeds; i++)); do
		one_seed $((seed0 + i))
	done
	export EOS_PUBMODEL_SEED=$seed0
	rerun_as_test_user "$0"
	tap_done
}

main "$@"
