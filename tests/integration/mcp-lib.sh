# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# What the MCP client tests share (mcp-stdio.sh, mcp-http.sh; source after lib.sh and fs-lib.sh):
#
#	mcp_require                     # bail out unless node, npm and python3 are here
#	mcp_install                     # the SDK from tests/mcp/package-lock.json (npm ci) in
#	                                # $top_builddir/tests/mcp, with the test scripts beside it
#	mcp_run_client TEST.mjs [ENV=VALUE...]  # run it; its "ok - …" lines become TAP lines
#	mcp_stop_daemon                 # EXIT trap: kill -9 the eosd of $EOS_STATE_DIR, fs_cleanup
#
# Node and npm are required: without them a test fails, it does not skip.
MCP_DIR=${top_builddir:?source lib.sh first}/tests/mcp
MCP_SRC=${top_srcdir:?source lib.sh first}/tests/mcp

mcp_require() {
	command -v node >/dev/null || bail_out "node is needed (apt-get install nodejs npm)"
	command -v npm >/dev/null || bail_out "npm is needed (apt-get install nodejs npm)"
	command -v python3 >/dev/null || bail_out "python3 is needed"
}

mcp_stop_daemon() {
	eosd_cleanup "$EOS_STATE_DIR"
}

# The SDK in $MCP_DIR, installed once from the lock file (again when it changes). Called under
# the install lock (mcp_install).
mcp_install_sdk() {
	local src=$MCP_SRC
	if [[ -d $MCP_DIR/node_modules/@modelcontextprotocol/sdk ]] &&
		cmp -s "$src/package-lock.json" "$MCP_DIR/node_modules/.eos-lock"; then
		return 0
	fi
	if [[ ! $src -ef $MCP_DIR ]]; then
		mkdir -p "$MCP_DIR" && cp "$src/package.json" "$src/package-lock.json" "$MCP_DIR/" ||
			return 1
	fi
	(cd "$MCP_DIR" && { npm ci --offline --no-audit --no-fund || npm ci --no-audit --no-fund; }) >&2 ||
		return 1
	cp "$src/package-lock.json" "$MCP_DIR/node_modules/.eos-lock"
}

mcp_install() {
	local f
	local lock=$MCP_DIR/.eos-install.lock
	mkdir -p "$MCP_DIR" || bail_out "cannot make '$MCP_DIR'"
	# mcp-stdio.sh and mcp-http.sh run at once under make -j: one npm ci at a time in $MCP_DIR
	# (the lock is opened for reading: the unprivileged rerun reuses root's install and lock)
	[[ -e $lock ]] || : >"$lock" || bail_out "cannot make '$lock'"
	if (flock 9 && mcp_install_sdk) 9<"$lock"; then
		ok "the MCP SDK is installed from tests/mcp/package-lock.json"
	else
		bail_out "npm ci of tests/mcp failed"
	fi
	# the test scripts beside their node_modules, so that their imports resolve there
	[[ $top_srcdir -ef $top_builddir ]] && return 0
	for f in "$MCP_SRC"/*.mjs; do
		cp "$f" "$MCP_DIR/" 2>/dev/null || cmp -s "$f" "$MCP_DIR/${f##*/}" ||
			bail_out "cannot put $f in $MCP_DIR"
	done
}

# Run node test $1 with the environment given after it (and MCP_TMP, a scratch directory); its
# "ok - …" / "not ok - …" lines become this script's TAP lines, the rest diagnostics.
mcp_run_client() {
	local test=$1 line status=''
	shift
	mkdir -p "$T/scratch"
	while IFS= read -r line; do
		case $line in
		'ok - '*) ok "${line#ok - }" ;;
		'not ok - '*) not_ok "${line#not ok - }" ;;
		'status '*) status=${line#status } ;;
		*) diag "$line" ;;
		esac
	done < <(env "$@" MCP_TMP="$T/scratch" NODE_PATH="$MCP_DIR/node_modules" \
		timeout 600 node "$MCP_DIR/$test" 2>&1
		echo "status $?")
	if [[ $status == 0 ]]; then
		ok "$test ran to its end, exit status 0"
	else
		not_ok "$test ran to its end (exit status ${status:-none})"
	fi
}
