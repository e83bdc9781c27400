#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Restart and recovery (issue 10): eosd is SIGKILLed at random moments during an import
# (create_sandbox of a large tree), a live publish, a squash, a fork and a burst of file_write,
# EOS_RESTART_RUNS times each (default 5), and started again by the next eosctl command at once
# (the killed eosd may still be exiting). After every restart: every acknowledged operation (the
# client got a 200 before the kill) is there, every explicit session is served again with its
# whole delta, its dead FUSE mounts detached and remounted (its extra mount too), and
# inspect_workspace_session reports it live with its delta; after each kind, with eosd stopped,
# `eos-store fsck` is clean. Operations go through curl on eosd's socket; restarts through eosctl.
# As root, and again as the unprivileged user. EOS_RESTART_KINDS picks some of the kinds.
#
# eosd's file operations go through the view's path API, never through its own mounts, so a kill
# during a file_write burst cannot leave the killed eosd waiting on itself: the burst runs for
# every user.

# Helpers run only through `check` or in the background, which shellcheck cannot follow.
# shellcheck disable=SC2317

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=fs-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/fs-lib.sh"

EOSCTL_BIN=$top_builddir/cli/eosctl
RUNS=${EOS_RESTART_RUNS:-5}
KINDS=${EOS_RESTART_KINDS:-import publish squash fork write}

require_eos_store
tap_tmpdir
fs_require
[[ -x $EOSCTL_BIN && -x $top_builddir/supervisor/eosd ]] ||
	bail_out "eosctl or eosd is missing (build them; set top_builddir)"
command -v curl >/dev/null || bail_out "curl is needed to talk to eosd"

export EOS_STATE_DIR=$T/state EOS_RUNTIME_DIR=$T/run
unset EOS_STORE EOS_OPERATION EOS_NO_AUTOSTART
ST=$EOS_STATE_DIR
SOCK=$(eosd_runtime_dir "$EOS_STATE_DIR")/eosd.sock
VIEWS=$(eosd_runtime_dir "$EOS_STATE_DIR")/sessions/sb
sessions=()  # every explicit session that must survive
published=() # "path content" of every acknowledged publish
imported=()  # every acknowledged import

eosctl() {
	"$EOSCTL_BIN" --json "$@"
}

# The pid eosd.json names, or nothing.
eosd_pid() {
	sed -n 's/.*"pid": *\([0-9]*\).*/\1/p' "$ST/eosd.json" 2>/dev/null
}

stop_eosd() {
	local pid
	pid=$(eosd_pid)
	[[ -n $pid ]] && pid_runs "$pid" eosd && kill -9 "$pid" 2>/dev/null
	fs_cleanup
	return 0
}
trap 'stop_eosd; tap_cleanup' EXIT

# call SURFACE OP BODY [OUT]: POST /v1/SURFACE/OP, prints the HTTP status (000 when the
# connection failed); the reply goes to file OUT (default $T/body).
call() {
	local token
	token=$(cat "$ST/tokens/$1")
	curl -sS --unix-socket "$SOCK" -o "${4:-$T/body}" -w '%{http_code}' \
		-H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
		--data-binary "$3" "http://eosd/v1/$1/$2" 2>/dev/null
}

sess() {
	printf '{"sandbox_id":"sb","args":{"workspace_session_id":"%s"%s}}' "$1" "${2:+,$2}"
}

# A large tree: ~24 MB in 2 000 small files and a few large ones.
make_trees() {
	mkdir -p "$T/src/dir" "$T/m-keep"
	printf 'one\ntwo\nthree\n' >"$T/src/a.txt"
	printf 'bee\n' >"$T/src/dir/b.txt"
	python3 - "$T/big" <<'EOF'
import os, random, sys
root = sys.argv[1]
rnd = random.Random(10)
for d in range(20):
    os.makedirs(f"{root}/d{d}")
    for f in range(100):
        with open(f"{root}/d{d}/f{f}.txt", "wb") as out:
            out.write(rnd.randbytes(rnd.randint(1000, 8000)))
for f in range(4):
    with open(f"{root}/large{f}.bin", "wb") as out:
        out.write(rnd.randbytes(4 << 20))
EOF
	big_files=$(find "$T/big" -type f | wc -l)
	big_entries=
}

# Start eosd through eosctl (it starts one when none answers) and remember its pid.
restart() {
	run eosctl daemon ping
	pid=$(eosd_pid)
	[[ $rc == 0 && -n $pid ]]
}

# SIGKILL eosd, and let the next command start it again at once (no waiting for the old one).
kill_and_restart() {
	kill -9 "$pid"
	if ! restart; then
		not_ok "after SIGKILL ($1), the next eosctl command starts eosd again"
		show_run
		diag "$(tail -n 5 "$ST/eosd.log")"
		return 1
	fi
}

# A random moment in [0, $1) ms.
sleep_random() {
	sleep_ms $((RANDOM % $1))
}

setup() {
	make_trees
	restart || bail_out "eosd did not start: $err $(cat "$ST/eosd.log" 2>/dev/null)"
	[[ $(call management create_sandbox \
		"{\"args\":{\"id\":\"sb\",\"source\":\"$T/src\"}}") == 200 ]] ||
		bail_out "create_sandbox sb: $(cat "$T/body")"
	for s in w-keep w-burst; do
		[[ $(call runtime create_workspace_session "$(sess "$s")") == 200 ]] ||
			bail_out "create session $s: $(cat "$T/body")"
		sessions+=("$s")
	done
	echo kept >"$VIEWS/w-keep/kept.txt"
	mkdir "$VIEWS/w-keep/new-dir" && echo deep >"$VIEWS/w-keep/new-dir/deep.txt"
	echo changed >>"$VIEWS/w-keep/a.txt"
	[[ $(call runtime mount_workspace_session "$(sess w-keep "\"path\":\"$T/m-keep\"")") == 200 ]] ||
		bail_out "mount w-keep at $T/m-keep: $(cat "$T/body")"
}

# Session $1's view at path $2 holds its whole delta (the w-keep changes).
has_keep_delta() {
	grep -qx kept "$2/kept.txt" && grep -qx deep "$2/new-dir/deep.txt" &&
		[[ $(tail -n 1 "$2/a.txt") == changed ]]
}

# Every explicit session is listed, reported live, and w-keep is served with its delta at its
# runtime path and its extra mount.
sessions_served() {
	local s listed
	[[ $(call runtime list_workspace_sessions '{"sandbox_id":"sb"}') == 200 ]] || return 1
	listed=$(json_get '" ".join(sorted(x["workspace_session_id"] + ":" + x["state"]
		for x in d["sessions"]))' <"$T/body")
	for s in "${sessions[@]}"; do
		[[ " $listed " == *" $s:live "* ]] ||
			{ diag "session $s is not listed live: $listed" && return 1; }
	done
	if ! has_keep_delta w-keep "$VIEWS/w-keep" || ! has_keep_delta w-keep "$T/m-keep"; then
		diag "w-keep is not served with its delta"
		return 1
	fi
	[[ $(call runtime inspect_workspace_session "$(sess w-keep)") == 200 ]] &&
		[[ $(json_get '[d["state"], d["delta"]["paths"] >= 3]' <"$T/body") == '["live", true]' ]]
}

# Every acknowledged publish is at the head, and every acknowledged import is complete.
acked_present() {
	local p path content sb
	for p in "${published[@]}"; do
		path=${p%% *} content=${p#* }
		[[ $(call runtime file_read "{\"sandbox_id\":\"sb\",\"args\":{\"path\":\"$path\"}}") == 200 &&
			$(json_get 'd["content"]' <"$T/body") == "$content" ]] ||
			{ diag "published $path is not at the head: $(cat "$T/body")" && return 1; }
	done
	for sb in "${imported[@]}"; do
		[[ $(call management inspect_sandbox "{\"sandbox_id\":\"$sb\"}") == 200 &&
			$(json_get 'd["layer_list"][0]["created"]' <"$T/body") == "$big_entries" ]] ||
			{ diag "imported $sb is not complete: $(cat "$T/body")" && return 1; }
	done
}

after_restart() {
	check "$1: every explicit session served again with its whole delta, mounts remounted" \
		sessions_served
	check "$1: every acknowledged publish and import is there" acked_present
}

# Stop eosd, fsck the store offline, start eosd again.
fsck_offline() {
	run eosctl daemon stop
	run eos_store --store "$ST/store" --json fsck
	if [[ $rc == 0 && $out == *'"clean": true'* ]]; then
		ok "after the kills during $1: fsck clean with eosd stopped"
	else
		not_ok "after the kills during $1: fsck clean with eosd stopped"
		show_run
	fi
	restart || bail_out "eosd did not start again: $err"
}

# --- the rounds: each runs the operation in the background, kills eosd at a random moment ------

# One full import, timed, to spread the kills over an import.
measure_import() {
	local t0
	t0=$(date +%s%N)
	[[ $(call management create_sandbox \
		"{\"args\":{\"id\":\"imp-0\",\"source\":\"$T/big\"}}") == 200 ]] ||
		bail_out "a plain import failed: $(cat "$T/body")"
	import_ms=$((($(date +%s%N) - t0) / 1000000 + 1))
	big_entries=$(json_get 'd["files"] + d["dirs"]' <"$T/body")
	imported+=(imp-0)
	diag "an import of the large tree ($big_files files) takes ${import_ms} ms"
}

round_import() {
	local sb=imp-$1 bg st
	call management create_sandbox "{\"args\":{\"id\":\"$sb\",\"source\":\"$T/big\"}}" \
		"$T/bg.body" >"$T/bg.status" &
	bg=$!
	sleep_random $((import_ms * 12 / 10))
	kill_and_restart "import" || return 1
	wait "$bg"
	st=$(cat "$T/bg.status")
	[[ $st == 200 ]] && imported+=("$sb")
	diag "import $sb: HTTP $st before the kill"
}

round_publish() {
	local s=pub-$1 bg st content="published $1"
	[[ $(call runtime create_workspace_session "$(sess "$s")") == 200 ]] || return 1
	sessions+=("$s")
	[[ $(call runtime file_write "$(sess "$s" "\"path\":\"p$1.txt\",\"content\":\"$content\"")") == 200 ]] ||
		return 1
	call runtime publish_workspace_session "$(sess "$s")" "$T/bg.body" >"$T/bg.status" &
	bg=$!
	sleep_random 40
	kill_and_restart "publish" || return 1
	wait "$bg"
	st=$(cat "$T/bg.status")
	[[ $st == 200 ]] && published+=("p$1.txt $content")
	diag "publish $s: HTTP $st before the kill"
	# acknowledged or not, the change is somewhere: at the head, or still in the session
	check "publish $1: p$1.txt is at the head or still in the session" \
		grep -qx "$content" "$VIEWS/$s/p$1.txt"
}

round_squash() {
	local bg st
	call management squash_layerstacks '{"sandbox_id":"sb"}' "$T/bg.body" >"$T/bg.status" &
	bg=$!
	sleep_random 40
	kill_and_restart "squash" || return 1
	wait "$bg"
	st=$(cat "$T/bg.status")
	diag "squash $1: HTTP $st before the kill"
}

round_fork() {
	local f=fork-$1 bg st
	call runtime fork_workspace_session "$(sess w-keep "\"new_workspace_session_id\":\"$f\"")" \
		"$T/bg.body" >"$T/bg.status" &
	bg=$!
	sleep_random 40
	kill_and_restart "fork" || return 1
	wait "$bg"
	st=$(cat "$T/bg.status")
	diag "fork $f: HTTP $st before the kill"
	if [[ $st == 200 ]]; then
		sessions+=("$f")
		check "fork $1 (acknowledged): served with the whole delta" has_keep_delta "$f" "$VIEWS/$f"
	elif [[ -d $VIEWS/$f ]]; then
		check "fork $1 (not acknowledged, but there): the whole fork" has_keep_delta "$f" "$VIEWS/$f"
	fi
}

# A burst of file_write in w-burst; every one that answered 200 must be there after.
burst() {
	local j
	for ((j = 0; ; j++)); do
		[[ $(call runtime file_write \
			"$(sess w-burst "\"path\":\"burst/$1-$j.txt\",\"content\":\"$1-$j\"")" \
			"$T/burst.body") == 200 ]] || break
		echo "$j" >>"$T/burst-acked-$1"
	done
}

round_write() {
	local bg j missing=0
	: >"$T/burst-acked-$1"
	burst "$1" &
	bg=$!
	sleep_ms $((20 + RANDOM % 200))
	kill_and_restart "file_write burst" || return 1
	wait "$bg"
	while read -r j; do
		grep -qx "$1-$j" "$VIEWS/w-burst/burst/$1-$j.txt" 2>/dev/null || missing=$((missing + 1))
	done <"$T/burst-acked-$1"
	check "burst $1: all $(wc -l <"$T/burst-acked-$1") acknowledged writes are in the session" \
		test "$missing" = 0
}

main() {
	local kind i
	setup
	measure_import
	for kind in $KINDS; do
		for ((i = 1; i <= RUNS; i++)); do
			"round_$kind" "$i" ||
				{ not_ok "$kind $i: the round could not run" && diag "$(cat "$T/body")"; }
		done
		after_restart "$RUNS kills during $kind"
		fsck_offline "$kind"
	done
	after_restart "the end"
	run eosctl daemon stop
	expect_rc 0 "eosd stops"
	check "... and removes eosd.json" not test -e "$ST/eosd.json"
	check "... and unmounts every view" not fs_is_mounted "$T/m-keep"
	rerun_as_test_user "$0"
	tap_done
}

main "$@"
