#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# eos-mcp with the official MCP client: tests/mcp/eos-mcp.test.mjs drives it with the npm
# @modelcontextprotocol/sdk Client over StdioClientTransport against a private eosd (which
# eos-mcp starts): the tools of each surface and their schemas (ajv, strict), protocol errors,
# every tool of every surface called, bad arguments as isError, an unknown tool, progress of an
# import and of a command, an exec that yields then takes stdin, a cancel through the SDK's
# AbortSignal (Ctrl-C to the command), a publish rejected with its conflicts, --sandbox-id, a
# token limited to one sandbox fixing it alone, and EOS_NO_AUTOSTART=1.
# The SDK is installed from tests/mcp/package-lock.json into $top_builddir/tests/mcp (npm ci,
# offline when the cache has it). Node and npm are required: without them this fails, it does not
# skip. As root, the same again as the unprivileged user.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/fs-lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/mcp-lib.sh"

MCP_BIN=$top_builddir/cli/eos-mcp
[[ -x $MCP_BIN ]] || bail_out "'$MCP_BIN' is missing (build it; set top_builddir)"
[[ -x $top_builddir/supervisor/eosd ]] || bail_out "eosd is missing (build it)"
mcp_require
tap_tmpdir

export EOS_STATE_DIR=$T/state EOS_RUNTIME_DIR=$T/run
unset EOS_NO_AUTOSTART XDG_DATA_HOME XDG_RUNTIME_DIR EOS_STORE
trap mcp_stop_daemon EXIT

mcp_install
mcp_run_client eos-mcp.test.mjs EOS_MCP_BIN="$MCP_BIN"
rerun_as_test_user "$0"
tap_done
