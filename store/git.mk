# SPDX-License-Identifier: MIT
# store/git.c (the only libgit2 user), store/ignore.c (.gitignore rules), and the git index
# refresh of an import (store/git-index.c, store/import-git.c for directories and
# store/import-git-module.c for their submodules,
# store/import-tar-git.c for archives; no libgit2).
store_libeos_store_a_SOURCES += store/git.h store/git.c store/ignore.h store/ignore.c \
	store/git-index.h store/git-index.c store/import-git.c \
	store/import-git-module.c store/import-tar-git.c
