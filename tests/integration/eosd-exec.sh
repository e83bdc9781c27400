#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Commands in sessions (doc/commands.md, doc/holder.md) through a real eosd, driven with curl over
# its Unix socket: exec_command's statuses (completed, error with an exit code or a signal,
# cancelled by Ctrl-C, timed_out with the client waiting or not), yield and resume, stdin on pipes
# and on a tty, close_stdin ending a command's input on both, input refused once a command has ended
# or closed its stdin, a reply given as its command ends, not at its yield, read_command_lines
# paging, transcript retention, an implicit session published and destroyed by its last command,
# publish and destroy refused while a command runs, a background process kept between commands and
# killed by destroy, two sessions isolated (files, /tmp, processes, the network when isolated), a
# fork bomb in one session leaving eosd and the others working, the state dir and the socket out of
# reach, escapes (/proc/1/root, a symlinked cwd, mount), the seccomp probe inside a command,
# provenance of an `env -i` child and a `nohup` daemon in file_blame, a killed holder
# (holder_exited), and SIGKILL of eosd leaving no process of any session. As root, and again as the
# unprivileged user.
#
# Every sleep a command runs carries this run's pid in its duration (`sleep 100.<pid>`), so the
# host-side pgrep checks see this run's processes only, on a machine shared with other tests.

# Helpers run only through `check`, which shellcheck cannot follow; and the commands are text
# for the session's shell, whose $ must not expand here.
# shellcheck disable=SC2317,SC2016

# The state and runtime directories must lie where a command could otherwise see them: /tmp is
# private inside a session, so under /tmp the masks would go untested.
export TMPDIR=${EOS_EXEC_TMPDIR:-/var/tmp}

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=fs-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/fs-lib.sh"

EOSD_BIN=$top_builddir/supervisor/eosd
PROBE=$top_builddir/tests/integration/seccomp-probe

require_eos_store
tap_tmpdir
fs_require
[[ -x $EOSD_BIN ]] || bail_out "'$EOSD_BIN' is missing (build it; set top_builddir)"
[[ -x $top_builddir/supervisor/holder/eos-holder ]] ||
	bail_out "'$top_builddir/supervisor/holder/eos-holder' is missing (build it)"
[[ -x $PROBE ]] || bail_out "'$PROBE' is missing (make check builds it)"
for tool in curl pgrep ps; do
	command -v "$tool" >/dev/null || bail_out "$tool is needed by this test"
done
unshare -U true 2>/dev/null ||
	bail_out "user namespaces are not available to uid $EUID: sessions cannot run commands here"

ST=$T/state
export EOS_RUNTIME_DIR=$T/run
unset EOS_STORE EOS_OPERATION
M=$$ # this run's mark in every sleep's duration
eosd_pid=
SOCK=
TOKEN=
op=
status=
body=

setup() {
	mkdir -p "$T/src/dir"
	printf 'one\ntwo\n' >"$T/src/a0.txt"
	printf 'bee\n' >"$T/src/dir/b.txt"
	mkdir -p "$ST" && chmod 0700 "$ST"
	fs_import "$ST/store" sb "$T/src" || bail_out "import failed"
	printf 'host-only\n' >"/tmp/eos-exec-marker.$M"
	trap 'rm -f "/tmp/eos-exec-marker.$M"; eosd_cleanup "$ST" "$T/state2"' EXIT
}

# start_eosd STATE_DIR [ARGS...]: an eosd in the foreground on STATE_DIR; sets eosd_pid, SOCK and
# TOKEN (the runtime token).
start_eosd() {
	local dir=$1 i
	shift
	rm -f "$dir/eosd.json"
	"$EOSD_BIN" --state-dir "$dir" -f "$@" >>"$T/eosd.log" 2>&1 &
	eosd_pid=$!
	track_pid "$eosd_pid"
	for ((i = 0; i < 1200; i++)); do
		[[ -s $dir/eosd.json ]] && break
		kill -0 "$eosd_pid" 2>/dev/null || break
		sleep 0.05
	done
	[[ -s $dir/eosd.json ]] || bail_out "eosd did not start: $(cat "$T/eosd.log")"
	SOCK=$(json_get 'd["socket"]' <"$dir/eosd.json")
	TOKEN=$(cat "$dir/tokens/runtime")
}

# call OP [NAME=STRING | NAME:=JSON]...: POST /v1/runtime/OP for sandbox sb with these arguments
# (later ones override earlier ones); $status is the HTTP status, $body the reply. The request
# body goes through a file so that no command line of this script holds a command's text.
call() {
	op=$1
	shift
	python3 - "$@" >"$T/req" <<'PY' || bail_out "cannot build the request"
import json, sys
args = {}
for a in sys.argv[1:]:
    k, _, v = a.partition("=")
    if k.endswith(":"):
        args[k[:-1]] = json.loads(v)
    else:
        args[k] = v
print(json.dumps({"sandbox_id": "sb", "args": args}))
PY
	status=$(curl -sS --max-time 120 --unix-socket "$SOCK" -o "$T/body" -w '%{http_code}' \
		-H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -H 'Expect:' \
		--data-binary "@$T/req" "http://eosd/v1/runtime/$op")
	body=$(cat "$T/body" 2>/dev/null)
}

# ex SESSION CMD [ARGS...]: exec_command of CMD in SESSION ("" for a new implicit one), waiting
# up to 10 s unless ARGS say otherwise; $CID is the command's id.
ex() {
	local ws=$1 cmd=$2
	shift 2
	if [[ -n $ws ]]; then
		call exec_command "workspace_session_id=$ws" "cmd=$cmd" yield_time_ms:=10000 "$@"
	else
		call exec_command "cmd=$cmd" yield_time_ms:=10000 "$@"
	fi
	CID=$(field 'd.get("command_session_id") or ""' 2>/dev/null)
}

# stdin_to CHARS [ARGS...]: write_command_stdin of CHARS to command $CID, waiting up to 10 s.
stdin_to() {
	local chars=$1
	shift
	call write_command_stdin "command_session_id=$CID" "chars=$chars" yield_time_ms:=10000 "$@"
}

# wait_ended TENTHS: read_command_lines of command $CID until it has ended (up to TENTHS tenths
# of a second); the last reply stays in $status and $body.
wait_ended() {
	local i
	for ((i = 0; i < $1; i++)); do
		call read_command_lines "command_session_id=$CID"
		[[ $(field 'd.get("status")' 2>/dev/null) == running ]] || return 0
		sleep 0.1
	done
}

# field EXPR: a value of the last reply (d is the document).
field() {
	json_get "$1" <<<"$body"
}

# expect DESC EXPR: one TAP line, ok when the Python expression EXPR holds over the last reply:
# d (the document, None when it is not JSON), code (the HTTP status), text (the reply as text),
# out (d["output"], "" without one). On failure it shows the request and the reply.
expect() {
	local desc=$1 got
	got=$(python3 - "$2" "$status" "$T/body" <<'PY' 2>&1
import json, sys
expr, code, path = sys.argv[1], int(sys.argv[2] or 0), sys.argv[3]
text = open(path, encoding="utf-8", errors="replace").read()
try:
    d = json.loads(text)
except ValueError:
    d = None
out = d.get("output") or "" if isinstance(d, dict) else ""
try:
    print("yes" if eval(expr) else "no")
except Exception as e:
    print("cannot evaluate: %r" % e)
PY
	)
	if [[ $got == yes ]]; then
		ok "$desc"
	else
		not_ok "$desc"
		diag "expected: $2" "request: POST /v1/runtime/$op $(head -c 2000 "$T/req")" \
			"reply: HTTP $status $(head -c 3000 "$T/body")"
		[[ $got == no ]] || diag "$got"
	fi
}

# The reply is the final result of a command that ended with status $1 and exit code $2.
ended() {
	printf 'code == 200 and d["status"] == "%s" and d["exit_code"] == %s' "$1" "$2"
}

# An error reply of HTTP status $1 and kind $2.
refused() {
	printf 'code == %s and d["error"]["kind"] == "%s"' "$1" "$2"
}

# create SESSION [ARGS...]: create_workspace_session; its mount is unmounted at exit.
create() {
	local ws=$1
	shift
	call create_workspace_session "workspace_session_id=$ws" "$@"
	[[ $status == 200 ]] && fs_mounts+=("$(field 'd["mount_path"]')")
}

# Host processes of this run whose command line matches the regex $1.
host_procs() {
	pgrep -f -- "$1"
}

# Wait up to $2 tenths of a second until no host process matches $1.
host_gone() {
	local i
	for ((i = 0; i <= $2; i++)); do
		host_procs "$1" >/dev/null || return 0
		sleep 0.1
	done
	return 1
}

# Wait up to 5 s until some host process matches $1.
host_seen() {
	local i
	for ((i = 0; i < 50; i++)); do
		host_procs "$1" >/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# The regex of `sleep DURATION` for this run's mark: sleep_re 300 matches `sleep 300.<mark>`.
sleep_re() {
	printf 'sleep %s\\.%s( |$)' "$1" "$M"
}

# Both sleep $1 and sleep $2 of this run run on the host.
both_seen() {
	host_seen "$(sleep_re "$1")" && host_seen "$(sleep_re "$2")"
}

# The outermost eos-holder among the host ancestors of pid $1: the namespace's init and each
# command's subreaper are forks of the holder, with its name.
holder_of() {
	local p=$1 found=
	while ((p > 1)); do
		[[ $(cat "/proc/$p/comm" 2>/dev/null) == eos-holder ]] && found=$p
		p=$(ps -o ppid= -p "$p" | tr -d ' ')
		[[ -n $p ]] || break
	done
	[[ -n $found ]] && printf '%s\n' "$found"
}

# --- statuses -------------------------------------------------------------------------------------

statuses() {
	create x1
	expect "create_workspace_session x1" 'code == 200'
	ex x1 'echo hi; echo err >&2'
	expect "exec 'echo hi; echo err >&2': completed, exit code 0" "$(ended completed 0)"
	expect "... its output holds stdout and stderr" '"hi\n" in out and "err\n" in out'
	expect "... a result naming its session, not implicit, no signal" \
		'd["workspace_session_id"] == "x1" and d["implicit_session"] is False and d["signal"] is None and d["command_session_id"]'
	expect "... and not background: it started no other process" 'd["background"] is False'
	ex x1 'exit 3'
	expect "exec 'exit 3': status error, exit code 3" "$(ended error 3)"
	ex x1 'kill -9 $$'
	expect "exec 'kill -9 \$\$': status error, signal SIGKILL, exit code 137" \
		"$(ended error 137) and d[\"signal\"] == \"SIGKILL\""
	ex x1 'echo "$FOO:$HOME:$PWD"' 'env:={"FOO":"bar"}'
	expect "env is merged into the cleared environment, cwd /workspace" \
		'out.strip() == "bar:/tmp:/workspace"'
}

yield_resume() {
	ex x1 'sleep 4; echo done' yield_time_ms:=200
	expect "'sleep 4; echo done' with yield 200: running, with a command_session_id" \
		'code == 200 and d["status"] == "running" and d["exit_code"] is None and d["command_session_id"]'
	stdin_to '' yield_time_ms:=30000
	expect "write_command_stdin '' with yield 30000: completed, output 'done'" \
		"$(ended completed 0) and out.strip() == \"done\""
}

interactive() {
	local tty
	for tty in false true; do
		ex x1 "python3 -c 'print(input())'" yield_time_ms:=300 "tty:=$tty"
		expect "tty $tty: python3 waiting for input is running" \
			'code == 200 and d["status"] == "running"'
		stdin_to $'hello\n'
		expect "tty $tty: write_command_stdin 'hello\\n' completes it" "$(ended completed 0)"
		expect "tty $tty: ... its output holds hello" '"hello" in out'
	done
}

ctrl_c() {
	ex x1 "sleep 100.$M" yield_time_ms:=200
	expect "sleep 100 with yield 200 is running" 'code == 200 and d["status"] == "running"'
	check "... its sleep runs on the host" host_seen "$(sleep_re 100)"
	stdin_to $'\x03'
	expect "Ctrl-C (\\u0003) cancels it: status cancelled, exit code 130" "$(ended cancelled 130)"
	check "... and no sleep 100 is left on the host" host_gone "$(sleep_re 100)" 10
	ex x1 "sleep 108.$M & sleep 109.$M" yield_time_ms:=200 tty:=true
	expect "on a tty, 'sleep 108 & sleep 109' is running" \
		'code == 200 and d["status"] == "running"'
	check "... both sleeps run on the host" both_seen 108 109
	stdin_to $'\x03'
	expect "... Ctrl-C cancels it: status cancelled, exit code 130" "$(ended cancelled 130)"
	check "... and neither sleep is left: the background one is killed too" \
		eval "host_gone '$(sleep_re 108)' 10 && host_gone '$(sleep_re 109)' 10"
	ex x1 "sleep 110.$M" yield_time_ms:=200
	stdin_to $'\x04'
	expect "Ctrl-D (\\u0004) cancels a command on pipes: cancelled, exit code 130" \
		"$(ended cancelled 130)"
	check "... and no sleep 110 is left on the host" host_gone "$(sleep_re 110)" 10
}

# Input to a command that cannot take it is the client's error (400, kind invalid), naming the
# command; an empty write (a poll) still answers the command's result.
ended_input() {
	ex x1 'exit 7'
	expect "exec 'exit 7' ends: status error, exit code 7" "$(ended error 7)"
	stdin_to x
	expect "write_command_stdin 'x' to it: refused 400, kind invalid, naming it, ended, exit code 7" \
		"$(refused 400 invalid) and \"'$CID'\" in d[\"error\"][\"message\"] and \"has ended\" in d[\"error\"][\"message\"] and \"exit code 7\" in d[\"error\"][\"message\"]"
	stdin_to ''
	expect "... write_command_stdin '' to it still answers its final result" "$(ended error 7)"
	ex x1 "exec 0<&-; sleep 111.$M" yield_time_ms:=200
	expect "a command that closed its own stdin is running" \
		'code == 200 and d["status"] == "running"'
	stdin_to x yield_time_ms:=0
	expect "... write_command_stdin 'x' to it: refused 400, kind invalid, its input closed" \
		"$(refused 400 invalid) and \"'$CID'\" in d[\"error\"][\"message\"] and \"no more input\" in d[\"error\"][\"message\"] and \"closed\" in d[\"error\"][\"message\"]"
	stdin_to $'\x03'
	expect "... Ctrl-C still cancels it" "$(ended cancelled 130)"
	check "... and no sleep 111 is left on the host" host_gone "$(sleep_re 111)" 10
}

# close_stdin ends a command's input without cancelling it: on pipes its stdin pipe is closed,
# on a tty the terminal's EOF character ends the pending line and then the input.
close_stdin() {
	local tty
	for tty in false true; do
		ex x1 'wc -l' yield_time_ms:=300 "tty:=$tty"
		expect "tty $tty: 'wc -l' waiting for its input is running" \
			'code == 200 and d["status"] == "running"'
		stdin_to $'a\nb\n' close_stdin:=true
		expect "tty $tty: write_command_stdin 'a\\nb\\n' with close_stdin completes it, output 2" \
			"$(ended completed 0) and out.split()[-1:] == [\"2\"]"
	done
	ex x1 'cat; echo "<end>"' yield_time_ms:=300 tty:=true
	stdin_to 'abc' close_stdin:=true
	expect "tty true: 'abc' (no newline) with close_stdin ends cat too" \
		"$(ended completed 0) and \"abc\" in out and \"<end>\" in out"
	ex x1 "cat >/dev/null; echo eof; sleep 112.$M" yield_time_ms:=300
	stdin_to '' close_stdin:=true yield_time_ms:=1000
	expect "close_stdin with no chars: cat sees the end of its input, the command runs on" \
		'code == 200 and d["status"] == "running" and out == "eof\n"'
	stdin_to x yield_time_ms:=0
	expect "... then write_command_stdin 'x': refused 400, kind invalid, its input closed" \
		"$(refused 400 invalid) and \"'$CID'\" in d[\"error\"][\"message\"] and \"no more input\" in d[\"error\"][\"message\"] and \"closed\" in d[\"error\"][\"message\"]"
	stdin_to '' close_stdin:=true yield_time_ms:=0
	expect "... close_stdin again with no chars changes nothing: still running" \
		'code == 200 and d["status"] == "running"'
	stdin_to $'\x03'
	expect "... Ctrl-C cancels it" "$(ended cancelled 130)"
	check "... and no sleep 112 is left on the host" host_gone "$(sleep_re 112)" 10
}

# Milliseconds since $1 (an $EPOCHREALTIME).
ms_since() {
	local now=${EPOCHREALTIME//[.,]/} then=${1//[.,]/}
	echo $(((now - then) / 1000))
}

# A reply does not wait out its yield when the command ends first, even when a background process
# keeps its output open: with the longest yield (30 s), each reply comes before the yield has passed
# (a reply that waited it out takes 30 s or more, whatever the machine's load).
prompt_reply() {
	local t0 ms y=30000
	create qr
	t0=$EPOCHREALTIME
	ex qr 'sleep 0.1; echo quick' yield_time_ms:=$y
	ms=$(ms_since "$t0")
	expect "'sleep 0.1' with yield $y is answered as it ends, before the yield ($ms ms)" \
		"$(ended completed 0) and out == \"quick\\n\" and $ms < $y"
	t0=$EPOCHREALTIME
	ex qr "sleep 305.$M & echo quick" yield_time_ms:=$y
	ms=$(ms_since "$t0")
	expect "... and 'sleep 305 & echo quick' (a background process holds its output): $ms ms" \
		"$(ended completed 0) and d[\"background\"] is True and $ms < $y"
	ex qr 'read l; sleep 0.1; echo "got $l"' yield_time_ms:=300
	expect "'read l' waiting for input is running" 'code == 200 and d["status"] == "running"'
	t0=$EPOCHREALTIME
	stdin_to $'x\n' yield_time_ms:=$y
	ms=$(ms_since "$t0")
	expect "... write_command_stdin 'x\\n' with yield $y is answered as it ends ($ms ms)" \
		"$(ended completed 0) and out == \"got x\\n\" and $ms < $y"
	call destroy_workspace_session workspace_session_id=qr
	check "destroying qr leaves no sleep 305 on the host" host_gone "$(sleep_re 305)" 20
}

timeouts() {
	ex x1 "sleep 101.$M" timeout_ms:=500 yield_time_ms:=5000
	expect "sleep 101 with timeout 500, yield 5000: timed_out, exit code 124" \
		"$(ended timed_out 124)"
	check "... and no sleep 101 is left on the host" host_gone "$(sleep_re 101)" 10
	ex x1 "sleep 106.$M & sleep 107.$M" timeout_ms:=500 yield_time_ms:=5000
	expect "'sleep 106 & sleep 107' with timeout 500: timed_out, exit code 124" \
		"$(ended timed_out 124)"
	check "... and neither sleep is left: the timeout kills the whole tree" \
		eval "host_gone '$(sleep_re 106)' 10 && host_gone '$(sleep_re 107)' 10"
	ex x1 "sleep 102.$M" timeout_ms:=10000 yield_time_ms:=0
	expect "sleep 102 with timeout 10000, yield 0: running" \
		'code == 200 and d["status"] == "running"'
	check "... its sleep runs on the host" host_seen "$(sleep_re 102)"
	wait_ended 600
	expect "... nobody waiting, read_command_lines then says timed_out, exit code 124" \
		"$(ended timed_out 124)"
	check "... and no sleep 102 is left on the host" host_gone "$(sleep_re 102)" 10
}

lines() {
	local off=1 pages=0 id
	ex x1 'seq 1 1000'
	expect "seq 1 1000 completes" "$(ended completed 0)"
	id=$CID
	rm -f "$T/lines"
	while [[ $off != null && $pages -lt 20 ]]; do
		call read_command_lines "command_session_id=$id" "offset:=$off" limit:=300
		[[ $status == 200 ]] || break
		field '"\n".join(l.rstrip("\n") for l in d["lines"])' >>"$T/lines"
		off=$(field 'd["next_offset"]')
		pages=$((pages + 1))
	done
	expect "... the last page has next_offset null, line_count 1000, complete" \
		'code == 200 and d["next_offset"] is None and d["line_count"] == 1000 and d["complete"] is True'
	check "... pages of 300 (4 of them) give the lines 1..1000 in order" \
		test "$pages:$(cat "$T/lines")" = "4:$(seq 1 1000)"
	ex x1 'seq 1 1000' max_output_bytes:=10
	expect "max_output_bytes 10: at most 10 bytes of output, output_truncated" \
		"$(ended completed 0) and len(out.encode()) <= 10 and out.startswith(\"1\\n\") and d[\"output_truncated\"] is True and d[\"total_output_bytes\"] == $(seq 1 1000 | wc -c)"
	call read_command_lines "command_session_id=$CID" offset:=1000 limit:=1
	expect "... its transcript still has every line" \
		'code == 200 and [l.rstrip("\n") for l in d["lines"]] == ["1000"] and d["line_count"] == 1000'
	call read_command_lines "command_session_id=$id" offset:=201 limit:=2
	expect "read_command_lines offset 201 limit 2: lines 201, 202, next_offset 203" \
		'code == 200 and [l.rstrip("\n") for l in d["lines"]] == ["201", "202"] and d["next_offset"] == 203'
	call read_command_lines "command_session_id=$id" offset:=991 limit:=100
	expect "read_command_lines offset 991 limit 100: lines 991..1000, next_offset null" \
		'code == 200 and [l.rstrip("\n") for l in d["lines"]] == [str(i) for i in range(991, 1001)] and d["next_offset"] is None'
}

# --- sessions -------------------------------------------------------------------------------------

implicit() {
	local ws i
	ex '' 'echo x > new.txt'
	expect "exec without a session: completed in an implicit session" \
		"$(ended completed 0) and d[\"implicit_session\"] is True and d[\"workspace_session_id\"]"
	expect "... its final result says publish.status published" \
		'd["publish"]["status"] == "published"'
	ws=$(field 'd["workspace_session_id"]')
	call file_read path=new.txt
	expect "file_read of new.txt at the head gives x" 'code == 200 and d["content"] == "x\n"'
	for ((i = 0; i < 20; i++)); do
		call list_workspace_sessions
		[[ $(field "\"$ws\" in [s[\"workspace_session_id\"] for s in d[\"sessions\"]]") == false ]] && break
		sleep 0.1
	done
	expect "list_workspace_sessions shows the implicit session gone" \
		"\"$ws\" != \"\" and code == 200 and \"$ws\" not in [s[\"workspace_session_id\"] for s in d[\"sessions\"]]"
}

# A command that names a live implicit session joins it: the session is published and destroyed
# after the last of its commands, whichever started it.
implicit_joined() {
	local ws first
	ex '' 'read -r _; echo y > j1.txt' yield_time_ms:=200
	expect "an implicit session's first command is running" \
		'code == 200 and d["status"] == "running" and d["implicit_session"] is True'
	ws=$(field 'd["workspace_session_id"]')
	first=$CID
	ex "$ws" 'echo z > j2.txt'
	expect "a second command joins it and completes, without publishing it yet" \
		"$(ended completed 0) and d[\"workspace_session_id\"] == \"$ws\" and d[\"publish\"] is None"
	call file_read path=j2.txt
	expect "... the head does not have its file yet" 'code == 404'
	CID=$first
	call read_command_lines "command_session_id=$CID"
	expect "... the first command still waits for its input" \
		'code == 200 and d["status"] == "running" and d["publish"] is None'
	stdin_to $'go\n'
	expect "the first command, last to end, publishes the session" \
		"$(ended completed 0) and d[\"publish\"][\"status\"] == \"published\""
	call file_read path=j2.txt
	expect "... with the joining command's file" 'code == 200 and d["content"] == "z\n"'
	call file_read path=j1.txt
	expect "... and its own" 'code == 200 and d["content"] == "y\n"'
}

busy() {
	local id
	create x2
	ex x2 'read -r _; echo b > busy.txt' yield_time_ms:=200
	expect "a command waiting for its input runs in session x2" \
		'code == 200 and d["status"] == "running"'
	id=$CID
	call publish_workspace_session workspace_session_id=x2
	expect "publish while it runs is refused: busy, naming $id" \
		"$(refused 409 busy) and \"$id\" in d[\"error\"][\"message\"]"
	call destroy_workspace_session workspace_session_id=x2
	expect "destroy while it runs is refused: busy, naming $id" \
		"$(refused 409 busy) and \"$id\" in d[\"error\"][\"message\"]"
	CID=$id
	stdin_to $'go\n'
	expect "... the command then completes" "$(ended completed 0)"
	call publish_workspace_session workspace_session_id=x2
	expect "after it ended, publish works: published" 'code == 200 and d["status"] == "published"'
	call file_read path=busy.txt
	expect "... the command's file is at the head" 'code == 200 and d["content"] == "b\n"'
	call destroy_workspace_session workspace_session_id=x2
	expect "after it ended, destroy works" 'code == 200'
}

background() {
	create x3
	ex x3 "sleep 300.$M & exit 0"
	expect "'sleep 300 & exit 0': completed, background" \
		"$(ended completed 0) and d[\"background\"] is True"
	ex x3 'ps -e -o args='
	expect "a second command sees the sleep with ps" "\"sleep 300.$M\" in out"
	call inspect_workspace_session workspace_session_id=x3
	expect "inspect_workspace_session lists the background process" \
		"code == 200 and \"sleep 300.$M\" in text"
	check "... it runs on the host" host_seen "$(sleep_re 300)"
	call destroy_workspace_session workspace_session_id=x3
	expect "destroy_workspace_session of the session with a background process" 'code == 200'
	check "... leaves no sleep 300 on the host" host_gone "$(sleep_re 300)" 20
}

isolation() {
	create ia
	create ib
	ex ia 'echo a > only-a.txt && echo secret > /tmp/x'
	expect "session ia writes only-a.txt and /tmp/x" "$(ended completed 0)"
	ex ia 'cat /tmp/x'
	expect "... its /tmp keeps /tmp/x between commands" 'out == "secret\n"'
	ex ib 'ls /workspace; test -e /tmp/x && echo tmp-present || echo tmp-absent'
	expect "session ib does not see ia's file in ls /workspace" \
		'code == 200 and "a0.txt" in out.split() and "only-a.txt" not in out.split()'
	expect "... nor ia's /tmp/x" '"tmp-absent" in out'
	ex ia "sleep 303.$M >/dev/null 2>&1 & exit 0"
	ex ia 'ps -e -o args='
	expect "ps -e in ia shows ia's sleep" "\"sleep 303.$M\" in out"
	ex ib 'ps -e -o args='
	expect "ps -e in ib (which lists itself) does not show it" \
		"code == 200 and \"ps -e -o args=\" in out and \"sleep 303.$M\" not in out"
	create in network=isolated
	expect "create_workspace_session with network isolated" 'code == 200'
	ex in 'cat /proc/net/dev'
	expect "/proc/net/dev in the isolated session lists only lo" \
		'code == 200 and [l.split(":")[0].strip() for l in out.splitlines()[2:] if l.strip()] == ["lo"]'
	call fork_workspace_session workspace_session_id=in new_workspace_session_id=inf
	[[ $status == 200 ]] && fs_mounts+=("$(field 'd["mount_path"]')")
	call inspect_workspace_session workspace_session_id=inf
	expect "a fork of the isolated session is isolated too (inspect)" \
		'code == 200 and d.get("network") == "isolated"'
	ex inf 'cat /proc/net/dev'
	expect "... and its commands see only lo too" \
		'code == 200 and [l.split(":")[0].strip() for l in out.splitlines()[2:] if l.strip()] == ["lo"]'
	call destroy_workspace_session workspace_session_id=inf
	call destroy_workspace_session workspace_session_id=in
	call destroy_workspace_session workspace_session_id=ib
	call destroy_workspace_session workspace_session_id=ia
	check "destroying ia leaves no sleep 303 on the host" host_gone "$(sleep_re 303)" 20
}

# obs_call OP JSON: POST /v1/observability/OP for sandbox sb with the arguments JSON and the
# observability token; sets $status and $body like call.
obs_call() {
	op=observability/$1
	printf '{"sandbox_id": "sb", "args": %s}\n' "$2" >"$T/req"
	status=$(curl -sS --max-time 30 --unix-socket "$SOCK" -o "$T/body" -w '%{http_code}' \
		-H "Authorization: Bearer $(cat "$ST/tokens/observability")" \
		-H 'Content-Type: application/json' -H 'Expect:' \
		--data-binary "@$T/req" "http://eosd/v1/observability/$1")
	body=$(cat "$T/body" 2>/dev/null)
}

# A fork bomb in one session leaves eosd and the other sessions working; its timeout ends it
# (its shell waits in `read` meanwhile) and destroy leaves nothing of it. The session's cgroup
# caps it where eosd has cgroups (pids.max 4096, as root); the test lowers fb's pids.max to 256,
# which 4 096 processes would make a 2-core CI machine crawl for every test running beside this
# one, and checks that the cgroup holds it there. An eosd without them (an unprivileged one here)
# gives it only RLIMIT_NPROC 4096, too many for a shared test machine too, so there the bomb caps
# itself with `ulimit -u 200`. Root is exempt from RLIMIT_NPROC: as root without cgroups nothing
# would cap it, and it is skipped, saying so.
fork_bomb() {
	local cap='' fb max
	create fb
	create fo
	obs_call cgroup '{"scope": "session", "id": "fb"}'
	if [[ $(field 'd.get("status")') == available ]]; then
		for max in $(fb_cgroup_files pids.max); do
			echo 256 >"$max"
		done
	else
		if ((EUID == 0)); then
			ok "# SKIP fork bomb: eosd runs as root without cgroups, nothing caps it"
			call destroy_workspace_session workspace_session_id=fb
			call destroy_workspace_session workspace_session_id=fo
			return
		fi
		cap='ulimit -u 200; '
	fi
	ex fb ": fb.$M; ${cap}bomb() { bomb | bomb & }; bomb; read -r -t 60 _" timeout_ms:=5000 \
		yield_time_ms:=500
	expect "a fork bomb in session fb (${cap:-capped by its cgroup}) is running" \
		'code == 200 and d["status"] == "running"'
	fb=$CID
	check "... its processes run on the host" host_seen "fb\\.$M;"
	if [[ -z $cap ]]; then
		check "... its cgroup holds it at the 256 processes set" pids_capped 256
	fi
	obs_call ping '{}'
	expect "... while it runs, ping answers" 'code == 200'
	ex fo 'echo ok'
	expect "... and 'echo ok' in session fo completes" "$(ended completed 0) and out == \"ok\\n\""
	CID=$fb
	stdin_to '' yield_time_ms:=15000
	expect "the bomb ends at its timeout: timed_out, exit code 124" "$(ended timed_out 124)"
	call destroy_workspace_session workspace_session_id=fb
	expect "destroy_workspace_session fb" 'code == 200'
	check "... leaves no process of the bomb on the host" host_gone "fb\\.$M;" 50
	call destroy_workspace_session workspace_session_id=fo
}

# The files named $1 of session fb's cgroups (this run's eosd: its cgroups are eos-KEY/sb/fb).
fb_cgroup_files() {
	find /sys/fs/cgroup -path "*/eos-*/sb/fb/$1" -type f 2>/dev/null
}

# The pids.current of fb's cgroup stays at most $1 while the bomb runs (sampled for 2 s).
pids_capped() {
	local f n seen=0
	for _ in {1..20}; do
		for f in $(fb_cgroup_files pids.current); do
			n=$(<"$f")
			((n <= $1)) || return 1
			((n > seen)) && seen=$n
		done
		sleep 0.1
	done
	echo "# at most $seen processes seen in fb's cgroup"
	((seen > 0))
}

# --- what a command cannot reach ------------------------------------------------------------------

unreachable() {
	ex x1 "ls -A '$T'"
	expect "the state dir's parent is visible inside (the host tree, read-only)" \
		'code == 200 and "state" in out.split()'
	ex x1 "ls -A '$ST'"
	expect "ls of the state dir inside fails or is empty" \
		'code == 200 and (d["exit_code"] != 0 or out.strip() == "")'
	ex x1 "cat '$ST/tokens/runtime'"
	expect "the runtime token cannot be read inside" \
		"code == 200 and d[\"exit_code\"] != 0 and \"$TOKEN\" not in out"
	ex x1 "echo x > '$SOCK'"
	expect "writing to eosd's socket path fails inside" 'code == 200 and d["exit_code"] != 0'
	ex x1 "curl -s --max-time 5 --unix-socket '$SOCK' http://eosd/v1/health"
	expect "connecting to eosd's socket fails inside" 'code == 200 and d["exit_code"] != 0'
	check "... while eosd still has its socket" test -S "$SOCK"
	ex x1 "touch '$T/escaped'"
	expect "writing the host tree fails inside" 'code == 200 and d["exit_code"] != 0'
	check "... and wrote nothing there" not test -e "$T/escaped"
}

# A refused cwd: an error reply of the client's fault naming it, not a result (and not the
# gateway's refusal of an operation it does not serve).
CWD_REFUSED='400 <= code < 500 and d["error"]["kind"] != "unsupported_format" and "out" in d["error"]["message"] and "status" not in d'

escapes() {
	local hn
	ex x1 'ls /proc/1/root/'
	expect "ls /proc/1/root/ fails or shows the session's own root" \
		'code == 200 and (d["exit_code"] != 0 or "workspace" in out.split())'
	ex x1 "cat /proc/1/root/tmp/eos-exec-marker.$M /proc/1/root$ST/tokens/runtime"
	expect "the host's /tmp and the state dir cannot be read through /proc/1/root" \
		"code == 200 and d[\"exit_code\"] != 0 and \"host-only\" not in out and \"$TOKEN\" not in out"
	hn=$(cat /etc/hostname 2>/dev/null)
	ex x1 'cd /workspace && ln -s / out && cat out/etc/hostname'
	expect "a symlink to / in the workspace reads the session's read-only host view" \
		"$(ended completed 0) and out.strip() == \"$hn\""
	ex x1 'pwd' cwd=dir
	expect "exec with cwd 'dir' runs in /workspace/dir" \
		"$(ended completed 0) and out.strip() == \"/workspace/dir\""
	ex x1 'pwd' cwd=nope
	expect "exec with a cwd that does not exist is an error reply naming it, not a result" \
		'400 <= code < 500 and d["error"]["kind"] == "not_found" and "nope" in d["error"]["message"] and "status" not in d'
	ex x1 'pwd' cwd=out
	expect "exec with cwd 'out' (a symlink out of /workspace) is refused, naming it" \
		"$CWD_REFUSED"
	ex x1 'pwd' cwd=out/etc
	expect "... and cwd 'out/etc' too" "$CWD_REFUSED"
	ex x1 'mount -t tmpfs x /mnt'
	expect "mount -t tmpfs x /mnt fails inside" 'code == 200 and d["exit_code"] not in (None, 0)'
	ex x1 "python3 -c 'import ctypes, os; l = ctypes.CDLL(None, use_errno=True); r = l.mount(b\"x\", b\"/tmp\", b\"tmpfs\", 0, None); print(r, os.strerror(ctypes.get_errno()))'"
	expect "... the mount system call answers Operation not permitted" \
		'code == 200 and out.strip() == "-1 Operation not permitted"'
}

seccomp() {
	# from $T, visible inside: a build tree under /tmp is hidden by the session's private /tmp
	cp "$PROBE" "$T/seccomp-probe"
	ex x1 "'$T/seccomp-probe'"
	expect "seccomp-probe inside a command: every denied call fails as documented" \
		"$(ended completed 0) and \"0 failure(s)\" in out and \"not ok\" not in out"
	expect "... it probed the mount family, clone3 and the foreign ABIs" \
		'all(("ok " + n + ":") in out for n in ("mount", "open_by_handle_at", "clone3", "x32 getpid", "ptrace(PTRACE_TRACEME)")) and ("ok int 0x80 getpid:" in out or "kernel int 0x80 getpid:" in out)'
}

# --- provenance -----------------------------------------------------------------------------------

provenance() {
	local c1 c2 c3 i
	create pv
	ex pv "env -i /bin/sh -c 'echo child >> a.txt'; true"
	expect "a child started with env -i writes a.txt" "$(ended completed 0)"
	c1=$CID
	ex pv "nohup sh -c 'sleep 0.5; echo daemon >> b.txt' >/dev/null 2>&1 &"
	expect "nohup sh … & starts a daemon that writes b.txt" "$(ended completed 0)"
	c2=$CID
	ex pv "setsid sh -c 'sleep 0.5; echo setsid >> c.txt' </dev/null >/dev/null 2>&1 &"
	expect "setsid sh … & starts a daemon that writes c.txt" "$(ended completed 0)"
	c3=$CID
	for ((i = 0; i < 100; i++)); do
		call file_read workspace_session_id=pv path=c.txt
		[[ $status == 200 ]] && call file_read workspace_session_id=pv path=b.txt
		[[ $status == 200 ]] && break
		sleep 0.1
	done
	for ((i = 0; i < 100; i++)); do
		call inspect_workspace_session workspace_session_id=pv
		[[ $(field 'len(d["processes"])') == 0 ]] && break
		sleep 0.1
	done
	expect "... both daemons have ended" 'code == 200 and d["processes"] == []'
	call file_read workspace_session_id=pv path=b.txt
	expect "... b.txt holds daemon" 'code == 200 and d["content"] == "daemon\n"'
	call file_read workspace_session_id=pv path=c.txt
	expect "... c.txt holds setsid" 'code == 200 and d["content"] == "setsid\n"'
	call publish_workspace_session workspace_session_id=pv
	expect "publish the session" 'code == 200 and d["status"] == "published"'
	blamed a.txt "$c1" "the env -i child"
	blamed b.txt "$c2" "the nohup daemon"
	blamed c.txt "$c3" "the setsid daemon"
	call destroy_workspace_session workspace_session_id=pv
}

# blamed PATH ID WHO: file_blame of PATH at the head names operation:ID, run in session pv, for
# every range.
blamed() {
	call file_blame "path=$1"
	expect "file_blame $1: operation:$2 ($3), in session pv" \
		"code == 200 and d[\"ranges\"] and all(r[\"owner\"] == \"operation:$2\" and r.get(\"workspace_session_id\") == \"pv\" for r in d[\"ranges\"])"
}

# --- failures -------------------------------------------------------------------------------------

killed_holder() {
	local pid holder i
	create hk
	ex hk "sleep 304.$M >/dev/null 2>&1 & exit 0"
	expect "session hk starts a background sleep" "$(ended completed 0)"
	host_seen "^sleep 304\\.$M\$"
	pid=$(host_procs "^sleep 304\\.$M\$" | head -1)
	holder=$(holder_of "${pid:-0}")
	call inspect_workspace_session workspace_session_id=hk
	expect "inspect names the session's holder: the eos-holder above its sleep (pid ${holder:-none})" \
		"code == 200 and d[\"holder\"][\"state\"] == \"ready\" and str(d[\"holder\"][\"pid\"]) == \"${holder:-none}\""
	[[ -n $holder ]] || diag "sleep pid '${pid}': $(ps -o pid,ppid,comm -p "${pid:-1}")"
	kill -9 "${holder:-$(field 'd["holder"]["pid"]')}"
	for ((i = 0; i < 50; i++)); do
		call inspect_workspace_session workspace_session_id=hk
		grep -q holder_exited "$T/body" && break
		sleep 0.1
	done
	expect "after kill -9 of the holder, inspect reports holder_exited" \
		'code == 200 and "holder_exited" in text'
	check "... and the session's sleep is gone with its namespace" host_gone "$(sleep_re 304)" 20
	ex hk 'echo hi'
	expect "exec in that session is refused with kind holder_exited" "$(refused 409 holder_exited)"
	call destroy_workspace_session workspace_session_id=hk
	expect "destroy of that session works" 'code == 200'
}

kill_eosd() {
	local ws holders=()
	create kk
	ex kk "sleep 301.$M & exit 0"
	expect "session kk starts a background sleep 301" "$(ended completed 0)"
	ex kk "sleep 300.$M" yield_time_ms:=200
	expect "... and runs sleep 300" 'code == 200 and d["status"] == "running"'
	check "both sleeps run on the host" both_seen 300 301
	for ws in kk x1; do
		call inspect_workspace_session "workspace_session_id=$ws"
		holders+=("$(field 'd["holder"]["pid"]')")
	done
	check "sessions kk and x1 have live holders (${holders[*]})" kill -0 "${holders[@]}"
	kill -9 "$eosd_pid"
	wait "$eosd_pid" 2>/dev/null
	check "SIGKILL of eosd: no sleep 300 is left on the host" host_gone "$(sleep_re 300)" 20
	check "... nor the background sleep 301" host_gone "$(sleep_re 301)" 20
	check "... nor either session's holder" pids_gone "${holders[@]}"
	left_cgroups_swept
}

# As root with cgroups: the killed eosd left its sessions' cgroups (eos-KEY/sb/SESSION); one of a
# session that no longer exists ("gone", made here beside kk's) is removed by the next eosd's
# start, which makes its live sessions' again.
left_cgroups_swept() {
	local key kk gone
	key=$(printf '%s' "$(realpath -m "$ST")" | sha256sum | cut -c1-16)
	kk=$(find /sys/fs/cgroup -maxdepth 6 -path "*/eos-$key/sb/kk" -type d 2>/dev/null | head -n 1)
	if [[ -z $kk ]]; then
		ok "# SKIP left cgroups: this eosd made none (root with cgroups only)"
		return
	fi
	gone=${kk%/kk}/gone
	mkdir "$gone" || bail_out "cannot make the cgroup '$gone'"
	start_eosd "$ST"
	check "a new eosd removes the cgroup a killed one left for a session that is gone" \
		test ! -d "$gone"
	kill -TERM "$eosd_pid"
	wait "$eosd_pid" 2>/dev/null
}

# Wait up to 2 s until none of the pids $@ is alive.
pids_gone() {
	local i p alive
	for ((i = 0; i <= 20; i++)); do
		alive=
		for p in "$@"; do
			kill -0 "$p" 2>/dev/null && alive=1
		done
		[[ -z $alive ]] && return 0
		sleep 0.1
	done
	return 1
}

# --transcripts N keeps the transcripts of the newest N commands: an eosd of its own.
retention() {
	local st2=$T/state2 first last i
	if ! "$EOSD_BIN" --help 2>&1 | grep -q -- '--transcripts'; then
		ok "# SKIP retention: eosd has no --transcripts option (eosd --help)"
		return
	fi
	mkdir -p "$st2" && chmod 0700 "$st2"
	fs_import "$st2/store" sb "$T/src" || bail_out "import failed"
	start_eosd "$st2" --transcripts 8
	create rt
	for ((i = 1; i <= 10; i++)); do
		ex rt "echo $i"
		((i == 1)) && first=$CID
	done
	last=$CID
	expect "10 commands run under --transcripts 8" "$(ended completed 0)"
	call read_command_lines "command_session_id=$first"
	expect "the first command's id answers not_found, saying it was retired" \
		"$(refused 404 not_found) and \"retired\" in d[\"error\"][\"message\"]"
	call read_command_lines "command_session_id=$last"
	expect "the last one's transcript is kept" \
		'code == 200 and [l.rstrip("\n") for l in d["lines"]] == ["10"]'
	kill -TERM "$eosd_pid"
	wait "$eosd_pid" 2>/dev/null
}

setup
start_eosd "$ST"
statuses
yield_resume
interactive
ctrl_c
ended_input
close_stdin
prompt_reply
timeouts
lines
implicit
implicit_joined
busy
background
isolation
fork_bomb
unreachable
escapes
seccomp
provenance
killed_holder
kill_eosd
retention

rerun_as_test_user "$0"
tap_done
