/* SPDX-License-Identifier: MIT */
/*
 * The git indexes of the work trees in an imported archive (doc/fs.md, "Imported git indexes").
 * An archive keeps no inode numbers or ctimes, so whether an index entry still describes the
 * file beside it can't be told from stat data as the directory import does (import-git.c). It
 * is told from the content, which is stricter: the entry's object id must be the git blob id of
 * the archive's bytes (or symlink target), and its executable bit the archive's.
 *
 * Pass 1 keeps the bytes of each .git/index up to EOS_IMPORT_INDEX_MAX, and of each submodule's
 * index and config (.git/modules/<name>/, eos_tar_git_read). Once the tree is final, a
 * submodule's index finds its work tree in its config, and the files the indexes track are
 * marked (eos_tar_git_plan); pass 2 hashes those as git does while their bytes are in hand
 * (eos_tar_git_hash); after the data, each index is staged with the matching entries' stat data
 * rewritten to what a view shows (eos_tar_git_stage). A file with other names (a hard-link
 * group) shows the group's inode number, so its entry keeps the archive's data, as does every
 * entry of an index the parser does not read; such an index is staged byte for byte.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/cleanup.h"
#include "common/digest.h"
#include "common/path.h"

#include "store/changeset.h"
#include "store/import-tar.h"

enum {
	NS = 1000000000,
	MODE_TYPE = 0170000,
	MODE_FILE = 0100000,
	MODE_LINK = 0120000,
};

/* One work tree: the archive's nodes, the tree's path in the import; its index's mtime. */
struct work_tree {
	struct tar_scan *s;
	const char *top;
	int64_t index_s;    /* the index's mtime in the archive, seconds */
	int64_t racy_max_s; /* the newest mtime refreshed in or after that second, or -1 */
};

void
eos_tar_git_release(struct tar_node *node)
{
	free(node->oid);
	free(node->index);
	free(node->git_top);
	free(node->config);
	node->oid = NULL;
	node->index = NULL;
	node->git_top = NULL;
	node->config = NULL;
	node->oid_len = 0;
}

bool
eos_tar_git_wanted(const char *path)
{
	return eos_import_is_git_index(path) || eos_import_is_module_index(path) ||
	       eos_import_is_module_config(path);
}

int
eos_tar_git_read(struct tar_scan *s, struct tar_node *node, struct eos_error *err)
{
	bool config =
		!eos_import_is_git_index(node->path) && eos_import_is_module_config(node->path);
	uint8_t *buf;
	int r;

	if (node->size > (config ? EOS_IMPORT_CONFIG_MAX : EOS_IMPORT_INDEX_MAX))
		return 0; /* imported as it is */
	buf = malloc(node->size + 1);
	if (!buf)
		return eos_import_no_memory(err);
	r = eos_tar_read_mem(s->rd, node->path, node->size, buf, err);
	if (r < 0) {
		free(buf);
		return r;
	}
	if (config)
		node->config = (char *)buf;
	else
		node->index = buf;
	return 0;
}

/*
 * The work tree of a submodule's index node, from the config beside it in the archive, into
 * node->git_top; false when there is none (the index is then staged as any other file).
 */
static bool
module_top(struct tar_scan *s, struct tar_node *node, int *r)
{
	size_t dir = strlen(node->path) - strlen("index"), idx;
	cleanup_free char *path = NULL;

	if (asprintf(&path, "%.*sconfig", (int)dir, node->path) < 0) {
		*r = -ENOMEM;
		return false;
	}
	idx = eos_tar_find(s, path, strlen(path));
	if (idx == SIZE_MAX || !s->nodes[idx].config)
		return false;
	*r = eos_import_module_work_tree_of(node->path, s->nodes[idx].config,
					    (size_t)s->nodes[idx].size, &node->git_top);
	return *r == 0 && node->git_top;
}

/* The node the entry names below the work tree (*full: its path in the import), or NULL. */
static struct tar_node *
entry_node(const struct work_tree *w, const struct eos_gitidx_entry *e, char **full)
{
	size_t idx;

	if (eos_path_join(w->top, e->path, full) < 0)
		return NULL;
	idx = eos_tar_find(w->s, *full, strlen(*full));
	return idx == SIZE_MAX ? NULL : &w->s->nodes[idx];
}

/* The plan's callback: mark the file the entry tracks for hashing; changes nothing. */
static bool
mark(void *ctx, const struct eos_gitidx_entry *e, struct eos_gitidx_stat *view)
{
	cleanup_free char *full = NULL;
	struct tar_node *node = entry_node(ctx, e, &full);

	(void)view;
	if (node && node->kind == TAR_FILE && (e->stat.mode & MODE_TYPE) == MODE_FILE &&
	    node->link_to == SIZE_MAX && !node->linked && !node->index)
		node->oid_len = (uint8_t)e->oid_len;
	return false;
}

/* Run fn over the entries of the index node (ignoring an index the parser does not read). */
static int
each_entry(struct tar_scan *s, const struct tar_node *node, eos_gitidx_fresh_fn fn,
	   size_t *refreshed, int64_t *racy_max_s, struct eos_error *err)
{
	cleanup_free char *top =
		node->git_top ? strdup(node->git_top) : eos_import_git_work_tree(node->path);
	struct work_tree w = {
		.s = s, .top = top, .index_s = node->attr.mtime_ns / NS, .racy_max_s = -1
	};
	int r;

	*refreshed = 0;
	if (!top)
		return eos_import_no_memory(err);
	r = eos_git_index_refresh(node->index, node->size, fn, &w, refreshed);
	if (r == -ENOMEM)
		return eos_import_no_memory(err);
	*racy_max_s = r == 0 ? w.racy_max_s : -1;
	return 0;
}

int
eos_tar_git_plan(struct tar_scan *s, struct eos_error *err)
{
	for (size_t i = 0; i < s->n; i++) {
		struct tar_node *node = &s->nodes[i];
		size_t none;
		int64_t racy;
		int r;

		if (!node->index)
			continue;
		r = 0;
		if (node->link_to != SIZE_MAX || node->linked ||
		    (!eos_import_is_git_index(node->path) && !module_top(s, node, &r))) {
			/* one content of several names, or a submodule's index whose work tree is
			 * not known: pass 2 stages it as any other */
			eos_tar_git_release(node);
			if (r < 0)
				return eos_import_no_memory(err);
			continue;
		}
		if ((r = each_entry(s, node, mark, &none, &racy, err)) < 0)
			return r;
	}
	return 0;
}

int
eos_tar_git_hash(struct tar_node *node, const struct eos_import_job *job, struct eos_error *err)
{
	uint8_t *oid = malloc(node->oid_len);
	const void *mem = job->kind == EOS_IMPORT_JOB_MEM ? job->data : NULL;
	int r;

	if (!oid)
		return eos_import_no_memory(err);
	r = eos_import_git_blob_id(node->oid_len, mem, job->fd, node->size, oid);
	if (r < 0) {
		free(oid);
		return eos_error_set(err, r, "hash '%s' as git does: %s", node->path, strerror(-r));
	}
	free(node->oid);
	node->oid = oid;
	return 0;
}

/* Whether the node holds the content the entry names; *size: what a view shows as its size. */
static bool
same_content(const struct tar_node *node, const struct eos_gitidx_entry *e, uint64_t *size)
{
	uint8_t oid[EOS_DIGEST_LEN];

	switch (e->stat.mode & MODE_TYPE) {
	case MODE_FILE:
		*size = node->size;
		return node->kind == TAR_FILE && node->oid && node->oid_len == e->oid_len &&
		       !((e->stat.mode ^ node->attr.mode) & S_IXUSR) &&
		       memcmp(node->oid, e->oid, e->oid_len) == 0;
	case MODE_LINK:
		if (node->kind != TAR_SYMLINK || !node->target)
			return false;
		*size = strlen(node->target);
		return eos_import_git_blob_id(e->oid_len, node->target, -1, *size, oid) == 0 &&
		       memcmp(oid, e->oid, e->oid_len) == 0;
	default:
		return false;
	}
}

/* The stage's callback: the stat data a view shows, for an entry whose content is the node's. */
static bool
fresh(void *ctx, const struct eos_gitidx_entry *e, struct eos_gitidx_stat *view)
{
	struct work_tree *w = ctx;
	cleanup_free char *full = NULL;
	const struct tar_node *node = entry_node(w, e, &full);
	uint64_t size;

	if (!node || !same_content(node, e, &size) ||
	    !eos_import_git_view(full, &node->attr, size, e->stat.mode, view))
		return false;
	/* racily clean for git unless the index is newer: its content was checked above */
	if ((int64_t)view->mtime_s >= w->index_s)
		w->racy_max_s = EOS_MAX(w->racy_max_s, (int64_t)view->mtime_s);
	return true;
}

int
eos_tar_git_stage(struct tar_scan *s, struct eos_changeset *cs, struct eos_import_result *ret,
		  struct eos_error *err)
{
	for (size_t i = 0; i < s->n; i++) {
		struct tar_node *node = &s->nodes[i];
		struct eos_attr attr = node->attr;
		size_t refreshed;
		int64_t racy;
		int r;

		if (!node->index)
			continue;
		if ((r = each_entry(s, node, fresh, &refreshed, &racy, err)) < 0)
			return r;
		/* git trusts the racily clean entries refreshed once the index is newer */
		if (racy >= 0)
			attr.mtime_ns = (racy + 1) * NS;
		r = eos_changeset_put_file_mem(cs, node->path, &attr, node->index, node->size, err);
		if (r < 0)
			return r;
		ret->files++;
		ret->bytes += node->size;
		ret->git_entries += refreshed;
	}
	return 0;
}
