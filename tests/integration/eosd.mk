# eosd integration tests: included by tests/local.mk.
EOSD_TESTS = tests/integration/eosd-gateway.sh
TESTS += $(EOSD_TESTS)
EXTRA_DIST += $(EOSD_TESTS)

# Unit tests of eosd's modules (linked with supervisor/libeosd.a).
if HAVE_CHECK
UNIT_TESTS += tests/unit/test-eosd-auth tests/unit/test-eosd-pool
tests_unit_test_eosd_auth_SOURCES = tests/unit/test-eosd-auth.c
tests_unit_test_eosd_auth_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_eosd_auth_LDADD = tests/unit/libeos-testutil.a $(EOSD_LIBS) $(CHECK_LIBS)
tests_unit_test_eosd_pool_SOURCES = tests/unit/test-eosd-pool.c
tests_unit_test_eosd_pool_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_eosd_pool_LDADD = tests/unit/libeos-testutil.a $(EOSD_LIBS) $(CHECK_LIBS)
endif
EOSD_TESTS += tests/integration/eosd-restart.sh tests/integration/eosd-obs.sh
# Commands in sessions (doc/commands.md): it runs seccomp-probe inside a command (holder.mk).
EOSD_TESTS += tests/integration/eosd-exec.sh
