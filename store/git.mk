# SPDX-License-Identifier: MIT
# store/git.c (the only libgit2 user) and store/ignore.c (.gitignore rules).
store_libeos_store_a_SOURCES += store/git.h store/git.c store/ignore.h store/ignore.c
