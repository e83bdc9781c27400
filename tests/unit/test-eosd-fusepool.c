/* SPDX-License-Identifier: MIT */
/*
 * eosd's FUSE workers (supervisor/fusepool.h) over real mounts of real session views: every
 * mount is served by one pool of one or two threads while processes write, read through mmap,
 * list and stat in every session, and live publishes and forks run beside them, closing each
 * view's gate and invalidating the kernel's caches. A request that waited for another request
 * would leave the pool stuck here: the test's timeout turns that into a failure. Afterwards every
 * byte written is in the published head, and a mount unmounted from outside is reported ended.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"

#include "fs/view.h"
#include "store/store.h"
#include "supervisor/fusepool.h"
#include "tests/unit/live-util.h"
#include "tests/unit/testutil.h"

enum {
	SESSIONS = 6,
	FILES = 40, /* per writer and round */
	ROUNDS = 4, /* publishes of every session */
};

struct served {
	char name[16];
	struct eos_view *v;
	struct eos_view_mount *m;
	uint64_t id;
	char *mnt;
};

static struct eosd_fusepool *pool;
static struct eos_view_flusher *flusher;
static struct served sv[SESSIONS];
static atomic_bool stop;
static atomic_uint rounds_done[SESSIONS]; /* writer rounds completed */

static void
serve(struct served *s, const char *name)
{
	const struct eos_view_mount_options mo = { .host_served = true };
	struct eos_view_options o = {
		.store = st, .sandbox = SBX, .session = name, .create = true, .flusher = flusher
	};
	struct eos_error err = { 0 };
	int r;

	snprintf(s->name, sizeof(s->name), "%s", name);
	r = eos_view_open(&o, &s->v, &err);
	ck_ok(r, err);
	s->mnt = eos_test_tmpdir("pool-mnt");
	r = eos_view_mount(s->v, s->mnt, &mo, &s->m, &err);
	ck_ok(r, err);
	ck_assert_int_eq(eosd_fusepool_add(pool, s->m, &s->id), 0);
}

static void
unserve(struct served *s)
{
	if (!s->v)
		return;
	eosd_fusepool_remove(pool, s->id);
	eos_view_mount_free(s->m);
	eos_view_close(s->v);
	rmdir(s->mnt);
	free(s->mnt);
	*s = (struct served){ 0 };
}

static void
start(unsigned threads)
{
	struct eos_error err = { 0 };
	char name[16];
	int r;

	lv_setup();
	r = eosd_fusepool_new(threads, &pool, &err);
	ck_ok(r, err);
	ck_assert_uint_eq(eosd_fusepool_threads(pool), threads);
	r = eos_view_flusher_new(&flusher, &err);
	ck_ok(r, err);
	for (int i = 0; i < SESSIONS; i++) {
		snprintf(name, sizeof(name), "w%d", i);
		serve(&sv[i], name);
	}
	atomic_store(&stop, false);
	for (int i = 0; i < SESSIONS; i++)
		atomic_store(&rounds_done[i], 0);
}

static void
teardown(void)
{
	for (int i = 0; i < SESSIONS; i++)
		unserve(&sv[i]);
	eosd_fusepool_free(pool);
	pool = NULL;
	eos_view_flusher_free(flusher);
	flusher = NULL;
	lv_teardown();
}

/* --- the processes using the sessions ------------------------------------------------------- */

/* Round after round, FILES new files in the session's own directory, each written in two
 * writes; the round number is the last thing it writes. */
static void *
writer_main(void *arg)
{
	struct served *s = arg;
	cleanup_free char *dir = NULL;

	ck_assert_int_ge(asprintf(&dir, "%s/own-%s", s->mnt, s->name), 0);
	ck_assert_msg(mkdir(dir, 0755) == 0 || errno == EEXIST, "mkdir '%s': %m", dir);
	for (int round = 0; !atomic_load(&stop); round++) {
		for (int f = 0; f < FILES; f++) {
			cleanup_free char *p = NULL;
			char text[64];
			int fd;

			ck_assert_int_ge(asprintf(&p, "%s/f%03d", dir, f), 0);
			snprintf(text, sizeof(text), "%s file %d round %d\n", s->name, f, round);
			fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
			ck_assert_msg(fd >= 0, "open '%s': %m", p);
			ck_assert_int_eq(write(fd, text, 8), 8);
			ck_assert_int_eq(write(fd, text + 8, strlen(text) - 8),
					 (ssize_t)(strlen(text) - 8));
			ck_assert_int_eq(close(fd), 0);
		}
		atomic_fetch_add(&rounds_done[s - sv], 1);
	}
	return NULL;
}

/* Reads a.txt through mmap (page-cache reads that a publish invalidates) and walks the root. */
static void *
reader_main(void *arg)
{
	struct served *s = arg;
	cleanup_free char *a = NULL, *b = NULL;

	ck_assert_int_ge(asprintf(&a, "%s/a.txt", s->mnt), 0);
	ck_assert_int_ge(asprintf(&b, "%s/dir/b.txt", s->mnt), 0);
	while (!atomic_load(&stop)) {
		cleanup_close int fd = open(a, O_RDONLY | O_CLOEXEC);
		struct stat stb;
		char *map;

		ck_assert_msg(fd >= 0, "open '%s': %m", a);
		ck_assert_int_eq(fstat(fd, &stb), 0);
		map = mmap(NULL, (size_t)stb.st_size, PROT_READ, MAP_SHARED, fd, 0);
		ck_assert(map != MAP_FAILED);
		ck_assert_int_eq(memcmp(map, "line1\n", 6), 0);
		munmap(map, (size_t)stb.st_size);
		ck_assert_int_eq(stat(s->mnt, &stb), 0);
		ck_assert_int_eq(stat(b, &stb), 0);
	}
	return NULL;
}

static void
publish(struct served *s)
{
	struct eos_publish_result res = { 0 };
	struct eos_error err = { 0 };
	int r = eos_view_publish_live(s->v, s->m, NULL, &res, &err);

	ck_ok(r, err);
	ck_assert_msg(res.status == EOS_PUBLISH_PUBLISHED || res.status == EOS_PUBLISH_NO_OP,
		      "session '%s': publish status %d", s->name, res.status);
	eos_publish_result_release(&res);
}

/* The head's copy of every file the writer of s wrote: whole, and of one round. */
static void
check_head(const struct served *s)
{
	for (int f = 0; f < FILES; f++) {
		char path[320], buf[320], want[320];
		int round = -1;

		snprintf(path, sizeof(path), "own-%s/f%03d", s->name, f);
		ck_assert_msg(lv_head_read(path, buf, sizeof(buf)), "'%s' is not in the head",
			      path);
		ck_assert_int_eq(sscanf(buf, "%*s file %*d round %d", &round), 1);
		snprintf(want, sizeof(want), "%s file %d round %d\n", s->name, f, round);
		ck_assert_str_eq(buf, want);
	}
}

/* --- tests ------------------------------------------------------------------------------------ */

/* Until every writer has finished n rounds. */
static void
wait_rounds(unsigned n)
{
	for (int i = 0; i < SESSIONS; i++)
		while (atomic_load(&rounds_done[i]) < n)
			usleep(1000);
}

static void
run_under_load(unsigned threads)
{
	pthread_t writers[SESSIONS], readers[SESSIONS];
	struct eos_error err = { 0 };

	start(threads);
	for (int i = 0; i < SESSIONS; i++) {
		ck_assert_int_eq(pthread_create(&writers[i], NULL, writer_main, &sv[i]), 0);
		ck_assert_int_eq(pthread_create(&readers[i], NULL, reader_main, &sv[i]), 0);
	}
	for (int round = 0; round < ROUNDS; round++)
		for (int i = 0; i < SESSIONS; i++) {
			char fork_name[32];

			/* every publish and fork overlaps writes of every session */
			wait_rounds((unsigned)round + 1);
			publish(&sv[i]);
			snprintf(fork_name, sizeof(fork_name), "fork-%d-%d", i, round);
			ck_ok(eos_view_fork(sv[i].v, fork_name, &err), err);
		}
	atomic_store(&stop, true);
	for (int i = 0; i < SESSIONS; i++) {
		pthread_join(writers[i], NULL);
		pthread_join(readers[i], NULL);
	}
	for (int i = 0; i < SESSIONS; i++)
		publish(&sv[i]);
	for (int i = 0; i < SESSIONS; i++)
		check_head(&sv[i]);
	teardown();
}

START_TEST(test_one_worker_under_load)
{
	run_under_load(1);
}
END_TEST

START_TEST(test_two_workers_under_load)
{
	run_under_load(2);
}
END_TEST

/* A mount unmounted from outside is reported ended; the others go on being served. */
START_TEST(test_unmounted_from_outside)
{
	cleanup_free char *p = NULL;
	struct stat stb;
	int tries = 0;

	start(2);
	ck_assert(!eosd_fusepool_ended(pool, sv[0].id));
	lv_unmount_dead(sv[0].mnt);
	/* the kernel ends the connection once the mount is gone: wait for the workers to see it */
	while (!eosd_fusepool_ended(pool, sv[0].id) && tries++ < 1000)
		usleep(10000);
	ck_assert(eosd_fusepool_ended(pool, sv[0].id));
	ck_assert_int_ge(asprintf(&p, "%s/a.txt", sv[1].mnt), 0);
	ck_assert_int_eq(stat(p, &stb), 0);
	teardown();
}
END_TEST

/* Mounts come and go while others are busy; stale events of a removed mount are dropped. */
START_TEST(test_add_remove_while_serving)
{
	pthread_t readers[2];

	start(2);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&readers[i], NULL, reader_main, &sv[i]), 0);
	for (int round = 0; round < 20; round++) {
		char name[16];
		struct stat stb;
		cleanup_free char *p = NULL;

		unserve(&sv[2 + round % 4]);
		snprintf(name, sizeof(name), "w%d", 2 + round % 4);
		serve(&sv[2 + round % 4], name);
		ck_assert_int_ge(asprintf(&p, "%s/dir/b.txt", sv[2 + round % 4].mnt), 0);
		ck_assert_int_eq(stat(p, &stb), 0);
	}
	atomic_store(&stop, true);
	for (int i = 0; i < 2; i++)
		pthread_join(readers[i], NULL);
	teardown();
}
END_TEST

static Suite *
fusepool_suite(void)
{
	Suite *s = suite_create("eosd-fusepool");
	TCase *tc = tcase_create("pool");

	/* generous: on a loaded 2-core machine the load test takes seconds, a deadlock forever */
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_one_worker_under_load);
	tcase_add_test(tc, test_two_workers_under_load);
	tcase_add_test(tc, test_unmounted_from_outside);
	tcase_add_test(tc, test_add_remove_while_serving);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return eos_test_run(fusepool_suite());
}
