#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The randomized model checker (TAP). For each seed, a fresh session of a sandbox imported from
# a generated base tree is mounted with eosfs, the base is copied to a plain model directory
# with `cp -a`, and tests/integration/fs-model applies the same seeded random operations to both
# and compares the trees after every batch. Then the session is unmounted and mounted again and
# the view must still equal the model: the delta survives a remount. As root, one seed runs
# again as the unprivileged user eos-test (the user is created when missing) over root's files:
# the user imports a tar of the base tree that root made (root's owners, a 0600 file, a 0750
# directory) into a store of its own and mounts it; the model is the same tree owned by the
# user, as if the user had unpacked the tar, and the view must show it so (owners included).
#
# Environment: EOS_MODEL_SEED (the first seed; the others follow it; default random, printed),
# EOS_MODEL_SEEDS (number of seeds, default 3), EOS_MODEL_OPS (operations per seed, default
# 2000), EOS_MODEL_BATCH (operations between tree comparisons, default 100),
# EOS_MODEL_DROP_CACHES=1 (as root: drop the kernel's caches before every comparison, so that
# lookups, FORGET and reads go to eosfs again; off by default as it slows the whole machine).
# Replay a failure: EOS_MODEL_SEED=N EOS_MODEL_SEEDS=1 tests/integration/fs-model.sh, or run
# the printed fs-model command on fresh copies of the same trees.

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=fs-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/fs-lib.sh"

FS_MODEL_BIN=$top_builddir/tests/integration/fs-model
sandbox=model
seed0=${EOS_MODEL_SEED:-$(((RANDOM << 15) | RANDOM))}
nseeds=${EOS_MODEL_SEEDS:-3}
ops=${EOS_MODEL_OPS:-2000}
batch=${EOS_MODEL_BATCH:-100}
time_limit=600
main_opts=()
[[ ${EOS_MODEL_DROP_CACHES:-0} == 1 && $EUID == 0 ]] && main_opts+=(--drop-caches)
main_who=root
((EUID == 0)) || main_who="uid $EUID"

# The base tree: nested directories, files from empty to 1.5 MiB, odd modes, symlinks (to a
# file, to a directory, dangling), a hard-link pair, a file whose name looks like a whiteout
# and a directory of 60 entries.
make_base() {
	local b=$1 i
	mkdir -p "$b/src/lib" "$b/src/include" "$b/docs/api" "$b/empty" "$b/a/b/c/d" "$b/many"
	printf 'int main(void) { return 0; }\n' >"$b/src/main.c"
	printf '#pragma once\n' >"$b/src/include/x.h"
	head -c 100000 /dev/urandom >"$b/src/lib/blob.bin"
	head -c 4096 /dev/urandom >"$b/docs/page"
	: >"$b/docs/empty.txt"
	seq 1 30000 >"$b/a/b/c/d/numbers"
	head -c 1500000 /dev/urandom >"$b/big.bin"
	printf 'not a whiteout\n' >"$b/.wh.lower"
	for ((i = 0; i < 60; i++)); do
		printf '%d\n' "$i" >"$b/many/f$i"
	done
	chmod 0600 "$b/docs/page"
	chmod 0755 "$b/src/main.c"
	chmod 0750 "$b/docs/api"
	ln -s src/main.c "$b/link"
	ln -s missing "$b/dangling"
	ln -s src "$b/srclink"
	ln "$b/src/main.c" "$b/hardlink"
}

# Print the last lines of fs-model's report as TAP diagnostics.
show_report() {
	local text=$out
	[[ -n $err ]] && text+=$'\n'$err
	diag "$(printf '%s\n' "$text" | tail -n 40)"
}

# run_model WHO SEED MNT MODEL [RUNNER...]: one seed against the mounted view.
run_model() {
	local who=$1 seed=$2 mnt=$3 model=$4 opts=()
	shift 4
	[[ $who == "$main_who" ]] && opts=("${main_opts[@]}")
	# fs-model's own watchdog cannot interrupt a request that eosfs never answers: kill it.
	run "$@" timeout -k 10 "$time_limit" "$FS_MODEL_BIN" --seed "$seed" --ops "$ops" \
		--batch "$batch" "${opts[@]}" "$mnt" "$model"
	if ((rc == 0)); then
		ok "$who seed $seed: $ops random operations behave as on the model"
		diag "$out"
		return 0
	fi
	not_ok "$who seed $seed: $ops random operations behave as on the model"
	((rc == 124 || rc == 137)) && diag "fs-model was killed after $time_limit s"
	show_report
	diag "replay: EOS_MODEL_SEED=$seed EOS_MODEL_SEEDS=1 $0"
	return 1
}

# compare_model WHO SEED RAN MNT MODEL [RUNNER...]: the remounted view still equals the model
# (skipped when the run itself failed: RAN is 1).
compare_model() {
	local who=$1 seed=$2 ran=$3 mnt=$4 model=$5
	shift 5
	if ((ran != 0)); then
		ok "$who seed $seed: the delta survives a remount # SKIP the run failed"
		return
	fi
	run "$@" timeout -k 10 "$time_limit" "$FS_MODEL_BIN" --compare-only "$mnt" "$model"
	if ((rc == 0)); then
		ok "$who seed $seed: the delta survives a remount"
	else
		not_ok "$who seed $seed: the delta survives a remount"
		show_report
	fi
}

# One seed as the current user: a fresh session, the run, unmount, remount, compare, unmount.
main_seed() {
	local seed=$1 mnt=$T/mnt-$1 model=$T/model-$1 session=seed-$1 ran=0
	cp -a "$T/base" "$model"
	if ! fs_mount "$mnt" "$T/store" "$sandbox" "$session"; then
		not_ok "seed $seed: mount session '$session'"
		return
	fi
	run_model "$main_who" "$seed" "$mnt" "$model" || ran=1
	check "seed $seed: unmount" fs_umount "$mnt"
	if ! fs_mount "$mnt" "$T/store" "$sandbox" "$session"; then
		not_ok "seed $seed: mount session '$session' again"
		return
	fi
	compare_model "$main_who" "$seed" "$ran" "$mnt" "$model"
	check "seed $seed: unmount after the remount" fs_umount "$mnt"
}

# Mount session $2 of the unprivileged user's store at $1, as that user: one TAP line ($3).
user_mount() {
	local mnt=$1 session=$2 desc=$3
	as_test_user mkdir -p "$mnt" || bail_out "cannot create '$mnt' as '$EOS_TEST_USER'"
	fs_mounts+=("$mnt")
	run as_test_user "$EOSFS_BIN" --store "$U/store" --sandbox "$sandbox" \
		--session "$session" --pid-file "$mnt.pid" "$mnt"
	if ((rc == 0)) && fs_wait_mounted "$mnt" 1; then
		ok "$desc"
		return 0
	fi
	not_ok "$desc"
	show_run
	return 1
}

# Prepare the unprivileged user's directory: root's tar of the base, the user's store of it,
# the model. Returns 1 to skip.
user_setup() {
	if ! id "$EOS_TEST_USER" >/dev/null 2>&1 &&
		! useradd --system --create-home "$EOS_TEST_USER" >/dev/null 2>&1; then
		ok "unprivileged run # SKIP cannot create the user '$EOS_TEST_USER'"
		return 1
	fi
	if ! as_test_user test -r /dev/fuse -a -w /dev/fuse; then
		ok "unprivileged run # SKIP /dev/fuse is not usable by '$EOS_TEST_USER'"
		return 1
	fi
	U=$T/user
	if ! { mkdir "$U" && chown "$EOS_TEST_USER:" "$U" &&
		tar --format=posix -C "$T/base" -cf "$U/base.tar" . && chmod 0644 "$U/base.tar" &&
		cp -a "$T/base" "$U/model" && chown -R "$EOS_TEST_USER:" "$U/model"; }; then
		bail_out "cannot prepare the unprivileged user's directory"
	fi
	run as_test_user "$EOS_STORE_BIN" --store "$U/store" import "$U/base.tar" --sandbox "$sandbox"
	expect_rc 0 "unprivileged: import root's tar of the base tree"
}

# One seed as the unprivileged user, with the same checks as main_seed.
user_seed() {
	local seed=$1 mnt ran=0
	user_setup || return
	mnt=$U/mnt
	user_mount "$mnt" user "unprivileged: mount a session" || return
	run_model unprivileged "$seed" "$mnt" "$U/model" as_test_user || ran=1
	check "unprivileged: unmount" fs_umount "$mnt"
	user_mount "$mnt" user "unprivileged: mount the session again" || return
	compare_model unprivileged "$seed" "$ran" "$mnt" "$U/model" as_test_user
	check "unprivileged: unmount after the remount" fs_umount "$mnt"
}

main() {
	local i
	tap_tmpdir
	fs_require
	[[ -x $FS_MODEL_BIN ]] || bail_out "'$FS_MODEL_BIN' is missing (make check builds it)"
	diag "seeds $seed0..$((seed0 + nseeds - 1)), $ops operations each" \
		"(replay with EOS_MODEL_SEED=$seed0)"
	make_base "$T/base"
	fs_import "$T/store" "$sandbox" "$T/base" || bail_out "cannot import the base tree"
	for ((i = 0; i < nseeds; i++)); do
		main_seed $((seed0 + i))
	done
	if ((EUID == 0)); then
		user_seed "$seed0"
	else
		ok "unprivileged run # SKIP already running as uid $EUID"
	fi
	tap_done
}

main "$@"
