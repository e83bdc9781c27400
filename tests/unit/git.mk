# SPDX-License-Identifier: MIT
# Unit tests of store/git.c and store/ignore.c (included from tests/local.mk).
