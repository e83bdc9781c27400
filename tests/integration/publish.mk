# SPDX-License-Identifier: MIT
# Integration tests of publish, blame and export (included from tests/local.mk).
# Sessions published through eosfs and eos-store (write logs, blame, rejections).
TESTS += tests/integration/publish-sessions.sh
EXTRA_DIST += tests/integration/publish-sessions.sh
# Crash test: crash-publish publishes in a loop, crash-publish.sh SIGKILLs it (and stops it at
# every failpoint of a publish) and verifies every publish was all or nothing.
check_PROGRAMS += tests/integration/crash-publish
tests_integration_crash_publish_SOURCES = tests/integration/crash-publish.c
tests_integration_crash_publish_CFLAGS = $(AM_CFLAGS)
tests_integration_crash_publish_LDADD = $(STORE_LIBS) -lpthread
TESTS += tests/integration/crash-publish.sh
EXTRA_DIST += tests/integration/crash-publish.sh
# eos-store export: every format applied onto the base, refusals, an export killed mid-apply.
TESTS += tests/integration/export.sh
EXTRA_DIST += tests/integration/export.sh
# Fifos, sockets and devices: import (dir and tar), a published session, exports, blame.
TESTS += tests/integration/node-types.sh
EXTRA_DIST += tests/integration/node-types.sh
# Every session publishes: random operations through two mounted sessions, both published each
# round, every head compared with the views (publish-model.sh).
check_PROGRAMS += tests/integration/publish-model
tests_integration_publish_model_SOURCES = tests/integration/publish-model.c \
	tests/integration/publish-model-snap.c tests/integration/publish-model.h \
	tests/integration/model-util.h
tests_integration_publish_model_CFLAGS = $(AM_CFLAGS)
tests_integration_publish_model_LDADD =
TESTS += tests/integration/publish-model.sh
EXTRA_DIST += tests/integration/publish-model.sh
