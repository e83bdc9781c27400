#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Crash test of the publish gate (TAP). tests/integration/crash-publish publishes in a loop
# (a session merging with the head, then a plain change set, alternately; see crash-publish.c);
# it is SIGKILLed at random moments, and after every kill `crash-publish verify` checks that
# each publish was all or nothing: fsck clean, no record above the head, every version's files of
# one generation, the session intact (its delta complete and pending, or published and reset with
# its lease on its layer). The next run resumes, republishing a pending session delta. With
# --enable-failpoints, one run more per step of a publish dies at that failpoint (name=kill).
#
# Environment: EOS_CRASH_RUNS (kills, default 50).

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DRIVER=$top_builddir/tests/integration/crash-publish
runs=${EOS_CRASH_RUNS:-50}
failpoints=(publish.lock publish.check publish.merge publish.blame publish.before_write
	commit.lock commit.head commit.validate commit.refs commit.layer commit.before_write)

[[ -x $DRIVER ]] || bail_out "'$DRIVER' is missing (make check builds it; set top_builddir)"
tap_tmpdir
S=$T/store

# verify: one TAP line (naming the session's state), the driver's report on failure.
expect_verified() {
	run "$DRIVER" verify "$S"
	if [[ $rc == 0 ]]; then
		ok "$* ($(grep -o 'delta [a-z]*' <<<"$out"))"
	else
		not_ok "$*"
		show_run
	fi
}

# Milliseconds the driver takes for $1 publishes (store open and close included).
measure_ms() {
	local start end
	start=$(date +%s%N)
	"$DRIVER" run "$S" "$1" >/dev/null || bail_out "$1 publishes without a kill failed"
	end=$(date +%s%N)
	echo $(((end - start) / 1000000))
}

# Run the driver in the background, SIGKILL it after $1 ms; sets $status and $count (publishes).
run_and_kill() {
	local pid
	# the binary itself: the kill must hit the publishing process
	"$DRIVER" run "$S" >"$T/run.out" 2>"$T/run.err" &
	pid=$!
	track_pid "$pid"
	sleep_ms "$1"
	{
		kill -9 "$pid"
		wait "$pid"
		status=$?
	} 2>/dev/null
	count=$(wc -l <"$T/run.out")
}

crash_run() {
	local n=$1 delay=$2 status count
	run_and_kill "$delay"
	if [[ $status != 137 ]]; then
		not_ok "run $n: the driver dies by SIGKILL only"
		diag "exit status $status" "$(cat "$T/run.err")"
		return
	fi
	expect_verified "run $n: all or nothing after a kill at ${delay} ms ($count publishes)"
}

failpoint_run() {
	local fp=$1
	EOS_FAILPOINTS=$fp=kill "$DRIVER" run "$S" 4 >"$T/run.out" 2>"$T/run.err" &
	track_pid $!
	{
		wait $!
		rc=$?
	} 2>/dev/null
	check "failpoint $fp=kill kills the publish" test "$rc" = 137
	expect_verified "all or nothing after dying at $fp"
}

# A random delay: one run in five while the store opens, the others over the first publishes.
kill_delay() {
	if ((RANDOM % 5 == 0)); then
		echo $((5 + RANDOM % first))
	else
		echo $((first - each + RANDOM % (6 * each)))
	fi
}

main() {
	local one twenty first each n
	run "$DRIVER" init "$S"
	expect_rc 0 "init creates the store, the sandbox and the session"
	one=$(measure_ms 1)
	twenty=$(measure_ms 21)
	each=$(((twenty - one) / 20 + 1))
	first=${EOS_CRASH_FIRST_MS:-$one}
	((first > each)) || first=$((each + 1))
	diag "opening the store and one publish take ${one} ms, each further publish ${each} ms"
	expect_verified "the store is consistent after 22 publishes"
	for n in $(seq 1 "$runs"); do
		crash_run "$n" "$(kill_delay)"
	done
	if grep -q '^#define EOS_FAILPOINTS 1' "$top_builddir/config.h" 2>/dev/null; then
		for n in "${failpoints[@]}"; do
			failpoint_run "$n"
		done
	else
		diag "the build has no failpoints: skipping the failpoint runs"
	fi
	run "$DRIVER" run "$S" 4
	expect_rc 0 "publishing continues after all the kills"
	expect_verified "the store is consistent at the end"
	run eos_store --store "$S" --json fsck
	expect_rc 0 "eos-store fsck is clean"
	tap_done
}

main "$@"
