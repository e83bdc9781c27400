# The web console (doc/console.md): included by tests/local.mk. Debian's chromium, driven headless
# by npm playwright-core (pinned by tests/console/package-lock.json, installed by npm ci; no
# browser download), through every page of the console of a real eosd, with curl checks of the
# login, the cookie and the cross-site refusals; as root and as the unprivileged user. It fails
# when node, npm or chromium is missing (scripts/setup installs them).
TESTS += tests/integration/console.sh
EXTRA_DIST += tests/integration/console.sh tests/console/package.json \
	tests/console/package-lock.json tests/console/console.test.mjs

# Unit tests of supervisor/console: logins, the CSRF token, one-time codes, revocation, bounds.
if HAVE_CHECK
UNIT_TESTS += tests/unit/test-eosd-console
tests_unit_test_eosd_console_SOURCES = tests/unit/test-eosd-console.c
tests_unit_test_eosd_console_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_eosd_console_LDADD = tests/unit/libeos-testutil.a $(EOSD_LIBS) $(CHECK_LIBS)
endif
