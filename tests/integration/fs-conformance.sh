#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The session view against fs-conformance (TAP): import a small base tree, mount a session with
# eosfs's default options and run every conformance group on it as root (the permission group
# in a child dropped to the unprivileged user, against root's mount), change the view from the
# shell too, then unmount, remount and check that the delta survived byte for byte, that
# version 1 in the store is untouched, that a read-only mount of version 1 refuses writes with
# EROFS, that eosfs refuses a held store, a non-empty or missing mountpoint, an unknown sandbox
# and an unknown version with a clear message, and finally the whole suite again as the
# unprivileged user on a store of its own, imported from root's copy of the base tree (with
# root's owners and a set-user-ID file), which the user's mount shows as the user's.
#
# Environment: EOS_FSC_BIG_MB (default 1024) and EOS_FSC_MANY (default 100000) size the big file
# and the many-entry directory of the root run; the unprivileged run uses 64 MiB and 10 000.

# Many helpers below only run through `check`, which shellcheck cannot follow.
# shellcheck disable=SC2317

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=fs-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/fs-lib.sh"

FSC_BIN=$top_builddir/tests/integration/fs-conformance
BIG_MB=${EOS_FSC_BIG_MB:-1024}
MANY=${EOS_FSC_MANY:-100000}
WRITE_MARKER='eos-conformance appended'
# A hung view must not hang the suite: each fs-conformance run gets this long.
RUN_LIMIT=(timeout -k 10 600)
LINK_MARKER='eos-conformance via link'

# The base tree: files, directories, symlinks, a hard link pair, a 1 MiB file. The source stays
# on the local disk as the reference for every check.
make_base() {
	local src=$1
	mkdir -p "$src/lowerdir/sub/deeper" "$src/emptydir"
	printf 'hello world\n' >"$src/hello.txt"
	head -c $((1024 * 1024)) /dev/urandom >"$src/big.bin"
	seq 1 2000 >"$src/modify-me.txt"
	printf 'overwrite me\n' >"$src/overwrite-me.txt"
	printf 'delete me\n' >"$src/delete-me.txt"
	printf 'linked\n' >"$src/link-a"
	ln "$src/link-a" "$src/link-b"
	ln -s hello.txt "$src/hello.link"
	ln -s lowerdir/sub "$src/dir.link"
	printf 'in lower\n' >"$src/lowerdir/one"
	seq 1 100 >"$src/lowerdir/sub/two"
	printf 'deep\n' >"$src/lowerdir/sub/deeper/three"
	ln -s ../one "$src/lowerdir/sub/to-one"
	chmod 0664 "$src/lowerdir/one"
	chmod 0755 "$src" "$src/lowerdir"
}

# The --lower-* arguments describing the base tree at $1 (the reference copy).
lower_args() {
	local src=$1
	printf '%s\n' --lower-file "hello.txt=$src/hello.txt" --lower-file "big.bin=$src/big.bin" \
		--lower-file "lowerdir/sub/two=$src/lowerdir/sub/two" \
		--lower-file "lowerdir/one=$src/lowerdir/one" --lower-link link-a=link-b \
		--lower-write "modify-me.txt=$src/modify-me.txt" --lower-dir lowerdir
}

as_user() {
	if ((EUID == 0)); then
		as_test_user "$@"
	else
		"$@"
	fi
}

# Run a fs-conformance command ($2...) and fold its TAP lines into ours, labelled $1.
run_conformance() {
	local label=$1 line status=none plan=none seen=0
	shift
	while IFS= read -r line; do
		if [[ $line =~ ^(not\ )?ok\ [0-9]+\ -\ (.*)$ ]]; then
			seen=$((seen + 1))
			if [[ -z ${BASH_REMATCH[1]} ]]; then
				ok "$label: ${BASH_REMATCH[2]}"
			else
				not_ok "$label: ${BASH_REMATCH[2]}"
			fi
		elif [[ $line =~ ^1\.\.([0-9]+)$ ]]; then
			plan=${BASH_REMATCH[1]}
		elif [[ $line =~ ^__status\ ([0-9]+)$ ]]; then
			status=${BASH_REMATCH[1]}
		elif [[ $line == "#"* ]]; then
			printf '%s\n' "$line"
		else
			diag "$line"
		fi
	done < <(
		"$@" 2>&1
		printf '__status %d\n' $?
	)
	check "$label: ran all $plan planned checks and exited 0" \
		test "$plan" = "$seen" -a "$status" = 0
}

# Names, types, modes, link counts, symlink targets and sizes of every file, then the digest of
# every regular file's content (mtimes separately: manifest_times).
manifest() {
	(
		cd "$1" || exit 1
		find . \( -type d -printf '%p %y %m %n\n' \) -o -printf '%p %y %m %n %s %l\n' |
			LC_ALL=C sort
		find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum
	)
}

manifest_times() {
	(cd "$1" && find . -printf '%p %T@\n' | LC_ALL=C sort)
}

# The fifos, sockets and devices the nodes group left in $1/conf/nodes: type, mode, owner,
# device number, links and inode (all of them created in the session, so inodes are kept).
nodes_manifest() {
	(cd "$1/conf/nodes" && find . -mindepth 1 -exec stat -c '%n %F %a %u %g %t:%T %h %i' {} + |
		LC_ALL=C sort)
}

# Connecting to the socket $1 fails with ECONNREFUSED: it exists, and nobody listens.
socket_refused() {
	python3 - "$1" <<'EOF'
import errno, socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
except OSError as e:
    sys.exit(0 if e.errno == errno.ECONNREFUSED else 1)
sys.exit(1)
EOF
}

# Both files are equal; on a difference, the first lines of the diff become diagnostics.
same_files() {
	cmp -s "$1" "$2" && return 0
	diag "$(diff "$1" "$2" | head -20)"
	return 1
}

# Changes made from the shell, checked again after the remount.
shell_changes() {
	local m=$1
	printf 'created before the remount\n' >"$m/wrapper-new.txt" &&
		mkdir -p "$m/wrapper-dir/sub" &&
		printf 'nested\n' >"$m/wrapper-dir/sub/file" &&
		ln -s wrapper-new.txt "$m/wrapper-link" &&
		rm "$m/delete-me.txt" &&
		printf 'overwritten\n' >"$m/overwrite-me.txt" &&
		chmod 0600 "$m/hello.txt" &&
		mv "$m/emptydir" "$m/emptydir.moved" &&
		head -c 300000 /dev/urandom >"$m/wrapper-dir/random.bin"
}

test_root_session() {
	local args=() lower
	mapfile -t lower < <(lower_args "$SRC")
	((EUID == 0)) && args=(--uid "$EOS_TEST_USER")
	if ! fs_mount "$M" "$S" base s1; then
		not_ok "mount session s1 of the base"
		return 1
	fi
	ok "mount session s1 of the base"
	run_conformance view "${RUN_LIMIT[@]}" "$FSC_BIN" --name conf --big-mb "$BIG_MB" \
		--many "$MANY" "${args[@]}" "${lower[@]}" "$M"
	check "change the view from the shell" shell_changes "$M"
	manifest "$M" >"$T/before.manifest"
	manifest_times "$M" >"$T/before.times"
	nodes_manifest "$M" >"$T/before.nodes"
	mkdir -p "$T/mnt2"
	run timeout 30 "$EOSFS_BIN" --store "$S" --sandbox base --session s2 "$T/mnt2"
	expect_refusal "$(cat "$M.pid")" "a second eosfs on a held store is refused naming the pid"
	check "fusermount3 -u unmounts the session and eosfs exits" fs_umount "$M"
}

test_remount() {
	local want=$T/want
	if ! fs_mount "$M" "$S" base s1; then
		not_ok "remount session s1"
		return 1
	fi
	ok "remount session s1"
	manifest "$M" >"$T/after.manifest"
	manifest_times "$M" >"$T/after.times"
	check "after the remount: names, types, modes, links, sizes and content are identical" \
		same_files "$T/before.manifest" "$T/after.manifest"
	check "after the remount: every mtime is identical" \
		same_files "$T/before.times" "$T/after.times"
	nodes_manifest "$M" >"$T/after.nodes"
	check "after the remount: fifos, sockets and devices keep type, mode, owner, rdev, links" \
		same_files "$T/before.nodes" "$T/after.nodes"
	check "after the remount: the socket is there and refuses connections (no listener)" \
		socket_refused "$M/conf/nodes/sock"
	check "a file created before the remount has its content" \
		grep -qx 'created before the remount' "$M/wrapper-new.txt"
	{ cat "$SRC/modify-me.txt" && printf '%s\n' "$WRITE_MARKER"; } >"$want"
	check "the appended lower file kept the old bytes and the append" \
		cmp -s "$want" "$M/modify-me.txt"
	{ cat "$SRC/link-a" && printf '%s\n' "$LINK_MARKER"; } >"$want"
	check "the lower hard link written through link-a kept the write" \
		cmp -s "$want" "$M/link-a"
	check "the lower hard link link-b still shows the write" cmp -s "$want" "$M/link-b"
	check "the lower hard links still share one inode" \
		test "$(stat -c %i "$M/link-a")" = "$(stat -c %i "$M/link-b")"
	check "the deleted lower file stays deleted" test ! -e "$M/delete-me.txt" -a \
		! -L "$M/delete-me.txt"
	check "the renamed lower directory stays renamed" \
		test -d "$M/lowerdir.renamed" -a ! -e "$M/lowerdir"
	check "the chmod of a lower file persisted" test "$(stat -c %a "$M/hello.txt")" = 600
	check "unmount after the remount" fs_umount "$M"
}

# The last run listed the root of the base as imported.
base_listing() {
	[[ $rc == 0 && $out == *lowerdir* && $out == *delete-me.txt* && $out != *wrapper-new* &&
		$out != *lowerdir.renamed* ]]
}

# Version 1 in the store still has the original bytes of everything the view changed.
test_store_unchanged() {
	local f
	for f in modify-me.txt overwrite-me.txt delete-me.txt link-a link-b hello.txt big.bin \
		lowerdir/one lowerdir/sub/two; do
		eos_store --store "$S" cat --sandbox base --version 1 "$f" >"$T/cat.out" \
			2>"$T/cat.err"
		check "store version 1 of '$f' is unchanged" cmp -s "$T/cat.out" "$SRC/$f"
	done
	run eos_store --store "$S" --json stat --sandbox base --version 1 hello.txt
	check "store version 1 keeps the mode of the file chmod'ed in the view" \
		test "$(json_get 'd["mode"]' <<<"$out" 2>/dev/null)" = 0644
	run eos_store --store "$S" ls --sandbox base --version 1
	check "store version 1 lists the original names only" base_listing
	run eos_store --store "$S" ls --sandbox base
	check "the sandbox head is still the base (session changes are private)" base_listing
}

test_read_only() {
	local lower
	mkdir -p "$R"
	run timeout 30 "$EOSFS_BIN" --store "$S" --sandbox base --version 1 --read-only \
		--pid-file "$R.pid" "$R"
	fs_mounts+=("$R")
	if [[ $rc != 0 ]] || ! fs_wait_mounted "$R" 1; then
		not_ok "mount version 1 read-only"
		show_run
		return 1
	fi
	ok "mount version 1 read-only"
	mapfile -t lower < <(printf '%s\n' --lower-file "hello.txt=$SRC/hello.txt" \
		--lower-file "modify-me.txt=$SRC/modify-me.txt" \
		--lower-file "delete-me.txt=$SRC/delete-me.txt" --lower-link link-a=link-b \
		--lower-dir lowerdir)
	run_conformance read-only "${RUN_LIMIT[@]}" "$FSC_BIN" --read-only "${lower[@]}" "$R"
	run touch "$R/new-file"
	expect_refusal "Read-only file system" "touch on the read-only mount fails with EROFS"
	run bash -c 'echo x >>"$1"' sh "$R/hello.txt"
	expect_refusal "Read-only file system" "appending on the read-only mount fails with EROFS"
	check "unmount the read-only mount" fs_umount "$R"
}

# The last run failed (non-zero status) and its stderr contains $1 (and $2 when not empty).
expect_refusal2() {
	local needle=$1 needle2=$2
	shift 2
	if [[ $rc != 0 && $err == *"$needle"* && $err == *"$needle2"* ]]; then
		ok "$*"
	else
		not_ok "$*"
		diag "expected a non-zero exit status and in stderr: '$needle' '$needle2'"
		show_run
	fi
}

expect_refusal() {
	local needle=$1
	shift
	expect_refusal2 "$needle" "" "$@"
}

# A refused eosfs must not leave a mount behind.
not_mounted() {
	if mountpoint -q "$1"; then
		fusermount3 -uz "$1"
		return 1
	fi
}

test_refusals() {
	mkdir -p "$T/full" "$T/free"
	printf 'x\n' >"$T/full/occupant"
	run timeout 30 "$EOSFS_BIN" --store "$S" --sandbox base --session s3 "$T/full"
	expect_refusal2 "$T/full" empty "a non-empty mountpoint is refused naming it"
	check "the refused non-empty mountpoint is not mounted" not_mounted "$T/full"
	run timeout 30 "$EOSFS_BIN" --store "$S" --sandbox base --session s3 "$T/missing"
	expect_refusal "$T/missing" "a missing mountpoint is refused naming it"
	run timeout 30 "$EOSFS_BIN" --store "$S" --sandbox no-such-sandbox --session s3 "$T/free"
	expect_refusal2 no-such-sandbox "not exist" "an unknown sandbox is refused naming it"
	check "the refused unknown sandbox is not mounted" not_mounted "$T/free"
	run timeout 30 "$EOSFS_BIN" --store "$S" --sandbox base --version 99 --read-only "$T/free"
	expect_refusal2 version 99 "an unknown version is refused naming it"
	check "the refused unknown version is not mounted" not_mounted "$T/free"
	run "$EOSFS_BIN" --help
	check "eosfs --help documents --session, --version, --read-only, --pid-file and -o" help_ok
}

# The last run printed a help text naming every option of the contract.
help_ok() {
	local o
	((rc == 0)) || return 1
	for o in --store --sandbox --session --version --read-only --pid-file --owners -f -o; do
		[[ $out == *"$o"* ]] || {
			diag "'$o' is missing from eosfs --help"
			return 1
		}
	done
}

# Root may not stat another user's FUSE mount, so wait as that user (up to 10 s).
user_wait_mounted() {
	local i
	for ((i = 0; i < 200; i++)); do
		as_user mountpoint -q "$1" && return 0
		sleep 0.05
	done
	return 1
}

not_in_mount_table() {
	if grep -q " $1 " /proc/self/mounts; then
		fusermount3 -uz "$1"
		return 1
	fi
}

prepare_user() {
	if ! id -u "$EOS_TEST_USER" >/dev/null 2>&1; then
		diag "creating the unprivileged user '$EOS_TEST_USER'"
		useradd --system --create-home "$EOS_TEST_USER" || return 1
	fi
	if ! as_user test -r /dev/fuse -a -w /dev/fuse; then
		# libfuse opens /dev/fuse itself before falling back to fusermount3.
		diag "making /dev/fuse usable by every user (crw-rw-rw-, as udev sets it)"
		chmod 0666 /dev/fuse || return 1
	fi
	mkdir -p "$U" && chown "$EOS_TEST_USER:" "$U"
}

# A copy of the base tree $1 at $2 with root's owners, plus a set-user-ID root file.
root_copy() {
	cp -a "$1" "$2" && printf '#!/bin/sh\n' >"$2/setuid-tool" && chmod 04755 "$2/setuid-tool"
}

# The user sees every file of root's tree at $1 as its own, the set-user-ID bit as recorded.
user_owns_view() {
	local me others
	me=$(as_user id -u)
	others=$(as_user find "$1" ! -uid "$me" -o ! -gid "$(as_user id -g)")
	[[ -z $others ]] || { diag "not the user's:" "$others" && return 1; }
	[[ $(as_user stat -c '%u %a' "$1/setuid-tool") == "$me 4755" ]]
}

# The whole suite as the unprivileged user, on a store and a mount that user owns.
test_unprivileged() {
	local lower
	if ((EUID != 0)); then
		ok "the unprivileged run # SKIP the main run is already unprivileged"
		return 0
	fi
	check "prepare the unprivileged user '$EOS_TEST_USER'" prepare_user || return 1
	if ! as_user test -x "$FSC_BIN" -a -x "$EOSFS_BIN" -a -x "$EOS_STORE_BIN"; then
		not_ok "'$EOS_TEST_USER' can run fs-conformance, eosfs and eos-store"
		diag "make the build tree readable (scripts/test does chmod -R o+rX)"
		return 1
	fi
	check "root copies the base tree for '$EOS_TEST_USER', with a set-user-ID file" \
		root_copy "$SRC" "$U/src"
	run as_user "$EOS_STORE_BIN" --store "$U/store" import "$U/src" --sandbox base
	expect_rc 0 "'$EOS_TEST_USER' imports root's copy into a store of its own"
	as_user mkdir -p "$U/mnt"
	run as_user timeout 30 "$EOSFS_BIN" --store "$U/store" --sandbox base --session u1 \
		--pid-file "$U/mnt.pid" "$U/mnt"
	fs_mounts+=("$U/mnt")
	if [[ $rc != 0 ]] || ! user_wait_mounted "$U/mnt"; then
		not_ok "'$EOS_TEST_USER' mounts a session (through fusermount3)"
		show_run
		return 1
	fi
	ok "'$EOS_TEST_USER' mounts a session (through fusermount3)"
	check "the user's view shows root's files as the user's, set-user-ID bit included" \
		user_owns_view "$U/mnt"
	mapfile -t lower < <(lower_args "$U/src")
	run_conformance unprivileged as_user "${RUN_LIMIT[@]}" "$FSC_BIN" --name conf --big-mb 64 \
		--many 10000 "${lower[@]}" "$U/mnt"
	user_nodes_manifest "$U/mnt" >"$T/user-before.nodes"
	check "unmount the unprivileged session" fs_umount "$U/mnt"
	check "the unprivileged session is gone from the mount table" not_in_mount_table "$U/mnt"
	test_user_remount
}

# nodes_manifest as the unprivileged user (root may not look into that user's FUSE mount).
user_nodes_manifest() {
	as_user bash -c "$(declare -f nodes_manifest); nodes_manifest \"\$1\"" sh "$1"
}

# The unprivileged session again: its fifos and sockets came back as they were.
test_user_remount() {
	run as_user timeout 30 "$EOSFS_BIN" --store "$U/store" --sandbox base --session u1 \
		--pid-file "$U/mnt.pid" "$U/mnt"
	if [[ $rc != 0 ]] || ! user_wait_mounted "$U/mnt"; then
		not_ok "'$EOS_TEST_USER' remounts its session"
		show_run
		return 1
	fi
	ok "'$EOS_TEST_USER' remounts its session"
	user_nodes_manifest "$U/mnt" >"$T/user-after.nodes"
	check "after the unprivileged remount: fifos and sockets keep type, mode, owner, links" \
		same_files "$T/user-before.nodes" "$T/user-after.nodes"
	check "unmount the remounted unprivileged session" fs_umount "$U/mnt"
}

# fs_cleanup asks mountpoint(1), which root cannot for another user's FUSE mount: unmount those
# from the mount table first.
cleanup() {
	local m
	for m in "${fs_mounts[@]}"; do
		grep -q " $m " /proc/self/mounts && fusermount3 -uz "$m" 2>/dev/null
	done
	fs_cleanup
}

main() {
	tap_tmpdir
	fs_require
	trap cleanup EXIT
	[[ -x $FSC_BIN ]] || bail_out "'$FSC_BIN' is missing (make check builds it)"
	S=$T/store
	SRC=$T/src
	M=$T/mnt
	R=$T/ro
	U=$T/user
	make_base "$SRC"
	run eos_store --store "$S" import "$SRC" --sandbox base
	expect_rc 0 "import the base tree as sandbox 'base'"
	if test_root_session; then
		test_remount
	fi
	test_store_unchanged
	test_read_only
	test_refusals
	test_unprivileged
	tap_done
}

main "$@"
