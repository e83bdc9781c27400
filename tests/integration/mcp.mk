# eos-mcp integration test: included by tests/local.mk. The official MCP client (npm
# @modelcontextprotocol/sdk, pinned by tests/mcp/package-lock.json) drives eos-mcp against a real
# eosd, as root and as the unprivileged user; it fails when node or npm is missing.
TESTS += tests/integration/mcp-stdio.sh
EXTRA_DIST += tests/integration/mcp-stdio.sh tests/mcp/package.json tests/mcp/package-lock.json \
	tests/mcp/eos-mcp.test.mjs
