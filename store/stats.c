/* SPDX-License-Identifier: MIT */
/*
 * eos_store_stats: counts by scanning. The chunk scan reads every frame (with BlobDB that reads
 * the blob files): stats is a diagnostic, not a hot path.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/endian.h"
#include "common/error.h"

#include "store/cache.h"
#include "store/codec.h"
#include "store/kv.h"
#include "store/sandbox.h"
#include "store/store-internal.h"

enum {
	DISK_DEPTH_MAX = 16, /* the store directory is shallow; never follow deeper */
};

/* Scan cf over [lo, hi) (NULL = unbounded), with values when values is set. fn never fails. */
static int
scan(struct eos_store *st, enum eos_cf cf, const void *lo, size_t llen, const void *hi, size_t hlen,
     bool values, eos_kv_scan_fn fn, void *ctx, struct eos_error *err)
{
	struct eos_kv_scan s = {
		.cf = cf,
		.lo = lo,
		.llen = llen,
		.hi = hi,
		.hlen = hlen,
		.flags = EOS_KV_ITER_NO_CACHE_FILL,
		.values = values,
		.fn = fn,
		.ctx = ctx,
	};
	int r = eos_kv_scan(st->kv, &s, err);

	return r < 0 ? eos_error_prefix(err, r, "stats") : 0;
}

static int
count_key(void *ctx, const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen)
{
	uint64_t *n = ctx;

	(void)k;
	(void)klen;
	(void)v;
	(void)vlen;
	(*n)++;
	return 0;
}

static int
count_chunk(void *ctx, const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen)
{
	struct eos_store_stats *s = ctx;
	uint32_t raw = 0;

	(void)k;
	(void)klen;
	s->chunks++;
	s->chunk_stored_bytes += vlen;
	if (eos_codec_raw_len(v, vlen, &raw) == 0)
		s->chunk_raw_bytes += raw;
	return 0;
}

/* Sum of the sizes of the regular files below the directory fd (consumed). */
static uint64_t
disk_bytes(int dfd, unsigned depth)
{
	cleanup_closedir DIR *d = fdopendir(dfd);
	uint64_t sum = 0;
	struct dirent *de;

	if (!d) {
		close(dfd);
		return 0;
	}
	while ((de = readdir(d))) {
		struct stat sb;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISREG(sb.st_mode))
			sum += (uint64_t)sb.st_size;
		else if (S_ISDIR(sb.st_mode) && depth < DISK_DEPTH_MAX) {
			int fd = openat(dirfd(d), de->d_name,
					O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (fd >= 0)
				sum += disk_bytes(fd, depth + 1);
		}
	}
	return sum;
}

static int
count_sandboxes(struct eos_store *st, uint64_t *ret, struct eos_error *err)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf lo = { 0 };
	EOS_CLEANUP(eos_buf_release) struct eos_buf hi = { 0 };

	/* 0·"sandbox:" … up to 0·"sandbox;" (';' follows ':'). */
	if (eos_meta_key(&lo, EOS_SANDBOX_GLOBAL, "sandbox:") < 0 ||
	    eos_meta_key(&hi, EOS_SANDBOX_GLOBAL, "sandbox;") < 0)
		return eos_error_set(err, -ENOMEM, "stats: out of memory");
	return scan(st, EOS_CF_META, lo.data, lo.len, hi.data, hi.len, false, count_key, ret, err);
}

int
eos_store_stats(struct eos_store *st, struct eos_store_stats *ret, struct eos_error *err)
{
	struct eos_store_stats s = { 0 };
	int fd, r;

	r = eos_kv_flush(st->kv, err);
	if (r < 0)
		return eos_error_prefix(err, r, "stats: flush");
	r = scan(st, EOS_CF_CHUNKS, NULL, 0, NULL, 0, true, count_chunk, &s, err);
	if (r == 0)
		r = scan(st, EOS_CF_MANIFESTS, NULL, 0, NULL, 0, false, count_key, &s.manifests,
			 err);
	if (r == 0)
		r = scan(st, EOS_CF_ENTRIES, NULL, 0, NULL, 0, false, count_key, &s.entries, err);
	if (r == 0)
		r = count_sandboxes(st, &s.sandboxes, err);
	if (r < 0)
		return r;
	fd = open(st->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return eos_error_set(err, eos_neg_errno(), "stats: open '%s': %s", st->dir,
				     strerror(errno));
	s.disk_bytes = disk_bytes(fd, 0);
	eos_chunk_cache_counters(st->cache, &s.cache_hits, &s.cache_misses);
	*ret = s;
	return 0;
}
