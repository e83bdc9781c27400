# The randomized model checker for the session view (issue 3): fs-model (libc only) applies
# seeded random operations to a view and a plain directory and compares them; fs-model.sh
# mounts views with fs/eosfs and runs it. Included from tests/local.mk.
check_PROGRAMS += tests/integration/fs-model
tests_integration_fs_model_SOURCES = tests/integration/fs-model.c tests/integration/fs-model.h \
	tests/integration/fs-model-gen.c tests/integration/fs-model-run.c \
	tests/integration/fs-model-tree.c
tests_integration_fs_model_CFLAGS = $(AM_CFLAGS)
tests_integration_fs_model_LDADD =
TESTS += tests/integration/fs-model.sh
EXTRA_DIST += tests/integration/fs-model.sh
