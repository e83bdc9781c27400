#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# eosctl against a real eosd: usage errors (exit 2, nothing started), EOS_NO_AUTOSTART=1
# refusing, autostart (also after eosd was SIGKILLed), the sandbox lifecycle (create from a
# directory and a relative path, ls, inspect, export, squash, destroy), tokens (issue, use a
# limited one where it does not reach, revoke), failures (exit 1, the envelope as text and as
# JSON), daemon status/stop/start, both output modes (text forced, and on a real terminal through
# script(1); JSON when stdout is not a terminal), help and the bash completion generated from the
# catalog. A rejected publish (exit 3) comes from a python3 peer answering 409 publish_rejected,
# until the session operations land in eosd. As root, the same again as the unprivileged user.
# shellcheck disable=SC2317 # helpers called through run, check and the EXIT trap
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/fs-lib.sh"

EOSCTL_BIN=$top_builddir/cli/eosctl
[[ -x $EOSCTL_BIN ]] || bail_out "'$EOSCTL_BIN' is missing (build it; set top_builddir)"
[[ -x $top_builddir/supervisor/eosd ]] || bail_out "eosd is missing (build it)"
command -v python3 >/dev/null || bail_out "python3 is needed"
tap_tmpdir

export EOS_STATE_DIR=$T/state EOS_RUNTIME_DIR=$T/run
unset EOS_NO_AUTOSTART XDG_DATA_HOME XDG_RUNTIME_DIR EOS_STORE

eosctl() {
	"$EOSCTL_BIN" "$@"
}

# Process $1 has exited (a zombie whose reaper has not come by yet counts as exited).
gone() {
	[[ ! -d /proc/$1 ]] || grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null
}

# Run $2... in directory $1.
in_dir() {
	(cd "$1" && shift && "$@")
}

# Kill whatever eosd this test started (a failed test must not leave one behind).
trap 'eosd_cleanup "$T/state" "$T/state2" "$T/state3" "$T/state4"' EXIT

setup() {
	mkdir -p "$T/src/dir" "$T/src2"
	printf 'one\ntwo\n' >"$T/src/dir/a.txt"
	printf 'x\n' >"$T/src2/b.txt"
}

test_usage_errors() {
	run eosctl sandbox frob
	expect_rc_match 2 err "unknown command 'sandbox frob'" "an unknown command exits 2"
	run eosctl file read --sandbox sb
	expect_rc_match 2 err "missing PATH (argument 'path')" "a missing positional exits 2, named"
	run eosctl sandbox export sb
	expect_rc_match 2 err "argument 'format'" "a missing option exits 2, named"
	run eosctl sandbox ls --bogus
	expect_rc_match 2 err "unknown option '--bogus'" "an unknown option exits 2"
	run eosctl file read a --sandbox sb --limit 0
	expect_rc_match 2 err "argument 'limit'" "a value out of range exits 2, named"
	run eosctl token issue --sandbox sb --surface management
	expect_rc_match 2 err "argument 'surface'" "a value not in the enum exits 2, named"
	run eosctl sandbox
	expect_rc_match 2 err "sandbox create" "a group without a verb lists its verbs, exit 2"
	check "usage errors sent nothing: no eosd was started" not test -e "$T/state/eosd.json"
}

test_no_autostart() {
	EOS_NO_AUTOSTART=1 run eosctl sandbox ls
	expect_rc_match 1 err "eosd is not running" "EOS_NO_AUTOSTART=1 refuses to start eosd"
	check "... and says how to start it" grep -q "eosctl daemon start" <<<"$err"
	check "... and started none" not test -e "$T/state/eosd.json"
	run eosctl --text daemon status
	expect_rc_match 1 out "not running" "daemon status without eosd: 'not running', exit 1"
	run eosctl daemon status
	expect_rc_match 1 out '"running":false' "... as JSON: running false, exit 1"
}

test_autostart() {
	local pid
	run eosctl sandbox ls
	expect_rc 0 "the first command starts eosd"
	check "... and prints the empty list as JSON (stdout is not a terminal)" \
		test "$(json_get 'd["sandboxes"]' <<<"$out")" = "[]"
	check "... with the request's trace_id" \
		test "$(json_get 'len(d["trace_id"])' <<<"$out")" = 32
	pid=$(eosd_pid)
	check "eosd.json names a live eosd" test -n "$pid" -a -d "/proc/$pid"
	check "... which is eosd" grep -qx eosd "/proc/$pid/comm"
	run eosctl daemon status
	expect_rc_match 0 out "\"pid\":$pid" "daemon status: running, with its pid"
	check "... its socket and version" grep -q '"socket":".*eosd.sock".*"version":' <<<"$out"
}

test_create() {
	run eosctl sandbox create "$T/src" --id sb1
	expect_rc 0 "sandbox create DIR --id sb1"
	check "... answers the new sandbox" test "$(json_get 'd["sandbox_id"]' <<<"$out")" = sb1
	run in_dir "$T" eosctl sandbox create src2 --id sb2
	expect_rc 0 "sandbox create with a relative path (made absolute by eosctl)"
	run eosctl sandbox ls
	check "sandbox ls lists sb1" json_has_sandbox_id sb1
	check "sandbox ls lists sb2" json_has_sandbox_id sb2
}

json_has_sandbox_id() {
	[[ $(json_get "'$1' in [s['sandbox_id'] for s in d['sandboxes']]" <<<"$out") == true ]]
}

test_text_output() {
	run eosctl --text sandbox ls
	expect_rc_match 0 out "SANDBOX_ID" "--text: sandbox ls is a table"
	check "... with a row for sb1" grep -q '^sb1 ' <<<"$out"
	run script -qec "$EOSCTL_BIN sandbox ls" /dev/null
	expect_rc_match 0 out "SANDBOX_ID" "on a terminal (script): a table without --text"
	run script -qec "$EOSCTL_BIN --json sandbox ls" /dev/null
	check "on a terminal with --json: the JSON document" grep -q '^{"sandboxes":\[' <<<"$out"
	run eosctl --text sandbox inspect sb1
	expect_rc_match 0 out "head:" "--text: inspect is key: value lines"
	check "... without the reply's trace_id (JSON keeps it)" not grep -q trace_id <<<"$out"
	run eosctl --output json sandbox inspect sb1
	check "--output json: one JSON document" json_valid <<<"$out"
}

test_export_squash() {
	run eosctl sandbox export sb1 --format tar --dest "$T/sb1.tar"
	expect_rc 0 "sandbox export --format tar --dest FILE"
	check "... wrote the tar" test -f "$T/sb1.tar"
	run eosctl sandbox export sb1 --format patch
	expect_rc 0 "sandbox export --format patch (inline)"
	check "... answers its format" test "$(json_get 'd["format"]' <<<"$out")" = patch
	run eosctl sandbox squash sb1
	expect_rc 0 "sandbox squash"
	check "... answers for sb1" test "$(json_get 'd["sandbox_id"]' <<<"$out")" = sb1
}

test_failures() {
	run eosctl sandbox inspect nope
	expect_rc_match 1 err "eosctl: not_found: " "a failed operation exits 1, kind and message"
	check "... naming the sandbox" grep -q "'nope'" <<<"$err"
	check "... and nothing on stdout" test -z "$out"
	run eosctl --json sandbox inspect nope
	expect_rc 1 "with --json: exit 1"
	check "... the envelope on stderr as JSON" \
		test "$(json_get 'd["error"]["kind"]' <<<"$err")" = not_found
}

test_tokens() {
	local id
	run eosctl token issue --sandbox sb1 --surface runtime --ttl-seconds 600
	expect_rc 0 "token issue --surface runtime for sb1"
	id=$(json_get 'd["token_id"]' <<<"$out")
	json_get 'd["token"]' <<<"$out" >"$T/token"
	chmod 600 "$T/token"
	check "... answers a token and its id" test -s "$T/token" -a -n "$id"
	run eosctl sandbox ls --token-file "$T/token"
	expect_rc 1 "a runtime token does not open a management operation"
	check "... refused as unauthorized or forbidden" grep -Eq 'eosctl: (unauthorized|forbidden):' <<<"$err"
	run eosctl token revoke "$id"
	expect_rc 0 "token revoke ID"
	printf 'not-a-token\n' >"$T/bad-token"
	run eosctl sandbox ls --token-file "$T/bad-token"
	expect_rc_match 1 err "eosctl: unauthorized:" "a wrong token: unauthorized, exit 1"
}

# Sessions and files through eosctl: skipped while this eosd answers them "not built yet".
test_sessions() {
	run eosctl session create --sandbox sb1 --session wa
	if [[ $rc == 1 && $err == *"not built yet"* ]]; then
		ok "session and file commands # SKIP this eosd has no session operations yet"
		return
	fi
	expect_rc 0 "session create --session wa"
	run eosctl session create --sandbox sb1 --session wb
	expect_rc 0 "session create --session wb"
	run eosctl --text session ls --sandbox sb1
	expect_rc_match 0 out "WORKSPACE_SESSION_ID" "--text: session ls is a table"
	check "... listing wa" grep -q '^  wa ' <<<"$out"
	run eosctl --text file read dir/a.txt --sandbox sb1 --session wa
	check "--text: file read prints the lines themselves" test "$out" = $'one\ntwo'
	run eosctl --text file read dir/a.txt --sandbox sb1 --session wa --limit 1
	expect_rc_match 0 err "--offset 2" "... and says where the next lines start"
	printf 'ONE\ntwo\n' >"$T/new-a"
	run eosctl file write dir/a.txt --content-file "$T/new-a" --sandbox sb1 --session wa
	expect_rc 0 "file write --content-file FILE"
	run eosctl file edit dir/a.txt --sandbox sb1 --session wb \
		--edits '[{"old_string":"one","new_string":"uno"}]'
	expect_rc 0 "file edit --edits JSON"
	run eosctl --text file ls dir --sandbox sb1 --session wb
	expect_rc_match 0 out "a.txt" "--text: file ls is a table of the directory"
	run eosctl session publish wa --sandbox sb1
	expect_rc 0 "session publish wa"
	run eosctl session publish wb --sandbox sb1
	expect_rc_match 3 err "eosctl: publish_rejected:" "a conflicting publish exits 3"
	check "... listing the conflict" grep -q "conflict: dir/a.txt" <<<"$err"
	run eosctl --json session publish wb --sandbox sb1
	expect_rc 3 "... with --json too"
	check "... the envelope on stderr" \
		test "$(json_get 'd["error"]["details"]["conflicts"][0]["path"]' <<<"$err")" = dir/a.txt
	run eosctl --text file blame dir/a.txt --sandbox sb1
	expect_rc_match 0 out "workspace_session:wa" "--text: file blame shows who wrote each line"
	mkdir -p "$T/mnt"
	fs_mounts+=("$T/mnt")
	run eosctl session mount wb "$T/mnt" --sandbox sb1
	expect_rc 0 "session mount wb DIR"
	check "... shows the session's live view there" grep -qx uno "$T/mnt/dir/a.txt"
	run eosctl session unmount wb --sandbox sb1
	expect_rc 0 "session unmount wb"
	check "... and the view is gone from there" not fs_is_mounted "$T/mnt"
	run eosctl session fork wb --sandbox sb1 --new-session wc
	expect_rc 0 "session fork wb --new-session wc"
	for ws in wa wb wc; do
		run eosctl session destroy "$ws" --sandbox sb1
		expect_rc 0 "session destroy $ws"
	done
}

test_daemon_ops() {
	run eosctl daemon ping
	expect_rc 0 "daemon ping (observability surface)"
	run eosctl daemon version
	expect_rc 0 "daemon version"
	check "... answers a version" test -n "$(json_get 'd["version"]' <<<"$out")"
}

test_destroy() {
	run eosctl sandbox destroy sb2
	expect_rc 0 "sandbox destroy sb2"
	run eosctl sandbox ls
	check "... sb2 is gone" not json_has_sandbox_id sb2
	check "... sb1 stays" json_has_sandbox_id sb1
}

test_restart() {
	local pid new
	pid=$(eosd_pid)
	kill -9 "$pid"
	while ! gone "$pid"; do
		sleep 0.05
	done
	run eosctl sandbox ls
	expect_rc 0 "after eosd was SIGKILLed, the next command starts a new one"
	new=$(eosd_pid)
	check "... a new pid" test -n "$new" -a "$new" != "$pid"
	check "... and sb1 is still there" json_has_sandbox_id sb1
}

test_stop_start() {
	local pid
	pid=$(eosd_pid)
	run eosctl daemon stop
	expect_rc 0 "daemon stop"
	check "... eosd has exited" gone "$pid"
	check "... and removed eosd.json" not test -e "$T/state/eosd.json"
	run eosctl daemon stop
	expect_rc 0 "daemon stop without eosd: nothing to do, exit 0"
	run eosctl --text daemon start
	expect_rc 0 "daemon start"
	check "... says it started eosd" grep -qE '^started: +true$' <<<"$out"
	check "... eosd runs again" test -n "$(eosd_pid)"
	run eosctl daemon start
	expect_rc_match 0 out "\"pid\":$(eosd_pid)" "daemon start while it runs: the same eosd"
	check "... not started again" grep -q '"started":false' <<<"$out"
	EOS_RUNTIME_DIR=$T/run2 run eosctl --state-dir "$T/state2" sandbox ls
	expect_rc 0 "--state-dir: another state directory gets its own eosd"
	check "... a different one" test "$(eosd_pid "$T/state2")" != "$(eosd_pid)"
	run eosctl --state-dir "$T/state2" daemon stop
	expect_rc 0 "... and daemon stop --state-dir stops that one"
	check "... only that one" test -n "$(eosd_pid)"
}

test_help() {
	run eosctl --help
	expect_rc_match 0 out "session publish" "--help lists the commands from the catalog"
	run eosctl help create_sandbox
	expect_rc_match 0 out "--id ID" "help OPERATION lists its arguments"
	run eosctl file read --help
	expect_rc_match 0 out "default: 2000" "GROUP VERB --help shows the defaults"
}

# Complete the words $@ (the last one being completed) with eosctl's generated script.
complete_words() {
	bash -c 'source <("$1" completion bash); shift
COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _eosctl; printf "%s\n" "${COMPREPLY[@]}"' \
		bash "$EOSCTL_BIN" "$@"
}

test_completion() {
	check "completion: the groups" grep -qx sandbox <(complete_words eosctl "")
	check "completion: a group's verbs" grep -qx publish <(complete_words eosctl session "")
	check "completion: an operation's options" \
		grep -qx -- --session <(complete_words eosctl file read --se)
	check "completion: an enum's values" \
		grep -qx tar-zst <(complete_words eosctl sandbox export sb --format "")
	check "completion: eosctl's own commands" grep -qx status <(complete_words eosctl daemon "")
	if command -v shellcheck >/dev/null; then
		check "the generated completion script passes shellcheck" \
			shellcheck -s bash <(eosctl completion bash)
	fi
}

# A peer on Unix socket $1 answering one request with status $2 and body $3 after $4 seconds.
fake_peer() {
	python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1)
print("ready", flush=True)
c, _ = s.accept(); c.recv(65536)
time.sleep(float(sys.argv[4]))
b = sys.argv[3].encode()
c.sendall(b"HTTP/1.1 %s X\r\nContent-Length: %d\r\n\r\n" % (sys.argv[2].encode(), len(b)) + b)
c.close()' "$@"
}

# Start fake_peer "$@" in the background and wait until it listens.
start_peer() {
	local i
	rm -f "$1" "$T/peer.ready"
	fake_peer "$@" >"$T/peer.ready" &
	track_pid $!
	for ((i = 0; i < 1200; i++)); do
		grep -q ready "$T/peer.ready" 2>/dev/null && return 0
		sleep 0.05
	done
	bail_out "the python3 peer did not start"
}

test_publish_rejected() {
	printf 'x\n' >"$T/any-token"
	start_peer "$T/fake.sock" 409 '{"error":{"kind":"publish_rejected","message":"2 conflicts",
"details":{"conflicts":[{"path":"src/a.c","kind":"content","lines":[3,5]},
{"path":"b","kind":"deleted"}]}}}' 0
	run eosctl session publish ws-1 --sandbox sb1 --url "unix:$T/fake.sock" \
		--token-file "$T/any-token"
	expect_rc_match 3 err "eosctl: publish_rejected: 2 conflicts" \
		"a rejected publish exits 3 (a peer answering 409)"
	check "... and lists every conflict" grep -q "conflict: src/a.c: content" <<<"$err"
	check "... the second one too" grep -q "conflict: b: deleted" <<<"$err"
}

# A long-running operation draws a spinner on a terminal's stderr, and nothing when piped.
test_spinner() {
	start_peer "$T/slow.sock" 200 '{"sandbox_id":"sb1"}' 1.5
	run script -qec "$EOSCTL_BIN sandbox squash sb1 --url unix:$T/slow.sock \
--token-file $T/any-token" /dev/null
	expect_rc_match 0 out "sandbox squash: " "a long operation shows a spinner on a terminal"
	check "... then the reply" grep -q "sandbox_id: sb1" <<<"$out"
	start_peer "$T/slow.sock" 200 '{"sandbox_id":"sb1"}' 1.5
	run eosctl sandbox squash sb1 --url "unix:$T/slow.sock" --token-file "$T/any-token"
	expect_rc 0 "... and none when stderr is not a terminal"
	check "... (stderr stays empty)" test -z "$err"
}

# On a terminal a long operation asks for eosd's progress events and draws them on stderr: a bar
# with the files and bytes, then the reply as always. With --json, or without a terminal, no bar
# and the output of before.
test_progress() {
	python3 - "$T/many" <<'PY' || bail_out "cannot make the tree of 3000 files"
import os, sys
for i in range(3000):
    d = os.path.join(sys.argv[1], "d%02d" % (i % 30))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%04d" % i), "w") as f:
        f.write("file %d\n" % i)
PY
	run script -qec "$EOSCTL_BIN sandbox create $T/many --id sbp" /dev/null
	expect_rc_match 0 out "3000/3000 files" \
		"on a terminal, sandbox create draws eosd's progress: files done of the total"
	check "... a bar at 100%" grep -q '\[################\] 100%' <<<"$out"
	check "... the phases import and commit" grep -q 'sandbox create: commit' <<<"$out"
	check "... then the reply, as text" grep -Eq 'sandbox_id: +sbp' <<<"$out"
	run eosctl file write new.txt --content "new" --sandbox sbp
	expect_rc 0 "a blind write adds a layer to export"
	run script -qec "$EOSCTL_BIN sandbox export sbp --format patch" /dev/null
	expect_rc_match 0 out "1/1 paths" "sandbox export draws the paths written of the total"
	check "... then the patch" grep -q '+new' <<<"$out"
	run script -qec "$EOSCTL_BIN --json sandbox create $T/many --id sbq" /dev/null
	expect_rc_match 0 out '{"sandbox_id":"sbq"' "with --json on a terminal: the JSON document"
	check "... and no bar" not grep -q '/3000 files' <<<"$out"
	run eosctl sandbox create "$T/many" --id sbr
	expect_rc_match 0 out '"files":3000' "without a terminal: the JSON document"
	check "... and nothing on stderr" test -z "$err"
	run script -qec "$EOSCTL_BIN sandbox create $T/nope" /dev/null
	expect_rc_match 1 out "eosctl: not_found: import '$T/nope'" \
		"a failure reported as an error event: the usual message, exit 1"
	run script -qec "$EOSCTL_BIN --json sandbox create $T/nope" /dev/null
	expect_rc_match 1 out '{"error":{"kind":"not_found"' "... and with --json, the envelope"
	for sb in sbp sbq sbr; do
		eosctl sandbox destroy "$sb" >/dev/null
	done
}

# --url http://127.0.0.1:PORT reaches an eosd listening on loopback TCP.
test_tcp() {
	local port
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])')
	run env EOS_RUNTIME_DIR="$T/run4" "$top_builddir/supervisor/eosd" --state-dir "$T/state4" \
		--listen "tcp:127.0.0.1:$port"
	expect_rc 0 "an eosd listening on 127.0.0.1:$port too"
	run eosctl --state-dir "$T/state4" --url "http://127.0.0.1:$port" daemon version
	expect_rc 0 "--url http://127.0.0.1:PORT: eosctl talks to it over TCP"
	check "... which answers its version" test -n "$(json_get 'd["version"]' <<<"$out")"
	run eosctl --state-dir "$T/state4" daemon stop
	expect_rc 0 "... and stops"
}

# Several eosctl starting eosd at once for a fresh state directory: one eosd, all answered.
test_concurrent_autostart() {
	local i pids=() failed=0
	for i in 1 2 3 4; do
		EOS_RUNTIME_DIR=$T/run3 eosctl --state-dir "$T/state3" sandbox ls \
			>"$T/conc.$i" 2>&1 &
		pids+=($!)
	done
	for i in "${pids[@]}"; do
		wait "$i" || failed=$((failed + 1))
	done
	check "four eosctl autostarting at once all get an answer" test "$failed" = 0
	check "... from one eosd" test -n "$(eosd_pid "$T/state3")"
	run eosctl --state-dir "$T/state3" daemon stop
	expect_rc 0 "... which stops"
}

setup
test_usage_errors
test_no_autostart
test_autostart
test_create
test_text_output
test_export_squash
test_failures
test_tokens
test_sessions
test_daemon_ops
test_destroy
test_restart
test_stop_start
test_help
test_completion
test_publish_rejected
test_spinner
test_progress
test_tcp
test_concurrent_autostart
run eosctl daemon stop
expect_rc 0 "the test's eosd stops"
rerun_as_test_user "$0"
tap_done
