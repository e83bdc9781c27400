# SPDX-License-Identifier: MIT
# Integration tests of publish, blame and export (included from tests/local.mk).
