/* SPDX-License-Identifier: MIT */
/*
 * Fifos, devices and sockets below the FUSE layer: imports of a directory and of a tar holding
 * each, the session view's nodes across a reopen (the device number in the node record, and
 * records written before it had one), publishing them through the gate (fingerprints, type and
 * device conflicts, merges, sockets skipped and listed), dir, tar and patch exports, and blame's
 * refusal. Devices are made through tar archives and the view (no CAP_MKNOD needed); only the
 * directory import and the dir export create host devices, as root (else they check EPERM).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/endian.h"

#include "fs/view-internal.h"
#include "fs/view.h"
#include "store/archive.h"
#include "store/store.h"
#include "tests/unit/testutil.h"
#include "tests/unit/view-util.h"

static struct eos_test_fixture fx;

#define ck_ok(r, err) \
	ck_assert_msg((r) >= 0, "line %d: %s", __LINE__, eos_error_message(&(err), (r)))

static void
setup(void)
{
	fx = eos_test_fixture_open();
}

static void
teardown(void)
{
	eos_test_fixture_close(&fx);
}

static char *
pjoin(const char *a, const char *b)
{
	char *s = NULL;

	ck_assert(asprintf(&s, "%s/%s", a, b) >= 0);
	return s;
}

static void
run(const char *cmd)
{
	ck_assert_msg(system(cmd) == 0, "'%s' failed", cmd);
}

/* The store entry of path at v is of kind, with mode and rdev. */
static struct eos_stat
node_is(const char *sb, uint64_t v, const char *path, enum eos_kind kind, unsigned mode,
	uint64_t rdev)
{
	struct eos_error err = { 0 };
	struct eos_stat s;
	int r = eos_store_stat(fx.st, sb, v, path, &s, &err);

	ck_assert_msg(r == 0, "stat '%s': %s", path, eos_error_message(&err, r));
	ck_assert_msg(s.kind == kind, "'%s' is %s, not %s", path, eos_kind_name(s.kind),
		      eos_kind_name(kind));
	ck_assert_msg(s.attr.mode == mode, "mode of '%s' is %04o", path, s.attr.mode);
	ck_assert_msg(s.rdev == rdev, "rdev of '%s' is %u:%u", path, major(s.rdev), minor(s.rdev));
	ck_assert_uint_eq(s.size, 0);
	ck_assert_uint_eq(s.link_group, 0);
	return s;
}

/* --- tar archives with every kind ------------------------------------------------------------- */

struct member {
	const char *path;
	enum eos_archive_type type;
	unsigned perm, maj, min;
	const char *hardlink;
};

/* Write the members (no data: files are empty) into a new tar at path. */
static void
write_tar(const char *path, const struct member *m, size_t n)
{
	EOS_CLEANUP(eos_archive_writer_freep) struct eos_archive_writer *w = NULL;
	cleanup_close int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	struct eos_error err = { 0 };
	int r = fd >= 0 ? eos_archive_writer_open(fd, EOS_ARCHIVE_FILTER_NONE, &w, &err) : -EIO;

	ck_ok(r, err);
	for (size_t i = 0; i < n; i++) {
		struct eos_archive_entry e = { .path = m[i].path,
					       .type = m[i].type,
					       .perm = m[i].perm,
					       .uid = 0,
					       .gid = 5,
					       .mtime_set = true,
					       .mtime_sec = 1700000000,
					       .rdev = makedev(m[i].maj, m[i].min),
					       .hardlink = m[i].hardlink };

		r = eos_archive_writer_header(w, &e, &err);
		ck_ok(r, err);
	}
	r = eos_archive_writer_close(w, &err);
	ck_ok(r, err);
}

static const struct member base_members[] = {
	{ "d/", EOS_ARCHIVE_DIR, 0755, 0, 0, NULL },
	{ "d/fifo", EOS_ARCHIVE_FIFO, 0600, 0, 0, NULL },
	{ "d/tty", EOS_ARCHIVE_CHAR, 0620, 4, 1, NULL },
	{ "d/sda", EOS_ARCHIVE_BLOCK, 0660, 8, 0, NULL },
	{ "d/fifo2", EOS_ARCHIVE_FIFO, 0, 0, 0, "d/fifo" },
	{ "null", EOS_ARCHIVE_CHAR, 0666, 1, 3, NULL },
	{ "p", EOS_ARCHIVE_FIFO, 0644, 0, 0, NULL },
	{ "f", EOS_ARCHIVE_FILE, 0644, 0, 0, NULL },
};

/* Import base_members as sandbox "sbx" (version 1). */
static void
import_base(void)
{
	cleanup_free char *work = eos_test_tmpdir("nodes-tar");
	cleanup_free char *tar = pjoin(work, "base.tar");
	struct eos_import_options o = { .sandbox = "sbx", .threads = 1 };
	struct eos_import_result res = { 0 };
	struct eos_error err = { 0 };
	int r;

	write_tar(tar, base_members, EOS_ARRAY_SIZE(base_members));
	r = eos_store_import(fx.st, tar, &o, &res, &err);
	ck_ok(r, err);
	ck_assert_uint_eq(res.specials, 6);
	ck_assert_uint_eq(res.files, 1);
	ck_assert_uint_eq(res.hardlinks, 0);
	ck_assert_uint_eq(res.nskipped, 0);
	eos_import_result_release(&res);
	eos_test_rm_rf(work);
}

START_TEST(test_import_tar)
{
	struct eos_stat s;

	import_base();
	s = node_is("sbx", 1, "d/fifo", EOS_KIND_FIFO, 0600, 0);
	ck_assert_uint_eq(s.attr.gid, 5);
	ck_assert_int_eq(s.attr.mtime_ns, 1700000000LL * 1000000000);
	node_is("sbx", 1, "d/tty", EOS_KIND_CHR, 0620, makedev(4, 1));
	node_is("sbx", 1, "d/sda", EOS_KIND_BLK, 0660, makedev(8, 0));
	/* the store links regular files only: the hard-linked fifo is an equal fifo of its own */
	node_is("sbx", 1, "d/fifo2", EOS_KIND_FIFO, 0600, 0);
	node_is("sbx", 1, "null", EOS_KIND_CHR, 0666, makedev(1, 3));
}
END_TEST

/* --- directory import ------------------------------------------------------------------------- */

/* A host tree with a fifo, its hard link, a socket and (as root) two devices. */
static void
make_host_tree(const char *tree, bool devices)
{
	cleanup_free char *p = pjoin(tree, "p"), *plink = pjoin(tree, "p-link");
	cleanup_free char *sock = pjoin(tree, "sock"), *null = pjoin(tree, "null");
	cleanup_free char *loop = pjoin(tree, "loop0"), *f = pjoin(tree, "f");

	eos_test_write_file(f, "file\n", 5, 0644);
	ck_assert_int_eq(mkfifo(p, 0640), 0);
	ck_assert_int_eq(chmod(p, 0640), 0);
	ck_assert_int_eq(link(p, plink), 0);
	eos_test_make_socket(sock);
	if (!devices)
		return;
	ck_assert_int_eq(mknod(null, S_IFCHR | 0666, makedev(1, 3)), 0);
	ck_assert_int_eq(chmod(null, 0666), 0);
	ck_assert_int_eq(chown(null, 12, 34), 0);
	ck_assert_int_eq(mknod(loop, S_IFBLK | 0660, makedev(7, 0)), 0);
	ck_assert_int_eq(chmod(loop, 0660), 0);
}

START_TEST(test_import_dir)
{
	cleanup_free char *tree = eos_test_tmpdir("nodes-dir"), *work = eos_test_tmpdir("nodes-gt");
	cleanup_free char *tar = pjoin(work, "x.tar"), *cmd = NULL;
	struct eos_import_options o = { .sandbox = "dir", .threads = 1 };
	struct eos_import_result res = { 0 };
	struct eos_error err = { 0 };
	bool devices = geteuid() == 0;
	struct eos_digest a, b;
	struct eos_stat s;
	int r;

	make_host_tree(tree, devices);
	r = eos_store_import(fx.st, tree, &o, &res, &err);
	ck_ok(r, err);
	ck_assert_uint_eq(res.specials, devices ? 4 : 2);
	ck_assert_uint_eq(res.nskipped, 1);
	ck_assert_str_eq(res.skipped[0], "sock");
	eos_import_result_release(&res);
	node_is("dir", 0, "p", EOS_KIND_FIFO, 0640, 0);
	node_is("dir", 0, "p-link", EOS_KIND_FIFO, 0640, 0);
	ck_assert_int_eq(eos_store_stat(fx.st, "dir", 0, "sock", &s, NULL), -ENOENT);
	if (devices) {
		s = node_is("dir", 0, "null", EOS_KIND_CHR, 0666, makedev(1, 3));
		ck_assert(s.attr.uid == 12 && s.attr.gid == 34);
		node_is("dir", 0, "loop0", EOS_KIND_BLK, 0660, makedev(7, 0));
	}
	/* GNU tar of the same tree (it leaves the socket out): the same sandbox */
	ck_assert(asprintf(&cmd, "tar -C '%s' --format=pax -cf '%s' . 2>/dev/null", tree, tar) > 0);
	run(cmd);
	o.sandbox = "tar";
	r = eos_store_import(fx.st, tar, &o, &res, &err);
	ck_ok(r, err);
	ck_assert_uint_eq(res.specials, devices ? 4 : 2);
	eos_import_result_release(&res);
	a = eos_test_tree_digest(fx.st, "dir", 0);
	b = eos_test_tree_digest(fx.st, "tar", 0);
	ck_assert(eos_digest_eq(&a, &b));
	eos_test_rm_rf(tree);
	eos_test_rm_rf(work);
}
END_TEST

/* --- the session view ------------------------------------------------------------------------- */

static struct eos_view *
view_open(const char *session)
{
	struct eos_view_options o = {
		.store = fx.st, .sandbox = "sbx", .session = session, .create = true
	};
	struct eos_error err = { 0 };
	struct eos_view *v = NULL;
	int r = eos_view_open(&o, &v, &err);

	ck_ok(r, err);
	return v;
}

static int
mknod_rc(struct eos_view *v, const char *name, uint32_t mode, unsigned maj, unsigned min)
{
	struct eos_ctx c = { .uid = getuid(), .gid = getgid(), .pid = getpid() };
	struct eos_node *n = NULL;

	return eos_fs_mknod(v, &c, tv_root(v), name, mode, makedev(maj, min), &n);
}

static struct stat
attr_of(struct eos_view *v, const char *path)
{
	struct stat st;

	ck_assert_int_eq(eos_fs_getattr(v, tv_lookup(v, path), &st), 0);
	return st;
}

static void
attr_is(struct eos_view *v, const char *path, uint32_t mode, uint64_t rdev, nlink_t nlink)
{
	struct stat st = attr_of(v, path);

	ck_assert_msg(st.st_mode == mode, "mode of '%s' is %06o", path, st.st_mode);
	ck_assert_msg(st.st_rdev == rdev, "rdev of '%s' is %u:%u", path, major(st.st_rdev),
		      minor(st.st_rdev));
	ck_assert_msg(st.st_nlink == nlink, "'%s' has %ju links", path, (uintmax_t)st.st_nlink);
}

/* Untouched lower nodes first: their inode numbers are given afresh by each mount. */
static const char *const view_paths[] = { "p", "d/tty", "null", "q", "q2", "sock", "f", "z", "b" };

START_TEST(test_view_nodes)
{
	struct stat attr = { .st_mode = 0600 }, out, before[EOS_ARRAY_SIZE(view_paths)];
	struct eos_publish_result res = { 0 };
	struct eos_stat gone;
	struct eos_error err = { 0 };
	struct eos_view *v;
	int r;

	import_base();
	v = view_open("s1");
	attr_is(v, "p", S_IFIFO | 0644, 0, 1);
	attr_is(v, "null", S_IFCHR | 0666, makedev(1, 3), 1);
	ck_assert_int_eq(mknod_rc(v, "q", S_IFIFO | 0640, 9, 9), 0); /* a fifo has no rdev */
	ck_assert_int_eq(mknod_rc(v, "sock", S_IFSOCK | 0755, 0, 0), 0);
	/* a socket bound where the base has a file */
	ck_assert_int_eq(eos_fs_unlink(v, tv_root(v), "f", false), 0);
	ck_assert_int_eq(mknod_rc(v, "f", S_IFSOCK | 0755, 0, 0), 0);
	ck_assert_int_eq(mknod_rc(v, "z", S_IFCHR | 0600, 1, 5), 0);
	ck_assert_int_eq(mknod_rc(v, "b", S_IFBLK | 0660, 7, 2), 0);
	ck_assert_int_eq(mknod_rc(v, "dir", S_IFDIR | 0755, 0, 0), -EINVAL);
	ck_assert_int_eq(mknod_rc(v, "z", S_IFCHR | 0600, 1, 5), -EEXIST);
	ck_assert_int_eq(eos_fs_link(v, tv_lookup(v, "q"), tv_root(v), "q2"), 0);
	ck_assert_int_eq(eos_fs_setattr(v, tv_lookup(v, "null"), &attr, EOS_SET_MODE, &out), 0);
	attr_is(v, "q", S_IFIFO | 0640, 0, 2);
	attr_is(v, "z", S_IFCHR | 0600, makedev(1, 5), 1);
	for (size_t i = 0; i < EOS_ARRAY_SIZE(view_paths); i++)
		before[i] = attr_of(v, view_paths[i]);
	eos_view_close(v);

	/* a reopen finds every node as it was: type, mode, owner, times, rdev, links, inode */
	v = view_open("s1");
	for (size_t i = 0; i < EOS_ARRAY_SIZE(view_paths); i++) {
		struct stat now = attr_of(v, view_paths[i]);

		ck_assert_msg(
			now.st_mode == before[i].st_mode && now.st_rdev == before[i].st_rdev &&
				now.st_nlink == before[i].st_nlink &&
				now.st_uid == before[i].st_uid && now.st_gid == before[i].st_gid &&
				now.st_mtim.tv_nsec == before[i].st_mtim.tv_nsec &&
				(i < 2 || now.st_ino == before[i].st_ino),
			"'%s' changed across the reopen", view_paths[i]);
	}
	attr_is(v, "null", S_IFCHR | 0600, makedev(1, 3), 1);
	eos_view_close(v);

	/*
	 * The sockets stay out of the store, listed (the file the session replaced goes); each
	 * name of the hard-linked fifo is a fifo of its own.
	 */
	r = eos_view_publish(fx.st, "sbx", "s1", NULL, &res, &err);
	ck_ok(r, err);
	ck_assert_int_eq(res.status, EOS_PUBLISH_PUBLISHED);
	ck_assert_uint_eq(res.nskipped, 2);
	ck_assert_str_eq(res.skipped[0], "f");
	ck_assert_str_eq(res.skipped[1], "sock");
	eos_publish_result_release(&res);
	ck_assert_ptr_null(res.skipped);
	node_is("sbx", 0, "q", EOS_KIND_FIFO, 0640, 0);
	node_is("sbx", 0, "q2", EOS_KIND_FIFO, 0640, 0);
	node_is("sbx", 0, "z", EOS_KIND_CHR, 0600, makedev(1, 5));
	node_is("sbx", 0, "b", EOS_KIND_BLK, 0660, makedev(7, 2));
	node_is("sbx", 0, "null", EOS_KIND_CHR, 0600, makedev(1, 3));
	ck_assert_int_eq(eos_store_stat(fx.st, "sbx", 0, "sock", &gone, NULL), -ENOENT);
	ck_assert_int_eq(eos_store_stat(fx.st, "sbx", 0, "f", &gone, NULL), -ENOENT);
}
END_TEST

struct find_node {
	uint64_t ino;
	struct eos_buf val;
};

static int
find_node_record(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct find_node *f = ctx;
	const uint8_t *k = key;

	if (klen != 9 || k[0] != 'N' || eos_get_be64(k + 1) != f->ino)
		return 0;
	ck_assert_int_eq(eos_buf_append(&f->val, val, vlen), 0);
	return 1;
}

/* Rewrite the node record of ino in session s1 with format byte format, cut by cut bytes. */
static void
rewrite_node(uint64_t ino, uint8_t format, size_t cut)
{
	EOS_CLEANUP(eos_session_batch_freep) struct eos_session_batch *b = NULL;
	struct find_node f = { .ino = ino };
	struct eos_error err = { 0 };
	uint8_t key[9] = { 'N' };
	int r = eos_store_session_scan(fx.st, "sbx", "s1", find_node_record, &f, &err);

	ck_assert_msg(r >= 0 && f.val.len > cut, "no node record of inode %llu",
		      (unsigned long long)ino);
	ck_assert_uint_eq(f.val.data[0], 2); /* the format that carries rdev */
	f.val.data[0] = format;
	eos_put_be64(key + 1, ino);
	r = eos_session_batch_new(fx.st, "sbx", "s1", &b, &err);
	r = r ?: eos_session_batch_put(b, key, sizeof(key), f.val.data, f.val.len - cut);
	r = r ?: eos_session_batch_write(b, true, &err);
	ck_ok(r, err);
	eos_buf_release(&f.val);
}

/* A node record written before records had a device number and a jseq (format 1) loads. */
START_TEST(test_view_node_format_1)
{
	struct eos_view_options o = { .store = fx.st, .sandbox = "sbx", .session = "s1" };
	struct eos_error err = { 0 };
	struct eos_view *v;
	uint64_t fifo, dev;

	import_base();
	v = view_open("s1");
	ck_assert_int_eq(mknod_rc(v, "old-fifo", S_IFIFO | 0640, 0, 0), 0);
	ck_assert_int_eq(mknod_rc(v, "new-dev", S_IFCHR | 0600, 10, 200), 0);
	fifo = tv_lookup(v, "old-fifo")->ino;
	dev = tv_lookup(v, "new-dev")->ino;
	eos_view_close(v);
	rewrite_node(fifo, 1, 16); /* format 2 added rdev (8 bytes) and jseq (8) */
	v = view_open("s1");
	attr_is(v, "old-fifo", S_IFIFO | 0640, 0, 1);
	attr_is(v, "new-dev", S_IFCHR | 0600, makedev(10, 200), 1);
	eos_view_close(v);
	/* an unknown format is corrupt, named */
	rewrite_node(dev, 3, 0);
	v = NULL;
	ck_assert_int_eq(eos_view_open(&o, &v, &err), -EBADMSG);
	ck_assert_msg(strstr(err.msg, "record of inode") && strstr(err.msg, "is corrupt"), "%s",
		      err.msg);
}
END_TEST

/* --- the publish gate ------------------------------------------------------------------------- */

static void
stage_node(struct eos_changeset *cs, const char *path, enum eos_kind kind, unsigned mode,
	   unsigned maj, unsigned min)
{
	struct eos_attr a = eos_test_attr(mode);
	struct eos_error err = { 0 };
	int r = eos_changeset_mknod(cs, path, &a, kind, makedev(maj, min), &err);

	ck_ok(r, err);
}

static void
commit(struct eos_changeset *cs)
{
	struct eos_error err = { 0 };
	int r = eos_changeset_commit(cs, 0, NULL, &err);

	ck_ok(r, err);
	eos_changeset_free(cs);
}

/* L1: fifos p, n; devices c, m, k. L2 (the head): p a file, c 1:5, m 0640, n gone, k 2:3, r new. */
static void
gate_history(void)
{
	struct eos_attr a = eos_test_attr(0644);
	struct eos_changeset *cs = NULL;
	struct eos_error err = { 0 };
	int r = eos_changeset_new_sandbox(fx.st, "gate", "test", NULL, &cs, &err);

	ck_ok(r, err);
	stage_node(cs, "p", EOS_KIND_FIFO, 0644, 0, 0);
	stage_node(cs, "n", EOS_KIND_FIFO, 0644, 0, 0);
	stage_node(cs, "c", EOS_KIND_CHR, 0600, 1, 3);
	stage_node(cs, "m", EOS_KIND_CHR, 0600, 1, 3);
	stage_node(cs, "k", EOS_KIND_BLK, 0600, 2, 2);
	commit(cs);
	r = eos_changeset_new(fx.st, "gate", &cs, &err);
	ck_ok(r, err);
	r = eos_changeset_put_file_mem(cs, "p", &a, "now a file\n", 11, &err);
	ck_ok(r, err);
	stage_node(cs, "c", EOS_KIND_CHR, 0600, 1, 5);
	a.mode = 0640;
	r = eos_changeset_set_attr(cs, "m", &a, &err);
	ck_ok(r, err);
	r = eos_changeset_remove(cs, "n", &err);
	ck_ok(r, err);
	stage_node(cs, "k", EOS_KIND_BLK, 0600, 2, 3);
	stage_node(cs, "r", EOS_KIND_FIFO, 0644, 0, 0);
	commit(cs);
}

static struct eos_publish *
gate_begin(void)
{
	struct eos_publish_options o = { .sandbox = "gate", .base = 1 };
	struct eos_error err = { 0 };
	struct eos_publish *p = NULL;
	int r = eos_publish_begin(fx.st, &o, &p, &err);

	ck_ok(r, err);
	return p;
}

static void
pub_node(struct eos_publish *p, const char *path, enum eos_kind kind, unsigned mode, unsigned maj,
	 unsigned min)
{
	struct eos_attr a = eos_test_attr(mode);
	struct eos_error err = { 0 };
	int r = eos_publish_mknod(p, path, &a, kind, makedev(maj, min), &err);

	ck_ok(r, err);
}

static const struct eos_conflict *
conflict_at(const struct eos_publish_result *res, const char *path)
{
	for (size_t i = 0; i < res->nconflicts; i++)
		if (strcmp(res->conflicts[i].path, path) == 0)
			return &res->conflicts[i];
	ck_abort_msg("no conflict at '%s'", path);
	return NULL;
}

START_TEST(test_publish_conflicts)
{
	struct eos_publish_result res = { 0 };
	struct eos_attr a = eos_test_attr(0600);
	struct eos_error err = { 0 };
	const struct eos_conflict *k;
	struct eos_publish *p;
	int r;

	gate_history();
	p = gate_begin();
	ck_ok(eos_publish_set_attr(p, "p", &a, &err), err); /* the head made it a file */
	pub_node(p, "c", EOS_KIND_CHR, 0600, 1, 7);	    /* the head made it 1:5 */
	pub_node(p, "n", EOS_KIND_FIFO, 0600, 0, 0);	    /* the head deleted it */
	r = eos_publish_commit(p, &res, &err);
	ck_ok(r, err);
	ck_assert_int_eq(res.status, EOS_PUBLISH_REJECTED);
	ck_assert_uint_eq(res.nconflicts, 3);
	k = conflict_at(&res, "p");
	ck_assert_int_eq(k->kind, EOS_CONFLICT_TYPE);
	ck_assert_str_eq(k->base_fp, "fifo:0644");
	ck_assert_str_eq(k->session_fp, "fifo:0600");
	ck_assert_msg(strncmp(k->head_fp, "file:0644:", 10) == 0, "%s", k->head_fp);
	ck_assert_msg(strstr(k->message, "fifo") && strstr(k->message, "file"), "%s", k->message);
	k = conflict_at(&res, "c");
	ck_assert_int_eq(k->kind, EOS_CONFLICT_DEVICE);
	ck_assert_str_eq(eos_conflict_kind_name(k->kind), "device");
	ck_assert_str_eq(k->base_fp, "chr:0600:1:3");
	ck_assert_str_eq(k->head_fp, "chr:0600:1:5");
	ck_assert_str_eq(k->session_fp, "chr:0600:1:7");
	ck_assert_int_eq(conflict_at(&res, "n")->kind, EOS_CONFLICT_MODIFY_DELETE);
	eos_publish_result_release(&res);
	eos_publish_free(p);
	node_is("gate", 0, "c", EOS_KIND_CHR, 0600, makedev(1, 5)); /* nothing written */
}
END_TEST

START_TEST(test_publish_merges)
{
	struct eos_publish_result res = { 0 };
	struct eos_error err = { 0 };
	struct eos_publish *p;
	int r;

	gate_history();
	p = gate_begin();
	pub_node(p, "m", EOS_KIND_CHR, 0600, 1, 9);  /* the head changed the mode only */
	pub_node(p, "k", EOS_KIND_BLK, 0640, 2, 2);  /* the head changed the number only */
	pub_node(p, "r", EOS_KIND_FIFO, 0644, 0, 0); /* the head made the same fifo */
	pub_node(p, "new", EOS_KIND_BLK, 0660, 8, 0);
	r = eos_publish_commit(p, &res, &err);
	ck_ok(r, err);
	ck_assert_msg(res.status == EOS_PUBLISH_PUBLISHED, "%zu conflicts: %s", res.nconflicts,
		      res.nconflicts ? res.conflicts[0].message : "");
	ck_assert_uint_eq(res.merged, 1);
	eos_publish_result_release(&res);
	eos_publish_free(p);
	node_is("gate", 0, "m", EOS_KIND_CHR, 0640, makedev(1, 9));
	node_is("gate", 0, "k", EOS_KIND_BLK, 0640, makedev(2, 3));
	node_is("gate", 0, "r", EOS_KIND_FIFO, 0644, 0);
	node_is("gate", 0, "new", EOS_KIND_BLK, 0660, makedev(8, 0));
	/* what is not a fifo or a device is refused naming the path */
	p = gate_begin();
	pub_node(p, "bad", EOS_KIND_FILE, 0644, 0, 0);
	ck_assert_int_eq(eos_publish_prepare(p, &err), -EINVAL);
	ck_assert_msg(strstr(err.msg, "'bad'"), "%s", err.msg);
	eos_publish_free(p);
}
END_TEST

/* --- export and blame ------------------------------------------------------------------------- */

/* L1: fifo "old", file "keep". L2: "old" a file, fifo p, devices c (1:3) and b (7:0). */
static void
export_history(void)
{
	struct eos_attr a = eos_test_attr(0644);
	struct eos_changeset *cs = NULL;
	struct eos_error err = { 0 };
	int r = eos_changeset_new_sandbox(fx.st, "ex", "test", NULL, &cs, &err);

	ck_ok(r, err);
	stage_node(cs, "old", EOS_KIND_FIFO, 0644, 0, 0);
	r = eos_changeset_put_file_mem(cs, "keep", &a, "keep\n", 5, &err);
	ck_ok(r, err);
	commit(cs);
	r = eos_changeset_new(fx.st, "ex", &cs, &err);
	ck_ok(r, err);
	r = eos_changeset_put_file_mem(cs, "old", &a, "file\n", 5, &err);
	ck_ok(r, err);
	stage_node(cs, "p", EOS_KIND_FIFO, 0640, 0, 0);
	stage_node(cs, "c", EOS_KIND_CHR, 0640, 1, 3);
	stage_node(cs, "b", EOS_KIND_BLK, 0660, 7, 0);
	commit(cs);
}

static int
export_to(enum eos_export_format f, const char *dest, struct eos_export_result *res,
	  struct eos_error *err)
{
	cleanup_close int fd = dest ? -1 : open("/dev/null", O_WRONLY | O_CLOEXEC);
	struct eos_export_options o = { .sandbox = "ex", .format = f, .dest = dest, .fd = fd };

	return eos_store_export(fx.st, &o, res, err);
}

/* Every member of the tar at path: "name type perm major:minor;" in archive order. */
static void
tar_listing(const char *path, char *out, size_t size)
{
	EOS_CLEANUP(eos_archive_reader_freep) struct eos_archive_reader *rd = NULL;
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct eos_archive_entry e;
	struct eos_error err = { 0 };
	size_t len = 0;
	int r = fd >= 0 ? eos_archive_reader_open(fd, 1 << 16, &rd, &err) : -EIO;

	ck_ok(r, err);
	out[0] = '\0';
	while ((r = eos_archive_reader_next(rd, &e, &err)) > 0) {
		len += (size_t)snprintf(out + len, size - len, "%s %d %04o %u:%u;", e.path, e.type,
					e.perm, major(e.rdev), minor(e.rdev));
		ck_assert_uint_lt(len, size);
	}
	ck_ok(r, err);
}

static void
host_node_is(const char *dir, const char *name, uint32_t mode, uint64_t rdev)
{
	cleanup_free char *path = pjoin(dir, name);
	struct stat st;

	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert_msg(st.st_mode == mode, "mode of '%s' is %06o", name, st.st_mode);
	ck_assert_msg(st.st_rdev == rdev, "rdev of '%s' is %u:%u", name, major(st.st_rdev),
		      minor(st.st_rdev));
}

START_TEST(test_export)
{
	cleanup_free char *work = eos_test_tmpdir("nodes-export"), *want = NULL;
	cleanup_free char *dest = pjoin(work, "dest"), *tar = pjoin(work, "x.tar");
	cleanup_free char *old = pjoin(dest, "old"), *keep = pjoin(dest, "keep");
	struct eos_export_result res = { 0 };
	struct eos_error err = { 0 };
	char listing[1024];
	int r;

	export_history();
	r = export_to(EOS_EXPORT_TAR, tar, &res, &err);
	ck_ok(r, err);
	ck_assert_uint_eq(res.specials, 3);
	tar_listing(tar, listing, sizeof(listing));
	ck_assert(asprintf(&want,
			   "./ %d 0755 0:0;b %d 0660 7:0;c %d 0640 1:3;.wh.old %d 0000 0:0;"
			   "old %d 0644 0:0;p %d 0640 0:0;",
			   EOS_ARCHIVE_DIR, EOS_ARCHIVE_BLOCK, EOS_ARCHIVE_CHAR, EOS_ARCHIVE_FILE,
			   EOS_ARCHIVE_FILE, EOS_ARCHIVE_FIFO) > 0);
	ck_assert_str_eq(listing, want);

	/* dir: onto a checkout of L1; devices only where the exporting user may create them */
	ck_assert_int_eq(mkdir(dest, 0755), 0);
	ck_assert_int_eq(mkfifo(old, 0644), 0);
	eos_test_write_file(keep, "keep\n", 5, 0644);
	r = export_to(EOS_EXPORT_DIR, dest, &res, &err);
	if (geteuid() == 0) {
		ck_ok(r, err);
		host_node_is(dest, "b", S_IFBLK | 0660, makedev(7, 0));
		host_node_is(dest, "c", S_IFCHR | 0640, makedev(1, 3));
		host_node_is(dest, "p", S_IFIFO | 0640, 0);
		host_node_is(dest, "old", S_IFREG | 0644, 0);
	} else {
		ck_assert_int_eq(r, -EPERM);
		ck_assert_msg(strstr(err.msg, "create block device 'b'"), "%s", err.msg);
		host_node_is(dest, "old", S_IFIFO | 0644, 0); /* the destination is untouched */
	}

	/* a patch cannot hold them */
	r = export_to(EOS_EXPORT_PATCH, NULL, &res, &err);
	ck_assert_int_eq(r, -EINVAL);
	ck_assert_msg(strstr(err.msg, "'b' is a block device"), "%s", err.msg);
	eos_test_rm_rf(work);
}
END_TEST

START_TEST(test_blame_refuses_nodes)
{
	struct eos_blame_range *ranges = NULL;
	struct eos_error err = { 0 };
	size_t n = 0;

	export_history();
	ck_assert_int_eq(eos_store_blame(fx.st, "ex", 0, "p", &ranges, &n, &err), -EINVAL);
	ck_assert_msg(strstr(err.msg, "'p' is a fifo, not a file"), "%s", err.msg);
	ck_assert_int_eq(eos_store_blame(fx.st, "ex", 0, "c", &ranges, &n, &err), -EINVAL);
	ck_assert_msg(strstr(err.msg, "'c' is a character device, not a file"), "%s", err.msg);
	ck_assert_int_eq(eos_store_blame(fx.st, "ex", 0, "old", &ranges, &n, &err), 0);
	free(ranges);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("nodes");
	TCase *tc = tcase_create("nodes");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_import_tar);
	tcase_add_test(tc, test_import_dir);
	tcase_add_test(tc, test_view_nodes);
	tcase_add_test(tc, test_view_node_format_1);
	tcase_add_test(tc, test_publish_conflicts);
	tcase_add_test(tc, test_publish_merges);
	tcase_add_test(tc, test_export);
	tcase_add_test(tc, test_blame_refuses_nodes);
	suite_add_tcase(s, tc);
	return eos_test_run(s);
}
