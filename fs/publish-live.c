/* SPDX-License-Identifier: MIT */
/*
 * fs/publish-live: publishing a mounted session in place, and forking a session (fs/view.h;
 * doc/fs.md, "Live publish and fork").
 *
 * Live publish: close the gate to writers (reads go on), stage the in-memory delta (journaled
 * writes included) into the store's gate and commit. The commit's batch resets the session's
 * records and moves its lease; only then, with the gate closed to every request, do the nodes
 * follow (reset.c). The kernel is told what to forget once the gate is open again.
 *
 * Fork: close the gate to writers, write every node's record (so the records hold what the
 * journal holds), copy the data files into the new session's directory, then copy the records
 * with the new session's record and lease in one batch (eos_store_session_copy).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/failpoint.h"
#include "common/path.h"

#include "fs/view-internal.h"

static int
writable_session(struct eos_view *v, const char *what, struct eos_error *err)
{
	if (!v->session || v->inspect)
		return eos_error_set(err, -EINVAL, "%s: the view is not a writable session", what);
	if (atomic_load(&v->broken))
		return eos_error_set(
			err, -EIO,
			"%s: session '%s' was published but its view could not follow: "
			"reopen it",
			what, v->session);
	return 0;
}

static int
failpoint_at(const char *name, struct eos_error *err)
{
	int r = EOS_FAILPOINT(name);

	return r < 0 ? eos_error_set(err, r, "failpoint '%s'", name) : 0;
}

/*
 * Stage, prepare and commit v's delta (the gate closed to writers since capture_start); the
 * capture's times go into ret->phases.
 */
static int
publish_locked(struct eos_view *v, const char *owner, int64_t capture_start,
	       struct eos_publish_result *ret, char ***skipped, size_t *nskipped,
	       struct eos_error *err)
{
	struct eos_publish_options o = {
		.sandbox = v->sandbox,
		.session = v->session,
		.base = v->version,
		.owner = owner,
		.keep_session_dir = true, /* reads go on until the reset: reset.c empties it */
	};
	EOS_CLEANUP(eos_publish_freep) struct eos_publish *p = NULL;
	int64_t capture_end;
	int r = eos_publish_begin(v->store, &o, &p, err);

	/* the commit replaces the session's records: none may be written after it */
	if (r == 0 && v->pending.active && eos_pending_commit(v, false) < 0)
		r = eos_error_set(err, -EIO, "session '%s': cannot write its records", v->session);
	r = r ?: eos_view_stage(v, p, skipped, nskipped, err);
	capture_end = eos_mono_ns();
	r = r ?: eos_publish_prepare(p, err);
	r = r ?: failpoint_at("publish_live.prepared", err);
	r = r ?: eos_publish_commit(p, ret, err);
	if (r == 0) {
		ret->phases.capture_start = capture_start;
		ret->phases.capture_end = capture_end;
	}
	return r;
}

static void
skipped_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

int
eos_view_publish_live(struct eos_view *v, struct eos_view_mount *m, const char *owner,
		      struct eos_publish_result *ret, struct eos_error *err)
{
	struct eos_inval iv = { 0 };
	char **skipped = NULL;
	size_t nskipped = 0;
	int64_t capture_start = eos_mono_ns();
	int r = writable_session(v, "publish", err);

	(void)m; /* every mount of the view is invalidated, m among them */
	if (r < 0)
		return r;
	if (v->writeback)
		eos_view_sync_mounts(v); /* the kernel's cached writes join the delta */
	eos_gate_close_writers(v);
	r = publish_locked(v, owner, capture_start, ret, &skipped, &nskipped, err);
	if (r < 0 || ret->status == EOS_PUBLISH_REJECTED) {
		eos_gate_open(v, false);
		skipped_free(skipped, nskipped);
		return r;
	}
	/* crash tests only ("=kill"): past the commit, the reset is not optional */
	(void)EOS_FAILPOINT("publish_live.committed");
	eos_gate_close_all(v);
	r = eos_view_reset(v, ret->version ? ret->version : ret->head, &iv, err);
	if (r < 0)
		atomic_store(&v->broken, true);
	(void)EOS_FAILPOINT("publish_live.reset");
	eos_gate_open(v, true);
	eos_view_invalidate(v, &iv);
	eos_inval_release(&iv);
	ret->skipped = skipped;
	ret->nskipped = nskipped;
	return r;
}

/* --- fork ------------------------------------------------------------------------------------- */

/* The inode numbers of every node the view holds (malloc'd into *ret). */
static int
every_node(struct eos_view *v, uint64_t **ret, size_t *ret_n, struct eos_error *err)
{
	cleanup_free uint64_t *inos = NULL;
	size_t n = 0, cap = 0;

	for (size_t i = 0; i < EOS_TABLE_SHARDS; i++) {
		struct eos_node_iter it = { 0 };
		struct eos_node *node;
		int r = 0;

		pthread_mutex_lock(&v->shards[i].lock);
		while (r == 0 && (node = eos_table_next(&v->shards[i], &it))) {
			r = eos_buf_array_reserve(&inos, &cap, n, sizeof(*inos), 64);
			if (r == 0)
				inos[n++] = node->ino;
		}
		pthread_mutex_unlock(&v->shards[i].lock);
		if (r < 0)
			return eos_error_set(err, -ENOMEM, "fork: out of memory");
	}
	*ret = TAKE_PTR(inos);
	*ret_n = n;
	return 0;
}

/*
 * Write the record of every node the journal changed since the last checkpoint: the nodes the
 * flusher has queued (every journaled write queues its node), so the cost follows what changed,
 * not the nodes the kernel knows. Only when a node could not be queued (no memory) is every node
 * written.
 */
static int
checkpoint_all(struct eos_view *v, struct eos_error *err)
{
	cleanup_free uint64_t *inos = NULL;
	size_t n = 0;
	int r = 0;

	if (eos_flusher_take(v, &inos, &n)) {
		free(TAKE_PTR(inos));
		r = every_node(v, &inos, &n, err);
	}
	if (r == 0 && (!eos_flusher_checkpoint(v, inos, n) || eos_pending_commit(v, false) < 0))
		r = eos_error_set(err, -EIO, "session '%s': cannot write its records", v->session);
	return r;
}

/* Copy the data extents of src into dst (holes stay holes), then its length. */
static int
copy_extents(int src, int dst, off_t size)
{
	off_t pos = 0;

	while (pos < size) {
		off_t data = lseek(src, pos, SEEK_DATA), hole;

		if (data < 0)
			break; /* no data after pos: the rest is a hole */
		hole = lseek(src, data, SEEK_HOLE);
		if (hole < 0)
			return eos_neg_errno();
		for (loff_t in = data, out = data; in < hole;) {
			ssize_t got = copy_file_range(src, &in, dst, &out, (size_t)(hole - in), 0);

			if (got <= 0)
				return got < 0 ? eos_neg_errno() : -EIO;
		}
		pos = hole;
	}
	return ftruncate(dst, size) < 0 ? eos_neg_errno() : 0;
}

/* Copy all of src into dst. */
static int
copy_whole(int src, int dst, off_t size)
{
	for (loff_t in = 0, out = 0; in < size;) {
		ssize_t got = copy_file_range(src, &in, dst, &out, (size_t)(size - in), 0);

		if (got <= 0)
			return got < 0 ? eos_neg_errno() : -EIO;
	}
	return 0;
}

/*
 * Copy data file name of v into directory dirfd: a reflink where the filesystem has them, else
 * the bytes (only the data extents of a sparse one: a partial copy-up).
 */
static int
copy_data_file(struct eos_view *v, const char *name, bool sparse, int dirfd)
{
	cleanup_close int src = openat(v->data_dirfd, name, O_RDONLY | O_CLOEXEC), dst = -1;
	struct stat st;

	if (src < 0 || fstat(src, &st) < 0)
		return eos_neg_errno();
	dst = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (dst < 0)
		return eos_neg_errno();
	if (st.st_size == 0 || ioctl(dst, FICLONE, src) == 0)
		return 0;
	return sparse ? copy_extents(src, dst, st.st_size) : copy_whole(src, dst, st.st_size);
}

enum data_file {
	DATA_NONE = 0, /* no linked node with content in the session owns it */
	DATA_PLAIN,
	DATA_SPARSE, /* a partial copy-up: holes where the content is still below */
};

static enum data_file
data_file_kind(struct eos_view *v, const char *name)
{
	char *end;
	uint64_t ino = strtoull(name, &end, 16);
	struct eos_node *n = name[0] != '.' && !*end ? eos_node_get_ref(v, ino) : NULL;
	enum data_file kind = DATA_NONE;

	if (!n)
		return DATA_NONE;
	eos_node_lock(n);
	if (n->flags & EOS_NODE_UPPER && n->flags & EOS_NODE_DATA && n->nlink > 0)
		kind = n->flags & EOS_NODE_PARTIAL ? DATA_SPARSE : DATA_PLAIN;
	eos_node_unlock(n);
	eos_node_forget(v, ino, 1);
	return kind;
}

static int
copy_data(struct eos_view *v, const char *dir, struct eos_error *err)
{
	cleanup_close int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int fd = openat(v->data_dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cleanup_closedir DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	int r = 0;

	if (!d && fd >= 0)
		close(fd);
	if (!d || dirfd < 0)
		return eos_error_set(err, eos_neg_errno(), "fork: open '%s': %m",
				     d ? dir : v->data_dir);
	while (r == 0 && (e = readdir(d))) {
		enum data_file kind = data_file_kind(v, e->d_name);

		if (kind != DATA_NONE &&
		    (r = copy_data_file(v, e->d_name, kind == DATA_SPARSE, dirfd)) < 0)
			eos_error_set(err, r, "fork: copy data file '%s' into '%s': %s", e->d_name,
				      dir, strerror(-r));
	}
	return r;
}

static int
fork_locked(struct eos_view *v, const char *name, struct eos_error *err)
{
	cleanup_free char *dir = NULL;
	int r = checkpoint_all(v, err);

	r = r ?: eos_store_session_dir(v->store, v->sandbox, name, &dir, err);
	r = r ?: copy_data(v, dir, err);
	r = r ?: failpoint_at("fork.copied", err);
	r = r ?: eos_store_session_copy(v->store, v->sandbox, v->session, name, NULL, err);
	if (r < 0 && r != -EEXIST && dir)
		eos_rm_rf(dir); /* no session of that name: its directory goes */
	if (r == 0)
		(void)EOS_FAILPOINT("fork.recorded"); /* crash tests only ("=kill") */
	return r;
}

int
eos_view_fork(struct eos_view *v, const char *new_session, struct eos_error *err)
{
	struct eos_session_info info;
	int r = writable_session(v, "fork", err);

	r = r ?: eos_session_name_check(new_session, err);
	if (r < 0)
		return r;
	r = eos_store_session_get(v->store, v->sandbox, new_session, &info, NULL);
	if (r == 0)
		return eos_error_set(err, -EEXIST, "session '%s' of sandbox '%s' already exists",
				     new_session, v->sandbox);
	eos_gate_close_writers(v);
	r = fork_locked(v, new_session, err);
	eos_gate_open(v, false);
	return r;
}
