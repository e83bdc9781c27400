# The filesystem conformance suite of the session view (included from tests/local.mk):
# fs-conformance runs syscall-level checks in a directory (libc only), fs-conformance.sh mounts
# views with eosfs and runs it on them.
check_PROGRAMS += tests/integration/fs-conformance
tests_integration_fs_conformance_SOURCES = tests/integration/fs-conformance.c \
	tests/integration/fs-conformance.h tests/integration/fs-conformance-perm.c
tests_integration_fs_conformance_CFLAGS = $(AM_CFLAGS)
tests_integration_fs_conformance_LDADD =
TESTS += tests/integration/fs-conformance.sh
EXTRA_DIST += tests/integration/fs-conformance.sh
# Owners at the mount: a root mount seen by other users, an unprivileged user's session of
# root's files.
TESTS += tests/integration/fs-owners.sh
EXTRA_DIST += tests/integration/fs-owners.sh
