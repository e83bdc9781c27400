/* SPDX-License-Identifier: MIT */
#include "fs/writelog.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"

static int
reserve(struct eos_writelog *l, size_t n)
{
	return eos_buf_array_reserve(&l->v, &l->cap, n, sizeof(*l->v), 4);
}

static void
insert_at(struct eos_writelog *l, size_t i, struct eos_wrange r)
{
	memmove(&l->v[i + 1], &l->v[i], (l->n - i) * sizeof(*l->v));
	l->v[i] = r;
	l->n++;
}

static void
remove_at(struct eos_writelog *l, size_t i, size_t count)
{
	memmove(&l->v[i], &l->v[i + count], (l->n - i - count) * sizeof(*l->v));
	l->n -= count;
}

/* Merge v[i] with its neighbours when they touch and share the operation. */
static void
merge_around(struct eos_writelog *l, size_t i)
{
	if (i + 1 < l->n && l->v[i].end == l->v[i + 1].start && l->v[i].op == l->v[i + 1].op) {
		l->v[i].end = l->v[i + 1].end;
		remove_at(l, i + 1, 1);
	}
	if (i > 0 && l->v[i - 1].end == l->v[i].start && l->v[i - 1].op == l->v[i].op) {
		l->v[i - 1].end = l->v[i].end;
		remove_at(l, i, 1);
	}
}

int
eos_writelog_reserve(struct eos_writelog *l)
{
	return reserve(l, l->n + 2);
}

int
eos_writelog_add(struct eos_writelog *l, uint64_t start, uint64_t end, uint32_t op)
{
	size_t i = 0, j;

	if (start >= end)
		return 0;
	/* room for a split (+1) and the new range (+1) */
	if (reserve(l, l->n + 2) < 0)
		return -ENOMEM;
	while (i < l->n && l->v[i].end <= start)
		i++;
	/* a range straddling start keeps its head, and its tail when it also straddles end */
	if (i < l->n && l->v[i].start < start) {
		struct eos_wrange head = l->v[i];

		head.end = start;
		l->v[i].start = start;
		insert_at(l, i, head);
		i++;
	}
	j = i;
	while (j < l->n && l->v[j].end <= end)
		j++;
	if (j < l->n && l->v[j].start < end)
		l->v[j].start = end;
	remove_at(l, i, j - i);
	insert_at(l, i, (struct eos_wrange){ .start = start, .end = end, .op = op });
	merge_around(l, i);
	return 0;
}

void
eos_writelog_truncate(struct eos_writelog *l, uint64_t size)
{
	while (l->n > 0 && l->v[l->n - 1].start >= size)
		l->n--;
	if (l->n > 0 && l->v[l->n - 1].end > size)
		l->v[l->n - 1].end = size;
}

void
eos_writelog_release(struct eos_writelog *l)
{
	free(l->v);
	*l = (struct eos_writelog){ 0 };
}

int
eos_writelog_encode(const struct eos_writelog *l, struct eos_buf *out)
{
	int r = eos_buf_append_le32(out, (uint32_t)l->n);

	for (size_t i = 0; r == 0 && i < l->n; i++) {
		r = eos_buf_append_le64(out, l->v[i].start);
		r = r ?: eos_buf_append_le64(out, l->v[i].end);
		r = r ?: eos_buf_append_le32(out, l->v[i].op);
	}
	return r;
}

int
eos_writelog_decode(const void *p, size_t n, struct eos_writelog *ret)
{
	struct eos_reader rd = { .p = p, .left = n };
	struct eos_writelog l = { 0 };
	uint32_t count;
	int r = eos_reader_le32(&rd, &count);

	if (r < 0 || count > n / 20 || reserve(&l, count) < 0)
		return r < 0 ? r : -EBADMSG;
	for (uint32_t i = 0; i < count; i++) {
		struct eos_wrange w;

		r = eos_reader_le64(&rd, &w.start);
		r = r ?: eos_reader_le64(&rd, &w.end);
		r = r ?: eos_reader_le32(&rd, &w.op);
		if (r < 0 || w.start >= w.end || (l.n > 0 && l.v[l.n - 1].end > w.start))
			break;
		l.v[l.n++] = w;
	}
	if (l.n != count || rd.left != 0) {
		eos_writelog_release(&l);
		return -EBADMSG;
	}
	*ret = l;
	return 0;
}

void
eos_opstable_init(struct eos_opstable *t)
{
	*t = (struct eos_opstable){ 0 };
	pthread_mutex_init(&t->lock, NULL);
}

void
eos_opstable_release(struct eos_opstable *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->names[i]);
	free(t->names);
	eos_hashmap_release(&t->index);
	pthread_mutex_destroy(&t->lock);
}

static int
set_locked(struct eos_opstable *t, uint32_t i, const char *owner)
{
	union eos_hashmap_value *slot;

	if (i > EOS_OPSTABLE_MAX)
		return -EINVAL;
	if (eos_buf_array_reserve(&t->names, &t->cap, (size_t)i + 1, sizeof(*t->names), 8) < 0)
		return -ENOMEM;
	if (i < t->n && t->names[i])
		return strcmp(t->names[i], owner) == 0 ? 0 : -EINVAL;
	for (; t->n <= i; t->n++)
		t->names[t->n] = NULL;
	t->names[i] = strdup(owner);
	if (!t->names[i] || eos_hashmap_get_or_insert(&t->index, owner, strlen(owner), &slot) < 0) {
		free(t->names[i]);
		t->names[i] = NULL;
		return -ENOMEM;
	}
	slot->u64 = (uint64_t)i + 1;
	return 0;
}

int
eos_opstable_intern(struct eos_opstable *t, const char *owner, uint32_t *ret, bool *ret_new)
{
	union eos_hashmap_value *slot;
	int r = 0;

	pthread_mutex_lock(&t->lock);
	slot = eos_hashmap_find(&t->index, owner, strlen(owner));
	*ret_new = !slot;
	if (slot)
		*ret = (uint32_t)(slot->u64 - 1);
	else if ((r = set_locked(t, (uint32_t)t->n, owner)) == 0)
		*ret = (uint32_t)(t->n - 1);
	pthread_mutex_unlock(&t->lock);
	return r;
}

int
eos_opstable_set(struct eos_opstable *t, uint32_t i, const char *owner)
{
	pthread_mutex_lock(&t->lock);
	int r = set_locked(t, i, owner);
	pthread_mutex_unlock(&t->lock);
	return r;
}

const char *
eos_opstable_name(struct eos_opstable *t, uint32_t i)
{
	const char *s = NULL;

	pthread_mutex_lock(&t->lock);
	if (i < t->n)
		s = t->names[i];
	pthread_mutex_unlock(&t->lock);
	return s;
}
