/* SPDX-License-Identifier: MIT */
/*
 * store/entry: MVCC keys and records, lookups, resolution and listings over entries written
 * directly into a real store (real RocksDB in a temp dir), plus the read API over a sandbox whose
 * registry keys are written by hand.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/endian.h"
#include "common/error.h"
#include "common/path.h"

#include "store/entry.h"
#include "store/kv.h"
#include "store/sandbox.h"
#include "store/store-internal.h"
#include "tests/unit/testutil.h"

/* --- helpers ---------------------------------------------------------------------------------- */

static struct eos_buf
key_of(uint64_t sbx, const char *parent, const char *name, uint64_t v)
{
	struct eos_buf b;

	eos_buf_init(&b);
	ck_assert_int_eq(eos_entry_key(&b, sbx, parent, strlen(parent), name, strlen(name), v), 0);
	return b;
}

static struct eos_buf
prefix_of(uint64_t sbx, const char *dir)
{
	struct eos_buf b;

	eos_buf_init(&b);
	ck_assert_int_eq(eos_entry_dir_prefix(&b, sbx, dir, strlen(dir)), 0);
	return b;
}

/* memcmp order with the shorter key first on a tie, as RocksDB's bytewise comparator. */
static int
key_cmp(const struct eos_buf *a, const struct eos_buf *b)
{
	int c = memcmp(a->data, b->data, EOS_MIN(a->len, b->len));

	if (c)
		return c;
	return (a->len > b->len) - (a->len < b->len);
}

static bool
has_prefix(const struct eos_buf *k, const struct eos_buf *p)
{
	return k->len >= p->len && memcmp(k->data, p->data, p->len) == 0;
}

static struct eos_entry
mk_dir(uint64_t floor)
{
	struct eos_entry e = { 0 };

	e.st.kind = EOS_KIND_DIR;
	e.st.attr = eos_test_attr(0755);
	e.st.floor = floor;
	return e;
}

static struct eos_entry
mk_file(const char *data)
{
	struct eos_entry e = { 0 };
	size_t n = strlen(data);

	e.st.kind = EOS_KIND_FILE;
	e.st.attr = eos_test_attr(0644);
	e.st.content.kind = EOS_CONTENT_INLINE;
	e.st.content.size = n;
	e.st.content.inline_len = (uint32_t)n;
	memcpy(e.st.content.inline_data, data, n);
	ck_assert_int_eq(eos_sha256(data, n, &e.st.content.digest), 0);
	e.st.size = n;
	return e;
}

static struct eos_entry
mk_symlink(const char *target)
{
	struct eos_entry e = { 0 };

	e.st.kind = EOS_KIND_SYMLINK;
	e.st.attr = eos_test_attr(0777);
	e.target = strdup(target);
	e.st.size = strlen(target);
	return e;
}

static struct eos_entry
mk_whiteout(void)
{
	struct eos_entry e = { 0 };

	e.st.kind = EOS_KIND_WHITEOUT;
	return e;
}

/* A fifo (rdev 0) or a device. */
static struct eos_entry
mk_node(enum eos_kind kind, unsigned maj, unsigned min)
{
	struct eos_entry e = { 0 };

	e.st.kind = kind;
	e.st.attr = eos_test_attr(0620);
	e.st.rdev = makedev(maj, min);
	return e;
}

static void
add_xattr(struct eos_entry *e, const char *name, const void *value, size_t len)
{
	struct eos_xattr *x;

	e->xattrs = realloc(e->xattrs, (e->nxattrs + 1) * sizeof(*e->xattrs));
	x = &e->xattrs[e->nxattrs++];
	x->name = strdup(name);
	x->value = malloc(len ? len : 1);
	memcpy(x->value, value, len);
	x->len = len;
	e->st.nxattrs = e->nxattrs;
}

static void
check_same_entry(const struct eos_entry *a, const struct eos_entry *b)
{
	ck_assert_int_eq(a->st.kind, b->st.kind);
	ck_assert_uint_eq(a->st.attr.mode, b->st.attr.mode);
	ck_assert_uint_eq(a->st.attr.uid, b->st.attr.uid);
	ck_assert_uint_eq(a->st.attr.gid, b->st.attr.gid);
	ck_assert_int_eq(a->st.attr.mtime_ns, b->st.attr.mtime_ns);
	ck_assert_uint_eq(a->st.floor, b->st.floor);
	ck_assert_uint_eq(a->st.link_group, b->st.link_group);
	ck_assert_uint_eq(a->st.size, b->st.size);
	ck_assert_uint_eq(a->st.rdev, b->st.rdev);
	ck_assert_int_eq(a->st.content.kind, b->st.content.kind);
	ck_assert_uint_eq(a->st.content.size, b->st.content.size);
	ck_assert(eos_digest_eq(&a->st.content.digest, &b->st.content.digest));
	ck_assert_uint_eq(a->st.content.inline_len, b->st.content.inline_len);
	ck_assert_mem_eq(a->st.content.inline_data, b->st.content.inline_data,
			 a->st.content.inline_len);
	ck_assert_int_eq(!a->target, !b->target);
	if (a->target)
		ck_assert_str_eq(a->target, b->target);
	ck_assert_uint_eq(a->nxattrs, b->nxattrs);
	ck_assert_uint_eq(b->st.nxattrs, b->nxattrs);
	for (uint32_t i = 0; i < a->nxattrs; i++) {
		ck_assert_str_eq(a->xattrs[i].name, b->xattrs[i].name);
		ck_assert_uint_eq(a->xattrs[i].len, b->xattrs[i].len);
		ck_assert_mem_eq(a->xattrs[i].value, b->xattrs[i].value, a->xattrs[i].len);
	}
}

/* Every kind of record, with xattrs on some. Caller releases each. */
static size_t
sample_entries(struct eos_entry *out)
{
	struct eos_entry chunk = mk_file(""), manifest = mk_file("");
	uint8_t bin[300];
	size_t n = 0;

	eos_test_fill_random(bin, sizeof(bin), 7);
	out[n] = mk_dir(0);
	out[n++].st.attr.mtime_ns = -5; /* before the epoch */
	out[n] = mk_dir(42);
	add_xattr(&out[n], "user.a", "1", 1);
	add_xattr(&out[n++], "security.selinux", bin, sizeof(bin));
	out[n++] = mk_file("");
	out[n] = mk_file("hello\n");
	add_xattr(&out[n++], "user.empty", "", 0);
	memset(bin, 'x', EOS_INLINE_MAX);
	bin[EOS_INLINE_MAX] = '\0';
	out[n++] = mk_file((const char *)bin);
	chunk.st.content.kind = EOS_CONTENT_CHUNK;
	chunk.st.content.size = chunk.st.size = 100000;
	chunk.st.link_group = 9;
	eos_test_fill_random(chunk.st.content.digest.b, EOS_DIGEST_LEN, 1);
	out[n++] = chunk;
	manifest.st.content.kind = EOS_CONTENT_MANIFEST;
	manifest.st.content.size = manifest.st.size = 5ULL << 30;
	eos_test_fill_random(manifest.st.content.digest.b, EOS_DIGEST_LEN, 2);
	out[n++] = manifest;
	out[n] = mk_symlink("../target with space/ü");
	add_xattr(&out[n++], "trusted.x", "yz", 2);
	out[n++] = mk_whiteout();
	out[n++] = mk_node(EOS_KIND_FIFO, 0, 0);
	out[n] = mk_node(EOS_KIND_CHR, 1, 3);
	add_xattr(&out[n++], "security.selinux", "u:o:t", 5);
	/* the widest numbers a dev_t holds */
	out[n++] = mk_node(EOS_KIND_BLK, 0xffffffffu, 0xfffffffeu);
	out[n++] = mk_node(EOS_KIND_CHR, 0, 0); /* overlayfs's whiteout device */
	return n;
}

/* --- keys ------------------------------------------------------------------------------------- */

static void
check_key_roundtrip(uint64_t sbx, const char *parent, const char *name, uint64_t v)
{
	struct eos_buf k = key_of(sbx, parent, name, v);
	struct eos_entry_key_parts p;

	ck_assert_uint_eq(k.len, 8 + strlen(parent) + 1 + strlen(name) + 1 + 8);
	ck_assert_int_eq(eos_entry_key_decode(k.data, k.len, &p), 0);
	ck_assert_uint_eq(p.sbx, sbx);
	ck_assert_uint_eq(p.plen, strlen(parent));
	ck_assert_mem_eq(p.parent, parent, p.plen);
	ck_assert_uint_eq(p.nlen, strlen(name));
	ck_assert_mem_eq(p.name, name, p.nlen);
	ck_assert_uint_eq(p.version, v);
	eos_buf_release(&k);
}

START_TEST(test_key_roundtrip)
{
	static const uint64_t versions[] = { 0,
					     1,
					     2,
					     0xff,
					     0x100,
					     0xff00ff,
					     0xffffffff00000000ULL,
					     0x0100000000000000ULL,
					     UINT64_MAX - 1,
					     UINT64_MAX };
	static const uint64_t sandboxes[] = { 0, 1, 0x100, 0xff00, UINT64_MAX };
	char long_name[EOS_NAME_MAX + 1], long_utf8[EOS_NAME_MAX + 1];
	const char *names[] = { "",	     "a",	"with space",
				"new\nline", "ütf-8 ☃", "\x01\x7f\xff",
				".hidden",   long_name, long_utf8 };
	const char *parents[] = { "", "a", "a/b c/d", "dir with\nnewline/é", long_name };

	memset(long_name, 'n', EOS_NAME_MAX);
	long_name[EOS_NAME_MAX] = '\0';
	for (int i = 0; i < EOS_NAME_MAX; i += 2)
		memcpy(long_utf8 + i, i + 1 < EOS_NAME_MAX ? "\xc3\xa9" : "e", 2);
	long_utf8[EOS_NAME_MAX - 1] = 'e';
	long_utf8[EOS_NAME_MAX] = '\0';
	for (size_t s = 0; s < EOS_ARRAY_SIZE(sandboxes); s++)
		for (size_t p = 0; p < EOS_ARRAY_SIZE(parents); p++)
			for (size_t n = 0; n < EOS_ARRAY_SIZE(names); n++)
				for (size_t v = 0; v < EOS_ARRAY_SIZE(versions); v++)
					check_key_roundtrip(sandboxes[s], parents[p], names[n],
							    versions[v]);
}
END_TEST

START_TEST(test_key_order)
{
	struct eos_buf pa = prefix_of(1, "a"), pab = prefix_of(1, "a/b"), proot = prefix_of(1, "");
	struct eos_buf prev = key_of(1, "p", "n", 1);

	/* Newer versions of one name sort first. */
	for (uint64_t v = 2; v < 600; v++) {
		struct eos_buf k = key_of(1, "p", "n", v);

		ck_assert_int_lt(key_cmp(&k, &prev), 0);
		eos_buf_release(&prev);
		prev = k;
	}
	eos_buf_release(&prev);
	/* Children of "a" and of "a/b" never fall in each other's listing prefix. */
	for (uint64_t v = 1; v < 300; v += 37) {
		struct eos_buf ca = key_of(1, "a", "b", v), cab = key_of(1, "a/b", "c", v);
		struct eos_buf cab2 = key_of(1, "ab", "x", v), root = key_of(1, "", "", v);
		struct eos_buf rootchild = key_of(1, "", "a", v), other = key_of(2, "", "", v);

		ck_assert(has_prefix(&ca, &pa) && !has_prefix(&ca, &pab));
		ck_assert(has_prefix(&cab, &pab) && !has_prefix(&cab, &pa));
		ck_assert(!has_prefix(&cab2, &pa) && !has_prefix(&cab2, &pab));
		ck_assert(has_prefix(&root, &proot) && has_prefix(&rootchild, &proot));
		ck_assert(!has_prefix(&ca, &proot) && !has_prefix(&other, &proot));
		/* The root's own record sorts before every root child at every version. */
		ck_assert_int_lt(key_cmp(&root, &rootchild), 0);
		ck_assert_int_lt(key_cmp(&rootchild, &other), 0);
		eos_buf_release(&ca);
		eos_buf_release(&cab);
		eos_buf_release(&cab2);
		eos_buf_release(&root);
		eos_buf_release(&rootchild);
		eos_buf_release(&other);
	}
	eos_buf_release(&pa);
	eos_buf_release(&pab);
	eos_buf_release(&proot);
}
END_TEST

START_TEST(test_key_name_order)
{
	/* Key order is name byte order (a prefix first), whatever the versions. */
	const char *names[] = { "a", "a\x01", "a b", "a.", "ab", "b", "é" };

	for (size_t i = 0; i + 1 < EOS_ARRAY_SIZE(names); i++) {
		struct eos_buf x = key_of(3, "d", names[i], 1);
		struct eos_buf y = key_of(3, "d", names[i + 1], UINT64_MAX - 1);

		ck_assert_msg(key_cmp(&x, &y) < 0, "'%s' < '%s'", names[i], names[i + 1]);
		eos_buf_release(&x);
		eos_buf_release(&y);
	}
}
END_TEST

START_TEST(test_key_decode_rejects)
{
	struct eos_entry_key_parts p;
	uint8_t k[64] = { 0 };

	for (size_t n = 0; n < 18; n++)
		ck_assert_int_eq(eos_entry_key_decode(k, n, &p), -EBADMSG);
	/* 8 sbx · "ab" · 'x' (no second separator) · version */
	memcpy(k + 8, "ab\0cdx", 6);
	ck_assert_int_eq(eos_entry_key_decode(k, 8 + 6 + 8, &p), -EBADMSG);
	/* No first separator. */
	memcpy(k + 8, "abcd\0", 5);
	ck_assert_int_eq(eos_entry_key_decode(k, 8 + 5 + 8, &p), -EBADMSG);
	/* Three separators: the parent would hold a NUL. */
	memcpy(k + 8, "a\0b\0c\0", 6);
	ck_assert_int_eq(eos_entry_key_decode(k, 8 + 6 + 8, &p), -EBADMSG);
	/* The smallest valid key: root record. */
	memset(k, 0, sizeof(k));
	ck_assert_int_eq(eos_entry_key_decode(k, 18, &p), 0);
	ck_assert_uint_eq(p.plen + p.nlen, 0);
	ck_assert_uint_eq(p.version, UINT64_MAX);
}
END_TEST

START_TEST(test_key_decode_fuzz)
{
	uint8_t k[80];
	struct eos_buf re;

	eos_buf_init(&re);
	for (uint64_t seed = 1; seed < 20000; seed++) {
		struct eos_entry_key_parts p;
		size_t n = seed % sizeof(k);

		eos_test_fill_random(k, n, seed);
		/* Make separators likely. */
		for (size_t i = 0; i < n; i++)
			if (k[i] < 40)
				k[i] = 0;
		if (eos_entry_key_decode(k, n, &p) < 0)
			continue;
		/* Whatever decodes must encode back to the same bytes. */
		eos_buf_truncate(&re, 0);
		ck_assert_int_eq(
			eos_entry_key(&re, p.sbx, p.parent, p.plen, p.name, p.nlen, p.version), 0);
		ck_assert_uint_eq(re.len, n);
		ck_assert_mem_eq(re.data, k, n);
	}
	eos_buf_release(&re);
}
END_TEST

/* --- records ---------------------------------------------------------------------------------- */

START_TEST(test_record_roundtrip)
{
	struct eos_entry samples[16];
	size_t n = sample_entries(samples);

	for (size_t i = 0; i < n; i++) {
		struct eos_buf b, b2;
		struct eos_entry d = { 0 }, c = { 0 };

		eos_buf_init(&b);
		eos_buf_init(&b2);
		ck_assert_int_eq(eos_entry_encode(&samples[i], &b), 0);
		ck_assert_int_eq(eos_entry_decode(b.data, b.len, 17 + i, &d), 0);
		ck_assert_uint_eq(d.st.version, 17 + i);
		check_same_entry(&samples[i], &d);
		ck_assert_int_eq(eos_entry_encode(&d, &b2), 0);
		ck_assert_uint_eq(b.len, b2.len);
		ck_assert_mem_eq(b.data, b2.data, b.len);
		ck_assert_int_eq(eos_entry_copy(&c, &d), 0);
		check_same_entry(&d, &c);
		/* Decoding into a used entry replaces it. */
		ck_assert_int_eq(eos_entry_decode(b.data, b.len, 1, &c), 0);
		check_same_entry(&d, &c);
		eos_entry_release(&c);
		eos_entry_release(&d);
		eos_entry_release(&samples[i]);
		eos_buf_release(&b);
		eos_buf_release(&b2);
	}
}
END_TEST

START_TEST(test_record_encode_rejects)
{
	struct eos_entry e = mk_file("abc");
	struct eos_buf b;

	eos_buf_init(&b);
	e.st.content.inline_len = 2;
	ck_assert_int_eq(eos_entry_encode(&e, &b), -EINVAL);
	e.st.content.inline_len = 3;
	e.st.content.kind = EOS_CONTENT_NONE;
	ck_assert_int_eq(eos_entry_encode(&e, &b), -EINVAL);
	e.st.kind = EOS_KIND_NONE;
	ck_assert_int_eq(eos_entry_encode(&e, &b), -EINVAL);
	e.st.kind = EOS_KIND_SYMLINK;
	ck_assert_int_eq(eos_entry_encode(&e, &b), -EINVAL); /* no target */
	e = mk_node(EOS_KIND_FIFO, 1, 3);
	ck_assert_int_eq(eos_entry_encode(&e, &b), -EINVAL); /* a fifo has no device number */
	e.st.kind = EOS_KIND_BLK + 1;
	ck_assert_int_eq(eos_entry_encode(&e, &b), -EINVAL); /* no such kind */
	ck_assert_uint_eq(b.len, 0);
	eos_buf_release(&b);
}
END_TEST

static int
decode_status(const uint8_t *p, size_t n)
{
	struct eos_entry e = { 0 };
	int r = eos_entry_decode(p, n, 1, &e);

	ck_assert_msg(r == 0 || r == -EBADMSG, "decode returned %d", r);
	eos_entry_release(&e);
	return r;
}

START_TEST(test_record_truncations_and_flips)
{
	struct eos_entry samples[16];
	size_t n = sample_entries(samples);

	for (size_t i = 0; i < n; i++) {
		struct eos_buf b;

		eos_buf_init(&b);
		ck_assert_int_eq(eos_entry_encode(&samples[i], &b), 0);
		for (size_t len = 0; len < b.len; len++) {
			/* A fresh heap copy, so ASan catches any read past the end. */
			uint8_t *cut = malloc(len ? len : 1);

			memcpy(cut, b.data, len);
			ck_assert_int_eq(decode_status(cut, len), -EBADMSG);
			free(cut);
		}
		ck_assert_int_eq(eos_buf_append_u8(&b, 0), 0);
		ck_assert_int_eq(decode_status(b.data, b.len), -EBADMSG); /* trailing byte */
		eos_buf_truncate(&b, b.len - 1);
		for (size_t pos = 0; pos < b.len; pos++)
			for (int bit = 0; bit < 8; bit++) {
				b.data[pos] ^= (uint8_t)(1u << bit);
				decode_status(b.data, b.len);
				b.data[pos] ^= (uint8_t)(1u << bit);
			}
		eos_entry_release(&samples[i]);
		eos_buf_release(&b);
	}
}
END_TEST

START_TEST(test_record_garbage)
{
	uint8_t buf[400];
	struct eos_buf re;

	eos_buf_init(&re);
	for (uint64_t seed = 1; seed < 30000; seed++) {
		size_t n = seed % sizeof(buf);
		struct eos_entry e = { 0 };

		eos_test_fill_random(buf, n, seed);
		if (n > 4) { /* plausible headers reach deeper checks */
			buf[0] = 1;
			buf[1] = (uint8_t)(seed % 9);
			buf[2] = (uint8_t)((seed / 6) % 5);
			buf[3] = 0;
		}
		if (decode_status(buf, n) < 0)
			continue;
		ck_assert_int_eq(eos_entry_decode(buf, n, 1, &e), 0);
		eos_buf_truncate(&re, 0);
		ck_assert_int_eq(eos_entry_encode(&e, &re), 0);
		ck_assert_uint_eq(re.len, n);
		ck_assert_mem_eq(re.data, buf, n);
		eos_entry_release(&e);
	}
	eos_buf_release(&re);
}
END_TEST

/* Patch one field of a valid record and expect -EBADMSG. */
static void
check_patched_rejected(const struct eos_entry *e, size_t off, const void *p, size_t n)
{
	struct eos_buf b;

	eos_buf_init(&b);
	ck_assert_int_eq(eos_entry_encode(e, &b), 0);
	ck_assert_uint_le(off + n, b.len);
	memcpy(b.data + off, p, n);
	ck_assert_msg(decode_status(b.data, b.len) == -EBADMSG, "patch at %zu accepted", off);
	eos_buf_release(&b);
}

START_TEST(test_record_rejects)
{
	struct eos_entry f = mk_file("abc"), d = mk_dir(0), s = mk_symlink("a\x01z");
	struct eos_entry p = mk_node(EOS_KIND_FIFO, 0, 0), c = mk_node(EOS_KIND_CHR, 1, 3);
	const size_t hdr = 4 + 12 + 32; /* fixed part */
	uint8_t x[8];

	check_patched_rejected(&f, 0, "\x02", 1); /* format */
	check_patched_rejected(&f, 1, "\x00", 1); /* kind NONE */
	check_patched_rejected(&f, 1, "\x08", 1); /* unknown kind */
	check_patched_rejected(&f, 1, "\x05", 1); /* a fifo with content */
	check_patched_rejected(&p, 2, "\x01", 1); /* a fifo with content kind INLINE */
	check_patched_rejected(&p, 1, "\x06", 1); /* a device without its number */
	check_patched_rejected(&c, 1, "\x05", 1); /* a fifo with a device number */
	eos_put_le64(x, 1);
	check_patched_rejected(&c, 4 + 12 + 8, x, 8); /* a device with a size */
	check_patched_rejected(&f, 2, "\x00", 1);     /* file without content */
	check_patched_rejected(&f, 2, "\x04", 1);     /* unknown content kind */
	check_patched_rejected(&d, 2, "\x01", 1);     /* directory with content */
	check_patched_rejected(&f, 3, "\x01", 1);     /* flags */
	eos_put_le64(x, 4);
	check_patched_rejected(&f, 4 + 12 + 8, x, 8); /* size != inline length */
	eos_put_le32(x, 257);
	check_patched_rejected(&f, hdr + 32, x, 4);	    /* inline length over the limit */
	check_patched_rejected(&s, hdr + 4 + 1, "\x00", 1); /* NUL in the target */
	eos_put_le64(x, 1);
	check_patched_rejected(&d, 4 + 12 + 8, x, 8); /* directory with a size */
	eos_put_le32(x, 0xffffffff);
	check_patched_rejected(&d, hdr, x, 4); /* absurd xattr count */
	add_xattr(&d, "user.k", "v", 1);
	eos_put_le32(x, 0);
	check_patched_rejected(&d, hdr + 4, x, 4);		/* empty xattr name */
	check_patched_rejected(&d, hdr + 4 + 4 + 2, "\x00", 1); /* NUL in the xattr name */
	eos_put_le32(x, EOS_XATTR_VALUE_MAX + 1);
	check_patched_rejected(&d, hdr + 4 + 4 + 6, x, 4); /* value over the limit */
	eos_entry_release(&f);
	eos_entry_release(&d);
	eos_entry_release(&s);
}
END_TEST

START_TEST(test_record_node_layout)
{
	struct eos_entry c = mk_node(EOS_KIND_CHR, 0x01020304, 0x0a0b0c0d), d = { 0 };
	const size_t hdr = 4 + 12 + 32; /* fixed part */
	struct eos_buf b;

	/* kind 6, no content, size 0, then le32 major · le32 minor before the xattr count */
	eos_buf_init(&b);
	ck_assert_int_eq(eos_entry_encode(&c, &b), 0);
	ck_assert_uint_eq(b.len, hdr + 8 + 4);
	ck_assert_uint_eq(b.data[1], 6);
	ck_assert_uint_eq(b.data[2], EOS_CONTENT_NONE);
	ck_assert_uint_eq(eos_get_le32(b.data + hdr), 0x01020304);
	ck_assert_uint_eq(eos_get_le32(b.data + hdr + 4), 0x0a0b0c0d);
	ck_assert_int_eq(eos_entry_decode(b.data, b.len, 3, &d), 0);
	ck_assert_uint_eq(major(d.st.rdev), 0x01020304);
	ck_assert_uint_eq(minor(d.st.rdev), 0x0a0b0c0d);
	eos_entry_release(&d);
	eos_buf_release(&b);
}
END_TEST

START_TEST(test_record_symlink_limit)
{
	char target[4097];
	struct eos_entry s;
	struct eos_buf b;

	eos_buf_init(&b);
	memset(target, 't', sizeof(target) - 1);
	target[4095] = '\0';
	s = mk_symlink(target);
	ck_assert_int_eq(eos_entry_encode(&s, &b), 0);
	ck_assert_int_eq(decode_status(b.data, b.len), 0);
	eos_entry_release(&s);
	target[4095] = 't';
	target[4096] = '\0';
	s = mk_symlink(target);
	ck_assert_int_eq(eos_entry_encode(&s, &b), -EINVAL);
	eos_entry_release(&s);
	eos_buf_release(&b);
}
END_TEST

/* --- MVCC against a real store ---------------------------------------------------------------- */

/* Write one record directly (and release e). */
static void
put_entry(struct eos_store *st, uint64_t sbx, const char *parent, const char *name, uint64_t v,
	  struct eos_entry *e)
{
	EOS_CLEANUP(eos_kv_batch_freep) struct eos_kv_batch *b = NULL;
	struct eos_buf k = key_of(sbx, parent, name, v), val;
	struct eos_error err = { 0 };
	int r;

	eos_buf_init(&val);
	ck_assert_int_eq(eos_entry_encode(e, &val), 0);
	ck_assert_int_eq(eos_kv_batch_new(&b), 0);
	eos_kv_batch_put(b, EOS_CF_ENTRIES, k.data, k.len, val.data, val.len);
	r = eos_kv_batch_write(st->kv, b, false, &err);
	ck_assert_msg(r == 0, "write: %s", eos_error_message(&err, r));
	eos_buf_release(&k);
	eos_buf_release(&val);
	eos_entry_release(e);
}

static void
put_file(struct eos_store *st, uint64_t sbx, const char *parent, const char *name, uint64_t v,
	 const char *data)
{
	struct eos_entry e = mk_file(data);

	put_entry(st, sbx, parent, name, v, &e);
}

static void
put_dir(struct eos_store *st, uint64_t sbx, const char *parent, const char *name, uint64_t v,
	uint64_t floor)
{
	struct eos_entry e = mk_dir(floor);

	put_entry(st, sbx, parent, name, v, &e);
}

static void
put_whiteout(struct eos_store *st, uint64_t sbx, const char *parent, const char *name, uint64_t v)
{
	struct eos_entry e = mk_whiteout();

	put_entry(st, sbx, parent, name, v, &e);
}

/* Inline data of the visible file, or "-" when absent (-ENOENT). */
static const char *
lookup_data(struct eos_store *st, const struct eos_kv_snapshot *snap, uint64_t sbx, uint64_t v,
	    const char *parent, uint64_t floor, const char *name, char *out)
{
	struct eos_entry e = { 0 };
	int r = eos_entry_lookup(st, snap, sbx, v, parent, strlen(parent), floor, name,
				 strlen(name), &e, NULL);

	ck_assert_msg(r == 0 || r == -ENOENT, "lookup: %d", r);
	if (r == -ENOENT)
		return "-";
	ck_assert_int_eq(e.st.kind, EOS_KIND_FILE);
	memcpy(out, e.st.content.inline_data, e.st.content.inline_len);
	out[e.st.content.inline_len] = '\0';
	eos_entry_release(&e);
	return out;
}

START_TEST(test_lookup_versions)
{
	struct eos_test_fixture f = eos_test_fixture_open();
	static const struct {
		uint64_t at;
		const char *want;
	} cases[] = { { 0, "-" },  { 1, "v1" }, { 2, "v1" }, { 3, "v3" },
		      { 4, "v3" }, { 5, "v5" }, { 9, "v5" }, { UINT64_MAX - 1, "v5" } };
	const struct eos_kv_snapshot *snap;
	char buf[EOS_INLINE_MAX + 1];

	put_file(f.st, 1, "d", "f", 1, "v1");
	put_file(f.st, 1, "d", "f", 3, "v3");
	put_file(f.st, 1, "d", "f", 5, "v5");
	/* Neighbours that must never be mistaken for d/f. */
	put_file(f.st, 1, "d", "e", 2, "e2");
	put_file(f.st, 1, "d", "ff", 2, "ff2");
	put_file(f.st, 1, "d", "f ", 4, "fsp4");
	put_file(f.st, 1, "d/f", "x", 1, "dfx");
	put_file(f.st, 1, "", "f", 1, "rootf");
	put_file(f.st, 2, "d", "f", 2, "other");
	for (size_t i = 0; i < EOS_ARRAY_SIZE(cases); i++)
		ck_assert_str_eq(lookup_data(f.st, NULL, 1, cases[i].at, "d", 0, "f", buf),
				 cases[i].want);
	ck_assert_str_eq(lookup_data(f.st, NULL, 1, 9, "d", 0, "g", buf), "-");
	ck_assert_str_eq(lookup_data(f.st, NULL, 1, 1, "d", 0, "ff", buf), "-");
	ck_assert_str_eq(lookup_data(f.st, NULL, 2, 1, "d", 0, "f", buf), "-");
	ck_assert_str_eq(lookup_data(f.st, NULL, 2, 2, "d", 0, "f", buf), "other");
	ck_assert_str_eq(lookup_data(f.st, NULL, 3, 9, "d", 0, "f", buf), "-");
	/* A snapshot keeps seeing the state it was taken at. */
	snap = eos_kv_snapshot_new(f.st->kv);
	put_file(f.st, 1, "d", "f", 7, "v7");
	ck_assert_str_eq(lookup_data(f.st, snap, 1, 9, "d", 0, "f", buf), "v5");
	ck_assert_str_eq(lookup_data(f.st, NULL, 1, 9, "d", 0, "f", buf), "v7");
	eos_kv_snapshot_free(f.st->kv, snap);
	eos_test_fixture_close(&f);
}
END_TEST

START_TEST(test_lookup_deep_history)
{
	struct eos_test_fixture f = eos_test_fixture_open();
	char data[32], buf[EOS_INLINE_MAX + 1];
	struct eos_error err = { 0 };

	for (uint64_t v = 1; v <= 3000; v += 3) {
		snprintf(data, sizeof(data), "v%llu", (unsigned long long)v);
		put_file(f.st, 1, "", "hot", v, data);
	}
	ck_assert_int_eq(eos_kv_flush(f.st->kv, &err), 0);
	for (uint64_t v = 1; v <= 3000; v += 7) {
		uint64_t want = v - (v - 1) % 3;

		snprintf(data, sizeof(data), "v%llu", (unsigned long long)want);
		ck_assert_str_eq(lookup_data(f.st, NULL, 1, v, "", 0, "hot", buf), data);
	}
	eos_test_fixture_close(&f);
}
END_TEST

START_TEST(test_whiteout_and_floor)
{
	struct eos_test_fixture f = eos_test_fixture_open();
	char buf[EOS_INLINE_MAX + 1];
	struct eos_entry e = { 0 };

	put_file(f.st, 1, "d", "f", 1, "one");
	put_whiteout(f.st, 1, "d", "f", 2);
	put_file(f.st, 1, "d", "f", 3, "three");
	ck_assert_str_eq(lookup_data(f.st, NULL, 1, 1, "d", 0, "f", buf), "one");
	ck_assert_str_eq(lookup_data(f.st, NULL, 1, 2, "d", 0, "f", buf), "-");
	ck_assert_str_eq(lookup_data(f.st, NULL, 1, 3, "d", 0, "f", buf), "three");
	/* get_raw reports the whiteout itself. */
	ck_assert_int_eq(eos_entry_get_raw(f.st, NULL, 1, 2, "d", 1, "f", 1, &e, NULL), 0);
	ck_assert_int_eq(e.st.kind, EOS_KIND_WHITEOUT);
	ck_assert_uint_eq(e.st.version, 2);
	ck_assert_int_eq(eos_entry_get_raw(f.st, NULL, 1, 0, "d", 1, "f", 1, NULL, NULL), -ENOENT);
	ck_assert_int_eq(eos_entry_get_raw(f.st, NULL, 1, 7, "d", 1, "f", 1, NULL, NULL), 0);
	/* A floor hides versions below it but not those at or above it. */
	ck_assert_str_eq(lookup_data(f.st, NULL, 1, 1, "d", 2, "f", buf), "-");
	ck_assert_str_eq(lookup_data(f.st, NULL, 1, 3, "d", 3, "f", buf), "three");
	ck_assert_str_eq(lookup_data(f.st, NULL, 1, 9, "d", 4, "f", buf), "-");
	eos_entry_release(&e);
	eos_test_fixture_close(&f);
}
END_TEST

/* Tree: v1 a/ a/b/ a/b/c a/f l->a; v2 replaces a with an opaque dir; v3 makes a/b a file. */
static void
put_tree(struct eos_store *st, uint64_t sbx)
{
	struct eos_entry l = mk_symlink("a");

	put_dir(st, sbx, "", "", 1, 0);
	put_dir(st, sbx, "", "a", 1, 0);
	put_dir(st, sbx, "a", "b", 1, 0);
	put_file(st, sbx, "a/b", "c", 1, "c1");
	put_file(st, sbx, "a", "f", 1, "f1");
	put_entry(st, sbx, "", "l", 1, &l);
	put_dir(st, sbx, "", "a", 2, 2);
	put_file(st, sbx, "a", "b", 3, "b3");
}

static int
resolve(struct eos_test_fixture *f, uint64_t v, const char *path, struct eos_entry *e,
	struct eos_error *err)
{
	eos_error_clear(err);
	return eos_entry_resolve(f->st, NULL, 1, v, path, e, err);
}

START_TEST(test_resolve)
{
	struct eos_test_fixture f = eos_test_fixture_open();
	struct eos_entry e = { 0 };
	struct eos_error err = { 0 };

	put_tree(f.st, 1);
	ck_assert_int_eq(resolve(&f, 1, "", &e, &err), 0);
	ck_assert_int_eq(e.st.kind, EOS_KIND_DIR);
	ck_assert_int_eq(resolve(&f, 1, "a/b/c", &e, &err), 0);
	ck_assert_int_eq(e.st.kind, EOS_KIND_FILE);
	ck_assert_uint_eq(e.st.version, 1);
	ck_assert_int_eq(resolve(&f, 1, "l", &e, &err), 0);
	ck_assert_str_eq(e.target, "a");
	ck_assert_int_eq(resolve(&f, 2, "a/b/c", &e, &err), -ENOENT);
	ck_assert_str_eq(err.msg, "'a/b' does not exist at L000002");
	ck_assert_int_eq(resolve(&f, 2, "a", &e, &err), 0);
	ck_assert_uint_eq(e.st.floor, 2);
	ck_assert_int_eq(resolve(&f, 3, "a/b/c", &e, &err), -ENOTDIR);
	ck_assert_str_eq(err.msg, "'a/b' is not a directory");
	ck_assert_int_eq(resolve(&f, 1, "a/f/x", &e, &err), -ENOTDIR);
	ck_assert_str_eq(err.msg, "'a/f' is not a directory");
	ck_assert_int_eq(resolve(&f, 1, "zz", &e, &err), -ENOENT);
	ck_assert_str_eq(err.msg, "'zz' does not exist at L000001");
	ck_assert_int_eq(resolve(&f, 0, "a", &e, &err), -ENOENT);
	ck_assert_str_eq(err.msg, "root directory does not exist at L000000");
	/* Failures leave *ret as it was. */
	ck_assert_int_eq(resolve(&f, 1, "a/b", &e, &err), 0);
	ck_assert_int_eq(resolve(&f, 1, "a/nope", &e, &err), -ENOENT);
	ck_assert_int_eq(e.st.kind, EOS_KIND_DIR);
	eos_entry_release(&e);
	eos_test_fixture_close(&f);
}
END_TEST

struct collect {
	char out[1024];
	int stop_after; /* > 0: return 7 after that many names */
	int calls;
};

static int
collect_fn(void *ctx, const char *name, size_t nlen, const struct eos_entry *e)
{
	struct collect *c = ctx;
	size_t len = strlen(c->out);

	ck_assert_uint_eq(strlen(name), nlen);
	snprintf(c->out + len, sizeof(c->out) - len, "%s%s@%llu%s", len ? "," : "", name,
		 (unsigned long long)e->st.version, e->st.kind == EOS_KIND_WHITEOUT ? "W" : "");
	c->calls++;
	return c->stop_after && c->calls >= c->stop_after ? 7 : 0;
}

static const char *
list(struct eos_test_fixture *f, uint64_t sbx, const char *dir, uint64_t v, uint64_t floor,
     const char *start_after, enum eos_entry_list_flags flags, struct collect *c)
{
	struct eos_error err = { 0 };
	int r;

	memset(c, 0, sizeof(*c));
	r = eos_entry_list(f->st, NULL, sbx, v, dir, strlen(dir), floor, start_after, flags,
			   collect_fn, c, &err);
	ck_assert_msg(r == 0, "list '%s': %s", dir, eos_error_message(&err, r));
	return c->out;
}

START_TEST(test_list)
{
	struct eos_test_fixture f = eos_test_fixture_open();
	struct collect c;

	put_dir(f.st, 1, "", "", 1, 0);
	put_dir(f.st, 1, "", "d", 1, 0);
	put_dir(f.st, 1, "", "d ", 1, 0);
	put_file(f.st, 1, "d", "a", 1, "a1");
	put_file(f.st, 1, "d", "b", 1, "b1");
	put_whiteout(f.st, 1, "d", "b", 3);
	put_file(f.st, 1, "d", "b", 5, "b5");
	put_file(f.st, 1, "d", "c", 2, "c2");
	put_file(f.st, 1, "d", "c d", 4, "cd4");
	put_file(f.st, 1, "d", "é", 6, "e6");
	put_file(f.st, 1, "d/a", "inner", 1, "x");
	put_file(f.st, 1, "d ", "sibling", 1, "x");
	put_file(f.st, 2, "d", "zz", 1, "other sandbox");

	ck_assert_str_eq(list(&f, 1, "d", 0, 0, NULL, 0, &c), "");
	ck_assert_str_eq(list(&f, 1, "d", 1, 0, NULL, 0, &c), "a@1,b@1");
	ck_assert_str_eq(list(&f, 1, "d", 2, 0, NULL, 0, &c), "a@1,b@1,c@2");
	ck_assert_str_eq(list(&f, 1, "d", 3, 0, NULL, 0, &c), "a@1,c@2");
	ck_assert_str_eq(list(&f, 1, "d", 4, 0, NULL, EOS_ENTRY_LIST_WHITEOUTS, &c),
			 "a@1,b@3W,c@2,c d@4");
	ck_assert_str_eq(list(&f, 1, "d", 9, 0, NULL, 0, &c), "a@1,b@5,c@2,c d@4,é@6");
	/* start_after resumes after a name, present or not. */
	ck_assert_str_eq(list(&f, 1, "d", 9, 0, "a", 0, &c), "b@5,c@2,c d@4,é@6");
	ck_assert_str_eq(list(&f, 1, "d", 9, 0, "bb", 0, &c), "c@2,c d@4,é@6");
	ck_assert_str_eq(list(&f, 1, "d", 9, 0, "c", 0, &c), "c d@4,é@6");
	ck_assert_str_eq(list(&f, 1, "d", 9, 0, "é", 0, &c), "");
	ck_assert_str_eq(list(&f, 1, "d", 9, 0, "", 0, &c), "a@1,b@5,c@2,c d@4,é@6");
	/* Floors. */
	ck_assert_str_eq(list(&f, 1, "d", 9, 2, NULL, 0, &c), "b@5,c@2,c d@4,é@6");
	ck_assert_str_eq(list(&f, 1, "d", 3, 2, NULL, EOS_ENTRY_LIST_WHITEOUTS, &c), "b@3W,c@2");
	ck_assert_str_eq(list(&f, 1, "d", 4, 4, NULL, EOS_ENTRY_LIST_BELOW_FLOOR, &c),
			 "a@1,c@2,c d@4");
	/* The root lists its children, never itself. */
	ck_assert_str_eq(list(&f, 1, "", 9, 0, NULL, 0, &c), "d@1,d @1");
	ck_assert_str_eq(list(&f, 1, "d/a", 9, 0, NULL, 0, &c), "inner@1");
	ck_assert_str_eq(list(&f, 2, "d", 9, 0, NULL, 0, &c), "zz@1");
	ck_assert_str_eq(list(&f, 3, "d", 9, 0, NULL, 0, &c), "");
	eos_test_fixture_close(&f);
}
END_TEST

START_TEST(test_list_stop_and_many_versions)
{
	struct eos_test_fixture f = eos_test_fixture_open();
	struct eos_error err = { 0 };
	struct collect c = { .stop_after = 2 };
	char data[16];

	for (uint64_t v = 1; v <= 200; v++) {
		snprintf(data, sizeof(data), "%llu", (unsigned long long)v);
		put_file(f.st, 1, "m", "many", v, data);
		if (v % 50 == 0)
			put_file(f.st, 1, "m", data, v, data);
	}
	ck_assert_str_eq(list(&f, 1, "m", 100, 0, NULL, 0, &c), "100@100,50@50,many@100");
	ck_assert_str_eq(list(&f, 1, "m", 1000, 0, NULL, 0, &c),
			 "100@100,150@150,200@200,50@50,many@200");
	ck_assert_str_eq(list(&f, 1, "m", 49, 0, NULL, 0, &c), "many@49");
	memset(&c, 0, sizeof(c));
	c.stop_after = 2;
	ck_assert_int_eq(
		eos_entry_list(f.st, NULL, 1, 1000, "m", 1, 0, NULL, 0, collect_fn, &c, &err), 7);
	ck_assert_str_eq(c.out, "100@100,150@150");
	eos_test_fixture_close(&f);
}
END_TEST

START_TEST(test_corrupt_record)
{
	struct eos_test_fixture f = eos_test_fixture_open();
	struct eos_buf k = key_of(1, "d", "bad", 1);
	struct eos_error err = { 0 };
	struct eos_entry e = { 0 };
	struct collect c = { 0 };
	int r;

	ck_assert_int_eq(
		eos_kv_put(f.st->kv, EOS_CF_ENTRIES, k.data, k.len, "\x01\x02", 2, false, &err), 0);
	r = eos_entry_lookup(f.st, NULL, 1, 1, "d", 1, 0, "bad", 3, &e, &err);
	ck_assert_int_eq(r, -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err.msg, "d/bad"));
	r = eos_entry_list(f.st, NULL, 1, 1, "d", 1, 0, NULL, 0, collect_fn, &c, &err);
	ck_assert_int_eq(r, -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err.msg, "'d'"));
	eos_buf_release(&k);
	eos_test_fixture_close(&f);
}
END_TEST

/* --- the read API over a hand-made sandbox ---------------------------------------------------- */

static void
put_meta(struct eos_store *st, uint64_t sbx, const char *name, const void *v, size_t n)
{
	struct eos_buf k;
	struct eos_error err = { 0 };

	eos_buf_init(&k);
	ck_assert_int_eq(eos_meta_key(&k, sbx, name), 0);
	ck_assert_int_eq(eos_kv_put(st->kv, EOS_CF_META, k.data, k.len, v, n, true, &err), 0);
	eos_buf_release(&k);
}

static void
put_layer(struct eos_store *st, uint64_t sbx, uint64_t v)
{
	struct eos_layer_info l = { .version = v, .parent = v - 1 };
	struct eos_buf k, val;
	struct eos_error err = { 0 };

	eos_buf_init(&k);
	eos_buf_init(&val);
	ck_assert_int_eq(eos_layer_key(&k, sbx, v), 0);
	ck_assert_int_eq(eos_layer_record_encode(&l, &val), 0);
	ck_assert_int_eq(
		eos_kv_put(st->kv, EOS_CF_LAYERS, k.data, k.len, val.data, val.len, true, &err), 0);
	eos_buf_release(&k);
	eos_buf_release(&val);
}

/* Sandbox "box" = number 1 with layers 1..3 and head 3, holding put_tree(). */
static void
put_sandbox(struct eos_store *st)
{
	uint8_t n[8];

	eos_put_le64(n, 1);
	put_meta(st, 0, "sandbox:box", n, 8);
	eos_put_le64(n, 3);
	put_meta(st, 1, "head", n, 8);
	for (uint64_t v = 1; v <= 3; v++)
		put_layer(st, 1, v);
	put_tree(st, 1);
}

static int
readdir_fn(void *ctx, const char *name, const struct eos_stat *st)
{
	struct collect *c = ctx;
	size_t len = strlen(c->out);

	snprintf(c->out + len, sizeof(c->out) - len, "%s%s@%llu", len ? "," : "", name,
		 (unsigned long long)st->version);
	return 0;
}

static int
xattr_fn(void *ctx, const char *name, const void *value, size_t len)
{
	struct collect *c = ctx;
	size_t n = strlen(c->out);

	snprintf(c->out + n, sizeof(c->out) - n, "%s=%.*s;", name, (int)len, (const char *)value);
	return 0;
}

START_TEST(test_read_api)
{
	struct eos_test_fixture f = eos_test_fixture_open();
	struct eos_error err = { 0 };
	struct collect c = { 0 };
	struct eos_stat st, dir;
	struct eos_entry x = mk_file("xattr");
	char *target = NULL;
	int r;

	put_sandbox(f.st);
	add_xattr(&x, "user.one", "1", 1);
	add_xattr(&x, "user.two", "22", 2);
	put_entry(f.st, 1, "", "x", 3, &x);
	ck_assert_int_eq(eos_store_stat(f.st, "box", 0, "", &st, &err), 0);
	ck_assert_int_eq(st.kind, EOS_KIND_DIR);
	ck_assert_int_eq(eos_store_stat(f.st, "box", 1, "a/b/c", &st, &err), 0);
	ck_assert_uint_eq(st.size, 2);
	r = eos_store_stat(f.st, "box", 0, "a/b/c", &st, &err);
	ck_assert_int_eq(r, -ENOTDIR);
	ck_assert_str_eq(err.msg, "sandbox 'box': 'a/b' is not a directory");
	eos_error_clear(&err);
	r = eos_store_stat(f.st, "box", 2, "a/b", &st, &err);
	ck_assert_int_eq(r, -ENOENT);
	ck_assert_str_eq(err.msg, "sandbox 'box': 'a/b' does not exist at L000002");
	eos_error_clear(&err);
	ck_assert_int_eq(eos_store_stat(f.st, "box", 0, "/a", &st, &err), -EINVAL);
	ck_assert_int_eq(eos_store_stat(f.st, "nobox", 0, "a", &st, &err), -ENOENT);
	ck_assert_str_eq(err.msg, "sandbox 'nobox' does not exist");
	ck_assert_int_eq(eos_store_stat(f.st, "box", 4, "a", &st, &err), -ENOENT);
	ck_assert_str_eq(err.msg, "version L000004 of sandbox 'box' does not exist");

	/* lookup_child */
	ck_assert_int_eq(eos_store_stat(f.st, "box", 1, "a", &dir, &err), 0);
	ck_assert_int_eq(eos_store_lookup_child(f.st, "box", 1, "a", &dir, "f", &st, &err), 0);
	ck_assert_int_eq(st.kind, EOS_KIND_FILE);
	ck_assert_int_eq(eos_store_lookup_child(f.st, "box", 1, "a", &dir, "g", &st, &err),
			 -ENOENT);
	ck_assert_str_eq(err.msg, "sandbox 'box': 'a/g' does not exist at L000001");
	ck_assert_int_eq(eos_store_stat(f.st, "box", 2, "a", &dir, &err), 0);
	ck_assert_int_eq(eos_store_lookup_child(f.st, "box", 2, "a", &dir, "f", &st, &err),
			 -ENOENT);
	ck_assert_int_eq(eos_store_stat(f.st, "box", 3, "a", &dir, &err), 0);
	ck_assert_int_eq(eos_store_lookup_child(f.st, "box", 3, "a", &dir, "b", &st, &err), 0);
	ck_assert_int_eq(eos_store_lookup_child(f.st, "box", 3, "a/b", &st, "c", &st, &err),
			 -ENOTDIR);

	/* readdir */
	ck_assert_int_eq(eos_store_readdir(f.st, "box", 1, "", NULL, readdir_fn, &c, &err), 0);
	ck_assert_str_eq(c.out, "a@1,l@1");
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(eos_store_readdir(f.st, "box", 0, "", "a", readdir_fn, &c, &err), 0);
	ck_assert_str_eq(c.out, "l@1,x@3");
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(eos_store_readdir(f.st, "box", 1, "a", NULL, readdir_fn, &c, &err), 0);
	ck_assert_str_eq(c.out, "b@1,f@1");
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(eos_store_readdir(f.st, "box", 3, "a", NULL, readdir_fn, &c, &err), 0);
	ck_assert_str_eq(c.out, "b@3");
	ck_assert_int_eq(eos_store_readdir(f.st, "box", 1, "a/f", NULL, readdir_fn, &c, &err),
			 -ENOTDIR);
	ck_assert_str_eq(err.msg, "sandbox 'box': 'a/f' is not a directory");

	/* readlink, xattrs */
	ck_assert_int_eq(eos_store_readlink(f.st, "box", 0, "l", &target, &err), 0);
	ck_assert_str_eq(target, "a");
	free(target);
	ck_assert_int_eq(eos_store_readlink(f.st, "box", 0, "a", &target, &err), -EINVAL);
	ck_assert_str_eq(err.msg, "sandbox 'box': 'a' is not a symlink");
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(eos_store_xattrs(f.st, "box", 3, "x", xattr_fn, &c, &err), 0);
	ck_assert_str_eq(c.out, "user.one=1;user.two=22;");
	ck_assert_int_eq(eos_store_xattrs(f.st, "box", 2, "x", xattr_fn, &c, &err), -ENOENT);
	eos_test_fixture_close(&f);
}
END_TEST

START_TEST(test_read_file_open)
{
	struct eos_test_fixture f = eos_test_fixture_open();
	struct eos_error err = { 0 };
	struct eos_file *file = NULL;
	char buf[16] = { 0 };

	put_sandbox(f.st);
	ck_assert_int_eq(eos_store_file_open(f.st, "box", 1, "a/b/c", &file, &err), 0);
	ck_assert_uint_eq(eos_file_size(file), 2);
	ck_assert_int_eq(eos_file_pread(file, buf, sizeof(buf), 0, &err), 2);
	ck_assert_str_eq(buf, "c1");
	eos_file_close(file);
	ck_assert_int_eq(eos_store_file_open(f.st, "box", 1, "a", &file, &err), -EISDIR);
	ck_assert_str_eq(err.msg, "sandbox 'box': 'a' is a directory");
	ck_assert_int_eq(eos_store_file_open(f.st, "box", 1, "l", &file, &err), -EINVAL);
	ck_assert_str_eq(err.msg, "sandbox 'box': 'l' is not a regular file");
	eos_test_fixture_close(&f);
}
END_TEST

static Suite *
entry_suite(void)
{
	Suite *s = suite_create("entry");
	TCase *codec = tcase_create("codec");
	TCase *mvcc = tcase_create("mvcc");

	tcase_add_test(codec, test_key_roundtrip);
	tcase_add_test(codec, test_key_order);
	tcase_add_test(codec, test_key_name_order);
	tcase_add_test(codec, test_key_decode_rejects);
	tcase_add_test(codec, test_key_decode_fuzz);
	tcase_add_test(codec, test_record_roundtrip);
	tcase_add_test(codec, test_record_encode_rejects);
	tcase_add_test(codec, test_record_truncations_and_flips);
	tcase_add_test(codec, test_record_garbage);
	tcase_add_test(codec, test_record_rejects);
	tcase_add_test(codec, test_record_symlink_limit);
	tcase_add_test(codec, test_record_node_layout);
	suite_add_tcase(s, codec);
	tcase_set_timeout(mvcc, 60);
	tcase_add_test(mvcc, test_lookup_versions);
	tcase_add_test(mvcc, test_lookup_deep_history);
	tcase_add_test(mvcc, test_whiteout_and_floor);
	tcase_add_test(mvcc, test_resolve);
	tcase_add_test(mvcc, test_list);
	tcase_add_test(mvcc, test_list_stop_and_many_versions);
	tcase_add_test(mvcc, test_corrupt_record);
	tcase_add_test(mvcc, test_read_api);
	tcase_add_test(mvcc, test_read_file_open);
	suite_add_tcase(s, mvcc);
	return s;
}

int
main(void)
{
	return eos_test_run(entry_suite());
}
