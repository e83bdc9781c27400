# SPDX-License-Identifier: MIT
# Unit tests of blame (included from tests/local.mk).
if HAVE_CHECK
UNIT_TESTS += \
	tests/unit/test-linediff \
	tests/unit/test-blame

tests_unit_test_linediff_SOURCES = tests/unit/test-linediff.c
tests_unit_test_linediff_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_linediff_LDADD = $(TEST_LDADD)
tests_unit_test_blame_SOURCES = tests/unit/test-blame.c
tests_unit_test_blame_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_blame_LDADD = $(TEST_LDADD)
endif
