#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# scripts/demo, the README's first command, is a test: it runs through (exit 0) with the built
# binaries, and what it shows is what happened. Its state is kept (EOS_DEMO_DIR) and read again
# through a new eosd: the head holds the changes of all four agents and the tests pass there;
# blame names agent-1's and agent-3's commands (operation:cmd-N, started in their sessions) and
# agent-4's edit on the lines they wrote; agent-4's publish was rejected with its line ranges and
# then its retry published; agent-1's and agent-3's publishes were merged once. Where user
# namespaces are refused, it says so. As root, the same again as the unprivileged user.
# shellcheck disable=SC2317 # helpers called through check and the EXIT trap
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/fs-lib.sh"

EOSCTL_BIN=$top_builddir/cli/eosctl
[[ -x $EOSCTL_BIN ]] || bail_out "'$EOSCTL_BIN' is missing (build it; set top_builddir)"
[[ -x $top_builddir/supervisor/eosd ]] || bail_out "eosd is missing (build it)"
fs_require
command -v python3 >/dev/null || bail_out "python3 is needed"
tap_tmpdir
unset EOS_NO_AUTOSTART XDG_DATA_HOME XDG_RUNTIME_DIR EOS_STORE EOS_STATE_DIR EOS_RUNTIME_DIR

eosctl() {
	"$EOSCTL_BIN" --json "$@"
}

run_demo() {
	run env EOS_DEMO_BUILD=0 EOS_BUILD_DIR="$top_builddir" EOS_DEMO_DIR="$T/keep" \
		timeout -k 10 300 bash "$top_srcdir/scripts/demo"
	expect_rc 0 "scripts/demo runs through as uid $EUID"
	[[ $rc == 0 ]] || diag "$(printf '%s\n' "$out" | tail -n 30)" "$err"
	check "it showed the failing test before the fix" \
		grep -q '^FAIL max_of({-3, -7, -1}) = 0, expected -1$' <<<"$out"
	check "it showed agent-4's rejection with its line ranges" grep -Eq \
		'^    base lines? [0-9-]+, head lines? [0-9-]+, session lines? [0-9-]+$' <<<"$out"
	check "... naming src/stats.c" grep -q '^  conflict: src/stats.c: content: ' <<<"$out"
	export EOS_STATE_DIR EOS_RUNTIME_DIR
	EOS_STATE_DIR=$(echo "$T"/keep/demo.*/state)
	EOS_RUNTIME_DIR=$T/run
	[[ -d $EOS_STATE_DIR ]] || bail_out "the demo kept no state in '$T/keep'"
	trap eosd_cleanup EXIT
}

# The id of the last command session $1 started whose command line matches regex $2.
command_id() {
	eosctl events --sandbox demo --name command.started --last-n 1000 | json_get '([e["attributes"]
["command_session_id"] for e in d["events"] if e["workspace_session_id"] == sys.argv[2] and
re.search(sys.argv[3], e["attributes"]["cmd"])] or [""])[-1]' "$1" "$2"
}

# The owner blame gives the first line of src/stats.c at the head equal to $1, followed by the
# session blame names for it (or -): "operation:cmd-3 agent-1".
owner_of_line() {
	local n
	n=$(eosctl file read src/stats.c --sandbox demo --limit 1000 |
		json_get 'next((i + 1 for i, l in enumerate(d["content"].split("\n")) if l == sys.argv[2]), 0)' "$1")
	eosctl file blame src/stats.c --sandbox demo | json_get 'next((r["owner"] + " " + r.get("workspace_session_id", "-")
for r in d["ranges"] if r["start_line"] <= int(sys.argv[2]) < r["start_line"] + r["line_count"]), "")' "$n"
}

test_head() {
	local stats owners=import s
	for s in 1 2 3 4; do
		owners+=" workspace_session:agent-$s"
	done
	run eosctl sandbox inspect demo
	check "the head is L000005 (the import, three agents, agent-4's retry)" \
		test "$(json_get 'd["head"]' <<<"$out")" = L000005
	check "the layers are the import's and each agent's, agent-4's last" test \
		"$(json_get '(" ".join(sorted(l["owner"] for l in d["layer_list"][:-1])) + " " +
d["layer_list"][-1]["owner"])' <<<"$out")" \
		= "$owners"
	stats=$(eosctl file read src/stats.c --sandbox demo --limit 1000 | json_get 'd["content"]')
	check "src/stats.c at the head has agent-1's fix" grep -qx $'\tint best = v\\[0\\];' <<<"$stats"
	check "... agent-3's min_of" grep -qx 'int min_of(const int \*v, size_t n)' <<<"$stats"
	check "... and agent-4's guard" grep -qx $'\t\treturn INT_MIN;' <<<"$stats"
	check "... and not agent-4's rejected version" not grep -q 'int best = INT_MIN' <<<"$stats"
	run eosctl file read tests/test_mean.c --sandbox demo
	expect_rc 0 "agent-2's test is at the head"
	run "$EOSCTL_BIN" --text exec demo -- make test
	expect_rc 0 "make test passes at the head"
	check "... running the three tests" grep -qz 'ok test_max.ok test_mean.ok test_sum' <<<"$out"
}

test_blame() {
	local fix append mean
	fix=$(command_id agent-1 '^sed') append=$(command_id agent-3 '^cat >>')
	mean=$(command_id agent-2 '^cat >')
	check "agent-1's sed, agent-3's append and agent-2's write ran as commands in their sessions" \
		test -n "$fix" -a -n "$append" -a -n "$mean"
	check "blame: agent-1's fixed line is its command's ($fix), run in agent-1" \
		test "$(owner_of_line $'\tint best = v[0];')" = "operation:$fix agent-1"
	check "blame: agent-3's min_of is its command's ($append), run in agent-3" \
		test "$(owner_of_line 'int min_of(const int *v, size_t n)')" = "operation:$append agent-3"
	check "blame: agent-4's guard is its edit's" \
		test "$(owner_of_line $'\t\treturn INT_MIN;')" = "operation:agent-4-retry -"
	check "blame: an untouched line is the import's" \
		test "$(owner_of_line 'long sum_of(const int *v, size_t n)')" = "original -"
	run eosctl file blame tests/test_mean.c --sandbox demo
	check "blame: agent-2's test is its command's ($mean)" \
		test "$(json_get '" ".join(r["owner"] for r in d["ranges"])' <<<"$out")" = "operation:$mean"
}

# The events of sandbox demo named $1 of the agents' sessions (not the implicit ones of
# `exec` without a session), as "session attribute..." lines ($2: the attributes).
events_of() {
	eosctl events --sandbox demo --name "$1" --last-n 1000 | json_get '"\n".join(
e["workspace_session_id"] + "".join(" " + str(e["attributes"][a]) for a in sys.argv[2].split())
for e in d["events"] if e["workspace_session_id"].startswith("agent-"))' "$2"
}

test_events() {
	local published rejected
	published=$(events_of workspace_session.published 'result merged')
	rejected=$(events_of workspace_session.publish_rejected conflicts)
	check "the three agents published, then agent-4 (published events, in order)" test \
		"$(cut -d' ' -f1 <<<"$published" | head -n 3 | sort | tr '\n' ' ')$(sed -n 4p <<<"$published")" \
		= "agent-1 agent-2 agent-3 agent-4 published 0"
	check "exactly one of agent-1's and agent-3's publishes merged src/stats.c" test \
		"$(grep -Ec '^agent-[13] published 1$' <<<"$published")" = 1
	check "agent-4's first publish was rejected with one conflict" test "$rejected" = "agent-4 1"
	check "the rejection came before agent-4's published retry" test \
		"$(eosctl events --sandbox demo --name workspace_session. --last-n 1000 | json_get '[e["name"]
for e in d["events"] if e["workspace_session_id"] == "agent-4" and "publish" in e["name"]]')" \
		= '["workspace_session.publish_rejected", "workspace_session.published"]'
}

# Where user namespaces are refused (here: a user namespace of the test's own whose
# user.max_user_namespaces is 0), the demo says that commands cannot run in namespaces, with
# eosd's reason and fix, and exits 1.
test_no_namespaces() {
	# shellcheck disable=SC2016 # "$1" is sh's
	run env EOS_DEMO_BUILD=0 EOS_BUILD_DIR="$top_builddir" TMPDIR="$T" timeout -k 10 300 \
		unshare --user --map-root-user --mount --propagation private sh -c \
		'echo 0 >/proc/sys/user/max_user_namespaces && exec bash "$1"' sh \
		"$top_srcdir/scripts/demo"
	expect_rc_match 1 err "demo: commands cannot run in their own namespaces on this machine" \
		"without user namespaces the demo says that commands cannot run in them (exit 1)"
	check "... with eosd's reason and fix" grep -q \
		"user namespaces are disabled (sysctl user.max_user_namespaces is 0); enable them" <<<"$out"
}

test_no_namespaces
run_demo
test_head
test_blame
test_events
run eosctl daemon stop
expect_rc 0 "the eosd over the demo's state stops"
rerun_as_test_user "$0"
tap_done
