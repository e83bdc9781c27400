/* SPDX-License-Identifier: MIT */
/*
 * Line ownership: the computation of a new version's owners (new files, inserted, deleted and
 * rewritten lines, write ranges, merged content, binary content), the record encoding (round
 * trip, every truncation and corruption refused), and eos_store_blame() on a real store
 * (imported lines are "original", lines of a commit without a record "unknown", staged records
 * answer at every retained version, destroy removes them).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/endian.h"

#include "store/blame.h"
#include "store/kv.h"
#include "store/linediff.h"
#include "store/sandbox.h"
#include "store/store-internal.h"
#include "tests/unit/testutil.h"

/* --- helpers ------------------------------------------------------------------------------------
 */

/* "A:2 B:1" for b: each run as owner:count, space-separated. Caller frees. */
static char *
blame_str(const struct eos_blame *b)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf s = { 0 };
	uint64_t sum = 0;

	ck_assert_int_eq(eos_buf_append_str(&s, ""), 0);
	for (size_t i = 0; i < b->nruns; i++) {
		char n[16];

		ck_assert_uint_lt(b->runs[i].owner, b->nowners);
		ck_assert_uint_gt(b->runs[i].count, 0);
		if (i > 0) {
			ck_assert_uint_ne(b->runs[i].owner, b->runs[i - 1].owner);
			ck_assert_int_eq(eos_buf_append_str(&s, " "), 0);
		}
		snprintf(n, sizeof(n), ":%u", b->runs[i].count);
		ck_assert_int_eq(eos_buf_append_str(&s, b->owners[b->runs[i].owner]), 0);
		ck_assert_int_eq(eos_buf_append_str(&s, n), 0);
		sum += b->runs[i].count;
	}
	ck_assert_uint_eq(sum, b->lines);
	return (char *)eos_buf_steal(&s, NULL);
}

/* Build a blame from "A:2 B:1". */
static void
blame_from(struct eos_blame *b, const char *spec)
{
	cleanup_free char *copy = strdup(spec);
	char *save = NULL;

	eos_blame_release(b);
	for (char *tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		char *colon = strrchr(tok, ':');

		ck_assert_ptr_nonnull(colon);
		size_t o = 0;

		*colon = 0;
		while (o < b->nowners && strcmp(b->owners[o], tok) != 0)
			o++;
		if (o == b->nowners) {
			b->owners = reallocarray(b->owners, b->nowners + 1, sizeof(*b->owners));
			ck_assert_ptr_nonnull(b->owners);
			b->owners[b->nowners++] = strdup(tok);
		}
		b->runs = reallocarray(b->runs, b->nruns + 1, sizeof(*b->runs));
		ck_assert_ptr_nonnull(b->runs);
		b->runs[b->nruns++] =
			(struct eos_blame_run){ .count = (uint32_t)strtoul(colon + 1, NULL, 10),
						.owner = (uint32_t)o };
		b->lines += b->runs[b->nruns - 1].count;
	}
}

static void
check_compute(const struct eos_blame_input *in, const char *want)
{
	EOS_CLEANUP(eos_blame_release) struct eos_blame b = { 0 };
	struct eos_error err = { 0 };
	cleanup_free char *got = NULL;
	int r = eos_blame_compute(in, &b, &err);

	ck_assert_msg(r == 0, "compute: %s", eos_error_message(&err, r));
	ck_assert_uint_eq(b.lines, eos_line_count(in->data, in->len));
	got = blame_str(&b);
	ck_assert_str_eq(got, want);
}

/* Compute data's owners after prev (with owners prev_spec, or NULL: a new file). */
static void
check_edit(const char *prev, const char *prev_spec, const char *data, const char *want)
{
	EOS_CLEANUP(eos_blame_release) struct eos_blame pb = { 0 };
	struct eos_blame_input in = {
		.prev = prev,
		.prev_len = prev ? strlen(prev) : 0,
		.data = data,
		.len = strlen(data),
		.writer = "W",
	};

	if (prev_spec) {
		blame_from(&pb, prev_spec);
		in.prev_blame = &pb;
	}
	check_compute(&in, want);
}

/* --- computing ----------------------------------------------------------------------------------
 */

START_TEST(test_compute_new_file)
{
	check_edit(NULL, NULL, "a\nb\n", "W:2");
	check_edit(NULL, NULL, "a\nb", "W:2");
	check_edit(NULL, NULL, "", "");
	/* an empty previous file */
	check_edit("", "", "x\n", "W:1");
}
END_TEST

START_TEST(test_compute_edits)
{
	/* insert in the middle: the others keep their owners */
	check_edit("1\n2\n3\n", "A:1 B:2", "1\nX\n2\n3\n", "A:1 W:1 B:2");
	/* delete lines */
	check_edit("1\n2\n3\n4\n", "A:1 B:1 C:1 D:1", "1\n4\n", "A:1 D:1");
	/* replace a line, append one, change the final newline */
	check_edit("1\n2\n3", "A:3", "1\nTWO\n3\n", "A:1 W:2");
	check_edit("1\n2\n3\n", "A:1 B:2", "1\n2\n3\n4\n", "A:1 B:2 W:1");
	/* an identical rewrite keeps every owner */
	check_edit("1\n2\n3\n", "A:1 B:1 C:1", "1\n2\n3\n", "A:1 B:1 C:1");
	/* CRLF conversion replaces every line */
	check_edit("1\n2\n", "A:2", "1\r\n2\r\n", "W:2");
	/* a blame that does not fit the previous content: kept lines are unknown */
	check_edit("1\n2\n3\n", "A:2", "1\n2\n3\nX\n", "unknown:3 W:1");
}
END_TEST

START_TEST(test_compute_ranges)
{
	const char *data = "aaaa\nbb\ncccccc\ndd\n";
	const struct eos_write_range ranges[] = {
		{ 0, 3, "op:1" },			/* 3 bytes of line 1 */
		{ 3, 8, "op:2" },			/* 2 bytes of line 1, all of line 2 */
		{ 15, 16, "op:1" },			/* line 4: 1 byte each */
		{ 16, 17, "op:2" }, { 17, 99, "op:3" }, /* clipped to the content */
		{ 9, 9, "op:9" },			/* empty */
	};
	struct eos_blame_input in = {
		.data = data,
		.len = strlen(data),
		.ranges = ranges,
		.nranges = EOS_ARRAY_SIZE(ranges),
		.writer = "ws:1",
	};

	/* line 4: op:1, op:2 and op:3 one byte each: the first to reach the maximum wins */
	check_compute(&in, "op:1:1 op:2:1 ws:1:1 op:1:1");
	/* the same ranges in another order */
	{
		struct eos_write_range rev[EOS_ARRAY_SIZE(ranges)];

		for (size_t i = 0; i < EOS_ARRAY_SIZE(ranges); i++)
			rev[i] = ranges[EOS_ARRAY_SIZE(ranges) - 1 - i];
		in.ranges = rev;
		check_compute(&in, "op:1:1 op:2:1 ws:1:1 op:1:1");
	}
	/* no writer: unknown */
	in.nranges = 0;
	in.writer = NULL;
	check_compute(&in, "unknown:4");
}
END_TEST

START_TEST(test_compute_ranges_keep_prev)
{
	/* an editor-style save rewrote every byte: unchanged lines still keep their owners */
	EOS_CLEANUP(eos_blame_release) struct eos_blame pb = { 0 };
	const char *prev = "one\ntwo\nthree\n", *data = "one\nTWO\nthree\n";
	const struct eos_write_range all = { 0, 14, "op:save" };
	struct eos_blame_input in = {
		.prev = prev,
		.prev_len = strlen(prev),
		.prev_blame = &pb,
		.data = data,
		.len = strlen(data),
		.ranges = &all,
		.nranges = 1,
		.writer = "ws:1",
	};

	blame_from(&pb, "original:2 op:x:1");
	check_compute(&in, "original:1 op:save:1 op:x:1");
}
END_TEST

START_TEST(test_compute_merged)
{
	/* base one\ntwo\n; the head (A) wrote ONE; session B appended tail, merged */
	EOS_CLEANUP(eos_blame_release) struct eos_blame pb = { 0 };
	const char *head = "ONE\ntwo\n", *ours = "one\ntwo\ntail\n", *merged = "ONE\ntwo\ntail\n";
	const struct eos_write_range tail = { 8, 13, "operation:b1" };
	struct eos_blame_input in = {
		.prev = head,
		.prev_len = strlen(head),
		.prev_blame = &pb,
		.ours = ours,
		.ours_len = strlen(ours),
		.data = merged,
		.len = strlen(merged),
		.ranges = &tail,
		.nranges = 1,
		.writer = "workspace_session:B",
	};

	blame_from(&pb, "workspace_session:A:1 original:1");
	check_compute(&in, "workspace_session:A:1 original:1 operation:b1:1");
	/* ranges refer to ours' bytes: a range over data's offsets of tail would miss */
	in.nranges = 0;
	check_compute(&in, "workspace_session:A:1 original:1 workspace_session:B:1");
	/* a merged line in neither prev nor ours belongs to the writer */
	in.data = "ONE\ntwo\nmid\ntail\n";
	in.len = strlen(in.data);
	in.nranges = 1;
	check_compute(&in, "workspace_session:A:1 original:1 workspace_session:B:1 operation:b1:1");
}
END_TEST

START_TEST(test_compute_binary)
{
	EOS_CLEANUP(eos_blame_release) struct eos_blame pb = { 0 };
	static const char bin[] = "a\nb\0c\nd";
	const struct eos_write_range ranges[] = { { 0, 2, "op:1" }, { 2, 7, "op:2" } };
	struct eos_blame_input in = {
		.data = bin,
		.len = sizeof(bin) - 1,
		.ranges = ranges,
		.nranges = 2,
		.writer = "W",
	};
	cleanup_free char *big = NULL;

	/* one run: the owner of most bytes */
	check_compute(&in, "op:2:3");
	in.nranges = 0;
	check_compute(&in, "W:3");
	/* identical to prev: prev's owners */
	blame_from(&pb, "X:1 Y:2");
	in.prev = bin;
	in.prev_len = sizeof(bin) - 1;
	in.prev_blame = &pb;
	check_compute(&in, "X:1 Y:2");
	/* invalid UTF-8 is binary too */
	in.data = "a\n\xff\n";
	in.len = 4;
	check_compute(&in, "W:2");
	/* text above EOS_MERGE_TEXT_MAX: one run */
	big = malloc(EOS_MERGE_TEXT_MAX + 2);
	ck_assert_ptr_nonnull(big);
	memset(big, 'x', EOS_MERGE_TEXT_MAX + 2);
	big[10] = '\n';
	in.data = big;
	in.len = EOS_MERGE_TEXT_MAX + 2;
	in.prev_blame = NULL;
	check_compute(&in, "W:2");
}
END_TEST

START_TEST(test_single)
{
	EOS_CLEANUP(eos_blame_release) struct eos_blame b = { 0 };
	cleanup_free char *s = NULL;

	ck_assert_int_eq(eos_blame_single(&b, 5, "o"), 0);
	s = blame_str(&b);
	ck_assert_str_eq(s, "o:5");
	ck_assert_int_eq(eos_blame_single(&b, 0, "o"), 0);
	ck_assert_uint_eq(b.nruns, 0);
	ck_assert_uint_eq(b.lines, 0);
}
END_TEST

/* --- records ------------------------------------------------------------------------------------
 */

static void
roundtrip(const char *spec, const char *want)
{
	EOS_CLEANUP(eos_blame_release) struct eos_blame b = { 0 }, d = { 0 };
	EOS_CLEANUP(eos_buf_release) struct eos_buf v = { 0 };
	cleanup_free char *got = NULL;

	blame_from(&b, spec);
	ck_assert_int_eq(eos_blame_encode(&b, &v), 0);
	ck_assert_int_eq(eos_blame_decode(v.data, v.len, &d), 0);
	got = blame_str(&d);
	ck_assert_str_eq(got, want);
	/* every truncation is refused */
	for (size_t n = 0; n < v.len; n++)
		ck_assert_int_eq(eos_blame_decode(v.data, n, &d), -EBADMSG);
	ck_assert_int_eq(eos_blame_decode(v.data, v.len, &d), 0);
}

START_TEST(test_record_roundtrip)
{
	roundtrip("", "");
	roundtrip("A:3", "A:3");
	roundtrip("original:2 operation:req-1:5 original:1",
		  "original:2 operation:req-1:5 original:1");
	/* encoding coalesces equal neighbours and drops unused owners */
	roundtrip("A:1 A:2 B:1", "A:3 B:1");
}
END_TEST

START_TEST(test_record_encode_refuses)
{
	EOS_CLEANUP(eos_blame_release) struct eos_blame b = { 0 };
	EOS_CLEANUP(eos_buf_release) struct eos_buf v = { 0 };

	blame_from(&b, "A:2");
	b.lines = 3; /* sum of runs differs */
	ck_assert_int_eq(eos_blame_encode(&b, &v), -EINVAL);
	b.lines = 2;
	b.runs[0].owner = 7;
	ck_assert_int_eq(eos_blame_encode(&b, &v), -EINVAL);
	ck_assert_uint_eq(v.len, 0);
}
END_TEST

/* A hand-made record: header, owners, runs (count, owner) pairs. */
static void
raw_record(struct eos_buf *v, uint8_t format, uint32_t lines, const char *const *owners,
	   uint32_t nowners, const uint32_t *runs, uint32_t nruns)
{
	eos_buf_truncate(v, 0);
	ck_assert_int_eq(eos_buf_append_u8(v, format), 0);
	ck_assert_int_eq(eos_buf_append_le32(v, lines), 0);
	ck_assert_int_eq(eos_buf_append_le32(v, nowners), 0);
	for (uint32_t i = 0; i < nowners; i++)
		ck_assert_int_eq(eos_buf_append_lp(v, owners[i], strlen(owners[i])), 0);
	ck_assert_int_eq(eos_buf_append_le32(v, nruns), 0);
	for (uint32_t i = 0; i < 2 * nruns; i++)
		ck_assert_int_eq(eos_buf_append_le32(v, runs[i]), 0);
}

START_TEST(test_record_corrupt)
{
	EOS_CLEANUP(eos_blame_release) struct eos_blame d = { 0 };
	EOS_CLEANUP(eos_buf_release) struct eos_buf v = { 0 };
	const char *const ab[] = { "A", "B" }, *const empty[] = { "" };
	const uint32_t good[] = { 1, 0, 2, 1 }, zero[] = { 0, 0, 3, 1 }, range[] = { 1, 0, 2, 2 },
		       same[] = { 1, 0, 2, 0 };

	raw_record(&v, 1, 3, ab, 2, good, 2);
	ck_assert_int_eq(eos_blame_decode(v.data, v.len, &d), 0);
	raw_record(&v, 2, 3, ab, 2, good, 2); /* unknown format */
	ck_assert_int_eq(eos_blame_decode(v.data, v.len, &d), -EBADMSG);
	raw_record(&v, 1, 4, ab, 2, good, 2); /* sum differs */
	ck_assert_int_eq(eos_blame_decode(v.data, v.len, &d), -EBADMSG);
	raw_record(&v, 1, 3, ab, 2, zero, 2); /* empty run */
	ck_assert_int_eq(eos_blame_decode(v.data, v.len, &d), -EBADMSG);
	raw_record(&v, 1, 3, ab, 2, range, 2); /* owner out of range */
	ck_assert_int_eq(eos_blame_decode(v.data, v.len, &d), -EBADMSG);
	raw_record(&v, 1, 3, ab, 2, same, 2); /* not coalesced, B unused */
	ck_assert_int_eq(eos_blame_decode(v.data, v.len, &d), -EBADMSG);
	raw_record(&v, 1, 1, ab, 2, good, 1); /* B unused */
	ck_assert_int_eq(eos_blame_decode(v.data, v.len, &d), -EBADMSG);
	raw_record(&v, 1, 1, empty, 1, good, 1); /* empty owner */
	ck_assert_int_eq(eos_blame_decode(v.data, v.len, &d), -EBADMSG);
	raw_record(&v, 1, 3, ab, 2, good, 2);
	ck_assert_int_eq(eos_buf_append_u8(&v, 0), 0); /* trailing garbage */
	ck_assert_int_eq(eos_blame_decode(v.data, v.len, &d), -EBADMSG);
	/* a huge owner count is refused before allocating */
	raw_record(&v, 1, 3, ab, 2, good, 2);
	eos_put_le32(v.data + 5, UINT32_MAX);
	ck_assert_int_eq(eos_blame_decode(v.data, v.len, &d), -EBADMSG);
	/* the last good decode is untouched by failures */
	ck_assert_uint_eq(d.lines, 3);
}
END_TEST

START_TEST(test_record_fuzz)
{
	EOS_CLEANUP(eos_blame_release) struct eos_blame b = { 0 }, d = { 0 };
	EOS_CLEANUP(eos_buf_release) struct eos_buf v = { 0 };
	uint8_t *copy;

	blame_from(&b, "original:10 operation:x:3 unknown:1 operation:x:2");
	ck_assert_int_eq(eos_blame_encode(&b, &v), 0);
	copy = malloc(v.len);
	ck_assert_ptr_nonnull(copy);
	for (uint64_t seed = 1; seed < 20000; seed++) {
		uint64_t x = seed * 0x9e3779b97f4a7c15ULL;
		int r;

		memcpy(copy, v.data, v.len);
		copy[x % v.len] ^= (uint8_t)(1 + (x >> 32) % 255);
		if (seed & 1)
			copy[(x >> 16) % v.len] = (uint8_t)(x >> 40);
		r = eos_blame_decode(copy, v.len, &d);
		ck_assert(r == 0 || r == -EBADMSG);
		if (r == 0) {
			cleanup_free char *s = blame_str(&d);
		}
	}
	free(copy);
}
END_TEST

START_TEST(test_record_key)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf k = { 0 };

	ck_assert_int_eq(eos_blame_key(&k, 3, "a/b", 7), 0);
	ck_assert_uint_eq(k.len, 8 + 3 + 1 + 8);
	ck_assert_uint_eq(eos_get_be64(k.data), 3);
	ck_assert_mem_eq(k.data + 8, "a/b\0", 4);
	ck_assert_uint_eq(eos_get_be64(k.data + 12), 7);
}
END_TEST

/* --- the store ----------------------------------------------------------------------------------
 */

static const char *const sandbox = "bl";

struct fixture {
	struct eos_test_fixture f;
	char *tree;
};

static void
import_tree(struct fixture *fx)
{
	struct eos_import_options o = { .sandbox = sandbox, .threads = 1 };
	struct eos_error err = { 0 };
	cleanup_free char *p = NULL;
	char bin[600];
	int r;

	fx->f = eos_test_fixture_open();
	fx->tree = eos_test_tmpdir("blame-tree");
	ck_assert_int_ge(asprintf(&p, "%s/a.txt", fx->tree), 0);
	eos_test_write_file(p, "one\ntwo\nthree\n", 14, 0644);
	free(p);
	ck_assert_int_ge(asprintf(&p, "%s/dir/empty", fx->tree), 0);
	eos_test_write_file(p, "", 0, 0644);
	free(p);
	eos_test_fill_random(bin, sizeof(bin), 5);
	for (size_t i = 0; i < sizeof(bin); i++)
		bin[i] = bin[i] == '\n' ? 'x' : bin[i];
	memcpy(bin + 10, "\n\0\n", 3);
	ck_assert_int_ge(asprintf(&p, "%s/bin", fx->tree), 0);
	eos_test_write_file(p, bin, sizeof(bin), 0644);
	free(p);
	ck_assert_int_ge(asprintf(&p, "%s/link", fx->tree), 0);
	ck_assert_int_eq(symlink("a.txt", p), 0);
	r = eos_store_import(fx->f.st, fx->tree, &o, NULL, &err);
	ck_assert_msg(r == 0, "import: %s", eos_error_message(&err, r));
}

static void
fixture_close(struct fixture *fx)
{
	eos_test_fixture_close(&fx->f);
	eos_test_rm_rf(fx->tree);
	free(fx->tree);
}

/* "owner:start+count ..." of eos_store_blame(path at v). */
static char *
store_blame(struct eos_store *st, uint64_t v, const char *path)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf s = { 0 };
	cleanup_free struct eos_blame_range *ranges = NULL;
	struct eos_error err = { 0 };
	size_t n = 0;
	uint32_t next = 1;
	int r = eos_store_blame(st, sandbox, v, path, &ranges, &n, &err);

	ck_assert_msg(r == 0, "blame '%s': %s", path, eos_error_message(&err, r));
	ck_assert_int_eq(eos_buf_append_str(&s, ""), 0);
	for (size_t i = 0; i < n; i++) {
		char num[32];

		ck_assert_uint_eq(ranges[i].start_line, next);
		ck_assert_uint_gt(ranges[i].line_count, 0);
		if (i > 0)
			ck_assert_str_ne(ranges[i].owner, ranges[i - 1].owner);
		next += ranges[i].line_count;
		snprintf(num, sizeof(num), ":%u+%u", ranges[i].start_line, ranges[i].line_count);
		ck_assert_int_eq(eos_buf_append_str(&s, i ? " " : ""), 0);
		ck_assert_int_eq(eos_buf_append_str(&s, ranges[i].owner), 0);
		ck_assert_int_eq(eos_buf_append_str(&s, num), 0);
	}
	return (char *)eos_buf_steal(&s, NULL);
}

static void
check_blame(struct eos_store *st, uint64_t v, const char *path, const char *want)
{
	cleanup_free char *got = store_blame(st, v, path);

	ck_assert_msg(strcmp(got, want) == 0, "blame '%s' at %llu: got '%s', want '%s'", path,
		      (unsigned long long)v, got, want);
}

static uint64_t
commit_file(struct eos_store *st, const char *path, const char *data)
{
	EOS_CLEANUP(eos_changeset_freep) struct eos_changeset *cs = NULL;
	struct eos_attr a = eos_test_attr(0644);
	struct eos_commit_result res = { 0 };
	struct eos_error err = { 0 };
	int r = eos_changeset_new(st, sandbox, &cs, &err);

	r = r ?: eos_changeset_put_file_mem(cs, path, &a, data, strlen(data), &err);
	r = r ?: eos_changeset_commit(cs, 0, &res, &err);
	ck_assert_msg(r == 0, "commit '%s': %s", path, eos_error_message(&err, r));
	return res.version;
}

static uint64_t
sandbox_number(struct eos_store *st)
{
	uint64_t sbx = 0;

	ck_assert_int_eq(eos_sandbox_resolve(st, sandbox, &sbx, NULL), 0);
	return sbx;
}

/* Store the record "A:1 B:2"-style spec for path at version. */
static void
stage_record(struct eos_store *st, const char *path, uint64_t version, const char *spec)
{
	EOS_CLEANUP(eos_kv_batch_freep) struct eos_kv_batch *batch = NULL;
	EOS_CLEANUP(eos_blame_release) struct eos_blame b = { 0 };
	struct eos_error err = { 0 };

	blame_from(&b, spec);
	ck_assert_int_eq(eos_kv_batch_new(&batch), 0);
	ck_assert_int_eq(eos_blame_stage(batch, sandbox_number(st), path, version, &b), 0);
	ck_assert_int_eq(eos_kv_batch_write(st->kv, batch, true, &err), 0);
}

START_TEST(test_store_import_original)
{
	struct fixture fx;
	cleanup_free struct eos_blame_range *ranges = NULL;
	struct eos_error err = { 0 };
	size_t n = 9;

	import_tree(&fx);
	check_blame(fx.f.st, 0, "a.txt", "original:1+3");
	check_blame(fx.f.st, 1, "a.txt", "original:1+3");
	check_blame(fx.f.st, 0, "bin", "original:1+3");
	check_blame(fx.f.st, 0, "dir/empty", "");
	ck_assert_int_eq(eos_store_blame(fx.f.st, sandbox, 0, "dir", &ranges, &n, &err), -EISDIR);
	ck_assert_ptr_nonnull(strstr(err.msg, "'dir'"));
	ck_assert_int_eq(eos_store_blame(fx.f.st, sandbox, 0, "link", &ranges, &n, &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "'link'"));
	ck_assert_int_eq(eos_store_blame(fx.f.st, sandbox, 0, "nope", &ranges, &n, &err), -ENOENT);
	ck_assert_int_eq(eos_store_blame(fx.f.st, sandbox, 9, "a.txt", &ranges, &n, &err), -ENOENT);
	ck_assert_int_eq(eos_store_blame(fx.f.st, "nosuch", 0, "a.txt", &ranges, &n, &err),
			 -ENOENT);
	ck_assert_int_eq(eos_store_blame(fx.f.st, sandbox, 0, "../a", &ranges, &n, &err), -EINVAL);
	ck_assert_ptr_null(ranges);
	fixture_close(&fx);
}
END_TEST

START_TEST(test_store_records)
{
	struct fixture fx;
	uint64_t v2, v3;

	import_tree(&fx);
	/* a commit without a record: unknown */
	v2 = commit_file(fx.f.st, "a.txt", "one\nTWO\nthree\nfour\n");
	check_blame(fx.f.st, 0, "a.txt", "unknown:1+4");
	check_blame(fx.f.st, 1, "a.txt", "original:1+3");
	/* a stored record answers */
	stage_record(fx.f.st, "a.txt", v2, "original:1 operation:op-1:1 original:1 ws:x:1");
	check_blame(fx.f.st, v2, "a.txt", "original:1+1 operation:op-1:2+1 original:3+1 ws:x:4+1");
	/* a record of the wrong line count is ignored */
	stage_record(fx.f.st, "a.txt", v2, "original:3");
	check_blame(fx.f.st, v2, "a.txt", "unknown:1+4");
	stage_record(fx.f.st, "a.txt", v2, "original:1 operation:op-1:3");
	/* a corrupt record is an error naming the path */
	{
		EOS_CLEANUP(eos_buf_release) struct eos_buf k = { 0 };
		cleanup_free struct eos_blame_range *ranges = NULL;
		struct eos_error err = { 0 };
		size_t n;

		ck_assert_int_eq(eos_blame_key(&k, sandbox_number(fx.f.st), "bin", 1), 0);
		eos_test_kv_put(fx.f.st, EOS_CF_BLAME, &k, "\x01garbage", 8);
		ck_assert_int_eq(eos_store_blame(fx.f.st, sandbox, 0, "bin", &ranges, &n, &err),
				 -EBADMSG);
		ck_assert_ptr_nonnull(strstr(err.msg, "'bin'"));
	}
	/* a later commit of another file: the older version still answers after squash */
	ck_assert_int_eq(eos_store_lease_acquire(fx.f.st, sandbox, "keep", v2, NULL, NULL), 0);
	v3 = commit_file(fx.f.st, "a.txt", "new\n");
	commit_file(fx.f.st, "other", "x\n");
	ck_assert_int_eq(eos_store_squash(fx.f.st, sandbox, NULL, NULL), 0);
	check_blame(fx.f.st, v2, "a.txt", "original:1+1 operation:op-1:2+3");
	check_blame(fx.f.st, 0, "a.txt", "unknown:1+1");
	stage_record(fx.f.st, "a.txt", v3, "operation:op-3:1");
	check_blame(fx.f.st, 0, "a.txt", "operation:op-3:1+1");
	fixture_close(&fx);
}
END_TEST

static int
count_key(void *ctx, const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen)
{
	(void)k, (void)klen, (void)v, (void)vlen;
	(*(size_t *)ctx)++;
	return 0;
}

static size_t
blame_keys(struct eos_store *st, uint64_t sbx)
{
	uint8_t lo[8], hi[8];
	size_t n = 0;
	struct eos_kv_scan s = { .cf = EOS_CF_BLAME,
				 .lo = lo,
				 .llen = 8,
				 .hi = hi,
				 .hlen = 8,
				 .fn = count_key,
				 .ctx = &n };

	eos_put_be64(lo, sbx);
	eos_put_be64(hi, sbx + 1);
	ck_assert_int_eq(eos_kv_scan(st->kv, &s, NULL), 0);
	return n;
}

START_TEST(test_store_destroy)
{
	struct fixture fx;
	uint64_t sbx;

	import_tree(&fx);
	sbx = sandbox_number(fx.f.st);
	stage_record(fx.f.st, "a.txt", 1, "operation:x:3");
	check_blame(fx.f.st, 0, "a.txt", "operation:x:1+3");
	ck_assert_uint_eq(blame_keys(fx.f.st, sbx), 1);
	ck_assert_int_eq(eos_store_sandbox_destroy(fx.f.st, sandbox, NULL), 0);
	ck_assert_uint_eq(blame_keys(fx.f.st, sbx), 0);
	fixture_close(&fx);
}
END_TEST

START_TEST(test_store_fsck_ignores_records)
{
	struct fixture fx;
	struct eos_fsck_result res = { 0 };
	struct eos_error err = { 0 };

	import_tree(&fx);
	stage_record(fx.f.st, "a.txt", 1, "operation:x:3");
	ck_assert_int_eq(eos_store_fsck(fx.f.st, EOS_FSCK_VERIFY_CHUNKS, NULL, NULL, &res, &err),
			 0);
	ck_assert_uint_eq(res.violations, 0);
	fixture_close(&fx);
}
END_TEST

static Suite *
blame_suite(void)
{
	Suite *s = suite_create("blame");
	TCase *compute = tcase_create("compute"), *record = tcase_create("record"),
	      *store = tcase_create("store");

	tcase_add_test(compute, test_compute_new_file);
	tcase_add_test(compute, test_compute_edits);
	tcase_add_test(compute, test_compute_ranges);
	tcase_add_test(compute, test_compute_ranges_keep_prev);
	tcase_add_test(compute, test_compute_merged);
	tcase_add_test(compute, test_compute_binary);
	tcase_add_test(compute, test_single);
	tcase_add_test(record, test_record_roundtrip);
	tcase_add_test(record, test_record_encode_refuses);
	tcase_add_test(record, test_record_corrupt);
	tcase_add_test(record, test_record_fuzz);
	tcase_add_test(record, test_record_key);
	tcase_set_timeout(store, 60);
	tcase_add_test(store, test_store_import_original);
	tcase_add_test(store, test_store_records);
	tcase_add_test(store, test_store_destroy);
	tcase_add_test(store, test_store_fsck_ignores_records);
	suite_add_tcase(s, compute);
	suite_add_tcase(s, record);
	suite_add_tcase(s, store);
	return s;
}

int
main(void)
{
	return eos_test_run(blame_suite());
}
