/* SPDX-License-Identifier: MIT */
/*
 * Driver of tests/integration/crash-publish.sh: publishes in a loop against a store so that the
 * script can SIGKILL it at any moment, then checks that every publish was all or nothing.
 *
 *	crash-publish init STORE      create the store, sandbox "crash" (generation 0) and session
 *"s" crash-publish run STORE [N]   N publishes (default: until killed), resuming where it stopped
 *	crash-publish verify STORE    check the invariants; exit 0, or 1 printing every violation
 *
 * Publishes alternate: session "s" (generation gs) rewrites the s* files, a 256 KiB file given by
 * path in the session's data directory, line 1 of shared.txt, creates s-new-<gs> and deletes
 * s-new-<gs-1>; before each it writes its delta records (gen, k1..k3, synced), as the FUSE view
 * would. A plain change set (generation gp, owner "operation:crash-<gp>", base = the head) does
 * the same with the p* files and line 10 of shared.txt. The session's lease stays on its last
 * publish, so every session publish merges shared.txt with the head's plain publish.
 *
 * Invariants: fsck clean; layers 1..head all retained, no entry, layer or blame record above
 * the head; at every recent version each group of files shows one generation, shared.txt agrees,
 * the new files of exactly that generation exist; each layer advances exactly one generation of
 * the kind its owner names; the session's record and lease agree and sit on its last publish;
 * its delta is empty, or complete for the next session generation; blame covers every line.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/error.h"

#include "store/entry.h"
#include "store/kv.h"
#include "store/store-internal.h"
#include "store/store.h"

#define SBX	      "crash"
#define SESSION	      "s"
#define SESSION_OWNER "workspace_session:s"

enum {
	NFILES = 8,
	BIG_LEN = 256 * 1024,
	SHARED_LINES = 10,
	RECENT = 8, /* versions below the head checked in full */
};

static unsigned violations;

static void report(const char *fmt, ...) EOS_PRINTF(1, 2);

static void
report(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("crash-publish: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	violations++;
}

static void die(const char *fmt, ...) EOS_PRINTF(1, 2);

static void
die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("crash-publish: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(2);
}

#define check_ok(r, err, what)                                                 \
	do {                                                                   \
		if ((r) < 0)                                                   \
			die("%s: %s", (what), eos_error_message(&(err), (r))); \
	} while (0)

/* --- expected contents ------------------------------------------------------------------------ */

static void
fill_big(uint8_t *p, char group, unsigned gen)
{
	uint64_t x = (uint64_t)gen * 0x9E3779B97F4A7C15ULL + (uint64_t)group;

	for (size_t i = 0; i < BIG_LEN; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (uint8_t)(x >> 24);
	}
}

static void
small_text(char *out, size_t size, char group, int i, unsigned gen)
{
	size_t off = (size_t)snprintf(out, size, "gen %u\nfile %c%d\n", gen, group, i);

	for (int l = 0; l < 20 && off < size; l++)
		off += (size_t)snprintf(out + off, size - off, "steady line %d\n", l);
}

static void
shared_text(char *out, size_t size, unsigned gs, unsigned gp)
{
	size_t off = (size_t)snprintf(out, size, "s gen %u\n", gs);

	for (int l = 2; l < SHARED_LINES && off < size; l++)
		off += (size_t)snprintf(out + off, size - off, "shared %d\n", l);
	snprintf(out + off, size - off, "p gen %u\n", gp);
}

/* --- store helpers ---------------------------------------------------------------------------- */

static struct eos_store *
store_open(const char *dir, bool create)
{
	struct eos_store_options o = { .create = create, .cache_bytes = 16 << 20 };
	struct eos_store *st = NULL;
	struct eos_error err = { 0 };
	int r = eos_store_open(dir, &o, &st, &err);

	check_ok(r, err, "open");
	return st;
}

/* The whole file at v into a malloc'd NUL-terminated buffer, or NULL when absent. */
static char *
read_file(struct eos_store *st, uint64_t v, const char *path, size_t *len)
{
	EOS_CLEANUP(eos_file_closep) struct eos_file *f = NULL;
	struct eos_error err = { 0 };
	cleanup_free char *buf = NULL;
	uint64_t size, off = 0;
	int r = eos_store_file_open(st, SBX, v, path, &f, &err);

	if (r == -ENOENT)
		return NULL;
	check_ok(r, err, path);
	size = eos_file_size(f);
	buf = malloc(size + 1);
	if (!buf)
		die("out of memory");
	while (off < size) {
		ssize_t n = eos_file_pread(f, buf + off, size - off, off, &err);

		if (n <= 0)
			die("read '%s' at %" PRIu64 ": %s", path, v,
			    eos_error_message(&err, (int)n));
		off += (uint64_t)n;
	}
	buf[size] = '\0';
	*len = size;
	return TAKE_PTR(buf);
}

static uint64_t
head_of(struct eos_store *st)
{
	struct eos_sandbox_info info;
	struct eos_error err = { 0 };
	int r = eos_store_sandbox_get(st, SBX, &info, &err);

	check_ok(r, err, "sandbox");
	return info.head;
}

/* The generations of the s and p groups at v (from s0 and p0). */
static void
gens_at(struct eos_store *st, uint64_t v, unsigned *gs, unsigned *gp)
{
	size_t len;
	cleanup_free char *s = read_file(st, v, "s0", &len);
	cleanup_free char *p = read_file(st, v, "p0", &len);

	if (!s || !p || sscanf(s, "gen %u", gs) != 1 || sscanf(p, "gen %u", gp) != 1)
		die("s0 or p0 unreadable at %" PRIu64, v);
}

/* --- init ------------------------------------------------------------------------------------- */

static void
put_group(struct eos_changeset *cs, char group)
{
	struct eos_attr a = { .mode = 0644, .mtime_ns = 1700000000LL * 1000000000LL };
	struct eos_error err = { 0 };
	char path[32], text[1024];
	cleanup_free uint8_t *big = malloc(BIG_LEN);
	int r;

	if (!big)
		die("out of memory");
	for (int i = 0; i < NFILES; i++) {
		snprintf(path, sizeof(path), "%c%d", group, i);
		small_text(text, sizeof(text), group, i, 0);
		r = eos_changeset_put_file_mem(cs, path, &a, text, strlen(text), &err);
		check_ok(r, err, path);
	}
	fill_big(big, group, 0);
	snprintf(path, sizeof(path), "%c-big", group);
	r = eos_changeset_put_file_mem(cs, path, &a, big, BIG_LEN, &err);
	check_ok(r, err, path);
}

static int
cmd_init(const char *dir)
{
	struct eos_attr root = { .mode = 0755 }, a = { .mode = 0644 };
	EOS_CLEANUP(eos_store_closep) struct eos_store *st = store_open(dir, true);
	EOS_CLEANUP(eos_changeset_freep) struct eos_changeset *cs = NULL;
	struct eos_error err = { 0 };
	char text[1024];
	int r = eos_changeset_new_sandbox(st, SBX, "crash-publish", &root, &cs, &err);

	check_ok(r, err, "new sandbox");
	put_group(cs, 's');
	put_group(cs, 'p');
	shared_text(text, sizeof(text), 0, 0);
	r = eos_changeset_put_file_mem(cs, "shared.txt", &a, text, strlen(text), &err);
	check_ok(r, err, "shared.txt");
	r = eos_changeset_commit(cs, 0, NULL, &err);
	check_ok(r, err, "commit base");
	r = eos_store_session_create(st, SBX, SESSION, 1, NULL, &err);
	check_ok(r, err, "session");
	return 0;
}

/* --- run -------------------------------------------------------------------------------------- */

static void
stage_text(struct eos_publish *p, const char *path, const char *text)
{
	struct eos_publish_file f = {
		.attr = { .mode = 0644, .mtime_ns = 1700000000LL * 1000000000LL },
		.data = text,
		.len = strlen(text),
	};
	struct eos_error err = { 0 };
	int r = eos_publish_put_file(p, path, &f, &err);

	check_ok(r, err, path);
}

/* shared.txt of version base with line 1 (group s) or line SHARED_LINES (p) made gen's. */
static void
stage_shared(struct eos_store *st, struct eos_publish *p, uint64_t base, char group, unsigned gen)
{
	unsigned gs, gp;
	char text[1024];

	gens_at(st, base, &gs, &gp);
	if (group == 's')
		shared_text(text, sizeof(text), gen, gp);
	else
		shared_text(text, sizeof(text), gs, gen);
	stage_text(p, "shared.txt", text);
}

/* The group's files of generation gen; big content from data_path (or memory when NULL). */
static void
stage_group(struct eos_publish *p, char group, unsigned gen, const char *data_path)
{
	struct eos_publish_file f = {
		.attr = { .mode = 0644, .mtime_ns = 1700000000LL * 1000000000LL },
		.data_path = data_path,
	};
	struct eos_error err = { 0 };
	cleanup_free uint8_t *big = NULL;
	char path[32], text[1024];
	int r;

	for (int i = 0; i < NFILES; i++) {
		snprintf(path, sizeof(path), "%c%d", group, i);
		small_text(text, sizeof(text), group, i, gen);
		stage_text(p, path, text);
	}
	if (!data_path) {
		big = malloc(BIG_LEN);
		if (!big)
			die("out of memory");
		fill_big(big, group, gen);
		f.data = big;
		f.len = BIG_LEN;
	}
	snprintf(path, sizeof(path), "%c-big", group);
	r = eos_publish_put_file(p, path, &f, &err);
	check_ok(r, err, path);
	snprintf(path, sizeof(path), "%c-new-%u", group, gen);
	snprintf(text, sizeof(text), "new in generation %u\n", gen);
	stage_text(p, path, text);
	if (gen > 1) {
		snprintf(path, sizeof(path), "%c-new-%u", group, gen - 1);
		r = eos_publish_remove(p, path, &err);
		check_ok(r, err, path);
	}
}

static uint64_t
commit_publish(struct eos_publish *p, const char *what)
{
	struct eos_publish_result res = { 0 };
	struct eos_error err = { 0 };
	uint64_t v;
	int r = eos_publish_commit(p, &res, &err);

	check_ok(r, err, what);
	if (res.status != EOS_PUBLISH_PUBLISHED)
		die("%s: not published (status %d, %zu conflicts: %s)", what, res.status,
		    res.nconflicts,
		    res.nconflicts && res.conflicts[0].message ? res.conflicts[0].message : "");
	v = res.version;
	eos_publish_result_release(&res);
	return v;
}

/* The generation recorded in the session's delta (0: no delta). */
static int
delta_gen_fn(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
	char buf[32];

	if (klen == 3 && memcmp(key, "gen", 3) == 0 && vlen < sizeof(buf)) {
		memcpy(buf, val, vlen);
		buf[vlen] = '\0';
		*(unsigned *)ctx = (unsigned)strtoul(buf, NULL, 10);
	}
	return 0;
}

static void
write_delta(struct eos_store *st, unsigned gen)
{
	EOS_CLEANUP(eos_session_batch_freep) struct eos_session_batch *b = NULL;
	struct eos_error err = { 0 };
	char val[32];
	int r = eos_session_batch_new(st, SBX, SESSION, &b, &err);

	check_ok(r, err, "delta batch");
	snprintf(val, sizeof(val), "%u", gen);
	r = eos_session_batch_put(b, "gen", 3, val, strlen(val));
	for (int k = 1; r == 0 && k <= 3; k++) {
		char key[8];

		snprintf(key, sizeof(key), "k%d", k);
		r = eos_session_batch_put(b, key, strlen(key), val, strlen(val));
	}
	if (r < 0)
		die("delta batch: %d", r);
	r = eos_session_batch_write(b, true, &err);
	check_ok(r, err, "delta write");
}

/* The big file of generation gen in the session's data directory (its path; caller frees). */
static char *
write_data_file(struct eos_store *st, unsigned gen)
{
	struct eos_error err = { 0 };
	cleanup_free char *dir = NULL;
	cleanup_free uint8_t *big = malloc(BIG_LEN);
	char *path = NULL;
	FILE *f;
	int r = eos_store_session_dir(st, SBX, SESSION, &dir, &err);

	check_ok(r, err, "session dir");
	if (!big || asprintf(&path, "%s/big-%u", dir, gen) < 0)
		die("out of memory");
	fill_big(big, 's', gen);
	f = fopen(path, "we");
	if (!f || fwrite(big, 1, BIG_LEN, f) != BIG_LEN || fclose(f) != 0)
		die("write '%s' failed", path);
	return path;
}

static void
session_step(struct eos_store *st, unsigned gen)
{
	EOS_CLEANUP(eos_publish_freep) struct eos_publish *p = NULL;
	struct eos_publish_options o = { .sandbox = SBX, .session = SESSION };
	struct eos_error err = { 0 };
	cleanup_free char *data = NULL;
	unsigned pending = 0;
	int r = eos_store_session_scan(st, SBX, SESSION, delta_gen_fn, &pending, &err);

	check_ok(r, err, "delta scan");
	if (pending && pending != gen)
		die("the session's delta is for generation %u, the next is %u", pending, gen);
	if (!pending)
		write_delta(st, gen);
	data = write_data_file(st, gen);
	r = eos_publish_begin(st, &o, &p, &err);
	check_ok(r, err, "begin session publish");
	stage_group(p, 's', gen, data);
	stage_shared(st, p, eos_publish_base(p), 's', gen);
	printf("session %u -> %" PRIu64 "\n", gen, commit_publish(p, "session publish"));
	fflush(stdout);
}

static void
plain_step(struct eos_store *st, unsigned gen)
{
	EOS_CLEANUP(eos_publish_freep) struct eos_publish *p = NULL;
	struct eos_publish_options o = { .sandbox = SBX, .base = head_of(st) };
	struct eos_error err = { 0 };
	char owner[64];
	int r;

	snprintf(owner, sizeof(owner), "operation:crash-%u", gen);
	o.owner = owner;
	r = eos_publish_begin(st, &o, &p, &err);
	check_ok(r, err, "begin plain publish");
	stage_group(p, 'p', gen, NULL);
	stage_shared(st, p, o.base, 'p', gen);
	printf("plain %u -> %" PRIu64 "\n", gen, commit_publish(p, "plain publish"));
	fflush(stdout);
}

static int
cmd_run(const char *dir, unsigned long n)
{
	EOS_CLEANUP(eos_store_closep) struct eos_store *st = store_open(dir, false);

	for (unsigned long i = 0; n == 0 || i < n; i++) {
		unsigned gs, gp;

		gens_at(st, 0, &gs, &gp);
		if (gs <= gp)
			session_step(st, gs + 1);
		else
			plain_step(st, gp + 1);
	}
	return 0;
}

/* --- verify ----------------------------------------------------------------------------------- */

static void
fsck_violation(void *ctx, const char *kind, const char *message)
{
	(void)ctx;
	report("fsck: %s: %s", kind, message);
}

static void
verify_fsck(struct eos_store *st)
{
	struct eos_fsck_result res = { 0 };
	struct eos_error err = { 0 };
	int r = eos_store_fsck(st, EOS_FSCK_VERIFY_CHUNKS, fsck_violation, NULL, &res, &err);

	check_ok(r, err, "fsck");
}

/* The version at the end of a key (entries: inverted; layers, blame: plain). */
static void
verify_no_records_above(struct eos_store *st, enum eos_cf cf, uint64_t head)
{
	EOS_CLEANUP(eos_kv_iter_freep) struct eos_kv_iter *it = NULL;
	int r = eos_kv_iter_new(st->kv, cf, NULL, NULL, 0, 0, &it);

	if (r < 0)
		die("iterator: %d", r);
	for (eos_kv_iter_seek_first(it); eos_kv_iter_valid(it); eos_kv_iter_next(it)) {
		size_t kn;
		const uint8_t *k = eos_kv_iter_key(it, &kn);
		struct eos_entry_key_parts parts;
		uint64_t v = 0;

		if (cf == EOS_CF_ENTRIES) {
			if (eos_entry_key_decode(k, kn, &parts) < 0)
				die("bad entry key");
			v = parts.version;
		} else if (kn >= 16) {
			for (size_t i = kn - 8; i < kn; i++)
				v = v << 8 | k[i];
		}
		if (v > head)
			report("%s record at version %" PRIu64 " above the head %" PRIu64,
			       eos_kv_cf_name(cf), v, head);
	}
}

static void
expect_content(struct eos_store *st, uint64_t v, const char *path, const void *want, size_t wlen)
{
	size_t len = 0;
	cleanup_free char *got = read_file(st, v, path, &len);

	if (!want && got)
		report("v%" PRIu64 ": '%s' exists", v, path);
	else if (want && !got)
		report("v%" PRIu64 ": '%s' is missing", v, path);
	else if (want && (len != wlen || memcmp(got, want, len) != 0))
		report("v%" PRIu64 ": '%s' has the wrong content", v, path);
}

static void
verify_group(struct eos_store *st, uint64_t v, char group, unsigned gen, bool big_too)
{
	char path[32], text[1024];
	cleanup_free uint8_t *big = NULL;

	for (int i = 0; i < NFILES; i++) {
		snprintf(path, sizeof(path), "%c%d", group, i);
		small_text(text, sizeof(text), group, i, gen);
		expect_content(st, v, path, text, strlen(text));
	}
	snprintf(path, sizeof(path), "%c-new-%u", group, gen);
	snprintf(text, sizeof(text), "new in generation %u\n", gen);
	expect_content(st, v, path, gen ? text : NULL, strlen(text));
	snprintf(path, sizeof(path), "%c-new-%u", group, gen - 1);
	if (gen > 1)
		expect_content(st, v, path, NULL, 0);
	if (!big_too)
		return;
	big = malloc(BIG_LEN);
	if (!big)
		die("out of memory");
	fill_big(big, group, gen);
	snprintf(path, sizeof(path), "%c-big", group);
	expect_content(st, v, path, big, BIG_LEN);
}

static void
verify_version(struct eos_store *st, uint64_t v, uint64_t head, unsigned *gs, unsigned *gp)
{
	char text[1024];

	gens_at(st, v, gs, gp);
	verify_group(st, v, 's', *gs, v == head);
	verify_group(st, v, 'p', *gp, v == head);
	shared_text(text, sizeof(text), *gs, *gp);
	expect_content(st, v, "shared.txt", text, strlen(text));
}

/* Each layer advances exactly one generation, of the kind its owner names. */
static void
verify_layer_step(const struct eos_layer_info *l, unsigned gs0, unsigned gp0, unsigned gs,
		  unsigned gp)
{
	char want[64];

	if (strcmp(l->owner, SESSION_OWNER) == 0) {
		if (gs != gs0 + 1 || gp != gp0)
			report("layer %" PRIu64 " (session) goes s %u->%u p %u->%u", l->version,
			       gs0, gs, gp0, gp);
		return;
	}
	snprintf(want, sizeof(want), "operation:crash-%u", gp);
	if (strcmp(l->owner, want) != 0 || gp != gp0 + 1 || gs != gs0)
		report("layer %" PRIu64 " owner '%s' goes s %u->%u p %u->%u", l->version, l->owner,
		       gs0, gs, gp0, gp);
}

static int
delta_count_fn(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
	(void)key;
	(void)klen;
	(void)val;
	(void)vlen;
	(*(unsigned *)ctx)++;
	return 0;
}

/* Record, lease and delta of the session (last_session: its newest layer, 1 when none). */
static void
verify_session(struct eos_store *st, uint64_t last_session, unsigned gs)
{
	struct eos_session_info info;
	cleanup_free struct eos_lease_info *ls = NULL;
	struct eos_error err = { 0 };
	unsigned pending = 0, records = 0;
	uint64_t lease = 0;
	size_t n = 0;
	int r = eos_store_session_get(st, SBX, SESSION, &info, &err);

	check_ok(r, err, "session");
	r = eos_store_lease_list(st, SBX, &ls, &n, &err);
	check_ok(r, err, "leases");
	for (size_t i = 0; i < n; i++)
		if (strcmp(ls[i].name, "session:" SESSION) == 0)
			lease = ls[i].version;
	if (info.version != last_session || lease != last_session)
		report("session on %" PRIu64 " with lease %" PRIu64
		       ", its last publish is %" PRIu64,
		       info.version, lease, last_session);
	r = eos_store_session_scan(st, SBX, SESSION, delta_gen_fn, &pending, &err);
	check_ok(r, err, "delta");
	r = eos_store_session_scan(st, SBX, SESSION, delta_count_fn, &records, &err);
	check_ok(r, err, "delta");
	if (records != 0 && (records != 4 || pending != gs + 1))
		report("session delta: %u records for generation %u (head at %u)", records, pending,
		       gs);
	printf("session: on %" PRIu64 ", delta %s\n", info.version, records ? "pending" : "empty");
}

static void
verify_blame(struct eos_store *st, uint64_t head, unsigned gs, unsigned gp)
{
	static const char *const paths[] = { "shared.txt", "s0", "p7", "s-big", "p-big" };
	char want[64];

	for (size_t i = 0; i < EOS_ARRAY_SIZE(paths); i++) {
		cleanup_free struct eos_blame_range *r = NULL;
		cleanup_free char *data = NULL;
		struct eos_error err = { 0 };
		uint64_t lines = 0, want_lines = 0;
		size_t n = 0, len = 0;
		int rc = eos_store_blame(st, SBX, head, paths[i], &r, &n, &err);

		check_ok(rc, err, paths[i]);
		data = read_file(st, head, paths[i], &len);
		for (size_t k = 0; k < len; k++)
			want_lines += data[k] == '\n';
		want_lines += len && data[len - 1] != '\n';
		for (size_t k = 0; k < n; k++)
			lines += r[k].line_count;
		if (lines != want_lines)
			report("blame of '%s' covers %" PRIu64 " of %" PRIu64 " lines", paths[i],
			       lines, want_lines);
		if (i == 0 && n > 0 && gs > 0 && strcmp(r[0].owner, SESSION_OWNER) != 0)
			report("shared.txt line 1 owned by '%s'", r[0].owner);
		snprintf(want, sizeof(want), "operation:crash-%u", gp);
		if (i == 0 && n > 0 && gp > 0 && strcmp(r[n - 1].owner, want) != 0)
			report("shared.txt last line owned by '%s', want '%s'", r[n - 1].owner,
			       want);
	}
}

static int
cmd_verify(const char *dir)
{
	EOS_CLEANUP(eos_store_closep) struct eos_store *st = store_open(dir, false);
	cleanup_free struct eos_layer_info *ls = NULL;
	struct eos_error err = { 0 };
	uint64_t head = head_of(st), last_session = 1;
	unsigned gs0 = 0, gp0 = 0, gs = 0, gp = 0;
	size_t n = 0;
	int r = eos_store_layer_list(st, SBX, &ls, &n, &err);

	check_ok(r, err, "layers");
	verify_fsck(st);
	if (n != head || ls[n - 1].version != head)
		report("%zu layers, head %" PRIu64, n, head);
	verify_no_records_above(st, EOS_CF_ENTRIES, head);
	verify_no_records_above(st, EOS_CF_LAYERS, head);
	verify_no_records_above(st, EOS_CF_BLAME, head);
	for (size_t i = 0; i < n; i++) {
		uint64_t v = ls[i].version;

		if (v != i + 1)
			report("layer %zu is version %" PRIu64, i, v);
		if (v + RECENT >= head)
			verify_version(st, v, head, &gs, &gp);
		else
			gens_at(st, v, &gs, &gp);
		if (v > 1)
			verify_layer_step(&ls[i], gs0, gp0, gs, gp);
		if (strcmp(ls[i].owner, SESSION_OWNER) == 0)
			last_session = v;
		gs0 = gs;
		gp0 = gp;
	}
	verify_session(st, last_session, gs);
	verify_blame(st, head, gs, gp);
	printf("head %" PRIu64 ": session generation %u, plain generation %u, %u violations\n",
	       head, gs, gp, violations);
	return violations ? 1 : 0;
}

int
main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "init") == 0)
		return cmd_init(argv[2]);
	if ((argc == 3 || argc == 4) && strcmp(argv[1], "run") == 0)
		return cmd_run(argv[2], argc == 4 ? strtoul(argv[3], NULL, 10) : 0);
	if (argc == 3 && strcmp(argv[1], "verify") == 0)
		return cmd_verify(argv[2]);
	fputs("usage: crash-publish init|run|verify STORE [N]\n", stderr);
	return 2;
}
