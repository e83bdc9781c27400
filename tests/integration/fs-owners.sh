#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Owners at the mount (doc/fs.md "Owners"), with eosfs's default options. As root: a root mount
# is open to other users (allow_other) with access decided by the modes, a set-user-ID root
# program in it grants nothing (nosuid), and eosfs refuses -o suid and -o dev. As the
# unprivileged user (eos-test when run as root): a tar of root's files (one of another uid, a
# 0600 file, a set-user-ID file) imported into a store of its own shows every file as the
# user's and writable as in a checkout of its own, writes clear the set-user-ID bit, new files
# are recorded with the sandbox's owner, the publish keeps the recorded owners, --owners
# identity shows them as recorded.

# Many helpers below only run through `check`, which shellcheck cannot follow.
# shellcheck disable=SC2317

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=fs-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/fs-lib.sh"

as_user() {
	if ((EUID == 0)); then
		as_test_user "$@"
	else
		"$@"
	fi
}

# The options of mount point $1 in the mount table.
mount_options() {
	local _src mnt _type opts _rest
	while read -r _src mnt _type opts _rest; do
		[[ $mnt == "$1" ]] && printf '%s\n' "$opts" && return 0
	done </proc/self/mounts
	return 1
}

# Mount point $1 has every option of the list $2 and none of the list $3 (comma-separated).
has_options() {
	local opts o
	opts=,$(mount_options "$1"),
	for o in ${2//,/ }; do
		[[ $opts == *",$o,"* ]] || { diag "'$1' lacks '$o': $opts" && return 1; }
	done
	for o in ${3//,/ }; do
		[[ $opts != *",$o,"* ]] || { diag "'$1' has '$o': $opts" && return 1; }
	done
}

# --- a root mount ------------------------------------------------------------------------------

test_root_mount() {
	local src=$T/root-src m=$T/root-mnt
	mkdir -p "$src/dir"
	printf 'public\n' >"$src/pub"
	printf 'secret\n' >"$src/secret"
	chmod 0600 "$src/secret"
	cp /usr/bin/id "$src/suid-id"
	chmod 04755 "$src/suid-id"
	chmod 0755 "$src"
	fs_import "$T/store" root "$src" || bail_out "cannot import the root tree"
	if ! fs_mount "$m" "$T/store" root s1; then
		not_ok "root mounts a session with the default options"
		return
	fi
	ok "root mounts a session with the default options"
	check "the root mount has allow_other,default_permissions,nosuid,nodev" \
		has_options "$m" allow_other,default_permissions,nosuid,nodev ""
	run as_test_user cat "$m/pub"
	expect_rc_match 0 out public "'$EOS_TEST_USER' reads root's 0644 file on root's mount"
	run as_test_user cat "$m/secret"
	expect_rc_match 1 err "Permission denied" "'$EOS_TEST_USER' may not read root's 0600 file"
	run as_test_user "$m/suid-id" -u
	if [[ $rc == 0 && $out == "$(id -u "$EOS_TEST_USER")" ]]; then
		ok "a set-user-ID root program in the view runs as its caller (nosuid)"
	else
		not_ok "a set-user-ID root program in the view runs as its caller (nosuid)"
		show_run
	fi
	check "unmount the root mount" fs_umount "$m"
	mkdir -p "$T/free"
	run "$EOSFS_BIN" --store "$T/store" --sandbox root --session s2 -o suid \
		--pid-file "$T/free.pid" "$T/free"
	expect_rc_match 1 err "'suid' is refused" "eosfs -o suid is refused naming the option"
	check "the refused -o suid left no mount" not_mounted "$T/free"
	run "$EOSFS_BIN" --store "$T/store" --sandbox root --session s2 -o noatime,dev \
		--pid-file "$T/free.pid" "$T/free"
	expect_rc_match 1 err "'dev' is refused" "eosfs -o dev is refused naming the option"
	check "the refused -o dev left no mount" not_mounted "$T/free"
}

# $1 is no mount point (one there is unmounted, and its eosfs waited for).
not_mounted() {
	fs_is_mounted "$1" || return 0
	fs_umount "$1"
	return 1
}

# --- the unprivileged user's tar of root's files -----------------------------------------------

# A script writing a tar of root's files, whoever runs it: python's tarfile sets each entry's
# owner.
write_tar_script() {
	cat >"$1" <<'EOF'
import io, sys, tarfile, time

def add(tar, name, mode, data=None, uid=0, gid=0):
    info = tarfile.TarInfo(name)
    info.mode, info.uid, info.gid, info.mtime = mode, uid, gid, int(time.time())
    info.uname = info.gname = "root" if uid == 0 else ""
    if data is None:
        info.type = tarfile.DIRTYPE
        tar.addfile(info)
    else:
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))

with tarfile.open(sys.argv[1], "w") as tar:
    add(tar, ".", 0o755)
    add(tar, "pub", 0o644, b"public\n")
    add(tar, "secret", 0o600, b"secret\n")
    add(tar, "other", 0o644, b"another uid\n", uid=1234, gid=1234)
    add(tar, "setuid-tool", 0o4755, b"#!/bin/sh\necho tool\n")
    add(tar, "ro", 0o555)
    add(tar, "ro/file", 0o444, b"read-only\n")
EOF
	chmod 0644 "$1"
}

# stat -c FORMAT of each file ($2...) to the user, on one line.
shown() {
	local f=$1 line
	shift
	line=$(as_user stat -c "$f" "$@" | tr '\n' ' ')
	printf '%s\n' "${line% }"
}

# Every path below $1 shows uid:gid $2 (to the user).
all_owned_by() {
	local bad
	bad=$(as_user find "$1" ! -user "${2%:*}" -o ! -group "${2#*:}")
	[[ -z $bad ]] || { diag "not shown as $2:" "$bad" && return 1; }
}

# The user's session changes: writes to root's files, new names, a read-only directory.
user_edits() {
	local m=$1
	as_user sh -c "echo more >>'$m/pub' && echo mine >'$m/secret' && echo too >>'$m/other'" &&
		as_user mkdir "$m/newdir" && as_user sh -c "echo new >'$m/newdir/new'" &&
		as_user chown "$(as_user id -u):$(as_user id -g)" "$m/pub" &&
		! as_user sh -c "echo x >'$m/ro/new'" 2>/dev/null &&
		as_user chmod u+w "$m/ro" && as_user sh -c "echo x >'$m/ro/new'"
}

# Path $2 of store $1 has uid $3, gid $4 and mode $5 in the head of sandbox tar.
recorded() {
	local got
	got=$(as_user "$EOS_STORE_BIN" --store "$1" --json stat --sandbox tar "$2" |
		json_get '"%s:%s:%s" % (d["uid"], d["gid"], d["mode"])')
	[[ $got == "$3:$4:$5" ]] || { diag "'$2' is recorded as $got, expected $3:$4:$5" && return 1; }
}

test_user_tar() {
	local u=$T/user s=$T/user/store m=$T/user/mnt me
	mkdir -p "$u"
	((EUID != 0)) || chown "$EOS_TEST_USER:" "$u"
	write_tar_script "$T/make-tar.py"
	check "build a tar of root's files, one of uid 1234, a 0600 and a set-user-ID file" \
		as_user python3 "$T/make-tar.py" "$u/root.tar"
	run as_user "$EOS_STORE_BIN" --store "$s" import "$u/root.tar" --sandbox tar
	expect_rc 0 "the user imports the tar into a store of its own"
	as_user mkdir -p "$m"
	fs_mounts+=("$m")
	run as_user "$EOSFS_BIN" --store "$s" --sandbox tar --session s --pid-file "$m.pid" "$m"
	if [[ $rc != 0 ]] || ! fs_wait_mounted "$m" 1; then
		not_ok "the user mounts a session with the default options"
		show_run
		return
	fi
	ok "the user mounts a session with the default options"
	check "the user's mount has nosuid,nodev and no allow_other" \
		has_options "$m" default_permissions,nosuid,nodev allow_other
	me="$(as_user id -u):$(as_user id -g)"
	check "every file shows as the user's ($me)" all_owned_by "$m" "$me"
	check "modes show as recorded (set-user-ID 4755, 0600, a 0555 directory)" test \
		"$(shown %a "$m/setuid-tool" "$m/secret" "$m/ro")" = "4755 600 555"
	check "the user writes root's files, creates names and chowns to itself, as in a checkout" \
		user_edits "$m"
	check "a write to the set-user-ID file clears the bit" as_user sh -c \
		"echo '# edited' >>'$m/setuid-tool' && test \"\$(stat -c %a '$m/setuid-tool')\" = 755"
	check "unmount the user's session" fs_umount "$m"
	run as_user "$EOS_STORE_BIN" --store "$s" publish --sandbox tar --session s
	expect_rc 0 "the user publishes the session"
	check "published: root's written files keep uid 0 and their modes" \
		recorded "$s" pub 0 0 0644
	check "published: the 0600 file keeps uid 0" recorded "$s" secret 0 0 0600
	check "published: the file of uid 1234 keeps it" recorded "$s" other 1234 1234 0644
	check "published: the written set-user-ID file is uid 0, mode 0755" \
		recorded "$s" setuid-tool 0 0 0755
	check "published: new names have the sandbox's owner (its root's, uid 0)" \
		recorded "$s" newdir/new 0 0 0644
	check "published: the new directory too" recorded "$s" newdir 0 0 0755
	test_user_identity "$s" "$m"
}

# --owners identity: the recorded owners, and what they allow.
test_user_identity() {
	local s=$1 m=$2
	run as_user "$EOSFS_BIN" --store "$s" --sandbox tar --session s2 --owners identity \
		--pid-file "$m.pid" "$m"
	if [[ $rc != 0 ]] || ! fs_wait_mounted "$m" 1; then
		not_ok "the user mounts with --owners identity"
		show_run
		return
	fi
	ok "the user mounts with --owners identity"
	check "--owners identity shows the recorded owners" test \
		"$(shown %u:%g "$m/pub" "$m/other")" = "0:0 1234:1234"
	check "--owners identity: root's 0644 file is not the user's to write" \
		not as_user sh -c "echo x >>'$m/pub'" 2>/dev/null
	check "unmount the identity mount" fs_umount "$m"
}

cleanup() {
	local m
	for m in "${fs_mounts[@]}"; do
		fs_is_mounted "$m" && fusermount3 -uz "$m" 2>/dev/null
	done
	fs_cleanup
}

main() {
	require_eos_store
	tap_tmpdir
	fs_require
	trap cleanup EXIT
	if ((EUID == 0)); then
		id -u "$EOS_TEST_USER" >/dev/null 2>&1 ||
			bail_out "user '$EOS_TEST_USER' is missing (scripts/test creates it)"
		test_root_mount
	else
		ok "a root mount seen by another user # SKIP needs root (make check as root runs it)"
	fi
	test_user_tar
	tap_done
}

main "$@"
