# eosd-sessions tests: included by tests/local.mk. The unit tests call the session and file
# handlers directly over a real store and real FUSE mounts (supervisor/session.h).
if HAVE_CHECK
UNIT_TESTS += tests/unit/test-eosd-session tests/unit/test-eosd-session-publish \
	tests/unit/test-eosd-fusepool tests/unit/test-eosd-obs

EOSD_SESSION_TEST_SOURCES = tests/unit/test-eosd-session-util.c \
	tests/unit/test-eosd-session-util.h
tests_unit_test_eosd_session_SOURCES = tests/unit/test-eosd-session.c \
	$(EOSD_SESSION_TEST_SOURCES)
tests_unit_test_eosd_session_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_eosd_session_LDADD = $(EOSD_LIBS) $(TEST_LDADD)
tests_unit_test_eosd_session_publish_SOURCES = tests/unit/test-eosd-session-publish.c \
	$(EOSD_SESSION_TEST_SOURCES)
tests_unit_test_eosd_session_publish_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_eosd_session_publish_LDADD = $(EOSD_LIBS) $(TEST_LDADD)
tests_unit_test_eosd_obs_SOURCES = tests/unit/test-eosd-obs.c $(EOSD_SESSION_TEST_SOURCES)
tests_unit_test_eosd_obs_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_eosd_obs_LDADD = $(EOSD_LIBS) $(TEST_LDADD)
tests_unit_test_eosd_fusepool_SOURCES = tests/unit/test-eosd-fusepool.c \
	tests/unit/live-util.c tests/unit/live-util.h tests/unit/view-util.c tests/unit/view-util.h
tests_unit_test_eosd_fusepool_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_eosd_fusepool_LDADD = $(EOSD_LIBS) $(TEST_LDADD)
endif

# Sessions and file operations through a real eosd, over its socket with curl.
TESTS += tests/integration/eosd-sessions.sh
EXTRA_DIST += tests/integration/eosd-sessions.sh
