/* SPDX-License-Identifier: MIT */
#include "store/entry.h"

#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "common/cleanup.h"
#include "common/endian.h"
#include "common/path.h"

#include "store/kv.h"
#include "store/store-internal.h"

enum {
	ENTRY_FORMAT = 1,
	KEY_SBX_LEN = 8,
	KEY_VERSION_LEN = 8,
	KEY_MIN_LEN = KEY_SBX_LEN + 1 + 1 + KEY_VERSION_LEN,
	KEY_MAX_LEN = KEY_SBX_LEN + EOS_PATH_MAX + 1 + EOS_NAME_MAX + 1 + KEY_VERSION_LEN,
	SYMLINK_TARGET_MAX = 4095,
	XATTR_NAME_MAX_LEN = 255,
	XATTR_MIN_LEN = 4 + 1 + 4, /* lp name of >= 1 byte, lp value */
};

static void
entry_releasep(struct eos_entry *e)
{
	eos_entry_release(e);
}

/* --- entries ---------------------------------------------------------------------------------- */

void
eos_entry_init(struct eos_entry *e)
{
	memset(e, 0, sizeof(*e));
}

void
eos_entry_release(struct eos_entry *e)
{
	if (!e)
		return;
	free(e->target);
	for (uint32_t i = 0; e->xattrs && i < e->nxattrs; i++) {
		free(e->xattrs[i].name);
		free(e->xattrs[i].value);
	}
	free(e->xattrs);
	eos_entry_init(e);
}

static int
xattr_copy(struct eos_xattr *dst, const char *name, size_t nlen, const uint8_t *value, size_t len)
{
	dst->name = strndup(name, nlen);
	dst->value = malloc(len ? len : 1);
	dst->len = len;
	if (!dst->name || !dst->value)
		return -ENOMEM;
	if (len)
		memcpy(dst->value, value, len);
	return 0;
}

int
eos_entry_copy(struct eos_entry *dst, const struct eos_entry *src)
{
	int r = 0;

	eos_entry_init(dst);
	dst->st = src->st;
	if (src->target && !(dst->target = strdup(src->target)))
		r = -ENOMEM;
	if (r == 0 && src->nxattrs) {
		dst->xattrs = calloc(src->nxattrs, sizeof(*dst->xattrs));
		if (!dst->xattrs)
			r = -ENOMEM;
	}
	for (uint32_t i = 0; r == 0 && i < src->nxattrs; i++) {
		const struct eos_xattr *x = &src->xattrs[i];

		dst->nxattrs = i + 1;
		r = xattr_copy(&dst->xattrs[i], x->name, strlen(x->name), x->value, x->len);
	}
	if (r < 0)
		eos_entry_release(dst);
	return r;
}

/* --- keys ------------------------------------------------------------------------------------- */

static size_t
key_len(size_t plen, size_t nlen)
{
	return KEY_SBX_LEN + plen + 1 + nlen + 1 + KEY_VERSION_LEN;
}

/* Write the key into out (key_len(plen, nlen) bytes). */
static size_t
key_fill(uint8_t *out, uint64_t sbx, const char *parent, size_t plen, const char *name, size_t nlen,
	 uint64_t v)
{
	uint8_t *p = out;

	eos_put_be64(p, sbx);
	p += KEY_SBX_LEN;
	if (plen)
		memcpy(p, parent, plen);
	p += plen;
	*p++ = 0;
	if (nlen)
		memcpy(p, name, nlen);
	p += nlen;
	*p++ = 0;
	eos_put_be64(p, UINT64_MAX - v);
	return key_len(plen, nlen);
}

int
eos_entry_key(struct eos_buf *out, uint64_t sbx, const char *parent, size_t plen, const char *name,
	      size_t nlen, uint64_t v)
{
	size_t n = key_len(plen, nlen);
	int r = eos_buf_reserve(out, n);

	if (r < 0)
		return r;
	key_fill(out->data + out->len, sbx, parent, plen, name, nlen, v);
	out->len += n;
	out->data[out->len] = '\0';
	return 0;
}

int
eos_entry_dir_prefix(struct eos_buf *out, uint64_t sbx, const char *dir, size_t dlen)
{
	int r = eos_buf_reserve(out, KEY_SBX_LEN + dlen + 1);

	if (r < 0)
		return r;
	/* Cannot fail after the reserve. */
	eos_buf_append_be64(out, sbx);
	eos_buf_append(out, dir, dlen);
	return eos_buf_append_u8(out, 0);
}

int
eos_entry_sandbox_prefix(struct eos_buf *out, uint64_t sbx)
{
	return eos_buf_append_be64(out, sbx);
}

/*
 * The version suffix may contain 0x00 bytes, so parse from both ends: the last 8 bytes are the
 * version, the byte before them is the second separator, the name runs back to the last 0x00
 * before it, and the parent (which must hold no 0x00) fills the rest.
 */
int
eos_entry_key_decode(const uint8_t *k, size_t n, struct eos_entry_key_parts *ret)
{
	const uint8_t *parent = k + KEY_SBX_LEN, *sep2, *sep1;

	if (n < KEY_MIN_LEN)
		return -EBADMSG;
	sep2 = k + n - KEY_VERSION_LEN - 1;
	if (*sep2 != 0)
		return -EBADMSG;
	sep1 = memrchr(parent, 0, (size_t)(sep2 - parent));
	if (!sep1 || memchr(parent, 0, (size_t)(sep1 - parent)))
		return -EBADMSG;
	ret->sbx = eos_get_be64(k);
	ret->parent = (const char *)parent;
	ret->plen = (size_t)(sep1 - parent);
	ret->name = (const char *)sep1 + 1;
	ret->nlen = (size_t)(sep2 - sep1 - 1);
	ret->version = UINT64_MAX - eos_get_be64(sep2 + 1);
	return 0;
}

/* --- records ---------------------------------------------------------------------------------- */

static bool
kind_valid(unsigned k)
{
	switch ((enum eos_kind)k) {
	case EOS_KIND_DIR:
	case EOS_KIND_FILE:
	case EOS_KIND_SYMLINK:
	case EOS_KIND_WHITEOUT:
	case EOS_KIND_FIFO:
	case EOS_KIND_CHR:
	case EOS_KIND_BLK:
		return true;
	case EOS_KIND_NONE:
		return false;
	}
	return false;
}

static bool
content_kind_valid(unsigned kind, unsigned ck)
{
	switch ((enum eos_content_kind)ck) {
	case EOS_CONTENT_NONE:
		return kind != EOS_KIND_FILE;
	case EOS_CONTENT_INLINE:
	case EOS_CONTENT_CHUNK:
	case EOS_CONTENT_MANIFEST:
		return kind == EOS_KIND_FILE;
	}
	return false;
}

/* The size field: file content size, symlink target length, else 0. */
static uint64_t
record_size(const struct eos_entry *e)
{
	switch (e->st.kind) {
	case EOS_KIND_FILE:
		return e->st.content.size;
	case EOS_KIND_SYMLINK:
		return strlen(e->target);
	case EOS_KIND_NONE:
	case EOS_KIND_DIR:
	case EOS_KIND_WHITEOUT:
	case EOS_KIND_FIFO:
	case EOS_KIND_CHR:
	case EOS_KIND_BLK:
		break;
	}
	return 0;
}

static int
encode_check(const struct eos_entry *e)
{
	const struct eos_content *c = &e->st.content;

	if (!kind_valid(e->st.kind))
		return -EINVAL;
	if (e->st.kind == EOS_KIND_FILE && !content_kind_valid(EOS_KIND_FILE, c->kind))
		return -EINVAL;
	if (e->st.kind == EOS_KIND_FILE && c->kind == EOS_CONTENT_INLINE &&
	    (c->inline_len > EOS_INLINE_MAX || c->inline_len != c->size))
		return -EINVAL;
	if (e->st.kind == EOS_KIND_SYMLINK &&
	    (!e->target || strlen(e->target) > SYMLINK_TARGET_MAX))
		return -EINVAL;
	if (e->st.rdev && !eos_kind_has_rdev(e->st.kind))
		return -EINVAL;
	for (uint32_t i = 0; i < e->nxattrs; i++) {
		size_t nlen = strlen(e->xattrs[i].name);

		if (nlen == 0 || nlen > XATTR_NAME_MAX_LEN ||
		    e->xattrs[i].len > EOS_XATTR_VALUE_MAX)
			return -EINVAL;
	}
	return 0;
}

static int
encode_header(const struct eos_entry *e, struct eos_buf *out)
{
	enum eos_content_kind ck =
		e->st.kind == EOS_KIND_FILE ? e->st.content.kind : EOS_CONTENT_NONE;
	const struct eos_attr *a = &e->st.attr;
	int r = 0;

	r = r ?: eos_buf_append_u8(out, ENTRY_FORMAT);
	r = r ?: eos_buf_append_u8(out, (uint8_t)e->st.kind);
	r = r ?: eos_buf_append_u8(out, (uint8_t)ck);
	r = r ?: eos_buf_append_u8(out, 0);
	r = r ?: eos_buf_append_le32(out, a->mode);
	r = r ?: eos_buf_append_le32(out, a->uid);
	r = r ?: eos_buf_append_le32(out, a->gid);
	r = r ?: eos_buf_append_le64(out, (uint64_t)a->mtime_ns);
	r = r ?: eos_buf_append_le64(out, record_size(e));
	r = r ?: eos_buf_append_le64(out, e->st.floor);
	return r ?: eos_buf_append_le64(out, e->st.link_group);
}

static int
encode_body(const struct eos_entry *e, struct eos_buf *out)
{
	const struct eos_content *c = &e->st.content;
	int r = 0;

	if (e->st.kind == EOS_KIND_FILE)
		r = eos_buf_append(out, c->digest.b, EOS_DIGEST_LEN);
	if (r == 0 && e->st.kind == EOS_KIND_FILE && c->kind == EOS_CONTENT_INLINE)
		r = eos_buf_append_lp(out, c->inline_data, c->inline_len);
	if (r == 0 && e->st.kind == EOS_KIND_SYMLINK)
		r = eos_buf_append_lp(out, e->target, strlen(e->target));
	if (r == 0 && eos_kind_has_rdev(e->st.kind)) {
		r = eos_buf_append_le32(out, major(e->st.rdev));
		r = r ?: eos_buf_append_le32(out, minor(e->st.rdev));
	}
	r = r ?: eos_buf_append_le32(out, e->nxattrs);
	for (uint32_t i = 0; r == 0 && i < e->nxattrs; i++) {
		const struct eos_xattr *x = &e->xattrs[i];

		r = eos_buf_append_lp(out, x->name, strlen(x->name));
		r = r ?: eos_buf_append_lp(out, x->value, x->len);
	}
	return r;
}

int
eos_entry_encode(const struct eos_entry *e, struct eos_buf *out)
{
	size_t old = out->len;
	int r = encode_check(e);

	if (r < 0)
		return r;
	r = encode_header(e, out);
	r = r ?: encode_body(e, out);
	if (r < 0)
		eos_buf_truncate(out, old);
	return r;
}

static int
decode_header(struct eos_reader *rd, struct eos_entry *e)
{
	uint8_t format = 0, kind = 0, ck = 0, flags = 0;
	uint64_t mtime = 0;
	int r = 0;

	r = r ?: eos_reader_u8(rd, &format);
	r = r ?: eos_reader_u8(rd, &kind);
	r = r ?: eos_reader_u8(rd, &ck);
	r = r ?: eos_reader_u8(rd, &flags);
	r = r ?: eos_reader_le32(rd, &e->st.attr.mode);
	r = r ?: eos_reader_le32(rd, &e->st.attr.uid);
	r = r ?: eos_reader_le32(rd, &e->st.attr.gid);
	r = r ?: eos_reader_le64(rd, &mtime);
	r = r ?: eos_reader_le64(rd, &e->st.size);
	r = r ?: eos_reader_le64(rd, &e->st.floor);
	r = r ?: eos_reader_le64(rd, &e->st.link_group);
	if (r < 0 || format != ENTRY_FORMAT || flags != 0 || !kind_valid(kind) ||
	    !content_kind_valid(kind, ck))
		return -EBADMSG;
	e->st.kind = (enum eos_kind)kind;
	e->st.content.kind = (enum eos_content_kind)ck;
	e->st.attr.mtime_ns = (int64_t)mtime;
	return 0;
}

static int
decode_file(struct eos_reader *rd, struct eos_entry *e)
{
	struct eos_content *c = &e->st.content;
	const uint8_t *p;
	size_t n;
	int r;

	c->size = e->st.size;
	r = eos_reader_bytes(rd, EOS_DIGEST_LEN, &p);
	if (r < 0)
		return r;
	memcpy(c->digest.b, p, EOS_DIGEST_LEN);
	if (c->kind != EOS_CONTENT_INLINE)
		return 0;
	r = eos_reader_lp(rd, EOS_INLINE_MAX, &p, &n);
	if (r < 0 || n != c->size)
		return -EBADMSG;
	if (n)
		memcpy(c->inline_data, p, n);
	c->inline_len = (uint32_t)n;
	return 0;
}

static int
decode_symlink(struct eos_reader *rd, struct eos_entry *e)
{
	const uint8_t *p;
	size_t n;
	int r = eos_reader_lp(rd, SYMLINK_TARGET_MAX, &p, &n);

	if (r < 0 || n != e->st.size || memchr(p, 0, n))
		return -EBADMSG;
	e->target = strndup((const char *)p, n);
	return e->target ? 0 : -ENOMEM;
}

static int
decode_rdev(struct eos_reader *rd, struct eos_entry *e)
{
	uint32_t maj = 0, min = 0;
	int r = eos_reader_le32(rd, &maj);

	r = r ?: eos_reader_le32(rd, &min);
	if (r < 0)
		return r;
	e->st.rdev = makedev(maj, min);
	return 0;
}

static int
decode_xattr(struct eos_reader *rd, struct eos_xattr *x)
{
	const uint8_t *name, *value;
	size_t nlen, vlen;
	int r = eos_reader_lp(rd, XATTR_NAME_MAX_LEN, &name, &nlen);

	r = r ?: eos_reader_lp(rd, EOS_XATTR_VALUE_MAX, &value, &vlen);
	if (r < 0 || nlen == 0 || memchr(name, 0, nlen))
		return -EBADMSG;
	return xattr_copy(x, (const char *)name, nlen, value, vlen);
}

static int
decode_xattrs(struct eos_reader *rd, struct eos_entry *e)
{
	uint32_t n;
	int r = eos_reader_le32(rd, &n);

	if (r < 0 || n > rd->left / XATTR_MIN_LEN)
		return -EBADMSG;
	if (n == 0)
		return 0;
	e->xattrs = calloc(n, sizeof(*e->xattrs));
	if (!e->xattrs)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		e->nxattrs = i + 1;
		r = decode_xattr(rd, &e->xattrs[i]);
		if (r < 0)
			return r;
	}
	e->st.nxattrs = n;
	return 0;
}

int
eos_entry_decode(const uint8_t *v, size_t n, uint64_t version, struct eos_entry *ret)
{
	struct eos_reader rd;
	int r;

	eos_entry_release(ret);
	eos_reader_init(&rd, v, n);
	r = decode_header(&rd, ret);
	if (r == 0 && ret->st.kind == EOS_KIND_FILE)
		r = decode_file(&rd, ret);
	if (r == 0 && ret->st.kind == EOS_KIND_SYMLINK)
		r = decode_symlink(&rd, ret);
	if (r == 0 && eos_kind_has_rdev(ret->st.kind))
		r = decode_rdev(&rd, ret);
	if (r == 0 && ret->st.kind != EOS_KIND_FILE && ret->st.kind != EOS_KIND_SYMLINK &&
	    ret->st.size != 0)
		r = -EBADMSG;
	r = r ?: decode_xattrs(&rd, ret);
	if (r == 0 && !eos_reader_done(&rd))
		r = -EBADMSG;
	if (r < 0) {
		eos_entry_release(ret);
		return r == -ENOMEM ? r : -EBADMSG;
	}
	ret->st.version = version;
	return 0;
}

/* --- lookups ---------------------------------------------------------------------------------- */

static int
corrupt_key(struct eos_error *err, uint64_t sbx, const char *parent, size_t plen, const char *name,
	    size_t nlen)
{
	return eos_error_set(err, -EBADMSG, "corrupt entry record '%.*s%s%.*s' of sandbox #%llu",
			     (int)plen, parent, plen ? "/" : "", (int)nlen, name,
			     (unsigned long long)sbx);
}

/* The newest record <= v of (parent, name) through it; -ENOENT (err untouched) when none. */
static int
iter_get(struct eos_kv_iter *it, uint64_t sbx, uint64_t v, const char *parent, size_t plen,
	 const char *name, size_t nlen, struct eos_entry *ret, struct eos_error *err)
{
	uint8_t key[KEY_MAX_LEN];
	const uint8_t *k, *val;
	size_t klen, kn, vn;
	int r;

	if (plen > EOS_PATH_MAX || nlen > EOS_NAME_MAX)
		return -ENOENT;
	klen = key_fill(key, sbx, parent, plen, name, nlen, v);
	eos_kv_iter_seek(it, key, klen);
	if (!eos_kv_iter_valid(it)) {
		r = eos_kv_iter_status(it, err);
		return r < 0 ? r : -ENOENT;
	}
	k = eos_kv_iter_key(it, &kn);
	if (kn != klen || memcmp(k, key, klen - KEY_VERSION_LEN) != 0)
		return -ENOENT;
	val = eos_kv_iter_value(it, &vn);
	r = eos_entry_decode(val, vn, UINT64_MAX - eos_get_be64(k + kn - KEY_VERSION_LEN), ret);
	if (r == -EBADMSG)
		return corrupt_key(err, sbx, parent, plen, name, nlen);
	return r;
}

static int
iter_lookup(struct eos_kv_iter *it, uint64_t sbx, uint64_t v, const char *parent, size_t plen,
	    uint64_t floor, const char *name, size_t nlen, struct eos_entry *ret,
	    struct eos_error *err)
{
	int r = iter_get(it, sbx, v, parent, plen, name, nlen, ret, err);

	if (r < 0)
		return r;
	if (ret->st.kind == EOS_KIND_WHITEOUT || ret->st.version < floor) {
		eos_entry_release(ret);
		return -ENOENT;
	}
	return 0;
}

/* An entry iterator at snap, bounded by upper; at the latest state (snap NULL) a pooled one,
 * which saves making one per lookup or listing and has no bound. */
static int
entry_iter(struct eos_store *st, const struct eos_kv_snapshot *snap, enum eos_kv_iter_flags flags,
	   const void *upper, size_t ulen, struct eos_kv_iter **ret, struct eos_error *err)
{
	int r = snap ? eos_kv_iter_new(st->kv, EOS_CF_ENTRIES, snap, upper, ulen, flags, ret)
		     : eos_kv_iter_take(st->kv, EOS_CF_ENTRIES, flags, ret);

	if (r < 0)
		return eos_error_set(err, r, "create an entry iterator");
	return 0;
}

static int
entry_iter_new(struct eos_store *st, const struct eos_kv_snapshot *snap, struct eos_kv_iter **ret,
	       struct eos_error *err)
{
	return entry_iter(st, snap, EOS_KV_ITER_SAME_PREFIX, NULL, 0, ret, err);
}

int
eos_entry_get_raw(struct eos_store *st, const struct eos_kv_snapshot *snap, uint64_t sbx,
		  uint64_t v, const char *parent, size_t plen, const char *name, size_t nlen,
		  struct eos_entry *ret, struct eos_error *err)
{
	EOS_CLEANUP(eos_kv_iter_freep) struct eos_kv_iter *it = NULL;
	EOS_CLEANUP(entry_releasep) struct eos_entry tmp = { 0 };
	int r = entry_iter_new(st, snap, &it, err);

	if (r < 0)
		return r;
	return iter_get(it, sbx, v, parent, plen, name, nlen, ret ? ret : &tmp, err);
}

int
eos_entry_lookup(struct eos_store *st, const struct eos_kv_snapshot *snap, uint64_t sbx, uint64_t v,
		 const char *parent, size_t plen, uint64_t floor, const char *name, size_t nlen,
		 struct eos_entry *ret, struct eos_error *err)
{
	EOS_CLEANUP(eos_kv_iter_freep) struct eos_kv_iter *it = NULL;
	EOS_CLEANUP(entry_releasep) struct eos_entry tmp = { 0 };
	int r = entry_iter_new(st, snap, &it, err);

	if (r < 0)
		return r;
	return iter_lookup(it, sbx, v, parent, plen, floor, name, nlen, ret ? ret : &tmp, err);
}

static int
resolve_missing(struct eos_error *err, const char *path, size_t len, uint64_t v)
{
	char id[EOS_LAYER_ID_LEN];

	eos_layer_id_format(v, id);
	if (len == 0)
		return eos_error_set(err, -ENOENT, "root directory does not exist at %s", id);
	return eos_error_set(err, -ENOENT, "'%.*s' does not exist at %s", (int)len, path, id);
}

/* Walk the components of path below the root entry held in cur. */
static int
resolve_walk(struct eos_kv_iter *it, uint64_t sbx, uint64_t v, const char *path,
	     struct eos_entry *cur, struct eos_error *err)
{
	size_t done = 0, off = 0;

	while (path[off]) {
		const char *name = path + off, *slash = strchr(name, '/');
		size_t nlen = slash ? (size_t)(slash - name) : strlen(name);
		uint64_t floor = cur->st.floor;
		int r;

		if (cur->st.kind != EOS_KIND_DIR)
			return eos_error_set(err, -ENOTDIR, "'%.*s' is not a directory", (int)done,
					     path);
		if (nlen == 0)
			return eos_error_set(err, -EINVAL, "path '%s' has an empty component",
					     path);
		r = iter_lookup(it, sbx, v, path, done, floor, name, nlen, cur, err);
		if (r == -ENOENT)
			return resolve_missing(err, path, off + nlen, v);
		if (r < 0)
			return r;
		done = off + nlen;
		off = slash ? done + 1 : done;
	}
	return 0;
}

int
eos_entry_resolve(struct eos_store *st, const struct eos_kv_snapshot *snap, uint64_t sbx,
		  uint64_t v, const char *path, struct eos_entry *ret, struct eos_error *err)
{
	EOS_CLEANUP(eos_kv_iter_freep) struct eos_kv_iter *it = NULL;
	EOS_CLEANUP(entry_releasep) struct eos_entry cur = { 0 };
	int r = entry_iter_new(st, snap, &it, err);

	if (r < 0)
		return r;
	r = iter_lookup(it, sbx, v, "", 0, 0, "", 0, &cur, err);
	if (r == -ENOENT)
		return resolve_missing(err, path, 0, v);
	r = r ?: resolve_walk(it, sbx, v, path, &cur, err);
	if (r < 0)
		return r;
	if (ret) {
		eos_entry_release(ret);
		*ret = cur;
		eos_entry_init(&cur);
	}
	return 0;
}

/* --- listing ---------------------------------------------------------------------------------- */

struct list_state {
	struct eos_kv_iter *it;
	struct eos_buf key; /* the directory prefix, then scratch seek keys */
	size_t plen;	    /* prefix length: sandbox · dir · 0x00 */
	uint64_t v, floor;
	enum eos_entry_list_flags flags;
	struct eos_error *err;
	struct eos_entry e; /* reused for every record */
	char name[EOS_NAME_MAX + 1];
	size_t nlen;
	bool done; /* the iterator ran off the prefix */
};

static int
list_corrupt(struct list_state *ls)
{
	uint64_t sbx = eos_get_be64(ls->key.data);

	return eos_error_set(ls->err, -EBADMSG,
			     "corrupt entry in directory '%.*s' of sandbox #%llu",
			     (int)(ls->plen - KEY_SBX_LEN - 1),
			     (const char *)ls->key.data + KEY_SBX_LEN, (unsigned long long)sbx);
}

/* Seek to prefix · name · tail. */
static int
list_seek(struct list_state *ls, const void *name, size_t nlen, const uint8_t *tail, size_t tlen)
{
	int r;

	eos_buf_truncate(&ls->key, ls->plen);
	r = eos_buf_append(&ls->key, name, nlen);
	r = r ?: eos_buf_append(&ls->key, tail, tlen);
	if (r < 0)
		return r;
	eos_kv_iter_seek(ls->it, ls->key.data, ls->key.len);
	return 0;
}

/*
 * Position on the first key past every version of ls->name. Most names have one version, so
 * try one Next before paying for a Seek past the rest (prefix · name · 0x01).
 */
static int
list_skip_name(struct list_state *ls)
{
	static const uint8_t past[] = { 0x01 };
	const uint8_t *k;
	size_t kn;

	eos_kv_iter_next(ls->it);
	if (!eos_kv_iter_valid(ls->it))
		return 0;
	k = eos_kv_iter_key(ls->it, &kn);
	if (kn != ls->plen + ls->nlen + 1 + KEY_VERSION_LEN ||
	    memcmp(k + ls->plen, ls->name, ls->nlen) != 0)
		return 0;
	return list_seek(ls, ls->name, ls->nlen, past, sizeof(past));
}

static bool
list_visible(const struct list_state *ls)
{
	if (ls->nlen == 0)
		return false; /* the root's own record */
	if (ls->e.st.kind == EOS_KIND_WHITEOUT && !(ls->flags & EOS_ENTRY_LIST_WHITEOUTS))
		return false;
	return ls->e.st.version >= ls->floor || (ls->flags & EOS_ENTRY_LIST_BELOW_FLOOR);
}

/* The iterator is on the newest version <= v of ls->name: report it and move past the name. */
static int
list_emit(struct list_state *ls, uint64_t version, eos_entry_list_fn fn, void *ctx)
{
	const uint8_t *val;
	size_t vn;
	int r;

	val = eos_kv_iter_value(ls->it, &vn);
	r = eos_entry_decode(val, vn, version, &ls->e);
	if (r == -EBADMSG)
		return list_corrupt(ls);
	if (r < 0)
		return r;
	if (list_visible(ls)) {
		r = fn(ctx, ls->name, ls->nlen, &ls->e);
		if (r != 0)
			return r;
	}
	return list_skip_name(ls);
}

/* One step of the scan: 0 to continue (ls->done at the end), fn's value or -errno. */
static int
list_step(struct list_state *ls, eos_entry_list_fn fn, void *ctx)
{
	struct eos_entry_key_parts kp;
	uint8_t at[1 + KEY_VERSION_LEN] = { 0 };
	const uint8_t *k;
	size_t kn;

	if (!eos_kv_iter_valid(ls->it)) {
		ls->done = true;
		return 0;
	}
	k = eos_kv_iter_key(ls->it, &kn);
	if (kn < ls->plen || memcmp(k, ls->key.data, ls->plen) != 0) {
		ls->done = true; /* past the directory (a pooled iterator has no upper bound) */
		return 0;
	}
	if (eos_entry_key_decode(k, kn, &kp) < 0 || kp.plen + KEY_SBX_LEN + 1 != ls->plen ||
	    kp.nlen > EOS_NAME_MAX)
		return list_corrupt(ls);
	memcpy(ls->name, kp.name, kp.nlen);
	ls->name[kp.nlen] = '\0';
	ls->nlen = kp.nlen;
	if (kp.version <= ls->v)
		return list_emit(ls, kp.version, fn, ctx);
	/* Newer than v: jump to the newest version <= v of this name (or the next name). */
	eos_put_be64(at + 1, UINT64_MAX - ls->v);
	return list_seek(ls, ls->name, ls->nlen, at, sizeof(at));
}

static int
list_open(struct eos_store *st, const struct eos_kv_snapshot *snap, struct list_state *ls,
	  uint64_t sbx, const char *dir, size_t dlen)
{
	enum eos_kv_iter_flags flags =
		ls->flags & EOS_ENTRY_LIST_NO_CACHE ? EOS_KV_ITER_NO_CACHE_FILL : 0;
	uint8_t upper[KEY_SBX_LEN + EOS_PATH_MAX + 1];
	int r;

	if (dlen > EOS_PATH_MAX)
		return eos_error_set(ls->err, -ENAMETOOLONG, "directory '%.40s…' is too long", dir);
	r = eos_entry_dir_prefix(&ls->key, sbx, dir, dlen);
	if (r < 0)
		return r;
	ls->plen = ls->key.len;
	memcpy(upper, ls->key.data, ls->plen);
	upper[ls->plen - 1] = 0x01;
	/* unbounded when pooled: list_step stops past the prefix */
	return entry_iter(st, snap, flags, upper, ls->plen, &ls->it, ls->err);
}

static int
list_run(struct list_state *ls, const char *start_after, eos_entry_list_fn fn, void *ctx)
{
	static const uint8_t past[] = { 0x01 };
	int r = 0;

	if (start_after && start_after[0])
		r = list_seek(ls, start_after, strlen(start_after), past, sizeof(past));
	else
		eos_kv_iter_seek(ls->it, ls->key.data, ls->plen);
	while (r == 0 && !ls->done)
		r = list_step(ls, fn, ctx);
	return r;
}

static void
list_state_release(struct list_state *ls)
{
	if (ls->it)
		eos_kv_iter_free(ls->it);
	eos_buf_release(&ls->key);
	eos_entry_release(&ls->e);
}

int
eos_entry_list(struct eos_store *st, const struct eos_kv_snapshot *snap, uint64_t sbx, uint64_t v,
	       const char *dir, size_t dlen, uint64_t floor, const char *start_after,
	       enum eos_entry_list_flags flags, eos_entry_list_fn fn, void *ctx,
	       struct eos_error *err)
{
	EOS_CLEANUP(list_state_release)
	struct list_state ls = { .v = v, .floor = floor, .flags = flags, .err = err };
	int r;

	r = list_open(st, snap, &ls, sbx, dir, dlen);
	r = r ?: list_run(&ls, start_after, fn, ctx);
	if (r == 0)
		return eos_kv_iter_status(ls.it, err);
	return r;
}
