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
# wrong MCP-Protocol-Version, GET, DELETE then reuse). Then eosd stops cleanly while a client
# follows events over /mcp. Node and npm are required: without them this fails, it does not
# skip. As root, the same again as the unprivileged user.
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

start_eosd
ok "eosd listens on $URL"
mcp_install
mcp_run_client eos-mcp-http.test.mjs EOS_MCP_URL="$URL"
stop_while_following
rerun_as_test_user "$0"
tap_done
