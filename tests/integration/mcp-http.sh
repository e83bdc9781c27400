#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# eosd's MCP endpoint (Streamable HTTP at /mcp) with the official MCP client:
# tests/mcp/eos-mcp-http.test.mjs drives it with the npm @modelcontextprotocol/sdk Client over
# StreamableHTTPClientTransport, one client per surface token, against a private eosd listening
# on a loopback port it picks: the tools of each token's surface and their schemas, replies as
# JSON or as a stream, every tool of every surface called over HTTP (an import with progress, an
# exec that yields then takes stdin, a cancel as Ctrl-C, a rejected publish with its conflicts,
# events follow until cancelled), tokens limited to one sandbox, and every refusal (a wrong or
# missing token, a missing or unknown Mcp-Session-Id, another token's session, a bad Origin, a
# wrong MCP-Protocol-Version, GET, DELETE then reuse, a body too large, the cap of sessions).
# Then eosd stops cleanly while a client follows events over /mcp, and a full queue and a
# stopping eosd refuse /mcp with 503. Node and npm are required: without them this fails, it does
# not skip. As root, the same again as the unprivileged user.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/fs-lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/mcp-lib.sh"

EOSD_BIN=$top_builddir/supervisor/eosd
[[ -x $EOSD_BIN ]] || bail_out "'$EOSD_BIN' is missing (build it; set top_builddir)"
command -v curl >/dev/null || bail_out "curl is needed"
mcp_require
tap_tmpdir

export EOS_STATE_DIR=$T/state EOS_RUNTIME_DIR=$T/run
unset EOS_NO_AUTOSTART XDG_DATA_HOME XDG_RUNTIME_DIR EOS_STORE
trap mcp_stop_daemon EXIT

# eosd in the foreground on a loopback port of its choice; sets eosd_pid and URL.
start_eosd() {
	local i tcp=''
	"$EOSD_BIN" --state-dir "$EOS_STATE_DIR" -f --listen tcp:127.0.0.1:0 2>"$T/eosd.err" &
	eosd_pid=$!
	for ((i = 0; i < 600; i++)); do
		[[ -s $EOS_STATE_DIR/eosd.json ]] &&
			tcp=$(json_get 'd["tcp"]' <"$EOS_STATE_DIR/eosd.json" 2>/dev/null) && [[ -n $tcp ]] && break
		kill -0 "$eosd_pid" 2>/dev/null || bail_out "eosd exited: $(cat "$T/eosd.err")"
		sleep 0.1
	done
	[[ -n $tcp ]] || bail_out "eosd did not write eosd.json"
	URL=http://$tcp/mcp
}

# SIGTERM while a client follows events over /mcp: its stream ends, eosd exits 0.
stop_while_following() {
	local tok session out=$T/follow.out pid st i
	tok=$(cat "$EOS_STATE_DIR/tokens/observability")
	session=$(curl -s -D - -o /dev/null -H "Authorization: Bearer $tok" \
		-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
		-X POST "$URL" --data-binary '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}' |
		tr -d '\r' | sed -n 's/^[Mm]cp-[Ss]ession-[Ii]d: //p')
	check "an MCP session for the follower" test -n "$session"
	curl -s -N -H "Authorization: Bearer $tok" -H "Mcp-Session-Id: $session" \
		-H 'MCP-Protocol-Version: 2025-11-25' -H 'Content-Type: application/json' \
		-H 'Accept: application/json, text/event-stream' -X POST "$URL" \
		--data-binary '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"events","arguments":{"follow":true,"last_n":1},"_meta":{"progressToken":"f"}}}' \
		>"$out" 2>&1 &
	pid=$!
	for ((i = 0; i < 600; i++)); do
		grep -q 'notifications/progress' "$out" && break
		sleep 0.1
	done
	check "the follower gets events as progress notifications" grep -q '"message":"event: ' "$out"
	kill -TERM "$eosd_pid"
	wait "$eosd_pid"
	st=$?
	check "eosd stops, exit status 0 (was $st)" test "$st" = 0
	wait "$pid"
	check "the follower's stream ended with an error result naming the stop" \
		grep -q '"id":2,.*follow ended' "$out"
}

# POST an initialize to /mcp of the eosd at socket $1 with token $2; $3.code appears once it has
# answered (the status), with $3.h (headers) and $3.body.
mcp_post_unix() {
	curl -s --max-time 120 --unix-socket "$1" -D "$3.h" -o "$3.body" -w '%{http_code}' \
		-H "Authorization: Bearer $2" -H 'Content-Type: application/json' \
		-H 'Accept: application/json, text/event-stream' -X POST http://eosd/mcp \
		--data-binary '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}' \
		>"$3.tmp"
	mv "$3.tmp" "$3.code"
}

# A full worker queue and a stopping eosd refuse /mcp with 503, as any request: an eosd of one
# worker and a queue of one (EOSD_TEST_POOL), its worker held by the failpoint gateway.handler
# (builds with --enable-failpoints, as scripts/setup makes them).
held_requests() {
	local st=$T/state-fp sock=$T/fp.sock pid ot i a=$T/ha b=$T/hb first other posts
	if ! grep -q '^#define EOS_FAILPOINTS 1' "$top_builddir/config.h" 2>/dev/null; then
		ok "# SKIP /mcp with a held worker: this build has no failpoints (--enable-failpoints)"
		return
	fi
	EOSD_TEST_POOL=1:1 EOS_FAILPOINTS=gateway.handler=wait:$T/go \
		"$EOSD_BIN" --state-dir "$st" -f --listen "unix:$sock" 2>"$T/fp.log" &
	pid=$!
	track_pid "$pid"
	wait_file "$st/eosd.json" || bail_out "the eosd with a held failpoint did not start"
	ot=$(cat "$st/tokens/observability")
	curl -s --unix-socket "$sock" -o /dev/null -H "Authorization: Bearer $ot" \
		-X POST http://eosd/v1/observability/ping -d '{}' &
	check "held: the one worker holds a request" wait_file "$T/go.waiting"
	mcp_post_unix "$sock" "$ot" "$a" &
	posts=($!)
	mcp_post_unix "$sock" "$ot" "$b" &
	posts+=($!)
	for ((i = 0; i < 1200; i++)); do
		[[ -e $a.code || -e $b.code ]] && break
		sleep 0.05
	done
	first=$a other=$b
	[[ -e $a.code ]] || first=$b other=$a
	check "held: /mcp beyond the full queue is answered at once: 503 with Retry-After" \
		grep -qi '^retry-after: 1' "$first.h"
	check "... a JSON-RPC error saying eosd is busy" \
		test "$(cat "$first.code"):$(json_get 'd["error"]["data"]["kind"] + ":" + str("busy" in d["error"]["message"])' \
			<"$first.body")" = 503:unavailable:True
	check "... while the queued one waits" not test -e "$other.code"
	kill -TERM "$pid"
	for ((i = 0; i < 100; i++)); do
		rm -f "$T/hc.code"
		mcp_post_unix "$sock" "$ot" "$T/hc"
		grep -q stopping "$T/hc.body" && break
		sleep 0.1 # until the loop has seen the signal
	done
	check "held: /mcp while eosd stops is 503, eosd is stopping" \
		test "$(cat "$T/hc.code"):$(json_get 'd["error"]["message"]' <"$T/hc.body")" = \
		"503:eosd is stopping"
	touch "$T/go"
	wait "$pid"
	check "held: released, eosd exits 0" test "$?" = 0
	wait "${posts[@]}" # the answer reached curl before eosd exited; its file comes after
	check "... having answered the queued /mcp request" test "$(cat "$other.code")" = 200
}

start_eosd
ok "eosd listens on $URL"
mcp_install
mcp_run_client eos-mcp-http.test.mjs EOS_MCP_URL="$URL"
stop_while_following
held_requests
rerun_as_test_user "$0"
tap_done
