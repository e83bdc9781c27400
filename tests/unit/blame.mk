# SPDX-License-Identifier: MIT
# Unit tests of blame (included from tests/local.mk).
