# SPDX-License-Identifier: MIT
# Unit tests of the publish gate (included from tests/local.mk).
