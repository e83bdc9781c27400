/* SPDX-License-Identifier: MIT */
/*
 * Tar import through libarchive (wrapped by store/archive.h): ustar, pax and GNU tar, plain or
 * compressed with any filter libarchive knows (zstd, gzip, xz, …), detected by content.
 *
 * Two passes over the archive. The first reads only headers and builds the final tree in memory
 * with tar's "a later entry wins" semantics: one node per path, overwritten in place; hard links
 * bind to the content of their target at that point of the archive (as extraction would; a hard
 * link of a symlink, fifo or device becomes an equal entry of its own). It collects the members
 * of unknown types (refused) and the sockets (skipped, listed in the result), checks that every
 * path lies below a directory, and picks one staged name per content (the others become hard
 * links). Nothing is staged when this pass fails. The
 * second pass reads the data of the entries that survived and hands it to the worker pool.
 */
#include "store/import-tar.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/path.h"

#include "store/store-internal.h"

enum {
	TAR_BLOCK = 128 << 10, /* libarchive read size */
	TABLE_MIN = 1024,
};

static void
scan_release(struct tar_scan *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->nodes[i].path);
		free(s->nodes[i].target);
		eos_tar_git_release(&s->nodes[i]);
	}
	free(s->nodes);
	free(s->table);
	free(s->primary);
	eos_import_problems_release(&s->specials);
}

/* --- path table ------------------------------------------------------------------------------- */

static uint64_t
hash_bytes(const char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)p[i]) * 0x100000001b3ULL;
	return h;
}

/* The slot holding path[0..len), or the free slot where it would go. */
static size_t *
scan_slot(const struct tar_scan *s, const char *path, size_t len)
{
	size_t mask = s->table_cap - 1;

	for (size_t i = hash_bytes(path, len) & mask;; i = (i + 1) & mask) {
		size_t v = s->table[i];
		const char *p;

		if (v == 0)
			return &s->table[i];
		p = s->nodes[v - 1].path;
		if (strncmp(p, path, len) == 0 && p[len] == '\0')
			return &s->table[i];
	}
}

size_t
eos_tar_find(const struct tar_scan *s, const char *path, size_t len)
{
	size_t v = s->table_cap ? *scan_slot(s, path, len) : 0;

	return v ? v - 1 : SIZE_MAX;
}

static int
scan_grow(struct tar_scan *s)
{
	size_t ncap = s->table_cap ? s->table_cap * 2 : TABLE_MIN;
	struct tar_node *nodes;
	size_t *old = s->table;

	if (s->n == s->cap) {
		nodes = reallocarray(s->nodes, s->cap ? s->cap * 2 : TABLE_MIN, sizeof(*nodes));
		if (!nodes)
			return -ENOMEM;
		s->nodes = nodes;
		s->cap = s->cap ? s->cap * 2 : TABLE_MIN;
	}
	if ((s->n + 1) * 2 <= s->table_cap)
		return 0;
	s->table = calloc(ncap, sizeof(*s->table));
	if (!s->table) {
		s->table = old;
		return -ENOMEM;
	}
	s->table_cap = ncap;
	for (size_t i = 0; i < s->n; i++)
		*scan_slot(s, s->nodes[i].path, strlen(s->nodes[i].path)) = i + 1;
	free(old);
	return 0;
}

/* The node for path, created (as an implicit directory with attr) when missing. */
static int
scan_node(struct tar_scan *s, const char *path, size_t len, const struct eos_attr *attr,
	  size_t *ret)
{
	struct tar_node *node;
	size_t *slot;

	if (scan_grow(s) < 0)
		return -ENOMEM;
	slot = scan_slot(s, path, len);
	if (*slot) {
		*ret = *slot - 1;
		return 0;
	}
	node = &s->nodes[s->n];
	*node = (struct tar_node){ .kind = TAR_DIR, .attr = *attr, .link_to = SIZE_MAX };
	node->path = strndup(path, len);
	if (!node->path)
		return -ENOMEM;
	node->attr.mode = 0755;
	*slot = ++s->n;
	*ret = s->n - 1;
	return 0;
}

/* Create the missing ancestors of path as directories (mode 0755, owner and mtime of attr). */
static int
scan_parents(struct tar_scan *s, const char *path, const struct eos_attr *attr)
{
	const char *slash = strrchr(path, '/');
	size_t idx;

	if (!slash || eos_tar_find(s, path, (size_t)(slash - path)) != SIZE_MAX)
		return 0;
	for (slash = strchr(path, '/'); slash; slash = strchr(slash + 1, '/'))
		if (scan_node(s, path, (size_t)(slash - path), attr, &idx) < 0)
			return -ENOMEM;
	return 0;
}

/* The node for path, reset to kind with attr (a later entry replaces an earlier one). */
static int
scan_put(struct tar_scan *s, const char *path, enum tar_kind kind, const struct eos_attr *attr,
	 size_t *ret)
{
	struct tar_node *node;
	int r;

	r = scan_node(s, path, strlen(path), attr, ret);
	if (r < 0)
		return r;
	node = &s->nodes[*ret];
	free(node->target);
	eos_tar_git_release(node);
	*node = (struct tar_node){
		.path = node->path, .kind = kind, .attr = *attr, .link_to = SIZE_MAX
	};
	return 0;
}

/* --- pass 1: headers -------------------------------------------------------------------------- */

static int
entry_attr(const struct eos_archive_entry *e, const char *name, struct eos_attr *ret,
	   struct eos_error *err)
{
	if (e->uid < 0 || e->uid > UINT32_MAX || e->gid < 0 || e->gid > UINT32_MAX)
		return eos_error_set(err, -EINVAL,
				     "archive entry '%s': owner %lld:%lld out of range", name,
				     (long long)e->uid, (long long)e->gid);
	ret->mode = e->perm & 07777;
	ret->uid = (uint32_t)e->uid;
	ret->gid = (uint32_t)e->gid;
	if (e->mtime_set)
		ret->mtime_ns = eos_import_time_ns(e->mtime_sec, e->mtime_nsec);
	else
		ret->mtime_ns = eos_store_now_ns();
	return 0;
}

/* A hard link names the content its target has at this point of the archive. */
static int
scan_hardlink(struct tar_scan *s, const char *name, const char *path, const char *link,
	      struct eos_error *err)
{
	cleanup_free char *target = NULL;
	struct tar_node *to, *node;
	struct eos_attr attr;
	size_t t, idx;
	int r;

	r = eos_path_normalize(link, &target, err);
	if (r < 0)
		return eos_error_prefix(err, r, "archive entry '%s': hard link", name);
	t = eos_tar_find(s, target, strlen(target));
	if (!target[0] || t == SIZE_MAX || s->nodes[t].kind == TAR_DIR ||
	    s->nodes[t].kind == TAR_SPECIAL)
		return eos_error_set(
			err, -EINVAL,
			"archive entry '%s': hard link target '%s' is not an earlier file of the archive",
			name, link);
	if (strcmp(target, path) == 0)
		return 0;
	attr = s->nodes[t].attr; /* scan_put may move the nodes */
	if (scan_put(s, path, s->nodes[t].kind, &attr, &idx) < 0)
		return eos_import_no_memory(err);
	to = &s->nodes[t];
	node = &s->nodes[idx];
	node->content = to->content;
	node->size = to->size;
	node->node = to->node;
	node->rdev = to->rdev;
	/* The store links files only: a hard-linked symlink, fifo or device becomes an equal one.
	 */
	if (to->kind == TAR_SYMLINK && !(node->target = strdup(to->target)))
		return eos_import_no_memory(err);
	return 0;
}

/* A fifo or a device (rdev), a socket (listed as skipped) or an unknown type (refused). */
static int
scan_other(struct tar_scan *s, const struct eos_archive_entry *e, const char *path,
	   const struct eos_attr *attr, struct eos_error *err)
{
	static const struct {
		enum eos_archive_type type;
		enum tar_kind kind;
		enum eos_kind node;
	} map[] = {
		{ EOS_ARCHIVE_FIFO, TAR_NODE, EOS_KIND_FIFO },
		{ EOS_ARCHIVE_CHAR, TAR_NODE, EOS_KIND_CHR },
		{ EOS_ARCHIVE_BLOCK, TAR_NODE, EOS_KIND_BLK },
		{ EOS_ARCHIVE_SOCKET, TAR_SOCKET, EOS_KIND_NONE },
	};
	struct tar_node *node;
	size_t i = 0, idx;

	while (i < EOS_ARRAY_SIZE(map) && map[i].type != e->type)
		i++;
	if (scan_put(s, path, i < EOS_ARRAY_SIZE(map) ? map[i].kind : TAR_SPECIAL, attr, &idx) < 0)
		return eos_import_no_memory(err);
	node = &s->nodes[idx];
	node->node = i < EOS_ARRAY_SIZE(map) ? map[i].node : EOS_KIND_NONE;
	node->rdev = eos_kind_has_rdev(node->node) ? e->rdev : 0;
	return 0;
}

static int
scan_typed(struct tar_scan *s, const struct eos_archive_entry *e, const char *name,
	   const char *path, const struct eos_attr *attr, struct eos_error *err)
{
	size_t idx;

	switch (e->type) {
	case EOS_ARCHIVE_DIR:
		return scan_put(s, path, TAR_DIR, attr, &idx) < 0 ? eos_import_no_memory(err) : 0;
	case EOS_ARCHIVE_FILE:
		if (!e->size_set || e->size < 0)
			return eos_error_set(err, -EINVAL, "archive entry '%s' has no size", name);
		if (scan_put(s, path, TAR_FILE, attr, &idx) < 0)
			return eos_import_no_memory(err);
		s->nodes[idx].content = s->nentries;
		s->nodes[idx].size = (uint64_t)e->size;
		if (s->git_indexes && eos_tar_git_wanted(path))
			return eos_tar_git_read(s, &s->nodes[idx], err);
		return 0;
	case EOS_ARCHIVE_SYMLINK:
		if (!e->symlink)
			return eos_error_set(err, -EINVAL,
					     "archive entry '%s': symlink without a target", name);
		if (scan_put(s, path, TAR_SYMLINK, attr, &idx) < 0 ||
		    !(s->nodes[idx].target = strdup(e->symlink)))
			return eos_import_no_memory(err);
		return 0;
	case EOS_ARCHIVE_FIFO:
	case EOS_ARCHIVE_SOCKET:
	case EOS_ARCHIVE_CHAR:
	case EOS_ARCHIVE_BLOCK:
	case EOS_ARCHIVE_OTHER:
		break;
	}
	return scan_other(s, e, path, attr, err);
}

static int
scan_entry(struct tar_scan *s, const struct eos_archive_entry *e, struct eos_error *err)
{
	const char *name = e->path, *link = e->hardlink;
	cleanup_free char *path = NULL;
	struct eos_attr attr;
	int r;

	if (!name)
		return eos_error_set(err, -EINVAL, "archive entry %zu has no usable path name",
				     s->nentries);
	r = eos_path_normalize(name, &path, err);
	if (r < 0)
		return eos_error_prefix(err, r, "archive entry '%s'", name);
	if ((r = entry_attr(e, name, &attr, err)) < 0)
		return r;
	if (!path[0]) {
		if (link || e->type != EOS_ARCHIVE_DIR)
			return eos_error_set(err, -EINVAL,
					     "archive entry '%s' would replace the root directory",
					     name);
		s->root = attr;
		return 0;
	}
	if (scan_parents(s, path, &attr) < 0)
		return eos_import_no_memory(err);
	if (link)
		return scan_hardlink(s, name, path, link, err);
	return scan_typed(s, e, name, path, &attr, err);
}

/* Check the final tree and choose which name of each content is staged. */
static int
scan_finish(struct tar_scan *s, struct eos_error *err)
{
	s->primary = calloc(s->nentries ? s->nentries : 1, sizeof(*s->primary));
	if (!s->primary)
		return eos_import_no_memory(err);
	for (size_t i = 0; i < s->n; i++) {
		struct tar_node *node = &s->nodes[i];
		const char *slash = strrchr(node->path, '/');
		size_t len = slash ? (size_t)(slash - node->path) : 0;
		size_t parent = slash ? eos_tar_find(s, node->path, len) : SIZE_MAX;

		if (slash && (parent == SIZE_MAX || s->nodes[parent].kind != TAR_DIR))
			return eos_error_set(
				err, -EINVAL,
				"archive entry '%s' lies below '%.*s', which the archive makes a non-directory",
				node->path, (int)len, node->path);
		s->ndirs += node->kind == TAR_DIR;
		s->nsyms += node->kind == TAR_SYMLINK;
		s->nnodes += node->kind == TAR_NODE;
		if ((node->kind == TAR_SPECIAL &&
		     eos_import_problems_add(&s->specials, node->path, "unknown file type") < 0) ||
		    (node->kind == TAR_SOCKET && eos_import_skip(s->ret, node->path) < 0))
			return eos_import_no_memory(err);
		if (node->kind != TAR_FILE)
			continue;
		if (s->primary[node->content]) {
			node->link_to = s->primary[node->content] - 1;
			s->nodes[node->link_to].linked = true;
			s->nlinks++;
		} else {
			s->primary[node->content] = i + 1;
			s->groups++;
			s->group_bytes += node->size;
		}
	}
	if (s->specials.total)
		return eos_import_problems_fail(&s->specials, -EINVAL,
						"file of an unknown type is not supported",
						"files of unknown types are not supported", err);
	return 0;
}

static int
tar_open(int fd, const char *src, struct eos_archive_reader **ret, struct eos_error *err)
{
	if (lseek(fd, 0, SEEK_SET) < 0)
		return eos_import_sys_fail(err, "seek", src);
	return eos_archive_reader_open(fd, TAR_BLOCK, ret, err);
}

static int
not_tar(struct tar_scan *s, struct eos_error *err)
{
	s->not_tar = true;
	return eos_error_set(err, -EINVAL, "'%s' is neither a directory nor a tar archive", s->src);
}

static int
scan_archive(struct tar_scan *s, int fd, struct eos_error *err)
{
	EOS_CLEANUP(eos_archive_reader_freep) struct eos_archive_reader *rd = NULL;
	struct eos_archive_entry e;
	int r;

	if (tar_open(fd, s->src, &rd, err) < 0)
		return not_tar(s, err);
	s->rd = rd; /* for the git indexes' bytes */
	for (;; s->nentries++) {
		r = eos_archive_reader_next(rd, &e, err);
		if (r == 0)
			break;
		if (r < 0 && s->nentries == 0)
			r = not_tar(s, err);
		if (r < 0 || (r = scan_entry(s, &e, err)) < 0)
			break;
	}
	s->rd = NULL;
	if (r < 0 || (r = scan_finish(s, err)) < 0)
		return r;
	return eos_tar_git_plan(s, err);
}

/* --- pass 2: data ----------------------------------------------------------------------------- */

typedef int (*block_fn)(void *ctx, const void *p, size_t len, uint64_t off);

struct mem_sink {
	uint8_t *buf;
	uint64_t end; /* bytes written so far (holes zeroed) */
};

static int
mem_block(void *ctx, const void *p, size_t len, uint64_t off)
{
	struct mem_sink *m = ctx;

	if (off > m->end)
		memset(m->buf + m->end, 0, off - m->end);
	memcpy(m->buf + off, p, len);
	m->end = EOS_MAX(m->end, off + len);
	return 0;
}

static int
fd_block(void *ctx, const void *p, size_t len, uint64_t off)
{
	const int *fd = ctx;

	while (len > 0) {
		ssize_t n = pwrite(*fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return eos_neg_errno();
		p = (const uint8_t *)p + n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/* Feed every data block of the current entry (at most size bytes; sparse holes skipped) to fn. */
static int
read_blocks(struct eos_archive_reader *rd, const char *path, uint64_t size, block_fn fn, void *ctx,
	    struct eos_error *err)
{
	for (;;) {
		const void *p;
		size_t len;
		int64_t off;
		int r = eos_archive_reader_data(rd, path, &p, &len, &off, err);

		if (r <= 0)
			return r;
		if (off < 0 || (uint64_t)off > size || len > size - (uint64_t)off)
			return eos_error_set(err, -EINVAL,
					     "archive entry '%s': data beyond its size", path);
		if ((r = fn(ctx, p, len, (uint64_t)off)) < 0)
			return eos_error_set(err, r, "write temporary file for '%s': %s", path,
					     strerror(-r));
	}
}

int
eos_tar_read_mem(struct eos_archive_reader *rd, const char *path, uint64_t size, uint8_t *buf,
		 struct eos_error *err)
{
	struct mem_sink m = { .buf = buf };
	int r = read_blocks(rd, path, size, mem_block, &m, err);

	if (r == 0 && m.end < size)
		memset(buf + m.end, 0, size - m.end);
	return r;
}

static int
open_tmpfile(struct eos_error *err)
{
	const char *dir = getenv("TMPDIR");
	cleanup_free char *tmpl = NULL;
	int fd;

	if (!dir || !dir[0])
		dir = "/tmp";
	fd = open(dir, O_TMPFILE | O_RDWR | O_EXCL | O_CLOEXEC, 0600);
	if (fd >= 0)
		return fd;
	if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
		return eos_import_sys_fail(err, "create temporary file in", dir);
	if (asprintf(&tmpl, "%s/eos-import-XXXXXX", dir) < 0)
		return eos_import_no_memory(err);
	fd = mkostemp(tmpl, O_CLOEXEC);
	if (fd < 0)
		return eos_import_sys_fail(err, "create temporary file", tmpl);
	unlink(tmpl);
	return fd;
}

/* Read the current entry into a job: memory up to EOS_IMPORT_MEM_MAX, else a temporary file. */
static int
read_member(struct eos_archive_reader *rd, const struct tar_node *node, struct eos_import_job **ret,
	    struct eos_error *err)
{
	bool mem = node->size <= EOS_IMPORT_MEM_MAX;
	EOS_CLEANUP(eos_import_job_freep) struct eos_import_job *job = NULL;
	int r;

	job = eos_import_job_new(mem ? EOS_IMPORT_JOB_MEM : EOS_IMPORT_JOB_FD, node->path,
				 &node->attr);
	if (!job || (mem && !(job->data = malloc(node->size ? node->size : 1))))
		return eos_import_no_memory(err);
	job->len = node->size;
	if (!mem && (job->fd = open_tmpfile(err)) < 0)
		return job->fd;
	if (mem)
		r = eos_tar_read_mem(rd, node->path, node->size, job->data, err);
	else
		r = read_blocks(rd, node->path, node->size, fd_block, &job->fd, err);
	if (r < 0)
		return r;
	if (!mem && (ftruncate(job->fd, (off_t)node->size) < 0 || lseek(job->fd, 0, SEEK_SET) < 0))
		return eos_import_sys_fail(err, "write temporary file for", node->path);
	*ret = TAKE_PTR(job);
	return 0;
}

static int
changed(const struct tar_scan *s, struct eos_error *err)
{
	return eos_error_set(err, -EAGAIN, "'%s' changed during the import", s->src);
}

/* Pass 2: queue the bytes of every entry whose content survives; stop after the last one. */
static int
push_data(struct tar_scan *s, int fd, struct eos_import_pool *pool,
	  struct eos_import_progress *progress, struct eos_error *err)
{
	EOS_CLEANUP(eos_archive_reader_freep) struct eos_archive_reader *rd = NULL;
	size_t left = s->groups;
	struct eos_archive_entry e;
	int r;

	if ((r = tar_open(fd, s->src, &rd, err)) < 0)
		return r;
	for (size_t i = 0; left > 0; i++) {
		struct eos_import_job *job = NULL;
		struct tar_node *node;
		uint64_t files, bytes;

		r = eos_archive_reader_next(rd, &e, err);
		if (r < 0)
			return r;
		if (r == 0 || i >= s->nentries)
			return changed(s, err);
		if (!s->primary[i])
			continue;
		node = &s->nodes[s->primary[i] - 1];
		if (e.size != (int64_t)node->size)
			return changed(s, err);
		left--;
		if (node->index) /* read in pass 1, staged after the files it names */
			continue;
		if ((r = read_member(rd, node, &job, err)) < 0)
			return r;
		if (node->oid_len && (r = eos_tar_git_hash(node, job, err)) < 0) {
			eos_import_job_free(job);
			return r;
		}
		if ((r = eos_import_pool_push(pool, job, err)) < 0)
			return r;
		eos_import_pool_counts(pool, &files, &bytes);
		eos_import_progress_tick(progress, files, bytes, false);
	}
	return 0;
}

/* --- staging ---------------------------------------------------------------------------------- */

static int
stage_tree(const struct tar_scan *s, struct eos_changeset *cs, struct eos_error *err)
{
	for (size_t i = 0; i < s->n; i++) {
		const struct tar_node *node = &s->nodes[i];
		int r = 0;

		switch (node->kind) {
		case TAR_DIR:
			r = eos_changeset_mkdir(cs, node->path, &node->attr, false, err);
			break;
		case TAR_SYMLINK:
			r = eos_changeset_symlink(cs, node->path, &node->attr, node->target, err);
			break;
		case TAR_NODE:
			r = eos_changeset_mknod(cs, node->path, &node->attr, node->node, node->rdev,
						err);
			break;
		case TAR_FILE:
		case TAR_SOCKET:
		case TAR_SPECIAL:
			break;
		}
		if (r < 0)
			return r;
	}
	return 0;
}

static int
stage_links(const struct tar_scan *s, struct eos_changeset *cs, struct eos_error *err)
{
	for (size_t i = 0; i < s->n; i++) {
		const struct tar_node *node = &s->nodes[i];
		int r;

		if (node->kind != TAR_FILE || node->link_to == SIZE_MAX)
			continue;
		r = eos_changeset_link(cs, node->path, s->nodes[node->link_to].path, err);
		if (r < 0)
			return r;
	}
	return 0;
}

static int
stage_data(struct tar_scan *s, int fd, struct eos_changeset *cs, const struct eos_import_options *o,
	   struct eos_import_progress *progress, struct eos_import_result *ret,
	   struct eos_error *err)
{
	EOS_CLEANUP(eos_import_pool_freep) struct eos_import_pool *pool = NULL;
	struct eos_error perr = { 0 };
	int r, pr;

	eos_import_progress_phase(progress, EOS_IMPORT_STAGE, s->groups, s->group_bytes);
	r = eos_import_pool_new(cs, -1, eos_import_threads(o), EOS_IMPORT_BUDGET, &pool, err);
	if (r < 0)
		return r;
	r = push_data(s, fd, pool, progress, err);
	/* A worker's failure is the cause; the reader's error is at most its consequence. */
	pr = eos_import_pool_finish(pool, progress, &perr);
	if (pr < 0) {
		if (err)
			*err = perr;
		return pr;
	}
	if (r < 0)
		return r;
	eos_import_pool_counts(pool, &ret->files, &ret->bytes);
	eos_import_progress_tick(progress, ret->files, ret->bytes, true);
	return 0;
}

static int
tar_run(struct tar_scan *s, struct eos_store *st, int fd, const struct eos_import_options *o,
	struct eos_import_result *ret, struct eos_error *err)
{
	EOS_CLEANUP(eos_changeset_freep) struct eos_changeset *cs = NULL;
	cleanup_free char *source = NULL;
	struct eos_import_progress progress;
	int r;

	eos_import_progress_init(&progress, o);
	if ((r = scan_archive(s, fd, err)) < 0)
		return r;
	if (asprintf(&source, "tar:%s", s->src) < 0)
		return eos_import_no_memory(err);
	if ((r = eos_import_begin(st, o, source, &s->root, &cs, err)) < 0 ||
	    (r = stage_tree(s, cs, err)) < 0 ||
	    (r = stage_data(s, fd, cs, o, &progress, ret, err)) < 0 ||
	    (r = eos_tar_git_stage(s, cs, ret, err)) < 0 || (r = stage_links(s, cs, err)) < 0)
		return r;
	eos_import_progress_phase(&progress, EOS_IMPORT_COMMIT, 0, 0);
	if ((r = eos_import_commit(cs, ret, err)) < 0)
		return r;
	ret->dirs = s->ndirs;
	ret->symlinks = s->nsyms;
	ret->specials = s->nnodes;
	ret->hardlinks = s->nlinks;
	return 0;
}

int
eos_import_tar(struct eos_store *st, const char *src, int fd, const struct eos_import_options *o,
	       struct eos_import_result *ret, struct eos_error *err)
{
	EOS_CLEANUP(scan_release)
	struct tar_scan s = { .src = src, .ret = ret, .git_indexes = !(o && o->keep_git_index) };
	int r;

	/* Without a "." entry the root is like an implicit directory: 0755, ours, now. */
	s.root = (struct eos_attr){
		.mode = 0755,
		.uid = (uint32_t)getuid(),
		.gid = (uint32_t)getgid(),
		.mtime_ns = eos_store_now_ns(),
	};
	r = tar_run(&s, st, fd, o, ret, err);
	if (r < 0 && !s.not_tar)
		return eos_error_prefix(err, r, "import '%s'", src);
	return r;
}
