/* SPDX-License-Identifier: MIT */
/*
 * Whole-tree digests for tests: walk the tree visible at a version through the public read API
 * and hash every path with what a reader can observe. Hard-link groups are hashed by membership
 * (the first path seen with a group id stands for the group), so renumbering groups does not
 * change the digest.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/digest.h"
#include "common/endian.h"

#include "tests/unit/testutil.h"

struct link_group {
	uint64_t id;
	char *path;
};

struct tree_walk {
	struct eos_store *st;
	const char *sandbox;
	uint64_t v;
	struct eos_sha256 *sha; /* NULL: count only */
	uint64_t count;
	struct link_group *groups;
	size_t ngroups;
};

/* A child collected during readdir, visited once the listing is done. */
struct child {
	char *name;
	struct eos_stat st;
};

struct child_list {
	struct child *v;
	size_t n, cap;
};

static void
hash_bytes(struct tree_walk *w, const void *p, size_t n)
{
	ck_assert_int_eq(eos_sha256_update(w->sha, p, n), 0);
}

static void
hash_u64(struct tree_walk *w, uint64_t x)
{
	uint8_t b[8];

	eos_put_le64(b, x);
	hash_bytes(w, b, sizeof(b));
}

static void
hash_str(struct tree_walk *w, const char *s)
{
	hash_bytes(w, s, strlen(s) + 1);
}

static const char *
group_path(struct tree_walk *w, uint64_t id, const char *path)
{
	struct link_group *g;

	for (size_t i = 0; i < w->ngroups; i++)
		if (w->groups[i].id == id)
			return w->groups[i].path;
	g = reallocarray(w->groups, w->ngroups + 1, sizeof(*g));
	ck_assert_ptr_nonnull(g);
	w->groups = g;
	g[w->ngroups] = (struct link_group){ .id = id, .path = strdup(path) };
	ck_assert_ptr_nonnull(g[w->ngroups].path);
	return g[w->ngroups++].path;
}

static void
hash_content(struct tree_walk *w, const char *path, uint64_t size)
{
	EOS_CLEANUP(eos_file_closep) struct eos_file *f = NULL;
	struct eos_sha256 *content = NULL;
	struct eos_error err = { 0 };
	struct eos_digest d;
	uint8_t buf[65536];
	uint64_t off = 0;
	int r;

	r = eos_store_file_open(w->st, w->sandbox, w->v, path, &f, &err);
	ck_assert_msg(r == 0, "open '%s': %s", path, eos_error_message(&err, r));
	ck_assert_int_eq(eos_sha256_new(&content), 0);
	for (;;) {
		ssize_t n = eos_file_pread(f, buf, sizeof(buf), off, &err);

		ck_assert_msg(n >= 0, "read '%s': %s", path, eos_error_message(&err, (int)n));
		if (n == 0)
			break;
		ck_assert_int_eq(eos_sha256_update(content, buf, (size_t)n), 0);
		off += (uint64_t)n;
	}
	ck_assert_msg(off == size, "read '%s': %llu bytes, stat says %llu", path,
		      (unsigned long long)off, (unsigned long long)size);
	ck_assert_int_eq(eos_sha256_final(content, &d), 0);
	eos_sha256_free(content);
	hash_bytes(w, d.b, sizeof(d.b));
}

static void
hash_entry(struct tree_walk *w, const char *path, const struct eos_stat *s)
{
	struct eos_error err = { 0 };

	hash_str(w, path);
	hash_u64(w, (uint64_t)s->kind);
	hash_u64(w, s->attr.mode);
	hash_u64(w, s->attr.uid);
	hash_u64(w, s->attr.gid);
	hash_u64(w, (uint64_t)s->attr.mtime_ns);
	hash_u64(w, s->size);
	hash_u64(w, s->rdev);
	hash_u64(w, s->link_group != 0);
	if (s->link_group)
		hash_str(w, group_path(w, s->link_group, path));
	if (s->kind == EOS_KIND_SYMLINK) {
		cleanup_free char *target = NULL;
		int r = eos_store_readlink(w->st, w->sandbox, w->v, path, &target, &err);

		ck_assert_msg(r == 0, "readlink '%s': %s", path, eos_error_message(&err, r));
		hash_str(w, target);
	}
	if (s->kind == EOS_KIND_FILE)
		hash_content(w, path, s->size);
}

static int
collect(void *ctx, const char *name, const struct eos_stat *st)
{
	struct child_list *l = ctx;
	struct child *p = l->v;

	if (l->n == l->cap) { /* doubling: growing by one is quadratic (minutes under ASan) */
		l->cap = l->cap ? 2 * l->cap : 64;
		p = reallocarray(l->v, l->cap, sizeof(*p));
		ck_assert_ptr_nonnull(p);
		l->v = p;
	}
	p[l->n].name = strdup(name);
	ck_assert_ptr_nonnull(p[l->n].name);
	p[l->n++].st = *st;
	return 0;
}

static void
walk(struct tree_walk *w, const char *dir)
{
	struct child_list l = { 0 };
	struct eos_error err = { 0 };
	int r;

	r = eos_store_readdir(w->st, w->sandbox, w->v, dir, NULL, collect, &l, &err);
	ck_assert_msg(r == 0, "readdir '%s': %s", dir, eos_error_message(&err, r));
	for (size_t i = 0; i < l.n; i++) {
		cleanup_free char *path = NULL;

		ck_assert_int_ge(asprintf(&path, "%s%s%s", dir, dir[0] ? "/" : "", l.v[i].name), 0);
		w->count++;
		if (w->sha)
			hash_entry(w, path, &l.v[i].st);
		if (l.v[i].st.kind == EOS_KIND_DIR)
			walk(w, path);
		free(l.v[i].name);
	}
	free(l.v);
}

static void
tree_walk_run(struct tree_walk *w)
{
	struct eos_error err = { 0 };
	struct eos_stat root;
	int r;

	r = eos_store_stat(w->st, w->sandbox, w->v, "", &root, &err);
	ck_assert_msg(r == 0, "stat root of '%s' at %llu: %s", w->sandbox, (unsigned long long)w->v,
		      eos_error_message(&err, r));
	if (w->sha)
		hash_entry(w, "", &root);
	walk(w, "");
	for (size_t i = 0; i < w->ngroups; i++)
		free(w->groups[i].path);
	free(w->groups);
}

struct eos_digest
eos_test_tree_digest(struct eos_store *st, const char *sandbox, uint64_t v)
{
	struct tree_walk w = { .st = st, .sandbox = sandbox, .v = v };
	struct eos_digest d;

	ck_assert_int_eq(eos_sha256_new(&w.sha), 0);
	tree_walk_run(&w);
	ck_assert_int_eq(eos_sha256_final(w.sha, &d), 0);
	eos_sha256_free(w.sha);
	return d;
}

uint64_t
eos_test_tree_count(struct eos_store *st, const char *sandbox, uint64_t v)
{
	struct tree_walk w = { .st = st, .sandbox = sandbox, .v = v };

	tree_walk_run(&w);
	return w.count;
}
