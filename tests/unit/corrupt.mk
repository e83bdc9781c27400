# SPDX-License-Identifier: MIT
# Damage on disk (included from tests/local.mk): write-ahead logs and scans past damaged tables
# (unit), every kind of damaged store file through eos-store (integration).
if HAVE_CHECK
UNIT_TESTS += tests/unit/test-corrupt

tests_unit_test_corrupt_SOURCES = tests/unit/test-corrupt.c
tests_unit_test_corrupt_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_corrupt_LDADD = $(TEST_LDADD)
endif
INTEGRATION_TESTS += tests/integration/corrupt.sh
