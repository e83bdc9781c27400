#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Crash test (TAP): `eos-store import` of a ~100 MB tree is killed with SIGKILL at random moments
# spread over the whole import (measured first). After every run `fsck` must be clean and the
# sandbox either absent or complete (same file count as the source, sample files byte-equal);
# after a kill, importing again must succeed (over the orphan chunks). Each run ends with destroy
# and gc so that the next one imports from scratch. One more run SIGKILLs itself through the
# failpoint commit.before_write (builds with --enable-failpoints): the sandbox must be absent. At
# the end gc leaves no garbage and fsck is clean.
#
# Environment: EOS_CRASH_RUNS (default 6), EOS_CRASH_MB (approximate tree size, default 100).

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

runs=${EOS_CRASH_RUNS:-6}
tree_mb=${EOS_CRASH_MB:-100}
samples=()

# Random files: big/ holds ~tree_mb MB in 1-8 MiB files, small/ 10 directories of small files,
# plus a symlink and a hard link.
make_tree() {
	local src=$1 total=0 i=0 size d j
	mkdir -p "$src/big"
	while ((total < tree_mb * 1024 * 1024)); do
		size=$(((1 + RANDOM % 8) * 1024 * 1024 + RANDOM))
		head -c "$size" /dev/urandom >"$src/big/file-$i.bin"
		total=$((total + size))
		i=$((i + 1))
	done
	for d in $(seq 0 9); do
		mkdir -p "$src/small/d$d"
		for j in $(seq 0 39); do
			head -c $((RANDOM % 20000)) /dev/urandom >"$src/small/d$d/f$j"
		done
	done
	ln -s ../big/file-0.bin "$src/small/link"
	ln "$src/small/d0/f0" "$src/small/hard"
	samples=(big/file-0.bin "big/file-$((i - 1)).bin" small/d5/f7 small/hard)
}

# Number of regular files of sandbox $1 (walks the tree with ls --json).
store_file_count() {
	python3 - "$EOS_STORE_BIN" "$S" "$1" <<'EOF'
import json, subprocess, sys
tool, store, sandbox = sys.argv[1:4]
def walk(path):
    out = subprocess.run([tool, "--store", store, "--json", "ls", "--sandbox", sandbox, path],
                         check=True, capture_output=True).stdout
    n = 0
    for e in json.loads(out)["entries"]:
        if e["kind"] == "file":
            n += 1
        elif e["kind"] == "dir":
            n += walk(path + "/" + e["name"])
    return n
print(walk(""))
EOF
}

# Is sandbox $1 listed by `ls`? (A failing ls is a failed test, not an absent sandbox.)
sandbox_present() {
	run eos_store --store "$S" --json ls
	if [[ $rc != 0 ]]; then
		not_ok "ls works"
		show_run
		return 1
	fi
	json_has_sandbox "$1" <<<"$out"
}

# fsck clean: exit 0 and 0 violations. With $FSCK_QUICK set, chunks are not decoded.
expect_fsck_clean() {
	run eos_store --store "$S" --json fsck ${FSCK_QUICK:+--quick}
	if [[ $rc == 0 && $(json_get 'd["violations"]' <<<"$out" 2>/dev/null) == 0 ]]; then
		ok "$*"
	else
		not_ok "$*"
		show_run
	fi
}

# A present sandbox $1 equals the source: file count and the sample files.
expect_complete() {
	local sb=$1 f count bad=
	count=$(store_file_count "$sb")
	for f in "${samples[@]}"; do
		eos_store --store "$S" cat --sandbox "$sb" "$f" >"$T/cat.out" 2>"$T/cat.err"
		cmp -s "$T/cat.out" "$SRC/$f" || bad="$bad $f"
	done
	if [[ $count == "$SRC_FILES" && -z $bad ]]; then
		ok "$sb is complete ($count files, samples equal)"
	else
		not_ok "$sb is complete"
		diag "file count $count, expected $SRC_FILES; differing samples:${bad:- none}"
	fi
}

# Import into a scratch store once to learn how long an import takes (milliseconds).
measure_import_ms() {
	local start end
	start=$(date +%s%N)
	eos_store --store "$T/timing" import "$SRC" --sandbox timing >/dev/null ||
		bail_out "a plain import of the crash tree failed"
	end=$(date +%s%N)
	rm -rf "$T/timing"
	echo $(((end - start) / 1000000))
}

# Create $S with nothing in it: import a one-file tree, destroy it, gc.
make_empty_store() {
	mkdir -p "$T/seed" || bail_out "cannot make the seed tree"
	echo seed >"$T/seed/f" || bail_out "cannot make the seed tree"
	{ eos_store --store "$S" import "$T/seed" --sandbox seed &&
		eos_store --store "$S" destroy --sandbox seed && eos_store --store "$S" gc; } >/dev/null ||
		bail_out "cannot create the store '$S'"
}

# Start an import of sandbox $1 in the background, SIGKILL it after $2 ms; sets $status.
import_and_kill() {
	local pid
	# the binary itself, not a shell function: the kill must hit the importing process
	"$EOS_STORE_BIN" --store "$S" import "$SRC" --sandbox "$1" >"$T/import.out" \
		2>"$T/import.err" &
	pid=$!
	track_pid "$pid"
	sleep_ms "$2"
	# braces: keep bash's "Killed" job report out of the log
	{
		kill -9 "$pid"
		wait "$pid"
		status=$?
	} 2>/dev/null
}

# After a killed import: importing the same tree again completes (reusing its orphan chunks).
retry_import() {
	local n=$1 sb=$2
	run eos_store --store "$S" import "$SRC" --sandbox "$sb"
	expect_rc 0 "run $n: importing again after the kill succeeds"
	expect_complete "$sb"
	FSCK_QUICK=1 expect_fsck_clean "run $n: fsck --quick is clean after the second import"
}

# Run $1: kill an import after $2 ms and check the store; then destroy and gc for a fresh start.
crash_run() {
	local n=$1 delay=$2 sb=crash-$1 status
	import_and_kill "$sb" "$delay"
	diag "run $n: SIGKILL after ${delay} ms, exit status $status"
	expect_fsck_clean "run $n: fsck is clean after the kill"
	if [[ $status != 0 && $status != 137 ]]; then
		not_ok "run $n: the import either completes or dies by SIGKILL"
		diag "$(cat "$T/import.err")"
	fi
	if sandbox_present "$sb"; then
		diag "run $n: sandbox present"
		expect_complete "$sb"
	elif [[ $status == 0 ]]; then
		not_ok "run $n: a completed import left its sandbox"
	else
		ok "run $n: the killed import left no sandbox"
		retry_import "$n" "$sb"
	fi
	run eos_store --store "$S" destroy --sandbox "$sb"
	expect_rc 0 "run $n: destroy succeeds"
	run eos_store --store "$S" gc
	expect_rc 0 "run $n: gc succeeds"
}

# Run $1 of the store-creation crashes: kill the first import into a fresh store after $2 ms.
# The store must then be usable: fsck clean, or (creation never got far) "does not exist"; and
# an import into it must succeed.
creation_run() {
	local n=$1 delay=$2 status S=$T/fresh-$1
	import_and_kill created "$delay"
	diag "creation run $n: SIGKILL after ${delay} ms, exit status $status"
	run eos_store --store "$S" fsck --quick
	if [[ $rc == 0 || ($rc == 1 && $err == *"does not exist"*) ]]; then
		ok "creation run $n: the store is clean or absent after the kill"
	else
		not_ok "creation run $n: the store is clean or absent after the kill"
		show_run
	fi
	run eos_store --store "$S" import "$SMALL" --sandbox again
	expect_rc 0 "creation run $n: importing into the store afterwards succeeds"
	expect_fsck_clean "creation run $n: fsck is clean after that import"
	rm -rf "$S"
}

failpoint_run() {
	local sb=crash-failpoint want=0
	grep -q '^#define EOS_FAILPOINTS 1' "$top_builddir/config.h" 2>/dev/null && want=137
	# in the background: bash reports the SIGKILL of a foreground job on stderr
	EOS_FAILPOINTS=commit.before_write=kill "$EOS_STORE_BIN" --store "$S" import "$SRC" \
		--sandbox "$sb" >"$T/import.out" 2>"$T/import.err" &
	track_pid $!
	{
		wait $!
		rc=$?
	} 2>/dev/null
	if ((want == 137)); then
		check "failpoint commit.before_write=kill kills the import (SIGKILL)" test "$rc" = 137
		if sandbox_present "$sb"; then
			not_ok "the failpoint-killed import left no sandbox"
		else
			ok "the failpoint-killed import left no sandbox"
		fi
	else
		diag "the build has no failpoints: the import must simply succeed"
		check "import without failpoints succeeds" test "$rc" = 0
		check "the sandbox is present" sandbox_present "$sb"
	fi
	expect_fsck_clean "fsck is clean after the failpoint run"
}

main() {
	local ms lo hi
	require_eos_store
	tap_tmpdir
	S=$T/store
	SRC=$T/src
	make_tree "$SRC"
	SRC_FILES=$(find "$SRC" -type f | wc -l)
	ms=$(measure_import_ms)
	diag "tree: $(du -sm "$SRC" | cut -f1) MB, $SRC_FILES files; a full import takes ${ms} ms"
	# The crash runs kill imports into an existing, empty store (killing the one that creates
	# the store is creation_run's case): on a loaded machine the first 50 ms may not reach it.
	make_empty_store
	# Run n kills at a random moment of the n-th slice of [50 ms, 1.15 x the import time]: the
	# last slice reaches the final commit (every run starts from a store emptied by gc).
	for n in $(seq 1 "$runs"); do
		lo=$((50 + (ms * 115 / 100 - 50) * (n - 1) / runs))
		hi=$((50 + (ms * 115 / 100 - 50) * n / runs))
		((hi <= lo)) && hi=$((lo + 1))
		crash_run "$n" $((lo + RANDOM % (hi - lo)))
	done
	SMALL=$SRC/small
	for n in 1 2 3 4; do
		creation_run "$n" $((5 + RANDOM % 120))
	done
	failpoint_run
	run eos_store --store "$S" gc
	expect_rc 0 "gc succeeds"
	run eos_store --store "$S" --json fsck
	expect_rc 0 "fsck is clean at the end"
	check "fsck reports 0 garbage chunks after gc" \
		test "$(json_get 'd["garbage_chunks"]' <<<"$out")" = 0
	tap_done
}

main "$@"
