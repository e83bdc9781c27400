# SPDX-License-Identifier: MIT
# store/publish*.c: the publish transaction (OCC checks, merges, the commit).
store_libeos_store_a_SOURCES += store/publish.h store/publish.c store/publish-prepare.c \
	store/publish-check.c store/publish-merge.c store/publish-blame.c store/publish-commit.c \
	store/conflict-json.c
