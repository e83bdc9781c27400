/* SPDX-License-Identifier: MIT */
/*
 * fs/partial: copy-up of large files by the byte ranges written, not by the whole file.
 *
 * A partial node's data file is sparse and holds the file's bytes only in its `present` ranges;
 * every other byte below `lower_limit` is still the lower content in the store, and bytes from
 * lower_limit to the size are zeros (a truncate below the lower size lowers the limit). Appending
 * one byte to a 256 MiB file therefore writes one byte. Reads merge the two sources. The delta
 * walk flattens a partial node (copies the missing ranges in) before it hands the data file to
 * the publish gate.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"

#include "fs/view-internal.h"

enum {
	FLATTEN_BLOCK = 1 << 20
};

int
eos_partial_begin(struct eos_view *v, struct eos_node *n, int fd)
{
	(void)v;
	if (ftruncate(fd, (off_t)n->size) < 0)
		return eos_neg_errno();
	eos_writelog_release(&n->x->present);
	n->x->lower_limit = n->size;
	n->flags |= EOS_NODE_PARTIAL | EOS_NODE_LOG_DIRTY;
	return 0;
}

static int
lower_file(struct eos_view *v, struct eos_node *n)
{
	if (n->x->lower_file)
		return 0;
	if (!n->x->lst)
		return -EIO;
	return eos_lower_open(v, n, &n->x->lower_file);
}

/* Fill buf with the lower bytes of [off, off + len) (zeros beyond lower_limit). n locked. */
static int
read_gap(struct eos_view *v, struct eos_node *n, char *buf, uint64_t off, uint64_t len)
{
	uint64_t lower_end = EOS_MIN(off + len, EOS_MAX(off, n->x->lower_limit));
	int r = off < lower_end ? lower_file(v, n) : 0;

	while (r == 0 && off < lower_end) {
		ssize_t got = eos_file_pread(n->x->lower_file, buf, lower_end - off, off, NULL);

		if (got <= 0) {
			r = got < 0 ? (int)got : 0;
			break;
		}
		buf += got;
		len -= (uint64_t)got;
		off += (uint64_t)got;
	}
	eos_flusher_after_read(v);
	if (r == 0)
		memset(buf, 0, len);
	return r;
}

/* Fill buf with [off, off + len) of the data file (zeros past its end). n locked. */
static int
read_present(struct eos_node *n, char *buf, uint64_t off, uint64_t len)
{
	ssize_t got = pread(n->x->data_fd, buf, len, (off_t)off);

	if (got < 0)
		return eos_neg_errno();
	memset(buf + got, 0, len - (uint64_t)got);
	return 0;
}

static ssize_t
read_locked(struct eos_view *v, struct eos_node *n, char *buf, size_t size, uint64_t off)
{
	uint64_t pos = off, end;
	int r = 0;

	if (off >= n->size)
		return 0;
	end = off + EOS_MIN((uint64_t)size, n->size - off);
	for (size_t i = 0; r == 0 && i < n->x->present.n && pos < end; i++) {
		const struct eos_wrange *p = &n->x->present.v[i];

		if (p->end <= pos)
			continue;
		if (p->start >= end)
			break;
		if (p->start > pos) {
			r = read_gap(v, n, buf + (pos - off), pos, p->start - pos);
			pos = p->start;
		}
		if (r == 0) {
			uint64_t stop = EOS_MIN(p->end, end);

			r = read_present(n, buf + (pos - off), pos, stop - pos);
			pos = stop;
		}
	}
	if (r == 0 && pos < end)
		r = read_gap(v, n, buf + (pos - off), pos, end - pos);
	return r < 0 ? r : (ssize_t)(end - off);
}

ssize_t
eos_partial_read(struct eos_view *v, struct eos_node *n, void *buf, size_t size, uint64_t off)
{
	ssize_t r;

	eos_node_lock(n);
	if (n->flags & EOS_NODE_PARTIAL) {
		r = read_locked(v, n, buf, size, off);
	} else {
		r = pread(n->x->data_fd, buf, size, (off_t)off);
		if (r < 0)
			r = eos_neg_errno();
	}
	eos_node_unlock(n);
	return r;
}

int
eos_partial_reserve(struct eos_node *n)
{
	return n->flags & EOS_NODE_PARTIAL ? eos_writelog_reserve(&n->x->present) : 0;
}

void
eos_partial_wrote(struct eos_node *n, uint64_t start, uint64_t end)
{
	if (!(n->flags & EOS_NODE_PARTIAL))
		return;
	/* cannot fail after eos_partial_reserve() under the same lock */
	eos_writelog_add(&n->x->present, start, end, 0);
	n->flags |= EOS_NODE_LOG_DIRTY;
}

void
eos_partial_truncate(struct eos_node *n, uint64_t size)
{
	if (!(n->flags & EOS_NODE_PARTIAL))
		return;
	eos_writelog_truncate(&n->x->present, size);
	n->x->lower_limit = EOS_MIN(n->x->lower_limit, size);
	n->flags |= EOS_NODE_LOG_DIRTY;
}

/* Copy the lower bytes of the gap [off, end) into the data file. n locked. */
static int
flatten_gap(struct eos_view *v, struct eos_node *n, char *buf, uint64_t off, uint64_t end)
{
	end = EOS_MIN(end, n->x->lower_limit);
	while (off < end) {
		uint64_t len = EOS_MIN(end - off, (uint64_t)FLATTEN_BLOCK);
		int r = read_gap(v, n, buf, off, len);

		if (r < 0)
			return r;
		if (pwrite(n->x->data_fd, buf, len, (off_t)off) != (ssize_t)len)
			return -EIO;
		off += len;
	}
	return 0;
}

int
eos_partial_flatten(struct eos_view *v, struct eos_node *n)
{
	cleanup_free char *buf = NULL;
	uint64_t pos = 0;
	int r;

	if (!(n->flags & EOS_NODE_PARTIAL))
		return 0;
	buf = malloc(FLATTEN_BLOCK);
	r = buf ? eos_data_open(v, n) : -ENOMEM;
	for (size_t i = 0; r == 0 && i <= n->x->present.n; i++) {
		uint64_t start = i < n->x->present.n ? n->x->present.v[i].start : UINT64_MAX;

		r = flatten_gap(v, n, buf, pos, start);
		if (i < n->x->present.n)
			pos = n->x->present.v[i].end;
	}
	if (r < 0)
		return r;
	eos_writelog_release(&n->x->present);
	eos_file_close(n->x->lower_file);
	n->x->lower_file = NULL;
	n->flags &= ~(unsigned)EOS_NODE_PARTIAL;
	n->flags |= EOS_NODE_DIRTY | EOS_NODE_LOG_DIRTY;
	return 0;
}
