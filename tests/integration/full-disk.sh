#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# A full disk is an error, never a crash, and space comes back (TAP; issue 9, items 5 and 7):
# eos-store on a store alone on a 32 MiB tmpfs. Imports run until the store refuses one; then a
# filler file holds the filesystem just below the soft reserve, just below the hard reserve and
# at 128 KiB. At each level: import and write fail with exit status 1 and a message naming the
# store, nothing changes (fsck clean, heads unchanged), ls and fsck work, squash works above the
# hard reserve and is refused below it, destroy and gc work (at 128 KiB the store opens read-only
# and destroy fails the same way), and once the filler is gone everything works again. Last, destroy + gc give the disk space back.
# As root the script runs in a mount namespace of its own, otherwise in a user namespace too.

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=small-fs.sh
source "$(dirname "${BASH_SOURCE[0]}")/small-fs.sh"

small_fs_reexec "$@"

# A tree of 8 random files of 512 KiB under $T/src-$1.
make_tree() {
	local dir=$T/src-$1 i
	mkdir -p "$dir"
	for i in 0 1 2 3 4 5 6 7; do
		head -c 524288 /dev/urandom >"$dir/f$i"
	done
	printf '%s\n' "$dir"
}

json_stat() {
	eos_store --store "$S" --json stats | json_get "d[\"$1\"]"
}

# The layers of sandbox $1 as JSON (heads and versions must not move when a write is refused).
layers() {
	eos_store --store "$S" --json log --sandbox "$1"
}

expect_full() {
	expect_rc_match 1 err "store '$S' is full" "$@"
}

expect_fsck_clean() {
	run eos_store --store "$S" --json fsck
	expect_rc_match 0 out '"violations": 0' "$* : fsck is clean"
}

test_import_until_full() {
	local i
	run eos_store --store "$S" import "$(make_tree a)" --sandbox a
	expect_rc 0 "import a"
	for i in $(seq 1 20); do
		run eos_store --store "$S" import "$(make_tree "n$i")" --sandbox "n$i"
		((rc == 0)) || break
		rm -rf "$T/src-n$i"
	done
	expect_full "imports stop with ENOSPC naming the store (after $((i - 1)) more)"
	run eos_store --store "$S" --json ls
	check "the refused import left no sandbox" not json_has_sandbox "n$i" <<<"$out"
	expect_fsck_clean "after the refused import"
	run eos_store --store "$S" gc
	expect_rc 0 "gc of the refused import's chunks"
	for ((i = i - 1; i >= 1; i--)); do
		eos_store --store "$S" destroy --sandbox "n$i" >/dev/null || break
	done
	check "destroy of every other sandbox" test "$i" = 0
}

# Fill to level $1 (bytes available) and check everything at it; $2 is its name.
check_level() {
	local leave=$1 name=$2 before
	run eos_store --store "$S" import "$(make_tree "x-$name")" --sandbox "x-$name"
	expect_rc 0 "$name: a sandbox to destroy later"
	eos_store --store "$S" write --sandbox a --path "v-$name" < <(head -c 100000 /dev/urandom) >/dev/null
	eos_store --store "$S" write --sandbox a --path "v-$name" < <(head -c 100000 /dev/urandom) >/dev/null
	before=$(layers a)
	small_fs_fill "$T/fs" "$leave" || bail_out "cannot fill the tmpfs"
	run eos_store --store "$S" import "$(make_tree "y-$name")" --sandbox "y-$name"
	expect_full "$name: import is refused"
	run eos_store --store "$S" write --sandbox a --path "w-$name" < <(head -c 200000 /dev/urandom)
	expect_full "$name: write is refused"
	check "$name: the head of a is unchanged" test "$(layers a)" = "$before"
	run eos_store --store "$S" ls
	expect_rc_match 0 out "x-$name" "$name: ls works"
	expect_fsck_clean "$name"
	run eos_store --store "$S" squash --sandbox a
	if [[ $name == soft ]]; then
		expect_rc 0 "$name: squash works"
	else
		expect_full "$name: squash is refused"
	fi
	run eos_store --store "$S" destroy --sandbox "x-$name"
	if [[ $name == 128k ]]; then
		expect_full "$name: the store opens read-only and destroy is refused"
	else
		expect_rc 0 "$name: destroy works"
		run eos_store --store "$S" gc
		expect_rc 0 "$name: gc works"
	fi
	expect_fsck_clean "$name, after destroy"
	small_fs_unfill "$T/fs"
	run eos_store --store "$S" write --sandbox a --path "w-$name" < <(head -c 200000 /dev/urandom)
	expect_rc 0 "$name: once space is back, write works"
	run eos_store --store "$S" destroy --sandbox "x-$name"
	[[ $name == 128k ]] && expect_rc 0 "$name: once space is back, destroy works"
	eos_store --store "$S" gc >/dev/null
}

test_levels() {
	local soft hard
	soft=$(json_stat soft_reserve_bytes)
	hard=$(json_stat hard_reserve_bytes)
	check "the reserves are reported (soft $soft, hard $hard)" test "$soft" -gt "$hard"
	check_level $((soft - 262144)) soft
	check_level $((hard - 262144)) hard
	check_level 131072 128k
	expect_fsck_clean "after every level"
}

used() {
	stat -f -c '%b %f %S' "$T/fs" | awk '{ printf "%d\n", ($1 - $2) * $3 }'
}

test_space_comes_back() {
	local before after
	eos_store --store "$S" stats >/dev/null # writes the memtables out
	before=$(used)
	run eos_store --store "$S" import "$(make_tree big1)" --sandbox big
	expect_rc 0 "import of a 4 MiB sandbox"
	run eos_store --store "$S" import "$(make_tree big2)" --sandbox big2
	expect_rc 0 "import of another"
	eos_store --store "$S" destroy --sandbox big >/dev/null
	eos_store --store "$S" destroy --sandbox big2 >/dev/null
	run eos_store --store "$S" gc
	expect_rc 0 "gc after destroy"
	after=$(used)
	check "destroy + gc give the space back ($before bytes used before, $after after)" \
		test "$after" -le $((before + before / 10))
}

require_eos_store
tap_tmpdir
small_fs_create "$T/fs" 32m
S=$T/fs/s
test_import_until_full
test_levels
test_space_comes_back
expect_fsck_clean "at the end"
tap_done
