# eosctl integration tests: included by tests/local.mk.
# Unit tests of eosctl's command line (parsing, help, completion from the catalog) and of its
# HTTP client against a real peer (python3). They link cli/libeosctl.a and common/ only, like
# eosctl itself.
if HAVE_CHECK
UNIT_TESTS += tests/unit/test-eosctl-args tests/unit/test-eosctl-http
EOSCTL_TEST_LDADD = $(EOSCTL_LIBS) $(CHECK_LIBS)
tests_unit_test_eosctl_args_SOURCES = tests/unit/test-eosctl-args.c
tests_unit_test_eosctl_args_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_eosctl_args_LDADD = $(EOSCTL_TEST_LDADD)
tests_unit_test_eosctl_http_SOURCES = tests/unit/test-eosctl-http.c
tests_unit_test_eosctl_http_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_eosctl_http_LDADD = $(EOSCTL_TEST_LDADD)
endif
# eosctl against a real eosd (autostart, the sandbox lifecycle, tokens, both output modes, exit
# statuses, daemon start/stop/status), as root and as the unprivileged user.
TESTS += tests/integration/eosctl.sh
EXTRA_DIST += tests/integration/eosctl.sh
# eosctl exec, stdin and lines against a real eosd's command engine (exit statuses, stdin, Ctrl-C,
# timeouts, streaming, --json, paging, --tty through script(1)), as root and as the unprivileged
# user.
TESTS += tests/integration/eosctl-exec.sh
EXTRA_DIST += tests/integration/eosctl-exec.sh
# The upstream command lines (sandbox-manager-cli, sandbox-runtime-cli,
# sandbox-observability-cli: eosctl under those names) against a real eosd: every operation of
# each surface, exit statuses 0, 1 and 2, usage errors that never reach eosd, help, the replies'
# JSON shapes against tests/fixtures/upstream-cli/; as root and as the unprivileged user.
TESTS += tests/integration/upstream-cli.sh
EXTRA_DIST += tests/integration/upstream-cli.sh tests/integration/upstream_shape.py \
	tests/fixtures/upstream-cli
# scripts/demo, the README's first command: it runs through, and its kept state is read again
# through eosd (the head, blame, the events of the rejection and the retry); as root and as the
# unprivileged user.
TESTS += tests/integration/demo.sh
EXTRA_DIST += tests/integration/demo.sh
