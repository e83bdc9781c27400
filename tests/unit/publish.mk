# SPDX-License-Identifier: MIT
# Unit tests of the publish gate (included from tests/local.mk).
# The automatic squash policy and the squash planned without a lock (store/autosquash.c).
if HAVE_CHECK
UNIT_TESTS += tests/unit/test-autosquash
tests_unit_test_autosquash_SOURCES = tests/unit/test-autosquash.c
tests_unit_test_autosquash_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_autosquash_LDADD = $(TEST_LDADD) -lpthread
endif
# The publish gate itself: the merge table, scenarios and provenance, the model-checked property
# test, and (with --enable-failpoints) atomicity at every failpoint of a publish.
if HAVE_CHECK
UNIT_TESTS += \
	tests/unit/test-publish-table \
	tests/unit/test-publish-scenario \
	tests/unit/test-publish-prop
if EOS_FAILPOINTS
UNIT_TESTS += tests/unit/test-publish-failpoints
endif
PUBLISH_TEST_SOURCES = tests/unit/publish-util.c tests/unit/publish-util.h
tests_unit_test_publish_table_SOURCES = tests/unit/test-publish-table.c $(PUBLISH_TEST_SOURCES)
tests_unit_test_publish_table_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_publish_table_LDADD = $(TEST_LDADD)
tests_unit_test_publish_scenario_SOURCES = tests/unit/test-publish-scenario.c \
	$(PUBLISH_TEST_SOURCES)
tests_unit_test_publish_scenario_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_publish_scenario_LDADD = $(TEST_LDADD) -lpthread
tests_unit_test_publish_prop_SOURCES = tests/unit/test-publish-prop.c $(PUBLISH_TEST_SOURCES)
tests_unit_test_publish_prop_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_publish_prop_LDADD = $(TEST_LDADD) -lpthread
tests_unit_test_publish_failpoints_SOURCES = tests/unit/test-publish-failpoints.c \
	$(PUBLISH_TEST_SOURCES)
tests_unit_test_publish_failpoints_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_publish_failpoints_LDADD = $(TEST_LDADD)
endif
# Sessions changed through the view (fs/, no mount) and published with eos_view_publish().
if HAVE_CHECK
UNIT_TESTS += tests/unit/test-publish-view
tests_unit_test_publish_view_SOURCES = tests/unit/test-publish-view.c $(PUBLISH_TEST_SOURCES)
tests_unit_test_publish_view_CFLAGS = $(TEST_CFLAGS) $(FUSE_CFLAGS)
tests_unit_test_publish_view_LDADD = $(FS_TEST_LDADD)
endif
