/* SPDX-License-Identifier: MIT */
/*
 * The write journal (fs/journal.c): a child process opens the store and a session view, makes
 * changes through the view's operations and is SIGKILLed before it closes anything; the parent
 * reopens the store and the session and finds every acknowledged change — new files, open files,
 * whole and partial copy-ups, truncations, write logs — across journal rotations, while torn
 * tails and the journals of an earlier incarnation of the session are never replayed. Changes
 * of an upper node's mode, owner and times are journaled too, without a store write.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/failpoint.h"

#include "fs/view-internal.h"
#include "fs/view.h"
#include "store/store.h"
#include "tests/unit/testutil.h"
#include "tests/unit/view-util.h"

enum {
	BIG_SIZE = 3 * 1024 * 1024, /* copied up partially (EOS_PARTIAL_MIN) */
	SMALL_LINES = 64,
	ROTATE_WRITES = 70000, /* more records than one journal generation holds */
};

static const char SBX[] = "sbx";
static const char OP[] = "operation:op-1";
static const char SELF[] = "workspace_session:s1";
static char *store_dir;
static char big[BIG_SIZE];

#define ck_ok(r, err) \
	ck_assert_msg((r) >= 0, "line %d: %s", __LINE__, eos_error_message(&(err), (r)))

static int
resolve(void *ctx, pid_t pid, char *out, size_t size)
{
	(void)ctx;
	if (pid != PID_OP)
		return -ENOENT;
	snprintf(out, size, "%s", OP);
	return 0;
}

static struct eos_store *
store_open(void)
{
	struct eos_error err = { 0 };
	struct eos_store *st = NULL;
	int r = eos_store_open(store_dir, NULL, &st, &err);

	ck_ok(r, err);
	return st;
}

static struct eos_view *
view_open(struct eos_store *st)
{
	struct eos_view_options o = {
		.store = st, .sandbox = SBX, .session = "s1", .create = true, .resolve = resolve
	};
	struct eos_error err = { 0 };
	struct eos_view *v = NULL;
	int r = eos_view_open(&o, &v, &err);

	ck_ok(r, err);
	return v;
}

static void
setup(void)
{
	cleanup_free char *src = eos_test_tmpdir("journal-src"), *path = NULL;
	struct eos_import_options io = { .sandbox = SBX, .threads = 1 };
	struct eos_error err = { 0 };
	struct eos_import_result ir;
	char lines[SMALL_LINES * 16 + 1];
	struct eos_store *st = eos_test_store_new(&store_dir);
	int r;

	for (int i = 0; i < SMALL_LINES; i++)
		snprintf(lines + 16 * i, 17, "orig line %05d\n", i);
	ck_assert_int_ge(asprintf(&path, "%s/small.txt", src), 0);
	eos_test_write_file(path, lines, strlen(lines), 0644);
	free(path);
	eos_test_fill_random(big, sizeof(big), 7);
	ck_assert_int_ge(asprintf(&path, "%s/big.bin", src), 0);
	eos_test_write_file(path, big, sizeof(big), 0644);
	r = eos_store_import(st, src, &io, &ir, &err);
	ck_ok(r, err);
	eos_store_close(st);
	eos_test_rm_rf(src);
}

static void
teardown(void)
{
	eos_test_rm_rf(store_dir);
	free(store_dir);
}

/* Run fn(view) in a child that is SIGKILLed right after: nothing is closed or flushed. */
static void
crash_after(void (*fn)(struct eos_view *v))
{
	pid_t pid = fork();
	int status;

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct eos_store *st = store_open();

		fn(view_open(st));
		kill(getpid(), SIGKILL);
		_exit(1);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		      "the child ended with status %d instead of being killed", status);
}

static struct eos_handle *
open_as(struct eos_view *v, const char *path, pid_t pid, int flags)
{
	struct eos_ctx c = tv_ctx_of(pid);
	struct eos_handle *h = NULL;
	int r = eos_fs_open(v, &c, tv_lookup(v, path), flags, &h);

	ck_assert_msg(r == 0, "open '%s': %s", path, strerror(-r));
	return h;
}

static void
write_h(struct eos_view *v, struct eos_handle *h, const void *buf, size_t len, uint64_t off)
{
	ck_rc(eos_fs_write(v, h, buf, len, off), len);
}

/* The bytes of path (size checked) into a malloc'd buffer. */
static char *
read_n(struct eos_view *v, const char *path, size_t size)
{
	struct eos_handle *h = open_as(v, path, PID_SESSION, O_RDONLY);
	char *buf = malloc(size + 1);
	struct stat st;
	ssize_t n;

	ck_assert_ptr_nonnull(buf);
	ck_rc(eos_fs_getattr(v, tv_lookup(v, path), &st), 0);
	ck_assert_msg((size_t)st.st_size == size, "'%s' has %lld bytes, want %zu", path,
		      (long long)st.st_size, size);
	n = eos_fs_read(v, h, buf, size + 1, 0);
	ck_assert_msg(n == (ssize_t)size, "read '%s': %zd of %zu bytes", path, n, size);
	ck_rc(eos_fs_release(v, h), 0);
	return buf;
}

/* The owner of byte off of path's write log ("" when no range covers it). */
static const char *
owner_at(struct eos_view *v, const char *path, uint64_t off)
{
	struct eos_node *n = tv_lookup(v, path);

	for (size_t i = 0; i < n->x->log.n; i++)
		if (n->x->log.v[i].start <= off && off < n->x->log.v[i].end)
			return eos_opstable_name(&v->ops, n->x->log.v[i].op);
	return "";
}

/* --- scenarios -------------------------------------------------------------------------------- */

static void
new_files(struct eos_view *v)
{
	struct eos_handle *h;

	tv_make(v, "", "closed.txt", S_IFREG | 0640, NULL);
	tv_write_at(v, "closed.txt", PID_OP, 0, "closed and released\n");
	tv_make(v, "", "open.txt", S_IFREG | 0600, NULL);
	h = open_as(v, "open.txt", PID_SESSION, O_WRONLY);
	write_h(v, h, "first\n", 6, 0);
	write_h(v, h, "second\n", 7, 6); /* never released */
	tv_make(v, "", "empty.txt", S_IFREG | 0644, NULL);
}

START_TEST(test_new_files)
{
	struct eos_store *st;
	struct eos_view *v;
	cleanup_free char *a = NULL, *b = NULL;

	crash_after(new_files);
	st = store_open();
	v = view_open(st);
	a = read_n(v, "closed.txt", 20);
	ck_assert_mem_eq(a, "closed and released\n", 20);
	ck_assert_str_eq(owner_at(v, "closed.txt", 0), OP);
	b = read_n(v, "open.txt", 13);
	ck_assert_mem_eq(b, "first\nsecond\n", 13);
	ck_assert_str_eq(owner_at(v, "open.txt", 12), SELF);
	free(read_n(v, "empty.txt", 0));
	ck_assert_uint_eq(tv_lookup(v, "closed.txt")->mode, S_IFREG | 0640);
	eos_view_close(v);
	eos_store_close(st);
}
END_TEST

static void
copyups(struct eos_view *v)
{
	struct eos_handle *h = open_as(v, "big.bin", PID_OP, O_RDWR);

	tv_write_at(v, "small.txt", PID_OP, 16 * 3, "new! line 00003\n");
	write_h(v, h, "MIDDLE", 6, BIG_SIZE / 2);
	write_h(v, h, "END", 3, BIG_SIZE); /* extends it, still open */
}

START_TEST(test_copyups)
{
	struct eos_store *st;
	struct eos_view *v;
	cleanup_free char *s = NULL, *b = NULL;

	crash_after(copyups);
	st = store_open();
	v = view_open(st);
	s = read_n(v, "small.txt", SMALL_LINES * 16);
	ck_assert_mem_eq(s + 16 * 3, "new! line 00003\n", 16);
	ck_assert_mem_eq(s + 16 * 4, "orig line 00004\n", 16);
	ck_assert_str_eq(owner_at(v, "small.txt", 16 * 3), OP);
	ck_assert_str_eq(owner_at(v, "small.txt", 0), "");
	b = read_n(v, "big.bin", BIG_SIZE + 3);
	ck_assert_mem_eq(b, big, BIG_SIZE / 2);
	ck_assert_mem_eq(b + BIG_SIZE / 2, "MIDDLE", 6);
	ck_assert_mem_eq(b + BIG_SIZE / 2 + 6, big + BIG_SIZE / 2 + 6, BIG_SIZE / 2 - 6);
	ck_assert_mem_eq(b + BIG_SIZE, "END", 3);
	ck_assert(tv_lookup(v, "big.bin")->flags & EOS_NODE_PARTIAL);
	eos_view_close(v);
	eos_store_close(st);
}
END_TEST

static void
truncations(struct eos_view *v)
{
	struct eos_handle *h = open_as(v, "big.bin", PID_SESSION, O_WRONLY | O_TRUNC);
	struct stat attr = { .st_size = 100 }, out;

	write_h(v, h, "after O_TRUNC", 13, 0);
	ck_rc(eos_fs_setattr(v, tv_lookup(v, "small.txt"), &attr, EOS_SET_SIZE, &out), 0);
}

START_TEST(test_truncations)
{
	struct eos_store *st;
	struct eos_view *v;
	cleanup_free char *b = NULL, *s = NULL;

	crash_after(truncations);
	st = store_open();
	v = view_open(st);
	b = read_n(v, "big.bin", 13);
	ck_assert_mem_eq(b, "after O_TRUNC", 13);
	s = read_n(v, "small.txt", 100);
	ck_assert_mem_eq(s, "orig line 00000\n", 16);
	eos_view_close(v);
	eos_store_close(st);
}
END_TEST

static void
set_attrs(struct eos_view *v, const char *path, const struct stat *attr, unsigned valid)
{
	struct stat out;

	ck_rc(eos_fs_setattr(v, tv_lookup(v, path), attr, valid, &out), 0);
}

/* Truncations as the kernel asks for them (the size alone): journaled, not written. */
static void
truncate_now(struct eos_view *v, const char *path, uint64_t size)
{
	struct stat attr = { .st_size = (off_t)size };

	set_attrs(v, path, &attr, EOS_SET_SIZE);
	ck_assert_uint_eq(tv_lookup(v, path)->size, size);
}

static void
truncations_now(struct eos_view *v)
{
	struct eos_handle *h = open_as(v, "big.bin", PID_OP, O_RDWR);
	unsigned hits;

	/* lower files: the copy-up of the metadata is a store write, the truncation a record */
	truncate_now(v, "big.bin", BIG_SIZE / 2); /* a partial copy-up */
	write_h(v, h, "MID", 3, 1000);
	truncate_now(v, "small.txt", 0); /* an empty data file */
	tv_write_at(v, "small.txt", PID_OP, 0, "fresh");
	tv_make(v, "", "t.txt", S_IFREG | 0644, NULL);
	tv_write_at(v, "t.txt", PID_OP, 0, "0123456789abcdefghij0123456789abcdefghij");
	hits = EOS_FAILPOINTS_COMPILED ? eos_failpoint_hits("kv.batch_write") : 0;
	truncate_now(v, "t.txt", 10);
	tv_write_at(v, "t.txt", PID_SESSION, 20, "Z");
	if (EOS_FAILPOINTS_COMPILED)
		ck_assert_uint_eq(eos_failpoint_hits("kv.batch_write"), hits);
}

START_TEST(test_truncations_journaled)
{
	static const char zeros[10];
	struct eos_store *st;
	struct eos_view *v;
	cleanup_free char *b = NULL, *s = NULL, *t = NULL;

	crash_after(truncations_now);
	st = store_open();
	v = view_open(st);
	b = read_n(v, "big.bin", BIG_SIZE / 2);
	ck_assert_mem_eq(b, big, 1000);
	ck_assert_mem_eq(b + 1000, "MID", 3);
	ck_assert_mem_eq(b + 1003, big + 1003, BIG_SIZE / 2 - 1003);
	ck_assert(tv_lookup(v, "big.bin")->flags & EOS_NODE_PARTIAL);
	s = read_n(v, "small.txt", 5);
	ck_assert_mem_eq(s, "fresh", 5);
	ck_assert_str_eq(owner_at(v, "small.txt", 4), OP);
	t = read_n(v, "t.txt", 21);
	ck_assert_mem_eq(t, "0123456789", 10);
	ck_assert_mem_eq(t + 10, zeros, 10);
	ck_assert_mem_eq(t + 20, "Z", 1);
	ck_assert_str_eq(owner_at(v, "t.txt", 9), OP);
	ck_assert_str_eq(owner_at(v, "t.txt", 10), "");
	ck_assert_str_eq(owner_at(v, "t.txt", 20), SELF);
	ck_assert_uint_eq(tv_lookup(v, "t.txt")->x->log.n, 2);
	eos_view_close(v);
	eos_store_close(st);
}
END_TEST

/* Enough writes to rotate the journal, then more: all of them survive, one generation is left. */
static void
many_writes(struct eos_view *v)
{
	struct eos_handle *h;

	tv_make(v, "", "log.bin", S_IFREG | 0644, NULL);
	h = open_as(v, "log.bin", PID_OP, O_WRONLY);
	for (uint32_t i = 0; i < ROTATE_WRITES; i++) {
		uint32_t x = i * 2654435761u;

		write_h(v, h, &x, sizeof(x), (uint64_t)i * 8); /* gaps: one log range each */
		if (i == ROTATE_WRITES / 2) {
			eos_journal_rotate(v); /* what the flusher does when a generation is full */
			tv_write_at(v, "small.txt", PID_SESSION, 0, "rotated!");
		}
	}
}

static size_t
journal_files(void)
{
	cleanup_free char *cmd = NULL;
	char line[64];
	size_t n = 0;
	FILE *f;

	ck_assert_int_ge(
		asprintf(&cmd, "ls '%s/sessions/%s/s1' | grep -c '^journal-'", store_dir, SBX), 0);
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	if (fgets(line, sizeof(line), f))
		n = strtoul(line, NULL, 10);
	pclose(f);
	return n;
}

START_TEST(test_rotation)
{
	struct eos_store *st;
	struct eos_view *v;
	cleanup_free char *b = NULL, *s = NULL;

	crash_after(many_writes);
	ck_assert_uint_le(journal_files(), 2); /* the old generation went after its checkpoint */
	st = store_open();
	v = view_open(st);
	b = read_n(v, "log.bin", (size_t)(ROTATE_WRITES - 1) * 8 + 4);
	for (uint32_t i = 0; i < ROTATE_WRITES; i++) {
		uint32_t x = i * 2654435761u, got;

		memcpy(&got, b + (size_t)i * 8, sizeof(got));
		ck_assert_msg(got == x, "write %u of %u was lost", i, ROTATE_WRITES);
	}
	ck_assert_uint_eq(tv_lookup(v, "log.bin")->x->log.n, ROTATE_WRITES);
	s = read_n(v, "small.txt", SMALL_LINES * 16);
	ck_assert_mem_eq(s, "rotated!", 8);
	ck_assert_uint_eq(journal_files(), 1); /* replayed, checkpointed, one new generation */
	eos_view_close(v);
	ck_assert_uint_eq(journal_files(), 0);
	eos_store_close(st);
}
END_TEST

enum {
	ATTR_UID = 1234,
	ATTR_GID = 5678,
	ATTR_MTIME_S = 1500000000,
	ATTR_ATIME_S = 1400000000,
};

/* What tar does to a file it extracted, and more: none of it is a store write. */
static void
attrs(struct eos_view *v)
{
	struct stat mode = { .st_mode = 0755 }, own = { .st_uid = ATTR_UID, .st_gid = ATTR_GID };
	struct stat times = { .st_atim = { ATTR_ATIME_S, 5 }, .st_mtim = { ATTR_MTIME_S, 7 } };
	struct stat dmode = { .st_mode = 0700 }, after = { .st_mode = 0640 };
	unsigned hits;

	tv_make(v, "", "tar.txt", S_IFREG | 0600, NULL);
	tv_make(v, "", "dir", S_IFDIR | 0755, NULL);
	tv_make(v, "", "mixed.txt", S_IFREG | 0600, NULL);
	tv_write_at(v, "tar.txt", PID_OP, 0, "extracted\n");
	hits = EOS_FAILPOINTS_COMPILED ? eos_failpoint_hits("kv.batch_write") : 0;
	set_attrs(v, "tar.txt", &own, EOS_SET_UID | EOS_SET_GID);
	set_attrs(v, "tar.txt", &mode, EOS_SET_MODE);
	set_attrs(v, "tar.txt", &times, EOS_SET_ATIME | EOS_SET_MTIME);
	set_attrs(v, "dir", &dmode, EOS_SET_MODE);
	/* a chmod, then a write: the write's record comes after and keeps the mode */
	set_attrs(v, "mixed.txt", &after, EOS_SET_MODE);
	tv_write_at(v, "mixed.txt", PID_OP, 0, "written after\n");
	if (EOS_FAILPOINTS_COMPILED)
		ck_assert_uint_eq(eos_failpoint_hits("kv.batch_write"), hits);
	/* a lower file: copied up with its first chmod (a store write), journaled at its second */
	set_attrs(v, "small.txt", &dmode, EOS_SET_MODE);
	set_attrs(v, "small.txt", &after, EOS_SET_MODE);
}

static void
check_attrs(struct eos_view *v)
{
	struct eos_node *t = tv_lookup(v, "tar.txt");
	cleanup_free char *a = read_n(v, "tar.txt", 10), *m = read_n(v, "mixed.txt", 14);

	ck_assert_mem_eq(a, "extracted\n", 10);
	ck_assert_uint_eq(t->mode, S_IFREG | 0755);
	ck_assert_uint_eq(t->uid, ATTR_UID);
	ck_assert_uint_eq(t->gid, ATTR_GID);
	ck_assert_int_eq(t->mtime, (int64_t)ATTR_MTIME_S * 1000000000 + 7);
	ck_assert_int_eq(eos_node_atime(t), (int64_t)ATTR_ATIME_S * 1000000000 + 5);
	ck_assert(t->flags & EOS_NODE_META_CHANGED);
	ck_assert_uint_eq(tv_lookup(v, "dir")->mode, S_IFDIR | 0700);
	ck_assert_mem_eq(m, "written after\n", 14);
	ck_assert_uint_eq(tv_lookup(v, "mixed.txt")->mode, S_IFREG | 0640);
	ck_assert_uint_eq(tv_lookup(v, "small.txt")->mode, S_IFREG | 0640);
}

START_TEST(test_attrs)
{
	struct eos_store *st;
	struct eos_view *v;

	crash_after(attrs);
	st = store_open();
	v = view_open(st);
	check_attrs(v);
	eos_view_close(v);
	/* the replay's checkpoint wrote them as records: the same without a journal */
	ck_assert_uint_eq(journal_files(), 0);
	v = view_open(st);
	check_attrs(v);
	eos_view_close(v);
	eos_store_close(st);
}
END_TEST

enum {
	NAMES_FILES = 16000, /* their images fill more than one generation: a rotation runs */
};

static void
name_of(char *buf, size_t size, unsigned i)
{
	snprintf(buf, size, "f%05u", i);
}

/* Namespace changes of every kind: images in the journal, none of them a store write of its own. */
static void
names(struct eos_view *v)
{
	struct eos_node *root = tv_root(v);
	char name[16];

	tv_make(v, "", "d", S_IFDIR | 0755, NULL);
	tv_make(v, "d", "e", S_IFDIR | 0700, NULL);
	for (unsigned i = 0; i < NAMES_FILES; i++) {
		name_of(name, sizeof(name), i);
		tv_make(v, "d/e", name, S_IFREG | 0644, NULL);
	}
	tv_write_at(v, "d/e/f00000", PID_OP, 0, "first file\n");
	tv_make(v, "", "link", S_IFLNK | 0777, "d/e/f00000");
	ck_rc(eos_fs_link(v, tv_lookup(v, "d/e/f00001"), tv_lookup(v, "d"), "hard"), 0);
	ck_rc(eos_fs_rename(v, tv_lookup(v, "d/e"), "f00003", root, "moved", 0), 0);
	ck_rc(eos_fs_rename(v, root, "small.txt", tv_lookup(v, "d"), "small-moved", 0), 0);
	ck_rc(eos_fs_unlink(v, tv_lookup(v, "d/e"), "f00002", false), 0);
	tv_make(v, "", "gone", S_IFDIR | 0755, NULL);
	ck_rc(eos_fs_unlink(v, root, "gone", true), 0);
	ck_rc(eos_fs_unlink(v, root, "big.bin", false), 0); /* a lower file: a whiteout */
}

static bool
has(struct eos_view *v, const char *dir, const char *name)
{
	struct eos_node *c;

	return eos_fs_lookup(v, tv_lookup(v, dir), name, &c) == 0;
}

static void
check_names(struct eos_view *v)
{
	char name[16], buf[64];
	struct eos_node *hard = tv_lookup(v, "d/hard");
	cleanup_free char *target = NULL;

	for (unsigned i = 0; i < NAMES_FILES; i++) {
		name_of(name, sizeof(name), i);
		ck_assert_msg(has(v, "d/e", name) == (i != 2 && i != 3), "d/e/%s", name);
	}
	ck_assert_str_eq(tv_read_all(v, "d/e/f00000", buf, sizeof(buf)), "first file\n");
	ck_assert_uint_eq(tv_lookup(v, "d/e")->mode, S_IFDIR | 0700);
	ck_rc(eos_fs_readlink(v, tv_lookup(v, "link"), &target), 0);
	ck_assert_str_eq(target, "d/e/f00000");
	ck_assert_uint_eq(hard->nlink, 2);
	ck_assert_ptr_eq(hard, tv_lookup(v, "d/e/f00001"));
	ck_assert(has(v, "", "moved") && has(v, "d", "small-moved"));
	ck_assert(!has(v, "", "small.txt") && !has(v, "", "gone") && !has(v, "", "big.bin"));
	ck_assert_mem_eq(tv_read_all(v, "d/small-moved", buf, sizeof(buf)), "orig line 00000\n",
			 16);
}

static void
count_violation(void *ctx, const char *kind, const char *message)
{
	(void)kind;
	(*(unsigned *)ctx)++;
	fprintf(stderr, "violation: %s\n", message);
}

/* A view opened to be inspected (fsck's) sees the images over the records too. */
static void
check_inspected(struct eos_store *st)
{
	struct eos_view_options o = {
		.store = st, .sandbox = SBX, .session = "s1", .inspect = true
	};
	struct eos_error err = { 0 };
	struct eos_view *v = NULL;
	unsigned violations = 0;
	int r = eos_view_open(&o, &v, &err);

	ck_ok(r, err);
	check_names(v);
	r = eos_view_check(v, count_violation, &violations, &err);
	ck_ok(r, err);
	ck_assert_uint_eq(violations, 0);
	eos_view_close(v);
}

START_TEST(test_names)
{
	unsigned hits = EOS_FAILPOINTS_COMPILED ? eos_failpoint_hits("kv.batch_write") : 0;
	struct eos_store *st;
	struct eos_view *v;

	crash_after(names);
	/* a rotation wrote the first generation's records, in one batch (the child's hits are its
	 * own: counted here, only the parent's would show) */
	ck_assert_uint_le(journal_files(), 2);
	st = store_open();
	check_inspected(st);
	ck_assert_uint_le(journal_files(), 2); /* inspecting deletes nothing */
	v = view_open(st);
	check_names(v);
	ck_assert_uint_eq(journal_files(), 1);
	eos_view_close(v);
	ck_assert_uint_eq(journal_files(), 0);
	v = view_open(st);
	check_names(v);
	if (EOS_FAILPOINTS_COMPILED) {
		/* a change is its journal image: the store is written at commits only */
		hits = eos_failpoint_hits("kv.batch_write");
		tv_make(v, "", "one-more", S_IFREG | 0600, NULL);
		ck_rc(eos_fs_unlink(v, tv_root(v), "moved", false), 0);
		ck_assert_uint_eq(eos_failpoint_hits("kv.batch_write"), hits);
	}
	eos_view_close(v);
	eos_store_close(st);
	(void)hits;
}
END_TEST

static char *
journal_path(const char *name)
{
	char *p = NULL;

	ck_assert_int_ge(asprintf(&p, "%s/sessions/%s/s1/%s", store_dir, SBX, name), 0);
	return p;
}

/*
 * A power loss keeps the store's synced records and may lose the journal's tail. The journal's
 * images that a commit wrote are below the floor it recorded: they are not applied again, so an
 * image older than the synced records cannot take them back (here: bring back a file whose
 * unlink was fsynced). The journal as it was before the unlink stands for the lost tail.
 */
static void
fsync_after_unlink(struct eos_view *v)
{
	cleanup_free char *cur = journal_path("journal-0000000000000001");
	cleanup_free char *saved = journal_path("../journal-before-unlink");
	cleanup_free char *cmd = NULL;

	tv_make(v, "", "x.txt", S_IFREG | 0644, NULL);
	tv_write_at(v, "x.txt", PID_OP, 0, "soon gone\n");
	ck_assert_int_ge(asprintf(&cmd, "cp '%s' '%s'", cur, saved), 0);
	ck_assert_int_eq(system(cmd), 0);
	ck_rc(eos_fs_unlink(v, tv_root(v), "x.txt", false), 0);
	tv_make(v, "", "y.txt", S_IFREG | 0644, NULL);
	ck_rc(eos_fs_fsync(v, tv_root(v), false), 0); /* fsyncdir: every record synced */
}

START_TEST(test_floor)
{
	cleanup_free char *cur = journal_path("journal-0000000000000001");
	cleanup_free char *saved = journal_path("../journal-before-unlink");
	struct eos_store *st;
	struct eos_view *v;

	crash_after(fsync_after_unlink);
	ck_assert_int_eq(rename(saved, cur), 0);
	st = store_open();
	v = view_open(st);
	ck_assert(!has(v, "", "x.txt"));
	ck_assert(has(v, "", "y.txt"));
	eos_view_close(v);
	eos_store_close(st);
}
END_TEST

static void
one_write(struct eos_view *v)
{
	tv_write_at(v, "small.txt", PID_OP, 0, "ONE WRITE");
}

/* Garbage after the last record (a power loss tore it) ends the replay, nothing else. */
START_TEST(test_torn_tail)
{
	cleanup_free char *path = journal_path("journal-0000000000000001");
	static const char junk[50] = "not a record";
	struct eos_store *st;
	struct eos_view *v;
	cleanup_free char *s = NULL;
	FILE *f;

	crash_after(one_write);
	f = fopen(path, "ae");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(junk, 1, sizeof(junk), f), sizeof(junk));
	fclose(f);
	st = store_open();
	v = view_open(st);
	s = read_n(v, "small.txt", SMALL_LINES * 16);
	ck_assert_mem_eq(s, "ONE WRITE", 9);
	eos_view_close(v);
	eos_store_close(st);
}
END_TEST

#if EOS_FAILPOINTS_COMPILED
/* Write text at off of path as the operation, retrying while the view refuses it (EIO). */
static void
write_when_taken(struct eos_view *v, const char *path, uint64_t off, const char *text)
{
	struct eos_handle *h = open_as(v, path, PID_OP, O_WRONLY);
	ssize_t r = -EIO;

	for (int i = 0; i < 500 && r == -EIO; i++) {
		r = eos_fs_write(v, h, text, strlen(text), off);
		if (r == -EIO)
			usleep(10000);
	}
	ck_rc(r, strlen(text));
	ck_rc(eos_fs_release(v, h), 0);
}

/* Create a regular file name in the root, retrying while the view refuses it (EIO). */
static void
make_when_taken(struct eos_view *v, const char *name)
{
	struct eos_ctx c = tv_ctx_of(PID_SESSION);
	struct eos_node *n = NULL;
	int r = -EIO;

	for (int i = 0; i < 500 && r == -EIO; i++) {
		r = eos_fs_make(v, &c, tv_root(v), name, S_IFREG | 0644, NULL, &n);
		if (r == -EIO)
			usleep(10000);
	}
	ck_rc(r, 0);
}

/*
 * Appends cut short (a full disk, a signal): the write, then the create, fails. What the view
 * accepts after that must survive a kill: the torn bytes end their generation's replay, so
 * nothing may be appended behind them (the flusher starts the next generation first).
 */
static void
short_appends(struct eos_view *v)
{
	struct eos_ctx c = tv_ctx_of(PID_SESSION);
	struct eos_handle *h;
	struct eos_node *n = NULL;

	tv_make(v, "", "t.txt", S_IFREG | 0644, NULL);
	tv_write_at(v, "t.txt", PID_OP, 0, "before\n");
	ck_rc(eos_failpoint_arm("journal.short_append", -EIO), 0);
	h = open_as(v, "t.txt", PID_OP, O_WRONLY);
	ck_rc(eos_fs_write(v, h, "torn\n", 5, 7), -EIO);
	ck_rc(eos_fs_release(v, h), 0);
	ck_rc(eos_failpoint_arm("journal.short_append", 0), 0);
	write_when_taken(v, "t.txt", 7, "again\n");

	ck_rc(eos_failpoint_arm("journal.short_append", -EIO), 0);
	ck_rc(eos_fs_make(v, &c, tv_root(v), "lost.txt", S_IFREG | 0644, NULL, &n), -EIO);
	ck_rc(eos_failpoint_arm("journal.short_append", 0), 0);
	ck_assert(!has(v, "", "lost.txt"));
	make_when_taken(v, "after.txt");
	tv_write_at(v, "after.txt", PID_OP, 0, "after\n");
}

/*
 * Records the pending map could not take (out of memory) are only in the journal: a clean close
 * keeps the journal, and the next mount replays it.
 */
START_TEST(test_pending_lost)
{
	struct eos_store *st = store_open();
	struct eos_view *v = view_open(st);
	char buf[64];

	ck_rc(eos_failpoint_arm("pending.add", -ENOMEM), 0);
	tv_make(v, "", "a.txt", S_IFREG | 0644, NULL);
	ck_rc(eos_failpoint_arm("pending.add", 0), 0);
	tv_write_at(v, "a.txt", PID_OP, 0, "only in the journal\n");
	tv_make(v, "", "b.txt", S_IFREG | 0644, NULL);
	eos_view_close(v);
	ck_assert_uint_ge(journal_files(), 1);
	v = view_open(st);
	ck_assert_str_eq(tv_read_all(v, "a.txt", buf, sizeof(buf)), "only in the journal\n");
	ck_assert(has(v, "", "b.txt"));
	eos_view_close(v);
	ck_assert_uint_eq(journal_files(), 0); /* replayed and written: nothing is kept now */
	eos_store_close(st);
}
END_TEST

START_TEST(test_short_append)
{
	struct eos_store *st;
	struct eos_view *v;
	char buf[64];

	crash_after(short_appends);
	st = store_open();
	v = view_open(st);
	ck_assert_str_eq(tv_read_all(v, "t.txt", buf, sizeof(buf)), "before\nagain\n");
	ck_assert_str_eq(owner_at(v, "t.txt", 12), OP);
	ck_assert_str_eq(tv_read_all(v, "after.txt", buf, sizeof(buf)), "after\n");
	ck_assert(!has(v, "", "lost.txt"));
	eos_view_close(v);
	eos_store_close(st);
}
END_TEST
#endif

/* A journal left by an earlier incarnation of the session is deleted, never replayed. */
START_TEST(test_foreign_journal)
{
	cleanup_free char *path = journal_path("journal-0000000000000001");
	cleanup_free char *keep = journal_path("../saved-journal");
	struct eos_error err = { 0 };
	struct eos_store *st;
	struct eos_view *v;
	cleanup_free char *s = NULL;
	int r;

	crash_after(one_write);
	ck_assert_int_eq(rename(path, keep), 0);
	st = store_open();
	r = eos_store_session_remove(st, SBX, "s1", &err);
	ck_ok(r, err);
	v = view_open(st); /* a new session of the same name */
	eos_view_close(v);
	eos_store_close(st);
	ck_assert_int_eq(rename(keep, path), 0);
	st = store_open();
	v = view_open(st);
	s = read_n(v, "small.txt", SMALL_LINES * 16);
	ck_assert_mem_eq(s, "orig line 00000\n", 16);
	ck_assert(!(tv_lookup(v, "small.txt")->flags & EOS_NODE_UPPER));
	ck_assert_int_ne(access(path, F_OK), 0);
	eos_view_close(v);
	eos_store_close(st);
}
END_TEST

static void
write_again(struct eos_view *v)
{
	tv_write_at(v, "again.txt", PID_OP, 11, "second open\n");
}

/*
 * The journal's sequence numbers go on across a clean close: a record numbered below its node's
 * jseq (the records the close wrote) would be skipped by the next replay, losing the write.
 */
START_TEST(test_seq_after_reopen)
{
	struct eos_store *st = store_open();
	struct eos_view *v = view_open(st);
	char buf[64];

	tv_make(v, "", "again.txt", S_IFREG | 0644, NULL);
	for (unsigned i = 0; i < 20; i++)
		tv_write_at(v, "again.txt", PID_OP, 0, "first open\n");
	eos_view_close(v);
	eos_store_close(st);
	crash_after(write_again);
	st = store_open();
	v = view_open(st);
	ck_assert_str_eq(tv_read_all(v, "again.txt", buf, sizeof(buf)),
			 "first open\nsecond open\n");
	eos_view_close(v);
	eos_store_close(st);
}
END_TEST

static Suite *
journal_suite(void)
{
	Suite *s = suite_create("journal");
	TCase *tc = tcase_create("crash");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_new_files);
	tcase_add_test(tc, test_copyups);
	tcase_add_test(tc, test_truncations);
	tcase_add_test(tc, test_truncations_journaled);
	tcase_add_test(tc, test_rotation);
	tcase_add_test(tc, test_attrs);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_floor);
	tcase_add_test(tc, test_seq_after_reopen);
	tcase_add_test(tc, test_torn_tail);
#if EOS_FAILPOINTS_COMPILED
	tcase_add_test(tc, test_short_append);
	tcase_add_test(tc, test_pending_lost);
#endif
	tcase_add_test(tc, test_foreign_journal);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return eos_test_run(journal_suite());
}
