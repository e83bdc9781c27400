/* SPDX-License-Identifier: MIT */
/*
 * publish-model: random operations through a mounted session view, snapshots, expected heads
 * (see publish-model.h and publish-model.sh).
 *
 *	publish-model ops --seed N --round R --side a|b --ops K [--log FILE] MNT
 *		K seeded random operations in side's territory of the view at MNT: empty and
 *		written files, O_TRUNC, truncates, sparse writes, writes into the middle of files,
 *		appends, hard links, renames (files and directories), chmod, user.* xattrs,
 *		deletes, re-creates of deleted names, rmdir, mkdir, symlinks, line edits of
 *		SHARED_FILE. Failing calls are part of the game; EIO or ENOTCONN fail the run (1).
 *	publish-model snap DIR            print the snapshot of the tree at DIR
 *	publish-model expect SIDE OURS PREV
 *		print the expected head after SIDE publishes: OURS (SIDE's snapshot before its
 *		publish) in SIDE's territory, PREV (the head before it) elsewhere
 */
#include "tests/integration/publish-model.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/cleanup.h"

enum op_kind {
	OP_CREATE_EMPTY,
	OP_CREATE,
	OP_OTRUNC,
	OP_TRUNCATE,
	OP_SPARSE,
	OP_WRITE_MID,
	OP_APPEND,
	OP_LINK,
	OP_RENAME,
	OP_CHMOD,
	OP_SETXATTR,
	OP_RMXATTR,
	OP_UNLINK,
	OP_RMTREE,
	OP_RMDIR,
	OP_MKDIR,
	OP_SYMLINK,
	OP_EDIT_SHARED,
	OP_COUNT,
};

static const struct {
	const char *name;
	unsigned weight;
} op_table[OP_COUNT] = {
	[OP_CREATE_EMPTY] = { "create-empty", 8 },
	[OP_CREATE] = { "create", 8 },
	[OP_OTRUNC] = { "otrunc", 4 },
	[OP_TRUNCATE] = { "truncate", 5 },
	[OP_SPARSE] = { "sparse-write", 3 },
	[OP_WRITE_MID] = { "write-middle", 10 },
	[OP_APPEND] = { "append", 3 },
	[OP_LINK] = { "link", 5 },
	[OP_RENAME] = { "rename", 12 },
	[OP_CHMOD] = { "chmod", 4 },
	[OP_SETXATTR] = { "setxattr", 4 },
	[OP_RMXATTR] = { "removexattr", 2 },
	[OP_UNLINK] = { "unlink", 6 },
	[OP_RMTREE] = { "rm-tree", 2 },
	[OP_RMDIR] = { "rmdir", 2 },
	[OP_MKDIR] = { "mkdir", 5 },
	[OP_SYMLINK] = { "symlink", 3 },
	[OP_EDIT_SHARED] = { "edit-shared", 3 },
};

enum {
	MAX_DEPTH = 4,
	BIG_TREE = 250,	      /* above this many entries, removals get more weight */
	BIG_FILE = 1 << 20,   /* files from this size are copied up partially by the view */
	MAX_WRITE = 300000,   /* bytes of one write */
	NAME_POOL = 24,	      /* new names are n0..n23: they collide often */
	XATTR_NAMES = 4,      /* user.k0..k3 */
	MAX_DELETED = 64,     /* deleted paths remembered for re-creates */
	SPARSE_GAP = 3 << 19, /* the largest hole a sparse write leaves */
	GROW_MAX = 2 << 20,   /* the largest truncate above the size */
};

struct entry {
	char *path;
	mode_t mode;
	uint64_t size;
	int depth;
	bool fixed; /* the territory's root: never removed, renamed or changed */
};

struct ctx {
	uint64_t rng;
	char side;
	const char *mnt;
	int rootfd;
	unsigned long round, index, ops;
	FILE *log;
	struct entry *es;
	size_t n, cap;
	char *deleted[MAX_DELETED];
	size_t ndeleted, next_deleted;
	unsigned long done[OP_COUNT], failed[OP_COUNT];
	unsigned long fatal;
	uint8_t *buf;
	char desc[8192];
};

char
pm_territory(const char *key)
{
	const char *hash = strstr(key, "#L");

	if (!strcmp(key, B_DIR) || !strncmp(key, B_DIR "/", strlen(B_DIR) + 1))
		return 'b';
	if (hash && (size_t)(hash - key) == strlen(SHARED_FILE) &&
	    !strncmp(key, SHARED_FILE, strlen(SHARED_FILE)))
		return atoi(hash + 2) >= SHARED_SPLIT ? 'b' : 'a';
	return 'a';
}

/* ---- random numbers: xorshift64*, seeded from seed, round and side ---- */

static uint64_t
rng_next(struct ctx *c)
{
	c->rng ^= c->rng >> 12;
	c->rng ^= c->rng << 25;
	c->rng ^= c->rng >> 27;
	return c->rng * 0x2545f4914f6cdd1dULL;
}

static uint64_t
below(struct ctx *c, uint64_t n)
{
	return n ? rng_next(c) % n : 0;
}

static bool
pct(struct ctx *c, unsigned p)
{
	return below(c, 100) < p;
}

static void
fill(struct ctx *c, size_t len, bool text)
{
	for (size_t i = 0; i < len; i++)
		c->buf[i] = text ? (uint8_t)(i % 61 == 60 ? '\n' : 'a' + below(c, 26))
				 : (uint8_t)rng_next(c);
}

/* ---- the territory's entries ---- */

static void
entries_clear(struct ctx *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->es[i].path);
	c->n = 0;
}

static void
entries_add(struct ctx *c, const char *path, const struct stat *st, int depth, bool fixed)
{
	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 256;
		c->es = mu_realloc(c->es, c->cap * sizeof(*c->es));
	}
	c->es[c->n++] =
		(struct entry){ mu_strdup(path), st->st_mode, (uint64_t)st->st_size, depth, fixed };
}

/* Names at the root that belong to no territory's random operations. */
static bool
reserved(const char *path)
{
	return !strcmp(path, B_DIR) || !strcmp(path, SHARED_FILE) || !strcmp(path, SHARED_TMP);
}

static void
walk(struct ctx *c, const char *rel, int depth)
{
	int fd = openat(c->rootfd, rel[0] ? rel : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cleanup_closedir DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	struct stat st;

	if (!d)
		return;
	while ((de = readdir(d))) {
		cleanup_free char *path = NULL;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		path = mu_join(rel, de->d_name);
		if (reserved(path) || fstatat(c->rootfd, path, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		entries_add(c, path, &st, depth, false);
		if (S_ISDIR(st.st_mode))
			walk(c, path, depth + 1);
	}
}

static void
refresh(struct ctx *c)
{
	const char *top = c->side == 'b' ? B_DIR : "";
	struct stat st;

	entries_clear(c);
	if (fstatat(c->rootfd, top[0] ? top : ".", &st, AT_SYMLINK_NOFOLLOW) < 0) {
		fprintf(stderr, "publish-model: cannot stat the territory '%s': %m\n", top);
		exit(2);
	}
	entries_add(c, top, &st, 0, true);
	walk(c, top, 1);
}

/* A random entry whose type is in types (S_IF* values, 0: any), not fixed unless allowed. */
static const struct entry *
pick(struct ctx *c, mode_t t1, mode_t t2, bool allow_fixed)
{
	size_t count = 0, k = 0;

	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < c->n; i++) {
			const struct entry *e = &c->es[i];
			mode_t t = e->mode & S_IFMT;

			if ((e->fixed && !allow_fixed) || (t1 && t != t1 && t != t2))
				continue;
			if (pass == 1 && k-- == 0)
				return e;
			if (pass == 0)
				count++;
		}
		if (count == 0)
			return NULL;
		k = below(c, count);
	}
	return NULL;
}

static const struct entry *
pick_file(struct ctx *c)
{
	return pick(c, S_IFREG, S_IFREG, false);
}

/* A random directory to create in (not too deep). */
static const char *
pick_parent(struct ctx *c)
{
	for (int tries = 0; tries < 8; tries++) {
		const struct entry *e = pick(c, S_IFDIR, S_IFDIR, true);

		if (e && e->depth < MAX_DEPTH)
			return e->path;
	}
	return c->es[0].path;
}

static void
remember_deleted(struct ctx *c, const char *path)
{
	free(c->deleted[c->next_deleted]);
	c->deleted[c->next_deleted] = mu_strdup(path);
	c->next_deleted = (c->next_deleted + 1) % MAX_DELETED;
	if (c->ndeleted < MAX_DELETED)
		c->ndeleted++;
}

/* A path to create: often a name deleted before (a re-create), else n<k> in some directory. */
static char *
new_path(struct ctx *c)
{
	char name[32];

	if (c->ndeleted && pct(c, 35))
		return mu_strdup(c->deleted[below(c, c->ndeleted)]);
	snprintf(name, sizeof(name), "n%u%s", (unsigned)below(c, NAME_POOL),
		 pct(c, 20) ? ".txt" : "");
	return mu_join(pick_parent(c), name);
}

/* ---- operations: each returns 0 or -errno and describes itself into c->desc ---- */

static long
sys(long r)
{
	return r < 0 ? (errno > 0 ? -(long)errno : -EIO) : 0;
}

static long
write_at(struct ctx *c, const char *path, int flags, mode_t mode, uint64_t off, size_t len)
{
	cleanup_close int fd = openat(c->rootfd, path, flags | O_WRONLY | O_CLOEXEC, mode);
	ssize_t n;

	if (fd < 0)
		return sys(-1);
	for (size_t done = 0; done < len; done += (size_t)n) {
		n = flags & O_APPEND ? write(fd, c->buf + done, len - done)
				     : pwrite(fd, c->buf + done, len - done, (off_t)(off + done));
		if (n <= 0)
			return n < 0 ? sys(-1) : -EIO;
	}
	return sys(close(TAKE_FD(fd)));
}

static size_t
write_len(struct ctx *c)
{
	static const size_t sizes[] = { 1, 100, 4096, 5000, 65536, 70000, MAX_WRITE };

	return pct(c, 60) ? 1 + below(c, 3000) : sizes[below(c, EOS_ARRAY_SIZE(sizes))];
}

static mode_t
file_mode(struct ctx *c)
{
	static const mode_t modes[] = { 0644, 0600, 0755, 0640, 0444, 0700, 0664 };

	return modes[below(c, EOS_ARRAY_SIZE(modes))];
}

static long
op_create(struct ctx *c, bool empty)
{
	cleanup_free char *path = new_path(c);
	size_t len = empty ? 0 : write_len(c);
	mode_t mode = file_mode(c);

	fill(c, len, pct(c, 50));
	snprintf(c->desc, sizeof(c->desc), "'%s' mode %04o, %zu bytes", path, mode, len);
	return write_at(c, path, O_CREAT | O_EXCL, mode, 0, len);
}

static long
op_otrunc(struct ctx *c)
{
	const struct entry *e = pick_file(c);
	size_t len = pct(c, 50) ? write_len(c) : 0;

	if (!e)
		return -ENOENT;
	fill(c, len, pct(c, 50));
	snprintf(c->desc, sizeof(c->desc), "'%s' then %zu bytes", e->path, len);
	return write_at(c, e->path, O_TRUNC, 0, 0, len);
}

static long
op_truncate(struct ctx *c)
{
	const struct entry *e = pick_file(c);
	uint64_t size;
	cleanup_free char *full = NULL;

	if (!e)
		return -ENOENT;
	switch (below(c, 4)) {
	case 0:
		size = 0;
		break;
	case 1:
		size = e->size / 2;
		break;
	case 2:
		size = e->size + 1 + below(c, 200000);
		break;
	default:
		size = e->size + GROW_MAX;
	}
	full = mu_join(c->mnt, e->path);
	snprintf(c->desc, sizeof(c->desc), "'%s' from %" PRIu64 " to %" PRIu64, e->path, e->size,
		 size);
	return sys(truncate(full, (off_t)size));
}

static long
op_write(struct ctx *c, enum op_kind k)
{
	const struct entry *e = pick_file(c);
	uint64_t off;
	size_t len = 1 + below(c, 8192);

	/* writes into the middle prefer the large files, which the view copies up partially */
	for (int tries = 0; k == OP_WRITE_MID && e && e->size < BIG_FILE && tries < 4; tries++)
		if (pct(c, 50))
			e = pick_file(c);
	if (!e)
		return -ENOENT;
	off = k == OP_SPARSE ? e->size + 1 + below(c, SPARSE_GAP) : below(c, e->size + 1);
	fill(c, len, pct(c, 30));
	snprintf(c->desc, sizeof(c->desc), "'%s' (size %" PRIu64 ") %zu bytes at %" PRIu64, e->path,
		 e->size, len, off);
	return write_at(c, e->path, k == OP_APPEND ? O_APPEND : 0, 0, off, len);
}

static long
op_link(struct ctx *c)
{
	const struct entry *e = pick_file(c);
	cleanup_free char *to = new_path(c);

	if (!e)
		return -ENOENT;
	snprintf(c->desc, sizeof(c->desc), "'%s' to '%s'", e->path, to);
	return sys(linkat(c->rootfd, e->path, c->rootfd, to, 0));
}

static long
op_rename(struct ctx *c)
{
	const struct entry *e = pct(c, 35) ? pick(c, S_IFDIR, S_IFDIR, false) : NULL;
	const struct entry *over = pct(c, 30) ? pick(c, 0, 0, false) : NULL;
	cleanup_free char *to = over ? mu_strdup(over->path) : new_path(c);
	long r;

	if (!e)
		e = pick(c, 0, 0, false);
	if (!e)
		return -ENOENT;
	snprintf(c->desc, sizeof(c->desc), "'%s' to '%s'", e->path, to);
	r = sys(renameat(c->rootfd, e->path, c->rootfd, to));
	if (r == 0)
		remember_deleted(c, e->path);
	return r;
}

static long
op_chmod(struct ctx *c)
{
	static const mode_t dir_modes[] = { 0755, 0700, 0750, 0775, 0711 };
	const struct entry *e = pick(c, S_IFREG, S_IFDIR, false);
	mode_t mode;

	if (!e)
		return -ENOENT;
	mode = S_ISDIR(e->mode) ? dir_modes[below(c, EOS_ARRAY_SIZE(dir_modes))] : file_mode(c);
	snprintf(c->desc, sizeof(c->desc), "'%s' %04o", e->path, mode);
	return sys(fchmodat(c->rootfd, e->path, mode, 0));
}

static long
op_xattr(struct ctx *c, bool set)
{
	const struct entry *e = pick(c, S_IFREG, S_IFDIR, true);
	char name[32];
	size_t len = pct(c, 10) ? 1000 : below(c, 65);
	cleanup_free char *full = NULL;

	if (!e)
		return -ENOENT;
	snprintf(name, sizeof(name), "user.k%u", (unsigned)below(c, XATTR_NAMES));
	full = mu_join(c->mnt, e->path);
	fill(c, len, false);
	snprintf(c->desc, sizeof(c->desc), "'%s' %s (%zu bytes)", e->path, name, len);
	return set ? sys(setxattr(full, name, c->buf, len, 0)) : sys(removexattr(full, name));
}

static long
op_unlink(struct ctx *c)
{
	const struct entry *e = pick(c, S_IFREG, S_IFLNK, false);
	long r;

	if (!e)
		return -ENOENT;
	snprintf(c->desc, sizeof(c->desc), "'%s'", e->path);
	r = sys(unlinkat(c->rootfd, e->path, 0));
	if (r == 0)
		remember_deleted(c, e->path);
	return r;
}

static long
rm_tree(int dfd, const char *name)
{
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	cleanup_closedir DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	long r = 0;

	if (!d)
		return sys(-1);
	while (r == 0 && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		r = de->d_type == DT_DIR ? rm_tree(dirfd(d), de->d_name)
					 : sys(unlinkat(dirfd(d), de->d_name, 0));
	}
	return r ?: sys(unlinkat(dfd, name, AT_REMOVEDIR));
}

static long
op_rmdir(struct ctx *c, bool tree)
{
	const struct entry *e = pick(c, S_IFDIR, S_IFDIR, false);
	long r;

	if (!e)
		return -ENOENT;
	snprintf(c->desc, sizeof(c->desc), "'%s'", e->path);
	r = tree ? rm_tree(c->rootfd, e->path) : sys(unlinkat(c->rootfd, e->path, AT_REMOVEDIR));
	if (r == 0)
		remember_deleted(c, e->path);
	return r;
}

static long
op_mkdir(struct ctx *c)
{
	cleanup_free char *path = new_path(c);
	mode_t mode = pct(c, 80) ? 0755 : 0700;

	snprintf(c->desc, sizeof(c->desc), "'%s' %04o", path, mode);
	return sys(mkdirat(c->rootfd, path, mode));
}

static long
op_symlink(struct ctx *c)
{
	const struct entry *e = pick(c, 0, 0, false);
	cleanup_free char *path = new_path(c);
	char target[4200];

	if (e && pct(c, 70))
		snprintf(target, sizeof(target), "%s", e->path);
	else
		snprintf(target, sizeof(target), "missing-%u", (unsigned)below(c, 1000));
	snprintf(c->desc, sizeof(c->desc), "'%s' -> '%s'", path, target);
	return sys(symlinkat(target, c->rootfd, path));
}

/* Replace one of side's lines of SHARED_FILE: in place, or through a new file renamed over. */
static long
op_edit_shared(struct ctx *c)
{
	char lines[SHARED_LINES][SHARED_LINE_MAX + 2];
	unsigned k = c->side == 'a'
			     ? (unsigned)below(c, SHARED_A_MAX)
			     : SHARED_B_MIN + (unsigned)below(c, SHARED_LINES - SHARED_B_MIN);
	bool in_place = pct(c, 50);
	cleanup_fclose FILE *f = NULL;
	size_t len = 0;
	int fd = openat(c->rootfd, SHARED_FILE, O_RDONLY | O_CLOEXEC);

	f = fd >= 0 ? fdopen(fd, "r") : NULL;
	if (!f)
		return sys(-1);
	for (unsigned i = 0; i < SHARED_LINES; i++)
		if (!fgets(lines[i], sizeof(lines[i]), f))
			return -EBADMSG;
	snprintf(lines[k], sizeof(lines[k]), "line %02u edited by %c in round %lu, op %lu\n", k,
		 c->side, c->round, c->index);
	for (unsigned i = 0; i < SHARED_LINES; i++) {
		size_t n = strlen(lines[i]);

		memcpy(c->buf + len, lines[i], n);
		len += n;
	}
	snprintf(c->desc, sizeof(c->desc), "line %u %s", k, in_place ? "in place" : "by rename");
	if (in_place)
		return write_at(c, SHARED_FILE, O_TRUNC, 0, 0, len);
	return write_at(c, SHARED_TMP, O_CREAT | O_TRUNC, 0644, 0, len)
		       ?: sys(renameat(c->rootfd, SHARED_TMP, c->rootfd, SHARED_FILE));
}

static enum op_kind
choose(struct ctx *c)
{
	unsigned w[OP_COUNT], total = 0;
	uint64_t k;

	for (int i = 0; i < OP_COUNT; i++)
		total += w[i] = op_table[i].weight;
	if (c->n > BIG_TREE) {
		w[OP_UNLINK] += 20;
		w[OP_RMTREE] += 5;
		total += 25;
	}
	k = below(c, total);
	for (int i = 0; i < OP_COUNT; i++) {
		if (k < w[i])
			return (enum op_kind)i;
		k -= w[i];
	}
	return OP_CREATE;
}

static long
run_op(struct ctx *c, enum op_kind k)
{
	switch (k) {
	case OP_CREATE_EMPTY:
	case OP_CREATE:
		return op_create(c, k == OP_CREATE_EMPTY);
	case OP_OTRUNC:
		return op_otrunc(c);
	case OP_TRUNCATE:
		return op_truncate(c);
	case OP_SPARSE:
	case OP_WRITE_MID:
	case OP_APPEND:
		return op_write(c, k);
	case OP_LINK:
		return op_link(c);
	case OP_RENAME:
		return op_rename(c);
	case OP_CHMOD:
		return op_chmod(c);
	case OP_SETXATTR:
	case OP_RMXATTR:
		return op_xattr(c, k == OP_SETXATTR);
	case OP_UNLINK:
		return op_unlink(c);
	case OP_RMTREE:
	case OP_RMDIR:
		return op_rmdir(c, k == OP_RMTREE);
	case OP_MKDIR:
		return op_mkdir(c);
	case OP_SYMLINK:
		return op_symlink(c);
	case OP_EDIT_SHARED:
		return op_edit_shared(c);
	case OP_COUNT:
		break;
	}
	return -EINVAL;
}

static int
run_ops(struct ctx *c)
{
	for (c->index = 0; c->index < c->ops; c->index++) {
		enum op_kind k;
		long r;

		refresh(c);
		k = choose(c);
		c->desc[0] = '\0';
		r = run_op(c, k);
		c->done[k]++;
		if (r < 0)
			c->failed[k]++;
		if (c->log)
			fprintf(c->log, "%c r%lu #%lu %s %s -> %s\n", c->side, c->round, c->index,
				op_table[k].name, c->desc, r < 0 ? strerror((int)-r) : "ok");
		if (r == -EIO || r == -ENOTCONN) {
			fprintf(stderr, "publish-model: side %c round %lu op #%lu: %s %s: %s\n",
				c->side, c->round, c->index, op_table[k].name, c->desc,
				strerror((int)-r));
			c->fatal++;
		}
		if (r == -ENOTCONN)
			return 1;
	}
	for (int i = 0; i < OP_COUNT; i++)
		printf("%s%s %lu/%lu", i ? ", " : "", op_table[i].name, c->done[i] - c->failed[i],
		       c->done[i]);
	printf("\n");
	return c->fatal ? 1 : 0;
}

static __attribute__((noreturn)) void
usage(void)
{
	fprintf(stderr,
		"usage: publish-model ops --seed N --round R --side a|b --ops K [--log FILE] MNT\n"
		"       publish-model snap DIR\n"
		"       publish-model expect a|b OURS PREV\n");
	exit(2);
}

static int
main_ops(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seed", required_argument, NULL, 's' }, { "round", required_argument, NULL, 'r' },
		{ "side", required_argument, NULL, 'S' }, { "ops", required_argument, NULL, 'n' },
		{ "log", required_argument, NULL, 'l' },  { NULL, 0, NULL, 0 }
	};
	struct ctx c = { .side = 'a', .ops = 100 };
	uint64_t seed = 1;
	int o, r;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (o == 's')
			seed = strtoull(optarg, NULL, 0);
		else if (o == 'r')
			c.round = strtoul(optarg, NULL, 0);
		else if (o == 'S' && (optarg[0] == 'a' || optarg[0] == 'b') && !optarg[1])
			c.side = optarg[0];
		else if (o == 'n')
			c.ops = strtoul(optarg, NULL, 0);
		else if (o == 'l' && !(c.log = fopen(optarg, "ae")))
			return fprintf(stderr, "publish-model: '%s': %m\n", optarg), 2;
		else if (o != 'l')
			usage();
	}
	if (optind + 1 != argc)
		usage();
	c.mnt = argv[optind];
	c.rootfd = open(c.mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c.rootfd < 0)
		return fprintf(stderr, "publish-model: '%s': %m\n", c.mnt), 2;
	c.rng = (seed * 0x9e3779b97f4a7c15ULL) ^ (c.round << 32) ^ (uint64_t)c.side;
	c.rng = c.rng ? c.rng : 1;
	c.buf = mu_realloc(NULL, MAX_WRITE + SHARED_LINES * (SHARED_LINE_MAX + 2));
	r = run_ops(&c);
	entries_clear(&c);
	free(c.es);
	for (size_t i = 0; i < c.ndeleted; i++)
		free(c.deleted[i]);
	free(c.buf);
	close(c.rootfd);
	if (c.log)
		fclose(c.log);
	return r;
}

int
main(int argc, char **argv)
{
	struct snap a, b, e;

	if (argc < 2)
		usage();
	if (!strcmp(argv[1], "ops"))
		return main_ops(argc - 1, argv + 1);
	if (!strcmp(argv[1], "snap") && argc == 3) {
		pm_snap_take(argv[2], &a);
		pm_snap_print(&a, stdout);
		pm_snap_release(&a);
		return 0;
	}
	if (!strcmp(argv[1], "expect") && argc == 5 && (argv[2][0] == 'a' || argv[2][0] == 'b')) {
		pm_snap_read(argv[3], &a);
		pm_snap_read(argv[4], &b);
		pm_snap_expect(argv[2][0], &a, &b, &e);
		pm_snap_print(&e, stdout);
		pm_snap_release(&a);
		pm_snap_release(&b);
		pm_snap_release(&e);
		return 0;
	}
	usage();
}
