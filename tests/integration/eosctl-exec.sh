#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# eosctl exec, stdin and lines against a real eosd (doc/eosctl.md, doc/commands.md): the exit
# status is the command's; stdin piped into eosctl reaches the command; SIGINT cancels the command
# (exit 130, none of its processes left) instead of killing eosctl; --timeout-ms kills it (124);
# output streams as it comes; --json prints one document; a reply cut at --max-output-bytes names
# `eosctl lines`, which pages a 1000-line transcript; an implicit session's publish is reported;
# --env, --cwd, an explicit --session, the words after -- joined; --tty on a terminal (script(1))
# gives the command a pty and leaves the terminal as it was; stdin of an unknown command is
# not_found (exit 1). As root, the same again as the unprivileged user.
# shellcheck disable=SC2317 # helpers called through run, check and the EXIT trap
# shellcheck disable=SC2016 # command lines for the sandboxed shell, expanded there
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/fs-lib.sh"

EOSCTL_BIN=$top_builddir/cli/eosctl
[[ -x $EOSCTL_BIN ]] || bail_out "'$EOSCTL_BIN' is missing (build it; set top_builddir)"
[[ -x $top_builddir/supervisor/eosd ]] || bail_out "eosd is missing (build it)"
command -v python3 >/dev/null || bail_out "python3 is needed"
tap_tmpdir

export EOS_STATE_DIR=$T/state EOS_RUNTIME_DIR=$T/run
unset EOS_NO_AUTOSTART XDG_DATA_HOME XDG_RUNTIME_DIR EOS_STORE

# A sleep no other test runs: its processes can be looked for by name.
NAP=$((100000 + RANDOM))

eosctl() {
	"$EOSCTL_BIN" "$@"
}

trap eosd_cleanup EXIT

# No process of the sleep $NAP is left (the command's shell, the sleep).
no_nap_left() {
	local i
	for ((i = 0; i < 50; i++)); do
		pgrep -f "sleep $NAP" >/dev/null || return 0
		sleep 0.1
	done
	diag "left: $(pgrep -af "sleep $NAP")"
	return 1
}

# Wait until the sleep $NAP itself runs: eosctl's own command line holds "sleep $NAP" too, and a
# SIGINT sent as it starts (ignored then: a background job of a script) would never cancel.
wait_for_nap() {
	local i
	for ((i = 0; i < 100; i++)); do
		pgrep -f "^sleep $NAP" >/dev/null && return 0
		sleep 0.1
	done
	return 1
}

setup() {
	mkdir -p "$T/src/dir"
	printf 'one\n' >"$T/src/dir/a.txt"
	run eosctl sandbox create "$T/src" --id sb1
	[[ $rc == 0 ]] || {
		show_run
		bail_out "cannot create the sandbox"
	}
}

test_exit_status() {
	run eosctl exec sb1 -- echo hi
	expect_rc 0 "exec -- echo hi exits 0"
	check "... printing hi" test "$out" = hi
	run eosctl exec sb1 -- 'exit 7'
	expect_rc 7 "exec -- 'exit 7' exits 7"
	run eosctl exec --sandbox sb1 -- 'echo out; echo err >&2; exit 3'
	expect_rc 3 "--sandbox ID, and a command's own exit status"
	check "... stdout and stderr merged on stdout as they came" test "$out" = $'out\nerr'
	run eosctl exec sb1 -- printf '%s|' 'a b' "it's" '$HOME'
	check "several words after -- are quoted for the shell" test "$out" = "a b|it's|\$HOME|"
	run eosctl exec sb1 -- 'echo a && echo b'
	check "one word after -- is the command line itself" test "$out" = $'a\nb'
	run eosctl exec sb1 --
	expect_rc_match 2 err "missing CMD" "no command: a usage error, exit 2"
}

test_stdin() {
	run bash -c 'printf "foo\n" | "$1" exec sb1 -- python3 -c "print(input())"' bash \
		"$EOSCTL_BIN"
	expect_rc 0 "a command reading stdin, fed by a pipe into eosctl exec"
	check "... got the line" test "$out" = foo
	run bash -c 'seq 3 | "$1" exec sb1 -- head -n 3' bash "$EOSCTL_BIN"
	check "... several lines of it" test "$out" = $'1\n2\n3'
	run bash -c 'printf "a\nb\n" | timeout 20 "$1" exec sb1 -- wc -l' bash "$EOSCTL_BIN"
	expect_rc 0 "a command reading to the end of its input ends with eosctl's stdin"
	check "... having read all of it" test "$out" = 2
	run bash -c 'printf "x y" | timeout 20 "$1" exec sb1 --tty -- cat' bash "$EOSCTL_BIN"
	expect_rc 0 "... on a pty too (the end of stdin sends the pty's EOF character)"
	check "... having read all of it" grep -q "x y" <<<"$out"
	run timeout --preserve-status -s INT 3 "$EOSCTL_BIN" exec sb1 -- 'read -t 1 x; echo "[$x]"'
	expect_rc 0 "an empty stdin: the command reads nothing"
	check "... and goes on" test "$out" = "[]"
}

test_interrupt() {
	local pid
	"$EOSCTL_BIN" exec sb1 -- "sleep $NAP" >"$T/int.out" 2>"$T/int.err" &
	pid=$!
	track_pid "$pid"
	check "the command runs (sleep $NAP)" wait_for_nap
	kill -INT "$pid"
	wait_pid_gone "$pid" || kill -9 "$pid"
	wait "$pid"
	rc=$?
	out=$(cat "$T/int.out") err=$(cat "$T/int.err")
	expect_rc_match 130 err "cancelled" "kill -INT of eosctl cancels the command: exit 130"
	check "... no process of it is left" no_nap_left
	run timeout --preserve-status -s INT 2 "$EOSCTL_BIN" exec sb1 -- "sleep $NAP"
	expect_rc 130 "timeout -s INT: exit 130"
	check "... no process of it is left" no_nap_left
	run eosctl exec sb1 --timeout-ms 500 -- "sleep $NAP"
	expect_rc_match 124 err "timed_out" "--timeout-ms 500: eosd kills it, exit 124"
	check "... no process of it is left" no_nap_left
}

test_streaming() {
	local i
	"$EOSCTL_BIN" exec sb1 -- 'echo first; sleep 2; echo second' >"$T/stream.out" 2>&1 &
	track_pid $!
	for ((i = 0; i < 30; i++)); do
		[[ -s $T/stream.out ]] && break
		sleep 0.1
	done
	check "output is printed as it comes (without a terminal too)" \
		test "$(cat "$T/stream.out")" = first
	wait $!
	check "... then the rest" test "$(cat "$T/stream.out")" = $'first\nsecond'
}

test_json() {
	run eosctl --json exec sb1 -- 'seq 3; sleep 0.6; echo x; exit 3'
	expect_rc 3 "--json: the exit status is the command's"
	check "... one JSON document" json_valid <<<"$out"
	check "... one line" test "$(wc -l <<<"$out")" = 1
	check "... status error" test "$(json_get 'd["status"]' <<<"$out")" = error
	check "... exit_code 3" test "$(json_get 'd["exit_code"]' <<<"$out")" = 3
	check "... the whole output, of every reply" \
		test "$(json_get 'd["output"]' <<<"$out")" = $'1\n2\n3\nx'
	run eosctl --json exec sb1 --yield-time-ms 0 -- 'echo ok'
	check "--yield-time-ms 0: still the final result" \
		test "$(json_get 'd["status"]' <<<"$out")" = completed
}

test_lines() {
	local id
	run eosctl --json exec sb1 -- 'seq 1000'
	expect_rc 0 "exec -- seq 1000"
	id=$(json_get 'd["command_session_id"]' <<<"$out")
	check "... its result counts 1000 lines" test "$(json_get 'd["line_count"]' <<<"$out")" = 1000
	run eosctl lines sb1 "$id"
	expect_rc 0 "lines SANDBOX ID"
	check "... the first 200" test "$(json_get 'len(d["lines"])' <<<"$out")" = 200
	check "... next_offset 201" test "$(json_get 'd["next_offset"]' <<<"$out")" = 201
	run eosctl lines sb1 "$id" --offset 901 --limit 200
	check "--offset 901: the last 100" test "$(json_get 'd["lines"][-1]' <<<"$out")" = 1000
	check "... and no next" test "$(json_get 'd["next_offset"]' <<<"$out")" = null
	run eosctl --text lines --sandbox sb1 "$id" --offset 11 --limit 5
	check "--text: the lines themselves" test "$out" = $'11\n12\n13\n14\n15'
	check "... and a footer on stderr" grep -q "lines 11–15 of 1000; next: --offset 16" <<<"$err"
	run eosctl --text lines sb1 "$id" --offset 996
	check "... the end" grep -q "lines 996–1000 of 1000 (the end)" <<<"$err"
	run eosctl exec sb1 --max-output-bytes 100 -- 'seq 1000'
	expect_rc_match 0 err "eosctl lines sb1 cmd-" \
		"output cut at --max-output-bytes: a note names eosctl lines"
}

test_stdin_command() {
	run eosctl stdin sb1 cmd-999999
	expect_rc_match 1 err "eosctl: not_found:" "stdin of an unknown command: not_found, exit 1"
	run eosctl --json stdin sb1 cmd-999999 x
	expect_rc 1 "... with --json: exit 1"
	check "... the envelope on stderr" \
		test "$(json_get 'd["error"]["kind"]' <<<"$err")" = not_found
	run eosctl stdin sb1
	expect_rc_match 2 err "missing COMMAND_SESSION_ID" "stdin without an id: exit 2"
}

test_sessions_env_cwd() {
	run eosctl session create --sandbox sb1 --session w1
	expect_rc 0 "session create w1"
	run eosctl exec sb1 --session w1 -- 'echo kept >f.txt; echo $$ >/tmp/pid'
	expect_rc 0 "exec --session w1 writes a file"
	check "... and publishes nothing (an explicit session)" not grep -q published <<<"$err"
	run eosctl exec sb1 --session w1 -- 'cat f.txt /tmp/pid'
	check "... a later command of w1 sees it (and its /tmp)" grep -qx kept <<<"$out"
	run eosctl exec sb1 --session w1 --cwd dir -- 'pwd; cat a.txt'
	check "--cwd dir: it runs in /workspace/dir" test "$out" = $'/workspace/dir\none'
	run eosctl exec sb1 --session w1 --env A=1 --env B='two words' --env '{"C":"3"}' \
		-- 'echo "$A|$B|$C"'
	check "--env repeated: merged into one environment" test "$out" = "1|two words|3"
	run eosctl session destroy w1 --sandbox sb1
	expect_rc 0 "session destroy w1"
	run eosctl exec sb1 -- 'echo new >b.txt'
	expect_rc_match 0 err "published as version L" \
		"an implicit session's changes: 'published as version' on stderr"
	run eosctl --text file read b.txt --sandbox sb1
	check "... in the sandbox's head" test "$out" = new
}

test_tty() {
	run script -qec "$EOSCTL_BIN exec --tty sb1 -- 'tty; echo \$TERM'" /dev/null
	expect_rc 0 "--tty on a terminal (script)"
	check "... the command has a pty" grep -q "^/dev/pts/" <<<"$out"
	check "... TERM xterm-256color" grep -q "xterm-256color" <<<"$out"
	run script -qec "$EOSCTL_BIN exec --tty sb1 -- true; stty -a" /dev/null
	check "... the terminal is as it was after it" grep -Eq '(^| )icanon' <<<"$out"
	run bash -c '(sleep 1; printf "abc\r"; sleep 2) |
script -qec "$1 exec --tty sb1 -- '\''read x; echo got-\$x'\''" /dev/null' bash "$EOSCTL_BIN"
	check "... keys typed reach the command" grep -q "got-abc" <<<"$out"
	run bash -c '(sleep 1; printf "\003"; sleep 5) |
script -qec "$1 exec --tty sb1 -- sleep $2; echo rc=\$?" /dev/null' bash "$EOSCTL_BIN" "$NAP"
	check "... Ctrl-C on the raw terminal cancels it: 130" grep -q "rc=130" <<<"$out"
	check "... no process of it is left" no_nap_left
	run script -qec "$EOSCTL_BIN exec sb1 -- echo on-a-terminal" /dev/null
	check "on a terminal without --tty: the output" grep -q "on-a-terminal" <<<"$out"
}

test_help_completion() {
	run eosctl help exec
	expect_rc_match 0 out "--env NAME=VALUE" "help exec lists its arguments, from the catalog"
	run eosctl --help
	check "--help lists exec, stdin, lines" grep -Eq '^  lines ' <<<"$out"
	check "completion knows exec's options" grep -qx -- --env \
		<(bash -c 'source <("$1" completion bash); COMP_WORDS=(eosctl exec --e); COMP_CWORD=2
_eosctl; printf "%s\n" "${COMPREPLY[@]}"' bash "$EOSCTL_BIN")
}

setup
test_exit_status
test_stdin
test_interrupt
test_streaming
test_json
test_lines
test_stdin_command
test_sessions_env_cwd
test_tty
test_help_completion
run eosctl daemon stop
expect_rc 0 "the test's eosd stops"
rerun_as_test_user "$0"
tap_done
