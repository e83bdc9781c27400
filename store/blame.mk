# SPDX-License-Identifier: MIT
# store/blame.c and store/linediff.c: line ownership records.
store_libeos_store_a_SOURCES += store/linediff.h store/linediff.c store/blame.h store/blame.c \
	store/blame-compute.c
