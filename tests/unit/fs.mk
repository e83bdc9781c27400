# Unit tests of the session view (fs/) and of the store's workspace sessions: real RocksDB store
# in a temp dir, no FUSE mount. Included from tests/local.mk. Joining UNIT_TESTS is enough: make
# expands variables lazily, so tests/local.mk's `check_PROGRAMS += $(UNIT_TESTS)` and
# `TESTS += $(UNIT_TESTS)` pick these up too (as tests/fuzz/local.mk relies on), and CI's
# sanitizer phase runs them. Adding them to check_PROGRAMS / TESTS as well would list them twice.
if HAVE_CHECK
UNIT_TESTS += \
	tests/unit/test-writelog \
	tests/unit/test-session \
	tests/unit/test-view \
	tests/unit/test-journal \
	tests/unit/test-publish-live \
	tests/unit/test-fork \
	tests/unit/test-view-paths \
	tests/unit/test-view-inodes

FS_TEST_LDADD = fs/libeos-fs.a $(TEST_LDADD) $(FUSE_LIBS) -lpthread

tests_unit_test_writelog_SOURCES = tests/unit/test-writelog.c
tests_unit_test_writelog_CFLAGS = $(TEST_CFLAGS) $(FUSE_CFLAGS)
tests_unit_test_writelog_LDADD = $(FS_TEST_LDADD)
tests_unit_test_session_SOURCES = tests/unit/test-session.c
tests_unit_test_session_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_session_LDADD = $(TEST_LDADD)
tests_unit_test_view_SOURCES = tests/unit/test-view.c tests/unit/view-util.c tests/unit/view-util.h
tests_unit_test_view_CFLAGS = $(TEST_CFLAGS) $(FUSE_CFLAGS)
tests_unit_test_view_LDADD = $(FS_TEST_LDADD)
tests_unit_test_journal_SOURCES = tests/unit/test-journal.c tests/unit/view-util.c \
	tests/unit/view-util.h
tests_unit_test_journal_CFLAGS = $(TEST_CFLAGS) $(FUSE_CFLAGS)
tests_unit_test_journal_LDADD = $(FS_TEST_LDADD)
tests_unit_test_publish_live_SOURCES = tests/unit/test-publish-live.c tests/unit/view-util.c \
	tests/unit/view-util.h tests/unit/live-util.c tests/unit/live-util.h
tests_unit_test_publish_live_CFLAGS = $(TEST_CFLAGS) $(FUSE_CFLAGS)
tests_unit_test_publish_live_LDADD = $(FS_TEST_LDADD)
tests_unit_test_fork_SOURCES = tests/unit/test-fork.c tests/unit/view-util.c tests/unit/view-util.h \
	tests/unit/live-util.c tests/unit/live-util.h
tests_unit_test_fork_CFLAGS = $(TEST_CFLAGS) $(FUSE_CFLAGS)
tests_unit_test_fork_LDADD = $(FS_TEST_LDADD)
tests_unit_test_view_paths_SOURCES = tests/unit/test-view-paths.c tests/unit/view-util.c \
	tests/unit/view-util.h tests/unit/live-util.c tests/unit/live-util.h
tests_unit_test_view_paths_CFLAGS = $(TEST_CFLAGS) $(FUSE_CFLAGS)
tests_unit_test_view_paths_LDADD = $(FS_TEST_LDADD)
tests_unit_test_view_inodes_SOURCES = tests/unit/test-view-inodes.c tests/unit/view-util.c \
	tests/unit/view-util.h
tests_unit_test_view_inodes_CFLAGS = $(TEST_CFLAGS) $(FUSE_CFLAGS)
tests_unit_test_view_inodes_LDADD = $(FS_TEST_LDADD)
endif
