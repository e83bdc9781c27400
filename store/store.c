/* SPDX-License-Identifier: MIT */
/*
 * Store lifecycle: the owner lock, the RocksDB database, the format check, the chunk cache, and
 * the pin/exclusive protocol that keeps chunk deletion away from content staging.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/endian.h"

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
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
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
 * The pid holding a flock on fd's file, from /proc/locks ("1: FLOCK ADVISORY WRITE <pid>
 * <maj>:<min>:<ino> 0 EOF", device numbers in hex), 0 when not found.
 */
static long
flock_holder(int fd)
{
	cleanup_fclose FILE *f = fopen("/proc/locks", "re");
	char line[256];
	struct stat sb;

	if (!f || fstat(fd, &sb) < 0)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned maj, min;
		unsigned long long ino;
		long pid;

		if (sscanf(line, "%*d: FLOCK %*s %*s %ld %x:%x:%llu", &pid, &maj, &min, &ino) ==
			    4 &&
		    maj == major(sb.st_dev) && min == minor(sb.st_dev) && ino == sb.st_ino)
			return pid;
	}
	return 0;
}

/* Read the pid recorded in an owner lock file, 0 when unknown. */
static long
owner_pid(int fd)
{
	char buf[32] = { 0 }, *end = NULL;
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	long pid;

	if (n <= 0)
		return 0;
	errno = 0;
	pid = strtol(buf, &end, 10);
	if (errno || end == buf || (*end != '\n' && *end != '\0') || pid <= 0)
		return 0; /* not written yet, or not by eos */
	return pid;
}

static int
take_owner_lock(const char *dir, int *ret_fd, struct eos_error *err)
{
	cleanup_free char *path = NULL;
	cleanup_close int fd = -1;
	char text[32];
	long pid;
	int n;

	if (asprintf(&path, "%s/owner.lock", dir) < 0)
		return -ENOMEM;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return eos_error_set(err, eos_neg_errno(), "open '%s': %s", path, strerror(errno));
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK)
			return eos_error_set(err, eos_neg_errno(), "lock '%s': %s", path,
					     strerror(errno));
		pid = flock_holder(fd);
		if (pid <= 0)
			pid = owner_pid(fd);
		if (pid > 0)
			return eos_error_set(err, -EBUSY, "store '%s' is in use by pid %ld", dir,
					     pid);
		return eos_error_set(err, -EBUSY, "store '%s' is in use by another process", dir);
	}
	n = snprintf(text, sizeof(text), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, text, (size_t)n, 0) != n)
		return eos_error_set(err, eos_neg_errno(), "write '%s': %s", path, strerror(errno));
	*ret_fd = TAKE_FD(fd);
	return 0;
}

static int
prepare_dir(const char *dir, bool create, struct eos_error *err)
{
	struct stat sb;

	if (stat(dir, &sb) == 0) {
		if (!S_ISDIR(sb.st_mode))
			return eos_error_set(err, -ENOTDIR, "store '%s' is not a directory", dir);
		return 0;
	}
	if (errno != ENOENT)
		return eos_error_set(err, eos_neg_errno(), "store '%s': %s", dir, strerror(errno));
	if (!create)
		return eos_error_set(err, -ENOENT, "store '%s' does not exist", dir);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return eos_error_set(err, eos_neg_errno(), "create store '%s': %s", dir,
				     strerror(errno));
	return 0;
}

/* Write the format number into a new store, or refuse a store written by a newer eos. */
static int
check_format(struct eos_store *st, struct eos_error *err)
{
	struct eos_buf key, val;
	uint8_t v[4];
	uint32_t format;
	int r;

	eos_buf_init(&key);
	eos_buf_init(&val);
	r = eos_meta_key(&key, EOS_SANDBOX_GLOBAL, "format");
	if (r >= 0)
		r = eos_kv_get(st->kv, NULL, EOS_CF_META, key.data, key.len, &val, err);
	if (r == -ENOENT) {
		eos_put_le32(v, EOS_STORE_FORMAT);
		r = eos_kv_put(st->kv, EOS_CF_META, key.data, key.len, v, sizeof(v), true, err);
	} else if (r >= 0 && val.len != 4) {
		r = eos_error_set(err, -EBADMSG, "store '%s': format record is corrupt", st->dir);
	} else if (r >= 0 && (format = eos_get_le32(val.data)) != EOS_STORE_FORMAT) {
		r = eos_error_set(err, format > EOS_STORE_FORMAT ? -EPROTONOSUPPORT : -EBADMSG,
				  "store '%s' has format %u, this eos reads format %u%s", st->dir,
				  format, EOS_STORE_FORMAT,
				  format > EOS_STORE_FORMAT ? ": upgrade eos" : "");
	}
	eos_buf_release(&key);
	eos_buf_release(&val);
	return r < 0 ? r : 0;
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
	if (!st->dir || eos_autosquash_init(st, opts->squash_threshold) < 0) {
		eos_store_close(st);
		return NULL;
	}
	return st;
}

static int
store_open_parts(struct eos_store *st, const struct eos_store_options *opts, struct eos_error *err)
{
	struct eos_kv_options ko = { .threads = opts->threads, .create = opts->create };
	cleanup_free char *db = NULL;
	size_t cache = opts->cache_bytes ? opts->cache_bytes : DEFAULT_CACHE_BYTES;
	int r;

	r = prepare_dir(st->dir, opts->create, err);
	if (r < 0)
		return r;
	r = take_owner_lock(st->dir, &st->lock_fd, err);
	if (r < 0)
		return r;
	if (asprintf(&db, "%s/db", st->dir) < 0)
		return -ENOMEM;
	r = eos_kv_open(db, &ko, &st->kv, err);
	if (r < 0)
		return eos_error_prefix(err, r, "open store '%s'", st->dir);
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

void
eos_store_close(struct eos_store *st)
{
	if (!st)
		return;
	eos_autosquash_shutdown(st); /* its thread uses the kv */
	eos_kv_close(st->kv);
	eos_chunk_cache_free(st->cache);
	if (st->lock_fd >= 0)
		close(st->lock_fd); /* releases the flock */
	pthread_mutex_destroy(&st->write_lock);
	pthread_mutex_destroy(&st->pin_lock);
	pthread_cond_destroy(&st->pin_cond);
	pthread_mutex_destroy(&st->sbx_lock);
	pthread_mutex_destroy(&st->squash_lock);
	free(st->sbx_cache);
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
