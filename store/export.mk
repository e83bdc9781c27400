# SPDX-License-Identifier: MIT
# store/export*.c: exporting the delta between two versions; store/archive.c: libarchive (tar
# import and export).
store_libeos_store_a_SOURCES += store/archive.h store/archive.c
