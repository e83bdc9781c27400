# The namespace holder (supervisor/holder/, doc/holder.md): included by tests/local.mk.
# holder-run runs one command through eosd's holder client (a test tool); seccomp-probe calls
# every denied system call inside a session and checks its errno.
check_PROGRAMS += tests/integration/holder-run tests/integration/seccomp-probe
tests_integration_holder_run_SOURCES = tests/integration/holder-run.c
tests_integration_holder_run_LDADD = $(EOSD_LIBS)
tests_integration_seccomp_probe_SOURCES = tests/integration/seccomp-probe.c
tests_integration_seccomp_probe_LDADD = $(EOSD_LIBS)

# The Check tests of the holder, run by holder.sh as the caller and, as root, again as the
# unprivileged user.
if HAVE_CHECK
HOLDER_UNIT_TESTS = tests/unit/test-holder tests/unit/test-holder-iso
check_PROGRAMS += $(HOLDER_UNIT_TESTS)
HOLDER_TEST_SOURCES = tests/unit/holder-util.c tests/unit/holder-util.h
tests_unit_test_holder_SOURCES = tests/unit/test-holder.c $(HOLDER_TEST_SOURCES)
tests_unit_test_holder_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_holder_LDADD = $(EOSD_LIBS) $(TEST_LDADD)
tests_unit_test_holder_iso_SOURCES = tests/unit/test-holder-iso.c $(HOLDER_TEST_SOURCES)
tests_unit_test_holder_iso_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_holder_iso_LDADD = $(EOSD_LIBS) $(TEST_LDADD)
endif

TESTS += tests/integration/holder.sh
EXTRA_DIST += tests/integration/holder.sh
