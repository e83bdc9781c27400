#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Workspace sessions and file operations through a real eosd, driven with curl over its Unix
# socket: create, list, inspect, file read/write/edit/list in a session and at the head, blame
# owners, refusals ('..', absolute, a symlink leading out, an edit matching twice or nowhere,
# a missing session), a second mount, fork isolation, a live publish while a process keeps a
# file open and writing in the mounted session (it then reads the merged head), a rejected
# publish, destroy, and SIGKILL of eosd then restart: every session served again with its
# delta, its dead mounts detached and remounted.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/fs-lib.sh"

EOSD_BIN=$top_builddir/supervisor/eosd

require_eos_store
tap_tmpdir
fs_require
[[ -x $EOSD_BIN ]] || bail_out "'$EOSD_BIN' is missing (build it; set top_builddir)"
command -v curl >/dev/null || bail_out "curl is needed to talk to eosd"

ST=$T/state
export EOS_RUNTIME_DIR=$T/run
unset EOS_STORE EOS_OPERATION
eosd_pid=

setup() {
	mkdir -p "$T/src/dir" "$T/m2" "$T/full"
	printf 'one\ntwo\nthree\n' >"$T/src/a.txt"
	printf 'bee\n' >"$T/src/dir/b.txt"
	printf 'x\n' >"$T/full/junk"
	mkdir -p "$ST" && chmod 0700 "$ST"
	fs_import "$ST/store" sb "$T/src" || bail_out "import failed"
}

start_eosd() {
	local i
	rm -f "$ST/eosd.json"
	"$EOSD_BIN" --state-dir "$ST" -f >>"$T/eosd.log" 2>&1 &
	eosd_pid=$!
	track_pid "$eosd_pid"
	for ((i = 0; i < 1200; i++)); do
		[[ -s $ST/eosd.json ]] && break
		kill -0 "$eosd_pid" 2>/dev/null || break
		sleep 0.05
	done
	[[ -s $ST/eosd.json ]] || bail_out "eosd did not start: $(cat "$T/eosd.log")"
	SOCK=$(json_get 'd["socket"]' <"$ST/eosd.json")
	TOKEN=$(cat "$ST/tokens/runtime")
}

# call OP BODY: POST /v1/runtime/OP; $status is the HTTP status, $body the reply.
call() {
	status=$(curl -sS --unix-socket "$SOCK" -o "$T/body" -w '%{http_code}' \
		-H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
		--data-binary "$2" "http://eosd/v1/runtime/$1")
	body=$(cat "$T/body")
}

# expect_call STATUS DESC: the last call answered STATUS.
expect_call() {
	if [[ $status == "$1" ]]; then
		ok "$2"
	else
		not_ok "$2"
		diag "expected HTTP $1, got $status: $body"
	fi
}

# field EXPR: a value of the last reply (d is the document).
field() {
	json_get "$1" <<<"$body"
}

sess() {
	printf '{"sandbox_id":"sb","args":{"workspace_session_id":"%s"%s}}' "$1" "${2:+,$2}"
}

head_read() {
	call file_read "{\"sandbox_id\":\"sb\",\"args\":{\"path\":\"$1\"}}"
	field 'd["content"]'
}

setup
start_eosd

# --- create, list, inspect ----------------------------------------------------------------------
call create_workspace_session "$(sess w1)"
expect_call 200 "create_workspace_session answers"
MNT=$(field 'd["mount_path"]')
fs_mounts+=("$MNT" "$T/m2")
check "the session is mounted under the runtime dir" fs_is_mounted "$MNT"
check "its mount shows the sandbox" grep -qx two "$MNT/a.txt"
check "the base is the head" test "$(field 'd["base_version"]')" = L000001
call create_workspace_session '{"sandbox_id":"sb","args":{}}'
W2=$(field 'd["workspace_session_id"]')
fs_mounts+=("$(field 'd["mount_path"]')")
check "a session without an id gets ws-<hex>" test "${W2:0:3}" = ws-
call list_workspace_sessions '{"sandbox_id":"sb"}'
check "list shows both sessions" test "$(field 'len(d["sessions"])')" = 2

# --- file operations in a session ----------------------------------------------------------------
call file_write "{\"request_id\":\"op-1\",\"sandbox_id\":\"sb\",\"args\":{\"workspace_session_id\":\"w1\",\"path\":\"n/new.txt\",\"content\":\"new\\n\"}}"
expect_call 200 "file_write in a session"
check "the write is attributed to its operation" test "$(field 'd["owner"]')" = operation:op-1
check "the file is in the view" grep -qx new "$MNT/n/new.txt"
call file_edit "$(sess w1 '"path":"a.txt","edits":[{"old_string":"two","new_string":"TWO"}]')"
expect_call 200 "file_edit in a session"
check "an edit without request_id belongs to the session" \
	test "$(field 'd["owner"]')" = workspace_session:w1
call file_read "$(sess w1 '"path":"a.txt","offset":2,"limit":1')"
check "file_read offset/limit" test "$(field 'd["content"]')" = TWO
check "file_read reports truncated" test "$(field 'd["truncated"]')" = true
call file_list "$(sess w1)"
check "file_list lists the root" test "$(field '[e["name"] for e in d["entries"]]')" = \
	'["a.txt", "dir", "n"]'
check "the head is untouched" test "$(head_read a.txt)" = "$(printf 'one\ntwo\nthree')"
call inspect_workspace_session "$(sess w1)"
check "inspect counts the delta" test "$(field 'd["delta"]["paths"] >= 3')" = true

# --- refusals -------------------------------------------------------------------------------------
ln -s /etc "$MNT/out"
call file_read "$(sess w1 '"path":"out/passwd"')"
expect_call 400 "a symlink leading out is refused"
check "… naming the path" grep -q "out/passwd" <<<"$body"
call file_read "$(sess w1 '"path":"../x"')"
expect_call 400 "'..' is refused"
call file_read '{"sandbox_id":"sb","args":{"path":"/etc/passwd"}}'
expect_call 400 "an absolute path is refused"
call file_edit "$(sess w1 '"path":"a.txt","edits":[{"old_string":"e","new_string":"E"}]')"
expect_call 400 "an edit matching twice is refused"
check "… saying how often it matched" grep -q "matches 3 times" <<<"$body"
call file_edit "$(sess w1 '"path":"a.txt","edits":[{"old_string":"TWO","new_string":"2"},{"old_string":"zzz","new_string":""}]')"
expect_call 400 "an edit matching nowhere is refused"
check "… and no edit applied" grep -qx TWO "$MNT/a.txt"
call file_read "$(sess nope '"path":"a.txt"')"
expect_call 404 "a missing session is not found"

# --- at the head ----------------------------------------------------------------------------------
call file_write '{"request_id":"op-h","sandbox_id":"sb","args":{"path":"h.txt","content":"h\n"}}'
expect_call 200 "file_write at the head"
check "it makes a new version" test "$(field 'd["version"]')" = L000002
call file_blame '{"sandbox_id":"sb","args":{"path":"h.txt"}}'
check "blame names the operation" test "$(field 'd["ranges"][0]["owner"]')" = operation:op-h

# --- a second mount -------------------------------------------------------------------------------
call mount_workspace_session "$(sess w1 "\"path\":\"$T/full\"")"
expect_call 409 "a non-empty directory is refused"
call mount_workspace_session "$(sess w1 "\"path\":\"$T/m2\"")"
expect_call 200 "mount_workspace_session"
check "the second mount shows the same files" grep -qx new "$T/m2/n/new.txt"

# --- fork -----------------------------------------------------------------------------------------
call fork_workspace_session "$(sess w1 '"new_workspace_session_id":"f1"')"
expect_call 200 "fork_workspace_session"
FMNT=$(field 'd["mount_path"]')
fs_mounts+=("$FMNT")
fs_mounts+=("$MNT" "$T/m2")
check "the fork starts from the session's state" grep -qx TWO "$FMNT/a.txt"
echo fork-only >"$FMNT/fork.txt"
check "the fork's writes stay in the fork" test ! -e "$MNT/fork.txt"

# --- publish while a process writes ---------------------------------------------------------------
python3 - "$MNT/log.txt" "$T/stop" "$T/writer.out" "$MNT/h.txt" <<'EOF' &
import os, sys, time
path, stop, report, merged = sys.argv[1:]
n = 0
with open(path, "a") as f:
    while not os.path.exists(stop):
        f.write("line %d\n" % n); f.flush(); n += 1
        time.sleep(0.01)
    f.write("line %d\n" % n); f.flush(); n += 1
with open(report, "w") as r:
    r.write("%d\n" % n)
    r.write(open(merged).read())
EOF
writer=$!
track_pid "$writer"
while [[ ! -s $MNT/log.txt ]]; do sleep 0.05; done
call file_write '{"request_id":"op-g","sandbox_id":"sb","args":{"path":"h.txt","content":"head\n"}}'
call publish_workspace_session "{\"request_id\":\"pub-1\",\"sandbox_id\":\"sb\",\"args\":{\"workspace_session_id\":\"w1\"}}"
expect_call 200 "publish a session that a process is writing in"
check "… published" test "$(field 'd["status"]')" = published
touch "$T/stop"
wait "$writer"
check "the writer finished without an error" test -s "$T/writer.out"
check "the writer read the merged head through its view" grep -qx head "$T/writer.out"
call publish_workspace_session "$(sess w1)"
lines=$(head -1 "$T/writer.out")
call file_read '{"sandbox_id":"sb","args":{"path":"log.txt","limit":1000000}}'
check "every line written reached the head" test "$(field 'd["total_lines"]')" = "$lines"
check "… in order" test "$(field 'd["content"].splitlines()[-1]')" = "line $((lines - 1))"
check "the published edit is at the head" test "$(head_read a.txt | sed -n 2p)" = TWO

# --- a rejected publish ---------------------------------------------------------------------------
call file_edit "$(sess "$W2" '"path":"a.txt","edits":[{"old_string":"two","new_string":"zwei"}]')"
call publish_workspace_session "$(sess "$W2")"
expect_call 409 "a conflicting publish is rejected"
check "… with kind publish_rejected" test "$(field 'd["error"]["kind"]')" = publish_rejected
check "… listing the conflict with its lines" \
	test "$(field 'd["error"]["details"]["conflicts"][0]["path"]')" = a.txt
check "the rejected session is kept as it was" grep -qx zwei "$(eosd_runtime_dir "$ST")/sessions/sb/$W2/a.txt"

# --- SIGKILL and restart --------------------------------------------------------------------------
echo unpublished >"$MNT/kept.txt"
kill -9 "$eosd_pid"
wait "$eosd_pid" 2>/dev/null
check "the killed daemon left a dead mount" not test -e "$MNT/a.txt"
start_eosd
check "the session is mounted again" grep -qx unpublished "$MNT/kept.txt"
check "the fork is served again with its delta" grep -qx fork-only "$FMNT/fork.txt"
check "the second mount is mounted again" grep -qx unpublished "$T/m2/kept.txt"
call inspect_workspace_session "$(sess w1)"
check "inspect reports it live" test "$(field 'd["state"]')" = live
call list_workspace_sessions '{"sandbox_id":"sb"}'
check "every session is listed" test "$(field 'len(d["sessions"])')" = 3

# --- destroy --------------------------------------------------------------------------------------
call unmount_workspace_session "$(sess w1)"
expect_call 200 "unmount_workspace_session"
check "the second mount is gone" not fs_is_mounted "$T/m2"
call destroy_workspace_session "$(sess w1)"
expect_call 200 "destroy_workspace_session"
check "its mount is gone" not fs_is_mounted "$MNT"
call inspect_workspace_session "$(sess w1)"
expect_call 404 "a destroyed session is not found"

kill -TERM "$eosd_pid"
wait "$eosd_pid" 2>/dev/null
check "SIGTERM unmounts every view" not fs_is_mounted "$FMNT"

rerun_as_test_user "$0"
tap_done
