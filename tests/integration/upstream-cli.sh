#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The upstream command lines against a real eosd (doc/eosctl.md, "The upstream command lines"):
# sandbox-manager-cli, sandbox-runtime-cli --sandbox-id ID and sandbox-observability-cli, eosctl
# under those names. Every operation of each surface is driven through its line at least once
# (and the test checks that none was left out), each success is one JSON line on stdout (exit 0)
# shaped like its fixture in tests/fixtures/upstream-cli/ (upstream_shape.py: keys and types,
# stable fields like status and exit_code by value); a failed shell command is exit 0 with
# status "error" and its exit_code; eosd's errors are the envelope on stderr (exit 1, a rejected
# publish too); usage errors exit 2 and never reach eosd (none is started); --help lists only
# the surface's operations, the extensions marked. As root, the same again as the unprivileged
# user. EOS_UPDATE_FIXTURES=1 writes the fixtures from this run instead of checking them.
# shellcheck disable=SC2317 # helpers called through run, check and the EXIT trap
# shellcheck disable=SC2016 # command lines for the sandboxed shell, expanded there
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/fs-lib.sh"

EOSCTL_BIN=$top_builddir/cli/eosctl
MGR_BIN=$top_builddir/cli/sandbox-manager-cli
RT_BIN=$top_builddir/cli/sandbox-runtime-cli
OBS_BIN=$top_builddir/cli/sandbox-observability-cli
for b in "$EOSCTL_BIN" "$MGR_BIN" "$RT_BIN" "$OBS_BIN" "$top_builddir/supervisor/eosd"; do
	[[ -x $b ]] || bail_out "'$b' is missing (build it; set top_builddir)"
done
command -v python3 >/dev/null || bail_out "python3 is needed"
SHAPE=$top_srcdir/tests/integration/upstream_shape.py
FIXTURES=$top_srcdir/tests/fixtures/upstream-cli
tap_tmpdir

export EOS_STATE_DIR=$T/state EOS_RUNTIME_DIR=$T/run
unset EOS_NO_AUTOSTART XDG_DATA_HOME XDG_RUNTIME_DIR EOS_STORE

mgr() { "$MGR_BIN" "$@"; }
rt() { "$RT_BIN" --sandbox-id sb1 "$@"; }
obs() { "$OBS_BIN" "$@"; }

trap eosd_cleanup EXIT

# The operations a front end drove to success (exit 0), by name.
declare -A exercised=()

# The words $@ on one line, for a test's description.
words() {
	local s="$*"
	printf '%s' "${s//$'\n'/\\n}"
}

one_json_line() {
	[[ $(wc -l <<<"$out") == 1 ]] && json_valid <<<"$out"
}

# The document on stdin is shaped like fixture $1 (or, with EOS_UPDATE_FIXTURES=1, becomes it).
shaped_like() {
	if [[ -n ${EOS_UPDATE_FIXTURES:-} ]]; then
		mkdir -p "$FIXTURES" && python3 "$SHAPE" shape >"$FIXTURES/$1.json"
		return
	fi
	local diff
	diff=$(python3 "$SHAPE" check "$FIXTURES/$1.json") || {
		diag "$diff"
		return 1
	}
}

# op_ok FIXTURE FRONT OP ARG...: FRONT (mgr, rt, obs) runs OP; exit 0, one JSON line on stdout,
# nothing on stderr, shaped like FIXTURE.
op_ok() {
	local fixture=$1 front=$2 op=$3
	shift 3
	run "$front" "$op" "$@"
	expect_rc 0 "$front $op $(words "$@")"
	check "... one JSON line on stdout" one_json_line
	check "... nothing on stderr" test -z "$err"
	check "... shaped like fixture $fixture" shaped_like "$fixture" <<<"$out"
	[[ $rc == 0 ]] && exercised[$op]=1
}

# op_fails KIND FRONT OP ARG...: exit 1, nothing on stdout, the envelope of KIND on stderr.
op_fails() {
	local kind=$1 front=$2 op=$3
	shift 3
	run "$front" "$op" "$@"
	expect_rc 1 "$front $op $(words "$@"): exit 1"
	check "... nothing on stdout" test -z "$out"
	check "... the envelope, one JSON line on stderr" \
		test "$(wc -l <<<"$err")" = 1 -a "$(json_get 'd["error"]["kind"]' <<<"$err")" = "$kind"
}

# usage FRONT ARG...: exit 2 with a line naming $needle on stderr, nothing on stdout.
usage() {
	local needle=$1
	shift
	run "$@"
	expect_rc_match 2 err "$needle" "usage error: ${1##*/} $(words "${@:2}") (exit 2)"
	check "... nothing on stdout" test -z "$out"
}

no_eosd_runs() {
	! pgrep -f "eosd --state-dir $EOS_STATE_DIR" >/dev/null
}

# --- usage errors never reach eosd --------------------------------------------------------------

test_usage_errors() {
	usage "missing option '--sandbox-id ID' before the operation" "$RT_BIN" exec_command 'echo'
	usage "missing option '--sandbox-id ID'" "$RT_BIN" file_list
	usage "unknown operation 'no_such_op'" "$RT_BIN" --sandbox-id sb1 no_such_op
	usage "of the management surface, not runtime (use sandbox-manager-cli)" \
		"$RT_BIN" --sandbox-id sb1 create_sandbox /tmp
	usage "of the runtime surface, not management (use sandbox-runtime-cli)" \
		"$MGR_BIN" exec_command 'echo'
	usage "of the management surface, not observability" "$OBS_BIN" list_sandboxes
	usage "unknown option '--bogus' (see 'sandbox-runtime-cli exec_command --help')" \
		"$RT_BIN" --sandbox-id sb1 exec_command 'echo' --bogus 1
	usage "unknown option '--session'" \
		"$RT_BIN" --sandbox-id sb1 exec_command 'echo' --session ws-1
	usage "unknown option '--json'" "$MGR_BIN" --json list_sandboxes
	usage "unknown option '--sandbox'" "$MGR_BIN" inspect_sandbox --sandbox sb1
	usage "'--yield-time-ms': argument 'yield_time_ms': 99999 is out of range" \
		"$RT_BIN" --sandbox-id sb1 exec_command 'echo' --yield-time-ms 99999
	usage "missing PATH (argument 'path')" "$RT_BIN" --sandbox-id sb1 file_read
	usage "missing option '--format FORMAT'" "$MGR_BIN" export_changes --sandbox-id sb1
	usage "missing option '--sandbox-id ID'" "$MGR_BIN" inspect_sandbox
	usage "'--sandbox-id'" "$RT_BIN" --sandbox-id 'not an id' file_list
	usage "usage: sandbox-observability-cli OPERATION" "$OBS_BIN"
	check "no eosd was started by any of them" test ! -e "$EOS_STATE_DIR/eosd.json"
	check "... none runs for the state directory" no_eosd_runs
	EOS_NO_AUTOSTART=1 run "$MGR_BIN" list_sandboxes
	expect_rc 1 "a valid line with no eosd and EOS_NO_AUTOSTART=1: exit 1"
	check "... the envelope on stderr (unavailable)" \
		test "$(json_get 'd["error"]["kind"]' <<<"$err")" = unavailable
}

# --- help ---------------------------------------------------------------------------------------

# The operations the --help of front end $1 lists (catalog names), one a line.
help_ops() {
	"$1" --help | sed -n '/^operations:/,/^$/p' | awk 'NF > 1 && $1 != "operations:" { print $1 }'
}

test_help() {
	local fe op surface
	run "$MGR_BIN" --help
	expect_rc_match 0 out "usage: sandbox-manager-cli OPERATION" "sandbox-manager-cli --help"
	check "... lists create_sandbox" grep -Eq '^  create_sandbox +import' <<<"$out"
	check "... revoke_token marked (eos extension)" \
		grep -Eq '^  revoke_token +\(eos extension\) revoke' <<<"$out"
	check "... issue_token not marked" not grep -Eq '^  issue_token .*eos extension' <<<"$out"
	check "... no operation of another surface" not grep -Eq '^  (exec_command|snapshot) ' <<<"$out"
	run "$RT_BIN" --help
	expect_rc_match 0 out "usage: sandbox-runtime-cli --sandbox-id ID OPERATION" \
		"sandbox-runtime-cli --help: --sandbox-id before the operation"
	for op in fork_workspace_session mount_workspace_session file_list; do
		check "... $op marked (eos extension)" \
			grep -Eq "^  $op +\\(eos extension\\)" <<<"$out"
	done
	check "... exec_command not marked" not grep -Eq '^  exec_command .*eos extension' <<<"$out"
	check "... --state-dir marked (eos extension)" \
		grep -Eq -- '--state-dir DIR +\(eos extension\)' <<<"$out"
	run "$OBS_BIN" --help
	expect_rc_match 0 out "usage: sandbox-observability-cli OPERATION" \
		"sandbox-observability-cli --help"
	check "... ping marked (eos extension)" grep -Eq '^  ping +\(eos extension\)' <<<"$out"
	run "$RT_BIN" exec_command --help
	expect_rc_match 0 out "usage: sandbox-runtime-cli --sandbox-id ID exec_command CMD" \
		"exec_command --help (no --sandbox-id needed for help)"
	for op in --workspace-session-id --yield-time-ms --timeout-ms --max-output-bytes; do
		check "... lists $op" grep -q -- "$op N\\|$op ID" <<<"$out"
	done
	check "... --isolation marked (eos extension)" \
		grep -Eq -- '--isolation ISOLATION +\(eos extension\)' <<<"$out"
	check "... no eosctl alias --session" not grep -q -- '--session\b' <<<"$out"
	check "... CMD is also --cmd" grep -q -- "options too: --cmd CMD" <<<"$out"
	run "$MGR_BIN" --version
	expect_rc_match 0 out "sandbox-manager-cli (eos) " "--version"
	for fe in "$MGR_BIN" "$RT_BIN" "$OBS_BIN"; do
		surface=${fe##*/sandbox-}
		surface=${surface%-cli}
		[[ $surface == manager ]] && surface=management
		while read -r op; do
			grep -q "of the $surface surface" <("$EOSCTL_BIN" help "$op") ||
				not_ok "${fe##*/} --help lists $op, which is not of the $surface surface"
			all_ops+=("$op")
		done < <(help_ops "$fe")
	done
	check "the three lines list every catalog operation once" \
		test "${#all_ops[@]}" = "$(sort -u < <(printf '%s\n' "${all_ops[@]}") | wc -l)"
}

# --- management ---------------------------------------------------------------------------------

test_management() {
	local id
	mkdir -p "$T/src/dir"
	printf 'one\ntwo\nthree\n' >"$T/src/notes.txt"
	printf 'a\n' >"$T/src/dir/a.txt"
	op_ok create_sandbox mgr create_sandbox "$T/src" --id sb1
	op_ok list_sandboxes mgr list_sandboxes
	check "... lists sb1" test "$(json_get '[s["sandbox_id"] for s in d["sandboxes"]]' <<<"$out")" \
		= '["sb1"]'
	op_ok inspect_sandbox mgr inspect_sandbox --sandbox-id sb1
	op_ok export_changes-tar mgr export_changes --sandbox-id sb1 --format tar \
		--dest "$T/sb1.tar"
	check "... wrote the tar" tar -tf "$T/sb1.tar"
	op_ok issue_token mgr issue_token --sandbox-id sb1 --surface runtime --ttl-seconds 600
	id=$(json_get 'd["token_id"]' <<<"$out")
	json_get 'd["token"]' <<<"$out" >"$T/sb1.token"
	run rt --token-file "$T/sb1.token" file_list
	expect_rc 0 "the minted token opens sb1's runtime surface"
	op_ok revoke_token mgr revoke_token "$id"
	op_fails unauthorized rt --token-file "$T/sb1.token" file_list
}

# --- runtime ------------------------------------------------------------------------------------

# write_command_stdin on $1 until it has ended (its last reply in $out).
wait_command() {
	local i
	for ((i = 0; i < 50; i++)); do
		[[ $(json_get 'd["status"]' <<<"$out") != running ]] && return 0
		run rt write_command_stdin "$1" --yield-time-ms 200
	done
	return 1
}

test_exec() {
	op_ok exec_command-error rt exec_command 'exit 3'
	check "a failed shell command: status error" test "$(json_get 'd["status"]' <<<"$out")" = error
	check "... with its exit_code 3" test "$(json_get 'd["exit_code"]' <<<"$out")" = 3
	op_ok exec_command rt exec_command 'echo hi' --yield-time-ms 500 --timeout-ms 60000
	check "... its output" test "$(json_get 'd["output"]' <<<"$out")" = hi
	op_ok exec_command rt exec_command --cmd 'echo "$A"' --env A=1 --cwd dir
	check "--cmd, --env, --cwd as options" test "$(json_get 'd["output"]' <<<"$out")" = 1
	op_ok exec_command-timed-out rt exec_command 'sleep 30' --timeout-ms 300 --yield-time-ms 5000
	check "--timeout-ms: status timed_out, exit_code 124, still exit 0" \
		test "$(json_get 'd["status"]' <<<"$out")/$(json_get 'd["exit_code"]' <<<"$out")" \
		= timed_out/124
}

test_sessions_files() {
	local cmd
	op_ok create_workspace_session rt create_workspace_session --workspace-session-id ws-1
	op_ok list_workspace_sessions rt list_workspace_sessions
	op_ok inspect_workspace_session rt inspect_workspace_session ws-1
	op_ok inspect_workspace_session rt inspect_workspace_session --workspace-session-id ws-1
	op_ok file_write rt file_write new.txt --content $'x\ny\n' --workspace-session-id ws-1
	op_ok file_read rt file_read new.txt --workspace-session-id ws-1
	op_ok file_edit rt file_edit --path new.txt --workspace-session-id ws-1 \
		--edits '[{"old_string":"y","new_string":"z"}]'
	op_ok file_list rt file_list --workspace-session-id ws-1
	op_ok exec_command-running rt exec_command 'read x; echo got-$x' \
		--workspace-session-id ws-1 --yield-time-ms 0
	check "--yield-time-ms 0: status running" test "$(json_get 'd["status"]' <<<"$out")" = running
	cmd=$(json_get 'd["command_session_id"]' <<<"$out")
	op_ok write_command_stdin rt write_command_stdin "$cmd" $'abc\n' --yield-time-ms 5000
	check "... until it ended" wait_command "$cmd"
	op_ok read_command_lines rt read_command_lines "$cmd" --limit 10
	check "... its transcript" test "$(json_get 'd["lines"]' <<<"$out")" = '["got-abc"]'
	mkdir -p "$T/mnt"
	fs_mounts+=("$T/mnt")
	op_ok mount_workspace_session rt mount_workspace_session ws-1 "$T/mnt"
	check "... the view at the directory" test "$(cat "$T/mnt/new.txt")" = $'x\nz'
	op_ok unmount_workspace_session rt unmount_workspace_session ws-1
	op_ok fork_workspace_session rt fork_workspace_session ws-1 \
		--new-workspace-session-id ws-2
	op_ok layerstack-session obs layerstack --sandbox-id sb1 --workspace-session-id ws-2
	op_ok destroy_workspace_session rt destroy_workspace_session ws-2
	op_ok publish_workspace_session rt publish_workspace_session ws-1
	op_ok file_blame rt file_blame new.txt
	op_ok destroy_workspace_session rt destroy_workspace_session ws-1
}

test_rejected_and_errors() {
	op_ok create_workspace_session rt create_workspace_session --workspace-session-id ws-3
	op_ok create_workspace_session rt create_workspace_session --workspace-session-id ws-4
	op_ok file_write rt file_write notes.txt --content $'one\nTWO\nthree\n' \
		--workspace-session-id ws-4
	op_ok file_write rt file_write notes.txt --content $'one\n2\nthree\n' \
		--workspace-session-id ws-3
	op_ok publish_workspace_session-destroy-after rt publish_workspace_session ws-4 \
		--destroy-after
	op_fails publish_rejected rt publish_workspace_session ws-3
	check "... a rejected publish is exit 1 here (3 in eosctl)" test "$rc" = 1
	run rt read_command_lines cmd-999999
	expect_rc 1 "an unknown command: exit 1"
	check "... the envelope shaped like its fixture" shaped_like error-envelope <<<"$err"
	op_ok destroy_workspace_session rt destroy_workspace_session ws-3
}

# --- observability, squash, destroy -------------------------------------------------------------

test_observability() {
	local trace
	op_ok ping obs ping
	op_ok version obs version
	op_ok snapshot obs snapshot
	op_ok snapshot obs snapshot --sandbox-id sb1
	op_ok layerstack obs layerstack --sandbox-id sb1
	op_ok layerstack obs layerstack sb1
	op_ok events obs events --name sandbox.created --last-n 1
	op_ok cgroup obs cgroup sandbox sb1 --window 10
	run rt file_list
	trace=$(json_get 'd["trace_id"]' <<<"$out")
	op_ok trace obs trace "$trace"
	check "... the trace asked for" test "$(json_get 'd["trace_id"]' <<<"$out")" = "$trace"
	op_ok trace obs trace --last
}

test_squash_export_destroy() {
	op_ok squash_layerstacks mgr squash_layerstacks --sandbox-id sb1
	op_ok export_changes mgr export_changes --sandbox-id sb1 --format patch
	op_ok create_sandbox mgr create_sandbox "$T/src" --id sb2
	op_ok destroy_sandbox mgr destroy_sandbox --sandbox-id sb2 --force
}

# Every operation each line lists was driven to success at least once.
test_coverage() {
	local op missing=()
	for op in "${all_ops[@]}"; do
		[[ -n ${exercised[$op]:-} ]] || missing+=("$op")
	done
	check "every operation of the three lines (${#all_ops[@]}) was exercised" \
		test "${#missing[@]}" = 0
	((${#missing[@]} == 0)) || diag "not exercised: ${missing[*]}"
}

all_ops=()
test_usage_errors
test_help
test_management
test_exec
test_sessions_files
test_rejected_and_errors
test_observability
test_squash_export_destroy
test_coverage
run "$EOSCTL_BIN" daemon stop
expect_rc 0 "the test's eosd stops"
rerun_as_test_user "$0"
tap_done
