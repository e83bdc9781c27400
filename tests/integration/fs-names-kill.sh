#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# A namespace change that returned survives a SIGKILL of eosfs (TAP; doc/fs.md, "Persistence"):
# creates, mkdirs, symlinks, hard links, renames, unlinks and rmdirs of a session are journaled as
# images of their records and reach the store in batches later, at the journal's rotation. A
# session is mounted with eosfs's default options; a storm of creates large enough to rotate the
# journal runs, then changes of every kind, of new and of lower files. eosfs is SIGKILLed at
# once; after a remount the tree is the same (names, types, modes, link counts, sizes, targets,
# bytes), and again after a clean unmount and one more mount; fsck is clean and a publish
# carries the changes. As root, the same runs again as the unprivileged user.

# Helpers below only run through `check`, which shellcheck cannot follow.
# shellcheck disable=SC2317

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=fs-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/fs-lib.sh"

require_eos_store
tap_tmpdir
fs_require
S=$T/store
M=$T/mnt
FILES=15000

# Everything the checks compare, one line per path, sorted.
tree() {
	(cd "$M" && find . -printf '%p %y %m %n %s %l\n' | LC_ALL=C sort &&
		find . -type f -size +0 -print0 | LC_ALL=C sort -z | xargs -0 -r md5sum)
}

storm() {
	mkdir -p "$M/a/b/c" "$M/a/x" &&
		seq -f "$M/a/b/f%05g" 0 $((FILES - 1)) | xargs touch &&
		printf 'first\n' >"$M/a/b/f00000" && printf 'second\n' >"$M/a/b/f00001" &&
		printf 'moved\n' >"$M/a/b/f10000"
}

change_everything() {
	rm -f "$M"/a/b/f0[1-4]* "$M"/a/b/f0000[2-9] &&
		mv "$M/a/b/f10000" "$M/moved" && ln "$M/a/b/f00001" "$M/a/x/hard" &&
		ln -s ../b/f00000 "$M/a/x/sym" && rmdir "$M/a/b/c" &&
		rm "$M/lower.txt" && mv "$M/lower2.txt" "$M/a/renamed2.txt" &&
		rm -r "$M/ldir" && mkdir "$M/ldir" && printf 'new\n' >"$M/ldir/new.txt" &&
		mkfifo "$M/a/fifo" && mv "$M/a/x" "$M/a/y"
}

mkdir -p "$T/src/ldir"
printf 'lower\n' >"$T/src/lower.txt"
printf 'lower two\n' >"$T/src/lower2.txt"
printf 'old\n' >"$T/src/ldir/old.txt"
check "import a base" fs_import "$S" names "$T/src"
check "mount a session" fs_mount "$M" "$S" names s1
check "a storm of $FILES creates" storm
check "unlink, rename, link, symlink, rmdir, whiteouts, an opaque directory" change_everything
want=$(tree)
check "the tree holds what was made before the kill" grep -q '^./a/y/hard f 644 2 7 ' <<<"$want"
check "the journal rotated during the storm" test "$(find "$S/sessions" -name 'journal-*' | sort |
	tail -1 | sed 's/.*journal-0*//')" -ge 2

check "SIGKILL eosfs; the dead mount is gone" fs_kill "$M"
check "mount the session again" fs_mount "$M" "$S" names s1
expect_output "$want" "after the SIGKILL every acknowledged namespace change is there" \
	tree
check "unmount cleanly" fs_umount "$M"
check "mount once more" fs_mount "$M" "$S" names s1
expect_output "$want" "the same after a clean unmount and a mount (the replay was written)" \
	tree
check "unmount" fs_umount "$M"
fs_fsck_publish "$S" names s1
run eos_store --store "$S" stat --sandbox names moved
check "the head has moved" test "$rc" = 0
run eos_store --store "$S" stat --sandbox names lower.txt
check "the head lost lower.txt" test "$rc" != 0
run eos_store --store "$S" stat --sandbox names ldir/old.txt
check "the head's ldir is the new one" test "$rc" != 0

rerun_as_test_user "${BASH_SOURCE[0]}"
tap_done
