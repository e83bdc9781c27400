# SPDX-License-Identifier: MIT
# Crash test of the session view (issue 9 item 1), included from tests/local.mk: crash-view.sh
# SIGKILLs eosfs while five kinds of writers (crash-view.py) run, checks every acknowledged
# operation at each remount, then the publish and its blame. `make soak` runs it with 500 kills.
TESTS += tests/integration/crash-view.sh
EXTRA_DIST += tests/integration/crash-view.sh tests/integration/crash-view.py \
	tests/integration/crash_view_tree.py tests/integration/crash_view_writers.py
