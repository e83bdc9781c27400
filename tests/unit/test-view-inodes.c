/* SPDX-License-Identifier: MIT */
/*
 * Inode numbers of the session view without FUSE (doc/fs.md, "Inode numbers"): a lower file's
 * number derives from its identity, so it is the same after the kernel forgot the node, after a
 * remount, in another session of the sandbox and after a publish; nothing per looked-up file is
 * kept once the kernel forgot it; a number taken by another identity is remapped while needed.
 * A looked-up lower file is one small allocation (doc/fs.md, "Memory").
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"

#include "fs/view-internal.h"
#include "fs/view.h"
#include "store/store.h"
#include "tests/unit/testutil.h"
#include "tests/unit/view-util.h"

enum {
	MANY = 2000, /* lower files under many/ */
};

static const char SBX[] = "sbx";

static struct eos_test_fixture fx;

#define ck_ok(r, err) \
	ck_assert_msg((r) >= 0, "line %d: %s", __LINE__, eos_error_message(&(err), (r)))

static void
src_file(const char *src, const char *rel, const char *text)
{
	cleanup_free char *path = NULL;

	ck_assert_int_ge(asprintf(&path, "%s/%s", src, rel), 0);
	eos_test_write_file(path, text, strlen(text), 0644);
}

static void
setup(void)
{
	cleanup_free char *src = eos_test_tmpdir("inodes-src"), *a = NULL, *b = NULL;
	struct eos_import_options io = { .sandbox = SBX, .threads = 1 };
	struct eos_import_result ir;
	struct eos_error err = { 0 };
	char rel[64];
	int r;

	fx = eos_test_fixture_open();
	src_file(src, "a.txt", "a");
	src_file(src, "dir/sub/y.txt", "y");
	src_file(src, "dir/f1", "1");
	src_file(src, "dir/f2", "2");
	src_file(src, "links/one", "linked");
	ck_assert_int_ge(asprintf(&a, "%s/links/one", src), 0);
	ck_assert_int_ge(asprintf(&b, "%s/links/two", src), 0);
	ck_assert_int_eq(link(a, b), 0);
	for (unsigned i = 0; i < MANY; i++) {
		snprintf(rel, sizeof(rel), "many/f%u", i);
		src_file(src, rel, "x");
	}
	r = eos_store_import(fx.st, src, &io, &ir, &err);
	ck_ok(r, err);
	eos_test_rm_rf(src);
}

static void
teardown(void)
{
	eos_test_fixture_close(&fx);
}

static struct eos_view *
view_open(const char *session)
{
	struct eos_view_options o = {
		.store = fx.st, .sandbox = SBX, .session = session, .create = true
	};
	struct eos_error err = { 0 };
	struct eos_view *v = NULL;
	int r = eos_view_open(&o, &v, &err);

	ck_ok(r, err);
	return v;
}

static uint64_t
ino_of(struct eos_view *v, const char *path)
{
	return tv_lookup(v, path)->ino;
}

/* The live entries of the view's remap table. */
static size_t
remaps(struct eos_view *v)
{
	size_t n = 0;

	for (size_t i = 0; i < EOS_TABLE_SHARDS; i++)
		for (struct eos_hashmap_iter it = { 0 };
		     eos_hashmap_next(&v->idshards[i].ids, &it);)
			n += it.value->u64 != 0;
	ck_assert_uint_eq(n, atomic_load(&v->remapped));
	return n;
}

static size_t
nodes(struct eos_view *v)
{
	size_t n = 0;

	for (size_t i = 0; i < EOS_TABLE_SHARDS; i++)
		n += v->shards[i].count;
	return n;
}

/* A lower file keeps its number across remounts, sessions and publishes; hard links share one. */
START_TEST(test_numbers_stable)
{
	static const char *const paths[] = { "a.txt", "dir", "dir/sub/y.txt", "links/one" };
	struct eos_view *v = view_open("s1");
	struct eos_publish_result pr = { 0 };
	struct eos_error err = { 0 };
	uint64_t first[4], made;
	int r;

	for (size_t i = 0; i < 4; i++) {
		first[i] = ino_of(v, paths[i]);
		ck_assert_uint_ne(first[i] & EOS_INO_DERIVED, 0);
	}
	ck_assert_uint_eq(ino_of(v, "links/two"), first[3]);
	ck_assert_uint_eq(first[0], eos_ino_derived("a.txt", 0));
	/* a copy-up (chmod) keeps the number; a new file's comes from the counter */
	struct stat attr = { .st_mode = 0600 };
	struct stat out;
	ck_rc(eos_fs_setattr(v, tv_lookup(v, "dir/sub/y.txt"), &attr, EOS_SET_MODE, &out), 0);
	made = tv_make(v, "dir", "new.txt", S_IFREG | 0644, NULL)->ino;
	ck_assert_uint_eq(made & EOS_INO_DERIVED, 0);
	eos_view_close(v);

	v = view_open("s1"); /* a remount */
	for (size_t i = 0; i < 4; i++)
		ck_assert_uint_eq(ino_of(v, paths[i]), first[i]);
	ck_assert_uint_eq(ino_of(v, "dir/new.txt"), made);
	eos_view_close(v);

	v = view_open("s2"); /* another session */
	for (size_t i = 0; i < 4; i++)
		ck_assert_uint_eq(ino_of(v, paths[i]), first[i]);
	ck_assert_uint_eq(ino_of(v, "links/two"), first[3]);
	eos_view_close(v);

	r = eos_view_publish(fx.st, SBX, "s1", NULL, &pr, &err);
	ck_ok(r, err);
	ck_assert_int_eq(pr.status, EOS_PUBLISH_PUBLISHED);
	eos_publish_result_release(&pr);
	v = view_open("s3"); /* a session of the new head */
	for (size_t i = 0; i < 4; i++)
		ck_assert_uint_eq(ino_of(v, paths[i]), first[i]);
	ck_assert_uint_eq(ino_of(v, "dir/new.txt"), eos_ino_derived("dir/new.txt", 0));
	ck_assert_uint_eq(remaps(v), 0);
	eos_view_close(v);
}
END_TEST

/* Forgotten lower nodes leave nothing behind, and come back under the same number. */
START_TEST(test_forget_releases)
{
	struct eos_view *v = view_open("s1");
	struct eos_node *many = tv_lookup(v, "many");
	size_t before = nodes(v);
	char name[32];
	uint64_t ino;

	for (int pass = 0; pass < 2; pass++) {
		for (unsigned i = 0; i < MANY; i++) {
			struct eos_node *n;

			snprintf(name, sizeof(name), "f%u", i);
			ck_rc(eos_fs_lookup(v, many, name, &n), 0);
			snprintf(name, sizeof(name), "many/f%u", i);
			ck_assert_uint_eq(n->ino, eos_ino_derived(name, 0));
		}
		ck_assert_uint_eq(nodes(v), before + MANY);
		for (unsigned i = 0; i < MANY; i++) {
			snprintf(name, sizeof(name), "many/f%u", i);
			eos_node_forget(v, eos_ino_derived(name, 0), 1);
		}
		ck_assert_uint_eq(nodes(v), before);
		ck_assert_uint_eq(remaps(v), 0);
	}
	ino = ino_of(v, "many/f7");
	ck_assert_uint_eq(ino, eos_ino_derived("many/f7", 0));
	eos_view_close(v);
}
END_TEST

/*
 * A number held by another identity's node (a hash collision, made here by hand): the lookup
 * gets a number of its own, remapped while its node lives; once both are forgotten the file
 * gets its derived number again.
 */
START_TEST(test_collision_remapped)
{
	struct eos_view *v = view_open("s1");
	uint64_t derived = eos_ino_derived("a.txt", 0), got, listed;
	struct eos_node *squatter = eos_node_new(derived), *n;
	struct eos_dir_snapshot snap = { 0 };

	ck_assert_ptr_nonnull(squatter);
	squatter->mode = S_IFREG | 0644;
	ck_rc(eos_node_set_lower(squatter, "elsewhere.txt"), 0);
	eos_node_set_name(squatter, strdup("elsewhere.txt"));
	eos_node_set_parent(squatter, EOS_ROOT_INO);
	squatter->nlookup = 1;
	ck_rc(eos_node_insert(v, squatter), 0);

	ck_rc(eos_fs_lookup(v, tv_root(v), "a.txt", &n), 0);
	got = n->ino;
	ck_assert_uint_ne(got, derived);
	ck_assert_uint_eq(got & EOS_INO_DERIVED, 0);
	ck_assert_uint_eq(remaps(v), 1);
	/* a second lookup, and the listing, find the remapped number */
	ck_assert_uint_eq(ino_of(v, "a.txt"), got);
	eos_node_lock(tv_root(v));
	ck_rc(eos_dir_snapshot(v, tv_root(v), &snap), 0);
	eos_node_unlock(tv_root(v));
	listed = 0;
	for (size_t i = 0; i < snap.n; i++)
		if (strcmp(snap.v[i].name, "a.txt") == 0)
			listed = snap.v[i].ino;
	eos_dir_snapshot_release(&snap);
	ck_assert_uint_eq(listed, got);

	eos_node_forget(v, got, 2);
	ck_assert_uint_eq(remaps(v), 0);
	eos_node_forget(v, derived, 1); /* the squatter, a lower node, is freed */
	ck_assert_uint_eq(ino_of(v, "a.txt"), derived);
	eos_view_close(v);
}
END_TEST

/* Read dir's listing from off to its end: the names, in order, into names (NUL-separated). */
static uint64_t
read_listing(struct eos_view *v, struct eos_node *dir, uint64_t off, char *names, size_t size)
{
	size_t used = 0;

	for (;;) {
		struct eos_dir_snapshot batch = { 0 };

		ck_rc(eos_dirlist_read(v, dir, off, 100, &batch), 0);
		if (batch.n == 0)
			break;
		for (size_t i = 0; i < batch.n; i++) {
			size_t len = strlen(batch.v[i].name) + 1;

			ck_assert_uint_lt(used + len, size);
			memcpy(names + used, batch.v[i].name, len);
			used += len;
			off = batch.v[i].cookie;
		}
		eos_dir_snapshot_release(&batch);
	}
	names[used] = 0;
	return off;
}

/*
 * A listing read to its end is dropped (a walk keeps none); a change of the directory takes it
 * again first, so an offset handed out before still resumes after the names already read, and
 * the directory's link count stays right.
 */
START_TEST(test_listing_dropped)
{
	struct eos_view *v = view_open("s1");
	struct eos_node *dir = tv_lookup(v, "dir");
	static char all[65536], rest[65536];
	struct eos_dir_snapshot first = { 0 };
	struct stat st;
	uint64_t mid;

	read_listing(v, dir, 0, all, sizeof(all));
	ck_assert_ptr_null(dir->x->list);
	ck_rc(eos_dirlist_read(v, dir, 0, 1, &first), 0); /* a reader stops after one name */
	ck_assert_uint_eq(first.n, 1);
	mid = first.v[0].cookie;
	eos_dir_snapshot_release(&first);
	read_listing(v, dir, 0, all, sizeof(all)); /* another reads to the end: dropped */
	ck_assert_ptr_null(dir->x->list);
	ck_rc(eos_fs_getattr(v, dir, &st), 0);
	ck_assert_uint_eq(st.st_nlink, 3); /* dir/sub */
	tv_make(v, "dir", "a-new-dir", S_IFDIR | 0755, NULL);
	ck_rc(eos_fs_getattr(v, dir, &st), 0);
	ck_assert_uint_eq(st.st_nlink, 4);
	read_listing(v, dir, mid, rest, sizeof(rest));
	/* the first reader goes on: the names after the one it read, each once, then the new one */
	ck_assert_str_eq(all, "f1");
	ck_assert_str_eq(all + 3, "f2");
	ck_assert_str_eq(all + 6, "sub");
	ck_assert_str_eq(rest, "f2");
	ck_assert_str_eq(rest + 3, "sub");
	ck_assert_str_eq(rest + 7, "a-new-dir");
	ck_assert_str_eq(rest + 17, "");
	eos_view_close(v);
}
END_TEST

/*
 * A change that keeps every name's inode and type (a chmod of a lower file copies its metadata
 * up in place) does not take a dropped listing again: listings are in name order, so one taken
 * after it gives every name the cookie it had, and an offset handed out before still resumes
 * after the names already read.
 */
START_TEST(test_listing_kept_by_copyup)
{
	struct eos_view *v = view_open("s1");
	struct eos_node *dir = tv_lookup(v, "dir");
	static char all[65536], rest[65536];
	struct eos_dir_snapshot first = { 0 };
	struct stat attr = { .st_mode = S_IFREG | 0600 }, out;
	uint64_t mid;

	ck_rc(eos_dirlist_read(v, dir, 0, 1, &first), 0); /* a reader stops after one name */
	ck_assert_uint_eq(first.n, 1);
	ck_assert_str_eq(first.v[0].name, "f1");
	mid = first.v[0].cookie;
	eos_dir_snapshot_release(&first);
	read_listing(v, dir, 0, all, sizeof(all)); /* another reads to the end: dropped */
	ck_assert_ptr_null(dir->x->list);
	ck_rc(eos_fs_setattr(v, tv_lookup(v, "dir/f2"), &attr, EOS_SET_MODE, &out), 0);
	ck_assert_ptr_null(dir->x->list); /* not taken again */
	read_listing(v, dir, mid, rest, sizeof(rest));
	ck_assert_str_eq(rest, "f2"); /* f2, now upper, keeps its place */
	ck_assert_str_eq(rest + 3, "sub");
	ck_assert_str_eq(rest + 7, "");
	read_listing(v, dir, 0, all, sizeof(all));
	ck_assert_str_eq(all, "f1");
	ck_assert_str_eq(all + 3, "f2");
	ck_assert_str_eq(all + 6, "sub");
	eos_view_close(v);
}
END_TEST

/*
 * A looked-up lower file is one allocation (doc/fs.md, "Memory"): no extension until something
 * needs one (an open, its xattrs, a change), and none for the kernel's questions about
 * attributes it has not got; a directory, a hard-linked file has one from the start.
 */
START_TEST(test_lower_file_unextended)
{
	struct eos_view *v = view_open("s1");
	struct eos_node *f = tv_lookup(v, "dir/f1"), *link = tv_lookup(v, "links/one");
	struct eos_ctx ctx = tv_ctx_of(getpid());
	struct eos_handle *h = NULL;
	char buf[16];
	struct stat st;

	struct eos_node *dir = tv_lookup(v, "dir"), *f2 = tv_lookup(v, "dir/f2");
	struct eos_odir *odir = eos_node_odir(f);
	char path[EOS_LOWER_BUF];

	ck_assert(!eos_node_extended(f));
	/* it keeps its name; its directory's origin is shared with its siblings */
	ck_assert_uint_le(offsetof(struct eos_node, path), 64);
	ck_assert_str_eq(f->path, "f1");
	ck_assert_str_eq(eos_node_lower(f, path), "dir/f1");
	ck_assert(eos_node_origin_is(f, "dir/f1"));
	ck_assert(!eos_node_origin_is(f, "dir/f"));
	ck_assert(!eos_node_origin_is(f, "dirf1"));
	ck_assert_str_eq(eos_node_name(f), "f1");
	ck_assert_uint_eq(eos_node_parent(f), dir->ino);
	ck_assert_ptr_nonnull(odir);
	ck_assert_ptr_eq(eos_node_odir(f2), odir);
	ck_assert_str_eq(odir->path, "dir");
	/* it knows the directory's entry, so that f1's is one lookup below it */
	ck_assert_uint_eq(odir->version, v->version);
	ck_assert_uint_eq(odir->floor, dir->x->lst->floor);
	ck_assert(eos_node_extended(dir));
	ck_assert(eos_node_extended(link));
	ck_assert_uint_eq(link->nlink, 2);
	ck_rc(eos_fs_getattr(v, f, &st), 0);
	ck_assert_uint_eq(st.st_size, 1);
	ck_assert(st.st_mtim.tv_sec == st.st_ctim.tv_sec && st.st_atim.tv_sec == st.st_ctim.tv_sec);
	ck_assert_int_eq(eos_xattr_get(v, f, "security.capability", NULL, 0), -ENODATA);
	ck_assert_int_eq(eos_xattr_list(v, f, NULL, 0), 0);
	ck_assert(!eos_node_extended(f));
	ck_rc(eos_fs_open(v, &ctx, f, O_RDONLY, &h), 0);
	ck_assert(eos_node_extended(f));
	/* the extension takes the directory's reference over */
	ck_assert_ptr_eq(eos_node_odir(f), odir);
	ck_assert_str_eq(eos_node_lower(f, path), "dir/f1");
	ck_assert_uint_eq(eos_node_parent(f), dir->ino);
	ck_assert_int_eq(eos_fs_read(v, h, buf, sizeof(buf), 0), 1);
	ck_assert_int_eq(buf[0], '1');
	ck_rc(eos_fs_release(v, h), 0);
	eos_view_close(v);
}
END_TEST

/*
 * A looked-up file keeps its directory's origin path alive (struct eos_odir): the directory's
 * node may be forgotten first, renamed, and looked up again, and the file still reads its
 * origin, is found again by its identity, and gets its own name and parent once renamed.
 */
START_TEST(test_origin_outlives_directory)
{
	struct eos_view *v = view_open("s1");
	struct eos_node *root = tv_root(v), *dir = tv_lookup(v, "dir"), *sub, *y, *again;
	char path[EOS_LOWER_BUF], buf[16];
	uint64_t sub_ino;

	ck_rc(eos_fs_lookup(v, dir, "sub", &sub), 0);
	ck_rc(eos_fs_lookup(v, sub, "y.txt", &y), 0);
	sub_ino = sub->ino;
	ck_assert(!eos_node_extended(y));
	ck_assert_ptr_eq(eos_node_odir(y), sub->x->kids);
	/* the kernel forgets the directory first: its node goes, its path stays with y */
	eos_node_forget(v, sub_ino, sub->nlookup);
	ck_assert_ptr_null(eos_node_get(v, sub_ino));
	ck_assert_str_eq(eos_node_lower(y, path), "dir/sub/y.txt");
	ck_assert_uint_eq(eos_node_parent(y), sub_ino);
	/* looked up again, the directory's new node finds the same file node */
	ck_rc(eos_fs_lookup(v, dir, "sub", &sub), 0);
	ck_assert_uint_eq(sub->ino, sub_ino);
	ck_rc(eos_fs_lookup(v, sub, "y.txt", &again), 0);
	ck_assert_ptr_eq(again, y);
	ck_assert_str_eq(tv_read_all(v, "dir/sub/y.txt", buf, sizeof(buf)), "y");
	/* a renamed directory keeps its origin, and so do the files below it */
	ck_rc(eos_fs_rename(v, dir, "sub", root, "moved", 0), 0);
	ck_assert_str_eq(tv_read_all(v, "moved/y.txt", buf, sizeof(buf)), "y");
	ck_assert_ptr_eq(tv_lookup(v, "moved/y.txt"), y);
	ck_assert_str_eq(eos_node_lower(y, path), "dir/sub/y.txt");
	/* a renamed file: its own name and parent, the same origin */
	ck_rc(eos_fs_rename(v, sub, "y.txt", root, "z.txt", 0), 0);
	ck_assert(eos_node_extended(y));
	ck_assert_str_eq(eos_node_name(y), "z.txt");
	ck_assert_uint_eq(eos_node_parent(y), EOS_ROOT_INO);
	ck_assert_str_eq(eos_node_lower(y, path), "dir/sub/y.txt");
	ck_assert_str_eq(tv_read_all(v, "z.txt", buf, sizeof(buf)), "y");
	eos_view_close(v);
	/* the delta recorded it: the remount shows it */
	v = view_open("s1");
	ck_assert_str_eq(tv_read_all(v, "z.txt", buf, sizeof(buf)), "y");
	ck_assert_str_eq(tv_read_all(v, "dir/f1", buf, sizeof(buf)), "1");
	ck_assert_int_eq(eos_fs_lookup(v, tv_lookup(v, "moved"), "y.txt", &again), -ENOENT);
	eos_view_close(v);
}
END_TEST

/*
 * A listing hands out what it read of each lower file, and the node built from that is the one
 * a lookup builds; it keeps those attributes until a read starts past them.
 */
START_TEST(test_listed_attributes)
{
	struct eos_view *v = view_open("s1");
	struct eos_node *dir = tv_lookup(v, "dir"), *n = NULL;
	struct eos_dir_snapshot a = { 0 }, b = { 0 };
	struct stat listed, looked;
	uint64_t ino, past;

	ck_rc(eos_dirlist_read(v, dir, 0, 1, &a), 0);
	ck_assert_uint_eq(a.n, 1);
	ck_assert_str_eq(a.v[0].name, "f1");
	ck_assert_ptr_nonnull(a.v[0].lower);
	ck_rc(eos_dirlist_read(v, dir, 0, 3, &b), 0); /* again from 0: still there */
	ck_assert_uint_eq(b.n, 3);
	ck_assert_ptr_nonnull(b.v[0].lower);
	ck_assert_ptr_null(b.v[2].lower); /* sub: a directory is looked up */
	past = b.v[1].cookie;
	ck_rc(eos_fs_lookup_listed(v, dir, "f1", a.v[0].lower, &n), 0);
	ck_assert(!eos_node_extended(n));
	ck_rc(eos_fs_getattr(v, n, &listed), 0);
	ino = n->ino;
	eos_node_forget(v, ino, 1);
	n = tv_lookup(v, "dir/f1");
	ck_assert_uint_eq(n->ino, ino);
	ck_rc(eos_fs_getattr(v, n, &looked), 0);
	ck_assert_mem_eq(&listed, &looked, sizeof(listed));
	eos_dir_snapshot_release(&a);
	eos_dir_snapshot_release(&b);
	ck_rc(eos_dirlist_read(v, dir, past, 3, &a), 0); /* the kernel has f1 and f2 */
	ck_assert_uint_eq(a.n, 1);
	eos_dir_snapshot_release(&a);
	ck_rc(eos_dirlist_read(v, dir, 0, 3, &a), 0); /* a reader going back looks them up */
	ck_assert_uint_eq(a.n, 3);
	ck_assert_ptr_null(a.v[0].lower);
	ck_assert_ptr_null(a.v[1].lower);
	eos_dir_snapshot_release(&a);
	eos_view_close(v);
}
END_TEST

static Suite *
inodes_suite(void)
{
	Suite *s = suite_create("view-inodes");
	TCase *tc = tcase_create("inodes");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_numbers_stable);
	tcase_add_test(tc, test_forget_releases);
	tcase_add_test(tc, test_collision_remapped);
	tcase_add_test(tc, test_listing_dropped);
	tcase_add_test(tc, test_listing_kept_by_copyup);
	tcase_add_test(tc, test_lower_file_unextended);
	tcase_add_test(tc, test_origin_outlives_directory);
	tcase_add_test(tc, test_listed_attributes);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return eos_test_run(inodes_suite());
}
