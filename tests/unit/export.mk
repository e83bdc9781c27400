# SPDX-License-Identifier: MIT
# Unit tests of export (included from tests/local.mk).
