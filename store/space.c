/* SPDX-License-Identifier: MIT */
/*
 * Free-space reserves of the store's filesystem (store/space.h). The sizes were chosen by
 * measurement (bench/space-fill, figures in doc/store-format.md, "Free space").
 */
#include "store/space.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"

#include "store/store-internal.h"

#define KIB ((uint64_t)1 << 10)
#define MIB ((uint64_t)1 << 20)
#define GIB ((uint64_t)1 << 30)

enum {
	/* CURRENT, IDENTITY, two OPTIONS files (~45 KB each) and a new WAL and MANIFEST at open. */
	SPACE_OPEN_BYTES = 1 << 20,
};

static uint64_t
clamp(uint64_t v, uint64_t lo, uint64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

void
eos_space_plan_for(uint64_t z, struct eos_space_plan *p)
{
	memset(p, 0, sizeof(*p));
	if (z == 0)
		return;
	p->fs_bytes = z;
	p->memtables = clamp(z / 128, MIB, 256 * MIB);
	p->write_buffer = EOS_MAX(p->memtables / 2, 512 * KIB);
	p->wal = p->memtables;
	p->table_file = clamp(z / 128, MIB, 64 * MIB);
	p->blob_file = clamp(z / 32, MIB, 256 * MIB);
	p->compaction = clamp(z / 128, 2 * MIB, GIB);
	/* the info LOG gets only what DB::Open() writes (~100 KB): see kv.c */
	p->log_file = clamp(z / 256, 256 * KIB, MIB);
	p->manifest = clamp(z / 1024, MIB, 64 * MIB);
	/*
	 * A flush writes what the memtables hold (at most about twice their budget: the mutable
	 * ones and those being flushed) before the WAL holding the same bytes is deleted; WAL files
	 * of rarely written column families wait for their flush; a compaction writes its output
	 * before deleting its input; the info LOG and the MANIFEST grow until they roll.
	 */
	p->hard = 2 * p->memtables + p->wal + p->compaction +
		  (EOS_SPACE_LOG_FILES + 1) * p->log_file + p->manifest + SPACE_OPEN_BYTES;
	p->soft = p->hard + clamp(z / 128, MIB, GIB);
}

static int
space_statvfs(const char *dir, struct statvfs *ret, struct eos_error *err)
{
	if (statvfs(dir, ret) < 0)
		return eos_error_set(err, eos_neg_errno(), "store '%s': statvfs: %s", dir,
				     strerror(errno));
	return 0;
}

int
eos_space_init(struct eos_space *s, const char *dir, struct eos_error *err)
{
	struct statvfs sv;
	int r;

	memset(s, 0, sizeof(*s));
	s->dir = strdup(dir);
	if (!s->dir)
		return eos_error_set(err, -ENOMEM, "store '%s': out of memory", dir);
	pthread_mutex_init(&s->refresh_lock, NULL);
	r = space_statvfs(dir, &sv, err);
	if (r < 0)
		return r;
	eos_space_plan_for((uint64_t)sv.f_blocks * sv.f_frsize, &s->plan);
	atomic_store(&s->free, (uint64_t)sv.f_bavail * sv.f_frsize);
	atomic_store(&s->stamp_ns, eos_mono_ns());
	return 0;
}

void
eos_space_release(struct eos_space *s)
{
	if (!s->dir)
		return; /* never initialised */
	free(s->dir);
	s->dir = NULL;
	pthread_mutex_destroy(&s->refresh_lock);
}

/* statvfs() now; the cache restarts from it. */
static int
space_refresh(struct eos_space *s, uint64_t *ret_free, struct eos_error *err)
{
	struct statvfs sv;
	int r;

	pthread_mutex_lock(&s->refresh_lock);
	r = space_statvfs(s->dir, &sv, err);
	if (r == 0) {
		*ret_free = (uint64_t)sv.f_bavail * sv.f_frsize;
		atomic_store(&s->free, *ret_free);
		atomic_store(&s->consumed, 0);
		atomic_store(&s->stamp_ns, eos_mono_ns());
	}
	pthread_mutex_unlock(&s->refresh_lock);
	return r;
}

int
eos_space_free(struct eos_space *s, uint64_t *ret)
{
	return space_refresh(s, ret, NULL);
}

/*
 * The cached figures answer when they are recent and the bytes checked since (these included)
 * stay within half of what was above the reserve: so the last steps before the reserve always
 * see a fresh statvfs().
 */
static bool
space_cached_ok(struct eos_space *s, uint64_t reserve, uint64_t bytes)
{
	uint64_t free = atomic_load(&s->free);
	uint64_t used = atomic_load(&s->consumed);

	if (eos_mono_ns() - atomic_load(&s->stamp_ns) >= EOS_SPACE_REFRESH_NS)
		return false;
	if (free < reserve || used + bytes > (free - reserve) / 2)
		return false;
	atomic_fetch_add(&s->consumed, bytes);
	return true;
}

static double
mib(uint64_t v)
{
	return (double)v / (double)MIB;
}

int
eos_space_check(struct eos_space *s, enum eos_space_class c, uint64_t bytes, struct eos_error *err)
{
	uint64_t reserve = c == EOS_SPACE_GROW ? s->plan.soft : s->plan.hard;
	uint64_t free;
	int r;

	if (s->plan.fs_bytes == 0 || space_cached_ok(s, reserve, bytes))
		return 0;
	r = space_refresh(s, &free, err);
	if (r < 0)
		return r;
	if (free < reserve || free - reserve < bytes)
		return eos_error_set(
			err, -ENOSPC,
			"store '%s' is full: %.1f MiB free on its filesystem, %.1f MiB "
			"stay free for its database (%s reserve): free space, or "
			"destroy sandboxes and run gc",
			s->dir, mib(free), mib(reserve), c == EOS_SPACE_GROW ? "soft" : "hard");
	atomic_fetch_add(&s->consumed, bytes);
	return 0;
}

/* Bytes of the WAL files in directory db (what opening flushes into tables), 0 when none. */
static uint64_t
space_wal_bytes(const char *db)
{
	cleanup_closedir DIR *d = opendir(db);
	uint64_t sum = 0;
	struct dirent *e;
	struct stat sb;
	size_t n;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		n = strlen(e->d_name);
		if (n > 4 && strcmp(e->d_name + n - 4, ".log") == 0 &&
		    fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0)
			sum += (uint64_t)sb.st_blocks * 512;
	}
	return sum;
}

int
eos_space_check_open(struct eos_space *s, const char *db, struct eos_error *err)
{
	uint64_t need = SPACE_OPEN_BYTES + space_wal_bytes(db), free;
	int r;

	if (s->plan.fs_bytes == 0)
		return 0;
	r = space_refresh(s, &free, err);
	if (r < 0)
		return r;
	if (free < need)
		return eos_error_set(err, -ENOSPC,
				     "store '%s' is full: %.1f MiB free on its filesystem, opening "
				     "its database needs %.1f MiB: free space on it",
				     s->dir, mib(free), mib(need));
	return 0;
}

int
eos_store_space_check(struct eos_store *st, uint64_t bytes, struct eos_error *err)
{
	return eos_space_check(&st->space, EOS_SPACE_GROW, bytes, err);
}

int
eos_store_record_room(struct eos_store *st, uint64_t bytes, struct eos_error *err)
{
	return eos_space_check(&st->space, EOS_SPACE_RECORD, bytes, err);
}

int
eos_store_space(struct eos_store *st, struct eos_store_space *ret, struct eos_error *err)
{
	uint64_t free;
	int r = space_refresh(&st->space, &free, err);

	if (r < 0)
		return r;
	ret->fs_bytes = st->space.plan.fs_bytes;
	ret->free_bytes = free;
	ret->soft_reserve = st->space.plan.soft;
	ret->hard_reserve = st->space.plan.hard;
	return 0;
}

bool
eos_space_has_db(const char *db)
{
	cleanup_free char *current = NULL;

	if (asprintf(&current, "%s/CURRENT", db) < 0)
		return false;
	return access(current, F_OK) == 0;
}
