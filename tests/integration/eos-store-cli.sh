#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# eos-store end to end (TAP): import a generated tree, read it back with ls/cat/stat/log (text and
# JSON), the error contract (exit 1 runtime, 2 usage, messages naming their subject), the owner
# lock, refused special files, leases, squash, stats, destroy, the default store location and a
# clean fsck at the end. As root, the unprivileged part (import, cat, refusal of an unreadable
# file) runs as the user eos-test through runuser; it is created when missing.

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

test_user=eos-test
big_size=$((2 * 1024 * 1024))

# The source tree: subdirectories, a symlink, a hard link, a 2 MiB file, odd names, modes.
make_tree() {
	local src=$1
	mkdir -p "$src/sub/deeper" "$src/dir with spaces"
	printf 'hello world\n' >"$src/hello.txt"
	head -c "$big_size" /dev/urandom >"$src/big.bin"
	: >"$src/empty"
	printf 'spaced out\n' >"$src/dir with spaces/file with spaces.txt"
	printf 'utf-8\n' >"$src/sub/ünïcødé.txt"
	seq 1 20000 >"$src/sub/deeper/numbers.txt"
	ln -s hello.txt "$src/link"
	ln -s ../hello.txt "$src/sub/uplink"
	ln "$src/hello.txt" "$src/sub/hard"
	chmod 0640 "$src/sub/deeper/numbers.txt"
	chmod 0750 "$src/sub/deeper"
}

# Print the names of directory $2 of sandbox $1 (one per line) from ls --json.
ls_names() {
	eos_store --store "$S" --json ls --sandbox "$1" "$2" |
		json_get '"\n".join(e["name"] for e in d["entries"])'
}

test_import() {
	run eos_store --store "$S" import "$SRC" --sandbox cli
	expect_rc 0 "import of a generated tree succeeds"
	check "import prints the sandbox id" grep -q cli <<<"$out"
	check "import prints throughput" grep -q 'mb_per_s' <<<"$out"
	run eos_store --store "$S" --json import "$SRC" --sandbox cli-json
	expect_rc 0 "import --json succeeds"
	check "import --json is one JSON document" json_valid <<<"$out"
	check "import --json counts 2 symlinks" test "$(json_get 'd["symlinks"]' <<<"$out")" = 2
	check "import --json counts the directories" \
		test "$(json_get 'd["dirs"]' <<<"$out")" -ge 3
	check "import --json names version L000001" \
		test "$(json_get 'd["version"]' <<<"$out")" = L000001
	run eos_store --store "$S" import "$SRC" --sandbox cli
	expect_rc_match 1 err cli "importing over an existing sandbox fails naming it"
}

test_ls() {
	local names
	run eos_store --store "$S" ls
	expect_rc_match 0 out cli-json "ls lists the sandboxes"
	run eos_store --store "$S" ls --sandbox cli
	expect_rc_match 0 out "dir with spaces" "ls of the root lists odd names"
	check "ls of the root shows the symlink target" grep -q 'link.*hello.txt' <<<"$out"
	names=$(ls_names cli /)
	check "ls --json of the root has every name" test "$(sort <<<"$names" | tr '\n' '|')" = \
		"big.bin|dir with spaces|empty|hello.txt|link|sub|"
	names=$(ls_names cli sub)
	check "ls --json of sub has every name" test "$(sort <<<"$names" | tr '\n' '|')" = \
		"deeper|hard|uplink|ünïcødé.txt|"
	run eos_store --store "$S" ls --sandbox cli /sub/deeper/numbers.txt
	expect_rc_match 0 out numbers.txt "ls of a file path prints that entry"
	check "ls of a file shows its mode" grep -q 0640 <<<"$out"
	run eos_store --store "$S" ls --sandbox cli --version L1 sub/deeper
	expect_rc_match 0 out numbers.txt "ls --version L1 lists the base layer"
	run eos_store --store "$S" ls --sandbox cli sub/nothere
	expect_rc_match 1 err nothere "ls of a missing path fails naming it"
}

test_cat() {
	local f
	for f in big.bin hello.txt "dir with spaces/file with spaces.txt" sub/deeper/numbers.txt \
		empty sub/hard "sub/ünïcødé.txt"; do
		eos_store --store "$S" cat --sandbox cli "$f" >"$T/cat.out" 2>"$T/cat.err"
		rc=$?
		check "cat '$f' is byte-equal to the source" \
			test "$rc" = 0 -a -z "$(cmp "$T/cat.out" "$SRC/$f" 2>&1)"
	done
	eos_store --store "$S" cat --sandbox cli --version 1 /big.bin >"$T/cat.out"
	check "cat --version 1 of /big.bin (leading slash) is byte-equal" cmp -s "$T/cat.out" \
		"$SRC/big.bin"
	run bash -c '"$1" --store "$2" cat --sandbox cli big.bin | head -c 10 >/dev/null; \
		echo "${PIPESTATUS[0]}"' sh "$EOS_STORE_BIN" "$S"
	check "cat into a closed pipe ends quietly" test "$out" = 0 -a -z "$err"
	run eos_store --store "$S" cat --sandbox cli sub
	expect_rc_match 1 err sub "cat of a directory fails naming it"
}

test_stat() {
	local sum group
	sum=$(sha256sum "$SRC/big.bin" | cut -d' ' -f1)
	run eos_store --store "$S" stat --sandbox cli big.bin
	expect_rc_match 0 out "$sum" "stat prints the content digest"
	check "stat prints the size" grep -Eq "^size +$big_size\$" <<<"$out"
	check "stat prints the content kind" grep -q content_kind <<<"$out"
	run eos_store --store "$S" --json stat --sandbox cli link
	expect_rc 0 "stat --json of a symlink succeeds"
	check "stat --json of a symlink is valid JSON" json_valid <<<"$out"
	check "stat --json of a symlink has its target" \
		test "$(json_get 'd["kind"] + ":" + d["target"]' <<<"$out")" = symlink:hello.txt
	group=$(eos_store --store "$S" --json stat --sandbox cli hello.txt | json_get 'd["link_group"]')
	check "hard links share a link group" test "$group" != 0 -a "$group" = \
		"$(eos_store --store "$S" --json stat --sandbox cli sub/hard | json_get 'd["link_group"]')"
	run eos_store --store "$S" --json stat --sandbox cli sub/deeper
	check "stat of a directory shows its mode" test "$(json_get 'd["mode"]' <<<"$out")" = 0750
}

test_log_json() {
	local args
	run eos_store --store "$S" log --sandbox cli
	expect_rc_match 0 out L000001 "log lists the base layer"
	check "log names the import owner" grep -q import <<<"$out"
	for args in "ls" "ls --sandbox cli" "ls --sandbox cli sub" "stat --sandbox cli big.bin" \
		"log --sandbox cli" "leases --sandbox cli" "stats" "fsck --quick"; do
		# shellcheck disable=SC2086 # word splitting of the argument list is wanted
		run eos_store --store "$S" --json $args
		check "--json $args prints one JSON document" json_valid <<<"$out"
	done
	run eos_store --store "$S" --json log --sandbox cli
	check "log --json has the layer id and owner" \
		test "$(json_get 'd["layers"][0]["id"] + " " + d["layers"][0]["owner"]' <<<"$out")" = \
		"L000001 import"
}

test_errors() {
	run eos_store --store "$S" ls --sandbox no-such-sandbox
	expect_rc_match 1 err no-such-sandbox "a missing sandbox fails naming it"
	run eos_store --store "$S" --json cat --sandbox no-such-sandbox x
	check "--json errors print the error envelope" \
		test "$(json_get 'd["error"]["kind"]' <<<"$out")" = not_found
	run eos_store --store "$S" cat --sandbox cli --version Lxyz hello.txt
	expect_rc_match 1 err Lxyz "an unparsable version fails naming it"
	run eos_store --store "$S" cat --sandbox cli --version 99 hello.txt
	expect_rc 1 "a version beyond the head fails"
	run eos_store --store "$S" frobnicate
	expect_rc_match 2 err usage "an unknown command is a usage error"
	run eos_store --store "$S" cat hello.txt
	expect_rc_match 2 err "--sandbox" "cat without --sandbox is a usage error"
	run eos_store --store "$S" ls --bogus
	expect_rc_match 2 err "--bogus" "an unknown option is a usage error"
	run eos_store --store "$T/no-store" ls
	expect_rc_match 1 err "does not exist" "a missing store fails"
	run eos_store --store "$S" --help
	expect_rc_match 0 out usage "--help prints the usage"
	run eos_store import --help
	expect_rc_match 0 out "--threads" "import --help prints its usage"
	run eos_store --store "$S" import "$SRC" --threads lots
	expect_rc_match 1 err lots "a bad thread count fails naming it"
}

# Names (and owners) with control characters, quotes and backslashes never forge output lines: text
# output quotes them as git quotes paths, --json carries them as they are.
test_quoting() {
	local S=$T/quoting-store src=$T/quoting names evil=$'evil\nkind  mode  forged' odd='q"b\s'
	mkdir -p "$src"
	printf 'x\n' >"$src/$evil"
	printf 'y\n' >"$src/$odd"
	run eos_store --store "$S" import "$src" --sandbox quoting
	expect_rc 0 "import of crafted names succeeds"
	run eos_store --store "$S" ls --sandbox quoting
	check "ls prints one line per entry (and the header)" test "$(wc -l <<<"$out")" = 3
	check "ls quotes a newline as git does" grep -qF '"evil\nkind  mode  forged"' <<<"$out"
	check "ls quotes a double quote and a backslash" grep -qF '"q\"b\\s"' <<<"$out"
	names=$(ls_names quoting /)
	check "ls --json keeps the raw name" test "${names%%$'\n'q*}" = "$evil"
	run eos_store --store "$S" stat --sandbox quoting "$evil"
	expect_rc_match 0 out '"evil\nkind  mode  forged"' "stat quotes the path"
	check "stat prints no forged line" not grep -q '^kind  mode  forged' <<<"$out"
	run eos_store --store "$S" cat --sandbox quoting $'evil\nnope'
	expect_rc_match 1 err "'evil\\nnope'" "an error message escapes the name it quotes"
	check "the error is one line" test "$(wc -l <<<"$err")" = 1
	run eos_store --store "$S" write --sandbox quoting --path new.txt \
		--operation $'op\nL000009  forged' <<<'z'
	expect_rc 0 "write with a crafted operation id succeeds"
	run eos_store --store "$S" log --sandbox quoting
	expect_rc_match 0 out '"operation:op\nL000009  forged"' "log quotes the owner"
	run eos_store --store "$S" blame --sandbox quoting new.txt
	expect_rc_match 0 out '"operation:op\nL000009  forged"' "blame quotes the owner"
	check "blame prints no forged line" not grep -q '^L000009  forged' <<<"$out"
}

# A directory that is not a store: no command turns it into one or leaves anything in it.
test_not_a_store() {
	local D=$T/ordinary args
	mkdir -p "$D"
	printf 'mine\n' >"$D/notes.txt"
	for args in "ls" "cat --sandbox x f" "stat --sandbox x f" "log --sandbox x" \
		"leases --sandbox x" "sessions --sandbox x" "delta --sandbox x s" \
		"blame --sandbox x f" "fsck" "stats" "gc" "export --sandbox x --format tar --dest $T/x.tar"; do
		# shellcheck disable=SC2086 # word splitting of the argument list is wanted
		run eos_store --store "$D" $args
		expect_rc_match 1 err "is not an eos store" "$args on an ordinary directory is refused"
	done
	run eos_store --store "$D" import "$SRC" --sandbox nope
	expect_rc_match 1 err "'notes.txt'" "import refuses to make a store of a non-empty directory"
	run eos_store --store "$D" --json import "$SRC" --sandbox nope
	check "... an error of kind exists" test "$(json_get 'd["error"]["kind"]' <<<"$out")" = exists
	check "the directory holds only what it held" test "$(ls -A "$D")" = notes.txt
	run eos_store --store "$T/not-there" ls
	expect_rc_match 1 err "does not exist" "ls of a missing store fails"
	check "ls did not create the missing store" not test -e "$T/not-there"
	mkdir "$T/empty-dir"
	run eos_store --store "$T/empty-dir" fsck
	check "fsck of an empty directory leaves it empty" test "$rc" = 1 -a -z "$(ls -A "$T/empty-dir")"
	run eos_store --store "$T/empty-dir" import "$SRC" --sandbox fresh
	expect_rc 0 "import into an empty directory creates a store there"
	check "the new store and its db/ are private (0700)" \
		test "$(stat -c %a "$T/empty-dir" "$T/empty-dir/db" | tr '\n' ' ')" = "700 700 "
}

# Hold the owner lock with flock(1) and expect another opener to be refused with a pid.
test_lock() {
	local holder
	(
		exec 9<>"$S/owner.lock" && flock -n 9 && touch "$T/locked" && exec sleep 30
	) &
	holder=$!
	track_pid "$holder"
	for _ in $(seq 100); do
		[[ -e $T/locked ]] && break
		sleep 0.05
	done
	run eos_store --store "$S" ls
	expect_rc_match 1 err pid "a store held by another process is refused naming a pid"
	kill "$holder" 2>/dev/null
	wait "$holder" 2>/dev/null
	run eos_store --store "$S" ls
	expect_rc 0 "the store opens again once the holder is gone"
}

# A fifo is imported, a stale socket is skipped and listed (tests/integration/node-types.sh
# covers every file type); the sandbox goes again so that the counts below stay.
test_specials() {
	mkdir -p "$T/special/ok"
	printf 'x\n' >"$T/special/ok/file"
	mkfifo "$T/special/ok/my-fifo"
	python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' \
		"$T/special/ok/my-sock"
	run eos_store --store "$S" --json import "$T/special" --sandbox special
	expect_rc 0 "a source with a fifo and a stale socket imports"
	check "the fifo is kept, the socket listed as skipped" \
		test "$(json_get '[d["specials"], [s["path"] for s in d["skipped"]]]' <<<"$out")" = \
		'[1, ["ok/my-sock"]]'
	run eos_store --store "$S" destroy --sandbox special
	expect_rc 0 "destroy the sandbox with the fifo"
}

test_leases_squash() {
	run eos_store --store "$S" lease --sandbox cli keep
	expect_rc_match 0 out L000001 "lease pins the head"
	run eos_store --store "$S" lease --sandbox cli old --version L1
	expect_rc 0 "lease --version L1 succeeds"
	run eos_store --store "$S" leases --sandbox cli
	check "leases lists both leases" grep -q keep <<<"$out"
	run eos_store --store "$S" squash --sandbox cli
	expect_rc_match 0 out layers_removed "squash with leases succeeds"
	run eos_store --store "$S" unlease --sandbox cli old
	expect_rc 0 "unlease succeeds"
	run eos_store --store "$S" unlease --sandbox cli old
	expect_rc_match 1 err old "unlease of a missing lease fails naming it"
	run eos_store --store "$S" squash --sandbox cli
	expect_rc 0 "squash after unlease succeeds"
	eos_store --store "$S" cat --sandbox cli big.bin >"$T/cat.out"
	check "content is intact after squash" cmp -s "$T/cat.out" "$SRC/big.bin"
	run eos_store --store "$S" unlease --sandbox cli keep
	expect_rc 0 "the last lease is released"
}

test_stats() {
	run eos_store --store "$S" stats
	expect_rc_match 0 out chunks "stats prints the chunk count"
	check "stats has a per-sandbox summary" grep -q cli-json <<<"$out"
	run eos_store --store "$S" --json stats
	check "stats --json counts the sandboxes" test "$(json_get 'd["sandboxes"]' <<<"$out")" = 2
}

test_default_store() {
	run env EOS_STORE="$S" "$EOS_STORE_BIN" ls
	expect_rc_match 0 out cli-json "\$EOS_STORE selects the store"
	mkdir -p "$T/state"
	rm -f "$T/special/ok/my-fifo"
	run env -u EOS_STORE EOS_STATE_DIR="$T/state" "$EOS_STORE_BIN" import "$T/special"
	check "\$EOS_STATE_DIR/store is the store" test "$rc" = 0 -a -d "$T/state/store"
	if ((EUID == 0)); then
		# root's default is /var/lib/eos (DESIGN §2): only look, create nothing there
		run env -u EOS_STORE -u EOS_STATE_DIR -u XDG_DATA_HOME HOME="$T/home" \
			"$EOS_STORE_BIN" ls
		check "root's default store is /var/lib/eos/store" \
			grep -q "/var/lib/eos/store" <<<"$out$err"
		run env -u EOS_STORE -u EOS_STATE_DIR XDG_DATA_HOME="$T/xdg" "$EOS_STORE_BIN" \
			import "$T/special" --sandbox home
		check "with \$XDG_DATA_HOME root's default store is under it" \
			test "$rc" = 0 -a -d "$T/xdg/eos/store"
		return
	fi
	run env -u EOS_STORE -u EOS_STATE_DIR -u XDG_DATA_HOME HOME="$T/home" "$EOS_STORE_BIN" \
		import "$T/special" --sandbox home
	check "the default store is under \$HOME/.local/share" \
		test "$rc" = 0 -a -d "$T/home/.local/share/eos/store"
}

test_destroy_fsck() {
	run eos_store --store "$S" destroy --sandbox cli-json
	expect_rc 0 "destroy succeeds"
	run eos_store --store "$S" destroy --sandbox cli
	expect_rc 0 "destroy of the second sandbox succeeds"
	run eos_store --store "$S" ls
	check "ls shows nothing after destroying every sandbox" test -z "$out" -a "$rc" = 0
	run eos_store --store "$S" destroy --sandbox cli
	expect_rc_match 1 err cli "destroy of a missing sandbox fails naming it"
	run eos_store --store "$S" gc
	expect_rc 0 "gc succeeds"
	run eos_store --store "$S" --json fsck
	expect_rc 0 "fsck is clean after everything"
	check "fsck --json reports 0 violations" test "$(json_get 'd["violations"]' <<<"$out")" = 0
	check "fsck --json reports no chunks left" test "$(json_get 'd["chunks"]' <<<"$out")" = 0
}

# --- the unprivileged part -------------------------------------------------------------------

as_user() {
	if ((EUID == 0)); then
		runuser -u "$test_user" -- "$@"
	else
		"$@"
	fi
}

prepare_user() {
	if ((EUID != 0)); then
		return 0
	fi
	if ! id -u "$test_user" >/dev/null 2>&1; then
		diag "creating the unprivileged user '$test_user'"
		useradd --system --create-home "$test_user" || return 1
	fi
	mkdir -p "$T/user" && chown "$test_user:" "$T/user"
}

test_unprivileged() {
	local U=$T/user
	if ! prepare_user; then
		not_ok "prepare the unprivileged user '$test_user'"
		return
	fi
	ok "running as an unprivileged user ($(as_user id -un))"
	if ! as_user test -x "$EOS_STORE_BIN"; then
		not_ok "'$test_user' can run eos-store"
		diag "'$test_user' cannot execute '$EOS_STORE_BIN': make the build tree readable" \
			"(scripts/test does: chmod -R o+rX on the tree and o+x on its parents)"
		return
	fi
	as_user mkdir -p "$U/src/d" "$U/bad"
	as_user cp "$SRC/big.bin" "$SRC/hello.txt" "$U/src/d/"
	run as_user "$EOS_STORE_BIN" --store "$U/store" import "$U/src" --sandbox mine
	expect_rc 0 "unprivileged: import succeeds"
	as_user "$EOS_STORE_BIN" --store "$U/store" cat --sandbox mine d/big.bin >"$T/user.cat"
	check "unprivileged: cat is byte-equal" cmp -s "$T/user.cat" "$SRC/big.bin"
	# shellcheck disable=SC2016 # expanded by the inner shell
	as_user sh -c 'printf "secret\n" >"$1/bad/secret" && printf "fine\n" >"$1/bad/fine" &&
		chmod 000 "$1/bad/secret"' sh "$U"
	run as_user "$EOS_STORE_BIN" --store "$U/store" import "$U/bad" --sandbox bad
	expect_rc_match 1 err secret "unprivileged: an unreadable file is refused naming it"
	run as_user "$EOS_STORE_BIN" --store "$U/store" --json ls
	check "unprivileged: the refused import left no sandbox" not json_has_sandbox bad <<<"$out"
	run as_user "$EOS_STORE_BIN" --store "$U/store" fsck
	expect_rc 0 "unprivileged: fsck is clean"
	if ((EUID == 0)); then
		test_one_users_store
	fi
}

# A store is one user's: another user is refused even when the store was left writable by all
# (it could read root's 0600 file, replace it, remove sessions), and root is refused a user's.
test_one_users_store() {
	local U=$T/user P=$T/private
	mkdir -p "$P/src"
	printf 'root only\n' >"$P/src/secret"
	chmod 0600 "$P/src/secret"
	run eos_store --store "$P/store" import "$P/src" --sandbox priv
	expect_rc 0 "root imports a 0600 file"
	chmod -R a+rwX "$P"
	run as_user "$EOS_STORE_BIN" --store "$P/store" cat --sandbox priv secret
	expect_rc_match 1 err "is not yours" "another user cannot cat from root's store left open to all"
	check "nothing of the file leaked" not grep -q "root only" <<<"$out"
	run as_user "$EOS_STORE_BIN" --store "$P/store" write --sandbox priv --path secret <<<'mine'
	expect_rc_match 1 err "is not yours" "another user cannot replace a file of root's store"
	run as_user "$EOS_STORE_BIN" --store "$P/store" rm-session --sandbox priv s
	expect_rc_match 1 err "is not yours" "another user cannot remove a session of root's store"
	run eos_store --store "$P/store" cat --sandbox priv secret
	expect_rc_match 1 err "chmod go-w" "root is refused its own store while others may write it"
	chmod -R go-w "$P/store"
	run eos_store --store "$P/store" cat --sandbox priv secret
	check "after chmod go-w the store opens and the file is unchanged" \
		test "$rc" = 0 -a "$out" = "root only"
	run eos_store --store "$U/store" ls
	expect_rc_match 1 err "owned by uid $(id -u "$test_user"), not by uid 0" \
		"root is refused the store of another user"
}

main() {
	require_eos_store
	tap_tmpdir
	S=$T/store
	SRC=$T/src
	make_tree "$SRC"
	test_import
	test_ls
	test_cat
	test_stat
	test_log_json
	test_errors
	test_quoting
	test_not_a_store
	test_lock
	test_specials
	test_leases_squash
	test_stats
	test_default_store
	test_destroy_fsck
	test_unprivileged
	tap_done
}

main "$@"
