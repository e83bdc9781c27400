/* SPDX-License-Identifier: MIT */
/*
 * The merge table of the publish gate (issue 4), row by row. Each row builds a base version and
 * two change sets made against it, publishes one then the other (both orders, as plain change
 * sets with an explicit base and as workspace sessions), and checks the outcome of the second:
 * status, the head's bytes, modes, conflict kinds, paths, details, fingerprints and line ranges.
 * A second publish that is rejected or a no-op must leave the head, the layer list, the tree and
 * the session (record, lease, delta records) exactly as they were, and fsck clean.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"

#include "store/store.h"
#include "tests/unit/publish-util.h"
#include "tests/unit/testutil.h"

/* One publication order in one mode: "x" and "y" are the two sides, first publishes first. */
struct pair {
	enum pu_mode mode;
	bool swap; /* y publishes first */
	const struct pu_op *base, *x, *y;
	struct eos_publish_result second; /* the outcome of the later publish */
	uint64_t head1;			  /* the head after the first publish */
	const char *second_name;	  /* "x" or "y" */
};

static const char *const side_owner[2][2] = {
	{ "operation:x", "operation:y" },
	{ "workspace_session:x", "workspace_session:y" },
};

/* Publish one side of the pair (name "x" or "y"). */
static enum eos_publish_status
publish_side(const struct pair *pr, const char *name, const struct pu_op *ops,
	     struct eos_publish_result *res)
{
	const char *owner = side_owner[pr->mode][name[0] == 'y'];

	if (pr->mode == PU_SESSION)
		return pu_publish(name, 0, NULL, ops, res);
	return pu_publish(NULL, 1, owner, ops, res);
}

/* A published session is reset: no delta records, its lease and record on the new head. */
static void
expect_session_reset(const char *name, uint64_t version)
{
	struct eos_session_info info;
	struct eos_error err = { 0 };
	int r = eos_store_session_get(pu_st, pu_sbx, name, &info, &err);

	ck_ok(r, err);
	ck_assert_uint_eq(info.version, version);
	ck_assert_uint_eq(pu_session_lease(name), version);
	ck_assert_uint_eq(pu_delta_count(name), 0);
}

static void
expect_published(const struct pair *pr, const char *name, const struct eos_publish_result *res,
		 uint64_t before)
{
	const char *owner = side_owner[pr->mode][name[0] == 'y'];
	struct eos_layer_info layer;

	ck_assert_uint_eq(res->version, before + 1);
	ck_assert_uint_eq(pu_head(), res->version);
	ck_assert_str_eq(res->owner, owner);
	layer = pu_layer(res->version);
	ck_assert_str_eq(layer.owner, owner);
	ck_assert_uint_eq(layer.parent, before);
	if (pr->mode == PU_SESSION)
		expect_session_reset(name, res->version);
}

static void
publish_first(struct pair *pr)
{
	const char *name = pr->swap ? "y" : "x";
	struct eos_publish_result res;
	enum eos_publish_status s;

	s = publish_side(pr, name, pr->swap ? pr->y : pr->x, &res);
	ck_assert_msg(s == EOS_PUBLISH_PUBLISHED, "first publish (%s): %s", name,
		      pu_result_str(&res));
	ck_assert_uint_eq(res.base, 1);
	expect_published(pr, name, &res, 1);
	pr->head1 = res.version;
	eos_publish_result_release(&res);
}

static void
publish_second(struct pair *pr)
{
	const char *name = pr->swap ? "x" : "y";
	struct pu_state before, after;
	enum eos_publish_status s;

	pr->second_name = name;
	pu_state_read(&before, pr->mode == PU_SESSION ? name : NULL);
	s = publish_side(pr, name, pr->swap ? pr->x : pr->y, &pr->second);
	ck_assert_uint_eq(pr->second.base, 1);
	ck_assert_uint_eq(pr->second.head, pr->head1);
	if (s == EOS_PUBLISH_PUBLISHED) {
		expect_published(pr, name, &pr->second, pr->head1);
		ck_assert_uint_eq(pu_layer_count(), before.layers + 1);
	} else {
		/* a rejection keeps the session as it was; a no-op may reset it */
		bool keep = s == EOS_PUBLISH_REJECTED && before.has_session;

		pu_state_read(&after, keep ? name : NULL);
		before.has_session = keep;
		pu_state_expect_same(&before, &after);
		pu_state_release(&after);
	}
	pu_state_release(&before);
	pu_fsck_clean();
}

/* Run the pair in mode and order: base, both sides begun on it, first then second. */
static void
pair_run(struct pair *pr)
{
	pu_sandbox(pr->base);
	if (pr->mode == PU_SESSION) {
		pu_session("x", 1);
		pu_session("y", 1);
		pu_session_record("x", "delta:x", "a record of x");
		pu_session_record("y", "delta:y", "a record of y");
	}
	publish_first(pr);
	publish_second(pr);
}

static void
pair_release(struct pair *pr)
{
	eos_publish_result_release(&pr->second);
}

/* A row's check, called once per mode and order after both publishes. */
typedef void (*row_fn)(struct pair *pr);

static void
each_order(const struct pu_op *base, const struct pu_op *x, const struct pu_op *y, row_fn check)
{
	for (int mode = PU_PLAIN; mode <= PU_SESSION; mode++)
		for (int swap = 0; swap <= 1; swap++) {
			struct pair pr = {
				.mode = (enum pu_mode)mode,
				.swap = swap,
				.base = base,
				.x = x,
				.y = y,
			};

			pair_run(&pr);
			check(&pr);
			pair_release(&pr);
		}
}

#define expect_status(pr, want)                                                         \
	ck_assert_msg((pr)->second.status == (want), "mode %d swap %d: %s", (pr)->mode, \
		      (pr)->swap, pu_result_str(&(pr)->second))

/* --- untouched paths -------------------------------------------------------------------------- */

static const struct pu_op base_ab[] = {
	PU_F("a", "a\n"),
	PU_F("b", "b\n"),
	PU_FL("bin", "\0\1\2", 3),
	PU_NONE,
};

static void
check_untouched(struct pair *pr)
{
	expect_status(pr, EOS_PUBLISH_PUBLISHED);
	ck_assert_uint_eq(pr->second.merged, 0);
	pu_expect_file(0, "a", "A\n", 0644);
	pu_expect_file(0, "b", "B\n", 0644);
	pu_expect_file_at(__LINE__, 0, "bin", "\0\1\3", 3, 0644);
	pu_expect_file(0, "c", "c\n", 0755);
}

START_TEST(test_untouched_taken_as_is)
{
	static const struct pu_op x[] = { PU_F("a", "A\n"), PU_FL("bin", "\0\1\3", 3), PU_NONE };
	static const struct pu_op y[] = { PU_F("b", "B\n"), PU_FX("c", "c\n"), PU_NONE };

	each_order(base_ab, x, y, check_untouched);
}
END_TEST

/* --- three-way text merges -------------------------------------------------------------------- */

static const char *merged_want;
static unsigned merged_mode;

static void
check_merged(struct pair *pr)
{
	expect_status(pr, EOS_PUBLISH_PUBLISHED);
	ck_assert_uint_eq(pr->second.merged, 1);
	pu_expect_file(0, "f", merged_want, merged_mode);
	ck_assert_uint_eq(pr->second.modified, 1);
}

static void
merge_case(const char *base, const char *x, const char *y, const char *want, unsigned mode)
{
	const struct pu_op b[] = { PU_FM("f", base, mode), PU_F("other", "o\n"), PU_NONE };
	const struct pu_op xo[] = { PU_FM("f", x, mode), PU_NONE };
	const struct pu_op yo[] = { PU_FM("f", y, mode), PU_NONE };

	merged_want = want;
	merged_mode = mode;
	each_order(b, xo, yo, check_merged);
}

START_TEST(test_merge_different_lines)
{
	merge_case("1\n2\n3\n4\n5\n", "ONE\n2\n3\n4\n5\n", "1\n2\n3\n4\nFIVE\n",
		   "ONE\n2\n3\n4\nFIVE\n", 0644);
	/* an insertion and a deletion far apart */
	merge_case("1\n2\n3\n4\n5\n6\n", "0\n1\n2\n3\n4\n5\n6\n", "1\n2\n3\n4\n6\n",
		   "0\n1\n2\n3\n4\n6\n", 0644);
}
END_TEST

START_TEST(test_merge_crlf_and_final_newline)
{
	merge_case("a\r\nb\r\nc\r\nd\r\n", "A\r\nb\r\nc\r\nd\r\n", "a\r\nb\r\nc\r\nD\r\n",
		   "A\r\nb\r\nc\r\nD\r\n", 0644);
	merge_case("a\nb\nc\nd", "A\nb\nc\nd", "a\nb\nc\nD", "A\nb\nc\nD", 0644);
	merge_case("a\nb\nc\nd", "A\nb\nc\nd", "a\nb\nc\nd\ne", "A\nb\nc\nd\ne", 0644);
	merge_case("a\r\nb\r\nc\r\nd", "A\r\nb\r\nc\r\nd", "a\r\nb\r\nc\r\nD", "A\r\nb\r\nc\r\nD",
		   0644);
	/* mixed line endings survive as they are */
	merge_case("a\nb\r\nc\nd\r\ne\n", "A\nb\r\nc\nd\r\ne\n", "a\nb\r\nc\nd\r\nE\r\n",
		   "A\nb\r\nc\nd\r\nE\r\n", 0644);
}
END_TEST

START_TEST(test_merge_keeps_exec_bit)
{
	merge_case("#!/bin/sh\n2\n3\n4\n", "#!/bin/bash\n2\n3\n4\n", "#!/bin/sh\n2\n3\nfour\n",
		   "#!/bin/bash\n2\n3\nfour\n", 0755);
}
END_TEST

static void
check_mode_and_content(struct pair *pr)
{
	expect_status(pr, EOS_PUBLISH_PUBLISHED);
	pu_expect_file(0, "f", "1\n2\n3\n", 0755);
}

START_TEST(test_mode_one_side_content_other)
{
	static const struct pu_op b[] = { PU_F("f", "1\n2\n"), PU_NONE };
	static const struct pu_op x[] = { PU_MODE("f", 0755), PU_NONE };
	static const struct pu_op y[] = { PU_F("f", "1\n2\n3\n"), PU_NONE };

	each_order(b, x, y, check_mode_and_content);
}
END_TEST

/* --- identical changes ------------------------------------------------------------------------ */

static void
check_identical_no_op(struct pair *pr)
{
	expect_status(pr, EOS_PUBLISH_NO_OP);
	ck_assert_uint_eq(pu_layer_count(), 2);
	pu_expect_file(0, "f", "1\nTWO\n", 0644);
	ck_assert_uint_eq(pu_kind(0, "n"), EOS_KIND_DIR);
	pu_expect_absent(0, "gone");
}

START_TEST(test_identical_change_is_no_op)
{
	static const struct pu_op b[] = { PU_F("f", "1\n2\n"), PU_F("gone", "g\n"), PU_NONE };
	static const struct pu_op x[] = {
		PU_F("f", "1\nTWO\n"),
		PU_D("n"),
		PU_RM("gone"),
		PU_NONE,
	};

	each_order(b, x, x, check_identical_no_op);
}
END_TEST

static void
check_identical_in_merge(struct pair *pr)
{
	expect_status(pr, EOS_PUBLISH_PUBLISHED);
	pu_expect_file(0, "f", "A\n2\nC\n4\nE\n6\n", 0644);
	pu_expect_file(0, "g", "g\n", 0644);
}

START_TEST(test_identical_line_changes_merge)
{
	static const struct pu_op b[] = { PU_F("f", "1\n2\n3\n4\n5\n6\n"), PU_NONE };
	static const struct pu_op x[] = { PU_F("f", "A\n2\nC\n4\n5\n6\n"), PU_F("g", "g\n"),
					  PU_NONE };
	static const struct pu_op y[] = { PU_F("f", "A\n2\n3\n4\nE\n6\n"), PU_F("g", "g\n"),
					  PU_NONE };

	each_order(b, x, y, check_identical_in_merge);
}
END_TEST

/* --- text conflicts --------------------------------------------------------------------------- */

static void
expect_lines(const struct eos_conflict *c, size_t i, uint32_t bs, uint32_t bc, uint32_t hs,
	     uint32_t hc, uint32_t ss, uint32_t sc)
{
	const struct eos_conflict_lines *l;

	ck_assert_msg(i < c->nlines, "conflict on '%s' has %zu regions, want more than %zu",
		      c->path, c->nlines, i);
	l = &c->lines[i];
	ck_assert_msg(
		l->base_start == bs && l->base_count == bc && l->head_start == hs &&
			l->head_count == hc && l->session_start == ss && l->session_count == sc,
		"'%s' region %zu: base %u+%u head %u+%u session %u+%u, want %u+%u %u+%u %u+%u",
		c->path, i, l->base_start, l->base_count, l->head_start, l->head_count,
		l->session_start, l->session_count, bs, bc, hs, hc, ss, sc);
}

/* The fingerprints of a content conflict on f between base b, head h and session s. */
static void
expect_fps(const struct eos_conflict *c, const char *b, const char *h, const char *s)
{
	char want[EOS_FINGERPRINT_MAX];

	pu_file_fp(b, strlen(b), 0644, want);
	ck_assert_str_eq(c->base_fp, want);
	pu_file_fp(h, strlen(h), 0644, want);
	ck_assert_str_eq(c->head_fp, want);
	pu_file_fp(s, strlen(s), 0644, want);
	ck_assert_str_eq(c->session_fp, want);
}

static const char overlap_base[] = "1\n2\n3\n4\n5\n";
static const char overlap_x[] = "1\nX\n3\n4\n5\n";
static const char overlap_y[] = "1\nY\n3\n4\n5\n";

static void
check_overlap(struct pair *pr)
{
	const struct eos_conflict *c = pu_expect_conflict(&pr->second, "f", "content");
	bool y2 = pr->second_name[0] == 'y';

	ck_assert_uint_eq(pr->second.nconflicts, 1);
	ck_assert_uint_eq(c->nlines, 1);
	expect_lines(c, 0, 2, 1, 2, 1, 2, 1);
	expect_fps(c, overlap_base, y2 ? overlap_x : overlap_y, y2 ? overlap_y : overlap_x);
	pu_expect_file(0, "f", y2 ? overlap_x : overlap_y, 0644);
	if (y2)
		pu_expect_absent(0, "extra");
	else
		pu_expect_file(0, "extra", "e\n", 0644);
}

START_TEST(test_overlapping_edits_conflict)
{
	static const struct pu_op b[] = { PU_F("f", overlap_base), PU_NONE };
	static const struct pu_op x[] = { PU_F("f", overlap_x), PU_NONE };
	/* the rejected side's other changes are not written either */
	static const struct pu_op y[] = { PU_F("f", overlap_y), PU_F("extra", "e\n"), PU_NONE };

	each_order(b, x, y, check_overlap);
}
END_TEST

static void
check_two_regions(struct pair *pr)
{
	const struct eos_conflict *c = pu_expect_conflict(&pr->second, "f", "content");

	ck_assert_uint_eq(c->nlines, 2);
	expect_lines(c, 0, 2, 1, 2, 1, 2, 1);
	/* x replaced line 8 by two lines; y deleted line 5 (no conflict) and replaced line 8 */
	if (pr->second_name[0] == 'y')
		expect_lines(c, 1, 8, 1, 8, 2, 7, 1);
	else
		expect_lines(c, 1, 8, 1, 7, 1, 8, 2);
}

START_TEST(test_every_region_listed)
{
	static const struct pu_op b[] = { PU_F("f", "1\n2\n3\n4\n5\n6\n7\n8\n9\n"), PU_NONE };
	static const struct pu_op x[] = { PU_F("f", "1\nX\n3\n4\n5\n6\n7\nnew\nx8\n9\n"), PU_NONE };
	static const struct pu_op y[] = { PU_F("f", "1\nY\n3\n4\n6\n7\ny8\n9\n"), PU_NONE };

	each_order(b, x, y, check_two_regions);
}
END_TEST

static void
check_insertions(struct pair *pr)
{
	const struct eos_conflict *c = pu_expect_conflict(&pr->second, "f", "content");
	const struct eos_conflict_lines *l;

	ck_assert_uint_eq(c->nlines, 1);
	l = &c->lines[0];
	ck_assert_uint_eq(l->base_count, 0);
	ck_assert_uint_eq(l->head_start, 2);
	ck_assert_uint_eq(l->head_count, 1);
	ck_assert_uint_eq(l->session_start, 2);
	ck_assert_uint_eq(l->session_count, 1);
}

START_TEST(test_insertions_at_same_point_conflict)
{
	static const struct pu_op b[] = { PU_F("f", "1\n2\n"), PU_NONE };
	static const struct pu_op x[] = { PU_F("f", "1\nA\n2\n"), PU_NONE };
	static const struct pu_op y[] = { PU_F("f", "1\nB\n2\n"), PU_NONE };

	each_order(b, x, y, check_insertions);
}
END_TEST

static void
check_both_created(struct pair *pr)
{
	pu_expect_conflict(&pr->second, "new", "content");
}

START_TEST(test_both_created_differently_conflict)
{
	static const struct pu_op b[] = { PU_F("keep", "k\n"), PU_NONE };
	static const struct pu_op x[] = { PU_F("new", "x\n"), PU_NONE };
	static const struct pu_op y[] = { PU_F("new", "y\n"), PU_NONE };

	each_order(b, x, y, check_both_created);
}
END_TEST

static void
check_all_listed(struct pair *pr)
{
	bool y2 = pr->second_name[0] == 'y';

	ck_assert_uint_eq(pr->second.nconflicts, 4);
	pu_expect_conflict(&pr->second, "p1", "content");
	pu_expect_conflict(&pr->second, "p2", "content");
	pu_expect_conflict(&pr->second, "p3", y2 ? "modify_delete" : "delete_modify");
	pu_expect_conflict(&pr->second, "z/bin", "binary");
	for (size_t i = 1; i < pr->second.nconflicts; i++)
		ck_assert_msg(
			strcmp(pr->second.conflicts[i - 1].path, pr->second.conflicts[i].path) < 0,
			"conflicts not sorted by path: %s", pu_result_str(&pr->second));
	/* the untouched path the rejected side changed is not written */
	pu_expect_file(0, "q", y2 ? "q\n" : "Q\n", 0644);
}

START_TEST(test_every_conflicting_path_listed)
{
	static const struct pu_op b[] = {
		PU_F("p1", "1\n2\n"),
		PU_F("p2", "1\n2\n"),
		PU_F("p3", "1\n2\n"),
		PU_F("q", "q\n"),
		PU_D("z"),
		PU_FL("z/bin", "\0b", 2),
		PU_NONE,
	};
	static const struct pu_op x[] = {
		PU_F("p1", "x\n2\n"),
		PU_F("p2", "1\nx\n"),
		PU_RM("p3"),
		PU_FL("z/bin", "\0x", 2),
		PU_NONE,
	};
	static const struct pu_op y[] = {
		PU_F("p1", "y\n2\n"), PU_F("p2", "1\ny\n"),	PU_F("p3", "1\n2\n3\n"),
		PU_F("q", "Q\n"),     PU_FL("z/bin", "\0y", 2), PU_NONE,
	};

	each_order(b, x, y, check_all_listed);
}
END_TEST

/* --- binary and large files ------------------------------------------------------------------- */

static void
check_binary(struct pair *pr)
{
	const struct eos_conflict *c = pu_expect_conflict(&pr->second, "f", "binary");

	ck_assert_uint_eq(c->nlines, 0);
	ck_assert_msg(strncmp(c->base_fp, "file:0644:", 10) == 0, "base_fp '%s'", c->base_fp);
	ck_assert_msg(strcmp(c->head_fp, c->session_fp) != 0, "same fingerprints");
}

/* A string literal and its length (NUL bytes included). */
#define BIN(s) (s), sizeof(s) - 1

static void
binary_case(const char *base, size_t bl, const char *x, size_t xl, const char *y, size_t yl)
{
	const struct pu_op b[] = { PU_FL("f", base, bl), PU_NONE };
	const struct pu_op xo[] = { PU_FL("f", x, xl), PU_NONE };
	const struct pu_op yo[] = { PU_FL("f", y, yl), PU_NONE };

	each_order(b, xo, yo, check_binary);
}

START_TEST(test_binary_conflict)
{
	/* both binary; on different "lines" even */
	binary_case(BIN("a\n\0\nc\n\nd\n"), BIN("A\n\0\nc\n\nd\n"), BIN("a\n\0\nc\n\nD\n"));
	/* one side made a text file binary (NUL), the other edited another line */
	binary_case(BIN("1\n2\n3\n4\n"), BIN("1\n\0\n3\n4\n"), BIN("1\n2\n3\nfour\n"));
	/* invalid UTF-8 is binary */
	binary_case(BIN("1\n2\n3\n4\n"), BIN("\xff\xfe\n2\n3\n4\n"), BIN("1\n2\n3\nfour\n"));
}
END_TEST

static void
check_binary_identical(struct pair *pr)
{
	expect_status(pr, EOS_PUBLISH_NO_OP);
	pu_expect_file_at(__LINE__, 0, "f", "\0\1x", 3, 0644);
}

START_TEST(test_binary_identical_no_conflict)
{
	static const struct pu_op b[] = { PU_FL("f", "\0\1\2", 3), PU_NONE };
	static const struct pu_op x[] = { PU_FL("f", "\0\1x", 3), PU_NONE };

	each_order(b, x, x, check_binary_identical);
}
END_TEST

enum {
	BIG_LINES = (8 << 20) / 13 + 100, /* "line 0000000\n" is 13 bytes: above 8 MiB */
};

/* A text file of BIG_LINES lines; line first (if set) and line last (if set) replaced. */
static char *
big_text(const char *first, const char *last, size_t *len)
{
	size_t size = (size_t)BIG_LINES * 13 + 64, off = 0;
	char *p = malloc(size);

	ck_assert_ptr_nonnull(p);
	for (unsigned i = 0; i < BIG_LINES; i++) {
		const char *repl = i == 0 ? first : i == BIG_LINES - 1 ? last : NULL;

		if (repl)
			off += (size_t)snprintf(p + off, size - off, "%s\n", repl);
		else
			off += (size_t)snprintf(p + off, size - off, "line %07u\n", i);
	}
	*len = off;
	return p;
}

static void
check_too_large(struct pair *pr)
{
	pu_expect_conflict(&pr->second, "big", "too_large");
}

START_TEST(test_too_large_conflict)
{
	size_t bl, xl, yl;
	cleanup_free char *b = big_text(NULL, NULL, &bl);
	cleanup_free char *x = big_text("first", NULL, &xl);
	cleanup_free char *y = big_text(NULL, "last", &yl);
	const struct pu_op bo[] = { PU_FL("big", b, bl), PU_NONE };
	const struct pu_op xo[] = { PU_FL("big", x, xl), PU_NONE };
	const struct pu_op yo[] = { PU_FL("big", y, yl), PU_NONE };

	ck_assert_uint_gt(bl, EOS_MERGE_TEXT_MAX);
	each_order(bo, xo, yo, check_too_large);
}
END_TEST

static void
check_small_to_large(struct pair *pr)
{
	pu_expect_conflict(&pr->second, "f", "too_large");
}

START_TEST(test_one_side_too_large_conflict)
{
	size_t yl;
	cleanup_free char *y = big_text("1", NULL, &yl);
	const struct pu_op bo[] = { PU_F("f", "1\n2\n3\n"), PU_NONE };
	const struct pu_op xo[] = { PU_F("f", "1\n2\nthree\n"), PU_NONE };
	const struct pu_op yo[] = { PU_FL("f", y, yl), PU_NONE };

	each_order(bo, xo, yo, check_small_to_large);
}
END_TEST

static const char *big_want;
static size_t big_want_len;

static void
check_large_identical(struct pair *pr)
{
	/* x changed only big, identically: nothing left for it when it comes second */
	expect_status(pr, pr->second_name[0] == 'y' ? EOS_PUBLISH_PUBLISHED : EOS_PUBLISH_NO_OP);
	pu_expect_file_at(__LINE__, 0, "big", big_want, big_want_len, 0644);
	pu_expect_file(0, "f", "other\n", 0644);
}

START_TEST(test_too_large_identical_merges)
{
	size_t bl, xl;
	cleanup_free char *b = big_text(NULL, NULL, &bl);
	cleanup_free char *x = big_text("first", NULL, &xl);
	const struct pu_op bo[] = { PU_FL("big", b, bl), PU_F("f", "1\n"), PU_NONE };
	const struct pu_op xo[] = { PU_FL("big", x, xl), PU_NONE };
	const struct pu_op yo[] = { PU_FL("big", x, xl), PU_F("f", "other\n"), PU_NONE };

	big_want = x;
	big_want_len = xl;
	each_order(bo, xo, yo, check_large_identical);
}
END_TEST

/* --- deletions -------------------------------------------------------------------------------- */

static void
check_delete_modify(struct pair *pr)
{
	bool y2 = pr->second_name[0] == 'y'; /* y modified, x deleted */
	const struct eos_conflict *c =
		pu_expect_conflict(&pr->second, "f", y2 ? "modify_delete" : "delete_modify");
	char fp[EOS_FINGERPRINT_MAX];

	pu_file_fp("1\n2\n", 4, 0644, fp);
	ck_assert_str_eq(c->base_fp, fp);
	if (y2) {
		ck_assert_str_eq(c->head_fp, "absent");
		pu_expect_absent(0, "f");
	} else {
		ck_assert_str_eq(c->session_fp, "absent");
		pu_file_fp("1\n2\n3\n", 6, 0644, fp);
		ck_assert_str_eq(c->head_fp, fp);
		pu_expect_file(0, "f", "1\n2\n3\n", 0644);
	}
}

START_TEST(test_delete_modify_conflict)
{
	static const struct pu_op b[] = { PU_F("f", "1\n2\n"), PU_NONE };
	static const struct pu_op x[] = { PU_RM("f"), PU_NONE };
	static const struct pu_op y[] = { PU_F("f", "1\n2\n3\n"), PU_NONE };

	each_order(b, x, y, check_delete_modify);
}
END_TEST

static void
check_delete_chmod(struct pair *pr)
{
	bool y2 = pr->second_name[0] == 'y';

	pu_expect_conflict(&pr->second, "f", y2 ? "modify_delete" : "delete_modify");
}

START_TEST(test_delete_chmod_conflict)
{
	static const struct pu_op b[] = { PU_F("f", "1\n2\n"), PU_NONE };
	static const struct pu_op x[] = { PU_RM("f"), PU_NONE };
	static const struct pu_op y[] = { PU_MODE("f", 0755), PU_NONE };

	each_order(b, x, y, check_delete_chmod);
}
END_TEST

static void
check_both_deleted(struct pair *pr)
{
	expect_status(pr, EOS_PUBLISH_NO_OP);
	pu_expect_absent(0, "f");
	pu_expect_absent(0, "d");
}

START_TEST(test_both_deleted_no_op)
{
	static const struct pu_op b[] = { PU_F("f", "1\n"), PU_D("d"), PU_F("d/a", "a"), PU_NONE };
	static const struct pu_op x[] = { PU_RM("f"), PU_RM("d"), PU_NONE };

	each_order(b, x, x, check_both_deleted);
}
END_TEST

/* --- type changes ----------------------------------------------------------------------------- */

static void
check_type(struct pair *pr)
{
	const struct eos_conflict *c = pu_expect_conflict(&pr->second, "f", "type");
	char fp[EOS_FINGERPRINT_MAX];

	pu_file_fp("1\n2\n", 4, 0644, fp);
	ck_assert_str_eq(c->base_fp, fp);
}

START_TEST(test_type_change_conflict)
{
	static const struct pu_op b[] = { PU_F("f", "1\n2\n"), PU_NONE };
	static const struct pu_op to_dir[] = { PU_OPQ("f"), PU_F("f/inner", "i\n"), PU_NONE };
	static const struct pu_op to_link[] = { PU_L("f", "target"), PU_NONE };
	static const struct pu_op edit[] = { PU_F("f", "1\n2\n3\n"), PU_NONE };

	each_order(b, to_dir, edit, check_type);
	each_order(b, to_link, edit, check_type);
	each_order(b, to_link, to_dir, check_type);
}
END_TEST

static void
check_link_type(struct pair *pr)
{
	const struct eos_conflict *c = pu_expect_conflict(&pr->second, "l", "type");

	ck_assert_msg(strncmp(c->base_fp, "symlink:", 8) == 0, "base_fp '%s'", c->base_fp);
}

START_TEST(test_symlink_to_file_conflict)
{
	static const struct pu_op b[] = { PU_L("l", "a"), PU_NONE };
	static const struct pu_op to_file[] = { PU_F("l", "now a file\n"), PU_NONE };
	static const struct pu_op retarget[] = { PU_L("l", "b"), PU_NONE };

	each_order(b, to_file, retarget, check_link_type);
}
END_TEST

static void
check_same_type_change(struct pair *pr)
{
	expect_status(pr, EOS_PUBLISH_NO_OP);
	ck_assert_uint_eq(pu_kind(0, "f"), EOS_KIND_SYMLINK);
}

START_TEST(test_identical_type_change_no_op)
{
	static const struct pu_op b[] = { PU_F("f", "1\n2\n"), PU_NONE };
	static const struct pu_op x[] = { PU_L("f", "target"), PU_NONE };

	each_order(b, x, x, check_same_type_change);
}
END_TEST

/* --- directories ------------------------------------------------------------------------------ */

/* The later side is rejected, naming the descendant: "directory" on the removed directory
 * (detail: the descendant) or "parent" on the descendant (detail: the directory). */
static const char *dir_removed = "d", *dir_descendant = "d/new";
static bool dir_x_removes = true;
static bool dir_descendant_in_base; /* the descendant existed at the base (modified) */

/* a is dir or below it, and an ancestor of dir_descendant. */
static bool
is_ancestor_within(const char *a, const char *dir)
{
	size_t n = strlen(a), d = strlen(dir);

	return strncmp(a, dir, d) == 0 && (a[d] == '\0' || a[d] == '/') &&
	       strncmp(dir_descendant, a, n) == 0 && dir_descendant[n] == '/';
}

static void
check_dir_conflict(struct pair *pr)
{
	bool remover_second = (pr->second_name[0] == 'x') == dir_x_removes;
	const struct eos_conflict *c;

	if (remover_second) {
		c = pu_expect_conflict(&pr->second, dir_removed, "directory");
		ck_assert_msg(c->detail && strcmp(c->detail, dir_descendant) == 0,
			      "directory conflict detail '%s', want '%s'",
			      c->detail ? c->detail : "(null)", dir_descendant);
		ck_assert_ptr_nonnull(strstr(c->message, dir_descendant));
	} else if (dir_descendant_in_base) {
		/* a file of the base changed below a directory the head removed */
		c = pu_conflict(&pr->second, dir_descendant);
		ck_assert_msg(c && (c->kind == EOS_CONFLICT_PARENT ||
				    c->kind == EOS_CONFLICT_MODIFY_DELETE),
			      "no parent or modify_delete conflict on '%s': %s", dir_descendant,
			      pu_result_str(&pr->second));
	} else {
		c = pu_expect_conflict(&pr->second, dir_descendant, "parent");
		ck_assert_msg(c->detail && is_ancestor_within(c->detail, dir_removed),
			      "parent conflict detail '%s', want '%s' (or a directory below it)",
			      c->detail ? c->detail : "(null)", dir_removed);
	}
}

static const struct pu_op dir_base[] = {
	PU_D("d"),   PU_F("d/a", "a\n"),   PU_F("d/b", "b\n"),
	PU_D("d/e"), PU_F("d/e/f", "f\n"), PU_F("top", "t\n"),
	PU_NONE,
};

START_TEST(test_remove_dir_vs_add_inside)
{
	static const struct pu_op rm[] = { PU_RM("d"), PU_NONE };
	static const struct pu_op add[] = { PU_F("d/new", "n\n"), PU_NONE };

	dir_removed = "d";
	dir_descendant = "d/new";
	dir_descendant_in_base = false;
	each_order(dir_base, rm, add, check_dir_conflict);
}
END_TEST

START_TEST(test_remove_dir_vs_modify_inside)
{
	static const struct pu_op rm[] = { PU_RM("d"), PU_NONE };
	static const struct pu_op mod[] = { PU_F("d/a", "A\n"), PU_NONE };
	static const struct pu_op deep[] = { PU_F("d/e/g", "g\n"), PU_NONE };

	dir_removed = "d";
	dir_descendant = "d/a";
	dir_descendant_in_base = true;
	each_order(dir_base, rm, mod, check_dir_conflict);
	dir_descendant = "d/e/g";
	dir_descendant_in_base = false;
	each_order(dir_base, rm, deep, check_dir_conflict);
}
END_TEST

static void
check_many_inside(struct pair *pr)
{
	const struct eos_conflict *c;

	if (pr->second_name[0] != 'x') {
		ck_assert_uint_eq(pr->second.nconflicts, 3);
		return;
	}
	/* the remover is refused once, naming one of the changed descendants */
	c = pu_expect_conflict(&pr->second, "d", "directory");
	ck_assert_uint_eq(pr->second.nconflicts, 1);
	ck_assert_msg(c->detail &&
			      (strcmp(c->detail, "d/a") == 0 || strcmp(c->detail, "d/b") == 0 ||
			       strcmp(c->detail, "d/e/f") == 0),
		      "detail '%s'", c->detail ? c->detail : "(null)");
}

START_TEST(test_remove_dir_vs_many_changes_inside)
{
	static const struct pu_op rm[] = { PU_RM("d"), PU_NONE };
	static const struct pu_op mod[] = {
		PU_F("d/a", "A\n"),
		PU_F("d/b", "B\n"),
		PU_F("d/e/f", "F\n"),
		PU_NONE,
	};

	each_order(dir_base, rm, mod, check_many_inside);
}
END_TEST

START_TEST(test_replace_dir_vs_change_inside)
{
	static const struct pu_op opaque[] = { PU_OPQ("d"), PU_F("d/x", "x\n"), PU_NONE };
	static const struct pu_op mod[] = { PU_F("d/e/f", "F\n"), PU_NONE };

	dir_removed = "d";
	dir_descendant = "d/e/f";
	dir_descendant_in_base = true;
	each_order(dir_base, opaque, mod, check_dir_conflict);
}
END_TEST

static void
check_dir_to_file(struct pair *pr)
{
	bool remover_second = pr->second_name[0] == 'x';
	const struct eos_conflict *c;

	if (remover_second) {
		c = pu_expect_conflict(&pr->second, "d", "directory");
		ck_assert_str_eq(c->detail, "d/a");
	} else {
		c = pu_conflict(&pr->second, "d/a");
		ck_assert_msg(c && (c->kind == EOS_CONFLICT_PARENT ||
				    c->kind == EOS_CONFLICT_MODIFY_DELETE),
			      "no parent or modify_delete conflict on 'd/a': %s",
			      pu_result_str(&pr->second));
	}
}

START_TEST(test_dir_replaced_by_file_vs_change_inside)
{
	static const struct pu_op base[] = { PU_D("d"), PU_F("d/a", "a\n"), PU_NONE };
	static const struct pu_op to_file[] = { PU_F("d", "now a file\n"), PU_NONE };
	static const struct pu_op mod[] = { PU_F("d/a", "A\n"), PU_NONE };

	each_order(base, to_file, mod, check_dir_to_file);
}
END_TEST

static void
check_same_dir(struct pair *pr)
{
	expect_status(pr, EOS_PUBLISH_PUBLISHED);
	ck_assert_uint_eq(pu_kind(0, "n"), EOS_KIND_DIR);
	ck_assert_uint_eq(pu_kind(0, "n/deep"), EOS_KIND_DIR);
	pu_expect_file(0, "n/x", "x\n", 0644);
	pu_expect_file(0, "n/y", "y\n", 0644);
	pu_expect_file(0, "n/deep/x", "x\n", 0644);
	pu_expect_file(0, "n/deep/y", "y\n", 0644);
}

START_TEST(test_both_create_same_directory)
{
	static const struct pu_op b[] = { PU_F("keep", "k\n"), PU_NONE };
	static const struct pu_op x[] = {
		PU_D("n"), PU_F("n/x", "x\n"), PU_D("n/deep"), PU_F("n/deep/x", "x\n"), PU_NONE,
	};
	static const struct pu_op y[] = {
		PU_D("n"), PU_F("n/y", "y\n"), PU_D("n/deep"), PU_F("n/deep/y", "y\n"), PU_NONE,
	};

	each_order(b, x, y, check_same_dir);
}
END_TEST

/* --- attributes and symlinks ------------------------------------------------------------------ */

static void
check_mode_conflict(struct pair *pr)
{
	const struct eos_conflict *c = pu_expect_conflict(&pr->second, "f", "mode");

	ck_assert_msg(strncmp(c->session_fp, "file:07", 7) == 0, "session_fp '%s'", c->session_fp);
	pu_expect_file(0, "f", "1\n", pr->second_name[0] == 'y' ? 0755 : 0700);
}

START_TEST(test_mode_conflict)
{
	static const struct pu_op b[] = { PU_F("f", "1\n"), PU_NONE };
	static const struct pu_op x[] = { PU_MODE("f", 0755), PU_NONE };
	static const struct pu_op y[] = { PU_MODE("f", 0700), PU_NONE };

	each_order(b, x, y, check_mode_conflict);
}
END_TEST

static void
check_same_mode(struct pair *pr)
{
	expect_status(pr, EOS_PUBLISH_NO_OP);
	pu_expect_file(0, "f", "1\n", 0755);
}

START_TEST(test_same_mode_no_op)
{
	static const struct pu_op b[] = { PU_F("f", "1\n"), PU_NONE };
	static const struct pu_op x[] = { PU_MODE("f", 0755), PU_NONE };

	each_order(b, x, x, check_same_mode);
}
END_TEST

static void
check_symlink_conflict(struct pair *pr)
{
	const struct eos_conflict *c = pu_expect_conflict(&pr->second, "l", "symlink");

	ck_assert_msg(strncmp(c->base_fp, "symlink:", 8) == 0, "base_fp '%s'", c->base_fp);
	ck_assert_msg(strncmp(c->head_fp, "symlink:", 8) == 0, "head_fp '%s'", c->head_fp);
	ck_assert_msg(strcmp(c->head_fp, c->session_fp) != 0 && strcmp(c->head_fp, c->base_fp) != 0,
		      "fingerprints %s %s %s", c->base_fp, c->head_fp, c->session_fp);
}

START_TEST(test_symlink_conflict)
{
	static const struct pu_op b[] = { PU_L("l", "a"), PU_NONE };
	static const struct pu_op x[] = { PU_L("l", "b"), PU_NONE };
	static const struct pu_op y[] = { PU_L("l", "c"), PU_NONE };

	each_order(b, x, y, check_symlink_conflict);
}
END_TEST

/* --- .gitignore ------------------------------------------------------------------------------- */

static void
check_ignored(struct pair *pr)
{
	const char *w = pr->second_name[0] == 'y' ? "y\n" : "x\n";

	expect_status(pr, EOS_PUBLISH_PUBLISHED);
	pu_expect_file(0, "build/out", w, 0644);
	pu_expect_file(0, "app.log", w, 0644);
	pu_expect_file(0, "sub/local.txt", w, 0644);
	pu_expect_file(0, "sub/deep/local.txt", w, 0644);
	pu_expect_file_at(__LINE__, 0, "blob.bin", pr->second_name[0] == 'y' ? "\0y" : "\0x", 2,
			  0644);
	if (pr->second_name[0] == 'x')
		pu_expect_absent(0, "gone.log");
	else
		pu_expect_file(0, "gone.log", "y\n", 0644);
}

START_TEST(test_gitignored_last_writer_wins)
{
	static const struct pu_op b[] = {
		PU_F(".gitignore", "build/\n*.log\n/blob.bin\n"),
		PU_D("build"),
		PU_F("build/out", "0\n"),
		PU_F("app.log", "0\n"),
		PU_F("gone.log", "0\n"),
		PU_FL("blob.bin", "\0\0", 2),
		PU_D("sub"),
		PU_F("sub/.gitignore", "local.txt\n"),
		PU_F("sub/local.txt", "0\n"),
		PU_D("sub/deep"),
		PU_F("sub/deep/local.txt", "0\n"),
		PU_NONE,
	};
	static const struct pu_op x[] = {
		PU_F("build/out", "x\n"),
		PU_F("app.log", "x\n"),
		PU_F("sub/local.txt", "x\n"),
		PU_F("sub/deep/local.txt", "x\n"),
		PU_RM("gone.log"),
		PU_FL("blob.bin", "\0x", 2),
		PU_NONE,
	};
	static const struct pu_op y[] = {
		PU_F("build/out", "y\n"),
		PU_F("app.log", "y\n"),
		PU_F("sub/local.txt", "y\n"),
		PU_F("sub/deep/local.txt", "y\n"),
		PU_F("gone.log", "y\n"),
		PU_FL("blob.bin", "\0y", 2),
		PU_NONE,
	};

	each_order(b, x, y, check_ignored);
}
END_TEST

static void
check_head_ignore_unused(struct pair *pr)
{
	pu_expect_conflict(&pr->second, "late.txt", "content");
}

START_TEST(test_gitignore_of_the_base_only)
{
	static const struct pu_op b[] = { PU_F("late.txt", "0\n"), PU_NONE };
	static const struct pu_op x[] = { PU_F(".gitignore", "late.txt\n"), PU_F("late.txt", "x\n"),
					  PU_NONE };
	static const struct pu_op y[] = { PU_F("late.txt", "y\n"), PU_NONE };

	each_order(b, x, y, check_head_ignore_unused);
}
END_TEST

/* --- no-op publishes -------------------------------------------------------------------------- */

static void
expect_no_op(const char *session, uint64_t base, const struct pu_op *ops)
{
	struct eos_publish_result res;
	size_t layers = pu_layer_count();
	uint64_t head = pu_head();

	ck_assert_int_eq(pu_publish(session, base, "operation:noop", ops, &res), EOS_PUBLISH_NO_OP);
	ck_assert_uint_eq(res.head, head);
	ck_assert_uint_eq(pu_head(), head);
	ck_assert_uint_eq(pu_layer_count(), layers);
	eos_publish_result_release(&res);
}

START_TEST(test_no_op_publishes)
{
	static const struct pu_op b[] = { PU_F("f", "1\n"), PU_D("d"), PU_L("l", "t"), PU_NONE };
	static const struct pu_op same[] = {
		PU_F("f", "1\n"),
		PU_D("d"),
		PU_L("l", "t"),
		PU_NONE,
	};
	static const struct pu_op nothing[] = { PU_NONE };

	pu_sandbox(b);
	expect_no_op(NULL, 1, nothing);
	expect_no_op(NULL, 0, nothing);
	expect_no_op(NULL, 1, same);
	expect_no_op(NULL, 0, same);
	pu_session("s", 0);
	expect_no_op("s", 0, nothing);
	expect_no_op("s", 0, same);
	pu_fsck_clean();
}
END_TEST

/* --- renames whose source the head no longer has ---------------------------------------------- */

static const struct pu_op base_usb[] = {
	PU_D("linux"),
	PU_D("linux/usb"),
	PU_F("linux/usb/core.c", "core\n"),
	PU_D("linux/usb/host"),
	PU_F("linux/usb/host/ehci.c", "ehci\n"),
	PU_F("f", "f\n"),
	PU_NONE,
};

/* The second rename is rejected naming both paths; the head keeps the first one only. */
static void
expect_rename_conflict(struct pair *pr, const char *from, const char *to, const char *first)
{
	const struct eos_conflict *c = pu_expect_conflict(&pr->second, to, "rename");

	ck_assert_str_eq(c->detail, from);
	ck_assert_msg(strstr(c->message, from) && strstr(c->message, to), "%s", c->message);
	pu_expect_absent(0, from);
	pu_expect_absent(0, to);
	if (first)
		ck_assert_int_ne(pu_kind(0, first), EOS_KIND_NONE);
}

static void
check_dir_renamed_twice(struct pair *pr)
{
	bool y2 = pr->second_name[0] == 'y';

	expect_rename_conflict(pr, "linux/usb", y2 ? "usb-2" : "usb-1", y2 ? "usb-1" : "usb-2");
	pu_expect_file(0, y2 ? "usb-1/host/ehci.c" : "usb-2/host/ehci.c", "ehci\n", 0644);
}

START_TEST(test_dir_renamed_twice_conflict)
{
	static const struct pu_op x[] = { PU_MVD("linux/usb", "usb-1"), PU_NONE };
	static const struct pu_op y[] = { PU_MVD("linux/usb", "usb-2"), PU_NONE };

	each_order(base_usb, x, y, check_dir_renamed_twice);
}
END_TEST

static void
check_file_renamed_twice(struct pair *pr)
{
	bool y2 = pr->second_name[0] == 'y';

	expect_rename_conflict(pr, "f", y2 ? "f2" : "f1", y2 ? "f1" : "f2");
}

START_TEST(test_file_renamed_twice_conflict)
{
	static const struct pu_op x[] = { PU_MV("f", "f1"), PU_NONE };
	static const struct pu_op y[] = { PU_MV("f", "f2"), PU_NONE };

	each_order(base_usb, x, y, check_file_renamed_twice);
}
END_TEST

/* Renamed by y, deleted by x: y's rename is a conflict; x's delete finds it gone (no-op). */
static void
check_rename_vs_delete(struct pair *pr)
{
	if (pr->second_name[0] == 'y') {
		expect_rename_conflict(pr, "linux/usb", "usb-2", NULL);
		expect_rename_conflict(pr, "f", "g", NULL);
		return;
	}
	expect_status(pr, EOS_PUBLISH_NO_OP);
	pu_expect_file(0, "usb-2/core.c", "core\n", 0644);
	pu_expect_file(0, "g", "f\n", 0644);
}

START_TEST(test_rename_vs_delete_conflict)
{
	static const struct pu_op x[] = { PU_RM("linux/usb"), PU_RM("f"), PU_NONE };
	static const struct pu_op y[] = { PU_MVD("linux/usb", "usb-2"), PU_MV("f", "g"), PU_NONE };

	each_order(base_usb, x, y, check_rename_vs_delete);
}
END_TEST

/* The same rename on both sides is no conflict. */
static void
check_same_rename(struct pair *pr)
{
	ck_assert_msg(pr->second.status != EOS_PUBLISH_REJECTED, "%s", pu_result_str(&pr->second));
	pu_expect_absent(0, "linux/usb");
	pu_expect_absent(0, "f");
	pu_expect_file(0, "usb/host/ehci.c", "ehci\n", 0644);
	pu_expect_file(0, "g", "f\n", 0644);
}

START_TEST(test_same_rename_no_conflict)
{
	static const struct pu_op x[] = { PU_MVD("linux/usb", "usb"), PU_MV("f", "g"), PU_NONE };

	each_order(base_usb, x, x, check_same_rename);
}
END_TEST

/* A rename of what the head modified is the delete_modify of its source, as before. */
static void
check_rename_vs_modify(struct pair *pr)
{
	bool y2 = pr->second_name[0] == 'y'; /* y renamed, x modified */

	pu_expect_conflict(&pr->second, "f", y2 ? "delete_modify" : "modify_delete");
}

START_TEST(test_rename_vs_modify_conflict)
{
	static const struct pu_op x[] = { PU_F("f", "F\n"), PU_NONE };
	static const struct pu_op y[] = { PU_MV("f", "g"), PU_NONE };

	each_order(base_usb, x, y, check_rename_vs_modify);
}
END_TEST

/* --- suite ------------------------------------------------------------------------------------ */

static Suite *
table_suite(void)
{
	Suite *s = suite_create("publish-table");
	TCase *tc = tcase_create("rows");

	tcase_add_checked_fixture(tc, pu_setup, pu_teardown);
	tcase_add_unchecked_fixture(tc, pu_suite_setup, pu_suite_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_untouched_taken_as_is);
	tcase_add_test(tc, test_merge_different_lines);
	tcase_add_test(tc, test_merge_crlf_and_final_newline);
	tcase_add_test(tc, test_merge_keeps_exec_bit);
	tcase_add_test(tc, test_mode_one_side_content_other);
	tcase_add_test(tc, test_identical_change_is_no_op);
	tcase_add_test(tc, test_identical_line_changes_merge);
	tcase_add_test(tc, test_overlapping_edits_conflict);
	tcase_add_test(tc, test_every_region_listed);
	tcase_add_test(tc, test_insertions_at_same_point_conflict);
	tcase_add_test(tc, test_both_created_differently_conflict);
	tcase_add_test(tc, test_every_conflicting_path_listed);
	tcase_add_test(tc, test_binary_conflict);
	tcase_add_test(tc, test_binary_identical_no_conflict);
	tcase_add_test(tc, test_too_large_conflict);
	tcase_add_test(tc, test_one_side_too_large_conflict);
	tcase_add_test(tc, test_too_large_identical_merges);
	tcase_add_test(tc, test_delete_modify_conflict);
	tcase_add_test(tc, test_delete_chmod_conflict);
	tcase_add_test(tc, test_both_deleted_no_op);
	tcase_add_test(tc, test_type_change_conflict);
	tcase_add_test(tc, test_symlink_to_file_conflict);
	tcase_add_test(tc, test_identical_type_change_no_op);
	tcase_add_test(tc, test_remove_dir_vs_add_inside);
	tcase_add_test(tc, test_remove_dir_vs_modify_inside);
	tcase_add_test(tc, test_remove_dir_vs_many_changes_inside);
	tcase_add_test(tc, test_replace_dir_vs_change_inside);
	tcase_add_test(tc, test_dir_replaced_by_file_vs_change_inside);
	tcase_add_test(tc, test_both_create_same_directory);
	tcase_add_test(tc, test_mode_conflict);
	tcase_add_test(tc, test_same_mode_no_op);
	tcase_add_test(tc, test_symlink_conflict);
	tcase_add_test(tc, test_gitignored_last_writer_wins);
	tcase_add_test(tc, test_gitignore_of_the_base_only);
	tcase_add_test(tc, test_no_op_publishes);
	tcase_add_test(tc, test_dir_renamed_twice_conflict);
	tcase_add_test(tc, test_file_renamed_twice_conflict);
	tcase_add_test(tc, test_rename_vs_delete_conflict);
	tcase_add_test(tc, test_same_rename_no_conflict);
	tcase_add_test(tc, test_rename_vs_modify_conflict);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return eos_test_run(table_suite());
}
