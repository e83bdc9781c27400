/* SPDX-License-Identifier: MIT */
/*
 * Scenarios of the publish gate (issue 4, "Tests"): two sessions merging and blame afterwards, a
 * rejected session retained and retried, six sessions publishing from six threads, twenty blind
 * writers of one path, and provenance: layer owners, write ranges, editor-style saves, identical
 * rewrites and renames keeping line owners. Also the result's counts and the calling contract.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"

#include "store/store.h"
#include "tests/unit/publish-util.h"
#include "tests/unit/testutil.h"

#define WS_A "workspace_session:a"
#define WS_B "workspace_session:b"

static const struct pu_op one_two[] = { PU_F("f", "one\ntwo\n"), PU_F("g", "g\n"), PU_NONE };

static enum eos_publish_status
publish_f(const char *session, uint64_t base, const char *owner, const char *text,
	  struct eos_publish_result *res)
{
	const struct pu_op ops[] = { PU_F("f", text), PU_NONE };

	return pu_publish(session, base, owner, ops, res);
}

/* --- two sessions ----------------------------------------------------------------------------- */

START_TEST(test_two_sessions_merge_and_blame)
{
	struct eos_publish_result res;

	pu_sandbox(one_two);
	pu_session("a", 1);
	pu_session("b", 1);
	ck_assert_int_eq(publish_f("a", 0, NULL, "ONE\ntwo\n", NULL), EOS_PUBLISH_PUBLISHED);
	ck_assert_int_eq(publish_f("b", 0, NULL, "one\ntwo\ntail\n", &res), EOS_PUBLISH_PUBLISHED);
	ck_assert_uint_eq(res.version, 3);
	ck_assert_uint_eq(res.merged, 1);
	ck_assert_str_eq(res.owner, WS_B);
	eos_publish_result_release(&res);
	pu_expect_file(0, "f", "ONE\ntwo\ntail\n", 0644);
	pu_expect_owners(0, "f", WS_A, EOS_OWNER_ORIGINAL, WS_B);
	/* every retained version keeps its own blame */
	pu_expect_owners(2, "f", WS_A, EOS_OWNER_ORIGINAL);
	pu_expect_owners(1, "f", EOS_OWNER_ORIGINAL, EOS_OWNER_ORIGINAL);
	pu_expect_owners(0, "g", EOS_OWNER_ORIGINAL);
	ck_assert_str_eq(pu_layer(2).owner, WS_A);
	ck_assert_str_eq(pu_layer(3).owner, WS_B);
	pu_fsck_clean();
}
END_TEST

START_TEST(test_two_change_sets_merge_and_blame)
{
	pu_sandbox(one_two);
	ck_assert_int_eq(publish_f(NULL, 1, "operation:a", "ONE\ntwo\n", NULL),
			 EOS_PUBLISH_PUBLISHED);
	ck_assert_int_eq(publish_f(NULL, 1, "operation:b", "one\ntwo\ntail\n", NULL),
			 EOS_PUBLISH_PUBLISHED);
	pu_expect_file(0, "f", "ONE\ntwo\ntail\n", 0644);
	pu_expect_owners(0, "f", "operation:a", EOS_OWNER_ORIGINAL, "operation:b");
	ck_assert_str_eq(pu_layer(3).owner, "operation:b");
}
END_TEST

START_TEST(test_rejected_session_retained_then_retried)
{
	struct eos_publish_result res;
	struct pu_state before, after;

	pu_sandbox(one_two);
	pu_session("a", 1);
	pu_session("b", 1);
	pu_session_record("b", "k1", "v1");
	pu_session_record("b", "k2", "v2");
	ck_assert_int_eq(publish_f("a", 0, NULL, "uno\ntwo\n", NULL), EOS_PUBLISH_PUBLISHED);
	pu_state_read(&before, "b");
	ck_assert_int_eq(publish_f("b", 0, NULL, "ONE\ntwo\n", &res), EOS_PUBLISH_REJECTED);
	pu_expect_conflict(&res, "f", "content");
	eos_publish_result_release(&res);
	pu_state_read(&after, "b");
	pu_state_expect_same(&before, &after);
	ck_assert_uint_eq(after.session.version, 1);
	ck_assert_uint_eq(after.lease, 1);
	ck_assert_uint_eq(pu_delta_count("b"), 2);
	pu_state_release(&before);
	pu_state_release(&after);
	pu_fsck_clean();
	/* b fixes its edit (still on its leased version 1) and publishes again: it merges */
	ck_assert_int_eq(publish_f("b", 0, NULL, "uno\ntwo\nthree\n", &res), EOS_PUBLISH_PUBLISHED);
	ck_assert_uint_eq(res.base, 1);
	ck_assert_uint_eq(res.version, 3);
	eos_publish_result_release(&res);
	ck_assert_uint_eq(pu_layer_count(), 3);
	pu_expect_file(0, "f", "uno\ntwo\nthree\n", 0644);
	pu_expect_owners(0, "f", WS_A, EOS_OWNER_ORIGINAL, WS_B);
	ck_assert_uint_eq(pu_delta_count("b"), 0);
	ck_assert_uint_eq(pu_session_lease("b"), 3);
	pu_fsck_clean();
}
END_TEST

START_TEST(test_rejected_change_set_retried_on_new_head)
{
	struct eos_publish_result res;

	pu_sandbox(one_two);
	ck_assert_int_eq(publish_f(NULL, 1, "operation:a", "uno\ntwo\n", NULL),
			 EOS_PUBLISH_PUBLISHED);
	ck_assert_int_eq(publish_f(NULL, 1, "operation:b", "ONE\ntwo\n", &res),
			 EOS_PUBLISH_REJECTED);
	eos_publish_result_release(&res);
	ck_assert_uint_eq(pu_layer_count(), 2);
	ck_assert_int_eq(publish_f(NULL, 2, "operation:b", "ONE\ntwo\n", &res),
			 EOS_PUBLISH_PUBLISHED);
	ck_assert_uint_eq(res.base, 2);
	eos_publish_result_release(&res);
	ck_assert_uint_eq(pu_layer_count(), 3);
	pu_expect_file(0, "f", "ONE\ntwo\n", 0644);
	pu_expect_owners(0, "f", "operation:b", EOS_OWNER_ORIGINAL);
}
END_TEST

/* --- concurrency ------------------------------------------------------------------------------ */

enum {
	NSESSIONS = 6,
	NWRITERS = 20,
};

struct worker {
	pthread_t thread;
	pthread_barrier_t *start;
	unsigned i;
	struct eos_publish *p;
	struct eos_publish_result res;
	int r;
	char msg[256];
};

/* Prepare, wait for every thread, commit. */
static void *
worker_run(void *arg)
{
	struct worker *w = arg;
	struct eos_error err = { 0 };

	w->r = eos_publish_prepare(w->p, &err);
	pthread_barrier_wait(w->start);
	if (w->r >= 0)
		w->r = eos_publish_commit(w->p, &w->res, &err);
	if (w->r < 0)
		snprintf(w->msg, sizeof(w->msg), "%s", eos_error_message(&err, w->r));
	return NULL;
}

static void
run_workers(struct worker *w, unsigned n)
{
	pthread_barrier_t start;

	ck_assert_int_eq(pthread_barrier_init(&start, NULL, n), 0);
	for (unsigned i = 0; i < n; i++) {
		w[i].start = &start;
		ck_assert_int_eq(pthread_create(&w[i].thread, NULL, worker_run, &w[i]), 0);
	}
	for (unsigned i = 0; i < n; i++) {
		pthread_join(w[i].thread, NULL);
		ck_assert_msg(w[i].r == 0, "worker %u: %s", i, w[i].msg);
	}
	pthread_barrier_destroy(&start);
}

static void
session_worker_stage(struct worker *w)
{
	char name[16], path[16], text[64], fresh[16];
	const struct pu_op ops[] = { PU_F(path, text), PU_F(fresh, text), PU_NONE };

	snprintf(name, sizeof(name), "s%u", w->i);
	snprintf(path, sizeof(path), "f%u", w->i);
	snprintf(fresh, sizeof(fresh), "new%u", w->i);
	snprintf(text, sizeof(text), "line 1\nchanged by s%u\n", w->i);
	pu_session(name, 1);
	w->p = pu_begin(name, 0, NULL);
	pu_stage(w->p, ops);
}

START_TEST(test_six_sessions_in_parallel)
{
	static const struct pu_op base[] = {
		PU_F("f0", "line 1\nline 2\n"),
		PU_F("f1", "line 1\nline 2\n"),
		PU_F("f2", "line 1\nline 2\n"),
		PU_F("f3", "line 1\nline 2\n"),
		PU_F("f4", "line 1\nline 2\n"),
		PU_F("f5", "line 1\nline 2\n"),
		PU_NONE,
	};
	struct worker w[NSESSIONS] = { 0 };
	bool seen[NSESSIONS + 2] = { false };

	pu_sandbox(base);
	for (unsigned i = 0; i < NSESSIONS; i++) {
		w[i].i = i;
		session_worker_stage(&w[i]);
	}
	run_workers(w, NSESSIONS);
	for (unsigned i = 0; i < NSESSIONS; i++) {
		char path[16], text[64], owner[32], name[16];

		ck_assert_msg(w[i].res.status == EOS_PUBLISH_PUBLISHED, "s%u: %s", i,
			      pu_result_str(&w[i].res));
		ck_assert_uint_ge(w[i].res.version, 2);
		ck_assert_uint_le(w[i].res.version, NSESSIONS + 1);
		ck_assert_msg(!seen[w[i].res.version], "version reused");
		seen[w[i].res.version] = true;
		snprintf(path, sizeof(path), "f%u", i);
		snprintf(text, sizeof(text), "line 1\nchanged by s%u\n", i);
		snprintf(name, sizeof(name), "s%u", i);
		snprintf(owner, sizeof(owner), "workspace_session:s%u", i);
		pu_expect_file(0, path, text, 0644);
		snprintf(path, sizeof(path), "new%u", i);
		pu_expect_file(0, path, text, 0644);
		ck_assert_str_eq(pu_layer(w[i].res.version).owner, owner);
		ck_assert_uint_eq(pu_session_lease(name), w[i].res.version);
		eos_publish_result_release(&w[i].res);
		eos_publish_free(w[i].p);
	}
	ck_assert_uint_eq(pu_head(), NSESSIONS + 1);
	ck_assert_uint_eq(pu_layer_count(), NSESSIONS + 1);
	pu_fsck_clean();
}
END_TEST

static void
writer_text(unsigned i, char *out, size_t size)
{
	snprintf(out, size, "written by writer %u\n%s", i, i % 2 ? "odd\n" : "even\nand more\n");
}

static void
writer_stage(struct worker *w)
{
	char owner[32], text[128];
	const struct pu_op ops[] = { PU_F("shared", text), PU_NONE };

	snprintf(owner, sizeof(owner), "operation:w%02u", w->i);
	writer_text(w->i, text, sizeof(text));
	w->p = pu_begin(NULL, 0, owner);
	pu_stage(w->p, ops);
}

/* Layer v was written by writer i ("operation:wNN"), and shared at v is that writer's text. */
static unsigned
check_writer_layer(uint64_t v)
{
	struct eos_layer_info l = pu_layer(v);
	char text[128];
	unsigned i;

	ck_assert_msg(sscanf(l.owner, "operation:w%u", &i) == 1 && i < NWRITERS, "owner '%s'",
		      l.owner);
	writer_text(i, text, sizeof(text));
	pu_expect_file(v, "shared", text, 0644);
	ck_assert_str_eq(pu_line_owner_at(v, "shared", 1), l.owner);
	return i;
}

START_TEST(test_twenty_blind_writers)
{
	static const struct pu_op base[] = { PU_F("shared", "base\n"), PU_NONE };
	struct worker w[NWRITERS] = { 0 };
	bool seen[NWRITERS] = { false };

	pu_sandbox(base);
	for (unsigned i = 0; i < NWRITERS; i++) {
		w[i].i = i;
		writer_stage(&w[i]);
	}
	run_workers(w, NWRITERS);
	for (unsigned i = 0; i < NWRITERS; i++) {
		ck_assert_msg(w[i].res.status == EOS_PUBLISH_PUBLISHED, "w%u: %s", i,
			      pu_result_str(&w[i].res));
		eos_publish_result_release(&w[i].res);
		eos_publish_free(w[i].p);
	}
	ck_assert_uint_eq(pu_head(), NWRITERS + 1);
	ck_assert_uint_eq(pu_layer_count(), NWRITERS + 1);
	for (uint64_t v = 2; v <= NWRITERS + 1; v++) {
		unsigned i = check_writer_layer(v);

		ck_assert_msg(!seen[i], "writer %u owns two layers", i);
		seen[i] = true;
	}
	pu_fsck_clean();
}
END_TEST

/* --- provenance ------------------------------------------------------------------------------- */

START_TEST(test_layer_owners)
{
	struct eos_publish_result res;
	static const struct pu_op a[] = { PU_F("a", "a1\na2\n"), PU_NONE };
	static const struct pu_op b[] = { PU_F("b", "b\n"), PU_NONE };
	static const struct pu_op c[] = { PU_F("c", "c\n"), PU_NONE };

	pu_sandbox(one_two);
	pu_session("ws-1", 1);
	ck_assert_int_eq(pu_publish("ws-1", 0, NULL, a, &res), EOS_PUBLISH_PUBLISHED);
	ck_assert_str_eq(res.owner, "workspace_session:ws-1");
	eos_publish_result_release(&res);
	ck_assert_int_eq(pu_publish(NULL, 0, "operation:req-9", b, &res), EOS_PUBLISH_PUBLISHED);
	ck_assert_str_eq(res.owner, "operation:req-9");
	eos_publish_result_release(&res);
	ck_assert_int_eq(pu_publish(NULL, 3, NULL, c, &res), EOS_PUBLISH_PUBLISHED);
	ck_assert_str_eq(res.owner, EOS_OWNER_UNKNOWN);
	eos_publish_result_release(&res);
	ck_assert_str_eq(pu_layer(2).owner, "workspace_session:ws-1");
	ck_assert_str_eq(pu_layer(3).owner, "operation:req-9");
	ck_assert_str_eq(pu_layer(4).owner, EOS_OWNER_UNKNOWN);
	pu_expect_owners(0, "a", "workspace_session:ws-1", "workspace_session:ws-1");
	pu_expect_owners(0, "b", "operation:req-9");
	pu_expect_owners(0, "c", EOS_OWNER_UNKNOWN);
}
END_TEST

START_TEST(test_write_ranges_give_line_owners)
{
	static const struct pu_op base[] = { PU_F("old", "a\nb\nc\n"), PU_NONE };
	const struct eos_write_range fresh[] = {
		{ 0, 3, "operation:op-a" },
		{ 3, 9, "operation:op-b" },
	};
	const struct eos_write_range edit[] = { { 2, 4, "operation:op-c" } };
	EOS_CLEANUP(eos_publish_freep) struct eos_publish *p = NULL;
	struct eos_publish_result res;

	pu_sandbox(base);
	pu_session("s", 1);
	p = pu_begin("s", 0, NULL);
	/* line 4 is claimed by no range: the session owns it */
	pu_stage_ranged(p, "new", "l1\nl2\nl3\nl4\n", fresh, 2, NULL);
	pu_stage_ranged(p, "old", "a\nB\nc\n", edit, 1, NULL);
	ck_assert_int_eq(pu_commit(p, &res), EOS_PUBLISH_PUBLISHED);
	eos_publish_result_release(&res);
	pu_expect_owners(0, "new", "operation:op-a", "operation:op-b", "operation:op-b",
			 "workspace_session:s");
	pu_expect_owners(0, "old", EOS_OWNER_ORIGINAL, "operation:op-c", EOS_OWNER_ORIGINAL);
}
END_TEST

/* Publish f = text in session name (created on the head), all its bytes written by op. */
static void
session_save(const char *name, const char *text, const char *op)
{
	const struct eos_write_range all = { 0, strlen(text), op };
	EOS_CLEANUP(eos_publish_freep) struct eos_publish *p = NULL;
	struct eos_publish_result res;

	pu_session(name, 0);
	p = pu_begin(name, 0, NULL);
	pu_stage_ranged(p, "f", text, &all, 1, NULL);
	ck_assert_int_eq(pu_commit(p, &res), EOS_PUBLISH_PUBLISHED);
	eos_publish_result_release(&res);
}

START_TEST(test_editor_save_keeps_unchanged_owners)
{
	static const struct pu_op base[] = { PU_F("f", "1\n2\n3\n4\n"), PU_NONE };

	pu_sandbox(base);
	session_save("s1", "ONE\n2\n3\n4\n", "operation:op-a");
	pu_expect_owners(0, "f", "operation:op-a", EOS_OWNER_ORIGINAL, EOS_OWNER_ORIGINAL,
			 EOS_OWNER_ORIGINAL);
	/* another operation saves the whole file (temp file renamed over it) changing line 3 */
	session_save("s2", "ONE\n2\nTHREE\n4\n", "operation:op-e");
	pu_expect_owners(0, "f", "operation:op-a", EOS_OWNER_ORIGINAL, "operation:op-e",
			 EOS_OWNER_ORIGINAL);
	/* a plain change set saving the whole file, inserting a line */
	ck_assert_int_eq(publish_f(NULL, 3, "operation:op-x", "ONE\n2\nnew\nTHREE\n4\n", NULL),
			 EOS_PUBLISH_PUBLISHED);
	pu_expect_owners(0, "f", "operation:op-a", EOS_OWNER_ORIGINAL, "operation:op-x",
			 "operation:op-e", EOS_OWNER_ORIGINAL);
}
END_TEST

START_TEST(test_identical_rewrite_keeps_owners)
{
	static const struct pu_op base[] = { PU_F("f", "1\n2\n3\n"), PU_F("g", "g\n"), PU_NONE };
	const struct eos_write_range all = { 0, 6, "operation:op-z" };
	EOS_CLEANUP(eos_publish_freep) struct eos_publish *p = NULL;
	static const struct pu_op g[] = { PU_F("g", "G\n"), PU_NONE };
	struct eos_publish_result res;

	pu_sandbox(base);
	session_save("s1", "1\nTWO\n3\n", "operation:op-a");
	/* identical content written by op-z, and nothing else: no layer, owners kept */
	pu_session("s2", 0);
	p = pu_begin("s2", 0, NULL);
	pu_stage_ranged(p, "f", "1\nTWO\n3\n", &all, 1, NULL);
	ck_assert_int_eq(pu_commit(p, &res), EOS_PUBLISH_NO_OP);
	eos_publish_result_release(&res);
	eos_publish_free(TAKE_PTR(p));
	/* the same rewrite beside a real change: the layer is made, f's owners are kept */
	p = pu_begin("s2", 0, NULL);
	pu_stage_ranged(p, "f", "1\nTWO\n3\n", &all, 1, NULL);
	pu_stage(p, g);
	ck_assert_int_eq(pu_commit(p, &res), EOS_PUBLISH_PUBLISHED);
	eos_publish_result_release(&res);
	pu_expect_owners(0, "f", EOS_OWNER_ORIGINAL, "operation:op-a", EOS_OWNER_ORIGINAL);
	pu_expect_owners(0, "g", "workspace_session:s2");
}
END_TEST

START_TEST(test_rename_keeps_owners)
{
	static const struct pu_op base[] = { PU_F("f", "1\n2\n3\n"), PU_D("d"), PU_NONE };
	static const struct pu_op mv[] = { PU_MV("f", "d/moved"), PU_NONE };
	const struct eos_write_range r = { 2, 4, "operation:op-r" };
	EOS_CLEANUP(eos_publish_freep) struct eos_publish *p = NULL;
	struct eos_publish_result res;
	struct eos_error err = { 0 };

	pu_sandbox(base);
	session_save("s1", "1\n2\nthree\n", "operation:op-a");
	ck_assert_int_eq(pu_publish(NULL, 2, "operation:mv", mv, NULL), EOS_PUBLISH_PUBLISHED);
	pu_expect_absent(0, "f");
	pu_expect_file(0, "d/moved", "1\n2\nthree\n", 0644);
	pu_expect_owners(0, "d/moved", EOS_OWNER_ORIGINAL, EOS_OWNER_ORIGINAL, "operation:op-a");
	/* renamed and edited in one publish: line 2 is new, the others keep their owners */
	p = pu_begin(NULL, 3, "operation:mv2");
	ck_assert_int_eq(eos_publish_remove(p, "d/moved", &err), 0);
	pu_stage_ranged(p, "g", "1\nTWO\nthree\n", &r, 1, "d/moved");
	ck_assert_int_eq(pu_commit(p, &res), EOS_PUBLISH_PUBLISHED);
	eos_publish_result_release(&res);
	pu_expect_owners(0, "g", EOS_OWNER_ORIGINAL, "operation:op-r", "operation:op-a");
}
END_TEST

START_TEST(test_blame_binary_and_errors)
{
	static const struct pu_op base[] = { PU_D("d"), PU_L("l", "d"), PU_NONE };
	static const struct pu_op bin[] = { PU_FL("bin", "a\n\0b\nc", 6), PU_F("empty", ""),
					    PU_NONE };
	cleanup_free struct eos_blame_range *r = NULL;
	struct eos_error err = { 0 };
	size_t n = 0;
	int rc;

	pu_sandbox(base);
	ck_assert_int_eq(pu_publish(NULL, 0, "operation:bin", bin, NULL), EOS_PUBLISH_PUBLISHED);
	pu_blame(0, "bin", &r, &n);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(r[0].start_line, 1);
	ck_assert_str_eq(r[0].owner, "operation:bin");
	free(TAKE_PTR(r));
	pu_blame(0, "empty", &r, &n);
	ck_assert_uint_eq(n, 0);
	free(TAKE_PTR(r));
	rc = eos_store_blame(pu_st, pu_sbx, 0, "missing", &r, &n, &err);
	ck_assert_int_eq(rc, -ENOENT);
	ck_assert_ptr_nonnull(strstr(err.msg, "missing"));
	rc = eos_store_blame(pu_st, pu_sbx, 0, "d", &r, &n, &err);
	ck_assert_msg(rc == -EISDIR || rc == -EINVAL, "blame of a directory: %d", rc);
	rc = eos_store_blame(pu_st, pu_sbx, 0, "l", &r, &n, &err);
	ck_assert_msg(rc == -EISDIR || rc == -EINVAL, "blame of a symlink: %d", rc);
}
END_TEST

START_TEST(test_merge_keeps_write_range_owners)
{
	static const struct pu_op base[] = { PU_F("f", "1\n2\n3\n4\n5\n"), PU_NONE };
	const struct eos_write_range ra = { 0, 4, "operation:op-a" };
	/* b rewrote the whole file, but only its line 5 differs from the base */
	const struct eos_write_range rb = { 0, 10, "operation:op-b" };
	EOS_CLEANUP(eos_publish_freep) struct eos_publish *p = NULL;
	struct eos_publish_result res;

	pu_sandbox(base);
	pu_session("a", 1);
	pu_session("b", 1);
	p = pu_begin("a", 0, NULL);
	pu_stage_ranged(p, "f", "ONE\n2\n3\n4\n5\n", &ra, 1, NULL);
	ck_assert_int_eq(pu_commit(p, &res), EOS_PUBLISH_PUBLISHED);
	eos_publish_result_release(&res);
	eos_publish_free(TAKE_PTR(p));
	p = pu_begin("b", 0, NULL);
	pu_stage_ranged(p, "f", "1\n2\n3\n4\nFIVE\n", &rb, 1, NULL);
	ck_assert_int_eq(pu_commit(p, &res), EOS_PUBLISH_PUBLISHED);
	ck_assert_uint_eq(res.merged, 1);
	eos_publish_result_release(&res);
	pu_expect_file(0, "f", "ONE\n2\n3\n4\nFIVE\n", 0644);
	pu_expect_owners(0, "f", "operation:op-a", EOS_OWNER_ORIGINAL, EOS_OWNER_ORIGINAL,
			 EOS_OWNER_ORIGINAL, "operation:op-b");
}
END_TEST

/* Blame of every line of path at v, as one string (for comparisons). */
static void
blame_string(uint64_t v, const char *path, char *out, size_t size)
{
	cleanup_free struct eos_blame_range *r = NULL;
	size_t n = 0, off = 0;

	pu_blame(v, path, &r, &n);
	out[0] = '\0';
	for (size_t i = 0; i < n && off < size; i++)
		off += (size_t)snprintf(out + off, size - off, "%u+%u:%s;", r[i].start_line,
					r[i].line_count, r[i].owner);
}

START_TEST(test_squash_keeps_blame)
{
	static const struct pu_op base[] = { PU_F("f", "1\n2\n3\n4\n"), PU_NONE };
	struct eos_squash_result sq;
	struct eos_error err = { 0 };
	char before3[512], before5[512], after[512];
	int r;

	pu_sandbox(base);
	ck_assert_int_eq(publish_f(NULL, 0, "operation:v2", "A\n2\n3\n4\n", NULL),
			 EOS_PUBLISH_PUBLISHED);
	ck_assert_int_eq(publish_f(NULL, 0, "operation:v3", "A\nB\n3\n4\n", NULL),
			 EOS_PUBLISH_PUBLISHED);
	ck_assert_int_eq(publish_f(NULL, 0, "operation:v4", "A\nB\nC\n4\n", NULL),
			 EOS_PUBLISH_PUBLISHED);
	ck_assert_int_eq(publish_f(NULL, 0, "operation:v5", "A\nB\nC\nD\n", NULL),
			 EOS_PUBLISH_PUBLISHED);
	r = eos_store_lease_acquire(pu_st, pu_sbx, "keep", 3, NULL, &err);
	ck_ok(r, err);
	blame_string(3, "f", before3, sizeof(before3));
	blame_string(5, "f", before5, sizeof(before5));
	r = eos_store_squash(pu_st, pu_sbx, &sq, &err);
	ck_ok(r, err);
	ck_assert_uint_gt(sq.layers_removed, 0);
	blame_string(3, "f", after, sizeof(after));
	ck_assert_str_eq(after, before3);
	blame_string(5, "f", after, sizeof(after));
	ck_assert_str_eq(after, before5);
	pu_expect_owners(0, "f", "operation:v2", "operation:v3", "operation:v4", "operation:v5");
	pu_fsck_clean();
}
END_TEST

START_TEST(test_hard_link_and_xattr)
{
	static const struct pu_op base[] = { PU_F("f", "shared\n"), PU_NONE };
	static const struct pu_op ops[] = { PU_LINK("g", "f"), PU_F("h", "h\n"), PU_LINK("i", "h"),
					    PU_NONE };
	EOS_CLEANUP(eos_publish_freep) struct eos_publish *p = NULL;
	struct eos_publish_result res;
	struct eos_error err = { 0 };
	struct eos_stat sf, sg;
	int r;

	pu_sandbox(base);
	p = pu_begin(NULL, 1, "operation:links");
	pu_stage(p, ops);
	r = eos_publish_set_xattr(p, "h", "user.tag", "v1", 2, &err);
	ck_ok(r, err);
	ck_assert_int_eq(pu_commit(p, &res), EOS_PUBLISH_PUBLISHED);
	eos_publish_result_release(&res);
	pu_expect_file(0, "g", "shared\n", 0644);
	pu_expect_file(0, "i", "h\n", 0644);
	ck_ok(eos_store_stat(pu_st, pu_sbx, 0, "f", &sf, &err), err);
	ck_ok(eos_store_stat(pu_st, pu_sbx, 0, "g", &sg, &err), err);
	ck_assert_uint_ne(sg.link_group, 0);
	ck_assert_uint_eq(sf.link_group, sg.link_group);
	ck_ok(eos_store_stat(pu_st, pu_sbx, 0, "h", &sf, &err), err);
	ck_assert_uint_eq(sf.nxattrs, 1);
	pu_fsck_clean();
}
END_TEST

/* --- results and contract --------------------------------------------------------------------- */

START_TEST(test_result_counts_match_layer)
{
	static const struct pu_op base[] = {
		PU_F("mod", "m\n"),
		PU_F("del", "d\n"),
		PU_F("attr", "a\n"),
		PU_NONE,
	};
	static const struct pu_op ops[] = {
		PU_F("mod", "M!\n"), PU_RM("del"), PU_MODE("attr", 0600),
		PU_F("c1", "12345"), PU_D("c2"),   PU_NONE,
	};
	struct eos_publish_result res;
	struct eos_layer_info l;

	pu_sandbox(base);
	ck_assert_int_eq(pu_publish(NULL, 1, "operation:n", ops, &res), EOS_PUBLISH_PUBLISHED);
	ck_assert_uint_eq(res.staged, 5);
	ck_assert_uint_eq(res.created, 2);
	ck_assert_uint_eq(res.modified, 2);
	ck_assert_uint_eq(res.deleted, 1);
	ck_assert_uint_eq(res.merged, 0);
	ck_assert_uint_eq(res.bytes, 8);
	ck_assert_uint_eq(res.base, 1);
	ck_assert_uint_eq(res.head, 1);
	ck_assert(res.lock_ns >= 0 && res.prepare_ns >= 0 && res.total_ns >= res.lock_ns);
	/* the phases in order, for tracing (no session: nothing was captured) */
	ck_assert_int_eq(res.phases.capture_start, 0);
	ck_assert(res.phases.prepare_start > 0);
	ck_assert(res.phases.prepare_start <= res.phases.prepare_end);
	ck_assert(res.phases.prepare_end <= res.phases.lock_wait_start);
	ck_assert(res.phases.lock_wait_start <= res.phases.lock_acquired);
	ck_assert(res.phases.lock_acquired <= res.phases.check_end);
	ck_assert(res.phases.check_end <= res.phases.merge_end);
	ck_assert(res.phases.merge_end <= res.phases.commit_end);
	ck_assert(res.phases.commit_end <= res.phases.lock_released);
	ck_assert(res.lock_ns <= res.phases.lock_released - res.phases.lock_acquired);
	l = pu_layer(res.version);
	ck_assert_uint_eq(l.created, res.created);
	ck_assert_uint_eq(l.modified, res.modified);
	ck_assert_uint_eq(l.deleted, res.deleted);
	ck_assert_uint_eq(l.bytes, res.bytes);
	eos_publish_result_release(&res);
	pu_expect_file(0, "attr", "a\n", 0600);
}
END_TEST

START_TEST(test_commit_once_and_abort)
{
	static const struct pu_op ops[] = { PU_F("x", "x\n"), PU_NONE };
	EOS_CLEANUP(eos_publish_freep) struct eos_publish *p = NULL;
	struct eos_publish_result res;
	struct eos_error err = { 0 };

	pu_sandbox(one_two);
	/* freed without commit: nothing written */
	p = pu_begin(NULL, 1, "operation:abort");
	pu_stage(p, ops);
	ck_assert_int_eq(eos_publish_prepare(p, &err), 0);
	ck_assert_int_eq(eos_publish_prepare(p, &err), 0);
	eos_publish_free(TAKE_PTR(p));
	ck_assert_uint_eq(pu_layer_count(), 1);
	pu_expect_absent(0, "x");
	/* committed once; a second commit is refused */
	p = pu_begin(NULL, 1, "operation:once");
	pu_stage(p, ops);
	ck_assert_int_eq(pu_commit(p, &res), EOS_PUBLISH_PUBLISHED);
	eos_publish_result_release(&res);
	memset(&res, 0, sizeof(res));
	ck_assert_int_eq(eos_publish_commit(p, &res, &err), -EINVAL);
	ck_assert_uint_eq(pu_layer_count(), 2);
	pu_fsck_clean();
}
END_TEST

START_TEST(test_bad_arguments)
{
	struct eos_publish_options o = { .sandbox = "nope" };
	EOS_CLEANUP(eos_publish_freep) struct eos_publish *p = NULL;
	struct eos_publish_file f = { .attr = eos_test_attr(0644), .data = "x", .len = 1 };
	struct eos_error err = { 0 };
	int r;

	pu_sandbox(one_two);
	r = eos_publish_begin(pu_st, &o, &p, &err);
	ck_assert_int_eq(r, -ENOENT);
	ck_assert_ptr_nonnull(strstr(err.msg, "nope"));
	o.sandbox = pu_sbx;
	o.session = "ghost";
	r = eos_publish_begin(pu_st, &o, &p, &err);
	ck_assert_int_eq(r, -ENOENT);
	ck_assert_ptr_nonnull(strstr(err.msg, "ghost"));
	o.session = NULL;
	o.base = 99;
	r = eos_publish_begin(pu_st, &o, &p, &err);
	ck_assert_msg(r == -ENOENT || r == -EINVAL, "base 99: %d", r);
	p = pu_begin(NULL, 1, NULL);
	r = eos_publish_put_file(p, "../escape", &f, &err);
	ck_assert_int_eq(r, -EINVAL);
	r = eos_publish_put_file(p, "ok", &f, &err);
	ck_assert_int_eq(r, 0);
	r = eos_publish_put_file(p, "ok", &f, &err);
	ck_assert_int_eq(r, -EEXIST);
	ck_assert_ptr_nonnull(strstr(err.msg, "ok"));
}
END_TEST

START_TEST(test_data_path_and_session_dir)
{
	EOS_CLEANUP(eos_publish_freep) struct eos_publish *p = NULL;
	struct eos_publish_file f = { .attr = eos_test_attr(0755) };
	struct eos_publish_result res;
	struct eos_error err = { 0 };
	cleanup_free char *dir = NULL, *data = NULL;
	struct stat sb;
	int r;

	pu_sandbox(one_two);
	pu_session("s", 1);
	r = eos_store_session_dir(pu_st, pu_sbx, "s", &dir, &err);
	ck_ok(r, err);
	ck_assert_int_gt(asprintf(&data, "%s/blob-1", dir), 0);
	eos_test_write_file(data, "from a host file\n", 17, 0600);
	p = pu_begin("s", 0, NULL);
	f.data_path = data;
	ck_ok(eos_publish_put_file(p, "hosted", &f, &err), err);
	ck_assert_int_eq(pu_commit(p, &res), EOS_PUBLISH_PUBLISHED);
	eos_publish_result_release(&res);
	pu_expect_file(0, "hosted", "from a host file\n", 0755);
	/* the session's data directory is emptied after the publish */
	ck_assert_int_ne(lstat(data, &sb), 0);
}
END_TEST

static Suite *
scenario_suite(void)
{
	Suite *s = suite_create("publish-scenario");
	TCase *tc = tcase_create("scenarios");
	TCase *prov = tcase_create("provenance");

	tcase_add_checked_fixture(tc, pu_setup, pu_teardown);
	tcase_add_unchecked_fixture(tc, pu_suite_setup, pu_suite_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_two_sessions_merge_and_blame);
	tcase_add_test(tc, test_two_change_sets_merge_and_blame);
	tcase_add_test(tc, test_rejected_session_retained_then_retried);
	tcase_add_test(tc, test_rejected_change_set_retried_on_new_head);
	tcase_add_test(tc, test_six_sessions_in_parallel);
	tcase_add_test(tc, test_twenty_blind_writers);
	tcase_add_test(tc, test_result_counts_match_layer);
	tcase_add_test(tc, test_commit_once_and_abort);
	tcase_add_test(tc, test_bad_arguments);
	tcase_add_test(tc, test_data_path_and_session_dir);
	suite_add_tcase(s, tc);
	tcase_add_checked_fixture(prov, pu_setup, pu_teardown);
	tcase_add_unchecked_fixture(prov, pu_suite_setup, pu_suite_teardown);
	tcase_set_timeout(prov, 60);
	tcase_add_test(prov, test_layer_owners);
	tcase_add_test(prov, test_write_ranges_give_line_owners);
	tcase_add_test(prov, test_editor_save_keeps_unchanged_owners);
	tcase_add_test(prov, test_identical_rewrite_keeps_owners);
	tcase_add_test(prov, test_rename_keeps_owners);
	tcase_add_test(prov, test_blame_binary_and_errors);
	tcase_add_test(prov, test_merge_keeps_write_range_owners);
	tcase_add_test(prov, test_squash_keeps_blame);
	tcase_add_test(tc, test_hard_link_and_xattr);
	suite_add_tcase(s, prov);
	return s;
}

int
main(void)
{
	return eos_test_run(scenario_suite());
}
