# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Small tmpfs filesystems for the full-disk tests (sourced after lib.sh):
#
#	small_fs_reexec "$@"            # first: run this script again in a mount namespace of its
#	                                # own (a user namespace too when not root), so that its
#	                                # mounts vanish with it whatever happens
#	tap_tmpdir
#	small_fs_create "$T/fs" 64m      # mount a 64 MiB tmpfs on $T/fs (mode 0700)
#	small_fs_fill "$T/fs" 1048576    # fill it with $T/fs/filler until 1 MiB stays available
#	small_fs_unfill "$T/fs"
#	small_fs_avail "$T/fs"           # prints the bytes available to unprivileged users
#	small_fs_remove "$T/fs"          # unmount (tap_cleanup also does, before removing $T)

small_fs_mounts=()

# Re-run the calling script under unshare(1) unless it already runs in its own namespace. Bails
# out when namespaces cannot be made (a full-disk test must not skip silently).
small_fs_reexec() {
	[[ -n ${EOS_SMALL_FS_NS:-} ]] && return 0
	command -v unshare >/dev/null || bail_out "unshare(1) is needed for a private tmpfs"
	if [[ $(id -u) == 0 ]]; then
		EOS_SMALL_FS_NS=mount exec unshare --mount --propagation private bash "$0" "$@"
	fi
	# "user": root here is the caller mapped, not the machine's root (rerun_as_test_user)
	EOS_SMALL_FS_NS=user exec unshare --user --map-root-user --mount --propagation private \
		bash "$0" "$@"
}

small_fs_create() {
	local dir=$1 size=$2
	mkdir -p "$dir" || bail_out "cannot create '$dir'"
	mount -t tmpfs -o "size=$size,mode=0700" tmpfs "$dir" || bail_out "cannot mount a tmpfs on '$dir'"
	small_fs_mounts+=("$dir")
	trap 'small_fs_cleanup; tap_cleanup' EXIT
}

small_fs_remove() {
	umount "$1" && rmdir "$1"
}

small_fs_cleanup() {
	local dir
	for dir in "${small_fs_mounts[@]}"; do
		umount "$dir" 2>/dev/null
	done
	small_fs_mounts=()
}

small_fs_avail() {
	stat -f -c '%a %S' "$1" | awk '{ printf "%d\n", $1 * $2 }'
}

# Append to DIR/filler until at most $2 bytes stay available (tmpfs: page-exact).
small_fs_fill() {
	local dir=$1 leave=$2 avail n
	avail=$(small_fs_avail "$dir")
	while ((avail > leave)); do
		n=$((avail - leave))
		((n > 1048576)) && n=1048576
		head -c "$n" /dev/zero >>"$dir/filler" || return 1
		avail=$(small_fs_avail "$dir")
	done
}

small_fs_unfill() {
	rm -f "$1/filler"
}
