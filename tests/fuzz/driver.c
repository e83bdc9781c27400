/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/driver: runs the fuzz target of tests/fuzz/fuzz-decoders.c without libFuzzer (gcc
 * builds, `make check` as tests/fuzz/fuzz-decoders-smoke, ASan+UBSan in CI's sanitizer phase).
 *
 *	fuzz-decoders-smoke                    a deterministic campaign (below)
 *	fuzz-decoders-smoke FILE|DIR...        replay inputs: the files, and the files in the dirs
 *	fuzz-decoders-smoke --write-seeds DIR  write the campaign's seeds to DIR (a libFuzzer
 *corpus)
 *
 * The campaign starts from seeds: valid encodings of every record the target decodes, made with
 * the real encoders, each behind the byte that names its decoder. It runs every seed, then
 * mutated copies (bit flips, interesting bytes, truncations, insertions, deletions, overwritten
 * length fields, duplicated ranges, splices) drawn from a fixed-seed xorshift generator, until
 * EOS_FUZZ_RUNS inputs (default 1000000) or EOS_FUZZ_SECONDS seconds (default 5), whichever comes
 * first. EOS_FUZZ_SEED changes the generator's seed. A broken invariant aborts in the target.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/digest.h"
#include "common/endian.h"
#include "common/error.h"
#include "common/path.h"

#include "store/blame.h"
#include "store/codec.h"
#include "store/content.h"
#include "store/entry.h"
#include "store/sandbox.h"
#include "store/store.h"

enum {
	DEFAULT_RUNS = 1000000,
	DEFAULT_SECONDS = 5,
	DEFAULT_SEED = 0x5eed,
	INPUT_MAX = 64 * 1024, /* mutated inputs never grow beyond this */
	MAX_MUTATIONS = 4,     /* per input: 1 to this many */
	CLOCK_EVERY = 256,     /* inputs between two looks at the clock */
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Setting up the campaign cannot fail in a healthy test environment: stop with a message. */
static void
must(int r, const char *what)
{
	if (r >= 0)
		return;
	fprintf(stderr, "fuzz-decoders: %s: %s\n", what, strerror(-r));
	exit(EXIT_FAILURE);
}

/* --- seeds ------------------------------------------------------------------------------------ */

struct seeds {
	struct eos_buf *v;
	size_t n, cap;
};

static void
seeds_release(struct seeds *s)
{
	for (size_t i = 0; i < s->n; i++)
		eos_buf_release(&s->v[i]);
	free(s->v);
}

/* A new seed holding the tag byte of its decoder; the caller appends the encoding. */
static struct eos_buf *
seed_new(struct seeds *s, char tag)
{
	struct eos_buf *b;

	must(eos_buf_array_reserve(&s->v, &s->cap, s->n, sizeof(*s->v), 64), "add a seed");
	b = &s->v[s->n++];
	eos_buf_init(b);
	must(eos_buf_append_u8(b, (uint8_t)tag), "add a seed");
	return b;
}

static uint64_t
xorshift(uint64_t *state)
{
	*state ^= *state >> 12;
	*state ^= *state << 25;
	*state ^= *state >> 27;
	return *state * 0x2545f4914f6cdd1dULL;
}

/* n pseudo-random bytes (seed != 0), or text that zstd compresses well (seed == 0). */
static void
fill(uint8_t *p, size_t n, uint64_t seed)
{
	static const char text[] = "struct eos_entry { uint64_t version; } /* chunk */\n";

	for (size_t i = 0; i < n; i++)
		p[i] = seed ? (uint8_t)xorshift(&seed) : (uint8_t)text[i % (sizeof(text) - 1)];
}

static void
seed_entry(struct seeds *s, const struct eos_entry *e)
{
	must(eos_entry_encode(e, seed_new(s, 'e')), "encode an entry");
}

static void
seed_files(struct seeds *s, struct eos_entry *e)
{
	struct eos_content *c = &e->st.content;

	e->st.kind = EOS_KIND_FILE;
	c->kind = EOS_CONTENT_INLINE;
	c->size = c->inline_len = 5;
	memcpy(c->inline_data, "hello", 5);
	must(eos_sha256(c->inline_data, c->inline_len, &c->digest), "hash");
	seed_entry(s, e);
	c->size = c->inline_len = 0;
	seed_entry(s, e);
	c->kind = EOS_CONTENT_CHUNK;
	c->size = 100000;
	fill(c->digest.b, EOS_DIGEST_LEN, 1);
	e->st.link_group = 4;
	seed_entry(s, e);
	c->kind = EOS_CONTENT_MANIFEST;
	c->size = 10 << 20;
	seed_entry(s, e);
}

/* A fifo (with e's xattrs), then devices: small, wide and whiteout (0:0) numbers. */
static void
seed_nodes(struct seeds *s, struct eos_entry *e)
{
	static const unsigned numbers[][2] = { { 1, 3 }, { 0xffffffffu, 0x12345678u }, { 0, 0 } };

	memset(&e->st.content, 0, sizeof(e->st.content));
	e->st.floor = e->st.link_group = 0;
	e->st.kind = EOS_KIND_FIFO;
	seed_entry(s, e);
	e->nxattrs = e->st.nxattrs = 0;
	for (size_t i = 0; i < EOS_ARRAY_SIZE(numbers); i++) {
		e->st.kind = i % 2 ? EOS_KIND_BLK : EOS_KIND_CHR;
		e->st.rdev = makedev(numbers[i][0], numbers[i][1]);
		seed_entry(s, e);
	}
	e->st.rdev = 0;
}

static void
seeds_entries(struct seeds *s)
{
	char name0[] = "user.mime_type", name1[] = "security.selinux", target[] = "../lib/x.so";
	uint8_t value0[] = "text/plain", value1[] = { 's', 0, 'x', 0xff };
	struct eos_xattr xattrs[] = { { name0, value0, sizeof(value0) - 1 },
				      { name1, value1, sizeof(value1) } };
	struct eos_entry e;

	eos_entry_init(&e);
	e.st.attr = (struct eos_attr){ 0755, 1000, 100, 1700000000123456789 };
	e.st.kind = EOS_KIND_DIR;
	e.st.floor = 3;
	seed_entry(s, &e);
	e.st.kind = EOS_KIND_WHITEOUT;
	seed_entry(s, &e);
	e.st.kind = EOS_KIND_SYMLINK;
	e.target = target;
	seed_entry(s, &e);
	e.target = NULL;
	seed_files(s, &e);
	e.xattrs = xattrs;
	e.nxattrs = e.st.nxattrs = EOS_ARRAY_SIZE(xattrs);
	seed_entry(s, &e);
	e.st.kind = EOS_KIND_DIR;
	seed_entry(s, &e);
	seed_nodes(s, &e);
}

static void
seed_key(struct seeds *s, uint64_t sbx, const char *parent, const char *name, uint64_t v)
{
	must(eos_entry_key(seed_new(s, 'k'), sbx, parent, strlen(parent), name, strlen(name), v),
	     "encode a key");
}

static void
seeds_keys(struct seeds *s)
{
	seed_key(s, 1, "", "", 1);
	seed_key(s, 2, "usr/include", "stdio.h", 5);
	seed_key(s, UINT64_MAX, "a", "b", 0);
	seed_key(s, 3, "", "x", UINT64_MAX); /* an all-zero version suffix */
}

static void
seeds_manifests(struct seeds *s)
{
	enum {
		N = 3
	};
	cleanup_free struct eos_manifest *m = calloc(1, sizeof(*m) + N * sizeof(m->chunks[0]));

	must(m ? 0 : -ENOMEM, "allocate a manifest");
	for (uint32_t i = 0; i < N; i++) {
		fill(m->chunks[i].digest.b, EOS_DIGEST_LEN, 10 + i);
		m->chunks[i].len = 65536 + i * 1000;
		m->n = i + 1;
		must(eos_manifest_encode(m, seed_new(s, 'm')), "encode a manifest");
	}
}

/* A frame of n bytes (text or random), behind its digest; and the same bytes to round-trip. */
static void
seed_frame(struct seeds *s, size_t n, uint64_t seed)
{
	cleanup_free uint8_t *raw = malloc(n + 1);
	struct eos_digest d;
	struct eos_buf *b;

	must(raw ? 0 : -ENOMEM, "allocate a chunk");
	fill(raw, n, seed);
	must(eos_sha256(raw, n, &d), "hash");
	b = seed_new(s, 'c');
	must(eos_buf_append(b, d.b, EOS_DIGEST_LEN), "add a seed");
	must(eos_codec_encode(raw, n, 3, b), "encode a frame");
	b = seed_new(s, 'z');
	must(eos_buf_append_u8(b, (uint8_t)n), "add a seed");
	must(eos_buf_append(b, raw, n), "add a seed");
}

static void
seeds_frames(struct seeds *s)
{
	/* A zstd frame whose header and frame both claim 4 GiB (once a 4 GiB allocation). */
	static const uint8_t huge[] = { 0xe0, 1,    1,	  0,	0xff, 0xff, 0xff, 0xff, 0x28, 0xb5,
					0x2f, 0xfd, 0xa0, 0xff, 0xff, 0xff, 0xff, 1,	0,    0 };
	static const uint8_t no_digest[EOS_DIGEST_LEN];
	struct eos_buf *b = seed_new(s, 'c');

	must(eos_buf_append(b, no_digest, sizeof(no_digest)), "add a seed");
	must(eos_buf_append(b, huge, sizeof(huge)), "add a seed");
	seed_frame(s, 0, 0);
	seed_frame(s, 5, 0);
	seed_frame(s, 3000, 0);
	seed_frame(s, 700, 7);
}

static void
seeds_records(struct seeds *s)
{
	struct eos_sandbox_record rec = { "alpha", "dir:/usr/include", 1700000000123456789, 1 };
	struct eos_layer_info l = { 1, 0, 0, 1700000000123456789, "import", 10, 0, 0, 4096 };

	must(eos_sandbox_record_encode(&rec, seed_new(s, 's')), "encode a sandbox record");
	memset(rec.id, 'x', EOS_SANDBOX_ID_MAX);
	rec.source[0] = '\0';
	rec.next_link_group = 77;
	must(eos_sandbox_record_encode(&rec, seed_new(s, 's')), "encode a sandbox record");
	must(eos_layer_record_encode(&l, seed_new(s, 'l')), "encode a layer record");
	l = (struct eos_layer_info){ 9, 4, 5, 1, "workspace_session:ws-1", 1, 2, 3, 4 };
	must(eos_layer_record_encode(&l, seed_new(s, 'l')), "encode a layer record");
	l.owner[0] = '\0';
	must(eos_layer_record_encode(&l, seed_new(s, 'l')), "encode a layer record");
}

static void
seeds_blame(struct seeds *s)
{
	EOS_CLEANUP(eos_blame_release) struct eos_blame b = { 0 };
	static char original[] = "original", op[] = "operation:req-91";
	static char ws[] = "workspace_session:ws-17";
	char *owners[] = { original, op, ws };
	struct eos_blame_run runs[] = { { 3, 0 }, { 1, 1 }, { 7, 2 }, { 2, 0 } };
	struct eos_blame v = {
		.lines = 13, .runs = runs, .nruns = 4, .owners = owners, .nowners = 3
	};

	must(eos_blame_encode(&v, seed_new(s, 'b')), "encode a blame record");
	must(eos_blame_single(&b, 40, EOS_OWNER_UNKNOWN), "make a blame record");
	must(eos_blame_encode(&b, seed_new(s, 'b')), "encode a blame record");
	v.nruns = 0;
	v.nowners = 0;
	v.lines = 0;
	must(eos_blame_encode(&v, seed_new(s, 'b')), "encode a blame record");
}

static void
seeds_reader(struct seeds *s)
{
	/* Ops (op % 5): u8, le32, le64, bytes (length byte), lp (max byte * 3). */
	static const uint8_t program[] = { 0, 0x42, 1, 1, 2, 3, 4,   3,	  4,   'a', 'b', 'c', 'd',
					   4, 2,    3, 0, 0, 0, 'x', 'y', 'z', 2,   1,	 2,   3,
					   4, 5,    6, 7, 8, 4, 0,   0,	  0,   0,   0 };

	must(eos_buf_append(seed_new(s, 'r'), program, sizeof(program)), "add a seed");
}

static void
seeds_paths(struct seeds *s)
{
	static const char *const paths[] = {
		"",
		"a",
		"a/b/c",
		"/usr//include/./stdio.h/",
		"..",
		"a/../b",
		"./.",
		".hidden/x",
		"a\xff/b\x01",
		"a//b",
	};
	cleanup_free char *long_name = malloc(EOS_NAME_MAX + 2);
	cleanup_free char *long_path = malloc(EOS_PATH_MAX + 2);

	for (size_t i = 0; i < EOS_ARRAY_SIZE(paths); i++)
		must(eos_buf_append_str(seed_new(s, 'p'), paths[i]), "add a seed");
	must(long_name ? 0 : -ENOMEM, "allocate a name");
	memset(long_name, 'n', EOS_NAME_MAX + 1);
	long_name[EOS_NAME_MAX + 1] = '\0';
	must(eos_buf_append_str(seed_new(s, 'p'), long_name), "add a seed");
	must(eos_buf_append(seed_new(s, 'p'), "a\0b", 3), "add a seed");
	/* The longest tree path, then one byte too long. */
	must(long_path ? 0 : -ENOMEM, "allocate a path");
	for (size_t i = 0; i < EOS_PATH_MAX; i++)
		long_path[i] = i % 8 == 7 ? '/' : 'a';
	long_path[EOS_PATH_MAX] = '\0';
	must(eos_buf_append_str(seed_new(s, 'p'), long_path), "add a seed");
	long_path[EOS_PATH_MAX] = 'b';
	long_path[EOS_PATH_MAX + 1] = '\0';
	must(eos_buf_append_str(seed_new(s, 'p'), long_path), "add a seed");
}

/* One git index entry of version v (stat data, object id, flags, path) after prev. */
static void
seed_index_entry(struct eos_buf *b, uint32_t v, const char *path, const char *prev, uint32_t mode)
{
	size_t start = b->len, keep = 0, n = strlen(path);
	uint8_t stat[40] = { 0 }, oid[20];

	eos_put_be32(stat + 24, mode);
	eos_put_be32(stat + 36, (uint32_t)n);
	memset(oid, 0xAB, sizeof(oid));
	must(eos_buf_append(b, stat, sizeof(stat)), "add a seed");
	must(eos_buf_append(b, oid, sizeof(oid)), "add a seed");
	must(eos_buf_append_u8(b, 0), "add a seed");
	must(eos_buf_append_u8(b, (uint8_t)n), "add a seed");
	if (v == 4) {
		while (prev[keep] && prev[keep] == path[keep])
			keep++;
		must(eos_buf_append_u8(b, (uint8_t)(strlen(prev) - keep)), "add a seed");
		must(eos_buf_append(b, path + keep, n - keep + 1), "add a seed");
		return;
	}
	must(eos_buf_append(b, path, n), "add a seed");
	do
		must(eos_buf_append_u8(b, 0), "add a seed");
	while ((b->len - start) % 8);
}

/* Git indexes of versions 2 and 4 without their checksum (the target appends it). */
static void
seeds_git_index(struct seeds *s)
{
	static const char *const paths[] = { "a.txt", "dir/b", "dir/link" };
	static const uint8_t tree_ext[] = { 'T', 'R', 'E', 'E', 0, 0, 0, 2, '1', 0 };

	for (uint32_t v = 2; v <= 4; v += 2) {
		struct eos_buf *b = seed_new(s, 'g');
		uint8_t h[12] = { 'D', 'I', 'R', 'C' };

		eos_put_be32(h + 4, v);
		eos_put_be32(h + 8, EOS_ARRAY_SIZE(paths));
		must(eos_buf_append(b, h, sizeof(h)), "add a seed");
		for (size_t i = 0; i < EOS_ARRAY_SIZE(paths); i++)
			seed_index_entry(b, v, paths[i], i ? paths[i - 1] : "",
					 i == 2 ? 0120000 : 0100644);
		must(eos_buf_append(b, tree_ext, sizeof(tree_ext)), "add a seed");
	}
}

static void
seeds_build(struct seeds *s)
{
	seeds_entries(s);
	seeds_keys(s);
	seeds_manifests(s);
	seeds_frames(s);
	seeds_records(s);
	seeds_blame(s);
	seeds_reader(s);
	seeds_paths(s);
	seeds_git_index(s);
}

/* --- mutations -------------------------------------------------------------------------------- */

enum mutation {
	MUT_FLIP,
	MUT_BYTE,
	MUT_TRUNCATE,
	MUT_INSERT,
	MUT_DELETE,
	MUT_LENGTH,
	MUT_DUPLICATE,
	MUT_SPLICE,
	MUT_COUNT,
};

struct campaign {
	uint64_t rng;
	const struct seeds *seeds;
	struct eos_buf in;
};

static size_t
below(struct campaign *c, size_t n)
{
	return n ? (size_t)(xorshift(&c->rng) % n) : 0;
}

/* A position in the input after its tag byte, up to its end (1 when there is none). */
static size_t
position(struct campaign *c)
{
	return 1 + below(c, c->in.len);
}

/* Insert n bytes of p at pos (<= len). */
static void
insert(struct eos_buf *b, size_t pos, const uint8_t *p, size_t n)
{
	must(eos_buf_reserve(b, n), "grow an input");
	memmove(b->data + pos + n, b->data + pos, b->len - pos);
	memcpy(b->data + pos, p, n);
	b->len += n;
	b->data[b->len] = '\0';
}

static void
overwrite_length(struct campaign *c)
{
	size_t pos = position(c);
	uint32_t v;

	if (pos + 4 > c->in.len)
		return;
	switch (below(c, 4)) {
	case 0:
		v = (uint32_t)(c->in.len - pos - 4 -
			       below(c, 2)); /* all that follows, or one less */
		break;
	case 1:
		v = (uint32_t)below(c, 300);
		break;
	case 2: {
		static const uint32_t edges[] = { 255,	 256,	4095,	   4096,
						  65536, 65537, INT32_MAX, UINT32_MAX };
		v = edges[below(c, EOS_ARRAY_SIZE(edges))];
		break;
	}
	default:
		v = (uint32_t)xorshift(&c->rng);
	}
	for (int i = 0; i < 4; i++)
		c->in.data[pos + i] = (uint8_t)(v >> (8 * i));
}

static void
mutate_bytes(struct campaign *c, enum mutation m)
{
	static const uint8_t interesting[] = { 0, 1, '/', '.', 0x7f, 0x80, 0xfe, 0xff };
	size_t pos = position(c);

	if (pos >= c->in.len)
		return;
	if (m == MUT_FLIP)
		c->in.data[pos] ^= (uint8_t)(1u << below(c, 8));
	else if (below(c, 2))
		c->in.data[pos] = interesting[below(c, EOS_ARRAY_SIZE(interesting))];
	else
		c->in.data[pos] = (uint8_t)xorshift(&c->rng);
}

static void
mutate_range(struct campaign *c, enum mutation m)
{
	size_t pos = EOS_MIN(position(c), c->in.len), n = 1 + below(c, 16);
	uint8_t bytes[16];

	if (m == MUT_INSERT) {
		fill(bytes, n, xorshift(&c->rng) | 1);
		insert(&c->in, pos, bytes, n);
	} else if (m == MUT_DUPLICATE && pos < c->in.len) {
		n = EOS_MIN(n, c->in.len - pos);
		memcpy(bytes, c->in.data + pos, n);
		insert(&c->in, EOS_MIN(position(c), c->in.len), bytes, n);
	} else if (m == MUT_DELETE && pos < c->in.len) {
		n = EOS_MIN(n, c->in.len - pos);
		memmove(c->in.data + pos, c->in.data + pos + n, c->in.len - pos - n);
		eos_buf_truncate(&c->in, c->in.len - n);
	}
}

/* Replace the tail from a random position with the tail of another seed. */
static void
mutate_splice(struct campaign *c)
{
	const struct eos_buf *other = &c->seeds->v[below(c, c->seeds->n)];
	size_t from = below(c, other->len), pos = EOS_MIN(position(c), c->in.len);

	eos_buf_truncate(&c->in, pos);
	must(eos_buf_append(&c->in, other->data + from, other->len - from), "splice");
}

static void
mutate(struct campaign *c)
{
	enum mutation m = (enum mutation)below(c, MUT_COUNT);

	switch (m) {
	case MUT_FLIP:
	case MUT_BYTE:
		mutate_bytes(c, m);
		break;
	case MUT_TRUNCATE:
		eos_buf_truncate(&c->in, below(c, c->in.len + 1));
		break;
	case MUT_INSERT:
	case MUT_DELETE:
	case MUT_DUPLICATE:
		mutate_range(c, m);
		break;
	case MUT_LENGTH:
		overwrite_length(c);
		break;
	case MUT_SPLICE:
		mutate_splice(c);
		break;
	case MUT_COUNT:
		break;
	}
	if (c->in.len > INPUT_MAX)
		eos_buf_truncate(&c->in, INPUT_MAX);
}

/* The next input: a seed with 1..MAX_MUTATIONS mutations; rarely a new tag byte too. */
static void
next_input(struct campaign *c)
{
	const struct eos_buf *seed = &c->seeds->v[below(c, c->seeds->n)];
	size_t n = 1 + below(c, MAX_MUTATIONS);

	eos_buf_truncate(&c->in, 0);
	must(eos_buf_append(&c->in, seed->data, seed->len), "copy a seed");
	for (size_t i = 0; i < n; i++)
		mutate(c);
	if (c->in.len > 0 && below(c, 64) == 0)
		c->in.data[0] = (uint8_t)xorshift(&c->rng);
}

/* --- running ---------------------------------------------------------------------------------- */

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A non-negative integer from the environment, or def when unset. */
static uint64_t
env_number(const char *name, uint64_t def)
{
	const char *s = getenv(name);
	char *end;
	unsigned long long v;

	if (!s || !*s)
		return def;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno != 0 || *end != '\0' || s[0] == '-') {
		fprintf(stderr, "fuzz-decoders: %s='%s' is not a number\n", name, s);
		exit(EXIT_FAILURE);
	}
	return v;
}

static void
campaign_release(struct campaign *c)
{
	eos_buf_release(&c->in);
}

static int
campaign_run(void)
{
	EOS_CLEANUP(seeds_release) struct seeds seeds = { 0 };
	uint64_t runs = env_number("EOS_FUZZ_RUNS", DEFAULT_RUNS), done = 0;
	uint64_t seed = env_number("EOS_FUZZ_SEED", DEFAULT_SEED);
	double budget = (double)env_number("EOS_FUZZ_SECONDS", DEFAULT_SECONDS), start = now();
	EOS_CLEANUP(campaign_release) struct campaign c = { .rng = seed ? seed : DEFAULT_SEED };

	seeds_build(&seeds);
	c.seeds = &seeds;
	for (size_t i = 0; i < seeds.n; i++, done++)
		LLVMFuzzerTestOneInput(seeds.v[i].data, seeds.v[i].len);
	for (; done < runs; done++) {
		if (done % CLOCK_EVERY == 0 && now() - start >= budget)
			break;
		next_input(&c);
		LLVMFuzzerTestOneInput(c.in.data, c.in.len);
	}
	budget = EOS_MAX(now() - start, 1e-3);
	printf("fuzz-decoders: %" PRIu64
	       " inputs (%zu seeds) in %.1f s, %.0f inputs/s, seed %#" PRIx64 "\n",
	       done, seeds.n, budget, (double)done / budget, seed);
	return EXIT_SUCCESS;
}

/* --- files ------------------------------------------------------------------------------------ */

static int
read_file(const char *path, struct eos_buf *out)
{
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return eos_neg_errno();
	do {
		if (eos_buf_reserve(out, 65536) < 0)
			return -ENOMEM;
		n = read(fd, out->data + out->len, 65536);
		if (n < 0 && errno != EINTR)
			return eos_neg_errno();
		out->len += n > 0 ? (size_t)n : 0;
	} while (n != 0);
	return 0;
}

static int
replay_file(const char *path)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf in = { 0 };
	int r = read_file(path, &in);

	if (r < 0) {
		fprintf(stderr, "fuzz-decoders: read '%s': %s\n", path, strerror(-r));
		return r;
	}
	LLVMFuzzerTestOneInput(in.data, in.len);
	return 1;
}

static int
visible_entry(const struct dirent *d)
{
	return d->d_name[0] != '.' && d->d_type != DT_DIR;
}

/* Replay the files of dir in name order; returns how many, or -errno. */
static int
replay_dir(const char *dir)
{
	struct dirent **names = NULL;
	int n = scandir(dir, &names, visible_entry, alphasort), count = 0;

	if (n < 0) {
		fprintf(stderr, "fuzz-decoders: read '%s': %s\n", dir, strerror(errno));
		return eos_neg_errno();
	}
	for (int i = 0; i < n; i++) {
		cleanup_free char *path = NULL;

		if (count >= 0 && asprintf(&path, "%s/%s", dir, names[i]->d_name) < 0)
			count = -ENOMEM;
		if (count >= 0)
			count = replay_file(path) < 0 ? -EIO : count + 1;
		free(names[i]);
	}
	free(names);
	return count;
}

static int
replay(int argc, char **argv)
{
	int files = 0;

	for (int i = 1; i < argc; i++) {
		struct stat sb;
		int r;

		if (stat(argv[i], &sb) < 0) {
			fprintf(stderr, "fuzz-decoders: '%s': %s\n", argv[i], strerror(errno));
			return EXIT_FAILURE;
		}
		r = S_ISDIR(sb.st_mode) ? replay_dir(argv[i]) : replay_file(argv[i]);
		if (r < 0)
			return EXIT_FAILURE;
		files += r;
	}
	printf("fuzz-decoders: replayed %d input(s)\n", files);
	return EXIT_SUCCESS;
}

static int
write_all(const char *path, const struct eos_buf *b)
{
	cleanup_close int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	size_t off = 0;

	if (fd < 0)
		return eos_neg_errno();
	while (off < b->len) {
		ssize_t n = write(fd, b->data + off, b->len - off);

		if (n < 0 && errno != EINTR)
			return eos_neg_errno();
		off += n > 0 ? (size_t)n : 0;
	}
	return 0;
}

static int
write_seeds(const char *dir)
{
	EOS_CLEANUP(seeds_release) struct seeds seeds = { 0 };

	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "fuzz-decoders: create '%s': %s\n", dir, strerror(errno));
		return EXIT_FAILURE;
	}
	seeds_build(&seeds);
	for (size_t i = 0; i < seeds.n; i++) {
		cleanup_free char *path = NULL;
		int r = -ENOMEM;

		if (asprintf(&path, "%s/seed-%c-%03zu", dir, seeds.v[i].data[0], i) >= 0)
			r = write_all(path, &seeds.v[i]);
		if (r < 0) {
			fprintf(stderr, "fuzz-decoders: write a seed to '%s': %s\n", dir,
				strerror(-r));
			return EXIT_FAILURE;
		}
	}
	printf("fuzz-decoders: wrote %zu seeds to '%s'\n", seeds.n, dir);
	return EXIT_SUCCESS;
}

int
main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--write-seeds") == 0)
		return write_seeds(argv[2]);
	if (argc > 1 && argv[1][0] == '-') {
		fprintf(stderr, "usage: %s [--write-seeds DIR | FILE|DIR...]\n", argv[0]);
		return EXIT_FAILURE;
	}
	if (argc > 1)
		return replay(argc, argv);
	return campaign_run();
}
