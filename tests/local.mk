# Unit tests: one Check binary per module, linked against the real store (real RocksDB).
if HAVE_CHECK
TEST_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(JANSSON_CFLAGS)
TEST_LDADD = tests/unit/libeos-testutil.a $(STORE_LIBS) $(CHECK_LIBS)
check_LIBRARIES = tests/unit/libeos-testutil.a
tests_unit_libeos_testutil_a_SOURCES = tests/unit/testutil.c tests/unit/testutil.h \
	tests/unit/treehash.c
tests_unit_libeos_testutil_a_CFLAGS = $(TEST_CFLAGS)

UNIT_TESTS = \
	tests/unit/test-common \
	tests/unit/test-catalog \
	tests/unit/test-hashmap \
	tests/unit/test-store \
	tests/unit/test-kv \
	tests/unit/test-codec \
	tests/unit/test-chunker \
	tests/unit/test-cache \
	tests/unit/test-chunk-mem \
	tests/unit/test-content \
	tests/unit/test-entry \
	tests/unit/test-sandbox \
	tests/unit/test-commit \
	tests/unit/test-import \
	tests/unit/test-squash \
	tests/unit/test-fsck \
	tests/unit/test-space \
	tests/unit/test-obs
if EOS_FAILPOINTS
UNIT_TESTS += tests/unit/test-failpoints
endif
check_PROGRAMS += $(UNIT_TESTS)
TESTS += $(UNIT_TESTS)

tests_unit_test_common_SOURCES = tests/unit/test-common.c
tests_unit_test_common_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_common_LDADD = $(TEST_LDADD)
tests_unit_test_catalog_SOURCES = tests/unit/test-catalog.c
tests_unit_test_catalog_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_catalog_LDADD = $(TEST_LDADD)
tests_unit_test_hashmap_SOURCES = tests/unit/test-hashmap.c
tests_unit_test_hashmap_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_hashmap_LDADD = $(TEST_LDADD)
tests_unit_test_store_SOURCES = tests/unit/test-store.c
tests_unit_test_store_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_store_LDADD = $(TEST_LDADD)
tests_unit_test_kv_SOURCES = tests/unit/test-kv.c
tests_unit_test_kv_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_kv_LDADD = $(TEST_LDADD)
tests_unit_test_codec_SOURCES = tests/unit/test-codec.c
tests_unit_test_codec_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_codec_LDADD = $(TEST_LDADD)
tests_unit_test_chunker_SOURCES = tests/unit/test-chunker.c
tests_unit_test_chunker_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_chunker_LDADD = $(TEST_LDADD)
tests_unit_test_cache_SOURCES = tests/unit/test-cache.c
tests_unit_test_cache_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_cache_LDADD = $(TEST_LDADD)
tests_unit_test_chunk_mem_SOURCES = tests/unit/test-chunk-mem.c
tests_unit_test_chunk_mem_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_chunk_mem_LDADD = $(TEST_LDADD)
tests_unit_test_content_SOURCES = tests/unit/test-content.c
tests_unit_test_content_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_content_LDADD = $(TEST_LDADD)
tests_unit_test_entry_SOURCES = tests/unit/test-entry.c
tests_unit_test_entry_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_entry_LDADD = $(TEST_LDADD)
tests_unit_test_sandbox_SOURCES = tests/unit/test-sandbox.c
tests_unit_test_sandbox_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_sandbox_LDADD = $(TEST_LDADD)
tests_unit_test_commit_SOURCES = tests/unit/test-commit.c
tests_unit_test_commit_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_commit_LDADD = $(TEST_LDADD)
tests_unit_test_import_SOURCES = tests/unit/test-import.c
tests_unit_test_import_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_import_LDADD = $(TEST_LDADD)
tests_unit_test_squash_SOURCES = tests/unit/test-squash.c
tests_unit_test_squash_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_squash_LDADD = $(TEST_LDADD)
tests_unit_test_fsck_SOURCES = tests/unit/test-fsck.c
tests_unit_test_fsck_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_fsck_LDADD = $(TEST_LDADD)
tests_unit_test_space_SOURCES = tests/unit/test-space.c
tests_unit_test_space_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_space_LDADD = $(TEST_LDADD)
tests_unit_test_obs_SOURCES = tests/unit/test-obs.c
tests_unit_test_obs_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_obs_LDADD = $(TEST_LDADD)
tests_unit_test_failpoints_SOURCES = tests/unit/test-failpoints.c
tests_unit_test_failpoints_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_failpoints_LDADD = $(TEST_LDADD)
include tests/unit/fs.mk
endif

# Integration tests: shell scripts (TAP) driving the real binaries.
INTEGRATION_TESTS = \
	tests/integration/eos-store-cli.sh \
	tests/integration/crash-import.sh \
	tests/integration/fs-sessions.sh \
	tests/integration/git-import.sh \
	tests/integration/full-disk.sh \
	tests/integration/full-view.sh \
	tests/integration/fs-attrs-kill.sh \
	tests/integration/fs-names-kill.sh
TESTS += $(INTEGRATION_TESTS)
EXTRA_DIST += $(INTEGRATION_TESTS) tests/integration/lib.sh tests/integration/fs-lib.sh \
	tests/integration/small-fs.sh
include tests/integration/conformance.mk
include tests/integration/model.mk
include tests/unit/publish.mk
include tests/unit/git.mk
include tests/unit/blame.mk
include tests/unit/export.mk
include tests/unit/nodes.mk
include tests/integration/publish.mk
include tests/integration/crash.mk
include tests/integration/eosd.mk
include tests/integration/eosd-sessions.mk
include tests/integration/eosctl.mk
include tests/integration/mcp.mk
include tests/integration/console.mk
include tests/unit/corrupt.mk
include tests/integration/holder.mk
