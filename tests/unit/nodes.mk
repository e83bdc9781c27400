# SPDX-License-Identifier: MIT
# Unit tests of fifos, devices and sockets across import, the view, publish, export and blame
# (included from tests/local.mk). Joining UNIT_TESTS is enough (see tests/unit/fs.mk).
if HAVE_CHECK
UNIT_TESTS += tests/unit/test-nodes

tests_unit_test_nodes_SOURCES = tests/unit/test-nodes.c tests/unit/view-util.c tests/unit/view-util.h
tests_unit_test_nodes_CFLAGS = $(TEST_CFLAGS) $(FUSE_CFLAGS)
tests_unit_test_nodes_LDADD = $(FS_TEST_LDADD)
endif
