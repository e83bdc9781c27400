/* SPDX-License-Identifier: MIT */
/*
 * fs/nodetab: one shard of the node table, inode number → node. The nodes chain through
 * node->hnext from a power-of-two array of buckets that grows with the nodes and shrinks after
 * they go, so that a node costs one pointer and a half to one bucket (a node per looked-up
 * file).
 */
#include <errno.h>
#include <stdlib.h>

#include "fs/view-internal.h"

enum {
	BUCKETS_MIN = 16,
	LOAD_MAX = 2, /* nodes per bucket before the buckets double: chains of 1-2 on average */
};

static size_t
bucket_of(uint64_t ino, size_t cap)
{
	/* murmur3's finaliser: counter numbers of one shard are 64 apart */
	ino ^= ino >> 33;
	ino *= 0xFF51AFD7ED558CCDULL;
	ino ^= ino >> 33;
	return (size_t)ino & (cap - 1);
}

struct eos_node *
eos_table_find(const struct eos_table_shard *s, uint64_t ino)
{
	if (s->cap == 0)
		return NULL;
	for (struct eos_node *n = s->buckets[bucket_of(ino, s->cap)]; n; n = n->hnext)
		if (n->ino == ino)
			return n;
	return NULL;
}

/* Move every node into cap buckets (0 or -ENOMEM, the table unchanged). */
static int
rehash(struct eos_table_shard *s, size_t cap)
{
	struct eos_node **b = calloc(cap, sizeof(*b));

	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < s->cap; i++)
		for (struct eos_node *n = s->buckets[i], *next; n; n = next) {
			size_t k = bucket_of(n->ino, cap);

			next = n->hnext;
			n->hnext = b[k];
			b[k] = n;
		}
	free(s->buckets);
	s->buckets = b;
	s->cap = cap;
	return 0;
}

int
eos_table_insert(struct eos_table_shard *s, struct eos_node *n)
{
	size_t k;

	if (eos_table_find(s, n->ino))
		return -EEXIST;
	/* a failed growth leaves longer chains, which still work */
	if (s->count >= s->cap * LOAD_MAX && rehash(s, s->cap ? s->cap * 2 : BUCKETS_MIN) < 0 &&
	    !s->cap)
		return -ENOMEM;
	k = bucket_of(n->ino, s->cap);
	n->hnext = s->buckets[k];
	s->buckets[k] = n;
	s->count++;
	return 0;
}

bool
eos_table_remove(struct eos_table_shard *s, struct eos_node *n)
{
	struct eos_node **at;

	if (s->cap == 0)
		return false;
	for (at = &s->buckets[bucket_of(n->ino, s->cap)]; *at && *at != n; at = &(*at)->hnext)
		;
	if (!*at)
		return false;
	*at = n->hnext;
	n->hnext = NULL;
	s->count--;
	if (s->cap > BUCKETS_MIN && s->count < s->cap / 4)
		rehash(s, s->cap / 4); /* after a storm of deletes: give the buckets back */
	return true;
}

struct eos_node *
eos_table_next(const struct eos_table_shard *s, struct eos_node_iter *it)
{
	struct eos_node *n = it->next;

	while (!n && it->bucket < s->cap)
		n = s->buckets[it->bucket++];
	it->next = n ? n->hnext : NULL;
	return n;
}

void
eos_table_release(struct eos_table_shard *s)
{
	free(s->buckets);
	s->buckets = NULL;
	s->cap = s->count = 0;
}
