/* SPDX-License-Identifier: MIT */
/*
 * fs/writelog: which operation last wrote each byte range of a file, and the table of operation
 * ids those ranges name. Pure data structures; no locking (the owner's lock guards a log).
 */
#pragma once

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/hashmap.h"

/* [start, end) written by operation op (an index into the view's operation table). */
struct eos_wrange {
	uint64_t start, end;
	uint32_t op;
};

/* Sorted, non-overlapping ranges; adjacent ranges of one operation are merged. */
struct eos_writelog {
	struct eos_wrange *v;
	size_t n, cap;
};

/* Make room so that the next eos_writelog_add() cannot fail. */
int eos_writelog_reserve(struct eos_writelog *l);
/* Record a write of [start, end) by op. -ENOMEM leaves the log unchanged. */
int eos_writelog_add(struct eos_writelog *l, uint64_t start, uint64_t end, uint32_t op);
/* Forget everything at or after size (truncate). */
void eos_writelog_truncate(struct eos_writelog *l, uint64_t size);
void eos_writelog_release(struct eos_writelog *l);
/* le32 n · (le64 start · le64 end · le32 op)* */
int eos_writelog_encode(const struct eos_writelog *l, struct eos_buf *out);
/* -EBADMSG on malformed input (unsorted, overlapping, truncated). */
int eos_writelog_decode(const void *p, size_t n, struct eos_writelog *ret);

enum {
	EOS_OPSTABLE_MAX = 1 << 20
}; /* highest operation index */

/* Interned operation ids: index → owner string ("operation:req-1"). Thread-safe. */
struct eos_opstable {
	pthread_mutex_t lock;
	struct eos_hashmap index; /* owner → index + 1 */
	char **names;
	size_t n, cap;
};

void eos_opstable_init(struct eos_opstable *t);
void eos_opstable_release(struct eos_opstable *t);
/* Index of owner (interned when new; *ret_new says so). */
int eos_opstable_intern(struct eos_opstable *t, const char *owner, uint32_t *ret, bool *ret_new);
/* Set index i to owner (loading). -EINVAL when i is taken by another name. */
int eos_opstable_set(struct eos_opstable *t, uint32_t i, const char *owner);
/* The owner of index i, or NULL. The string lives until release. */
const char *eos_opstable_name(struct eos_opstable *t, uint32_t i);
