/* SPDX-License-Identifier: MIT */
/*
 * space-fill: how close to a full filesystem RocksDB gets behind eos' reserves (bench/README.md,
 * section "space"; the reserves are described in doc/store-format.md, "Free space").
 *
 *	space-fill [--sizes 64,256,1024] [--writers 2]
 *
 * For each size (MiB) a store is created alone on a fresh tmpfs of that size, in a mount
 * namespace of this process (as root; otherwise in a user namespace too). A thread samples the
 * free space every millisecond while, in turn:
 *  - fill: WRITERS threads commit change sets of 4 MiB of random files until the store refuses
 *    one with ENOSPC (the soft reserve);
 *  - records: session batches of 64 puts of 1 KiB until refused (the hard reserve);
 *  - reopen: the store is closed and opened (RocksDB flushes its WAL into tables);
 *  - reclaim: every sandbox is destroyed and gc runs (compactions give the space back).
 * Reported per size: the reserves, the free space when the store refused, the lowest free space
 * seen in each phase, and that over the hard reserve (what of it RocksDB never used). Uses the
 * public API only.
 *
 * Output: one line per figure, "name<TAB>value<TAB>unit", on stdout; progress on stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"

#include "bench/bench-util.h"
#include "store/store.h"

#define MIB (1024.0 * 1024.0)

enum {
	FILE_BYTES = 512 * 1024,
	FILES_PER_SET = 8,
	RECORD_BYTES = 1024,
	RECORDS_PER_BATCH = 64,
};

struct run {
	const char *fs;
	char store[256];
	struct eos_store *st;
	_Atomic uint64_t min_free;
	_Atomic bool stop;
	_Atomic unsigned next_set;
	_Atomic int refused; /* the first error of the fill phase */
};

static void
report(unsigned size, const char *name, double value, const char *unit)
{
	char full[64];

	snprintf(full, sizeof(full), "fs%u.%s", size, name);
	bench_report(full, value, unit);
}

static uint64_t
avail(const char *dir)
{
	struct statvfs sv;

	if (statvfs(dir, &sv) < 0)
		return 0;
	return (uint64_t)sv.f_bavail * sv.f_frsize;
}

static void *
sampler(void *arg)
{
	struct run *r = arg;

	while (!atomic_load(&r->stop)) {
		uint64_t f = avail(r->fs);

		if (f < atomic_load(&r->min_free))
			atomic_store(&r->min_free, f);
		usleep(1000);
	}
	return NULL;
}

/* Lowest free space since the last call; starts a new phase. */
static double
phase_min(struct run *r)
{
	uint64_t m = atomic_exchange(&r->min_free, UINT64_MAX);
	uint64_t now = avail(r->fs);

	return (double)(m < now ? m : now) / MIB;
}

/* One new sandbox of FILES_PER_SET random files. */
static int
write_set(struct run *r, unsigned set, uint8_t *data, struct eos_error *err)
{
	EOS_CLEANUP(eos_changeset_freep) struct eos_changeset *cs = NULL;
	struct eos_attr attr = { .mode = 0644, .mtime_ns = 1700000000LL * 1000000000LL };
	struct eos_commit_result res;
	char id[32], path[32];
	int e;

	snprintf(id, sizeof(id), "s%u", set);
	e = eos_changeset_new_sandbox(r->st, id, "bench", &attr, &cs, err);
	for (unsigned i = 0; e == 0 && i < FILES_PER_SET; i++) {
		bench_fill(data, FILE_BYTES, (uint64_t)set * 100 + i);
		snprintf(path, sizeof(path), "f%u", i);
		e = eos_changeset_put_file_mem(cs, path, &attr, data, FILE_BYTES, err);
	}
	return e ?: eos_changeset_commit(cs, 0, &res, err);
}

static void *
writer(void *arg)
{
	struct run *r = arg;
	cleanup_free uint8_t *data = malloc(FILE_BYTES);
	struct eos_error err = { 0 };

	while (data && atomic_load(&r->refused) == 0) {
		int e = write_set(r, atomic_fetch_add(&r->next_set, 1), data, &err);

		if (e < 0) {
			int zero = 0;

			if (atomic_compare_exchange_strong(&r->refused, &zero, e))
				fprintf(stderr, "  fill stops: %s\n", eos_error_message(&err, e));
		}
	}
	return NULL;
}

static int
phase_fill(struct run *r, unsigned size, unsigned writers)
{
	pthread_t t[16];

	for (unsigned i = 0; i < writers; i++)
		pthread_create(&t[i], NULL, writer, r);
	for (unsigned i = 0; i < writers; i++)
		pthread_join(t[i], NULL);
	report(size, "fill.refused_with_enospc", atomic_load(&r->refused) == -ENOSPC, "bool");
	report(size, "fill.free_when_refused", (double)avail(r->fs) / MIB, "MiB");
	report(size, "fill.sets_written", atomic_load(&r->next_set) - writers - 1, "sets");
	report(size, "fill.min_free", phase_min(r), "MiB");
	return 0;
}

static int
phase_records(struct run *r, unsigned size)
{
	EOS_CLEANUP(eos_session_batch_freep) struct eos_session_batch *b = NULL;
	struct eos_error err = { 0 };
	char key[32], val[RECORD_BYTES];
	unsigned n = 0;
	int e = eos_session_batch_new(r->st, "s0", "ws", &b, &err);
	memset(val, 'r', sizeof(val));
	while (e == 0) {
		for (unsigned i = 0; i < RECORDS_PER_BATCH; i++, n++) {
			snprintf(key, sizeof(key), "k%08u", n);
			eos_session_batch_put(b, key, strlen(key), val, sizeof(val));
		}
		e = eos_session_batch_write(b, false, &err);
	}
	fprintf(stderr, "  records stop: %s\n", eos_error_message(&err, e));
	report(size, "records.refused_with_enospc", e == -ENOSPC, "bool");
	report(size, "records.written", n - RECORDS_PER_BATCH, "records");
	report(size, "records.free_when_refused", (double)avail(r->fs) / MIB, "MiB");
	report(size, "records.min_free", phase_min(r), "MiB");
	return 0;
}

static int
open_store(struct run *r)
{
	struct eos_store_options o = { .create = true, .cache_bytes = 8 << 20 };
	struct eos_error err = { 0 };
	int e = eos_store_open(r->store, &o, &r->st, &err);

	if (e < 0)
		fprintf(stderr, "space-fill: open: %s\n", eos_error_message(&err, e));
	return e;
}

static int
phase_reclaim(struct run *r, unsigned size)
{
	cleanup_free struct eos_sandbox_info *sbs = NULL;
	struct eos_error err = { 0 };
	size_t n = 0;
	int e;

	eos_store_close(r->st);
	r->st = NULL;
	if (open_store(r) < 0)
		return 1;
	report(size, "reopen.min_free", phase_min(r), "MiB");
	e = eos_store_sandbox_list(r->st, &sbs, &n, &err);
	for (size_t i = 0; e == 0 && i < n; i++)
		e = eos_store_sandbox_destroy(r->st, sbs[i].id, &err);
	e = e ?: eos_store_gc(r->st, NULL, &err);
	if (e < 0)
		fprintf(stderr, "space-fill: reclaim: %s\n", eos_error_message(&err, e));
	report(size, "reclaim.ok", e == 0, "bool");
	report(size, "reclaim.min_free", phase_min(r), "MiB");
	report(size, "reclaim.free_after", (double)avail(r->fs) / MIB, "MiB");
	return 0;
}

/* The session the records phase writes to, on a first sandbox made while there is room. */
static int
make_session(struct run *r)
{
	cleanup_free uint8_t *data = malloc(FILE_BYTES);
	struct eos_error err = { 0 };
	int e = data ? write_set(r, atomic_fetch_add(&r->next_set, 1), data, &err) : -ENOMEM;

	e = e ?: eos_store_session_create(r->st, "s0", "ws", 0, NULL, &err);
	if (e < 0)
		fprintf(stderr, "space-fill: session: %s\n", eos_error_message(&err, e));
	return e;
}

static int
run_size(unsigned size, unsigned writers)
{
	char fs[] = "/tmp/space-fill-XXXXXX", opts[64];
	struct run r = { .fs = fs, .min_free = UINT64_MAX };
	struct eos_store_space sp;
	pthread_t samp;
	int e;

	if (!mkdtemp(fs))
		return 1;
	snprintf(opts, sizeof(opts), "size=%um,mode=0700", size);
	if (mount("tmpfs", fs, "tmpfs", 0, opts) < 0) {
		fprintf(stderr, "space-fill: mount tmpfs: %s\n", strerror(errno));
		return 1;
	}
	snprintf(r.store, sizeof(r.store), "%s/s", fs);
	if (open_store(&r) < 0)
		return 1;
	eos_store_space(r.st, &sp, NULL);
	report(size, "soft_reserve", (double)sp.soft_reserve / MIB, "MiB");
	report(size, "hard_reserve", (double)sp.hard_reserve / MIB, "MiB");
	fprintf(stderr, "fs of %u MiB: filling\n", size);
	if (make_session(&r) < 0)
		return 1;
	pthread_create(&samp, NULL, sampler, &r);
	e = phase_fill(&r, size, writers) ?: phase_records(&r, size) ?: phase_reclaim(&r, size);
	atomic_store(&r.stop, true);
	pthread_join(samp, NULL);
	eos_store_close(r.st);
	umount2(fs, MNT_DETACH);
	rmdir(fs);
	return e;
}

static int
write_map(const char *file, const char *text)
{
	cleanup_close int fd = open(file, O_WRONLY | O_CLOEXEC);

	return fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text) ? 0 : -1;
}

/* A mount namespace of our own (and a user namespace when not root): tmpfs without cleanup. */
static int
enter_namespace(void)
{
	char map[64];
	unsigned uid = (unsigned)geteuid(), gid = (unsigned)getegid();

	if (uid != 0) {
		if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
			return -1;
		snprintf(map, sizeof(map), "0 %u 1", uid);
		if (write_map("/proc/self/setgroups", "deny") < 0 ||
		    write_map("/proc/self/uid_map", map) < 0)
			return -1;
		snprintf(map, sizeof(map), "0 %u 1", gid);
		if (write_map("/proc/self/gid_map", map) < 0)
			return -1;
	} else if (unshare(CLONE_NEWNS) < 0) {
		return -1;
	}
	return mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "sizes", required_argument, NULL, 's' },
		{ "writers", required_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 },
	};
	char sizes_default[] = "64,256,1024";
	char *sizes = sizes_default, *save = NULL;
	unsigned writers = 2;
	int c;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (c == 's')
			sizes = optarg;
		else if (c == 'w' && atoi(optarg) > 0 && atoi(optarg) <= 16)
			writers = (unsigned)atoi(optarg);
		else
			return 2;
	}
	if (enter_namespace() < 0) {
		fprintf(stderr, "space-fill: cannot make a mount namespace: %s\n", strerror(errno));
		return 1;
	}
	for (char *s = strtok_r(sizes, ",", &save); s; s = strtok_r(NULL, ",", &save))
		if (run_size((unsigned)strtoul(s, NULL, 10), writers) != 0)
			return 1;
	return 0;
}
