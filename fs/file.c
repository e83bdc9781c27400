/* SPDX-License-Identifier: MIT */
/* fs/file: attributes, open files, reads and writes, and the write log. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "common/path.h"

#include "fs/view-internal.h"

enum {
	COPY_RANGE_BLOCK = 1 << 20
};

static bool
wants_write(int flags)
{
	return (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC);
}

/* n (locked) will be size bytes long: its data file exists after this (copied up). */
static int
truncate_prepare(struct eos_view *v, struct eos_node *n, uint64_t size)
{
	int r = eos_copyup_data(v, n, size == 0);

	return r ?: eos_data_open(v, n);
}

/* The truncation in n's (locked) fields; the data file follows once they are recorded. */
static void
truncate_fields(struct eos_node *n, uint64_t size)
{
	eos_partial_truncate(n, size);
	n->size = size;
	eos_writelog_truncate(&n->x->log, size);
	n->flags |= EOS_NODE_LOG_DIRTY;
	eos_node_touch(n, true);
}

static int
truncate_data(struct eos_node *n)
{
	return ftruncate(n->x->data_fd, (off_t)n->size) < 0 ? eos_neg_errno() : 0;
}

static void
set_times(struct eos_node *n, const struct stat *a, unsigned valid)
{
	int64_t now = eos_node_now_ns();

	if (valid & EOS_SET_ATIME_NOW)
		n->x->atime = now;
	else if (valid & EOS_SET_ATIME)
		n->x->atime = eos_ts_to_ns(a->st_atim);
	if (valid & EOS_SET_MTIME_NOW)
		n->mtime = now;
	else if (valid & EOS_SET_MTIME)
		n->mtime = eos_ts_to_ns(a->st_mtim);
	n->x->ctime = valid & EOS_SET_CTIME ? eos_ts_to_ns(a->st_ctim) : now;
}

static void
set_fields(struct eos_node *n, const struct stat *a, unsigned valid)
{
	if (valid & EOS_SET_SIZE)
		truncate_fields(n, (uint64_t)a->st_size);
	if (valid & EOS_SET_MODE)
		n->mode = (n->mode & S_IFMT) | (a->st_mode & 07777);
	if (valid & EOS_SET_UID)
		n->uid = a->st_uid;
	if (valid & EOS_SET_GID)
		n->gid = a->st_gid;
	/* times with ctime come from the kernel's writeback of a written file, not from a user */
	if (valid & (EOS_SET_MODE | EOS_SET_UID | EOS_SET_GID) ||
	    (valid & ~EOS_SET_SIZE && !(valid & EOS_SET_CTIME)))
		n->flags |= EOS_NODE_META_CHANGED;
	set_times(n, a, valid);
	n->flags |= EOS_NODE_DIRTY;
}

/*
 * Whether a change of n (locked, about to be upper) can be one journal record instead of a store
 * write of its record: a change of mode, owner or times, unless a copy-up waits for its record
 * (the attribute record does not carry one); or a truncation that changes no other attribute
 * than the mtime (the kernel sends truncate(2) and O_TRUNC as the size alone).
 */
static bool
journaled(struct eos_view *v, struct eos_node *n, unsigned valid)
{
	const unsigned trunc = EOS_SET_SIZE | EOS_SET_MTIME | EOS_SET_MTIME_NOW;

	if (!(valid & EOS_SET_SIZE))
		return n->x->jcopyup == EOS_JCOPYUP_NONE && eos_journal_takes(v, n);
	return !(valid & ~trunc) && eos_journal_takes(v, n);
}

/*
 * n (locked, upper): the change as one journal record instead of a store write of its record,
 * which the next checkpoint writes. A failed append (a full disk) puts the fields back; the
 * copy-up a truncation needed stays, as it does when its record cannot be written.
 */
static int
setattr_journaled(struct eos_view *v, struct eos_node *n, const struct stat *a, unsigned valid)
{
	bool size = valid & EOS_SET_SIZE;
	struct eos_txn t = { .v = v };
	int r = eos_journal_reserve(v, EOS_JROOM_RECORD);

	r = r ?: (size ? truncate_prepare(v, n, (uint64_t)a->st_size) : 0);
	r = r ?: eos_txn_save(&t, n);
	r = r ?: (size ? eos_txn_save_logs(&t, n) : 0);
	if (r == 0) {
		set_fields(n, a, valid);
		r = size ? eos_journal_truncated(v, n) : eos_journal_attr(v, n);
	}
	if (r < 0) {
		eos_txn_abort(&t);
		return r;
	}
	eos_txn_keep(&t);
	return size ? truncate_data(n) : 0;
}

/* The change is recorded before it is made: a failure (a full disk) changes nothing. */
static int
setattr_locked(struct eos_view *v, struct eos_node *n, const struct stat *a, unsigned valid)
{
	bool size = valid & EOS_SET_SIZE;
	struct eos_txn t = { 0 };
	int r = 0;

	if (size && !S_ISREG(n->mode))
		return eos_node_is_dir(n) ? -EISDIR : -EINVAL;
	if (journaled(v, n, valid))
		return setattr_journaled(v, n, a, valid);
	if (size)
		r = truncate_prepare(v, n, (uint64_t)a->st_size);
	r = r ?: eos_txn_begin(v, &t);
	r = r ?: eos_txn_save(&t, n);
	r = r ?: (size ? eos_txn_save_logs(&t, n) : 0);
	if (r == 0) {
		set_fields(n, a, valid);
		r = eos_delta_put_node(v, n, t.b);
	}
	r = eos_txn_end(&t, r);
	return r == 0 && size ? truncate_data(n) : r;
}

struct setattr_args {
	const struct stat *attr;
	unsigned valid;
};

static void
setattr_staged(struct eos_node *n, void *ctx)
{
	const struct setattr_args *a = ctx;

	set_fields(n, a->attr, a->valid);
}

int
eos_fs_setattr(struct eos_view *v, struct eos_node *n, const struct stat *attr, unsigned valid,
	       struct stat *out)
{
	struct setattr_args args = { .attr = attr, .valid = valid };
	/* a lower node's first change of owner, mode or times: one batch with its copy-up */
	struct eos_copyup_then then = { .change = setattr_staged, .ctx = &args };
	int r = eos_copyup_meta_then(v, n, false, valid & EOS_SET_SIZE ? NULL : &then);

	if (r < 0)
		return r;
	eos_node_lock(n);
	r = then.done ? 0 : setattr_locked(v, n, attr, valid);
	if (n->x->opens == 0)
		eos_data_close(v, n); /* a truncate without an open file */
	if (r == 0 && eos_node_is_dir(n))
		r = eos_dir_count_subdirs(v, n);
	if (r == 0) {
		eos_node_stat(n, out);
		eos_data_blocks(v, n, out);
	}
	eos_node_unlock(n);
	return r;
}

static int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return eos_ts_to_ns(ts);
}

/*
 * A process's operation is cached for a second: a build that creates thousands of files reads
 * /proc once. (A process that execs itself with another EOS_OPERATION within that second keeps
 * the old one until it expires.)
 */
static bool
opcache_find(struct eos_view *v, pid_t pid, uint32_t *ret)
{
	struct eos_opcache_slot *s = &v->opcache[(unsigned)pid % EOS_OPCACHE_SLOTS];
	bool hit;

	if (pid <= 0)
		return false;
	pthread_mutex_lock(&v->opcache_lock);
	hit = s->pid == pid && s->expires_ns > now_ns();
	if (hit)
		*ret = s->op;
	pthread_mutex_unlock(&v->opcache_lock);
	return hit;
}

static void
opcache_put(struct eos_view *v, pid_t pid, uint32_t op)
{
	struct eos_opcache_slot *s = &v->opcache[(unsigned)pid % EOS_OPCACHE_SLOTS];

	if (pid <= 0)
		return;
	pthread_mutex_lock(&v->opcache_lock);
	*s = (struct eos_opcache_slot){ .pid = pid,
					.op = op,
					.expires_ns = now_ns() + EOS_OPCACHE_TTL_NS };
	pthread_mutex_unlock(&v->opcache_lock);
}

uint32_t
eos_fs_operation(struct eos_view *v, pid_t pid)
{
	char owner[EOS_OPERATION_MAX + 1];
	const char *who = v->self_owner;
	uint32_t op = 0;
	bool fresh = false;

	if (opcache_find(v, pid, &op))
		return op;
	if (v->resolve && v->resolve(v->resolve_ctx, pid, owner, sizeof(owner)) == 0)
		who = owner;
	if (eos_opstable_intern(&v->ops, who, &op, &fresh) < 0)
		return v->self_op;
	opcache_put(v, pid, op);
	if (fresh) {
		EOS_CLEANUP(eos_session_batch_freep) struct eos_session_batch *b = NULL;

		if (eos_delta_batch(v, &b) == 0 && eos_delta_put_op(op, who, b) == 0)
			eos_delta_commit(v, b, EOS_COMMIT_JOURNAL);
	}
	return op;
}

static int
open_locked(struct eos_view *v, struct eos_node *n, struct eos_handle *h)
{
	int r = 0;

	/* no copy-up here: the first write copies (an open that never writes costs nothing) */
	if (h->flags & O_TRUNC && S_ISREG(n->mode) && n->size > 0) {
		r = setattr_locked(v, n, &(struct stat){ .st_size = 0 }, EOS_SET_SIZE);
	} else if (h->flags & O_TRUNC && S_ISREG(n->mode)) {
		eos_node_touch(n, true); /* POSIX: O_TRUNC sets mtime and ctime even when empty */
		r = eos_delta_flush_node(v, n, EOS_COMMIT_JOURNAL);
	}
	if (r == 0 && n->flags & EOS_NODE_DATA)
		r = eos_data_open(v, n);
	else if (r == 0 && S_ISREG(n->mode) && n->x->lst)
		r = eos_lower_open(v, n, &h->lower);
	h->lower_gen = n->x->gen;
	if (r == 0 && h->writer) {
		/* writeback mode: writes are attributed per file (see eos_view_options) */
		n->x->writer_mixed |= n->x->writers > 0 && n->x->writer_op != h->op;
		n->x->writer_op = h->op;
		n->x->writers++;
	}
	if (r == 0)
		n->x->opens++;
	return r;
}

int
eos_fs_open(struct eos_view *v, const struct eos_ctx *ctx, struct eos_node *n, int flags,
	    struct eos_handle **ret)
{
	struct eos_handle *h;
	int r = 0;

	if (wants_write(flags))
		r = v->session ? eos_copyup_meta(v, n) : -EROFS;
	if (r < 0)
		return r;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->node = n;
	h->flags = flags;
	h->pid = ctx->pid;
	if (wants_write(flags) && v->writeback) {
		h->op = eos_fs_operation(v, ctx->pid); /* the writes may come after the exit */
		h->op_resolved = true;
		h->writer = true;
	}
	eos_node_lock(n);
	r = eos_node_extend(v, n);
	r = r ?: open_locked(v, n, h);
	eos_node_unlock(n);
	if (r < 0) {
		free(h);
		return r;
	}
	pthread_mutex_lock(&v->handles_lock);
	h->next = v->handles;
	if (h->next)
		h->next->prev = h;
	v->handles = h;
	pthread_mutex_unlock(&v->handles_lock);
	*ret = h;
	return 0;
}

/* The data file of n (locked) for writing: copied up from the store at the first write. */
static int
write_fd_locked(struct eos_view *v, struct eos_node *n)
{
	int r = eos_copyup_data(v, n, false);

	r = r ?: eos_data_open(v, n);
	return r < 0 ? r : n->x->data_fd;
}

static int
handle_write_fd(struct eos_view *v, struct eos_handle *h)
{
	int fd;

	if ((h->flags & O_ACCMODE) == O_RDONLY)
		return -EBADF;
	/* a live publish made the node a mirror of the new head since the open (reset.c) */
	eos_node_lock(h->node);
	bool upper = h->node->flags & EOS_NODE_UPPER;
	eos_node_unlock(h->node);
	fd = upper ? 0 : eos_copyup_meta(v, h->node);
	if (fd < 0)
		return fd;
	eos_node_lock(h->node);
	if (!h->op_resolved) {
		h->op = eos_fs_operation(v, h->pid);
		h->op_resolved = true;
	}
	fd = write_fd_locked(v, h->node);
	eos_node_unlock(h->node);
	return fd;
}

int
eos_fs_read_fd(struct eos_handle *h)
{
	int fd;

	eos_node_lock(h->node);
	fd = (h->node->flags & (EOS_NODE_DATA | EOS_NODE_PARTIAL)) == EOS_NODE_DATA
		     ? h->node->x->data_fd
		     : -1;
	eos_node_unlock(h->node);
	return fd;
}

/* h's lower content, reopened when a live publish moved its node to a new version (reset.c). */
static int
lower_current(struct eos_view *v, struct eos_handle *h)
{
	struct eos_node *n = h->node;
	int r = 0;

	eos_node_lock(n);
	if (h->lower_gen != n->x->gen) {
		eos_file_close(h->lower);
		h->lower = NULL;
		if (S_ISREG(n->mode) && n->x->lst)
			r = eos_lower_open(v, n, &h->lower);
		h->lower_gen = r == 0 ? n->x->gen : h->lower_gen;
	}
	eos_node_unlock(n);
	return r;
}

/* A transient handle reads through the node's lower content, opened once for all of them. */
static ssize_t
read_lower_shared(struct eos_view *v, struct eos_node *n, void *buf, size_t size, uint64_t off,
		  struct eos_error *err)
{
	ssize_t r = 0;

	eos_node_lock(n);
	if (!n->x->lower_file && S_ISREG(n->mode) && n->x->lst)
		r = eos_lower_open(v, n, &n->x->lower_file);
	if (r == 0 && n->x->lower_file)
		r = eos_file_pread(n->x->lower_file, buf, size, off, err);
	eos_node_unlock(n);
	return r;
}

static ssize_t
read_lower(struct eos_view *v, struct eos_handle *h, void *buf, size_t size, uint64_t off)
{
	struct eos_error err = { 0 };
	ssize_t r;

	if (h->transient) {
		r = read_lower_shared(v, h->node, buf, size, off, &err);
	} else {
		r = lower_current(v, h);
		if (r == 0 && h->lower)
			r = eos_file_pread(h->lower, buf, size, off, &err);
	}
	eos_flusher_after_read(v);
	if (r < 0) {
		char path[EOS_LOWER_BUF];
		const char *lower = eos_node_lower(h->node, path);

		eos_log_error("view of '%s': read of '%s': %s", v->sandbox, lower ? lower : "?",
			      err.msg[0] ? err.msg : strerror((int)-r));
	}
	return r;
}

ssize_t
eos_fs_read(struct eos_view *v, struct eos_handle *h, void *buf, size_t size, uint64_t off)
{
	int fd = eos_fs_read_fd(h);
	ssize_t got;

	if (fd >= 0) {
		got = pread(fd, buf, size, (off_t)off);
		return got < 0 ? eos_neg_errno() : got;
	}
	if (h->node->flags & EOS_NODE_DATA) /* partial; the flag never comes back once gone */
		return eos_partial_read(v, h->node, buf, size, off);
	return read_lower(v, h, buf, size, off);
}

/* The operation a write through h belongs to (h->node locked). */
static uint32_t
write_op(struct eos_view *v, struct eos_handle *h)
{
	struct eos_node *n = h->node;

	if (!v->writeback)
		return h->op;
	/* cached writes come through any writable handle: the file's single writer, if any */
	return n->x->writers > 0 && !n->x->writer_mixed ? n->x->writer_op : v->self_op;
}

/* n (locked) got [off, off + len) written by operation op: recorded, then journaled. */
static int
wrote_locked(struct eos_view *v, struct eos_node *n, uint32_t op, uint64_t off, uint64_t len)
{
	if (off + len > n->size)
		n->size = off + len;
	eos_writelog_add(&n->x->log, off, off + len, op);
	eos_partial_wrote(n, off, off + len);
	n->flags |= EOS_NODE_LOG_DIRTY;
	eos_node_touch(n, true);
	return eos_journal_wrote(v, n, off, off + len, op);
}

enum {
	DIFF_MAX = 32
};

/* The byte ranges a write changes (more than DIFF_MAX: the last one stretches). */
struct diff {
	struct eos_wrange v[DIFF_MAX];
	size_t n;
};

static void
diff_add(struct diff *d, uint64_t start, uint64_t end)
{
	if (d->n == DIFF_MAX)
		d->v[d->n - 1].end = end;
	else
		d->v[d->n++] = (struct eos_wrange){ .start = start, .end = end };
}

/*
 * Where buf differs from the file's bytes at off. The kernel's writeback rewrites whole pages,
 * unchanged bytes included: only the changed ones belong to the writer (and an identical
 * rewrite keeps the old owners, as the publish gate's blame wants).
 */
static int
diff_ranges(struct eos_view *v, struct eos_handle *h, const char *buf, size_t len, uint64_t off,
	    struct diff *d)
{
	uint64_t size;
	size_t old_len, i = 0;
	cleanup_free char *old = NULL;
	ssize_t got = 0;

	eos_node_lock(h->node);
	size = h->node->size;
	eos_node_unlock(h->node);
	old_len = off < size ? (size_t)EOS_MIN((uint64_t)len, size - off) : 0;
	if (old_len && !(old = malloc(old_len)))
		return -ENOMEM;
	if (old_len)
		got = eos_fs_read(v, h, old, old_len, off);
	if (got < 0)
		return (int)got;
	old_len = (size_t)got;
	d->n = 0;
	while (i < old_len) {
		size_t j = i;

		while (j < old_len && old[j] != buf[j])
			j++;
		if (j > i)
			diff_add(d, off + i, off + j);
		i = j + 1;
	}
	if (old_len < len)
		diff_add(d, off + old_len, off + len);
	return 0;
}

/*
 * n (locked) got [off, off + len) written, of which d's ranges changed, by operation op. The
 * journal gets one record per changed range, each with the new size and mtime.
 */
static int
wrote_diff_locked(struct eos_view *v, struct eos_node *n, uint32_t op, uint64_t off, uint64_t len,
		  const struct diff *d)
{
	bool changed = false;
	int r = 0;

	if (off + len > n->size)
		n->size = off + len;
	eos_partial_wrote(n, off, off + len);
	n->flags |= EOS_NODE_LOG_DIRTY;
	eos_node_touch(n, true);
	for (size_t i = 0; r == 0 && i < d->n && d->v[i].start < off + len; i++) {
		uint64_t end = EOS_MIN(d->v[i].end, off + len);

		eos_writelog_add(&n->x->log, d->v[i].start, end, op);
		r = eos_journal_wrote(v, n, d->v[i].start, end, op);
		changed = true;
	}
	/* an identical rewrite changes only the mtime (unchanged bytes need not be present: they
	 * equal what is below) */
	return r || changed ? r : eos_journal_wrote(v, n, off + len, off + len, op);
}

/* pwrite under n's lock (partial nodes: the present map must match the data file). */
static ssize_t
pwrite_locked(struct eos_node *n, int fd, const void *buf, size_t size, uint64_t off)
{
	ssize_t got;

	if (eos_writelog_reserve(&n->x->log) < 0 || eos_partial_reserve(n) < 0)
		return -ENOMEM;
	got = pwrite(fd, buf, size, (off_t)off);
	return got < 0 ? eos_neg_errno() : got;
}

int
eos_fs_room(struct eos_view *v, uint64_t bytes)
{
	struct eos_error err;
	int r = bytes ? eos_store_space_check(v->store, bytes, &err) : 0;

	if (r == -ENOSPC)
		eos_log_debug("session '%s': %s", v->session, err.msg);
	return r < 0 ? -ENOSPC : 0;
}

/* What is free for session data: the store's filesystem less eos' reserve (the view's df). */
int
eos_fs_statfs(struct eos_view *v, struct statvfs *st)
{
	struct eos_store_space sp;
	fsblkcnt_t keep;

	if ((v->data_dirfd >= 0 ? fstatvfs(v->data_dirfd, st) : statvfs("/", st)) < 0)
		return eos_neg_errno();
	st->f_namemax = EOS_NAME_MAX;
	if (!v->session || st->f_frsize == 0 || eos_store_space(v->store, &sp, NULL) < 0)
		return 0;
	keep = (fsblkcnt_t)(sp.soft_reserve / st->f_frsize);
	st->f_bavail = st->f_bavail > keep ? st->f_bavail - keep : 0;
	st->f_bfree = st->f_bfree > keep ? st->f_bfree - keep : 0;
	return 0;
}

/* The bytes a write of [off, off + len) may add to n's data file (holes of a partial copy-up). */
static uint64_t
growth(struct eos_node *n, uint64_t off, uint64_t len)
{
	uint64_t end = off + len;

	eos_node_lock(n);
	if (!(n->flags & EOS_NODE_PARTIAL) && n->flags & EOS_NODE_DATA)
		len = end > n->size ? end - EOS_MAX(off, n->size) : 0;
	eos_node_unlock(n);
	return len;
}

ssize_t
eos_fs_write(struct eos_view *v, struct eos_handle *h, const void *buf, size_t size, uint64_t off)
{
	struct eos_node *n = h->node;
	struct diff d = { 0 };
	int fd = eos_fs_room(v, growth(n, off, size));
	ssize_t got;

	fd = fd ?: eos_journal_reserve(v, EOS_JROOM_DATA);
	fd = fd ?: handle_write_fd(v, h);
	if (fd < 0)
		return fd;
	if (v->writeback && (got = diff_ranges(v, h, buf, size, off, &d)) < 0)
		return got;
	eos_node_lock(n);
	if (n->flags & EOS_NODE_PARTIAL) {
		got = pwrite_locked(n, fd, buf, size, off);
	} else {
		eos_node_unlock(n); /* plain data files take parallel writes */
		got = pwrite(fd, buf, size, (off_t)off);
		got = got < 0 ? eos_neg_errno() : got;
		eos_node_lock(n);
	}
	int r = 0;
	if (got > 0 && v->writeback)
		r = wrote_diff_locked(v, n, write_op(v, h), off, (uint64_t)got, &d);
	else if (got > 0)
		r = wrote_locked(v, n, h->op, off, (uint64_t)got);
	eos_node_unlock(n);
	return r < 0 ? r : got;
}

int
eos_fs_release(struct eos_view *v, struct eos_handle *h)
{
	struct eos_node *n = h->node;

	/* closing writes nothing: the journal holds every write (journal.h) */
	pthread_mutex_lock(&v->handles_lock);
	if (h->prev)
		h->prev->next = h->next;
	else
		v->handles = h->next;
	if (h->next)
		h->next->prev = h->prev;
	pthread_mutex_unlock(&v->handles_lock);
	eos_node_lock(n);
	if (n->x->opens > 0)
		n->x->opens--;
	if (h->writer && n->x->writers > 0 && --n->x->writers == 0)
		n->x->writer_mixed = false;
	if (n->x->opens == 0)
		eos_data_close(v, n);
	eos_node_unlock(n);
	eos_file_close(h->lower);
	free(h);
	return 0;
}

void
eos_data_close(struct eos_view *v, struct eos_node *n)
{
	if (n->x->data_fd >= 0)
		close(n->x->data_fd);
	if (eos_node_extended(n))
		n->x->data_fd = -1;
	if (n->x->fd_kept) {
		n->x->fd_kept = false;
		atomic_fetch_sub(&v->kept_fds, 1);
	}
}

int
eos_fs_transient_begin(struct eos_view *v, struct eos_node *n, pid_t pid, struct eos_handle *h)
{
	int r;

	*h = (struct eos_handle){ .node = n, .pid = pid, .flags = O_RDWR, .transient = true };
	eos_node_lock(n);
	r = eos_node_extend(v, n);
	if (r == 0 && n->flags & EOS_NODE_DATA)
		r = eos_data_open(v, n);
	if (r == 0)
		n->x->opens++;
	eos_node_unlock(n);
	return r;
}

/* n (locked) has no handle open now: keep its data file open for the next request, within the
 * view's bound, else close it. */
static void
data_keep(struct eos_view *v, struct eos_node *n)
{
	if (n->x->data_fd < 0 || n->x->fd_kept)
		return;
	if (atomic_fetch_add(&v->kept_fds, 1) < EOS_KEPT_FDS) {
		n->x->fd_kept = true;
		return;
	}
	atomic_fetch_sub(&v->kept_fds, 1);
	eos_data_close(v, n);
}

void
eos_fs_transient_end(struct eos_view *v, struct eos_handle *h)
{
	struct eos_node *n = h->node;

	eos_node_lock(n);
	if (n->x->opens > 0)
		n->x->opens--;
	if (n->x->opens == 0)
		data_keep(v, n);
	eos_node_unlock(n);
}

int
eos_fs_fsync(struct eos_view *v, struct eos_node *n, bool datasync)
{
	int r = 0;

	eos_node_lock(n);
	if (n->x->data_fd >= 0 && (datasync ? fdatasync(n->x->data_fd) : fsync(n->x->data_fd)) < 0)
		r = eos_neg_errno();
	if (r == 0 && v->session)
		r = eos_delta_flush_node(v, n, EOS_COMMIT_SYNC);
	eos_node_unlock(n);
	return r;
}

int
eos_fs_fallocate(struct eos_view *v, struct eos_handle *h, int mode, uint64_t off, uint64_t len)
{
	struct eos_node *n = h->node;
	bool frees = mode & FALLOC_FL_PUNCH_HOLE;
	struct stat st;
	int r = eos_fs_room(v, frees ? 0 : growth(n, off, len));

	r = r ?: handle_write_fd(v, h);
	if (r < 0)
		return r;
	eos_node_lock(n);
	if (eos_partial_reserve(n) < 0)
		r = -ENOMEM;
	else if (fallocate(n->x->data_fd, mode, (off_t)off, (off_t)len) < 0 ||
		 fstat(n->x->data_fd, &st) < 0)
		r = eos_neg_errno();
	if (r >= 0 && mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE))
		eos_partial_wrote(n, off, off + len); /* those bytes are zeros now */
	if (r >= 0) {
		n->size = (uint64_t)st.st_size;
		eos_node_touch(n, true);
		r = eos_delta_flush_node(v, n, EOS_COMMIT_JOURNAL);
	}
	eos_node_unlock(n);
	return r < 0 ? r : 0;
}

static ssize_t
copy_through_memory(struct eos_view *v, struct eos_handle *in, uint64_t off_in,
		    struct eos_handle *out, int fd_out, uint64_t off_out, size_t len)
{
	cleanup_free char *buf = malloc(EOS_MIN(len, (size_t)COPY_RANGE_BLOCK));
	ssize_t got;

	if (!buf)
		return -ENOMEM;
	got = eos_fs_read(v, in, buf, EOS_MIN(len, (size_t)COPY_RANGE_BLOCK), off_in);
	if (got <= 0)
		return got;
	eos_node_lock(out->node);
	got = pwrite_locked(out->node, fd_out, buf, (size_t)got, off_out);
	int r = got > 0 ? wrote_locked(v, out->node, write_op(v, out), off_out, (uint64_t)got) : 0;
	eos_node_unlock(out->node);
	return r < 0 ? r : got;
}

ssize_t
eos_fs_copy_range(struct eos_view *v, struct eos_handle *in, uint64_t off_in,
		  struct eos_handle *out, uint64_t off_out, size_t len)
{
	struct eos_node *n = out->node;
	int fd_out = eos_fs_room(v, growth(n, off_out, len)), fd_in = eos_fs_read_fd(in);
	loff_t oi = (loff_t)off_in, oo = (loff_t)off_out;
	ssize_t got;

	fd_out = fd_out ?: eos_journal_reserve(v, EOS_JROOM_DATA);
	fd_out = fd_out ?: handle_write_fd(v, out);
	if (fd_out < 0)
		return fd_out;
	eos_node_lock(n);
	bool direct = fd_in >= 0 && !(n->flags & EOS_NODE_PARTIAL);
	eos_node_unlock(n);
	if (!direct)
		return copy_through_memory(v, in, off_in, out, fd_out, off_out, len);
	got = copy_file_range(fd_in, &oi, fd_out, &oo, len, 0);
	if (got < 0)
		return eos_neg_errno();
	eos_node_lock(n);
	int r = got > 0 ? wrote_locked(v, n, write_op(v, out), off_out, (uint64_t)got) : 0;
	eos_node_unlock(n);
	return r < 0 ? r : got;
}

int64_t
eos_fs_lseek(struct eos_view *v, struct eos_handle *h, int64_t off, int whence)
{
	int fd = eos_fs_read_fd(h);
	uint64_t size;
	off_t r;

	(void)v;
	if (fd >= 0) {
		r = lseek(fd, (off_t)off, whence);
		return r < 0 ? eos_neg_errno() : r;
	}
	eos_node_lock(h->node);
	size = h->node->size;
	eos_node_unlock(h->node);
	if (whence != SEEK_DATA && whence != SEEK_HOLE)
		return -EINVAL;
	if (off < 0 || (uint64_t)off >= size)
		return -ENXIO;
	return whence == SEEK_DATA ? off : (int64_t)size;
}
