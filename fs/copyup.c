/* SPDX-License-Identifier: MIT */
/* fs/copyup: giving lower nodes a place in the delta (metadata) and a data file (content). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"

#include "fs/view-internal.h"

enum {
	COPY_BLOCK = 1 << 20
};

void
eos_data_path(const struct eos_node *n, char *out, size_t size)
{
	snprintf(out, size, "%016" PRIx64, n->ino);
}

static bool
is_upper(struct eos_node *n, uint64_t *ret_parent, char **ret_name)
{
	bool upper;

	eos_node_lock(n);
	upper = n->flags & EOS_NODE_UPPER;
	*ret_parent = eos_node_parent(n);
	*ret_name = upper || !eos_node_name(n) ? NULL : strdup(eos_node_name(n));
	eos_node_unlock(n);
	return upper;
}

int
eos_copyup_record(struct eos_view *v, struct eos_node *n)
{
	int r = eos_node_extend(v, n);

	r = r ?: eos_xattr_load(v, n);

	if (r == 0)
		n->flags |= EOS_NODE_UPPER | EOS_NODE_XATTRS;
	return r;
}

/*
 * n (locked) gets its record; p (locked) a dirent for it when n is still linked there. A change
 * the caller staged (`then`) is made to n before its record is encoded, so that both go in one
 * batch, and is undone with the copy-up when the batch cannot be written.
 */
static int
make_upper(struct eos_view *v, struct eos_node *p, struct eos_node *n, const char *name,
	   bool freeing, struct eos_copyup_then *then)
{
	struct eos_txn t = { 0 };
	int r = eos_txn_begin(v, &t);

	if (r == 0 && freeing)
		eos_session_batch_freeing(t.b);
	r = r ?: eos_txn_save(&t, n);
	r = r ?: eos_copyup_record(v, n);
	if (r == 0 && then)
		then->change(n, then->ctx);
	r = r ?: eos_delta_put_node(v, n, t.b);
	if (r == 0 && n->nlink > 0)
		r = eos_txn_dirent_kept(&t, p, name, n->ino);
	r = eos_txn_end(&t, r);
	if (r == 0 && then)
		then->done = true;
	return r;
}

int
eos_copyup_meta(struct eos_view *v, struct eos_node *n)
{
	return eos_copyup_meta_for(v, n, false);
}

int
eos_copyup_meta_for(struct eos_view *v, struct eos_node *n, bool freeing)
{
	return eos_copyup_meta_then(v, n, freeing, NULL);
}

int
eos_copyup_meta_then(struct eos_view *v, struct eos_node *n, bool freeing,
		     struct eos_copyup_then *then)
{
	for (;;) {
		cleanup_free char *name = NULL;
		struct eos_node *p;
		uint64_t parent;
		int r;

		if (!v->session)
			return -EROFS;
		if (is_upper(n, &parent, &name))
			return 0;
		if (!name)
			return -ENOMEM;
		p = eos_node_get(v, parent);
		if (!p)
			return -EIO;
		r = eos_copyup_meta_for(v, p, freeing);
		if (r < 0)
			return r;
		eos_node_lock(p);
		eos_node_lock(n);
		bool moved = eos_node_parent(n) != parent || strcmp(eos_node_name(n), name) != 0;
		r = moved || n->flags & EOS_NODE_UPPER ? 0
						       : make_upper(v, p, n, name, freeing, then);
		eos_node_unlock(n);
		eos_node_unlock(p);
		if (!moved)
			return r;
	}
}

void
eos_data_blocks(struct eos_view *v, const struct eos_node *n, struct stat *st)
{
	struct stat ds;
	char name[32];

	if (!(n->flags & EOS_NODE_DATA) || n->flags & EOS_NODE_PARTIAL)
		return; /* a partial data file is sparse where the content is still below */
	eos_data_path(n, name, sizeof(name));
	if (n->x->data_fd >= 0 ? fstat(n->x->data_fd, &ds) == 0
			       : fstatat(v->data_dirfd, name, &ds, 0) == 0)
		st->st_blocks =
			ds.st_blocks; /* holes and preallocation as the data file has them */
}

int
eos_data_open(struct eos_view *v, struct eos_node *n)
{
	char name[32];

	if (n->x->data_fd >= 0)
		return 0;
	eos_data_path(n, name, sizeof(name));
	n->x->data_fd = openat(v->data_dirfd, name, O_RDWR | O_CLOEXEC);
	if (n->x->data_fd < 0) {
		int r = eos_neg_errno();

		eos_log_error("session '%s': data file '%s' of inode %" PRIu64 ": %s", v->session,
			      name, n->ino, strerror(-r));
		return r == -ENOENT ? -EIO : r;
	}
	return 0;
}

static int
copy_content(struct eos_view *v, struct eos_node *n, int fd)
{
	EOS_CLEANUP(eos_file_closep) struct eos_file *f = NULL;
	cleanup_free char *buf = malloc(COPY_BLOCK);
	uint64_t off = 0;
	int r;

	if (!buf)
		return -ENOMEM;
	r = eos_fs_room(v, n->size);
	r = r ?: eos_lower_open(v, n, &f);
	while (r == 0 && off < n->size) {
		ssize_t got = eos_file_pread(f, buf, COPY_BLOCK, off, NULL);

		if (got <= 0)
			return got < 0 ? (int)got : -EIO;
		if (pwrite(fd, buf, (size_t)got, (off_t)off) != got)
			return eos_neg_errno();
		off += (uint64_t)got;
	}
	return r;
}

int
eos_copyup_data(struct eos_view *v, struct eos_node *n, bool truncate)
{
	char name[32];
	cleanup_close int fd = -1;
	uint8_t kind = EOS_JCOPYUP_EMPTY;
	int r = 0;

	if (n->flags & EOS_NODE_DATA)
		return 0;
	eos_data_path(n, name, sizeof(name));
	fd = openat(v->data_dirfd, name, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return eos_neg_errno();
	if (!truncate && n->x->lst && n->size >= EOS_PARTIAL_MIN) {
		kind = EOS_JCOPYUP_PARTIAL;
		r = eos_partial_begin(v, n, fd); /* copy nothing now: writes mark what they cover */
	} else if (!truncate && n->x->lst && n->size > 0) {
		kind = EOS_JCOPYUP_FULL;
		r = copy_content(v, n, fd);
	}
	if (r < 0) {
		char buf[EOS_LOWER_BUF];
		const char *lower = eos_node_lower(n, buf);

		unlinkat(v->data_dirfd, name, 0);
		eos_log_error("session '%s': copy-up of '%s' failed: %s", v->session,
			      lower ? lower : "?", strerror(-r));
		return r;
	}
	if (truncate)
		n->size = 0;
	if (n->x->data_fd >= 0)
		close(n->x->data_fd);
	n->x->data_fd = TAKE_FD(fd);
	n->flags |= EOS_NODE_DATA | EOS_NODE_DIRTY;
	/* persisted with the next journal record or node record (the data file is complete) */
	n->x->jcopyup = kind;
	return 0;
}
