/* SPDX-License-Identifier: MIT */
/*
 * Stage the git indexes of an imported directory with their stat data refreshed for the views
 * (doc/fs.md, "Imported git indexes"). A git index records, per tracked file, the
 * stat data of the file it last hashed; git re-reads and re-hashes every file whose inode
 * number or ctime differs. A session view numbers a lower file after its path and shows its
 * recorded mtime as its ctime, so an index written on the host matches nothing in a view. For
 * each entry that still describes the file the import read — the host's stat of it now equals
 * the entry's, and the host file has the size and mtime the import recorded — the index gets
 * the stat data a view shows, and the first `git status` in a new session re-reads nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/digest.h"
#include "common/ino.h"
#include "common/path.h"

#include "store/changeset.h"
#include "store/git-index.h"
#include "store/import.h"

enum {
	NS = 1000000000,
};

struct fresh_ctx {
	struct eos_changeset *cs;
	int root_fd;
	const char *top;    /* the work tree's path in the import ("" for the root) */
	int64_t index_s;    /* the index file's mtime, seconds */
	int64_t racy_max_s; /* the newest mtime of a racily clean entry refreshed, or -1 */
};

bool
eos_import_is_git_index(const char *path)
{
	static const char tail[] = "/.git/index";
	size_t n = strlen(path), t = sizeof(tail) - 1;

	return strcmp(path, tail + 1) == 0 || (n > t && strcmp(path + n - t, tail) == 0);
}

char *
eos_import_git_work_tree(const char *index)
{
	size_t n = strlen(index) - strlen(".git/index");

	/* "a/b/.git/index" → "a/b", ".git/index" → "" */
	return strndup(index, n ? n - 1 : 0);
}

/* What the import staged at path: its recorded attributes and size; false for other kinds. */
static bool
staged(struct fresh_ctx *c, const char *path, uint32_t type, const struct eos_attr **attr,
       uint64_t *size)
{
	const struct eos_op *op = eos_changeset_op(c->cs, path);

	if (!op)
		return false;
	*attr = &op->attr;
	if (op->kind == EOS_OP_PUT_FILE && type == S_IFREG)
		*size = op->content.size;
	else if (op->kind == EOS_OP_SYMLINK && type == S_IFLNK && op->target)
		*size = strlen(op->target);
	else
		return false;
	return true;
}

/* The host's stat now is the entry's (git would call the file clean) and the import's. */
static bool
host_matches(const struct stat *sb, const struct eos_gitidx_stat *rec, const struct eos_attr *attr,
	     uint64_t size)
{
	return sb->st_nlink == 1 && (uint32_t)sb->st_ctim.tv_sec == rec->ctime_s &&
	       (uint32_t)sb->st_ctim.tv_nsec == rec->ctime_ns &&
	       (uint32_t)sb->st_mtim.tv_sec == rec->mtime_s &&
	       (uint32_t)sb->st_mtim.tv_nsec == rec->mtime_ns && (uint32_t)sb->st_ino == rec->ino &&
	       sb->st_uid == rec->uid && sb->st_gid == rec->gid &&
	       (uint32_t)sb->st_size == rec->size && (uint64_t)sb->st_size == size &&
	       eos_import_time_ns(sb->st_mtim.tv_sec, sb->st_mtim.tv_nsec) == attr->mtime_ns;
}

bool
eos_import_git_view(const char *path, const struct eos_attr *attr, uint64_t size, uint32_t mode,
		    struct eos_gitidx_stat *view)
{
	if (attr->mtime_ns < 0)
		return false;
	/* a view shows a lower file's recorded mtime as its ctime too (doc/fs.md) */
	*view = (struct eos_gitidx_stat){
		.ctime_s = (uint32_t)(attr->mtime_ns / NS),
		.ctime_ns = (uint32_t)(attr->mtime_ns % NS),
		.mtime_s = (uint32_t)(attr->mtime_ns / NS),
		.mtime_ns = (uint32_t)(attr->mtime_ns % NS),
		.ino = (uint32_t)eos_ino_derived(path, 0),
		.mode = mode,
		.uid = attr->uid,
		.gid = attr->gid,
		.size = (uint32_t)size,
	};
	return true;
}

static int
blob_id_fd(struct eos_md *md, int fd, uint64_t size)
{
	uint8_t buf[64 << 10];

	for (uint64_t off = 0; off < size;) {
		ssize_t n = pread(fd, buf, (size_t)EOS_MIN((uint64_t)sizeof(buf), size - off),
				  (off_t)off);
		int r;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -ENODATA;
		if ((r = eos_md_update(md, buf, (size_t)n)) < 0)
			return r;
		off += (uint64_t)n;
	}
	return 0;
}

int
eos_import_git_blob_id(size_t oid_len, const void *p, int fd, uint64_t size, uint8_t *out)
{
	EOS_CLEANUP(eos_md_freep) struct eos_md *md = NULL;
	char head[32];
	int n = snprintf(head, sizeof(head), "blob %llu", (unsigned long long)size);
	int r = eos_md_new(oid_len, &md);

	if (r < 0 || (r = eos_md_update(md, head, (size_t)n + 1)) < 0)
		return r;
	r = p ? eos_md_update(md, p, size) : blob_id_fd(md, fd, size);
	return r < 0 ? r : eos_md_final(md, out);
}

/* Whether the host's file or symlink at path holds what the entry names (its object id). */
static bool
same_content(const struct fresh_ctx *c, const char *path, const struct eos_gitidx_entry *e,
	     uint64_t size)
{
	uint8_t oid[EOS_DIGEST_LEN];
	int r;

	if (e->oid_len > sizeof(oid))
		return false;
	if ((e->stat.mode & S_IFMT) == S_IFLNK) {
		char target[EOS_PATH_MAX + 1];
		ssize_t n = readlinkat(c->root_fd, path, target, sizeof(target));

		r = n >= 0 && (uint64_t)n == size
			    ? eos_import_git_blob_id(e->oid_len, target, -1, size, oid)
			    : -EIO;
	} else {
		cleanup_close int fd = openat(c->root_fd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

		r = fd < 0 ? -errno : eos_import_git_blob_id(e->oid_len, NULL, fd, size, oid);
	}
	return r == 0 && memcmp(oid, e->oid, e->oid_len) == 0;
}

static bool
fresh(void *ctx, const struct eos_gitidx_entry *e, struct eos_gitidx_stat *view)
{
	struct fresh_ctx *c = ctx;
	const struct eos_attr *attr;
	cleanup_free char *full = NULL;
	struct stat sb;
	uint64_t size;

	if (eos_path_join(c->top, e->path, &full) < 0 ||
	    !staged(c, full, e->stat.mode & S_IFMT, &attr, &size) ||
	    fstatat(c->root_fd, full, &sb, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !host_matches(&sb, &e->stat, attr, size) ||
	    !eos_import_git_view(full, attr, size, e->stat.mode, view))
		return false;
	/* git trusts no entry written in the index's second: it re-reads it (racily clean) */
	if ((int64_t)view->mtime_s < c->index_s)
		return true;
	if (!same_content(c, full, e, size))
		return false;
	c->racy_max_s = EOS_MAX(c->racy_max_s, (int64_t)view->mtime_s);
	return true;
}

/*
 * The index bytes refreshed for the views, staged at path; top: its work tree; *refreshed:
 * entries rewritten.
 */
static int
stage_refreshed(struct eos_changeset *cs, int root_fd, const char *path, const char *top, int fd,
		const struct stat *sb, size_t *refreshed, struct eos_error *err)
{
	struct fresh_ctx c = { .cs = cs,
			       .root_fd = root_fd,
			       .top = top,
			       .index_s = sb->st_mtim.tv_sec,
			       .racy_max_s = -1 };
	struct eos_attr attr = eos_import_attr_from_stat(sb);
	cleanup_free uint8_t *buf = malloc(sb->st_size ? (size_t)sb->st_size : 1);
	int r;

	if (!buf)
		return eos_import_no_memory(err);
	r = eos_pread_all(fd, buf, (size_t)sb->st_size);
	if (r == -ENODATA)
		return eos_error_set(err, -EAGAIN, "'%s' changed during the import", path);
	if (r < 0)
		return eos_error_set(err, r, "read '%s': %s", path, strerror(-r));
	/* an index this parser does not read is imported as it is */
	r = eos_git_index_refresh(buf, (size_t)sb->st_size, fresh, &c, refreshed);
	if (r == -ENOMEM)
		return eos_import_no_memory(err);
	/* the racily clean entries refreshed hold what git hashed: the index, as views show it, is
	 * from the second after them, so that git trusts them */
	if (r == 0 && c.racy_max_s >= 0)
		attr.mtime_ns = (c.racy_max_s + 1) * NS;
	return eos_changeset_put_file_mem(cs, path, &attr, buf, (size_t)sb->st_size, err);
}

/* The work tree of the index at path into *ret (NULL: a submodule's that names none). */
static int
work_tree(int root_fd, const char *path, char **ret)
{
	if (!eos_import_is_git_index(path))
		return eos_import_module_work_tree(root_fd, path, ret);
	*ret = eos_import_git_work_tree(path);
	return *ret ? 0 : -ENOMEM;
}

int
eos_import_git_index(struct eos_changeset *cs, int root_fd, const char *path, dev_t dev, ino_t ino,
		     bool keep, uint64_t *bytes, size_t *refreshed, struct eos_error *err)
{
	cleanup_free char *top = NULL;
	cleanup_close int fd = -1;
	struct stat sb;
	int r;

	*refreshed = 0;
	r = eos_import_open_seen(root_fd, path, dev, ino, &fd, &sb, err);
	if (r < 0)
		return r;
	*bytes = (uint64_t)sb.st_size;
	if (!keep && sb.st_size <= EOS_IMPORT_INDEX_MAX && work_tree(root_fd, path, &top) < 0)
		return eos_import_no_memory(err);
	if (top) {
		r = stage_refreshed(cs, root_fd, path, top, fd, &sb, refreshed, err);
	} else {
		struct eos_attr attr = eos_import_attr_from_stat(&sb);

		r = eos_changeset_put_file_fd(cs, path, &attr, fd, err);
	}
	return r ?: eos_import_copy_xattrs(cs, path, fd, err);
}
