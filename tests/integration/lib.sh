# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# TAP helpers for the integration tests (sourced by tests/integration/*.sh, which are bash).
#
#	source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#	tap_tmpdir                      # $T: a fresh directory, removed on exit
#	run eos_store --store "$T/s" ls # sets $rc, $out (stdout), $err (stderr)
#	expect_rc 0 "ls succeeds"       # one TAP line; on failure prints the captured output
#	check "tree equal" cmp a b      # one TAP line from a command's status
#	wait_file PATH                  # until PATH exists (at most 60 s)
#	tap_done                        # prints the plan "1..N" and exits 1 when anything failed
#
# Binaries come from $top_builddir (the Makefile exports top_builddir and top_srcdir); by hand,
# run `top_builddir=/path/to/build tests/integration/x.sh`.
set -u

if [[ -z ${top_srcdir:-} ]]; then
	top_srcdir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
fi
top_builddir=${top_builddir:-$PWD}
EOS_STORE_BIN=$top_builddir/cli/eos-store
export top_srcdir top_builddir

tap_count=0
tap_failures=0
T=
rc=0
out=
err=
tap_bg_pids=()

diag() {
	local line
	for line in "$@"; do
		printf '%s\n' "$line" | sed 's/^/# /'
	done
}

ok() {
	tap_count=$((tap_count + 1))
	printf 'ok %d - %s\n' "$tap_count" "$*"
}

not_ok() {
	tap_count=$((tap_count + 1))
	tap_failures=$((tap_failures + 1))
	printf 'not ok %d - %s\n' "$tap_count" "$*"
}

# ok/not ok from a condition: pass DESC COMMAND... (the command's status decides).
check() {
	local desc=$1
	shift
	if "$@"; then
		ok "$desc"
	else
		not_ok "$desc"
		diag "command failed: $*"
	fi
}

# Negate a command's status (for check).
not() {
	! "$@"
}

bail_out() {
	printf 'Bail out! %s\n' "$*"
	exit 1
}

# Print the plan and exit: 0 when every test passed.
tap_done() {
	printf '1..%d\n' "$tap_count"
	if ((tap_failures > 0)); then
		diag "$tap_failures of $tap_count tests failed"
		exit 1
	fi
	exit 0
}

tap_cleanup() {
	local pid
	for pid in "${tap_bg_pids[@]}"; do
		pid_is_child "$pid" || continue
		kill -9 "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	if [[ -n $T && -d $T ]]; then
		chmod -R u+rwX "$T" 2>/dev/null
		rm -rf "$T"
	fi
}

# Create $T (mode 0711 so that an unprivileged helper user can reach its own subdirectory).
tap_tmpdir() {
	T=$(mktemp -d "${TMPDIR:-/tmp}/eos-test.XXXXXX") || bail_out "cannot create a temp dir"
	chmod 0711 "$T"
	trap tap_cleanup EXIT
	trap 'exit 130' INT TERM
}

# A pid recorded minutes ago may name an unrelated process by now (pid_max is 32 768 on these
# machines): a SIGKILL at cleanup must not hit another test's process. pid_is_child PID: whether
# it is still this shell's child; pid_runs PID NAME: whether its executable is named NAME (also
# once rebuilt: "NAME (deleted)").
pid_is_child() {
	local ppid
	ppid=$(ps -o ppid= -p "$1" 2>/dev/null) || return 1
	((${ppid:-0} == $$))
}

pid_runs() {
	local exe
	exe=$(readlink "/proc/$1/exe" 2>/dev/null) || return 1
	[[ $exe == */"$2" || $exe == */"$2 (deleted)" ]]
}

# Wait (up to $2 seconds, default 60) for process $1 to end; 1 if it still runs then.
wait_pid_gone() {
	local i
	for ((i = 0; i < ${2:-60} * 20; i++)); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.05
	done
	return 1
}

# Remember a background pid so that cleanup kills it.
track_pid() {
	tap_bg_pids+=("$1")
}

# Run a command capturing stdout ($out), stderr ($err) and the exit status ($rc).
run() {
	"$@" >"$T/.run-out" 2>"$T/.run-err"
	rc=$?
	out=$(cat "$T/.run-out")
	err=$(cat "$T/.run-err")
}

show_run() {
	diag "exit status: $rc"
	[[ -z $out ]] || diag "stdout:" "$out"
	[[ -z $err ]] || diag "stderr:" "$err"
}

# The last run exited with status $1.
expect_rc() {
	local want=$1
	shift
	if [[ $rc == "$want" ]]; then
		ok "$*"
	else
		not_ok "$*"
		diag "expected exit status $want"
		show_run
	fi
}

# The last run exited with status $1 and its stream $2 (out or err) contains $3.
expect_rc_match() {
	local want=$1 stream=$2 needle=$3 text
	shift 3
	text=$out
	[[ $stream == err ]] && text=$err
	if [[ $rc == "$want" && $text == *"$needle"* ]]; then
		ok "$*"
	else
		not_ok "$*"
		diag "expected exit status $want and '$needle' in std$stream"
		show_run
	fi
}

eos_store() {
	"$EOS_STORE_BIN" "$@"
}

require_eos_store() {
	[[ -x $EOS_STORE_BIN ]] || bail_out "'$EOS_STORE_BIN' is missing (build it; set top_builddir)"
	command -v python3 >/dev/null || bail_out "python3 is needed to check the JSON output"
}

# stdin is one valid JSON document.
json_valid() {
	python3 -c 'import json, sys; json.load(sys.stdin)'
}

# Print a value from the JSON document on stdin: json_get 'd["files"]' (d is the document; more
# words are sys.argv[2:], and re is imported).
json_get() {
	python3 -c 'import json, re, sys
d = json.load(sys.stdin)
v = eval(sys.argv[1])
print(json.dumps(v) if isinstance(v, (dict, list, bool)) or v is None else v)' "$@"
}

# The `ls --json` document on stdin lists sandbox $1.
json_has_sandbox() {
	[[ $(json_get "'$1' in [s['id'] for s in d['sandboxes']]") == true ]]
}

# The pid eosd.json of state directory $1 (default: $EOS_STATE_DIR) names, or nothing.
eosd_pid() {
	python3 -c 'import json, sys
try:
    print(json.load(open(sys.argv[1] + "/eosd.json"))["pid"])
except OSError:
    pass' "${1:-$EOS_STATE_DIR}"
}

# eosd's own directory in $EOS_RUNTIME_DIR for state directory $1 (supervisor/runfiles.h): named
# by the first 16 hex digits of the SHA-256 of the state directory's real path.
eosd_runtime_dir() {
	local real
	real=$(realpath -m "$1") || return 1
	printf '%s/%s\n' "${EOS_RUNTIME_DIR:?}" "$(printf '%s' "$real" | sha256sum | cut -c1-16)"
}

# Wait (up to 60 s) for file $1.
wait_file() {
	local i
	for ((i = 0; i < 1200; i++)); do
		[[ -e $1 ]] && return 0
		sleep 0.05
	done
	return 1
}

# Sleep $1 milliseconds.
sleep_ms() {
	sleep "$(($1 / 1000)).$(printf '%03d' $(($1 % 1000)))"
}
