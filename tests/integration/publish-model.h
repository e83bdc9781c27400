/* SPDX-License-Identifier: MIT */
/*
 * publish-model: the property test of "every session publishes" (usage in publish-model.c).
 *
 * publish-model.sh mounts two sessions of one sandbox, runs `publish-model ops` in each (seeded
 * random operations through the mounted view), takes `publish-model snap` of both, unmounts,
 * publishes both with eos-store and compares a read-only mount of each new head with
 * `publish-model expect`: the publisher's snapshot in its own territory, the previous head's
 * elsewhere. Territories keep the two sessions' changes apart so that both publishes succeed:
 * session b owns the directory `b` and the lines from SHARED_SPLIT of SHARED_FILE, session a
 * everything else (the file's other lines are merged three-way by the gate).
 *
 * Single-threaded; helpers print a message and exit 2 on setup problems.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/integration/model-util.h"

#define SHARED_FILE "shared.txt"
#define SHARED_TMP  "shared.txt.new"
#define B_DIR	    "b"

enum {
	SHARED_LINES = 40, /* lines of SHARED_FILE; a edits 0..17, b edits 22..39 */
	SHARED_A_MAX = 18,
	SHARED_SPLIT = 20, /* territory boundary: lines below are a's */
	SHARED_B_MIN = 22,
	SHARED_LINE_MAX = 200,
};

/* A snapshot: one line per entry ("path\tfields"), sorted by path. */
struct snap {
	char **v;
	size_t n, cap;
};

/* The territory ('a' or 'b') of a snapshot line's key (path, or SHARED_FILE#L<n>). */
char pm_territory(const char *key);

/* publish-model-snap.c */
/* Snapshot of the tree at directory root into s. */
void pm_snap_take(const char *root, struct snap *s);
/* Read a snapshot file (as printed by pm_snap_print). */
void pm_snap_read(const char *file, struct snap *s);
void pm_snap_print(const struct snap *s, FILE *f);
void pm_snap_release(struct snap *s);
/* The expected head after side publishes: its own territory from ours, the rest from prev. */
void pm_snap_expect(char side, const struct snap *ours, const struct snap *prev, struct snap *ret);
