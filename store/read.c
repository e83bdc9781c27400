/* SPDX-License-Identifier: MIT */
/*
 * Reading a version of a sandbox. Every read resolves the sandbox's name and checks the version
 * (a tree, struct eos_tree), then reads entries; eos_store_tree_open() does the first part once
 * for readers that read one version many times.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/path.h"

#include "store/entry.h"
#include "store/sandbox.h"
#include "store/store-internal.h"

struct eos_tree {
	struct eos_store *st;
	uint64_t sbx, version;
	char sandbox[EOS_SANDBOX_ID_MAX + 1]; /* for messages */
};

static void
entry_releasep(struct eos_entry *e)
{
	eos_entry_release(e);
}

/* Resolve the sandbox and the version (0 = head) into t. */
static int
tree_resolve(struct eos_store *st, const char *sandbox, uint64_t v, struct eos_tree *t,
	     struct eos_error *err)
{
	int r = eos_sandbox_resolve(st, sandbox, &t->sbx, err);

	r = r ?: eos_sandbox_version(st, t->sbx, sandbox, v, &t->version, err);
	if (r < 0)
		return r;
	t->st = st;
	snprintf(t->sandbox, sizeof(t->sandbox), "%s", sandbox);
	return 0;
}

/* Resolve path in t into *ret. */
static int
tree_entry(const struct eos_tree *t, const char *path, struct eos_entry *ret, struct eos_error *err)
{
	int r = eos_path_check(path, err);

	r = r ?: eos_entry_resolve(t->st, NULL, t->sbx, t->version, path, ret, err);
	if (r < 0)
		return eos_error_prefix(err, r, "sandbox '%s'", t->sandbox);
	return 0;
}

int
eos_store_tree_open(struct eos_store *st, const char *sandbox, uint64_t v, struct eos_tree **ret,
		    struct eos_error *err)
{
	cleanup_free struct eos_tree *t = calloc(1, sizeof(*t));
	int r;

	if (!t)
		return eos_error_set(err, -ENOMEM, "out of memory");
	r = tree_resolve(st, sandbox, v, t, err);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(t);
	return 0;
}

void
eos_tree_free(struct eos_tree *t)
{
	free(t);
}

uint64_t
eos_tree_version(const struct eos_tree *t)
{
	return t->version;
}

int
eos_tree_stat(const struct eos_tree *t, const char *path, struct eos_stat *ret,
	      struct eos_error *err)
{
	EOS_CLEANUP(entry_releasep) struct eos_entry e = { 0 };
	int r = tree_entry(t, path, &e, err);

	if (r < 0)
		return r;
	*ret = e.st;
	return 0;
}

int
eos_store_stat(struct eos_store *st, const char *sandbox, uint64_t v, const char *path,
	       struct eos_stat *ret, struct eos_error *err)
{
	struct eos_tree t;
	int r = tree_resolve(st, sandbox, v, &t, err);

	return r ?: eos_tree_stat(&t, path, ret, err);
}

int
eos_tree_lookup_child(const struct eos_tree *t, const char *dir_path, const struct eos_stat *dir,
		      const char *name, struct eos_stat *ret, struct eos_error *err)
{
	EOS_CLEANUP(entry_releasep) struct eos_entry e = { 0 };
	char id[EOS_LAYER_ID_LEN];
	size_t nlen = strlen(name);
	int r = eos_name_check(name, nlen, err);

	r = r ?: eos_path_check(dir_path, err);
	if (r < 0)
		return r;
	if (dir->kind != EOS_KIND_DIR)
		return eos_error_set(err, -ENOTDIR, "sandbox '%s': '%s' is not a directory",
				     t->sandbox, dir_path);
	r = eos_entry_lookup(t->st, NULL, t->sbx, t->version, dir_path, strlen(dir_path),
			     dir->floor, name, nlen, &e, err);
	if (r == -ENOENT && !err)
		return r; /* a view's negative lookup: nothing to format */
	if (r == -ENOENT) {
		eos_layer_id_format(t->version, id);
		return eos_error_set(err, r, "sandbox '%s': '%s%s%s' does not exist at %s",
				     t->sandbox, dir_path, dir_path[0] ? "/" : "", name, id);
	}
	if (r < 0)
		return eos_error_prefix(err, r, "sandbox '%s'", t->sandbox);
	*ret = e.st;
	return 0;
}

int
eos_store_lookup_child(struct eos_store *st, const char *sandbox, uint64_t v, const char *dir_path,
		       const struct eos_stat *dir, const char *name, struct eos_stat *ret,
		       struct eos_error *err)
{
	struct eos_tree t;
	int r = tree_resolve(st, sandbox, v, &t, err);

	return r ?: eos_tree_lookup_child(&t, dir_path, dir, name, ret, err);
}

struct readdir_ctx {
	eos_readdir_fn fn;
	void *ctx;
	enum eos_entry_list_flags flags;
	bool stopped; /* fn returned non-zero: hand its value back untouched */
};

static int
readdir_one(void *ctx, const char *name, size_t nlen, const struct eos_entry *e)
{
	struct readdir_ctx *rc = ctx;
	int r = rc->fn(rc->ctx, name, &e->st);

	(void)nlen;
	rc->stopped = r != 0;
	return r;
}

/* The children of path, whose entry is dir (NULL: resolved from the root here). */
static int
readdir_at(const struct eos_tree *t, const char *path, const struct eos_stat *dir,
	   const char *start_after, struct readdir_ctx *rc, struct eos_error *err)
{
	EOS_CLEANUP(entry_releasep) struct eos_entry e = { 0 };
	int r = dir ? 0 : eos_entry_resolve(t->st, NULL, t->sbx, t->version, path, &e, err);

	if (r < 0)
		return r;
	if (!dir)
		dir = &e.st;
	if (dir->kind != EOS_KIND_DIR)
		return eos_error_set(err, -ENOTDIR, "'%s' is not a directory", path);
	return eos_entry_list(t->st, NULL, t->sbx, t->version, path, strlen(path), dir->floor,
			      start_after, rc->flags, readdir_one, rc, err);
}

static int
tree_readdir(const struct eos_tree *t, const char *path, const struct eos_stat *dir,
	     const char *start_after, struct readdir_ctx *rc, struct eos_error *err)
{
	int r = eos_path_check(path, err);

	if (r < 0)
		return r;
	r = readdir_at(t, path, dir, start_after, rc, err);
	if (r < 0 && !rc->stopped)
		return eos_error_prefix(err, r, "sandbox '%s'", t->sandbox);
	return r;
}

int
eos_tree_readdir(const struct eos_tree *t, const char *path, const struct eos_stat *dir,
		 const char *start_after, eos_readdir_fn fn, void *ctx, struct eos_error *err)
{
	struct readdir_ctx rc = { .fn = fn, .ctx = ctx, .flags = EOS_ENTRY_LIST_NO_CACHE };

	return tree_readdir(t, path, dir, start_after, &rc, err);
}

int
eos_store_readdir(struct eos_store *st, const char *sandbox, uint64_t v, const char *path,
		  const char *start_after, eos_readdir_fn fn, void *ctx, struct eos_error *err)
{
	struct readdir_ctx rc = { .fn = fn, .ctx = ctx };
	struct eos_tree t;
	int r = tree_resolve(st, sandbox, v, &t, err);

	return r ?: tree_readdir(&t, path, NULL, start_after, &rc, err);
}

int
eos_tree_readlink(const struct eos_tree *t, const char *path, char **ret, struct eos_error *err)
{
	EOS_CLEANUP(entry_releasep) struct eos_entry e = { 0 };
	int r = tree_entry(t, path, &e, err);

	if (r < 0)
		return r;
	if (e.st.kind != EOS_KIND_SYMLINK || !e.target)
		return eos_error_set(err, -EINVAL, "sandbox '%s': '%s' is not a symlink",
				     t->sandbox, path);
	*ret = TAKE_PTR(e.target);
	return 0;
}

int
eos_store_readlink(struct eos_store *st, const char *sandbox, uint64_t v, const char *path,
		   char **ret, struct eos_error *err)
{
	struct eos_tree t;
	int r = tree_resolve(st, sandbox, v, &t, err);

	return r ?: eos_tree_readlink(&t, path, ret, err);
}

int
eos_tree_xattrs(const struct eos_tree *t, const char *path, eos_xattr_fn fn, void *ctx,
		struct eos_error *err)
{
	EOS_CLEANUP(entry_releasep) struct eos_entry e = { 0 };
	int r = tree_entry(t, path, &e, err);

	for (uint32_t i = 0; r == 0 && i < e.nxattrs; i++)
		r = fn(ctx, e.xattrs[i].name, e.xattrs[i].value, e.xattrs[i].len);
	return r;
}

int
eos_store_xattrs(struct eos_store *st, const char *sandbox, uint64_t v, const char *path,
		 eos_xattr_fn fn, void *ctx, struct eos_error *err)
{
	struct eos_tree t;
	int r = tree_resolve(st, sandbox, v, &t, err);

	return r ?: eos_tree_xattrs(&t, path, fn, ctx, err);
}

int
eos_store_file_open(struct eos_store *st, const char *sandbox, uint64_t v, const char *path,
		    struct eos_file **ret, struct eos_error *err)
{
	EOS_CLEANUP(entry_releasep) struct eos_entry e = { 0 };
	struct eos_tree t;
	int r = tree_resolve(st, sandbox, v, &t, err);

	r = r ?: tree_entry(&t, path, &e, err);
	if (r < 0)
		return r;
	if (e.st.kind == EOS_KIND_DIR)
		return eos_error_set(err, -EISDIR, "sandbox '%s': '%s' is a directory", sandbox,
				     path);
	if (e.st.kind != EOS_KIND_FILE)
		return eos_error_set(err, -EINVAL, "sandbox '%s': '%s' is not a regular file",
				     sandbox, path);
	r = eos_store_file_open_content(st, &e.st.content, ret, err);
	if (r < 0)
		return eos_error_prefix(err, r, "sandbox '%s': open '%s'", sandbox, path);
	return 0;
}
