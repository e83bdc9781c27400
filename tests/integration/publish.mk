# SPDX-License-Identifier: MIT
# Integration tests of publish, blame and export (included from tests/local.mk).
# Sessions published through eosfs and eos-store (write logs, blame, rejections).
TESTS += tests/integration/publish-sessions.sh
EXTRA_DIST += tests/integration/publish-sessions.sh
# eos-store export: every format applied onto the base, refusals, an export killed mid-apply.
TESTS += tests/integration/export.sh
EXTRA_DIST += tests/integration/export.sh
