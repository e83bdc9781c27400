#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# eosd's observability through a real eosd, with curl and eosctl: every reply's trace_id; the
# documented spans (names, nesting, statuses) and events of a publish, a rejected publish, a
# squash and a destroy (trace), and after a restart; events with filters and events --follow
# getting a new event (waited for with a generous bound; the mechanism is wake-up based, see
# test-eosd-obs); snapshot, layerstack and cgroup (unavailable with a reason as an unprivileged
# user on a v1/v2 hybrid); eosctl's trace, events, layers, snapshot and top, as text and JSON; a
# telemetry writer held by a failpoint while a publish completes; retention dropping the oldest
# records at its bound. As root and as eos-test.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/fs-lib.sh"

EOSD_BIN=$top_builddir/supervisor/eosd
EOSCTL_BIN=$top_builddir/cli/eosctl

require_eos_store
tap_tmpdir
fs_require
[[ -x $EOSD_BIN ]] || bail_out "'$EOSD_BIN' is missing (build it; set top_builddir)"
[[ -x $EOSCTL_BIN ]] || bail_out "'$EOSCTL_BIN' is missing (build it; set top_builddir)"
command -v curl >/dev/null || bail_out "curl is needed to talk to eosd"

export EOS_RUNTIME_DIR=$T/run EOS_NO_AUTOSTART=1
unset EOS_STORE EOS_OPERATION EOS_FAILPOINTS EOS_OBS EOS_OBS_MAX_RECORDS EOS_OBS_MAX_BYTES
eosd_pid=

# start_eosd STATE [ENV=VALUE...] [-- EOSD-OPTION...]: eosd -f on STATE, ready.
start_eosd() {
	local st=$1 i envs=() opts=()
	shift
	while (($#)) && [[ $1 != -- ]]; do
		envs+=("$1")
		shift
	done
	(($#)) && shift
	opts=("$@")
	mkdir -p "$st" && chmod 0700 "$st"
	rm -f "$st/eosd.json"
	env "${envs[@]}" "$EOSD_BIN" --state-dir "$st" -f "${opts[@]}" >>"$T/eosd.log" 2>&1 &
	eosd_pid=$!
	track_pid "$eosd_pid"
	for ((i = 0; i < 1200; i++)); do
		[[ -s $st/eosd.json ]] && break
		kill -0 "$eosd_pid" 2>/dev/null || break
		sleep 0.05
	done
	[[ -s $st/eosd.json ]] || bail_out "eosd did not start: $(cat "$T/eosd.log")"
	ST=$st
	SOCK=$(json_get 'd["socket"]' <"$st/eosd.json")
}

stop_eosd() {
	kill -TERM "$eosd_pid"
	wait "$eosd_pid" 2>/dev/null
}

# call SURFACE/OP BODY: $status is the HTTP status, $body the reply.
call() {
	local surface=${1%%/*}
	status=$(curl -sS --unix-socket "$SOCK" -o "$T/body" -w '%{http_code}' \
		-H "Authorization: Bearer $(cat "$ST/tokens/$surface")" \
		--data-binary "$2" "http://eosd/v1/$1")
	body=$(cat "$T/body")
}

field() {
	json_get "$1" <<<"$body"
}

expect_call() {
	if [[ $status == "$1" ]]; then
		ok "$2"
	else
		not_ok "$2"
		diag "expected HTTP $1, got $status: $body"
	fi
}

eosctl() {
	"$EOSCTL_BIN" --state-dir "$ST" "$@"
}

# The trace $1 into $T/trace.json (eosctl trace ID --json).
get_trace() {
	eosctl --json trace "$1" >"$T/trace.json" 2>"$T/trace.err"
}

# span_status PATH: the status of the span at PATH (names joined by /, from the root) in
# $T/trace.json, or "missing".
span_status() {
	python3 - "$1" "$T/trace.json" <<'EOF'
import json, sys
path, doc = sys.argv[1].split("/"), json.load(open(sys.argv[2]))
nodes, node = doc["spans"], None
for name in path:
    node = next((n for n in nodes if n["name"] == name), None)
    if node is None:
        print("missing")
        sys.exit(0)
    nodes = node["children"]
print(node["status"])
EOF
}

# The names of the events of the trace, in order, comma-separated.
trace_events() {
	python3 - "$T/trace.json" <<'EOF'
import json, sys
def walk(nodes):
    for n in nodes:
        for e in n["events"]:
            yield e
        yield from walk(n["children"])
evs = sorted(walk(json.load(open(sys.argv[1]))["spans"]), key=lambda e: e["time_ns"])
print(",".join(e["name"] for e in evs))
EOF
}

sess() {
	printf '{"sandbox_id":"sb","args":{"workspace_session_id":"%s"%s}}' "$1" "${2:+,$2}"
}

mkdir -p "$T/src/dir"
printf 'one\ntwo\nthree\n' >"$T/src/a.txt"
printf 'bee\n' >"$T/src/dir/b.txt"

# --- every reply carries its trace id -----------------------------------------------------------
start_eosd "$T/state"
call management/create_sandbox "{\"args\":{\"source\":\"$T/src\",\"id\":\"sb\"}}"
expect_call 200 "create_sandbox"
check "... its reply carries a trace_id of 32 hex digits" \
	test "$(field 'len(d["trace_id"]) == 32 and int(d["trace_id"], 16) >= 0')" = true
call runtime/file_read '{"sandbox_id":"sb","args":{"path":"nope"}}'
check "an error envelope carries the trace_id too" \
	test "$(field 'len(d["error"]["trace_id"])')" = 32

# --- events --follow: a new event reaches the follower -------------------------------------------
"$EOSCTL_BIN" --state-dir "$ST" --json events --follow --last-n 1 >"$T/follow.out" \
	2>"$T/follow.err" &
follower=$!
track_pid "$follower"
for ((i = 0; i < 600; i++)); do
	grep -q sandbox.created "$T/follow.out" && break
	sleep 0.05
done
check "events --follow first prints what came before (sandbox.created)" \
	grep -q '"name":"sandbox.created"' "$T/follow.out"
t0=$(date +%s%N)
call runtime/create_workspace_session "$(sess w1)"
t1=$(date +%s%N)
for ((i = 0; i < 1000; i++)); do
	grep -q workspace_session.created "$T/follow.out" && break
	sleep 0.01
done
t2=$(date +%s%N)
check "... then the new workspace_session.created, while the stream stays open" \
	grep -q '"name":"workspace_session.created".*"workspace_session_id":"w1"' "$T/follow.out"
diag "the event reached the follower within $(((t2 - t1) / 1000000)) ms of the reply" \
	"(the call took $(((t1 - t0) / 1000000)) ms; a measure, not a check)"
check "... each event as one JSON line" python3 -c '
import json, sys
[json.loads(l) for l in open(sys.argv[1]) if l.strip()]' "$T/follow.out"
fs_mounts+=("$(json_get 'd["mount_path"]' <<<"$body")")

# --- a publish ------------------------------------------------------------------------------------
call runtime/create_workspace_session "$(sess w2)"
fs_mounts+=("$(field 'd["mount_path"]')")
call runtime/file_write "$(sess w1 '"path":"a.txt","content":"one\nTWO\nthree\n"')"
call runtime/publish_workspace_session "{\"request_id\":\"pub-1\",\"sandbox_id\":\"sb\",\"args\":{\"workspace_session_id\":\"w1\"}}"
expect_call 200 "publish w1"
PUB=$(field 'd["trace_id"]')
get_trace "$PUB"
check "trace of the publish: the root daemon.dispatch, completed" \
	test "$(span_status daemon.dispatch)" = completed
check "... its operation and request id" test "$(json_get \
	'd["spans"][0]["attributes"]["operation"] + " " + d["spans"][0]["attributes"]["request_id"]' \
	<"$T/trace.json")" = "publish_workspace_session pub-1"
check "... → workspace_session.finalize, completed" \
	test "$(span_status daemon.dispatch/workspace_session.finalize)" = completed
check "... → workspace_session.capture_changes" \
	test "$(span_status daemon.dispatch/workspace_session.finalize/workspace_session.capture_changes)" = completed
for ph in prepare lock_wait check merge commit; do
	check "... → layerstack.publish → layerstack.publish.$ph, completed" test "$(span_status \
		"daemon.dispatch/workspace_session.finalize/layerstack.publish/layerstack.publish.$ph")" = completed
done
check "... its events: layer.published, workspace_session.published, the lease moved" \
	test "$(trace_events)" = \
	layer.published,workspace_session.published,lease.released,lease.acquired
check "... offsets from the trace's start: the phases in order" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
pub = d["spans"][0]["children"][0]["children"]
p = next(n for n in pub if n["name"] == "layerstack.publish")["children"]
offs = [n["offset_ms"] for n in p]
assert offs == sorted(offs) and offs[0] >= 0, offs' "$T/trace.json"

# --- a rejected publish ---------------------------------------------------------------------------
call runtime/file_write "$(sess w2 '"path":"a.txt","content":"one\nzwei\nthree\n"')"
call runtime/publish_workspace_session "$(sess w2)"
expect_call 409 "a conflicting publish of w2 is rejected"
REJ=$(field 'd["error"]["trace_id"]')
get_trace "$REJ"
check "trace of the rejection: daemon.dispatch, error" test "$(span_status daemon.dispatch)" = error
check "... kind publish_rejected" \
	test "$(json_get 'd["spans"][0]["attributes"]["kind"]' <"$T/trace.json")" = publish_rejected
check "... → workspace_session.finalize, error" \
	test "$(span_status daemon.dispatch/workspace_session.finalize)" = error
check "... → layerstack.publish, error" \
	test "$(span_status daemon.dispatch/workspace_session.finalize/layerstack.publish)" = error
check "... whose check ran" test "$(span_status \
	daemon.dispatch/workspace_session.finalize/layerstack.publish/layerstack.publish.check)" = completed
check "... and which committed nothing: no merge, no commit span" test "$(span_status \
	daemon.dispatch/workspace_session.finalize/layerstack.publish/layerstack.publish.commit)" = missing
check "... its event: workspace_session.publish_rejected" \
	test "$(trace_events)" = workspace_session.publish_rejected

# --- a squash ----------------------------------------------------------------------------------------
for n in 1 2; do
	call runtime/file_write "{\"sandbox_id\":\"sb\",\"args\":{\"path\":\"h$n.txt\",\"content\":\"$n\\n\"}}"
done
call runtime/destroy_workspace_session "$(sess w1)"
call management/squash_layerstacks '{"sandbox_id":"sb"}'
expect_call 200 "squash_layerstacks"
get_trace "$(field 'd["trace_id"]')"
check "trace of the squash: daemon.dispatch → layerstack.squash, completed" \
	test "$(span_status daemon.dispatch/layerstack.squash)" = completed
check "... → layerstack.squash.plan" \
	test "$(span_status daemon.dispatch/layerstack.squash/layerstack.squash.plan)" = completed
check "... → layerstack.squash.write" \
	test "$(span_status daemon.dispatch/layerstack.squash/layerstack.squash.write)" = completed
check "... its event: layerstack.squashed" test "$(trace_events)" = layerstack.squashed

# --- a destroy ---------------------------------------------------------------------------------------
call runtime/destroy_workspace_session "$(sess w2)"
expect_call 200 "destroy w2"
DES=$(field 'd["trace_id"]')
get_trace "$DES"
check "trace of the destroy: daemon.dispatch → workspace_session.destroy, completed" \
	test "$(span_status daemon.dispatch/workspace_session.destroy)" = completed
check "... its events: lease.released, workspace_session.destroyed" \
	test "$(trace_events)" = lease.released,workspace_session.destroyed
run eosctl --json trace --last
check "trace --last is the destroy's (observability calls are not counted)" \
	test "$(json_get 'd["trace_id"]' <<<"$out")" = "$DES"
run eosctl --json trace 0123456789abcdef0123456789abcdef
expect_rc_match 1 err not_found "an unknown trace id: not_found, exit 1"

# --- events ---------------------------------------------------------------------------------------------
run eosctl --json events --name lease. --last-n 100
check "events --name lease.: only lease events" \
	test "$(json_get 'sorted(set(e["name"] for e in d["events"]))' <<<"$out")" = \
	'["lease.acquired", "lease.released"]'
check "... oldest first" json_get \
	'[e["time_ns"] for e in d["events"]] == sorted(e["time_ns"] for e in d["events"]) or exit(1)' \
	<<<"$out"
run eosctl --json events --last-n 2
check "events --last-n 2: the newest two" test "$(json_get \
	'[e["name"] for e in d["events"]]' <<<"$out")" = \
	'["lease.released", "workspace_session.destroyed"]'
run eosctl --json events --since 1h --name layer.published
check "events --since 1h: the three layers published" \
	test "$(json_get 'len(d["events"])' <<<"$out")" = 3
run eosctl --json events --since 2200-01-01T00:00:00Z
check "events --since a time to come: none" test "$(json_get 'len(d["events"])' <<<"$out")" = 0
run eosctl --json events --since yesterday
expect_rc_match 1 err "since" "events --since with no time in it is refused, naming it"

# --- snapshot, layerstack, cgroup ----------------------------------------------------------------------------
call runtime/create_workspace_session "$(sess w3)"
fs_mounts+=("$(field 'd["mount_path"]')")
call runtime/file_write "$(sess w3 '"path":"new.txt","content":"n\n"')"
run eosctl --json snapshot
check "snapshot: the daemon's pid, threads and requests" test "$(json_get \
	'd["daemon"]["pid"] == '"$eosd_pid"' and d["daemon"]["threads"] > 0 and d["daemon"]["requests_served"] > 10' \
	<<<"$out")" = true
check "... sandbox sb, ok, its head, layers and lease" test "$(json_get \
	'[(s["status"], s["head"], s["layer_count"] > 0, [l["name"] for l in s["leases"]]) for s in d["sandboxes"]]' \
	<<<"$out")" = '[["ok", "L000004", true, ["session:w3"]]]'
check "... session w3 live with its delta" test "$(json_get \
	'[(w["state"], w["delta"]["paths"]) for w in d["sandboxes"][0]["sessions"]]' \
	<<<"$out")" = '[["live", 1]]'
run eosctl --json snapshot --sandbox nope
expect_rc_match 1 err not_found "snapshot --sandbox of a missing sandbox: not_found"
run eosctl --json layers sb --session w3
check "layerstack: each layer's bytes, logical and stored" test "$(json_get \
	'all(isinstance(l["stored_bytes"], int) and l["bytes"] >= 0 for l in d["layers"])' \
	<<<"$out")" = true
check "... the squashed range folded into the head" test "$(json_get \
	'[l["squashed"] for l in d["layers"] if l["squashed"]][0]["to"]' <<<"$out")" = L000003
check "... the lease of w3 on the head, held by w3" test "$(json_get \
	'[x["workspace_session_id"] for l in d["layers"] for x in l["leases"]]' <<<"$out")" = '["w3"]'
check "... w3's base and delta" test "$(json_get \
	'[d["session"]["base_version"], d["session"]["delta"]["changed"]]' <<<"$out")" = \
	'["L000004", ["new.txt"]]'
run eosctl --json cgroup session w3
if ((EUID != 0)) && [[ -d /sys/fs/cgroup/unified ]] && [[ -z $(cat /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null) ]]; then
	check "cgroup as uid $EUID on a v1/v2 hybrid: answered, unavailable" \
		test "$(json_get 'd["status"]' <<<"$out")" = unavailable
	check "... saying why" grep -q "not writable\|not delegated" <<<"$out"
	diag "$(json_get 'd["reason"]' <<<"$out")"
elif ((EUID == 0)); then
	check "cgroup as root: available, no samples while no command runs" test "$(json_get \
		'[d["status"], d["sampling"], d["samples"]]' <<<"$out")" = '["available", false, []]'
else
	check "cgroup: answered (available or unavailable with a reason)" \
		test "$rc" = 0
fi

# --- an implicit exec: its spans and events; cgroup samples while a command runs ------------------
call management/create_sandbox "{\"args\":{\"source\":\"$T/src\",\"id\":\"sx\"}}"
call runtime/exec_command '{"sandbox_id":"sx","args":{"cmd":"echo x > made.txt","yield_time_ms":10000}}'
expect_call 200 "an implicit exec_command"
check "... completed and published" test "$(field '[d["status"], d["publish"]["status"]]')" = \
	'["completed", "published"]'
get_trace "$(field 'd["trace_id"]')"
check "trace of the exec: daemon.dispatch → command.exec, completed" \
	test "$(span_status daemon.dispatch/command.exec)" = completed
check "... → workspace_session.create → view.mount" \
	test "$(span_status daemon.dispatch/command.exec/workspace_session.create/view.mount)" = completed
check "... → workspace_session.create → namespace.launch" test "$(span_status \
	daemon.dispatch/command.exec/workspace_session.create/namespace.launch)" = completed
check "... → namespace.exec.run_shell, completed" \
	test "$(span_status daemon.dispatch/command.exec/namespace.exec.run_shell)" = completed
check "... → command.finalize → workspace_session.finalize → layerstack.publish" test "$(span_status \
	daemon.dispatch/command.exec/command.finalize/workspace_session.finalize/layerstack.publish)" = completed
check "... its events: the session made, the command started and exited, the layer published" \
	python3 -c 'import sys; e = sys.argv[1].split(","); need = ["workspace_session.created",
"command.started", "command.exited", "layer.published", "workspace_session.destroyed"]
sys.exit(0 if all(n in e for n in need) and e.index("command.started") < e.index("command.exited")
	 else 1)' "$(trace_events)"
call runtime/create_workspace_session '{"sandbox_id":"sx","args":{"workspace_session_id":"busy"}}'
call runtime/exec_command '{"sandbox_id":"sx","args":{"workspace_session_id":"busy","cmd":"timeout 3 sh -c \"while :; do :; done\"","yield_time_ms":2600}}'
check "a busy command yields" test "$(field 'd["status"]')" = running
run eosctl --json cgroup session busy
if ((EUID == 0)); then
	check "cgroup as root while it runs: samples with cpu time" test "$(json_get \
		'[d["status"], len(d["samples"]) > 0, max(s["cpu_usec"] for s in d["samples"]) > 0]' \
		<<<"$out")" = '["available", true, true]'
else
	check "cgroup as uid $EUID while it runs: answered" test "$rc" = 0
fi

# --- eosctl's drawings ----------------------------------------------------------------------------
run eosctl --text trace "$PUB"
check "eosctl trace ID --text: a waterfall of bars" \
	grep -q '^ *[0-9.]* *[0-9.]* |[ =]*| *layerstack.publish.commit' <<<"$out"
check "... the events at their place" grep -q '\* layer.published' <<<"$out"
check "... without the JSON's trace_id line, with the id in its header" \
	grep -q "^trace $PUB" <<<"$out"
run eosctl --text events --last-n 3
check "eosctl events --text: one line each" test "$(wc -l <<<"$out")" = 3
run eosctl --text layers sb
check "eosctl layers SANDBOX --text: a timeline, the head first" \
	grep -q '^@ L000004 (head)' <<<"$out"
check "... down to the base" grep -q '^o L000001' <<<"$out"
run eosctl --text snapshot
check "eosctl snapshot --text: the sessions' table" grep -q '^  w3 *live' <<<"$out"
run eosctl --text top --count 1
check "eosctl top --count 1 (not a terminal): one frame" grep -q '^  w3 *live' <<<"$out"
run eosctl --json top --count 2 --interval 1
check "eosctl top --json --count 2: two snapshots, one JSON line each" \
	test "$(grep -c '"sandboxes"' <<<"$out")" = 2
if command -v script >/dev/null; then
	run timeout 20 script -qec "$EOSCTL_BIN --state-dir $ST top --interval 1" /dev/null <<<q
	check "eosctl top on a terminal quits on q" test "$rc" = 0
	check "... after drawing the screen" grep -q 'q quits' <<<"$out"
fi

# --- a follower that leaves is let go -----------------------------------------------------------------
sockets() {
	find "/proc/$eosd_pid/fd" -lname 'socket:*' 2>/dev/null | wc -l
}
before=$(sockets)
curl -sN --unix-socket "$SOCK" -H "Authorization: Bearer $(cat "$ST/tokens/observability")" \
	-H 'Accept: text/event-stream' --data '{"args":{"follow":true,"last_n":1}}' \
	http://eosd/v1/observability/events >"$T/curl-follow.out" 2>&1 &
cf=$!
track_pid "$cf"
for ((i = 0; i < 600; i++)); do
	grep -q '^event: event' "$T/curl-follow.out" && break
	sleep 0.05
done
check "a curl follower gets the stream" grep -q '^event: event' "$T/curl-follow.out"
kill "$cf"
wait "$cf" 2>/dev/null
for ((i = 0; i < 200; i++)); do
	(($(sockets) <= before)) && break
	sleep 0.05
done
check "... once it has left, eosd holds no socket more than before it came" \
	test "$(sockets)" -le "$before"

# --- the follower, a restart --------------------------------------------------------------------------
check "the follower saw every session event since (w1, w2, the implicit exec's)" \
	test "$(grep -c '"workspace_session\.destroyed"' "$T/follow.out")" = 3
stop_eosd
wait "$follower"
check "SIGTERM ends events --follow: exit 0" test "$?" = 0
start_eosd "$T/state"
run eosctl --json trace "$PUB"
check "after a restart the publish's trace is still there" \
	test "$(json_get 'd["spans"][0]["children"][0]["name"]' <<<"$out")" = \
	workspace_session.finalize
stop_eosd

# --- a telemetry writer held: a publish completes --------------------------------------------------------
if grep -q '^#define EOS_FAILPOINTS 1' "$top_builddir/config.h" 2>/dev/null; then
	start_eosd "$T/held" "EOS_FAILPOINTS=obs.flush=wait:$T/go"
	call management/create_sandbox "{\"args\":{\"source\":\"$T/src\",\"id\":\"sb\"}}"
	for ((i = 0; i < 1200; i++)); do
		[[ -e $T/go.waiting ]] && break
		sleep 0.05
	done
	check "held: the telemetry writer waits at the failpoint" test -e "$T/go.waiting"
	call runtime/create_workspace_session "$(sess w1)"
	fs_mounts+=("$(field 'd["mount_path"]')")
	call runtime/file_write "$(sess w1 '"path":"a.txt","content":"held\n"')"
	call runtime/publish_workspace_session "$(sess w1)"
	expect_call 200 "... while it is held, a publish completes"
	HELD=$(field 'd["trace_id"]')
	call observability/snapshot '{}'
	check "... snapshot answers too: nothing written yet, records queued" test "$(field \
		'[d["daemon"]["telemetry"]["written"], d["daemon"]["telemetry"]["queued"] > 0]')" = \
		'[0, true]'
	check "... the writer is still held" not test -e "$T/go"
	touch "$T/go"
	run eosctl --json trace "$HELD"
	check "released: the publish's trace is written" test "$(json_get \
		'd["spans"][0]["children"][0]["name"]' <<<"$out")" = workspace_session.finalize
	stop_eosd
else
	ok "# SKIP held: this build has no failpoints (--enable-failpoints)"
fi

# --- retention ------------------------------------------------------------------------------------------
start_eosd "$T/ret" -- --obs-max-records 32
call observability/ping '{}'
FIRST=$(field 'd["trace_id"]')
for ((i = 0; i < 60; i++)); do
	call observability/ping '{}'
done
LAST=$(field 'd["trace_id"]')
call observability/snapshot '{}'
check "retention: at most 32 records kept" test "$(field \
	'd["daemon"]["telemetry"]["stored_records"] <= 32')" = true
check "... the oldest were dropped (counted)" test "$(field \
	'd["daemon"]["telemetry"]["trimmed"] > 0')" = true
run eosctl --json trace "$FIRST"
expect_rc_match 1 err not_found "... the first ping's trace is gone"
run eosctl --json trace "$LAST"
check "... the last one's is kept" test "$(json_get 'd["trace_id"]' <<<"$out")" = "$LAST"
stop_eosd

rerun_as_test_user "$0"
tap_done
