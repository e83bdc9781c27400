/* SPDX-License-Identifier: MIT */
/*
 * fs/delta: the session delta in the store's session column family.
 *
 * Records (keys are relative to the session, see store/session.c):
 *	'N' · be64 ino            node: u8 2 · le32 flags · le32 mode · le32 uid · le32 gid ·
 *	                          le32 nlink · le64 size · le64 atime · le64 mtime · le64 ctime
 *	                          (ns) · le64 parent · lp name · lp origin (u8 present first) ·
 *	                          le64 link group · lp symlink target (u8 present first) ·
 *	                          le32 n · (lp name · lp value)* xattrs · le32 rdev major ·
 *	                          le32 rdev minor · le64 jseq (the newest journal record it
 *	                          includes); format 1 records end after the xattrs (rdev 0,
 *	                          jseq 0)
 *	'J'                       the session's journal nonce (16 bytes, fs/journal.h)
 *	'd' · be64 dir · name     dirent: le64 inode, or le64 UINT64_MAX for a whiteout
 *	'o' · be32 index          operation id of write logs
 *	'p' · be64 ino            partial copy-up: le64 lower limit · present ranges (writelog)
 *	'w' · be64 ino            write log (fs/writelog.h)
 * Tags sort J < N < d < o < p < w, so a load sees nodes before the dirents and logs naming them.
 * A node record that includes a journal record also includes its write-log and partial records
 * (they are written in one batch with it), so a replay may skip whatever the node includes.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/endian.h"
#include "common/log.h"

#include "fs/view-internal.h"

enum {
	NODE_FORMAT = 2,
	NODE_FORMAT_1 = 1, /* still read: written before nodes had rdev and jseq */
	KEY_JOURNAL = 'J',
	KEY_NODE = 'N',
	KEY_DIRENT = 'd',
	KEY_OP = 'o',
	KEY_PARTIAL = 'p',
	KEY_LOG = 'w',
	NAME_LP_MAX = 4096,
};

static void
key_ino(uint8_t *key, char tag, uint64_t ino)
{
	key[0] = (uint8_t)tag;
	eos_put_be64(key + 1, ino);
}

int
eos_delta_batch(struct eos_view *v, struct eos_session_batch **ret)
{
	return eos_session_batch_new(v->store, v->sandbox, v->session, ret, NULL);
}

static int
append_opt_str(struct eos_buf *b, const char *s)
{
	int r = eos_buf_append_u8(b, s != NULL);

	return r || !s ? r : eos_buf_append_lp(b, s, strlen(s));
}

static int
encode_xattrs(const struct eos_node *n, struct eos_buf *b)
{
	int r = eos_buf_append_le32(b, (uint32_t)n->x->nxattrs);

	for (size_t i = 0; r == 0 && i < n->x->nxattrs; i++) {
		r = eos_buf_append_lp(b, n->x->xattrs[i].name, strlen(n->x->xattrs[i].name));
		r = r ?: eos_buf_append_lp(b, n->x->xattrs[i].value, n->x->xattrs[i].len);
	}
	return r;
}

static int
encode_node(const struct eos_node *n, struct eos_buf *b)
{
	const char *name = eos_node_name(n);
	char buf[EOS_LOWER_BUF];
	int r = eos_buf_append_u8(b, NODE_FORMAT);

	r = r ?: eos_buf_append_le32(b, n->flags & EOS_NODE_PERSISTED);
	r = r ?: eos_buf_append_le32(b, n->mode);
	r = r ?: eos_buf_append_le32(b, n->uid);
	r = r ?: eos_buf_append_le32(b, n->gid);
	r = r ?: eos_buf_append_le32(b, n->nlink);
	r = r ?: eos_buf_append_le64(b, n->size);
	r = r ?: eos_buf_append_le64(b, (uint64_t)eos_node_atime(n));
	r = r ?: eos_buf_append_le64(b, (uint64_t)n->mtime);
	r = r ?: eos_buf_append_le64(b, (uint64_t)eos_node_ctime(n));
	r = r ?: eos_buf_append_le64(b, eos_node_parent(n));
	r = r ?: eos_buf_append_lp(b, name ? name : "", name ? strlen(name) : 0);
	r = r ?: append_opt_str(b, eos_node_lower(n, buf));
	r = r ?: eos_buf_append_le64(b, n->x->link_group);
	r = r ?: append_opt_str(b, n->x->target);
	r = r ?: encode_xattrs(n, b);
	r = r ?: eos_buf_append_le32(b, major(n->x->rdev));
	r = r ?: eos_buf_append_le32(b, minor(n->x->rdev));
	return r ?: eos_buf_append_le64(b, n->x->jseq);
}

int
eos_delta_put_node(struct eos_view *v, struct eos_node *n, struct eos_session_batch *b)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf val = { 0 };
	uint8_t key[9];
	int r;

	if (n->flags & EOS_NODE_UPPER && !(n->flags & EOS_NODE_XATTRS))
		eos_xattr_load(v, n);
	r = encode_node(n, &val);
	key_ino(key, KEY_NODE, n->ino);
	r = r ?: eos_session_batch_put(b, key, sizeof(key), val.data, val.len);
	/* the record's jseq covers the journal's log ranges too: they go in the same batch */
	if (r == 0 && n->flags & EOS_NODE_LOG_DIRTY)
		r = eos_delta_put_log(v, n, b);
	if (r < 0)
		return r;
	n->flags &= ~(unsigned)EOS_NODE_DIRTY;
	n->x->jcopyup = EOS_JCOPYUP_NONE; /* the record has the flags it set */
	return 0;
}

int
eos_delta_put_dirent(struct eos_node *p, const char *name, uint64_t value,
		     struct eos_session_batch *b)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf key = { 0 };
	uint8_t val[8];
	int r = eos_buf_append_u8(&key, KEY_DIRENT);

	r = r ?: eos_buf_append_be64(&key, p->ino);
	r = r ?: eos_buf_append_str(&key, name);
	if (r < 0)
		return r;
	if (value == EOS_DIRENT_ABSENT)
		return eos_session_batch_delete(b, key.data, key.len);
	eos_put_le64(val, value);
	return eos_session_batch_put(b, key.data, key.len, val, sizeof(val));
}

static int
put_partial(struct eos_node *n, struct eos_session_batch *b)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf val = { 0 };
	uint8_t key[9];
	int r;

	key_ino(key, KEY_PARTIAL, n->ino);
	if (!(n->flags & EOS_NODE_PARTIAL))
		return eos_session_batch_delete(b, key, sizeof(key));
	r = eos_buf_append_le64(&val, n->x->lower_limit);
	r = r ?: eos_writelog_encode(&n->x->present, &val);
	return r ?: eos_session_batch_put(b, key, sizeof(key), val.data, val.len);
}

int
eos_delta_put_log(struct eos_view *v, struct eos_node *n, struct eos_session_batch *b)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf val = { 0 };
	uint8_t key[9];
	int r;

	(void)v;
	key_ino(key, KEY_LOG, n->ino);
	r = put_partial(n, b);
	if (r == 0 && n->x->log.n == 0)
		r = eos_session_batch_delete(b, key, sizeof(key));
	else if (r == 0 && (r = eos_writelog_encode(&n->x->log, &val)) == 0)
		r = eos_session_batch_put(b, key, sizeof(key), val.data, val.len);
	if (r == 0)
		n->flags &= ~(unsigned)EOS_NODE_LOG_DIRTY;
	return r;
}

int
eos_delta_put_op(uint32_t index, const char *owner, struct eos_session_batch *b)
{
	uint8_t key[5];

	key[0] = KEY_OP;
	eos_put_be32(key + 1, index);
	return eos_session_batch_put(b, key, sizeof(key), owner, strlen(owner));
}

int
eos_delta_node_changed(struct eos_view *v, struct eos_node *n, struct eos_session_batch *b)
{
	int r;

	if (!(n->flags & EOS_NODE_UPPER))
		return 0;
	if (n->nlink > 0)
		return eos_delta_put_node(v, n, b);
	/* unlinked: the record goes now; an open node lives on in memory, its data file is
	 * removed when the kernel forgets it (or, after a crash, at the next mount) */
	r = eos_delta_delete_node(n, b);
	if (r == 0)
		n->flags |= EOS_NODE_GONE;
	return r;
}

int
eos_delta_delete_node(struct eos_node *n, struct eos_session_batch *b)
{
	uint8_t key[9];
	int r;

	key_ino(key, KEY_NODE, n->ino);
	r = eos_session_batch_delete(b, key, sizeof(key));
	key_ino(key, KEY_LOG, n->ino);
	r = r ?: eos_session_batch_delete(b, key, sizeof(key));
	key_ino(key, KEY_PARTIAL, n->ino);
	return r ?: eos_session_batch_delete(b, key, sizeof(key));
}

/* Before the journal starts, or for records it never holds: written as they come. */
static int
write_now(struct eos_view *v, struct eos_session_batch *b, bool sync)
{
	struct eos_error err;
	int r = eos_session_batch_write(b, sync, &err);

	/* a full disk is the caller's ENOSPC, and no news: the rest is */
	if (r == -ENOSPC)
		eos_log_debug("session '%s': cannot write the delta: %s", v->session, err.msg);
	else if (r < 0)
		eos_log_error("session '%s': cannot write the delta: %s", v->session, err.msg);
	return r;
}

int
eos_delta_commit(struct eos_view *v, struct eos_session_batch *b, enum eos_commit how)
{
	int r;

	if (!v->pending.active || how == EOS_COMMIT_DIRECT)
		return write_now(v, b, how == EOS_COMMIT_SYNC);
	r = how == EOS_COMMIT_JOURNAL ? eos_journal_batch(v, b) : eos_journal_pend(v, b);
	if (r == 0 && how == EOS_COMMIT_SYNC)
		r = eos_pending_commit(v, true);
	eos_session_batch_clear(b);
	return r;
}

int
eos_delta_flush_node(struct eos_view *v, struct eos_node *n, enum eos_commit how)
{
	EOS_CLEANUP(eos_session_batch_freep) struct eos_session_batch *b = NULL;
	int r;

	if (!v->session || !(n->flags & EOS_NODE_UPPER) || n->nlink == 0)
		return 0;
	if (!(n->flags & (EOS_NODE_DIRTY | EOS_NODE_LOG_DIRTY)) && how != EOS_COMMIT_SYNC)
		return 0;
	unsigned flags = n->flags;
	uint8_t copyup = n->x->jcopyup;
	r = eos_delta_batch(v, &b);
	r = r ?: eos_delta_put_node(v, n, b);
	r = r ?: eos_delta_commit(v, b, how);
	if (r < 0) { /* still to be written */
		n->flags |= flags & (EOS_NODE_DIRTY | EOS_NODE_LOG_DIRTY);
		n->x->jcopyup = copyup;
	}
	return r;
}

/* --- loading ---------------------------------------------------------------------------------- */

static int
read_opt_str(struct eos_reader *rd, char **ret)
{
	const uint8_t *p;
	size_t len;
	uint8_t present;
	int r = eos_reader_u8(rd, &present);

	if (r < 0 || !present)
		return r;
	r = eos_reader_lp(rd, NAME_LP_MAX, &p, &len);
	if (r < 0)
		return r;
	*ret = strndup((const char *)p, len);
	return *ret ? 0 : -ENOMEM;
}

static int
read_xattrs(struct eos_reader *rd, struct eos_node *n)
{
	uint32_t count;
	int r = eos_reader_le32(rd, &count);

	if (r < 0 || count > rd->left / 8)
		return r < 0 ? r : -EBADMSG;
	n->x->xattrs = calloc(count ? count : 1, sizeof(*n->x->xattrs));
	if (!n->x->xattrs)
		return -ENOMEM;
	for (uint32_t i = 0; i < count; i++) {
		const uint8_t *name, *value;
		size_t nlen, vlen;

		r = eos_reader_lp(rd, 255, &name, &nlen);
		r = r ?: eos_reader_lp(rd, EOS_XATTR_VALUE_MAX, &value, &vlen);
		if (r < 0)
			return r;
		n->x->xattrs[i].name = strndup((const char *)name, nlen);
		n->x->xattrs[i].value = malloc(vlen ? vlen : 1);
		n->x->nxattrs++;
		if (!n->x->xattrs[i].name || !n->x->xattrs[i].value)
			return -ENOMEM;
		memcpy(n->x->xattrs[i].value, value, vlen);
		n->x->xattrs[i].len = vlen;
	}
	n->flags |= EOS_NODE_XATTRS;
	return 0;
}

static int
read_rdev(struct eos_reader *rd, struct eos_node *n)
{
	uint32_t maj = 0, min = 0;
	int r = eos_reader_le32(rd, &maj);

	r = r ?: eos_reader_le32(rd, &min);
	n->x->rdev = makedev(maj, min);
	return r;
}

static int
decode_node(const void *p, size_t len, struct eos_node *n)
{
	struct eos_reader rd = { .p = p, .left = len };
	uint64_t at, mt, ct, parent;
	uint32_t flags, mode;
	const uint8_t *name;
	size_t nlen;
	uint8_t format;
	int r = eos_reader_u8(&rd, &format);

	if (r == 0 && format != NODE_FORMAT && format != NODE_FORMAT_1)
		return -EBADMSG;
	r = r ?: eos_reader_le32(&rd, &flags);
	r = r ?: eos_reader_le32(&rd, &mode);
	r = r ?: eos_reader_le32(&rd, &n->uid);
	r = r ?: eos_reader_le32(&rd, &n->gid);
	r = r ?: eos_reader_le32(&rd, &n->nlink);
	r = r ?: eos_reader_le64(&rd, &n->size);
	r = r ?: eos_reader_le64(&rd, &at);
	r = r ?: eos_reader_le64(&rd, &mt);
	r = r ?: eos_reader_le64(&rd, &ct);
	r = r ?: eos_reader_le64(&rd, &parent);
	r = r ?: eos_reader_lp(&rd, 255, &name, &nlen);
	if (r < 0)
		return r;
	if (mode > UINT16_MAX)
		return -EBADMSG; /* S_IFMT and permissions fit in 16 bits */
	n->flags = (uint16_t)(flags & EOS_NODE_PERSISTED);
	n->mode = (uint16_t)mode;
	eos_node_set_parent(n, parent);
	n->x->atime = (int64_t)at;
	n->mtime = (int64_t)mt;
	n->x->ctime = (int64_t)ct;
	eos_node_set_name(n, strndup((const char *)name, nlen));
	r = n->x->name ? 0 : -ENOMEM;
	r = r ?: read_opt_str(&rd, &n->x->lower);
	r = r ?: eos_reader_le64(&rd, &n->x->link_group);
	r = r ?: read_opt_str(&rd, &n->x->target);
	r = r ?: read_xattrs(&rd, n);
	r = r ?: (format == NODE_FORMAT ? read_rdev(&rd, n) : 0);
	if (r == 0 && format == NODE_FORMAT)
		r = eos_reader_le64(&rd, &n->x->jseq);
	return r ?: (rd.left ? -EBADMSG : 0);
}

struct load {
	struct eos_view *v;
	uint64_t max_ino;
	int error;
	char what[64]; /* the record that failed to load */
};

/* Lower-origin nodes get their store stat back (the leased version never changes). */
static int
load_lower(struct eos_view *v, struct eos_node *n)
{
	char buf[EOS_LOWER_BUF];
	const char *lower = eos_node_lower(n, buf);
	struct eos_stat st;
	int r;

	if (!lower)
		return 0;
	r = eos_tree_stat(v->tree, lower, &st, NULL);
	if (r < 0) {
		eos_log_error("session '%s': inode %lu: origin '%s' is gone from the store",
			      v->session, (unsigned long)n->ino, lower);
		return 0;
	}
	n->x->lst = eos_lower_new(&st);
	if (!n->x->lst)
		return -ENOMEM;
	return eos_node_identity_set(v, n);
}

static int
load_node(struct load *l, uint64_t ino, const void *val, size_t vlen)
{
	struct eos_node *n = eos_node_new(ino);
	int r = n ? decode_node(val, vlen, n) : -ENOMEM;

	r = r ?: load_lower(l->v, n);
	r = r ?: eos_node_insert(l->v, n);
	if (r < 0) {
		eos_node_free(n);
		return r;
	}
	if (ino < EOS_INO_DERIVED)
		l->max_ino = EOS_MAX(l->max_ino, ino);
	/* the journal's next records must come after every one a record includes */
	l->v->journal.max_jseq = EOS_MAX(l->v->journal.max_jseq, n->x->jseq);
	return 0;
}

static int
load_dirent(struct load *l, const uint8_t *key, size_t klen, const void *val, size_t vlen)
{
	struct eos_node *p = eos_node_get(l->v, eos_get_be64(key));
	union eos_hashmap_value *slot;
	uint64_t value;

	if (vlen != 8 || klen <= 8)
		return -EBADMSG;
	if (!p)
		return 0; /* left behind by a removed directory */
	value = eos_get_le64(val);
	if (value < EOS_INO_DERIVED)
		l->max_ino = EOS_MAX(l->max_ino, value);
	if (eos_hashmap_get_or_insert(&p->x->dirents, key + 8, klen - 8, &slot) < 0)
		return -ENOMEM;
	slot->u64 = value;
	return 0;
}

static int
load_log(struct load *l, uint64_t ino, const void *val, size_t vlen)
{
	struct eos_node *n = eos_node_get(l->v, ino);

	if (!n)
		return 0; /* a log left behind by a discarded node */
	eos_writelog_release(&n->x->log);
	return eos_writelog_decode(val, vlen, &n->x->log);
}

static int
load_partial(struct load *l, uint64_t ino, const uint8_t *val, size_t vlen)
{
	struct eos_node *n = eos_node_get(l->v, ino);

	if (!n)
		return 0;
	if (vlen < 8 || !(n->flags & EOS_NODE_PARTIAL))
		return -EBADMSG;
	n->x->lower_limit = eos_get_le64(val);
	eos_writelog_release(&n->x->present);
	return eos_writelog_decode(val + 8, vlen - 8, &n->x->present);
}

static int
load_op(struct load *l, const uint8_t *key, size_t klen, const void *val, size_t vlen)
{
	cleanup_free char *owner = strndup(val, vlen);

	if (klen != 4 || !owner)
		return owner ? -EBADMSG : -ENOMEM;
	return eos_opstable_set(&l->v->ops, eos_get_be32(key), owner);
}

/* Name the record a load failed on, for the message. */
static void
describe_key(struct load *l, const uint8_t *k, size_t klen)
{
	char tag = isprint(k[0]) ? (char)k[0] : '?';

	if (klen >= 9)
		snprintf(l->what, sizeof(l->what), "its '%c' record of inode %" PRIu64, tag,
			 eos_get_be64(k + 1));
	else
		snprintf(l->what, sizeof(l->what), "its '%c' record", tag);
}

static int
load_one(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct load *l = ctx;
	const uint8_t *k = key;
	int r = -EBADMSG;

	if (klen < 1)
		return -EBADMSG;
	switch (k[0]) {
	case KEY_JOURNAL:
		r = klen == 1 ? eos_journal_load_nonce(l->v, val, vlen) : -EBADMSG;
		break;
	case KEY_NODE:
		r = klen == 9 ? load_node(l, eos_get_be64(k + 1), val, vlen) : -EBADMSG;
		break;
	case KEY_DIRENT:
		r = load_dirent(l, k + 1, klen - 1, val, vlen);
		break;
	case KEY_OP:
		r = load_op(l, k + 1, klen - 1, val, vlen);
		break;
	case KEY_LOG:
		r = klen == 9 ? load_log(l, eos_get_be64(k + 1), val, vlen) : -EBADMSG;
		break;
	case KEY_PARTIAL:
		r = klen == 9 ? load_partial(l, eos_get_be64(k + 1), val, vlen) : -EBADMSG;
		break;
	}
	if (r < 0) {
		l->error = r;
		describe_key(l, k, klen);
	}
	return r;
}

/* The load's scan, with the journal's images over the store's records (both sorted). */
struct merge {
	struct load *l;
	const struct eos_recent *over;
	size_t n, i;
};

static int
key_cmp(const void *a, size_t alen, const void *b, size_t blen)
{
	int c = memcmp(a, b, EOS_MIN(alen, blen));

	return c ? c : alen < blen ? -1 : alen > blen;
}

/* Load the images before key (all of them: NULL). */
static int
merge_before(struct merge *m, const void *key, size_t klen)
{
	int r = 0;

	for (; r == 0 && m->i < m->n; m->i++) {
		const struct eos_recent *e = &m->over[m->i];

		if (key && key_cmp(e->key, e->klen, key, klen) >= 0)
			break;
		if (!e->del)
			r = load_one(m->l, e->key, e->klen, e->val, e->vlen);
	}
	return r;
}

static int
merge_one(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct merge *m = ctx;
	const struct eos_recent *e;
	int r = merge_before(m, key, klen);

	if (r < 0)
		return r;
	e = m->i < m->n ? &m->over[m->i] : NULL;
	if (!e || key_cmp(e->key, e->klen, key, klen) != 0)
		return load_one(m->l, key, klen, val, vlen);
	m->i++;
	return e->del ? 0 : load_one(m->l, e->key, e->klen, e->val, e->vlen);
}

int
eos_delta_load(struct eos_view *v, const struct eos_recent *over, size_t nover,
	       struct eos_error *err)
{
	struct load l = { .v = v, .max_ino = EOS_ROOT_INO };
	struct merge m = { .l = &l, .over = over, .n = nover };
	int r = eos_store_session_scan(v->store, v->sandbox, v->session, merge_one, &m, err);

	if (r == 0)
		r = merge_before(&m, NULL, 0);
	if (r < 0 && l.error)
		return eos_error_set(err, l.error,
				     "session '%s' of sandbox '%s': %s is corrupt (%s): remove the "
				     "session (eos-store rm-session) or restore the store",
				     v->session, v->sandbox, l.what, strerror(-l.error));
	if (r < 0)
		return r;
	atomic_store(&v->next_ino, l.max_ino + 1);
	return 0;
}

static int
nonce_one(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct eos_view *v = ctx;
	const uint8_t *k = key;
	int r = klen == 1 && k[0] == KEY_JOURNAL ? eos_journal_load_nonce(v, val, vlen) : 0;

	return r < 0 ? r : 1; /* 'J' sorts first: one record tells */
}

int
eos_delta_load_nonce(struct eos_view *v, struct eos_error *err)
{
	int r = eos_store_session_scan(v->store, v->sandbox, v->session, nonce_one, v, err);

	if (r == -EBADMSG)
		return eos_error_set(
			err, r,
			"session '%s' of sandbox '%s': its journal record is corrupt: "
			"remove the session (eos-store rm-session) or restore the store",
			v->session, v->sandbox);
	return r < 0 ? r : 0;
}
