#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# eosd's gateway over a real eosd and curl on its Unix socket: start-up files and the
# single-instance lock, every management operation, the refusals (tokens, surfaces, sandbox
# limits, arguments, body size, another uid), a client sending one byte a second that stalls
# nobody, eos-store refused while eosd owns the store, SIGTERM, and a restart that keeps the
# sandboxes and the tokens.

# Some helpers below only run through `check`, which shellcheck cannot follow.
# shellcheck disable=SC2317

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=fs-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/fs-lib.sh"

EOSD_BIN=$top_builddir/supervisor/eosd
require_eos_store
command -v git >/dev/null || bail_out "git is missing (apt-get install git)"
[[ -x $EOSD_BIN ]] || bail_out "'$EOSD_BIN' is missing (build it; set top_builddir)"
command -v curl >/dev/null || bail_out "curl is missing (apt-get install curl)"
tap_tmpdir

ST=$T/state
export EOS_RUNTIME_DIR=$T/run
SOCK=$(eosd_runtime_dir "$ST")/eosd.sock
code=
body=

# POST /v1/$2 with token $1 and body $3: sets $code (HTTP status) and $body.
api() {
	api_at "$SOCK" "$@"
}

# The same to the eosd at socket $1.
api_at() {
	local auth=()
	[[ -n $2 ]] && auth=(-H "Authorization: Bearer $2")
	code=$(curl -s --max-time 120 --unix-socket "$1" -o "$T/.body" -w '%{http_code}' \
		"${auth[@]}" -H 'Content-Type: application/json' -H 'Expect:' \
		-X POST "http://eosd/v1/$3" --data-binary "$4")
	body=$(cat "$T/.body" 2>/dev/null)
}

# POST /v1/$2 with token $1 and body $3 asking for events: $code, the headers in $T/.headers and
# the stream in $T/.events.
stream_api() {
	code=$(curl -sN --max-time 120 --unix-socket "$SOCK" -D "$T/.headers" -o "$T/.events" \
		-w '%{http_code}' -H "Authorization: Bearer $1" -H 'Accept: text/event-stream' \
		-H 'Content-Type: application/json' -H 'Expect:' -X POST "http://eosd/v1/$2" \
		--data-binary "$3")
	body=$(cat "$T/.events" 2>/dev/null)
}

# Evaluate $2 over the server-sent events in file $1, a list ev of (name, data as JSON).
sse_eval() {
	python3 - "$1" "$2" <<'PY'
import json, sys
ev, name, data = [], "message", []
for line in open(sys.argv[1], encoding="utf-8").read().split("\n"):
    if line == "":
        if data:
            ev.append((name, json.loads("\n".join(data))))
        name, data = "message", []
    elif line.startswith("event:"):
        name = line[6:].strip()
    elif line.startswith("data:"):
        data.append(line[5:][1:] if line[5:].startswith(" ") else line[5:])
v = eval(sys.argv[2])
print(json.dumps(v) if isinstance(v, (dict, list, bool)) or v is None else v)
PY
}

# The events of the last stream_api satisfy $2 (a Python expression over ev).
expect_events() {
	local desc=$1 got
	got=$(sse_eval "$T/.events" "$2" 2>&1)
	if [[ $got == true ]]; then
		ok "$desc"
	else
		not_ok "$desc"
		diag "expected $2, got: $got" "the stream:" "$(head -c 2000 "$T/.events")"
	fi
}

# The phases of the progress events, each once in order of appearance.
PHASES='(lambda ps: [p for i, p in enumerate(ps) if i == 0 or ps[i - 1] != p])([d.get("phase") for n, d in ev if n == "progress"])'

# The last reply had status $1 (and, with $2, error kind $2 and $3 in its message).
expect_reply() {
	local want=$1 kind=${2:-} needle=${3:-} desc=$4 got_kind='' msg=''
	if [[ -n $kind ]]; then
		got_kind=$(json_get 'd["error"]["kind"]' <<<"$body" 2>/dev/null)
		msg=$(json_get 'd["error"]["message"]' <<<"$body" 2>/dev/null)
	fi
	if [[ $code == "$want" && $got_kind == "$kind" && $msg == *"$needle"* ]]; then
		ok "$desc"
	else
		not_ok "$desc"
		diag "expected $want ${kind:-} '${needle}', got $code: $body"
	fi
}

field() {
	json_get "$1" <<<"$body"
}

# Several values of the last reply, space-separated: fields 'd["a"], d["b"]'.
fields() {
	json_get "\" \".join(map(str, ($1,)))" <<<"$body"
}

eosd_pid() {
	json_get 'd["pid"]' <"$ST/eosd.json"
}

# Wait (up to 60 s) for eosd.json.
wait_ready() {
	local i
	for ((i = 0; i < 1200; i++)); do
		[[ -s $ST/eosd.json ]] && return 0
		sleep 0.05
	done
	return 1
}

mode_of() {
	stat -c %a "$1"
}

setup_trees() {
	mkdir -p "$T/src/dir" "$T/tarsrc/sub"
	printf 'one\ntwo\n' >"$T/src/dir/f.txt"
	printf 'keep\n' >"$T/src/keep.txt"
	printf 'in a tar\n' >"$T/tarsrc/sub/t.txt"
	tar --zstd -cf "$T/src.tar.zst" -C "$T/tarsrc" . || bail_out "tar --zstd failed"
	# 3000 small files in 30 directories, for the imports that stream progress
	python3 - "$T/many" <<'PY' || bail_out "cannot make the tree of 3000 files"
import os, sys
for i in range(3000):
    d = os.path.join(sys.argv[1], "d%02d" % (i % 30))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%04d" % i), "w") as f:
        f.write(("file %d\n" % i) * (1 + i % 7))
PY
}

# --- start-up ---------------------------------------------------------------------------------

command_line() {
	run "$EOSD_BIN" --version
	expect_rc_match 0 out "eosd " "eosd --version prints the version"
	run "$EOSD_BIN" --help
	expect_rc_match 0 out "usage: eosd" "eosd --help prints the usage"
	run "$EOSD_BIN" --state-dir "$ST" --colour
	expect_rc 2 "an unknown option is a usage error"
	run "$EOSD_BIN" --state-dir "$ST" --listen unix:relative.sock
	expect_rc_match 2 err "unix:/ABSOLUTE/PATH" "a relative socket path is a usage error"
	check "a usage error starts nothing" not test -e "$ST/eosd.json"
}

start_background() {
	run "$EOSD_BIN" --state-dir "$ST"
	expect_rc 0 "eosd starts in the background and exits 0 once ready"
	check "eosd.json exists when the parent returns" test -s "$ST/eosd.json"
	PID=$(eosd_pid)
	check "eosd.json names a running eosd" kill -0 "$PID"
	check "eosd.json names the socket, in eosd's directory of the runtime directory" \
		test "$(json_get 'd["socket"]' <"$ST/eosd.json")" = "$SOCK"
	check "... which it names too, keyed by the state directory" \
		test "$(json_get 'd["runtime_dir"]' <"$ST/eosd.json")" = "$(eosd_runtime_dir "$ST")"
	check "... made 0700" test "$(mode_of "$(eosd_runtime_dir "$ST")")" = 700
	check "the socket is 0600" test "$(mode_of "$SOCK")" = 600
	check "eosd.json is 0600" test "$(mode_of "$ST/eosd.json")" = 600
	check "the tokens directory is 0700" test "$(mode_of "$ST/tokens")" = 700
	local s
	for s in management runtime observability; do
		check "the $s token is 0600 and 64 hex digits" \
			grep -qxE '[0-9a-f]{64}' "$ST/tokens/$s"
		check "the $s token file is 0600" test "$(mode_of "$ST/tokens/$s")" = 600
	done
	MT=$(cat "$ST/tokens/management")
	RT=$(cat "$ST/tokens/runtime")
	OT=$(cat "$ST/tokens/observability")
}

second_instance() {
	run "$EOSD_BIN" --state-dir "$ST" -f
	expect_rc_match 1 err "pid $PID" "a second eosd on the state dir is refused naming the pid"
	check "the refused eosd leaves eosd.json alone" test -s "$ST/eosd.json"
	run eos_store --store "$ST/store" ls
	expect_rc_match 1 err "owned by eosd (pid $PID): use eosctl" \
		"eos-store says eosd owns the store and to use eosctl"
}

# Start-up refusals of an eosd of another state directory; the running one is untouched.
refused_listens() {
	local long
	run "$EOSD_BIN" --state-dir "$T/state2" -f --listen "unix:$SOCK"
	expect_rc_match 1 err "another process serves it" \
		"an eosd of another state dir refuses a socket that a live eosd serves"
	run "$EOSD_BIN" --state-dir "$T/state2" -f --listen "unix:$T/s2.sock" \
		--listen tcp:0.0.0.0:0
	expect_rc_match 1 err "'0.0.0.0' is not a loopback address" \
		"a TCP address off loopback is refused without --listen-any"
	run "$EOSD_BIN" --state-dir "$T/state2" -f --listen "unix:$T/s2.sock" \
		--listen 'tcp:[2001:db8::1]:0'
	expect_rc_match 1 err "'2001:db8::1' is not a loopback address" \
		"an IPv6 address off loopback is refused without --listen-any"
	run "$EOSD_BIN" --state-dir "$T/state2" -f --listen "unix:$T/s2.sock" --listen 'tcp:[::]:0'
	expect_rc_match 1 err "'::' is not a loopback address" "... the IPv6 any address too"
	run "$EOSD_BIN" --state-dir "$T/state2" -f --listen "unix:$T/s2.sock" --listen 'tcp:::1:0'
	expect_rc_match 1 err "an IPv6 one goes in brackets" "an IPv6 address without brackets is refused"
	check "the refused eosd wrote no eosd.json" not test -e "$T/state2/eosd.json"
	check "and removed its socket" not test -e "$T/s2.sock"
	long=$T/$(printf 'r%.0s' {1..80})
	EOS_RUNTIME_DIR=$long run "$EOSD_BIN" --state-dir "$T/state2" -f
	expect_rc_match 1 err "the socket '$(EOS_RUNTIME_DIR=$long eosd_runtime_dir "$T/state2")/eosd.sock' is longer than the 107 bytes" \
		"a default socket path too long for a Unix socket is refused, naming it"
	check "... and how to do without it" grep -q "shorter EOS_RUNTIME_DIR, or pass --listen" <<<"$err"
	api "$OT" observability/ping '{}'
	expect_reply 200 "" "" "the running eosd still answers on its socket"
}

health_ping_version() {
	code=$(curl -s --unix-socket "$SOCK" -o "$T/.body" -w '%{http_code}' http://eosd/v1/health)
	body=$(cat "$T/.body")
	expect_reply 200 "" "" "GET /v1/health answers without a token"
	local t surface=(management runtime observability) i=0
	for t in "$MT" "$RT" "$OT"; do
		api "$t" observability/ping '{}'
		expect_reply 200 "" "" "ping answers any surface token"
		check "... naming the token's surface (${surface[i]}), no sandbox, no id" \
			test "$(field '[d["token"][k] for k in ("surface", "sandbox_id", "token_id")]')" = \
			"[\"${surface[i]}\", null, null]"
		i=$((i + 1))
	done
	api "$OT" observability/version '{"request_id": "r-1"}'
	expect_reply 200 "" "" "version answers"
	check "version says the version and api 1" \
		test "$(field 'd["version"] + "/" + str(d["api"])')" = "$("$EOSD_BIN" --version | cut -d' ' -f2)/1"
}

# --- sandboxes --------------------------------------------------------------------------------

create_list_inspect() {
	api "$MT" management/create_sandbox "{\"args\": {\"source\": \"$T/src\", \"id\": \"s1\"}}"
	expect_reply 200 "" "" "create_sandbox imports a directory"
	check "it reports the files and version" test "$(fields 'd["files"], d["version"]')" = \
		'2 L000001'
	api "$MT" management/create_sandbox "{\"args\": {\"source\": \"$T/src.tar.zst\"}}"
	expect_reply 200 "" "" "create_sandbox imports a tar.zst with a generated id"
	S2=$(field 'd["sandbox_id"]')
	check "the tar's file is counted" test "$(field 'd["files"]')" = 1
	mkdir -p "$T/gsrc"
	printf 'tracked\n' >"$T/gsrc/f"
	{ git init -q "$T/gsrc" && git -C "$T/gsrc" add f; } || bail_out "git init or add failed"
	api "$MT" management/create_sandbox "{\"args\": {\"source\": \"$T/gsrc\", \"id\": \"g1\"}}"
	expect_reply 200 "" "" "create_sandbox imports a git work tree"
	check "its index entry is refreshed for the views" test "$(field 'd["git_index_entries"]')" = 1
	api "$MT" management/create_sandbox \
		"{\"args\": {\"source\": \"$T/gsrc\", \"id\": \"g2\", \"keep_git_index\": true}}"
	expect_reply 200 "" "" "create_sandbox takes keep_git_index"
	check "... and imports the index byte for byte" test "$(field 'd["git_index_entries"]')" = 0
	for id in g1 g2; do
		api "$MT" management/destroy_sandbox "{\"sandbox_id\": \"$id\"}"
		expect_reply 200 "" "" "destroy_sandbox $id"
	done
	api "$MT" management/list_sandboxes ''
	expect_reply 200 "" "" "list_sandboxes answers (empty body)"
	check "it lists both sandboxes" test "$(field '" ".join(s["sandbox_id"] for s in d["sandboxes"])')" = \
		"$(printf '%s\n' s1 "$S2" | sort | tr '\n' ' ' | sed 's/ $//')"
	api "$MT" management/inspect_sandbox '{"sandbox_id": "s1"}'
	expect_reply 200 "" "" "inspect_sandbox answers"
	check "inspect shows head, layers, leases and sessions" \
		test "$(fields 'd["head"], len(d["layer_list"]), d["leases"], d["sessions"]')" = \
		'L000001 1 [] []'
	api "$MT" management/inspect_sandbox '{"sandbox_id": "nope"}'
	expect_reply 404 not_found "nope" "inspect_sandbox of a missing sandbox is not_found"
}

# --- progress events ----------------------------------------------------------------------------

# create_sandbox asked for events: progress (scan, import, commit) then the result, which is the
# plain reply's document; a failure of the handler is an error event; refusals before it stay
# plain replies.
streamed_import() {
	stream_api "$MT" management/create_sandbox \
		"{\"args\": {\"source\": \"$T/many\", \"id\": \"many\"}}"
	check "a create_sandbox asking for events answers 200" test "$code" = 200
	check "... as text/event-stream" grep -qi '^content-type: text/event-stream' "$T/.headers"
	expect_events "progress events come first, then exactly one result event, last" \
		'len(ev) > 1 and [n for n, _ in ev] == ["progress"] * (len(ev) - 1) + ["result"]'
	expect_events "... through the phases scan, import and commit" \
		"$PHASES == ['scan', 'import', 'commit']"
	expect_events "... the import events know the totals, 3000 files" \
		'all(d["total_files"] == 3000 for n, d in ev if d.get("phase") in ("import", "commit"))'
	expect_events "... and the last progress event has every file and byte done" \
		'ev[-2][1]["files"] == 3000 and ev[-2][1]["bytes"] == ev[-2][1]["total_bytes"] == ev[-1][1]["bytes"]'
	sse_eval "$T/.events" 'ev[-1][1]' >"$T/streamed.json"
	api "$MT" management/create_sandbox "{\"args\": {\"source\": \"$T/many\", \"id\": \"many2\"}}"
	expect_reply 200 "" "" "the same import without events answers a plain reply"
	check "... whose fields are the result event's, with the same counts" python3 -c '
import json, sys
a = json.load(open(sys.argv[1])); b = json.loads(sys.argv[2])
assert sorted(a) == sorted(b), (sorted(a), sorted(b))
assert all(a[k] == b[k] for k in ("version", "files", "dirs", "bytes", "skipped")), (a, b)
' "$T/streamed.json" "$body"

	stream_api "$MT" management/create_sandbox "{\"args\": {\"source\": \"$T/nope\"}}"
	check "a failing create_sandbox asking for events answers 200 too" test "$code" = 200
	expect_events "... and ends with an error event, no result" \
		'ev[-1][0] == "error" and [n for n, _ in ev if n != "progress"] == ["error"]'
	expect_events "... holding the error envelope, kind not_found naming the path" \
		'ev[-1][1]["error"]["kind"] == "not_found" and "nope" in ev[-1][1]["error"]["message"]'
	stream_api "$MT" management/create_sandbox '{"args": {"source": "/x", "colour": 1}}'
	expect_reply 400 invalid_request "'colour'" \
		"a request refused before its handler runs is a plain reply, even asking for events"
	stream_api "$MT" management/list_sandboxes '{}'
	check "an operation that is not long-running answers plain JSON" \
		grep -qi '^content-type: application/json' "$T/.headers"
	check "... its usual document" test "$(field 'len(d["sandboxes"]) >= 3')" = true
	api "$MT" management/destroy_sandbox '{"sandbox_id": "many"}'
	api "$MT" management/destroy_sandbox '{"sandbox_id": "many2"}'
	expect_reply 200 "" "" "destroy both imports of the 3000 files"
}

refusals() {
	api "" management/list_sandboxes '{}'
	expect_reply 401 unauthorized "no token" "no token is unauthorized"
	api "$(printf '%064d' 0)" management/list_sandboxes '{}'
	expect_reply 401 unauthorized "unknown token" "a wrong token is unauthorized"
	api "$RT" management/list_sandboxes '{}'
	expect_reply 403 forbidden "runtime token" "a token of another surface is forbidden"
	api "$MT" management/no_such_op '{}'
	expect_reply 404 not_found "no_such_op" "an unknown operation is not_found, naming it"
	api "$MT" runtime/list_sandboxes '{}'
	expect_reply 400 invalid_request "management surface" \
		"an operation under another surface's URL is invalid_request"
	api "$MT" management/create_sandbox '{"args": {"source": "/x", "colour": 1}}'
	expect_reply 400 invalid_request "'colour'" "an unknown argument is refused, naming it"
	api "$MT" management/create_sandbox '{"args": {"source": 7}}'
	expect_reply 400 invalid_request "'source'" "a mistyped argument is refused, naming it"
	api "$MT" management/destroy_sandbox '{"args": {"force": "yes"}, "sandbox_id": "s1"}'
	expect_reply 400 invalid_request "'force'" "a mistyped boolean is refused, naming it"
	api "$MT" management/inspect_sandbox '{}'
	expect_reply 400 invalid_request "'sandbox_id'" "a missing sandbox_id is refused, naming it"
	api "$MT" management/list_sandboxes '{"sandbox": "s1"}'
	expect_reply 400 invalid_request "'sandbox'" "an unknown request field is refused, naming it"
	api "$MT" management/list_sandboxes '{not json'
	expect_reply 400 invalid_request "not a JSON object" "a body that is not JSON is refused"
	python3 -c 'import sys; sys.stdout.write("{\"args\": {\"source\": \"/" + "a" * ((64 << 20) + (512 << 10)) + "\"}}")' \
		>"$T/big.json"
	api "$MT" management/create_sandbox "@$T/big.json"
	expect_reply 413 too_large "larger than" "a body above the limit is too_large"
	rm -f "$T/big.json"
	api "$MT" observability/ping '{}'
	expect_reply 200 "" "" "eosd still answers after the refusals"
}

issued_tokens() {
	api "$MT" management/issue_token '{"sandbox_id": "s1", "args": {"surface": "runtime"}}'
	expect_reply 200 "" "" "issue_token mints a runtime token limited to s1"
	LT=$(field 'd["token"]')
	check "the reply names surface, sandbox and no expiry" \
		test "$(fields 'd["surface"], d["sandbox_id"], d["expires_at"]')" = 'runtime s1 None'
	check "only its digest is stored" not grep -q "$LT" "$ST/tokens/issued.json"
	check "issued.json is 0600" test "$(mode_of "$ST/tokens/issued.json")" = 600
	api "$LT" runtime/list_workspace_sessions "{\"sandbox_id\": \"$S2\"}"
	expect_reply 403 forbidden "limited to sandbox 's1'" \
		"a sandbox-limited token on another sandbox is forbidden"
	api "$LT" runtime/list_workspace_sessions '{"sandbox_id": "s1"}'
	check "a sandbox-limited token on its sandbox passes the gateway" \
		test "$code" != 401 -a "$code" != 403 -a "$code" != 400
	api "$LT" management/list_sandboxes '{}'
	expect_reply 403 forbidden "runtime token" "an issued runtime token cannot manage"
	api "$LT" observability/ping '{}'
	check "ping with it names its surface, sandbox and id" \
		test "$(field '[d["token"][k] for k in ("surface", "sandbox_id")] + [d["token"]["token_id"].startswith("tok-")]')" = \
		'["runtime", "s1", true]'
	api "$MT" management/issue_token '{"sandbox_id": "s1", "args": {"surface": "management"}}'
	expect_reply 400 invalid_request "'surface'" "issue_token refuses a management token"
	api "$MT" management/issue_token '{"sandbox_id": "nope", "args": {"surface": "runtime"}}'
	expect_reply 404 not_found "nope" "issue_token for a missing sandbox is not_found"

	api "$MT" management/issue_token \
		'{"sandbox_id": "s1", "args": {"surface": "observability", "ttl_seconds": 1}}'
	expect_reply 200 "" "" "issue_token mints a token expiring after 1 s"
	local et
	et=$(field 'd["token"]')
	check "its expiry is given" test "$(field 'd["expires_at"] is not None')" = true
	sleep 2
	api "$et" observability/ping '{}'
	expect_reply 401 unauthorized "expired" "an expired token is unauthorized, saying expired"

	api "$MT" management/issue_token '{"sandbox_id": "s1", "args": {"surface": "runtime"}}'
	local rt rt_id
	rt=$(field 'd["token"]')
	rt_id=$(field 'd["token_id"]')
	api "$MT" management/revoke_token "{\"args\": {\"token_id\": \"$rt_id\"}}"
	expect_reply 200 "" "" "revoke_token revokes it"
	api "$rt" runtime/list_workspace_sessions '{"sandbox_id": "s1"}'
	expect_reply 401 unauthorized "revoked" "a revoked token is unauthorized, saying revoked"
	api "$MT" management/revoke_token '{"args": {"token_id": "tok-none"}}'
	expect_reply 404 not_found "tok-none" "revoking an unknown token is not_found"
}

# A client sending its request one byte a second holds only its own connection, and eosd cuts
# it off once the request has taken EOSD_REQUEST_TIMEOUT_S (60 s).
slow_client() {
	python3 - "$SOCK" "$OT" "$T/slow.started" >"$T/slow.out" 2>&1 <<'EOF' &
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
req = ("POST /v1/observability/ping HTTP/1.1\r\nHost: eosd\r\nAuthorization: Bearer "
       + sys.argv[2] + "\r\nContent-Length: 2\r\n\r\n{}").encode()
s.settimeout(1)  # one byte a second: each recv waits that second
for i, b in enumerate(req):
    try:
        s.send(bytes([b]))
        if i == 2:
            open(sys.argv[3], "w").write("sent\n")
        if s.recv(4096) == b"":
            break
    except socket.timeout:
        continue
    except OSError:
        break
else:
    print("never closed")
    sys.exit(0)
print("closed by eosd")
EOF
	local slow=$! i
	track_pid "$slow"
	for ((i = 0; i < 1200; i++)); do
		[[ -e $T/slow.started ]] && break
		sleep 0.05
	done
	api "$MT" management/list_sandboxes '{}'
	expect_reply 200 "" "" "list_sandboxes answers while a client sends one byte a second"
	check "the slow client was still sending when that answer came" kill -0 "$slow"
	api "$OT" observability/ping '{}'
	expect_reply 200 "" "" "and ping too"
	wait "$slow"
	check "eosd cuts off the slow client before it has sent its whole request" \
		grep -qx 'closed by eosd' "$T/slow.out"
}

# --- requests held in flight (the failpoint gateway.handler=wait:FILE) ---------------------------

FP_ST=$T/state-fp
FP_SOCK=$T/fp.sock

# An eosd of its own in the foreground, its environment with $@ added (FP_PID, log $T/fp.log).
start_fp_eosd() {
	rm -f "$FP_ST/eosd.json"
	env "$@" "$EOSD_BIN" --state-dir "$FP_ST" -f --listen "unix:$FP_SOCK" 2>"$T/fp.log" &
	FP_PID=$!
	track_pid "$FP_PID"
	wait_file "$FP_ST/eosd.json" || bail_out "the eosd with a held failpoint did not start"
}

# POST /v1/$2 with token $1 and body $3 to that eosd; $4.code appears once it has answered
# (the status), with $4.h (headers) and $4.body.
fp_api() {
	curl -s --max-time 120 --unix-socket "$FP_SOCK" -D "$4.h" -o "$4.body" -w '%{http_code}' \
		-H "Authorization: Bearer $1" -X POST "http://eosd/v1/$2" --data-binary "$3" \
		>"$4.tmp"
	mv "$4.tmp" "$4.code"
}

stop_fp_eosd() {
	kill -TERM "$FP_PID"
	wait "$FP_PID"
	check "$1: SIGTERM, exit status 0" test "$?" = 0
}

# The sockets process $1 holds open.
sockets_of() {
	find "/proc/$1/fd" -lname 'socket:*' 2>/dev/null | wc -l
}

have_failpoints() {
	grep -q '^#define EOS_FAILPOINTS 1' "$top_builddir/config.h" 2>/dev/null
}

# A full worker queue is answered 503 unavailable with Retry-After: a pool of one worker and a
# queue of one (EOSD_TEST_POOL), the worker held by the failpoint.
queue_full() {
	local ot a=$T/qa b=$T/qb c=$T/qc first other i
	start_fp_eosd EOSD_TEST_POOL=1:1 "EOS_FAILPOINTS=gateway.handler=wait:$T/go1"
	ot=$(cat "$FP_ST/tokens/observability")
	fp_api "$ot" observability/ping '{}' "$a" &
	check "queue: the one worker holds a request" wait_file "$T/go1.waiting"
	fp_api "$ot" observability/ping '{}' "$b" &
	fp_api "$ot" observability/ping '{}' "$c" &
	for ((i = 0; i < 1200; i++)); do
		[[ -e $b.code || -e $c.code ]] && break
		sleep 0.05
	done
	first=$b other=$c
	[[ -e $b.code ]] || first=$c other=$b
	check "... a request beyond the queue of one is answered at once: 503" \
		test "$(cat "$first.code")" = 503
	check "... kind unavailable, saying the queue is full" test "$(json_get \
		'd["error"]["kind"] + ":" + str("queue" in d["error"]["message"])' <"$first.body")" = \
		unavailable:True
	check "... with a Retry-After header" grep -qi '^retry-after: [0-9]' "$first.h"
	check "... while the queued one waits" not test -e "$other.code"
	touch "$T/go1"
	check "the held request is answered once released" wait_file "$a.code"
	check "... 200" test "$(cat "$a.code")" = 200
	check "the queued one is answered too, 200" wait_file "$other.code"
	check "... 200" test "$(cat "$other.code")" = 200
	stop_fp_eosd "queue"
}

# A client that leaves in the middle of a streamed import: the import goes on to the end, eosd
# stays healthy and keeps no connection of it.
client_gone() {
	local mt sockets i
	start_fp_eosd "EOS_FAILPOINTS=gateway.handler=wait:$T/go2"
	mt=$(cat "$FP_ST/tokens/management")
	sockets=$(sockets_of "$FP_PID")
	python3 - "$FP_SOCK" "$mt" "$T/many" >"$T/gone.out" 2>&1 <<'PY'
import json, socket, sys
body = json.dumps({"args": {"source": sys.argv[3], "id": "gone"}}).encode()
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b"POST /v1/management/create_sandbox HTTP/1.1\r\nHost: eosd\r\n"
          b"Authorization: Bearer " + sys.argv[2].encode() + b"\r\n"
          b"Accept: text/event-stream\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
head = b""
while b"\r\n\r\n" not in head:
    chunk = s.recv(4096)
    if not chunk:
        break
    head += chunk
print(head.split(b"\r\n")[0].decode())
s.close()
PY
	check "gone: the stream began (200) while the handler was held" \
		grep -q '^HTTP/1.1 200' "$T/gone.out"
	touch "$T/go2"
	for ((i = 0; i < 1200; i++)); do
		fp_api "$mt" management/list_sandboxes '{}' "$T/gl"
		grep -q '"gone"' "$T/gl.body" && break
		sleep 0.05
	done
	check "... the import ran to its end without its client: the sandbox exists" \
		grep -q '"gone"' "$T/gl.body"
	fp_api "$mt" management/inspect_sandbox '{"sandbox_id": "gone"}' "$T/gi"
	check "... with its 3000 files (and 30 directories)" test "$(json_get 'd["layer_list"][0]["created"]' \
		<"$T/gi.body")" = 3030
	for ((i = 0; i < 600; i++)); do
		(($(sockets_of "$FP_PID") <= sockets)) && break
		sleep 0.05
	done
	check "... and eosd holds no socket more than before the client came" \
		test "$(sockets_of "$FP_PID")" -le "$sockets"
	stop_fp_eosd "gone"
}

# SIGTERM while a request (an import of 3000 files) is in flight: new requests get 503, the
# import completes and is answered, eosd exits 0, and the store is clean.
stop_in_flight() {
	local mt ot held
	start_fp_eosd EOS_LOG=info "EOS_FAILPOINTS=gateway.handler=wait:$T/go3"
	mt=$(cat "$FP_ST/tokens/management")
	ot=$(cat "$FP_ST/tokens/observability")
	fp_api "$mt" management/create_sandbox "{\"args\": {\"source\": \"$T/many\", \"id\": \"held\"}}" \
		"$T/held" &
	held=$!
	check "stop: an import is in flight" wait_file "$T/go3.waiting"
	kill -TERM "$FP_PID"
	wait_file_grep "stopping (1 requests in flight)" "$T/fp.log"
	check "... SIGTERM: eosd says it is stopping with 1 request in flight" \
		grep -q 'stopping (1 requests in flight)' "$T/fp.log"
	fp_api "$ot" observability/ping '{}' "$T/late"
	check "... a new request gets 503" test "$(cat "$T/late.code")" = 503
	check "... kind unavailable: stopping" test "$(json_get 'd["error"]["message"]' \
		<"$T/late.body")" = "eosd is stopping"
	check "... eosd waits for the import" kill -0 "$FP_PID"
	touch "$T/go3"
	wait "$FP_PID"
	check "... then exits 0" test "$?" = 0
	wait "$held" # the client may still be writing down the answer it got
	check "... once the import was answered, 200" test "$(cat "$T/held.code" 2>/dev/null)" = 200
	check "... with its 3000 files" test "$(json_get 'd["files"]' <"$T/held.body")" = 3000
	run eos_store --store "$FP_ST/store" --json fsck
	expect_rc 0 "... and the store it closed is clean (eos-store fsck)"
	run eos_store --store "$FP_ST/store" --json ls
	check "... and holds the import" json_has_sandbox held <<<"$out"
}

# Wait (up to 60 s) until file $2 holds the text $1.
wait_file_grep() {
	local i
	for ((i = 0; i < 1200; i++)); do
		grep -qF "$1" "$2" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

held_requests() {
	if ! have_failpoints; then
		ok "# SKIP requests held in flight: this build has no failpoints (--enable-failpoints)"
		return
	fi
	queue_full
	client_gone
	stop_in_flight
}

# The socket is 0600; opened up, the SO_PEERCRED check still refuses another uid.
other_uid() {
	if ((EUID != 0)); then
		ok "# SKIP another uid on the socket: needs root to run curl as another user"
		return
	fi
	local user_curl=(runuser -u "$EOS_TEST_USER" -- curl -s --max-time 60 --unix-socket "$SOCK"
		-w '\n%{http_code}' -H "Authorization: Bearer $MT"
		-X POST http://eosd/v1/management/list_sandboxes -d '{}')
	run "${user_curl[@]}"
	check "another uid cannot connect to the 0600 socket" test "$rc" != 0 -o "${out##*$'\n'}" = 000
	chmod 0711 "$T/run" "$(dirname "$SOCK")"
	chmod 0666 "$SOCK"
	run "${user_curl[@]}"
	chmod 0600 "$SOCK"
	chmod 0700 "$T/run" "$(dirname "$SOCK")"
	check "another uid on an opened-up socket is refused by SO_PEERCRED (403)" \
		test "${out##*$'\n'}" = 403
	check "the refusal is forbidden" test "$(head -n1 <<<"$out" | json_get 'd["error"]["kind"]')" = forbidden
}

stop_background() {
	kill -TERM "$PID"
	check "SIGTERM stops eosd" wait_pid_gone "$PID"
	check "eosd.json is removed" not test -e "$ST/eosd.json"
	check "the socket is removed" not test -e "$SOCK"
}

# While eosd is stopped: eos-store works offline, adds two layers to s1 and, where FUSE
# works, a workspace session of s1.
offline_changes() {
	run eos_store --store "$ST/store" ls
	expect_rc 0 "eos-store opens the store once eosd has stopped"
	printf 'new\n' | eos_store --store "$ST/store" write --sandbox s1 --path dir/new.txt \
		>/dev/null
	printf 'one\nTWO\n' | eos_store --store "$ST/store" write --sandbox s1 --path dir/f.txt \
		>/dev/null
	run eos_store --store "$ST/store" --json log --sandbox s1
	check "s1 has three layers" test "$(json_get 'len(d["layers"])' <<<"$out")" = 3
	HAVE_SESSION=0
	if [[ -c /dev/fuse && -r /dev/fuse && -w /dev/fuse ]] && command -v fusermount3 >/dev/null &&
		fs_mount "$T/m" "$ST/store" s1 ws1 2>"$T/fs.err" && fs_umount "$T/m"; then
		HAVE_SESSION=1
	else
		diag "FUSE unusable here: destroy_sandbox's refusal is checked without a session"
	fi
}

# --listen tcp:[::1]:PORT: eosd on the IPv6 loopback, where the machine has one.
ipv6_loopback() {
	local pid tcp
	if ! python3 -c 'import socket; socket.socket(socket.AF_INET6).bind(("::1", 0))' 2>/dev/null; then
		ok "# SKIP IPv6 loopback: this machine has no ::1 to bind (only the refusals are checked)"
		return
	fi
	"$EOSD_BIN" --state-dir "$T/state6" -f --listen "unix:$T/s6.sock" --listen 'tcp:[::1]:0' \
		2>"$T/eosd6.err" &
	pid=$!
	track_pid "$pid"
	check "eosd listening on tcp:[::1]:0 becomes ready" wait_file "$T/state6/eosd.json"
	tcp=$(json_get 'd["tcp"]' <"$T/state6/eosd.json")
	check "... eosd.json names the IPv6 loopback address and its port" \
		grep -qxE '\[::1\]:[0-9]+' <<<"$tcp"
	code=$(curl -sg --max-time 60 -o "$T/.body" -w '%{http_code}' \
		-H "Authorization: Bearer $(cat "$T/state6/tokens/observability")" \
		-X POST "http://$tcp/v1/observability/ping" -d '{}')
	check "... ping answers over [::1]" test "$code" = 200
	kill -TERM "$pid"
	wait "$pid"
	check "... and SIGTERM stops it, exit 0" test "$?" = 0
}

# Two eosd of different state directories sharing one runtime directory: each has a directory of
# its own there (socket, session views), and both serve sessions at once, even of the same
# sandbox and session names.
two_daemons() {
	local s dir mp pids=()
	for s in a b; do
		run "$EOSD_BIN" --state-dir "$T/state-$s"
		expect_rc 0 "one runtime directory, two state directories: eosd $s starts"
		pids+=("$(json_get 'd["pid"]' <"$T/state-$s/eosd.json")")
		dir=$(json_get 'd["runtime_dir"]' <"$T/state-$s/eosd.json")
		check "... in a directory of its own in the runtime directory" \
			test "$dir" = "$(eosd_runtime_dir "$T/state-$s")"
		check "... with its socket there" \
			test "$(json_get 'd["socket"]' <"$T/state-$s/eosd.json")" = "$dir/eosd.sock"
	done
	check "... the two directories differ" \
		test "$(eosd_runtime_dir "$T/state-a")" != "$(eosd_runtime_dir "$T/state-b")"
	for s in a b; do
		api_at "$(eosd_runtime_dir "$T/state-$s")/eosd.sock" "$(cat "$T/state-$s/tokens/management")" \
			management/create_sandbox "{\"args\": {\"source\": \"$T/src\", \"id\": \"sb\"}}"
		expect_reply 200 "" "" "eosd $s imports sandbox sb"
	done
	if ((!HAVE_SESSION)); then
		diag "FUSE unusable here: the two eosd serve no session"
	else
		for s in a b; do
			api_at "$(eosd_runtime_dir "$T/state-$s")/eosd.sock" "$(cat "$T/state-$s/tokens/runtime")" \
				runtime/create_workspace_session \
				'{"sandbox_id": "sb", "args": {"workspace_session_id": "w1"}}'
			expect_reply 200 "" "" "eosd $s serves session w1 of sb"
			mp=$(field 'd["mount_path"]')
			check "... at its own mount path" \
				test "$mp" = "$(eosd_runtime_dir "$T/state-$s")/sessions/sb/w1"
			api_at "$(eosd_runtime_dir "$T/state-$s")/eosd.sock" "$(cat "$T/state-$s/tokens/runtime")" \
				runtime/file_write "{\"sandbox_id\": \"sb\", \"args\": {\"workspace_session_id\": \"w1\", \"path\": \"who.txt\", \"content\": \"eosd $s\\n\"}}"
			expect_reply 200 "" "" "... which takes a write"
		done
		for s in a b; do
			check "both views are live at once: eosd $s's shows its own write" grep -qx "eosd $s" \
				"$(eosd_runtime_dir "$T/state-$s")/sessions/sb/w1/who.txt"
		done
	fi
	for s in 0 1; do
		kill -TERM "${pids[$s]}"
		check "eosd $((s + 1)) of 2 stops" wait_pid_gone "${pids[$s]}"
	done
	check "... and both sockets are gone" not test -e "$(eosd_runtime_dir "$T/state-a")/eosd.sock" -o \
		-e "$(eosd_runtime_dir "$T/state-b")/eosd.sock"
}

start_foreground() {
	"$EOSD_BIN" --state-dir "$ST" -f --listen tcp:127.0.0.1:0 2>"$T/eosd.err" &
	PID=$!
	track_pid "$PID"
	check "eosd -f becomes ready" wait_ready
	local tcp
	tcp=$(json_get 'd["tcp"]' <"$ST/eosd.json")
	check "eosd.json names the loopback TCP address" grep -qxE '127\.0\.0\.1:[0-9]+' <<<"$tcp"
	code=$(curl -s --max-time 60 -o "$T/.body" -w '%{http_code}' -H "Authorization: Bearer $OT" \
		-X POST "http://$tcp/v1/observability/ping" -d '{}')
	check "ping answers over TCP" test "$code" = 200
	check "the tokens are kept across the restart" test "$(cat "$ST/tokens/management")" = "$MT"
	api "$MT" management/list_sandboxes '{}'
	check "the sandboxes are kept across the restart" \
		test "$(field 'len(d["sandboxes"])')" = 2
	api "$LT" runtime/list_workspace_sessions '{"sandbox_id": "s1"}'
	check "an issued token is kept across the restart" \
		test "$code" != 401 -a "$code" != 403
}

export_squash_destroy() {
	api "$MT" management/export_changes '{"sandbox_id": "s1", "args": {"format": "patch"}}'
	expect_reply 200 "" "" "export_changes returns a patch inline"
	check "the patch holds both changes" \
		test "$(field '("b/dir/new.txt" in d["patch"]) and ("+TWO" in d["patch"])')" = true
	api "$MT" management/export_changes \
		"{\"sandbox_id\": \"s1\", \"args\": {\"format\": \"tar\", \"dest\": \"$T/out.tar\"}}"
	expect_reply 200 "" "" "export_changes writes a tar to dest"
	check "the tar holds the new file" grep -q 'dir/new.txt' <(tar -tf "$T/out.tar")
	api "$MT" management/export_changes '{"sandbox_id": "s1", "args": {"format": "tar"}}'
	expect_reply 400 invalid "'dest'" "a tar export without dest is refused, naming dest"
	stream_api "$MT" management/export_changes '{"sandbox_id": "s1", "args": {"format": "patch"}}'
	expect_events "export_changes asking for events: the phases diff and export, then the result" \
		"$PHASES == ['diff', 'export'] and ev[-1][0] == 'result'"
	expect_events "... the last export event has every path written" \
		'[d for n, d in ev if n == "progress"][-1]["paths"] == [d for n, d in ev if n == "progress"][-1]["total_paths"] > 0'
	expect_events "... and the result holds the patch" '"+TWO" in ev[-1][1]["patch"]'
	stream_api "$MT" management/squash_layerstacks '{"sandbox_id": "s1"}'
	expect_events "squash_layerstacks asking for events: the phase squash, then the result" \
		"$PHASES == ['squash'] and ev[-1][0] == 'result'"
	check "it folded layers" test "$(sse_eval "$T/.events" 'ev[-1][1]["layers_removed"] >= 1')" = true
	if ((HAVE_SESSION)); then
		api "$MT" management/destroy_sandbox '{"sandbox_id": "s1"}'
		expect_reply 409 busy "'ws1'" "destroy_sandbox is refused while a session exists, naming it"
	fi
	api "$MT" management/destroy_sandbox '{"sandbox_id": "s1", "args": {"force": true}}'
	expect_reply 200 "" "" "destroy_sandbox with force destroys it"
	api "$MT" management/destroy_sandbox "{\"sandbox_id\": \"$S2\"}"
	expect_reply 200 "" "" "destroy_sandbox without sessions needs no force"
	api "$MT" management/list_sandboxes '{}'
	check "no sandbox is left" test "$(field 'len(d["sandboxes"])')" = 0
}

stop_foreground() {
	kill -TERM "$PID"
	wait "$PID"
	rc=$?
	check "SIGTERM: eosd -f exits 0" test "$rc" = 0
	check "eosd.json is removed at the clean exit" not test -e "$ST/eosd.json"
	check "the socket is removed at the clean exit" not test -e "$SOCK"
}

setup_trees
command_line
start_background
second_instance
refused_listens
health_ping_version
create_list_inspect
streamed_import
refusals
issued_tokens
slow_client
held_requests
other_uid
stop_background
offline_changes
two_daemons
ipv6_loopback
start_foreground
export_squash_destroy
stop_foreground
rerun_as_test_user "${BASH_SOURCE[0]}"
tap_done
