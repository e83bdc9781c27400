#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Fifos, sockets and devices end to end (TAP), with the real binaries: import of a directory and
# of tar archives (python's tarfile and GNU tar) holding each, `ls` and `stat` of them, a session
# that creates more through a mounted view and publishes (its socket skipped and listed), dir and
# tar exports round-tripped onto a copy of the source, the dir export refused for a user who may
# not create devices (and the tar export not), and blame's refusal. Host devices need root: as
# another user the script says so and checks the rest.

# Many helpers below only run through `check`, which shellcheck cannot follow.
# shellcheck disable=SC2317

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=fs-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/fs-lib.sh"

ROOT=false
((EUID == 0)) && ROOT=true

# One line per path below $1: name, type, mode, owner, device number and link count.
nodes_of() {
	(cd "$1" && find . -mindepth 1 ! -name sock -exec stat -c '%n %F %a %u %g %t:%T %h' {} + |
		LC_ALL=C sort)
}

# Bind a Unix socket at $1 and leave it behind (as a crashed server would).
make_socket() {
	python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$1"
}

# The source tree: a file, a fifo and its hard link, a socket, and as root two devices.
make_src() {
	mkdir -p "$SRC/d" "$SRC/dev"
	printf 'file\n' >"$SRC/f"
	mkfifo -m 0640 "$SRC/d/fifo"
	ln "$SRC/d/fifo" "$SRC/d/fifo.link"
	make_socket "$SRC/sock"
	if $ROOT; then
		mknod -m 0666 "$SRC/dev/null" c 1 3
		mknod -m 0660 "$SRC/dev/loop" b 7 0
		chown 12:34 "$SRC/dev/loop"
	fi
}

# A tar of fifos and devices made by python's tarfile (no root needed), with a hard link.
make_py_tar() {
	python3 - "$1" <<'EOF'
import sys, tarfile
with tarfile.open(sys.argv[1], 'w', format=tarfile.PAX_FORMAT) as t:
    for name, kind, major, minor, mode in [('fifo', tarfile.FIFOTYPE, 0, 0, 0o600),
                                           ('tty', tarfile.CHRTYPE, 4, 1, 0o620),
                                           ('sda', tarfile.BLKTYPE, 8, 0, 0o660)]:
        ti = tarfile.TarInfo(name)
        ti.type, ti.devmajor, ti.devminor, ti.mode, ti.uid, ti.gid = kind, major, minor, mode, 0, 5
        t.addfile(ti)
    ti = tarfile.TarInfo('fifo.link')
    ti.type, ti.linkname = tarfile.LNKTYPE, 'fifo'
    t.addfile(ti)
EOF
}

# `stat --json` of $2 in sandbox $1 has every FIELD=VALUE of $3...: one eos-store run.
stat_is() {
	local sandbox=$1 path=$2 doc pair got
	shift 2
	doc=$(eos_store --store "$S" --json stat --sandbox "$sandbox" "$path") || return 1
	for pair in "$@"; do
		got=$(json_get "d[\"${pair%%=*}\"]" <<<"$doc")
		[[ $got == "${pair#*=}" ]] || {
			diag "$sandbox:$path: ${pair%%=*} is '$got', expected '${pair#*=}'"
			return 1
		}
	done
}

test_import_dir() {
	local want=2
	$ROOT && want=4
	run eos_store --store "$S" --json import "$SRC" --sandbox dir
	expect_rc 0 "import a directory holding a fifo, its hard link, a socket and devices"
	check "the import counts the fifos and devices" \
		test "$(json_get 'd["specials"]' <<<"$out")" = "$want"
	check "the import lists the socket as skipped" \
		test "$(json_get 'd["skipped"]' <<<"$out")" = '[{"path": "sock", "kind": "socket"}]'
	run eos_store --store "$T/text-store" import "$SRC" --sandbox text
	check "the text output names the skipped socket" \
		grep -Eq '^sock +socket$' <<<"$out"
	check "stat: the fifo is kind fifo, mode 0640" stat_is dir d/fifo kind=fifo mode=0640
	check "stat: its hard link is a fifo of its own" \
		stat_is dir d/fifo.link kind=fifo link_group=0
	run eos_store --store "$S" stat --sandbox dir sock
	expect_rc 1 "the socket is not in the store"
	if ! $ROOT; then
		ok "devices in a directory import # SKIP mknod needs root"
		return
	fi
	check "stat: the character device has its number, mode and kind" \
		stat_is dir dev/null kind=chr rdev=1:3 mode=0666
	check "stat: the block device keeps its owner" \
		stat_is dir dev/loop kind=blk rdev=7:0 uid=12 gid=34
	run eos_store --store "$S" ls --sandbox dir dev
	check "ls shows the devices' kinds and numbers" \
		grep -Eq '^blk .* loop +7:0$' <<<"$out"
	check "ls shows the character device's number" grep -Eq '^chr .* null +1:3$' <<<"$out"
}

test_import_tars() {
	make_py_tar "$T/py.tar"
	run eos_store --store "$S" --json import "$T/py.tar" --sandbox py
	expect_rc 0 "import a tar of fifos and devices written by python's tarfile"
	check "the tar import counts 4 fifos and devices, no hard links" \
		test "$(json_get '[d["specials"], d["hardlinks"]]' <<<"$out")" = '[4, 0]'
	check "the tar's character device: kind, number, mode, group" \
		stat_is py tty kind=chr rdev=4:1 mode=0620 gid=5
	check "the tar's block device" stat_is py sda kind=blk rdev=8:0
	check "the tar's fifo, and its hard link as a fifo of its own" \
		stat_is py fifo.link kind=fifo mode=0600 link_group=0
	run tar -C "$SRC" --format=pax -cf "$T/gnu.tar" .
	run eos_store --store "$S" --json import "$T/gnu.tar" --sandbox gnu
	expect_rc 0 "import GNU tar's archive of the source tree (which leaves the socket out)"
	local dir a
	for dir in "" d dev; do
		a=$(eos_store --store "$S" --json ls --sandbox dir "$dir" | json_get 'd["entries"]')
		run eos_store --store "$S" --json ls --sandbox gnu "$dir"
		check "the GNU tar import lists '$dir' as the directory import does" \
			test "$a" = "$(json_get 'd["entries"]' <<<"$out")"
	done
}

# A session that creates a fifo, devices (root) and a socket, and changes a lower device.
session_changes() {
	mkfifo -m 0600 "$M/new-fifo" || return 1
	python3 - "$M/new-sock" <<'EOF' || return 1
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen(1)
c = socket.socket(socket.AF_UNIX)
c.connect(sys.argv[1])
a, _ = s.accept()
c.send(b'ping')
sys.exit(0 if a.recv(4) == b'ping' else 1)
EOF
	$ROOT || return 0
	mknod -m 0640 "$M/new-chr" c 1 5 && mknod -m 0600 "$M/new-blk" b 8 0 &&
		chmod 0600 "$M/dev/null"
}

test_publish() {
	if ! fs_mount "$M" "$S" dir s1; then
		not_ok "mount a session of the imported tree"
		return 1
	fi
	ok "mount a session of the imported tree"
	check "the view shows the lower fifo with its mode and links" \
		test "$(stat -c '%F %a %h' "$M/d/fifo")" = "fifo 640 1"
	if $ROOT; then
		check "the view shows the lower devices with their numbers and owners" \
			test "$(stat -c '%F %t:%T %u:%g' "$M/dev/null" "$M/dev/loop")" = \
			"$(printf 'character special file 1:3 0:0\nblock special file 7:0 12:34')"
	fi
	check "create a fifo, a bound socket and devices in the view" session_changes
	check "unmount the session" fs_umount "$M"
	run eos_store --store "$S" --json publish --sandbox dir --session s1
	expect_rc 0 "publish the session"
	check "the publish lists the socket as skipped" \
		test "$(json_get 'd["skipped"]' <<<"$out")" = '[{"path": "new-sock", "kind": "socket"}]'
	check "the head has the new fifo" stat_is dir new-fifo kind=fifo mode=0600
	run eos_store --store "$S" stat --sandbox dir new-sock
	expect_rc 1 "the head has no socket"
	$ROOT || return 0
	check "the head has the new character device" stat_is dir new-chr kind=chr rdev=1:5
	check "the head has the new block device" stat_is dir new-blk kind=blk rdev=8:0
	check "the head has the lower device's new mode" stat_is dir dev/null mode=0600 rdev=1:3
}

# dir and tar exports of base..head onto copies of the source give the same tree.
test_export() {
	cp -a "$SRC" "$T/dest-dir" && rm "$T/dest-dir/sock"
	cp -a "$T/dest-dir" "$T/dest-tar"
	run eos_store --store "$S" export --sandbox dir --format dir --dest "$T/dest-dir"
	expect_rc 0 "export the session's layer onto a copy of the source (dir)"
	run eos_store --store "$S" export --sandbox dir --format tar --dest "$T/layer.tar"
	expect_rc 0 "export the session's layer as a tar"
	run tar -C "$T/dest-tar" -xpf "$T/layer.tar"
	expect_rc 0 "extract the tar layer onto another copy of the source"
	nodes_of "$T/dest-dir" >"$T/dir.nodes"
	nodes_of "$T/dest-tar" >"$T/tar.nodes"
	check "the dir export and the extracted tar are the same tree" \
		cmp -s "$T/dir.nodes" "$T/tar.nodes"
	check "the export made the new fifo" test -p "$T/dest-dir/new-fifo"
	$ROOT || return 0
	check "the export made the new devices, with their numbers and modes" \
		test "$(stat -c '%F %t:%T %a' "$T/dest-dir/new-chr" "$T/dest-dir/new-blk")" = \
		"$(printf 'character special file 1:5 640\nblock special file 8:0 600')"
}

# A user without CAP_MKNOD: the dir export is refused naming the device, the tar export works.
test_export_unprivileged() {
	if ! $ROOT; then
		ok "an export by a user who may not create devices # SKIP already that user"
		return
	fi
	local u=$T/user
	mkdir "$u" && cp -a "$S" "$u/store" && cp -a "$SRC" "$u/dest" && rm "$u/dest/sock" ||
		return 1
	chown -R "$EOS_TEST_USER:" "$u"
	run as_test_user "$EOS_STORE_BIN" --store "$u/store" export --sandbox dir --format dir \
		--dest "$u/dest"
	expect_rc_match 1 err "create character device 'dev/null': Operation not permitted" \
		"as '$EOS_TEST_USER', the dir export is refused naming the device"
	check "the refused export left the destination as it was" test ! -e "$u/dest/new-fifo"
	run as_test_user "$EOS_STORE_BIN" --store "$u/store" export --sandbox dir --format tar \
		--dest "$u/layer.tar"
	expect_rc 0 "as '$EOS_TEST_USER', the tar export holds the devices"
	run tar -tvf "$u/layer.tar"
	check "the user's tar has the block device 8:0" grep -Eq '^b.* 8,0 .*new-blk$' <<<"$out"
}

main() {
	tap_tmpdir
	require_eos_store
	fs_require
	S=$T/store
	SRC=$T/src
	M=$T/mnt
	$ROOT || diag "not root: devices are made only through tar archives"
	make_src
	test_import_dir
	test_import_tars
	test_publish
	test_export
	test_export_unprivileged
	run eos_store --store "$S" blame --sandbox dir d/fifo
	expect_rc_match 1 err "'d/fifo' is a fifo, not a file" "blame of a fifo: not a file"
	run eos_store --store "$S" export --sandbox dir --format patch
	expect_rc_match 1 err "a patch cannot hold" "a patch export of a fifo is refused"
	run eos_store --store "$S" fsck
	expect_rc 0 "fsck is clean"
	tap_done
}

main "$@"
