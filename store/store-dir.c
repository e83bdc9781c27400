/* SPDX-License-Identifier: MIT */
/*
 * The store directory (doc/store-format.md, "Directory layout"): what a directory named as a
 * store holds, creating a store only where nothing else lives, and the ownership and mode rules
 * (a store is one user's) that every open checks before it changes anything.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"

#include "store/store-internal.h"

/* What a directory named as a store holds. */
enum dir_kind {
	DIR_MISSING,
	DIR_EMPTY,
	DIR_PARTIAL, /* what an interrupted creation leaves: owner.lock, db/ without CURRENT or data
		      */
	DIR_STORE,   /* db/CURRENT exists */
	DIR_DAMAGED, /* no db/CURRENT, but table, blob or log files in db/, or sessions/ */
	DIR_OTHER,   /* anything else: not a store */
};

static bool
has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* A RocksDB file that holds data: only written once CURRENT exists. */
static bool
is_data_file(const char *name)
{
	return has_suffix(name, ".sst") || has_suffix(name, ".blob") || has_suffix(name, ".log");
}

/* The entries of the directory dfd/sub, one call of fn each; fn returns non-zero to stop. */
static int
for_each_entry(int dfd, const char *sub, bool (*fn)(void *ctx, const char *name), void *ctx)
{
	int fd = openat(dfd, sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cleanup_closedir DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;

	if (!d) {
		int r = eos_neg_errno();

		if (fd >= 0)
			close(fd);
		return r;
	}
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
		    fn(ctx, e->d_name))
			return 1;
	return 0;
}

static bool
data_file_found(void *ctx, const char *name)
{
	(void)ctx;
	return is_data_file(name);
}

/*
 * Stops at the first entry an interrupted creation cannot have left, copying its name.
 * lost+found is allowed: a store may have a filesystem of its own.
 */
static bool
foreign_found(void *ctx, const char *name)
{
	if (strcmp(name, "owner.lock") == 0 || strcmp(name, "db") == 0 ||
	    strcmp(name, "lost+found") == 0)
		return false;
	snprintf(ctx, NAME_MAX + 1, "%s", name);
	return true;
}

/* Without db/CURRENT: data in db/, or session directories, mean a store that lost it. */
static int
holds_data(int dfd, bool *ret)
{
	int r = 0;

	*ret = faccessat(dfd, "sessions", F_OK, AT_SYMLINK_NOFOLLOW) == 0;
	if (!*ret && faccessat(dfd, "db", F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		r = for_each_entry(dfd, "db", data_file_found, NULL);
	if (r == 1)
		*ret = true;
	return r < 0 ? r : 0;
}

static int
classify(const char *dir, enum dir_kind *ret, char *foreign, struct eos_error *err)
{
	cleanup_close int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat sb;
	bool data;
	int r;

	if (dfd < 0 && errno == ENOENT) {
		*ret = DIR_MISSING;
		return 0;
	}
	if (dfd < 0 && errno == ENOTDIR)
		return eos_error_set(err, -ENOTDIR, "store '%s' is not a directory", dir);
	if (dfd < 0 && errno != EACCES)
		return eos_error_set(err, eos_neg_errno(), "store '%s': %m", dir);
	/* what we may not look into is left to the ownership check, which names the owner */
	if (dfd < 0 || fstatat(dfd, "db/CURRENT", &sb, 0) == 0 || errno == EACCES) {
		*ret = DIR_STORE;
		return 0;
	}
	r = holds_data(dfd, &data);
	if (r == 0 && !data)
		r = for_each_entry(dfd, ".", foreign_found, foreign);
	if (r < 0)
		return eos_error_set(err, r, "store '%s': %s", dir, strerror(-r));
	if (data)
		*ret = DIR_DAMAGED;
	else if (r == 1)
		*ret = DIR_OTHER;
	else if (faccessat(dfd, "db", F_OK, AT_SYMLINK_NOFOLLOW) == 0 ||
		 faccessat(dfd, "owner.lock", F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		*ret = DIR_PARTIAL;
	else
		*ret = DIR_EMPTY;
	return 0;
}

/* The refusal of a directory that is not (yet) a store, for an open without create. */
static int
not_a_store(const char *dir, enum dir_kind kind, const char *foreign, struct eos_error *err)
{
	switch (kind) {
	case DIR_MISSING:
		return eos_error_set(err, -ENOENT, "store '%s' does not exist", dir);
	case DIR_EMPTY:
		return eos_error_set(err, -ENOENT,
				     "store '%s' does not exist (the directory is empty)", dir);
	case DIR_PARTIAL:
		return eos_error_set(err, -ENOENT,
				     "store '%s' does not exist: its creation was interrupted "
				     "(db/CURRENT is missing); remove it, or import into it",
				     dir);
	case DIR_OTHER:
		return eos_error_set(err, -ENOENT,
				     "'%s' is not an eos store (no db/CURRENT; it holds '%s')", dir,
				     foreign);
	case DIR_STORE:
	case DIR_DAMAGED:
		break;
	}
	return 0;
}

/* Who besides the owner may write a file of this mode, or NULL when nobody may. */
static const char *
writers(mode_t mode)
{
	if ((mode & S_IWGRP) && (mode & S_IWOTH))
		return "its group and others";
	if (mode & S_IWGRP)
		return "its group";
	return (mode & S_IWOTH) ? "others" : NULL;
}

/*
 * Refuse the store when path (of store dir, stat sb) belongs to another user or others may write
 * it: another user could then read or replace what the store holds.
 */
static int
check_owner_mode(const char *dir, const char *path, const struct stat *sb, struct eos_error *err)
{
	const char *who = S_ISLNK(sb->st_mode) ? NULL : writers(sb->st_mode);
	uid_t me = geteuid();

	if (sb->st_uid != me)
		return eos_error_set(
			err, -EPERM,
			"store '%s' is not yours: '%s' is owned by uid %u, not by uid %u "
			"(a store is one user's): open it as uid %u, or give it to uid %u as "
			"root: chown -R %u '%s'",
			dir, path, (unsigned)sb->st_uid, (unsigned)me, (unsigned)sb->st_uid,
			(unsigned)me, (unsigned)me, dir);
	if (who)
		return eos_error_set(
			err, -EPERM,
			"store '%s' is not private: '%s' is writable by %s (mode %04o): "
			"run chmod go-w '%s'",
			dir, path, who, (unsigned)(sb->st_mode & 07777), path);
	return 0;
}

/* check_owner_mode() of name below the store directory dfd; a missing name is fine. */
static int
check_entry(const char *dir, int dfd, const char *name, struct eos_error *err)
{
	char path[PATH_MAX];
	struct stat sb;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT
			       ? 0
			       : eos_error_set(err, eos_neg_errno(), "store '%s': %m", path);
	return check_owner_mode(dir, path, &sb, err);
}

struct db_check {
	const char *dir;
	int dfd;
	struct eos_error *err;
	int r;
};

static bool
db_file_bad(void *ctx, const char *name)
{
	struct db_check *c = ctx;
	char sub[NAME_MAX + 4];

	snprintf(sub, sizeof(sub), "db/%s", name);
	c->r = check_entry(c->dir, c->dfd, sub, c->err);
	return c->r < 0;
}

/*
 * The directory (checked first: it may be what keeps us out), owner.lock, db/ with every file in
 * it, and sessions/ (doc/store-format.md, "One user's").
 */
static int
check_modes(const char *dir, struct eos_error *err)
{
	static const char *const names[] = { "owner.lock", "db", "sessions" };
	struct db_check c = { .dir = dir, .err = err };
	cleanup_close int dfd = -1;
	struct stat sb;
	int r = 0;

	if (stat(dir, &sb) < 0)
		return eos_error_set(err, eos_neg_errno(), "store '%s': %m", dir);
	r = check_owner_mode(dir, dir, &sb, err);
	if (r < 0)
		return r;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return eos_error_set(err, eos_neg_errno(), "store '%s': %m", dir);
	for (size_t i = 0; i < EOS_ARRAY_SIZE(names) && r == 0; i++)
		r = check_entry(dir, dfd, names[i], err);
	if (r < 0)
		return r;
	c.dfd = dfd;
	r = for_each_entry(dfd, "db", db_file_bad, &c);
	if (r == 1)
		return c.r;
	if (r < 0 && r != -ENOENT)
		return eos_error_set(err, r, "store '%s/db': %s", dir, strerror(-r));
	return 0;
}

/* A new store is private: the directory 0700, and db/ too (RocksDB would make it 0755). */
static int
make_private(const char *dir, struct eos_error *err)
{
	cleanup_close int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dfd < 0 || fchmod(dfd, 0700) < 0)
		return eos_error_set(err, eos_neg_errno(), "create store '%s': %m", dir);
	if (mkdirat(dfd, "db", 0700) < 0 && errno != EEXIST)
		return eos_error_set(err, eos_neg_errno(), "create store '%s/db': %m", dir);
	return 0;
}

int
eos_store_dir_prepare(const char *dir, bool create, struct eos_error *err)
{
	char foreign[NAME_MAX + 1] = "";
	enum dir_kind kind = DIR_MISSING;
	int r = classify(dir, &kind, foreign, err);

	if (r < 0)
		return r;
	if (kind == DIR_DAMAGED)
		return eos_error_set(
			err, -EBADMSG,
			"store '%s' is damaged: db/CURRENT is missing but the store holds data "
			"(files in db/, or sessions/): restore it from a backup",
			dir);
	if (kind == DIR_OTHER && create)
		return eos_error_set(
			err, -ENOTEMPTY,
			"refusing to create a store in '%s': it is not empty and not an "
			"eos store (it holds '%s')",
			dir, foreign);
	if (kind != DIR_STORE && !create)
		return not_a_store(dir, kind, foreign, err);
	if (kind == DIR_MISSING && mkdir(dir, 0700) < 0 && errno != EEXIST)
		return eos_error_set(err, eos_neg_errno(), "create store '%s': %m", dir);
	r = check_modes(dir, err);
	if (r < 0 || kind == DIR_STORE)
		return r;
	return make_private(dir, err);
}
