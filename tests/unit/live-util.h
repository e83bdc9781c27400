/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the unit tests of a live session (test-publish-live.c, test-fork.c): a store in a
 * temp dir with one imported sandbox, one session view mounted in-process and served by a
 * thread (`lv`), plain syscalls on the mount, and the head and delta as the store has them. They
 * abort the test on failure (ck_assert).
 */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fs/view.h"
#include "store/store.h"

#define ck_ok(r, err) \
	ck_assert_msg((r) >= 0, "line %d: %s", __LINE__, eos_error_message(&(err), (r)))

extern const char SBX[];
extern const char BASE_A[]; /* a.txt at the base: five lines */
extern char *store_dir;
extern struct eos_store *st;

/* A session view mounted in-process and served by one thread. */
struct live {
	struct eos_view *v;
	struct eos_view_mount *m;
	pthread_t server;
	char *mnt;
};

extern struct live lv;
extern bool lv_writeback; /* lv_start opens the view with the writeback cache */

/* A process appending lines to a file of the mount for as long as the test runs. */
struct appender {
	pthread_t thread;
	atomic_bool stop;
	atomic_uint lines;
	int fd;
	int failed; /* errno of a failed or short write */
};

/* Import the base: a.txt (BASE_A), dir/b.txt, old/c.txt, links/h1 = links/h2 (hard links). */
void lv_import_base(void);
/* Open (creating) a view of session; inspect: for eos_view_check. */
struct eos_view *lv_view_open(const char *session, bool inspect);
/* pthread body: serve the mount arg until it is stopped. */
void *lv_serve_main(void *arg);
/* Open session, mount it at a fresh directory and serve it (lv). */
void lv_start(const char *session);
/* Unmount, stop serving, close (nothing when not started). */
void lv_stop(void);
/* Check fixture: a fresh store with the base imported; teardown stops lv and removes it. */
void lv_setup(void);
void lv_teardown(void);
/* rel below the mount (caller frees). */
char *lv_mnt_path(const char *rel);
int lv_mnt_open(const char *rel, int flags);
/* The whole file at fd (pread from 0), NUL-terminated into buf. */
const char *lv_fd_read(int fd, char *buf, size_t size);
const char *lv_mnt_read(const char *rel, char *buf, size_t size);
void lv_mnt_write(const char *rel, const char *text);
bool lv_mnt_exists(const char *rel);
/* The sandbox's head version. */
uint64_t lv_head_of(void);
/* path's content at the head into buf; false when absent. */
bool lv_head_read(const char *path, char *buf, size_t size);
/* Number of entries eos_view_delta() reports. */
size_t lv_delta_entries(struct eos_view *v);
/* eos_view_publish_live() of lv, which must decide. */
enum eos_publish_status lv_publish(void);
/* Session name (unmounted) sets path (top level) to text and publishes it. */
void lv_other_publishes(const char *name, const char *path, const char *text);
/* fsck finds nothing, nor does eos_view_check() of session (each violation on stderr). */
void lv_check_clean(const char *session);
/*
 * Run this test binary again as "<binary> mode store_dir mnt" (main() dispatches on mode) with
 * EOS_FAILPOINTS=failpoint=kill, wait for it to be SIGKILLed there, and detach its dead mount.
 */
void lv_run_child(const char *failpoint, const char *mode, const char *mnt);
/* In a crash child (no Check there): open the store at dir, mount s1 at mnt and serve it (lv);
 * 0, or -errno with the reason on stderr. */
int lv_child_mount(const char *dir, const char *mnt);
/* Detach the mount of a killed server (umount2 as root, else fusermount3 -uz). */
void lv_unmount_dead(const char *mnt);
/* Session name (unmounted) removes file dir/file and publishes. */
void lv_other_removes(const char *name, const char *dir, const char *file);
/* Start appending 8-byte lines "w%06u\n" to rel through the mount. */
void lv_appender_start(struct appender *a, const char *rel);
/* Stop; no write failed. */
void lv_appender_stop(struct appender *a);
/* text holds every line appended, in order. */
void lv_appender_check(const struct appender *a, const char *text);
