/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/path.h"

#include "store/entry.h"
#include "store/sandbox.h"
#include "store/store-internal.h"

static void
entry_releasep(struct eos_entry *e)
{
	eos_entry_release(e);
}

/* Check path, resolve the sandbox and the version (0 = head). */
static int
read_begin(struct eos_store *st, const char *sandbox, uint64_t v, const char *path,
	   uint64_t *ret_sbx, uint64_t *ret_v, struct eos_error *err)
{
	int r = eos_path_check(path, err);

	r = r ?: eos_sandbox_resolve(st, sandbox, ret_sbx, err);
	return r ?: eos_sandbox_version(st, *ret_sbx, sandbox, v, ret_v, err);
}

/* Resolve path in sandbox at v (0 = head) into *ret. */
static int
read_resolve(struct eos_store *st, const char *sandbox, uint64_t v, const char *path,
	     struct eos_entry *ret, struct eos_error *err)
{
	uint64_t sbx, version;
	int r = read_begin(st, sandbox, v, path, &sbx, &version, err);

	if (r < 0)
		return r;
	r = eos_entry_resolve(st, NULL, sbx, version, path, ret, err);
	if (r < 0)
		return eos_error_prefix(err, r, "sandbox '%s'", sandbox);
	return 0;
}

int
eos_store_stat(struct eos_store *st, const char *sandbox, uint64_t v, const char *path,
	       struct eos_stat *ret, struct eos_error *err)
{
	EOS_CLEANUP(entry_releasep) struct eos_entry e = { 0 };
	int r = read_resolve(st, sandbox, v, path, &e, err);

	if (r < 0)
		return r;
	*ret = e.st;
	return 0;
}

int
eos_store_lookup_child(struct eos_store *st, const char *sandbox, uint64_t v, const char *dir_path,
		       const struct eos_stat *dir, const char *name, struct eos_stat *ret,
		       struct eos_error *err)
{
	EOS_CLEANUP(entry_releasep) struct eos_entry e = { 0 };
	char id[EOS_LAYER_ID_LEN];
	uint64_t sbx, version;
	size_t nlen = strlen(name);
	int r = eos_name_check(name, nlen, err);

	r = r ?: read_begin(st, sandbox, v, dir_path, &sbx, &version, err);
	if (r < 0)
		return r;
	if (dir->kind != EOS_KIND_DIR)
		return eos_error_set(err, -ENOTDIR, "sandbox '%s': '%s' is not a directory",
				     sandbox, dir_path);
	r = eos_entry_lookup(st, NULL, sbx, version, dir_path, strlen(dir_path), dir->floor, name,
			     nlen, &e, err);
	if (r == -ENOENT) {
		eos_layer_id_format(version, id);
		return eos_error_set(err, r, "sandbox '%s': '%s%s%s' does not exist at %s", sandbox,
				     dir_path, dir_path[0] ? "/" : "", name, id);
	}
	if (r < 0)
		return eos_error_prefix(err, r, "sandbox '%s'", sandbox);
	*ret = e.st;
	return 0;
}

struct readdir_ctx {
	eos_readdir_fn fn;
	void *ctx;
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

static int
readdir_at(struct eos_store *st, uint64_t sbx, uint64_t v, const char *path,
	   const char *start_after, struct readdir_ctx *rc, struct eos_error *err)
{
	EOS_CLEANUP(entry_releasep) struct eos_entry dir = { 0 };
	int r = eos_entry_resolve(st, NULL, sbx, v, path, &dir, err);

	if (r < 0)
		return r;
	if (dir.st.kind != EOS_KIND_DIR)
		return eos_error_set(err, -ENOTDIR, "'%s' is not a directory", path);
	return eos_entry_list(st, NULL, sbx, v, path, strlen(path), dir.st.floor, start_after, 0,
			      readdir_one, rc, err);
}

int
eos_store_readdir(struct eos_store *st, const char *sandbox, uint64_t v, const char *path,
		  const char *start_after, eos_readdir_fn fn, void *ctx, struct eos_error *err)
{
	struct readdir_ctx rc = { .fn = fn, .ctx = ctx };
	uint64_t sbx, version;
	int r = read_begin(st, sandbox, v, path, &sbx, &version, err);

	if (r < 0)
		return r;
	r = readdir_at(st, sbx, version, path, start_after, &rc, err);
	if (r < 0 && !rc.stopped)
		return eos_error_prefix(err, r, "sandbox '%s'", sandbox);
	return r;
}

int
eos_store_readlink(struct eos_store *st, const char *sandbox, uint64_t v, const char *path,
		   char **ret, struct eos_error *err)
{
	EOS_CLEANUP(entry_releasep) struct eos_entry e = { 0 };
	int r = read_resolve(st, sandbox, v, path, &e, err);

	if (r < 0)
		return r;
	if (e.st.kind != EOS_KIND_SYMLINK || !e.target)
		return eos_error_set(err, -EINVAL, "sandbox '%s': '%s' is not a symlink", sandbox,
				     path);
	*ret = TAKE_PTR(e.target);
	return 0;
}

int
eos_store_xattrs(struct eos_store *st, const char *sandbox, uint64_t v, const char *path,
		 eos_xattr_fn fn, void *ctx, struct eos_error *err)
{
	EOS_CLEANUP(entry_releasep) struct eos_entry e = { 0 };
	int r = read_resolve(st, sandbox, v, path, &e, err);

	for (uint32_t i = 0; r == 0 && i < e.nxattrs; i++)
		r = fn(ctx, e.xattrs[i].name, e.xattrs[i].value, e.xattrs[i].len);
	return r;
}

int
eos_store_file_open(struct eos_store *st, const char *sandbox, uint64_t v, const char *path,
		    struct eos_file **ret, struct eos_error *err)
{
	EOS_CLEANUP(entry_releasep) struct eos_entry e = { 0 };
	int r = read_resolve(st, sandbox, v, path, &e, err);

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
