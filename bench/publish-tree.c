/* SPDX-License-Identifier: MIT */
/*
 * Base trees and deltas for publish-bench: deterministic text content, a host tree of a
 * source-tree shape (directories of about 20-50 files at depth 3 to 5, files of a few hundred
 * bytes to 32 KiB, most of them small), and deltas of modified and created files.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/path.h"

#include "bench/publish.h"

static const char *const words[] = {
	"static", "int",    "return", "struct", "buffer", "length", "error",  "if",	"for",
	"the",	  "value",  "node",   "count",	"size_t", "const",  "char",   "while",	"data",
	"offset", "result", "list",   "next",	"free",	  "alloc",  "lock",   "unlock", "state",
	"path",	  "name",   "entry",  "index",	"flags",  "(",	    ")",      "{",	"}",
	"=",	  "+",	    "->",     "&&",	"0",	  "1",	    "NULL",   "true",	"false",
	"check",  "update", "read",   "write",	"open",	  "close",  "handle", "cache",	"key",
};

static const char *const names[] = {
	"alloc",  "buffer", "cache",  "client", "config", "core",  "driver", "event",
	"format", "hash",   "index",  "io",	"list",	  "log",   "map",    "net",
	"parse",  "queue",  "server", "sock",	"store",  "table", "util",   "view",
};

static const char *const exts[] = { "c", "h", "txt", "md", "py", "rs", "go", "json" };

enum {
	TREE_FILE_DEPTH = 3, /* directories at this depth and below hold files */
	TREE_MAX_DEPTH = 5,
	TREE_DIR_FILES_MIN = 20,
	TREE_DIR_FILES_MAX = 50,
	TREE_SUBTREE_FILES = 200, /* files below each directory at TREE_FILE_DEPTH */
	TREE_SIZE_MIN = 256,
	TREE_NEW_SIZE_MIN = 1024,
	TREE_NEW_SIZE_MAX = 4096,
};

/* --- random numbers and content --------------------------------------------------------------- */

/* splitmix64: a good 64-bit generator with a one-word state. */
uint64_t
pb_rand(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15u);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

uint64_t
pb_rand_range(uint64_t *state, uint64_t lo, uint64_t hi)
{
	return lo + pb_rand(state) % (hi - lo + 1);
}

static uint64_t
mix(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t s = a * 0x100000001b3u ^ b * 0xc2b2ae3d27d4eb4fu ^ c;

	return pb_rand(&s);
}

/* One line of pseudo-code: indentation, 2-10 words, maybe a semicolon. */
static int
append_line(struct eos_buf *out, uint64_t *rng)
{
	unsigned tabs = (unsigned)pb_rand_range(rng, 0, 3);
	unsigned n = (unsigned)pb_rand_range(rng, 2, 10);
	int r = 0;

	for (unsigned i = 0; r >= 0 && i < tabs; i++)
		r = eos_buf_append_u8(out, '\t');
	for (unsigned i = 0; r >= 0 && i < n; i++) {
		r = eos_buf_append_str(out, words[pb_rand(rng) % EOS_ARRAY_SIZE(words)]);
		if (r >= 0 && i + 1 < n)
			r = eos_buf_append_u8(out, ' ');
	}
	if (r >= 0 && pb_rand(rng) % 2)
		r = eos_buf_append_u8(out, ';');
	return r < 0 ? r : eos_buf_append_u8(out, '\n');
}

/* The base text: whole lines up to size bytes (at least one line). */
static int
base_text(uint64_t id, uint32_t size, struct eos_buf *out)
{
	uint64_t rng = mix(id, 0, 0x7e57);
	int r = 0;

	while (r >= 0 && out->len < size) {
		size_t before = out->len;

		r = append_line(out, &rng);
		if (r >= 0 && out->len > size && before > 0) {
			eos_buf_truncate(out, before);
			break;
		}
	}
	return r;
}

static size_t
count_lines(const struct eos_buf *b)
{
	size_t n = 0;

	for (size_t i = 0; i < b->len; i++)
		n += b->data[i] == '\n';
	return n;
}

/* Copy base into out, line m rewritten and a line inserted after line k (both of gen). */
static int
edit_text(const struct eos_buf *base, uint64_t id, uint32_t gen, struct eos_buf *out)
{
	size_t n = count_lines(base), m = mix(id, gen, 1) % n, k = mix(id, gen, 2) % n;
	char line[96];
	size_t off = 0;
	int r = 0;

	for (size_t i = 0; r >= 0 && i < n; i++) {
		const uint8_t *nl = memchr(base->data + off, '\n', base->len - off);
		size_t len = (size_t)(nl - (base->data + off)) + 1;

		if (i == m) {
			snprintf(line, sizeof(line), "\tvalue = revision(%" PRIu32 ", %zu);\n", gen,
				 m);
			r = eos_buf_append_str(out, line);
		} else {
			r = eos_buf_append(out, base->data + off, len);
		}
		if (r >= 0 && i == k) {
			snprintf(line, sizeof(line), "\tlog(\"generation %" PRIu32 "\");\n", gen);
			r = eos_buf_append_str(out, line);
		}
		off += len;
	}
	return r;
}

int
pb_content(uint64_t id, uint32_t size, uint32_t gen, struct eos_buf *out)
{
	struct eos_buf base;
	int r;

	eos_buf_truncate(out, 0);
	if (gen == 0)
		return base_text(id, size, out);
	eos_buf_init(&base);
	r = base_text(id, size, &base);
	if (r >= 0)
		r = edit_text(&base, id, gen, out);
	eos_buf_release(&base);
	return r;
}

/* --- host files ------------------------------------------------------------------------------- */

int
pb_write_file(const char *path, const void *data, size_t len, struct eos_error *err)
{
	cleanup_close int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0)
		return eos_error_set(err, eos_neg_errno(), "create '%s': %m", path);
	for (size_t off = 0; off < len;) {
		ssize_t n = write(fd, (const uint8_t *)data + off, len - off);

		if (n < 0)
			return eos_error_set(err, eos_neg_errno(), "write '%s': %m", path);
		off += (size_t)n;
	}
	if (close(TAKE_FD(fd)) < 0)
		return eos_error_set(err, eos_neg_errno(), "close '%s': %m", path);
	return 0;
}

int
pb_remove_tree(const char *path)
{
	return eos_rm_rf(path);
}

void
pb_size_label(uint64_t n, char *out, size_t size)
{
	if (n >= 1000 && n % 1000 == 0)
		snprintf(out, size, "%" PRIu64 "k", n / 1000);
	else
		snprintf(out, size, "%" PRIu64, n);
}

/* --- base trees ------------------------------------------------------------------------------- */

/*
 * A size of TREE_SIZE_MIN << 7u², u uniform in [0, 1): a median under 1 KiB, a mean of about
 * 3.5 KiB, at most 32 KiB (no libm: the exponent's fraction is interpolated linearly).
 */
static uint32_t
file_size(uint64_t *rng)
{
	uint64_t u = pb_rand(rng) >> 40; /* 24 bits */
	uint64_t e = (u * u * 7) >> 24;	 /* 7u², 24-bit fraction */
	uint64_t whole = e >> 24, frac = e & 0xffffff;
	uint64_t lo = (uint64_t)TREE_SIZE_MIN << whole;

	return (uint32_t)(lo + ((lo * frac) >> 24));
}

struct gen_ctx {
	struct pb_tree *t;
	uint64_t rng;
	struct eos_buf content;
	char path[PATH_MAX]; /* root/rel of the directory being generated */
	size_t root_len;
	struct eos_error *err;
};

static int
add_file(struct gen_ctx *g, size_t dir_len, unsigned i)
{
	struct pb_tree *t = g->t;
	struct pb_file *f;
	int n, r;

	if (eos_buf_array_reserve(&t->files, &t->cap, t->nfiles, sizeof(*t->files), 1024) < 0)
		return eos_error_set(g->err, -ENOMEM, "tree: out of memory");
	f = &t->files[t->nfiles];
	*f = (struct pb_file){ .id = t->nfiles, .size = file_size(&g->rng) };
	n = snprintf(g->path + dir_len, sizeof(g->path) - dir_len, "/%s_%u.%s",
		     names[pb_rand(&g->rng) % EOS_ARRAY_SIZE(names)], i,
		     exts[pb_rand(&g->rng) % EOS_ARRAY_SIZE(exts)]);
	if (n < 0 || (size_t)n >= sizeof(g->path) - dir_len)
		return eos_error_set(g->err, -ENAMETOOLONG, "tree: path too long");
	r = pb_content(f->id, f->size, 0, &g->content);
	r = r < 0 ? eos_error_set(g->err, r, "tree: out of memory")
		  : pb_write_file(g->path, g->content.data, g->content.len, g->err);
	if (r < 0)
		return r;
	f->path = strdup(g->path + g->root_len + 1);
	if (!f->path)
		return eos_error_set(g->err, -ENOMEM, "tree: out of memory");
	t->nfiles++;
	t->bytes += g->content.len;
	for (const char *c = f->path; *c; c++)
		t->depth_sum += *c == '/';
	return 0;
}

/*
 * How many subdirectories share rem files below a directory at depth. Above the file depth the
 * fanout is what brings each directory at depth 3 about TREE_SUBTREE_FILES files (1 for small
 * trees, about 8 at 100 000 files), so that below depth 3 every base has the same shape and its
 * files the same depths, whatever its size.
 */
static uint64_t
subdirs(struct gen_ctx *g, unsigned depth, uint64_t rem)
{
	uint64_t want = (rem + TREE_SUBTREE_FILES - 1) / TREE_SUBTREE_FILES, k = 1, k_pow;

	if (depth + 1 >= TREE_MAX_DEPTH)
		return (rem + 34) / 35; /* the last level takes all: about 35 each */
	if (depth >= TREE_FILE_DEPTH) {
		k = pb_rand_range(&g->rng, 2, 6);
		return EOS_MAX(1, EOS_MIN(k, (rem + TREE_DIR_FILES_MIN - 1) / TREE_DIR_FILES_MIN));
	}
	for (;; k++) { /* the smallest k with k^(levels to depth 3) >= want */
		k_pow = 1;
		for (unsigned i = depth; i < TREE_FILE_DEPTH; i++)
			k_pow *= k;
		if (k_pow >= want)
			break;
	}
	if (k > 1)
		k = k - 1 + pb_rand_range(&g->rng, 0, 2);
	return k;
}

static int gen_dir(struct gen_ctx *g, size_t dir_len, unsigned depth, uint64_t n);

static int
gen_subdirs(struct gen_ctx *g, size_t dir_len, unsigned depth, uint64_t rem)
{
	uint64_t k = subdirs(g, depth, rem);
	int r = 0;

	for (uint64_t j = 0; r >= 0 && j < k; j++) {
		uint64_t share = rem / k + (j < rem % k);
		int n = snprintf(g->path + dir_len, sizeof(g->path) - dir_len, "/%s%" PRIu64,
				 names[pb_rand(&g->rng) % EOS_ARRAY_SIZE(names)], j);

		if (n < 0 || (size_t)n >= sizeof(g->path) - dir_len)
			return eos_error_set(g->err, -ENAMETOOLONG, "tree: path too long");
		r = gen_dir(g, dir_len + (size_t)n, depth + 1, share);
	}
	return r;
}

/* Directory g->path[0, dir_len) at depth: some files here (from depth 3), the rest below. */
static int
gen_dir(struct gen_ctx *g, size_t dir_len, unsigned depth, uint64_t n)
{
	uint64_t here = 0;
	int r;

	g->path[dir_len] = '\0';
	if (mkdir(g->path, 0755) < 0 && errno != EEXIST)
		return eos_error_set(g->err, eos_neg_errno(), "mkdir '%s': %m", g->path);
	g->t->ndirs++;
	if (depth >= TREE_MAX_DEPTH)
		here = n;
	else if (depth >= TREE_FILE_DEPTH)
		here = pb_rand_range(&g->rng, TREE_DIR_FILES_MIN, TREE_DIR_FILES_MAX);
	here = EOS_MIN(here, n);
	for (uint64_t i = 0; i < here; i++) {
		r = add_file(g, dir_len, (unsigned)i);
		if (r < 0)
			return r;
	}
	if (n == here)
		return 0;
	return gen_subdirs(g, dir_len, depth, n - here);
}

int
pb_tree_generate(struct pb_tree *t, const char *root, uint64_t nfiles, struct eos_error *err)
{
	struct gen_ctx g = { .t = t, .rng = nfiles, .err = err };
	int r;

	*t = (struct pb_tree){ .nfiles_wanted = nfiles };
	pb_size_label(nfiles, t->label, sizeof(t->label));
	t->root = strdup(root);
	g.root_len = strlen(root);
	if (!t->root || g.root_len + 1 >= sizeof(g.path))
		return eos_error_set(err, -ENOMEM, "tree '%s': out of memory", root);
	memcpy(g.path, root, g.root_len);
	eos_buf_init(&g.content);
	r = gen_dir(&g, g.root_len, 0, nfiles);
	eos_buf_release(&g.content);
	t->ndirs--; /* the root */
	return r;
}

void
pb_tree_release(struct pb_tree *t)
{
	for (size_t i = 0; i < t->nfiles; i++)
		free(t->files[i].path);
	free(t->files);
	free(t->root);
	*t = (struct pb_tree){ 0 };
}

/* --- pools and deltas ------------------------------------------------------------------------- */

int
pb_pool_init(struct pb_pool *p, const struct pb_tree *t, size_t part, size_t parts)
{
	*p = (struct pb_pool){ 0 };
	p->idx = calloc(t->nfiles / parts + 1, sizeof(*p->idx));
	p->picked = calloc(t->nfiles / parts + 1, sizeof(*p->picked));
	if (!p->idx || !p->picked)
		return -ENOMEM;
	for (size_t i = part; i < t->nfiles; i += parts)
		p->idx[p->n++] = (uint32_t)i;
	return 0;
}

void
pb_pool_release(struct pb_pool *p)
{
	free(p->idx);
	free(p->picked);
	*p = (struct pb_pool){ 0 };
}

void
pb_delta_release(struct pb_delta *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->edits[i].path);
	free(d->edits);
	d->edits = NULL;
	d->n = 0;
}

/* A new file beside a random file of the pool. */
static int
new_edit(struct pb_tree *t, struct pb_pool *pool, uint64_t *rng, const char *tag, uint64_t *serial,
	 struct pb_edit *e)
{
	const struct pb_file *near = &t->files[pool->idx[pb_rand(rng) % pool->n]];
	size_t parent_len;
	const char *name;
	char path[PATH_MAX];
	int n;

	eos_path_split(near->path, &parent_len, &name);
	n = snprintf(path, sizeof(path), "%.*s%snew-%s-%" PRIu64 ".txt", (int)parent_len,
		     near->path, parent_len ? "/" : "", tag, *serial);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	(*serial)++;
	*e = (struct pb_edit){
		.id = mix(t->nfiles, *serial, (uint64_t)tag[0] << 8 | (uint8_t)tag[1]),
		.size = (uint32_t)pb_rand_range(rng, TREE_NEW_SIZE_MIN, TREE_NEW_SIZE_MAX),
	};
	e->path = strdup(path);
	return e->path ? 0 : -ENOMEM;
}

static int
modify(struct pb_tree *t, struct pb_pool *pool, size_t pos, struct pb_delta *d)
{
	struct pb_file *f = &t->files[pool->idx[pos]];

	pool->picked[pos] = pool->deltas;
	d->edits[d->n] = (struct pb_edit){ .id = f->id, .size = f->size, .gen = ++f->gen };
	d->edits[d->n].path = strdup(f->path);
	return d->edits[d->n++].path ? 0 : -ENOMEM;
}

int
pb_delta_make(struct pb_tree *t, struct pb_pool *pool, uint64_t *rng, size_t n, const char *tag,
	      uint64_t *serial, struct pb_delta *d)
{
	size_t modified = n - n / 10;
	int r = 0;

	*d = (struct pb_delta){ .edits = calloc(n, sizeof(*d->edits)) };
	if (!d->edits)
		return -ENOMEM;
	if (modified > pool->n || pool->n == 0)
		return -ERANGE;
	pool->deltas++;
	while (r >= 0 && d->n < modified) { /* a run of neighbours not picked yet */
		size_t pos = pb_rand(rng) % pool->n;

		for (size_t k = 0; r >= 0 && k < PB_CLUSTER && pos + k < pool->n; k++)
			if (d->n < modified && pool->picked[pos + k] != pool->deltas)
				r = modify(t, pool, pos + k, d);
	}
	for (size_t i = modified; r >= 0 && i < n; i++) {
		r = new_edit(t, pool, rng, tag, serial, &d->edits[d->n]);
		if (r >= 0)
			d->n++;
	}
	return r;
}
