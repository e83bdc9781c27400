# SPDX-License-Identifier: MIT
# store/git.c (the only libgit2 user) and store/ignore.c (.gitignore rules).
