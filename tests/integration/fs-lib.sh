# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Helpers for tests that mount session views with eosfs (source after lib.sh).
#
#	fs_require                          # bail out unless eosfs, fusermount3 and /dev/fuse work
#	fs_import STORE ID SRC              # create sandbox ID from directory SRC
#	fs_mount MNT STORE ID SESSION [ARGS...]   # mount (background), wait until live
#	fs_umount MNT                       # unmount and wait for the eosfs process to exit
# fs_mount writes eosfs's pid to MNT.pid (beside the mount point).
#	as_test_user CMD...                 # run CMD as the unprivileged user (root only)
#	rerun_as_test_user SCRIPT           # root: run SCRIPT again as that user, one TAP check
#	eosd_cleanup [STATE...]             # EXIT trap: kill the eosd of each state dir, fs_cleanup
EOSFS_BIN=${top_builddir:?source lib.sh first}/fs/eosfs
EOS_TEST_USER=${EOS_TEST_USER:-eos-test}
fs_mounts=()

fs_require() {
	[[ -x $EOSFS_BIN ]] || bail_out "'$EOSFS_BIN' is missing (build it; set top_builddir)"
	command -v fusermount3 >/dev/null || bail_out "fusermount3 is missing (apt-get install fuse3)"
	[[ -c /dev/fuse ]] || bail_out "/dev/fuse is missing: FUSE tests cannot run here"
	[[ -r /dev/fuse && -w /dev/fuse ]] || bail_out "/dev/fuse is not usable by uid $EUID"
	trap fs_cleanup EXIT
}

# Whether $1 is a mount point (from /proc/self/mounts: mountpoint(1) cannot stat another
# user's FUSE mount, even as root).
fs_is_mounted() {
	local mnt _
	while read -r _ mnt _; do
		[[ $mnt == "$1" ]] && return 0
	done </proc/self/mounts
	return 1
}

# The EXIT trap of a test that runs eosd: kill -9 the eosd of each state directory given
# (default: $EOS_STATE_DIR), then fs_cleanup.
eosd_cleanup() {
	local s pid keys=()
	(($# > 0)) || set -- "$EOS_STATE_DIR"
	for s in "$@"; do
		pid=$(eosd_pid "$s" 2>/dev/null)
		[[ -n $pid ]] && pid_runs "$pid" eosd && kill -9 "$pid" 2>/dev/null
		keys+=("$(printf '%s' "$(realpath -m "$s")" | sha256sum | cut -c1-16)")
	done
	eosd_remove_cgroups "${keys[@]}"
	fs_cleanup
}

# A SIGKILLed eosd leaves its sessions' cgroups (…/eos-KEY/SANDBOX/SESSION, doc/observability.md)
# behind: remove those of the runtime keys given once their processes are gone (best effort,
# root only; up to 5 s).
eosd_remove_cgroups() {
	local key dir i
	((EUID == 0)) || return 0
	for key in "$@"; do
		while read -r dir; do
			for ((i = 0; i < 50; i++)); do
				find "$dir" -depth -type d -exec rmdir {} + 2>/dev/null
				[[ -d $dir ]] || break
				sleep 0.1
			done
		done < <(find /sys/fs/cgroup -maxdepth 6 -type d -name "eos-$key" 2>/dev/null)
	done
}

fs_cleanup() {
	local m
	for m in "${fs_mounts[@]}"; do
		fs_is_mounted "$m" && { fusermount3 -uz "$m" 2>/dev/null || umount -l "$m"; } 2>/dev/null
	done
	tap_cleanup
}

fs_import() {
	"$EOS_STORE_BIN" --store "$1" import "$3" --sandbox "$2" >/dev/null
}

# Wait up to 60 s for $1 to become (want=1) or stop being (want=0) a mount point (a loaded CI
# machine takes seconds where an idle one takes milliseconds).
fs_wait_mounted() {
	local mnt=$1 want=$2 i
	for ((i = 0; i < 1200; i++)); do
		if fs_is_mounted "$mnt"; then
			((want == 1)) && return 0
		else
			((want == 0)) && return 0
		fi
		sleep 0.05
	done
	return 1
}

fs_mount() {
	local mnt=$1 store=$2 id=$3 session=$4
	shift 4
	mkdir -p "$mnt"
	"$EOSFS_BIN" --store "$store" --sandbox "$id" --session "$session" \
		--pid-file "$mnt.pid" "$@" "$mnt" || return 1
	fs_mounts+=("$mnt")
	fs_wait_mounted "$mnt" 1
}

# Unmount $1 and wait (up to 60 s) until its eosfs process has exited and released the store.
fs_umount() {
	local mnt=$1 pid=''
	[[ -r $mnt.pid ]] && pid=$(cat "$mnt.pid")
	fusermount3 -u "$mnt" || return 1
	fs_wait_mounted "$mnt" 0 || return 1
	[[ -z $pid ]] || wait_pid_gone "$pid"
}

# SIGKILL the eosfs serving $1 (pid file $1.pid), wait for it to die, clear away the dead mount.
fs_kill() {
	local mnt=$1 pid
	pid=$(cat "$mnt.pid") || return 1
	kill -KILL "$pid"
	wait_pid_gone "$pid"
	fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true
	fs_wait_mounted "$mnt" 0
}

# One TAP check: ok when the output of command $3... is $1, else not ok with a diff. $2 names it.
expect_output() {
	local want=$1 what=$2 got
	shift 2
	got=$("$@" 2>&1)
	if [[ $got == "$want" ]]; then
		ok "$what"
	else
		not_ok "$what"
		diag "$(diff <(printf '%s\n' "$want") <(printf '%s\n' "$got") | head -20)"
	fi
}

# Two TAP checks on store $1 (no view mounted): fsck is clean, and session $3 of sandbox $2
# publishes.
# shellcheck disable=SC2154 # rc is set by run (lib.sh)
fs_fsck_publish() {
	run eos_store --store "$1" --json fsck
	check "fsck is clean" test "$rc" = 0
	run eos_store --store "$1" publish --sandbox "$2" --session "$3"
	check "publish the session" test "$rc" = 0
}

as_test_user() {
	runuser -u "$EOS_TEST_USER" -- "$@"
}

# As root, run test script $1 again as the unprivileged user (mounting through fusermount3) and
# report it as one TAP check; a no-op for any other user.
rerun_as_test_user() {
	((EUID == 0)) || return 0
	[[ ${EOS_SMALL_FS_NS:-} == user ]] && return 0 # the unprivileged run, in a user namespace
	id -u "$EOS_TEST_USER" >/dev/null 2>&1 ||
		bail_out "user '$EOS_TEST_USER' is missing (scripts/test creates it)"
	# a fresh namespace of its own for a small-fs.sh test (small_fs_reexec)
	if as_test_user env -u EOS_SMALL_FS_NS top_builddir="$top_builddir" top_srcdir="${top_srcdir:?source lib.sh first}" TMPDIR=/tmp \
		bash "$1" >"$T/user.tap" 2>&1; then
		ok "the same scenario passes as '$EOS_TEST_USER'"
	else
		not_ok "the same scenario passes as '$EOS_TEST_USER'"
		diag "$(grep -v '^ok' "$T/user.tap")"
	fi
}
