#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# eos-mcp with the official MCP client: tests/mcp/eos-mcp.test.mjs drives it with the npm
# @modelcontextprotocol/sdk Client over StdioClientTransport against a private eosd (which
# eos-mcp starts): the tools of each surface and their schemas (ajv, strict), protocol errors,
# every tool of every surface called, bad arguments as isError, an unknown tool, progress of an
# import and of a command, an exec that yields then takes stdin, a cancel through the SDK's
# AbortSignal (Ctrl-C to the command), a publish rejected with its conflicts, --sandbox-id and
# EOS_NO_AUTOSTART=1. The SDK is installed from tests/mcp/package-lock.json into
# $top_builddir/tests/mcp (npm ci, offline when the cache has it). Node and npm are required:
# without them this fails, it does not skip. As root, the same again as the unprivileged user.
# shellcheck disable=SC2317 # helpers called through the EXIT trap
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/fs-lib.sh"

MCP_BIN=$top_builddir/cli/eos-mcp
[[ -x $MCP_BIN ]] || bail_out "'$MCP_BIN' is missing (build it; set top_builddir)"
[[ -x $top_builddir/supervisor/eosd ]] || bail_out "eosd is missing (build it)"
command -v node >/dev/null || bail_out "node is needed (apt-get install nodejs npm)"
command -v npm >/dev/null || bail_out "npm is needed (apt-get install nodejs npm)"
command -v python3 >/dev/null || bail_out "python3 is needed"
tap_tmpdir

export EOS_STATE_DIR=$T/state EOS_RUNTIME_DIR=$T/run
unset EOS_NO_AUTOSTART XDG_DATA_HOME XDG_RUNTIME_DIR EOS_STORE

stop_daemon() {
	local pid
	pid=$(python3 -c 'import json, sys
try:
    print(json.load(open(sys.argv[1] + "/eosd.json"))["pid"])
except OSError:
    pass' "$EOS_STATE_DIR" 2>/dev/null)
	[[ -n $pid ]] && kill -9 "$pid" 2>/dev/null
	fs_cleanup
}
trap stop_daemon EXIT

# The SDK in $top_builddir/tests/mcp, installed once from the lock file (again when it changes).
install_sdk() {
	local src=$top_srcdir/tests/mcp dir=$top_builddir/tests/mcp
	if [[ -d $dir/node_modules/@modelcontextprotocol/sdk ]] &&
		cmp -s "$src/package-lock.json" "$dir/node_modules/.eos-lock"; then
		return 0
	fi
	if [[ ! $src -ef $dir ]]; then
		mkdir -p "$dir" && cp "$src/package.json" "$src/package-lock.json" "$dir/" || return 1
	fi
	(cd "$dir" && { npm ci --offline --no-audit --no-fund || npm ci --no-audit --no-fund; }) >&2 ||
		return 1
	cp "$src/package-lock.json" "$dir/node_modules/.eos-lock"
}

# Run the node test; its "ok - …" / "not ok - …" lines become this script's TAP lines.
run_client() {
	local line status=''
	mkdir -p "$T/scratch"
	while IFS= read -r line; do
		case $line in
		'ok - '*) ok "${line#ok - }" ;;
		'not ok - '*) not_ok "${line#not ok - }" ;;
		'status '*) status=${line#status } ;;
		*) diag "$line" ;;
		esac
	done < <(EOS_MCP_BIN=$MCP_BIN MCP_TMP=$T/scratch NODE_PATH=$top_builddir/tests/mcp/node_modules \
		timeout 600 node "$top_builddir/tests/mcp/eos-mcp.test.mjs" 2>&1
		echo "status $?")
	if [[ $status == 0 ]]; then
		ok "the client ran to its end, exit status 0"
	else
		not_ok "the client ran to its end (exit status ${status:-none})"
	fi
}

if install_sdk; then
	ok "the MCP SDK is installed from tests/mcp/package-lock.json"
else
	bail_out "npm ci of tests/mcp failed"
fi
# the test script beside its node_modules, so that its imports resolve there
[[ $top_srcdir -ef $top_builddir ]] ||
	cp "$top_srcdir/tests/mcp/eos-mcp.test.mjs" "$top_builddir/tests/mcp/" 2>/dev/null ||
	cmp -s "$top_srcdir/tests/mcp/eos-mcp.test.mjs" "$top_builddir/tests/mcp/eos-mcp.test.mjs" ||
	bail_out "cannot put the test script in $top_builddir/tests/mcp"
run_client
rerun_as_test_user "$0"
tap_done
