# SPDX-License-Identifier: MIT
# store/export*.c: exporting the delta between two versions; store/archive.c: libarchive (tar
# import and export).
store_libeos_store_a_SOURCES += store/archive.h store/archive.c
store_libeos_store_a_SOURCES += store/export.h store/export.c store/export-diff.c \
	store/export-fs.c store/export-dir.c store/export-tar.c store/export-patch.c
