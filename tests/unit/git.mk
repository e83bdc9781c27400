# SPDX-License-Identifier: MIT
# Unit tests of store/git.c, store/git-index.c and store/ignore.c (included from tests/local.mk). Both compare with
# the real git (git apply, git merge-file, git check-ignore) and fail when it is missing.
if HAVE_CHECK
UNIT_TESTS += \
	tests/unit/test-git \
	tests/unit/test-git-index \
	tests/unit/test-ignore

tests_unit_test_git_SOURCES = tests/unit/test-git.c
tests_unit_test_git_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_git_LDADD = $(TEST_LDADD)
tests_unit_test_git_index_SOURCES = tests/unit/test-git-index.c
tests_unit_test_git_index_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_git_index_LDADD = $(TEST_LDADD)
tests_unit_test_ignore_SOURCES = tests/unit/test-ignore.c
tests_unit_test_ignore_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_ignore_LDADD = $(TEST_LDADD)
endif
