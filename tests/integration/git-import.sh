#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Importing a git work tree refreshes its index for the session views (store/import-git.c): the
# first `git status` in a new session shows what it shows on the host and re-hashes nothing
# (git then leaves .git/index alone, so the session changes no index), for index versions 2, 3
# and 4, a SHA-256 repository and a work tree below the import's root. An entry whose file
# changed after git last hashed it keeps the host's stat data, so git still finds the change.
# A submodule's index (in .git/modules) is refreshed against the work tree its config names,
# from a directory and from an archive.
# Indexes this importer does not rewrite (a split index, a damaged one, any with
# --keep-git-index) are imported byte for byte. A tar import refreshes the entries whose
# object id is the archive's content.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/fs-lib.sh"

require_eos_store
tap_tmpdir
fs_require
command -v git >/dev/null || bail_out "git is missing (apt-get install git)"

S=$T/store
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com GIT_COMMITTER_NAME=t \
	GIT_COMMITTER_EMAIL=t@example.com GIT_CONFIG_NOSYSTEM=1 HOME=$T

# A work tree at $1 (git init options $2...): four clean tracked files, one tracked file changed
# after the commit, one untracked. Times are in the past so that no entry is racily clean.
make_repo() {
	local dir=$1
	shift
	mkdir -p "$dir/dir"
	git init -q "$@" "$dir" || return 1
	printf 'alpha\n' >"$dir/a.txt"
	printf 'beta\n' >"$dir/dir/b.txt"
	printf '#!/bin/sh\necho hi\n' >"$dir/exe.sh"
	chmod +x "$dir/exe.sh"
	ln -s a.txt "$dir/link"
	printf 'old\n' >"$dir/dirty.txt"
	find "$dir" -path "$dir/.git" -prune -o -exec touch -h -d '2020-01-01 00:00:00' {} +
	git -C "$dir" add -A && git -C "$dir" commit -qm one || return 1
	printf 'new content\n' >"$dir/dirty.txt"
	touch -d '2020-01-02 00:00:00' "$dir/dirty.txt"
	printf 'untracked\n' >"$dir/new.txt"
	git -C "$dir" status --porcelain >"$dir.status"
}

# Import $2 as sandbox $1; prints the import's JSON document.
import_json() {
	eos_store --store "$S" --json import "$2" --sandbox "$1"
}

# The paths session $2 of sandbox $1 changed, one a line (eos-store must answer: the store is
# free once the session is unmounted).
delta_paths() {
	local doc
	doc=$(eos_store --store "$S" --json delta --sandbox "$1" "$2") || return 1
	json_get "'\\n'.join(c['path'] for c in d['changes'])" <<<"$doc"
}

# Whether the session's changes ($1, from delta_paths) include path $2.
# shellcheck disable=SC2317 # called through check
has_path() {
	grep -qxF "$2" <<<"$1"
}

# Mount session $2 of sandbox $1 at $T/mnt-$1, run `git status --porcelain` in work tree $3 of
# it (relative), and compare with the host's status file $4; then check the index untouched.
check_view_status() {
	local id=$1 session=$2 sub=$3 want=$4 mnt=$T/mnt-$1
	fs_mount "$mnt" "$S" "$id" "$session" || {
		not_ok "$id: the session mounts"
		return
	}
	git -C "$mnt/$sub" status --porcelain >"$T/$id.view-status" 2>"$T/$id.view-err"
	if cmp -s "$want" "$T/$id.view-status"; then
		ok "$id: git status in a new session shows what it shows on the host"
	else
		not_ok "$id: git status in a new session shows what it shows on the host"
		diag "host:" "$(cat "$want")" "view:" "$(cat "$T/$id.view-status" "$T/$id.view-err")"
	fi
	fs_umount "$mnt" || bail_out "unmounting $mnt failed"
	changes=$(delta_paths "$id" "$session") || bail_out "eos-store delta of $id/$session failed"
	check "$id: git found no file to re-hash, so it left the index alone" \
		not has_path "$changes" "${sub:+$sub/}.git/index"
}

test_plain() {
	local doc
	make_repo "$T/v2" || bail_out "git init failed"
	doc=$(import_json v2 "$T/v2") || bail_out "import of v2 failed"
	check "v2: the four clean entries are refreshed, the changed file's is not" \
		test "$(json_get 'd["git_index_entries"]' <<<"$doc")" = 4
	check "v2: the index is counted among the imported files" \
		test "$(json_get 'd["files"]' <<<"$doc")" = "$(find "$T/v2" -type f | wc -l)"
	check_view_status v2 s1 "" "$T/v2.status"
	# the head keeps what the import refreshed: every new session finds it
	check_view_status v2 s2 "" "$T/v2.status"
}

# Set the stat data of entry $2 of the SHA-1, version 2 index of work tree $1 to what the file
# holds now, keeping the object id: git then takes the file as clean unless the entry is racily
# clean (written in the index's second), when it reads the content again.
restat_entry() {
	python3 - "$1" "$2" <<'PY'
import hashlib, os, struct, sys
top, name = sys.argv[1], sys.argv[2].encode()
path = os.path.join(top, '.git/index')
data = bytearray(open(path, 'rb').read())
assert data[:4] == b'DIRC' and struct.unpack('>I', data[4:8])[0] == 2
at = 12
for _ in range(struct.unpack('>I', data[8:12])[0]):
    n = struct.unpack('>H', data[at + 60:at + 62])[0] & 0xfff
    if bytes(data[at + 62:at + 62 + n]) == name:
        st = os.lstat(os.path.join(top, sys.argv[2]))
        data[at:at + 24] = struct.pack('>6I', int(st.st_ctime), st.st_ctime_ns % 10**9,
                                       int(st.st_mtime), st.st_mtime_ns % 10**9,
                                       st.st_dev & 0xffffffff, st.st_ino & 0xffffffff)
        data[at + 36:at + 40] = struct.pack('>I', st.st_size)
    at += (62 + n + 8) // 8 * 8
body = bytes(data[:-20])
open(path, 'wb').write(body + hashlib.sha1(body).digest())
PY
}

# Racily clean entries (written in the index's second, here because the index's mtime is theirs,
# as after a checkout): git reads such a file again whatever its stat data says, so the import
# checks their content, refreshes those that hold what git hashed, and shows the index as
# written a second after them, so that git trusts them in the view.
test_racy() {
	local doc
	make_repo "$T/racy" || bail_out "git init failed"
	touch -d '2020-01-01 00:00:00' "$T/racy/.git/index"
	doc=$(import_json racy "$T/racy") || bail_out "import of racy failed"
	check "racy: the four clean entries are refreshed" \
		test "$(json_get 'd["git_index_entries"]' <<<"$doc")" = 4
	check_view_status racy s1 "" "$T/racy.status"
	(cd "$T/racy" && tar -cf "$T/racy.tar" .) || bail_out "tar failed"
	doc=$(import_json racy-tar "$T/racy.tar") || bail_out "import of racy.tar failed"
	check "racy, tar: the four clean entries are refreshed" \
		test "$(json_get 'd["git_index_entries"]' <<<"$doc")" = 4
	check_view_status racy-tar s1 "" "$T/racy.status"

	# the classic racy case: new bytes of the same size within the second the index recorded
	make_repo "$T/racy2" || bail_out "git init failed"
	printf 'ALPHA\n' >"$T/racy2/a.txt"
	touch -d '2020-01-01 00:00:00' "$T/racy2/a.txt"
	restat_entry "$T/racy2" a.txt || bail_out "restat of a.txt failed"
	touch -d '2020-01-01 00:00:00' "$T/racy2/.git/index"
	cp -a "$T/racy2" "$T/racy2-host"
	git -C "$T/racy2-host" status --porcelain >"$T/racy2.status"
	check "racy: git on the host finds the changed bytes" grep -qxF ' M a.txt' "$T/racy2.status"
	doc=$(import_json racy2 "$T/racy2") || bail_out "import of racy2 failed"
	check "racy: an entry whose bytes changed within its second is not refreshed" \
		test "$(json_get 'd["git_index_entries"]' <<<"$doc")" = 3
	fs_mount "$T/mnt-racy2" "$S" racy2 s1 || bail_out "racy2: mount failed"
	git -C "$T/mnt-racy2" status --porcelain >"$T/racy2.view-status"
	fs_umount "$T/mnt-racy2" || bail_out "unmounting $T/mnt-racy2 failed"
	check "racy: git status in the view finds the changed bytes too" \
		cmp -s "$T/racy2.status" "$T/racy2.view-status"
}

# The control: files touched after git's last look keep the host's stat data, so git in the
# view re-hashes them and rewrites the index (what every import did before).
test_stale() {
	local doc mnt=$T/mnt-stale
	make_repo "$T/stale" || bail_out "git init failed"
	touch -d '2020-01-03 00:00:00' "$T/stale/a.txt" "$T/stale/dir/b.txt"
	doc=$(import_json stale "$T/stale") || bail_out "import of stale failed"
	check "stale: entries of files touched after the index are not refreshed" \
		test "$(json_get 'd["git_index_entries"]' <<<"$doc")" = 2
	fs_mount "$mnt" "$S" stale s1 || bail_out "stale: mount failed"
	git -C "$mnt" status --porcelain >"$T/stale.view-status"
	check "stale: git status in the view still shows what it shows on the host" \
		cmp -s "$T/stale.status" "$T/stale.view-status"
	fs_umount "$mnt" || bail_out "unmounting $mnt failed"
	changes=$(delta_paths stale s1) || bail_out "eos-store delta of stale/s1 failed"
	check "stale: git re-hashed the touched files and rewrote the index" \
		has_path "$changes" .git/index
}

test_versions() {
	local doc
	make_repo "$T/v3" || bail_out "git init failed"
	# intent-to-add sets an extended flag, which makes git write version 3
	printf 'later\n' >"$T/v3/ita.txt"
	git -C "$T/v3" add -N ita.txt
	git -C "$T/v3" status --porcelain >"$T/v3.status"
	check "v3: git wrote an index of version 3" \
		test "$(od -An -tu1 -j7 -N1 "$T/v3/.git/index" | tr -d ' ')" = 3
	doc=$(import_json v3 "$T/v3") || bail_out "import of v3 failed"
	check "v3: the four clean entries are refreshed (not the intent-to-add one)" \
		test "$(json_get 'd["git_index_entries"]' <<<"$doc")" = 4
	check_view_status v3 s1 "" "$T/v3.status"

	make_repo "$T/v4" || bail_out "git init failed"
	git -C "$T/v4" update-index --index-version 4
	git -C "$T/v4" status --porcelain >"$T/v4.status"
	doc=$(import_json v4 "$T/v4") || bail_out "import of v4 failed"
	check "v4: path-compressed entries are refreshed" \
		test "$(json_get 'd["git_index_entries"]' <<<"$doc")" = 4
	check_view_status v4 s1 "" "$T/v4.status"

	make_repo "$T/sha256" --object-format=sha256 || bail_out "git init (sha256) failed"
	doc=$(import_json sha256 "$T/sha256") || bail_out "import of sha256 failed"
	check "sha256: entries with 32-byte object ids are refreshed" \
		test "$(json_get 'd["git_index_entries"]' <<<"$doc")" = 4
	check_view_status sha256 s1 "" "$T/sha256.status"
}

test_nested() {
	local doc
	mkdir -p "$T/outer"
	printf 'top\n' >"$T/outer/README"
	make_repo "$T/outer/sub/repo" || bail_out "git init failed"
	doc=$(import_json nested "$T/outer") || bail_out "import of outer failed"
	check "nested: a work tree below the root is refreshed" \
		test "$(json_get 'd["git_index_entries"]' <<<"$doc")" = 4
	check_view_status nested s1 sub/repo "$T/outer/sub/repo.status"
}

# A superproject with a submodule (its git directory in .git/modules/sub): the submodule's own
# index is refreshed too, so git status in the view, which also looks into the submodule,
# re-hashes nothing there either, from a directory and from an archive; a submodule whose config
# names no work tree keeps its index.
test_submodule() {
	local doc mnt=$T/mnt-super changes
	make_repo "$T/subsrc" || bail_out "git init failed"
	git init -q "$T/super" || bail_out "git init failed"
	printf 'top\n' >"$T/super/README"
	git -C "$T/super" add README || bail_out "git add failed"
	git -C "$T/super" -c protocol.file.allow=always submodule -q add "$T/subsrc" sub ||
		bail_out "git submodule add failed"
	git -C "$T/super" commit -qm super || bail_out "git commit failed"
	find "$T/super" -path "$T/super/.git" -prune -o -exec touch -h -d '2020-01-01 00:00:00' {} +
	git -C "$T/super/sub" status --porcelain >"$T/sub.status"
	git -C "$T/super" status --porcelain >"$T/super.status"
	check "submodule: git keeps the submodule's index in the superproject's git directory" \
		test -f "$T/super/.git/modules/sub/index"
	doc=$(import_json super "$T/super") || bail_out "import of super failed"
	# README and .gitmodules in the superproject, the five files of the submodule's clone
	check "submodule: the entries of both indexes are refreshed" \
		test "$(json_get 'd["git_index_entries"]' <<<"$doc")" = 7
	fs_mount "$mnt" "$S" super s1 || bail_out "super: mount failed"
	git -C "$mnt/sub" status --porcelain >"$T/sub.view-status"
	git -C "$mnt" status --porcelain >"$T/super.view-status"
	fs_umount "$mnt" || bail_out "unmounting $mnt failed"
	check "submodule: git status in the submodule shows what it shows on the host" \
		cmp -s "$T/sub.status" "$T/sub.view-status"
	check "submodule: git status in the superproject shows what it shows on the host" \
		cmp -s "$T/super.status" "$T/super.view-status"
	changes=$(delta_paths super s1) || bail_out "eos-store delta of super/s1 failed"
	check "submodule: git re-hashed nothing in the submodule, so it left its index alone" \
		not has_path "$changes" .git/modules/sub/index
	check "submodule: nor the superproject's index" not has_path "$changes" .git/index

	# the same from an archive, its submodule's config after its index
	(cd "$T/super" && tar -cf "$T/super.tar" --exclude=./.git/modules/sub/config . \
		.git/modules/sub/config) || bail_out "tar failed"
	doc=$(import_json super-tar "$T/super.tar") || bail_out "import of super.tar failed"
	check "submodule, tar: the entries of both indexes are refreshed" \
		test "$(json_get 'd["git_index_entries"]' <<<"$doc")" = 7
	fs_mount "$mnt" "$S" super-tar s1 || bail_out "super-tar: mount failed"
	git -C "$mnt" status --porcelain >"$T/super-tar.view-status"
	fs_umount "$mnt" || bail_out "unmounting $mnt failed"
	check "submodule, tar: git status in the superproject shows what it shows on the host" \
		cmp -s "$T/super.status" "$T/super-tar.view-status"
	changes=$(delta_paths super-tar s1) || bail_out "eos-store delta of super-tar/s1 failed"
	check "submodule, tar: git re-hashed nothing in the submodule" \
		not has_path "$changes" .git/modules/sub/index

	git -C "$T/super" config -f .git/modules/sub/config --unset core.worktree
	doc=$(import_json super-nowt "$T/super") || bail_out "import of super-nowt failed"
	check "submodule: without core.worktree its index is imported byte for byte" \
		test "$(json_get 'd["git_index_entries"]' <<<"$doc")" = 2
	(cd "$T/super" && tar -cf "$T/super-nowt.tar" .) || bail_out "tar failed"
	doc=$(import_json super-nowt-tar "$T/super-nowt.tar") || bail_out "import of super-nowt.tar failed"
	check "submodule, tar: without core.worktree its index is imported byte for byte" \
		test "$(json_get 'd["git_index_entries"]' <<<"$doc")" = 2
	check "submodule, tar: and as the archive holds it" \
		index_kept super-nowt-tar "$T/super/.git/modules/sub/index" .git/modules/sub/index
}

# The index bytes of sandbox $1 (at $3, default .git/index) equal the file $2.
# shellcheck disable=SC2317 # called through check
index_kept() {
	eos_store --store "$S" cat --sandbox "$1" "${3:-.git/index}" | cmp -s - "$2"
}

test_kept() {
	local doc
	make_repo "$T/split" || bail_out "git init failed"
	git -C "$T/split" update-index --split-index
	doc=$(import_json split "$T/split") || bail_out "import of split failed"
	check "split index: nothing is refreshed" \
		test "$(json_get 'd["git_index_entries"]' <<<"$doc")" = 0
	check "split index: the index is imported byte for byte" index_kept split "$T/split/.git/index"

	make_repo "$T/keep" || bail_out "git init failed"
	doc=$(eos_store --store "$S" --json import "$T/keep" --sandbox keep --keep-git-index) ||
		bail_out "import of keep failed"
	check "--keep-git-index: nothing is refreshed" \
		test "$(json_get 'd["git_index_entries"]' <<<"$doc")" = 0
	check "--keep-git-index: the index is imported byte for byte" \
		index_kept keep "$T/keep/.git/index"

	make_repo "$T/damaged" || bail_out "git init failed"
	printf 'X' | dd of="$T/damaged/.git/index" bs=1 seek=40 conv=notrunc status=none
	doc=$(import_json damaged "$T/damaged") || bail_out "import of damaged failed"
	check "damaged index: nothing is refreshed" \
		test "$(json_get 'd["git_index_entries"]' <<<"$doc")" = 0
	check "damaged index: the index is imported byte for byte" \
		index_kept damaged "$T/damaged/.git/index"
}

# Pad the SHA-1 index $1 with an optional extension ("Zpad", which git skips) of $2 bytes,
# resealing its checksum.
pad_index() {
	python3 - "$1" "$2" <<'PY'
import hashlib, struct, sys
path, size = sys.argv[1], int(sys.argv[2])
with open(path, 'rb') as f:
    body = f.read()[:-20]
body += b'Zpad' + struct.pack('>I', size) + bytes(size)
with open(path, 'wb') as f:
    f.write(body + hashlib.sha1(body).digest())
PY
}

# An archive keeps no inode numbers or ctimes: an entry is refreshed when its object id is the
# git blob id of the archive's content (or symlink target) and its executable bit the archive's.
test_tar() {
	local doc
	make_repo "$T/tarred" || bail_out "git init failed"
	# touched after the index with the same bytes: git on the host finds it clean, so does the
	# view, from the content
	touch -d '2020-01-03 00:00:00' "$T/tarred/a.txt"
	git -C "$T/tarred" status --porcelain >"$T/tarred.status"
	# the index first in the archive, and last in a compressed one
	(cd "$T/tarred" && tar -cf "$T/tarred.tar" .git/index --exclude=./.git/index .) ||
		bail_out "tar failed"
	doc=$(import_json tarred "$T/tarred.tar") || bail_out "import of tarred.tar failed"
	check "tar: the four entries whose content the archive holds are refreshed" \
		test "$(json_get 'd["git_index_entries"]' <<<"$doc")" = 4
	check "tar: the index is counted among the imported files" \
		test "$(json_get 'd["files"]' <<<"$doc")" = "$(find "$T/tarred" -type f | wc -l)"
	check_view_status tarred s1 "" "$T/tarred.status"

	make_repo "$T/zst" --object-format=sha256 || bail_out "git init (sha256) failed"
	(cd "$T/zst" && tar --zstd -cf "$T/zst.tar.zst" --exclude=./.git/index . .git/index) ||
		bail_out "tar --zstd failed"
	doc=$(import_json zst "$T/zst.tar.zst") || bail_out "import of zst.tar.zst failed"
	check "tar.zst, sha256: the four clean entries are refreshed" \
		test "$(json_get 'd["git_index_entries"]' <<<"$doc")" = 4
	check_view_status zst s1 "" "$T/zst.status"

	# an index larger than an archive member read into memory (32 MiB): padded by an optional
	# extension, which git skips
	make_repo "$T/bigidx" || bail_out "git init failed"
	pad_index "$T/bigidx/.git/index" $((33 << 20)) || bail_out "padding the index failed"
	git -C "$T/bigidx" status --porcelain >"$T/bigidx.status-padded" 2>/dev/null # "ignoring Zpad"
	check "tar: git reads the padded index as it read the index" \
		cmp -s "$T/bigidx.status" "$T/bigidx.status-padded"
	(cd "$T/bigidx" && tar -cf "$T/bigidx.tar" .) || bail_out "tar failed"
	check "tar: the padded index is still larger than 33 MiB" \
		test "$(stat -c %s "$T/bigidx/.git/index")" -gt $((33 << 20))
	doc=$(import_json bigidx "$T/bigidx.tar") || bail_out "import of bigidx.tar failed"
	check "tar: the four clean entries of a 33 MiB index are refreshed" \
		test "$(json_get 'd["git_index_entries"]' <<<"$doc")" = 4
	check_view_status bigidx s1 "" "$T/bigidx.status"

	# a file whose bytes differ from what git hashed keeps the archive's data even when its
	# size and time are the index's; and a file hard-linked in the archive shows its group's
	# inode number, so its entry keeps the archive's data too
	make_repo "$T/sneaky" || bail_out "git init failed"
	printf 'ALPHA\n' >"$T/sneaky/a.txt"
	touch -d '2020-01-01 00:00:00' "$T/sneaky/a.txt"
	ln "$T/sneaky/dir/b.txt" "$T/sneaky/b-link"
	(cd "$T/sneaky" && tar -cf "$T/sneaky.tar" .) || bail_out "tar failed"
	rm "$T/sneaky/b-link"
	doc=$(import_json sneaky "$T/sneaky.tar") || bail_out "import of sneaky.tar failed"
	check "tar: changed bytes and hard-linked files are not refreshed" \
		test "$(json_get 'd["git_index_entries"]' <<<"$doc")" = 2
	fs_mount "$T/mnt-sneaky" "$S" sneaky s1 || bail_out "sneaky: mount failed"
	check "tar: git status in the view finds the changed bytes" \
		grep -qxF ' M a.txt' <(git -C "$T/mnt-sneaky" status --porcelain)
	fs_umount "$T/mnt-sneaky" || bail_out "unmounting $T/mnt-sneaky failed"

	doc=$(eos_store --store "$S" --json import "$T/tarred.tar" --sandbox tar-keep \
		--keep-git-index) || bail_out "import of tar-keep failed"
	check "tar --keep-git-index: nothing is refreshed" \
		test "$(json_get 'd["git_index_entries"]' <<<"$doc")" = 0
	check "tar --keep-git-index: the index is imported byte for byte" \
		index_kept tar-keep "$T/tarred/.git/index"
}

test_plain
test_stale
test_racy
test_versions
test_nested
test_submodule
test_kept
test_tar
rerun_as_test_user "${BASH_SOURCE[0]}"
tap_done
