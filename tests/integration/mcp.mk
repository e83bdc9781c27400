# eos-mcp tests: included by tests/local.mk.
# Unit tests of common/mcp and common/catalog-schema (the tools generated from the catalog, the
# JSON-RPC answers, a call's checks, progress, cancel and result) with a fake host, and of
# common/mcp-run.
if HAVE_CHECK
UNIT_TESTS += tests/unit/test-mcp
tests_unit_test_mcp_SOURCES = tests/unit/test-mcp.c
tests_unit_test_mcp_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_mcp_LDADD = $(COMMON_LIBS) $(CHECK_LIBS)
# common/mcp-run: progress text and a command followed in steps.
UNIT_TESTS += tests/unit/test-mcp-run
tests_unit_test_mcp_run_SOURCES = tests/unit/test-mcp-run.c
tests_unit_test_mcp_run_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_mcp_run_LDADD = $(COMMON_LIBS) $(CHECK_LIBS)
endif
# The official MCP client (npm @modelcontextprotocol/sdk, pinned by tests/mcp/package-lock.json)
# drives eos-mcp over stdio and eosd's /mcp over Streamable HTTP against a real eosd, as root and
# as the unprivileged user; they fail when node or npm is missing.
TESTS += tests/integration/mcp-stdio.sh tests/integration/mcp-http.sh
EXTRA_DIST += tests/integration/mcp-stdio.sh tests/integration/mcp-http.sh \
	tests/integration/mcp-lib.sh tests/mcp/package.json tests/mcp/package-lock.json \
	tests/mcp/lib.mjs tests/mcp/eos-mcp.test.mjs tests/mcp/eos-mcp-http.test.mjs
