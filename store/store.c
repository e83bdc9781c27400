/* SPDX-License-Identifier: MIT */
/*
 * Store lifecycle: the owner lock, the RocksDB database, the format check, the chunk cache, and
 * the pin/exclusive protocol that keeps chunk deletion away from content staging.
 */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/endian.h"
#include "common/log.h"

#include "store/sandbox.h"
#include "store/store-internal.h"

enum {
	DEFAULT_CACHE_BYTES = 256 << 20,
	DEFAULT_ZSTD_LEVEL = 3,
};

unsigned
eos_store_format_version(void)
{
	return EOS_STORE_FORMAT;
}

int64_t
eos_store_now_ns(void)
{
	return eos_wall_ns();
}

void
eos_layer_id_format(uint64_t v, char *out)
{
	snprintf(out, EOS_LAYER_ID_LEN, "L%06" PRIu64, v);
}

int
eos_layer_id_parse(const char *s, uint64_t *ret)
{
	uint64_t v = 0;
	const char *p = s;

	if (*p == 'L' || *p == 'l')
		p++;
	if (!*p)
		return -EINVAL;
	for (; *p; p++) {
		if (*p < '0' || *p > '9' || v > (UINT64_MAX - 9) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (v == 0)
		return -EINVAL;
	*ret = v;
	return 0;
}

/*
 * RocksDB cannot read the format record (a damaged block): open anyway, so that fsck can report
 * everything the damage covers and the rest stays readable; eos_store_damage() tells.
 */
static int
format_unreadable(struct eos_store *st, struct eos_error *err)
{
	char *why = NULL;

	if (asprintf(&why, "its format record is unreadable: %s", err ? err->msg : "") < 0)
		return eos_error_set(err, -ENOMEM, "open store '%s': out of memory", st->dir);
	eos_error_clear(err);
	free(st->damage);
	st->damage = why;
	return 0;
}

/*
 * Write the format number into a new store, upgrade an older format this build reads (every
 * format-1 record is a valid format-2 record), or refuse a store written by a newer eos.
 */
static int
check_format(struct eos_store *st, struct eos_error *err)
{
	struct eos_buf key, val;
	uint8_t v[4];
	uint32_t format = 0;
	int r;

	eos_buf_init(&key);
	eos_buf_init(&val);
	r = eos_meta_key(&key, EOS_SANDBOX_GLOBAL, "format");
	if (r >= 0)
		r = eos_kv_get(st->kv, NULL, EOS_CF_META, key.data, key.len, &val, err);
	if (r == -EBADMSG) {
		r = format_unreadable(st, err);
		format = EOS_STORE_FORMAT; /* unknown: leave the record alone */
	} else if (r >= 0 && val.len != 4)
		r = eos_error_set(err, -EBADMSG, "store '%s': format record is corrupt", st->dir);
	else if (r >= 0)
		format = eos_get_le32(val.data);
	if (r >= 0 && (format > EOS_STORE_FORMAT || format < EOS_STORE_FORMAT_OLDEST)) {
		r = eos_error_set(err, format > EOS_STORE_FORMAT ? -EPROTONOSUPPORT : -EBADMSG,
				  "store '%s' has format %u, this eos reads formats %u..%u%s",
				  st->dir, format, EOS_STORE_FORMAT_OLDEST, EOS_STORE_FORMAT,
				  format > EOS_STORE_FORMAT ? ": upgrade eos" : "");
	} else if (r == -ENOENT || (r >= 0 && format < EOS_STORE_FORMAT)) {
		eos_put_le32(v, EOS_STORE_FORMAT);
		r = eos_kv_put(st->kv, EOS_CF_META, key.data, key.len, v, sizeof(v), true, err);
	}
	eos_buf_release(&key);
	eos_buf_release(&val);
	return r < 0 ? r : 0;
}

/* The open failed on damage (err names it): add what can be done about it. */
static int
damage_advice(const char *dir, const char *db, int r, struct eos_error *err)
{
	char msg[EOS_ERROR_MSG_MAX];
	struct eos_kv_wal_damage d;

	if (r != -EBADMSG || !err)
		return r;
	snprintf(msg, sizeof(msg), "%s", err->msg);
	if (eos_kv_wal_check(db, &d, NULL) == 1)
		return eos_error_set(
			err, r,
			"%s; the store was not opened and nothing was changed: run "
			"'eos-store recover' to keep the writes before the damage and drop "
			"the rest (the logs are copied to '%s/lost+found' first), or restore "
			"the store from a backup",
			msg, dir);
	return eos_error_set(err, r,
			     "%s; the store cannot be opened: restore it from a backup, or import "
			     "its sandboxes again into a new store",
			     msg);
}

static struct eos_store *
store_alloc(const char *dir, const struct eos_store_options *opts)
{
	struct eos_store *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->lock_fd = -1;
	st->dir = strdup(dir);
	st->zstd_level = opts->zstd_level > 0 ? opts->zstd_level : DEFAULT_ZSTD_LEVEL;
	pthread_mutex_init(&st->write_lock, NULL);
	pthread_mutex_init(&st->pin_lock, NULL);
	pthread_cond_init(&st->pin_cond, NULL);
	pthread_mutex_init(&st->sbx_lock, NULL);
	pthread_mutex_init(&st->squash_lock, NULL);
	pthread_mutex_init(&st->obs_lock, NULL);
	if (!st->dir || eos_autosquash_init(st, opts->squash_threshold) < 0) {
		eos_store_close(st);
		return NULL;
	}
	return st;
}

/*
 * STORE/damaged: the store holds damage that makes RocksDB stop writing once a compaction meets
 * it, so it is opened the way a damaged table file is (eos_kv_options.damaged). Written when that
 * happened (at close) or fsck found damage; removed when fsck finds none. Its text says why.
 */
static char *
marker_path(const char *dir)
{
	char *p = NULL;

	return asprintf(&p, "%s/damaged", dir) < 0 ? NULL : p;
}

/* Whether the marker exists; its first line becomes st->damage. */
static bool
marker_read(struct eos_store *st)
{
	cleanup_free char *path = marker_path(st->dir);
	cleanup_fclose FILE *f = path ? fopen(path, "re") : NULL;
	char why[256] = "";

	if (!f)
		return false;
	if (fgets(why, sizeof(why), f))
		why[strcspn(why, "\n")] = '\0';
	if (asprintf(&st->damage, "it was found damaged (%s) and is opened without paranoid checks",
		     why) < 0)
		st->damage = NULL;
	return true;
}

int
eos_store_note_damage(struct eos_store *st, const char *why)
{
	cleanup_free char *path = marker_path(st->dir);
	cleanup_close int fd = -1;
	size_t n = why ? strlen(why) : 0;

	if (!path)
		return -ENOMEM;
	if (!why)
		return unlink(path) < 0 && errno != ENOENT ? eos_neg_errno() : 0;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || write(fd, why, n) != (ssize_t)n || write(fd, "\n", 1) != 1 || fsync(fd) < 0)
		return eos_neg_errno();
	return 0;
}

/*
 * Size RocksDB for the store's filesystem. When even opening could fill the filesystem (RocksDB
 * writes LOG, OPTIONS, MANIFEST and WAL files and flushes the old WAL at open, and must not meet
 * ENOSPC: store/space.h), an existing store opens read-only: reads work, writes fail with
 * -ENOSPC naming the store. A store to create fails with -ENOSPC.
 */
static int
store_open_space(struct eos_store *st, const char *db, struct eos_kv_options *ko,
		 struct eos_error *err)
{
	int r = eos_space_init(&st->space, st->dir, err);

	if (r < 0)
		return r;
	ko->space = &st->space.plan;
	ko->name = st->dir;
	r = eos_space_check_open(&st->space, db, err);
	if (r == -ENOSPC && eos_space_has_db(db)) {
		eos_error_clear(err);
		ko->read_only = true;
		return 0;
	}
	return r;
}

static int
store_open_parts(struct eos_store *st, const struct eos_store_options *opts, struct eos_error *err)
{
	struct eos_kv_options ko = { .threads = opts->threads, .create = opts->create };
	cleanup_free char *db = NULL;
	size_t cache = opts->cache_bytes ? opts->cache_bytes : DEFAULT_CACHE_BYTES;
	int r;

	r = eos_store_dir_prepare(st->dir, opts->create, err);
	if (r < 0)
		return r;
	r = eos_owner_lock_take(st->dir, opts, &st->lock_fd, err);
	if (r < 0)
		return r;
	if (asprintf(&db, "%s/db", st->dir) < 0)
		return -ENOMEM;
	ko.damaged = marker_read(st);
	r = store_open_space(st, db, &ko, err);
	if (r < 0)
		return r;
	r = eos_kv_open(db, &ko, &st->kv, err);
	if (r < 0)
		return eos_error_prefix(err, damage_advice(st->dir, db, r, err), "open store '%s'",
					st->dir);
	r = eos_chunk_cache_new(cache, &st->cache);
	if (r < 0)
		return eos_error_set(err, r, "chunk cache of %zu bytes: out of memory", cache);
	return check_format(st, err);
}

int
eos_store_open(const char *dir, const struct eos_store_options *opts, struct eos_store **ret,
	       struct eos_error *err)
{
	static const struct eos_store_options defaults = { 0 };
	struct eos_store *st;
	int r;

	if (!opts)
		opts = &defaults;
	if (!dir || !dir[0])
		return eos_error_set(err, -EINVAL, "store directory is empty");
	st = store_alloc(dir, opts);
	if (!st)
		return eos_error_set(err, -ENOMEM, "open store '%s': out of memory", dir);
	r = store_open_parts(st, opts, err);
	if (r < 0) {
		eos_store_close(st);
		return r;
	}
	*ret = st;
	return 0;
}

const char *
eos_store_damage(const struct eos_store *st)
{
	return eos_kv_damage(st->kv) ? eos_kv_damage(st->kv) : st->damage;
}

/* Describe damage d in ret, and name the directory its logs are saved in. */
static void
recovery_fill(struct eos_store_recovery *ret, const struct eos_kv_wal_damage *d)
{
	time_t now = time(NULL);
	struct tm tm;
	char stamp[32];

	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	snprintf(ret->log, sizeof(ret->log), "%s", d->file);
	snprintf(ret->saved, sizeof(ret->saved), "lost+found/wal-%s", stamp);
	ret->problem = d->problem;
	ret->offset = d->offset;
	ret->bytes = d->dropped + d->later_bytes;
	ret->files = 1 + d->later_files;
}

static int
recover_locked(const char *dir, struct eos_store_recovery *ret, struct eos_error *err)
{
	cleanup_free char *db = NULL;
	cleanup_free char *lost = NULL;
	cleanup_free char *save = NULL;
	struct eos_kv_wal_damage d;
	int r;

	if (asprintf(&db, "%s/db", dir) < 0 || asprintf(&lost, "%s/lost+found", dir) < 0)
		return eos_error_set(err, -ENOMEM, "out of memory");
	r = eos_kv_wal_check(db, &d, err);
	if (r <= 0)
		return r;
	recovery_fill(ret, &d);
	if (asprintf(&save, "%s/%s", dir, ret->saved) < 0)
		return eos_error_set(err, -ENOMEM, "out of memory");
	if (mkdir(lost, 0700) < 0 && errno != EEXIST)
		return eos_error_set(err, eos_neg_errno(), "create '%s': %s", lost,
				     strerror(errno));
	r = eos_kv_wal_drop(db, &d, save, err);
	if (r < 0)
		return r;
	ret->dropped = true;
	return 0;
}

int
eos_store_recover(const char *dir, struct eos_store_recovery *ret, struct eos_error *err)
{
	static const struct eos_store_options defaults = { 0 };
	cleanup_close int lock = -1;
	int r;

	*ret = (struct eos_store_recovery){ 0 };
	r = eos_store_dir_prepare(dir, false, err);
	if (r == 0)
		r = eos_owner_lock_take(dir, &defaults, &lock, err);
	if (r == 0)
		r = recover_locked(dir, ret, err);
	return r < 0 ? eos_error_prefix(err, r, "recover store '%s'", dir) : 0;
}

/* The bytes of the store's write-ahead logs: what the next open replays. */
static uint64_t
wal_bytes(const struct eos_store *st)
{
	cleanup_free char *db = NULL;
	cleanup_closedir DIR *d = NULL;
	uint64_t total = 0;
	struct dirent *e;

	if (asprintf(&db, "%s/db", st->dir) < 0 || !(d = opendir(db)))
		return 0;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		struct stat sb;

		if (len > 4 && !strcmp(e->d_name + len - 4, ".log") &&
		    fstatat(dirfd(d), e->d_name, &sb, 0) == 0)
			total += (uint64_t)sb.st_size;
	}
	return total;
}

/*
 * RocksDB does not write its memtables at close: the next open replays them from the WAL, which
 * after an import means tens of megabytes and a second before the store is usable. Writing them
 * now moves that cost to the close, where nobody waits for it. A short WAL is left as it is, so
 * that a short-lived opener does not leave a small table file behind at every close.
 */
static void
flush_if_large(struct eos_store *st)
{
	enum {
		FLUSH_AT_CLOSE = 4 << 20
	};
	struct eos_error err = { 0 };

	if (wal_bytes(st) >= FLUSH_AT_CLOSE && eos_kv_flush(st->kv, &err) < 0)
		eos_log_debug("store '%s': flush at close: %s", st->dir, err.msg);
}

void
eos_store_close(struct eos_store *st)
{
	if (!st)
		return;
	if (st->lock_fd >= 0)
		eos_owner_lock_closing(st->lock_fd);
	eos_autosquash_shutdown(st); /* its thread uses the kv */
	if (st->kv && eos_kv_stopped_by_damage(st->kv))
		eos_store_note_damage(st, "a compaction met damage: RocksDB stopped writing");
	else if (st->kv)
		flush_if_large(st);
	eos_kv_close(st->kv);
	eos_chunk_cache_free(st->cache);
	eos_space_release(&st->space);
	if (st->lock_fd >= 0)
		close(st->lock_fd); /* releases the flock */
	pthread_mutex_destroy(&st->write_lock);
	pthread_mutex_destroy(&st->pin_lock);
	pthread_cond_destroy(&st->pin_cond);
	pthread_mutex_destroy(&st->sbx_lock);
	pthread_mutex_destroy(&st->squash_lock);
	pthread_mutex_destroy(&st->obs_lock);
	free(st->sbx_cache);
	free(st->damage);
	free(st->dir);
	free(st);
}

void
eos_store_pin(struct eos_store *st)
{
	pthread_mutex_lock(&st->pin_lock);
	while (st->exclusive)
		pthread_cond_wait(&st->pin_cond, &st->pin_lock);
	st->pins++;
	pthread_mutex_unlock(&st->pin_lock);
}

void
eos_store_unpin(struct eos_store *st)
{
	pthread_mutex_lock(&st->pin_lock);
	st->pins--;
	if (st->pins == 0)
		pthread_cond_broadcast(&st->pin_cond);
	pthread_mutex_unlock(&st->pin_lock);
}

void
eos_store_exclusive_begin(struct eos_store *st)
{
	pthread_mutex_lock(&st->pin_lock);
	while (st->exclusive || st->pins > 0)
		pthread_cond_wait(&st->pin_cond, &st->pin_lock);
	st->exclusive = true;
	pthread_mutex_unlock(&st->pin_lock);
}

bool
eos_store_exclusive_try(struct eos_store *st)
{
	bool taken;

	pthread_mutex_lock(&st->pin_lock);
	taken = !st->exclusive && st->pins == 0;
	if (taken)
		st->exclusive = true;
	pthread_mutex_unlock(&st->pin_lock);
	return taken;
}

bool
eos_store_exclusive_when_idle(struct eos_store *st, int64_t timeout_ns)
{
	struct timespec until;
	bool taken;

	clock_gettime(CLOCK_REALTIME, &until); /* the condition variable's clock */
	until.tv_sec += (time_t)(timeout_ns / 1000000000LL);
	until.tv_nsec += (long)(timeout_ns % 1000000000LL);
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&st->pin_lock);
	while ((st->exclusive || st->pins > 0) &&
	       pthread_cond_timedwait(&st->pin_cond, &st->pin_lock, &until) == 0)
		;
	taken = !st->exclusive && st->pins == 0;
	if (taken)
		st->exclusive = true;
	pthread_mutex_unlock(&st->pin_lock);
	return taken;
}

void
eos_store_exclusive_end(struct eos_store *st)
{
	pthread_mutex_lock(&st->pin_lock);
	st->exclusive = false;
	pthread_cond_broadcast(&st->pin_cond);
	pthread_mutex_unlock(&st->pin_lock);
}
