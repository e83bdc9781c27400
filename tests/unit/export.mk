# SPDX-License-Identifier: MIT
# Unit tests of export (included from tests/local.mk, outside its HAVE_CHECK block). Joining
# UNIT_TESTS is enough (see tests/unit/fs.mk).
if HAVE_CHECK
UNIT_TESTS += tests/unit/test-export

tests_unit_test_export_SOURCES = tests/unit/test-export.c
tests_unit_test_export_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_export_LDADD = $(TEST_LDADD)
endif
