/* SPDX-License-Identifier: MIT */
/*
 * Property test of the publish gate. Seeded random actors (workspace sessions, plain change sets
 * with an explicit base, blind sessionless writers) are begun on random retained versions, make
 * random edits (text line replacements, binary rewrites, creates, deletes, renames with an origin,
 * mode changes, directory creation and removal, symlink retargets; files may carry write ranges,
 * per line or over the whole file) and publish in random order, some concurrently from
 * threads. A model replays every outcome in commit order (each result names the head it was
 * checked against) and predicts it: taken, merged line by line (text edits are line replacements
 * of unique lines, so a three-way merge is exact), or a conflict. Checked:
 * the outcome agrees with the prediction (adjacent line edits may go either way), the store's
 * tree at every version equals the model, rejected actors left no trace (layer count, no entry
 * records above the head, sessions unchanged), blame covers every line of every file at every
 * retained version and names, for each line, the actor that wrote its (unique) text ("original"
 * for the base; binary files: one range, their last writer), and fsck is clean.
 *
 * Environment: EOS_PUBLISH_SEED=n replays one seed (exactly with EOS_PUBLISH_THREADS=0, which
 * commits every group in this thread: groups committed from threads may commit in another
 * order); EOS_PUBLISH_SEEDS=n runs seeds 1..n (default 8); EOS_PUBLISH_ACTORS=n sets the actors
 * per seed (default 40); EOS_PUBLISH_VERBOSE=1 prints every outcome with the model's verdict.
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"

#include "store/entry.h"
#include "store/kv.h"
#include "store/store-internal.h"
#include "store/store.h"
#include "tests/unit/publish-util.h"
#include "tests/unit/testutil.h"

/* --- the path universe ------------------------------------------------------------------------ */

enum pkind {
	P_FILE,
	P_DIR,
	P_LINK,
};

static const struct {
	const char *path;
	enum pkind kind;
	bool in_base;
} universe[] = {
	{ "b0", P_FILE, true },	    { "b1", P_FILE, true },	{ "c0", P_FILE, true },
	{ "d0", P_DIR, true },	    { "d0/b2", P_FILE, true },	{ "d0/n2", P_FILE, false },
	{ "d0/t4", P_FILE, true },  { "d0/t5", P_FILE, true },	{ "d1", P_DIR, true },
	{ "d1/c1", P_FILE, true },  { "d1/n3", P_FILE, false }, { "d1/t6", P_FILE, true },
	{ "d2", P_DIR, false },	    { "d2/n4", P_FILE, false }, { "d3", P_DIR, false },
	{ "d3/n5", P_FILE, false }, { "l0", P_LINK, true },	{ "n0", P_FILE, false },
	{ "n1", P_FILE, false },    { "t0", P_FILE, true },	{ "t1", P_FILE, true },
	{ "t2", P_FILE, true },	    { "t3", P_FILE, true },
};

enum {
	NPATHS = sizeof(universe) / sizeof(universe[0]),
	MAX_VERSIONS = 512,
	MAX_OWNERS = 16384,
	MAX_GROUP = 3,
};

/* Index of the parent directory of path i, or -1 for the root. */
static int
parent_of(int i)
{
	const char *slash = strrchr(universe[i].path, '/');

	if (!slash)
		return -1;
	for (int j = 0; j < NPATHS; j++)
		if (strlen(universe[j].path) == (size_t)(slash - universe[i].path) &&
		    strncmp(universe[j].path, universe[i].path,
			    (size_t)(slash - universe[i].path)) == 0)
			return j;
	ck_abort_msg("no parent for %s", universe[i].path);
	return -1;
}

/* Path j is strictly below path i. */
static bool
below(int j, int i)
{
	size_t n = strlen(universe[i].path);

	return strncmp(universe[j].path, universe[i].path, n) == 0 && universe[j].path[n] == '/';
}

/* --- model nodes and trees -------------------------------------------------------------------- */

/* A path's state: kind EOS_KIND_NONE when absent; data is file content or symlink target. */
struct node {
	enum eos_kind kind;
	unsigned mode;
	char *data;
	size_t len;
	bool binary;
	unsigned writer; /* binary files: who wrote the content (index into R.owners) */
};

struct tree {
	struct node n[NPATHS];
};

static bool
data_eq(const struct node *a, const struct node *b)
{
	return a->len == b->len && (a->len == 0 || memcmp(a->data, b->data, a->len) == 0);
}

static bool
node_eq(const struct node *a, const struct node *b)
{
	if (a->kind != b->kind)
		return false;
	if (a->kind == EOS_KIND_NONE || a->kind == EOS_KIND_DIR)
		return a->kind == EOS_KIND_NONE || a->mode == b->mode;
	return a->mode == b->mode && data_eq(a, b);
}

static void
node_set(struct node *dst, const struct node *src)
{
	free(dst->data);
	*dst = *src;
	dst->data = NULL;
	if (src->data) {
		dst->data = malloc(src->len + 1);
		ck_assert_ptr_nonnull(dst->data);
		memcpy(dst->data, src->data, src->len);
		dst->data[src->len] = '\0';
	}
}

static void
tree_copy(struct tree *dst, const struct tree *src)
{
	for (int i = 0; i < NPATHS; i++)
		node_set(&dst->n[i], &src->n[i]);
}

static void
tree_release(struct tree *t)
{
	for (int i = 0; i < NPATHS; i++) {
		free(t->n[i].data);
		t->n[i].data = NULL;
		t->n[i].kind = EOS_KIND_NONE;
	}
}

/* --- the run: random source, versions, failure reports ------------------------------------- */

struct run {
	uint64_t seed, rng;
	unsigned actors;
	bool threads;	    /* commit groups from threads at once */
	struct tree *trees; /* trees[v] for v = 1..head; [0] unused */
	uint32_t *touched;  /* paths with a record written at v */
	uint64_t head;
	unsigned line_seq;    /* unique line numbers */
	unsigned *line_owner; /* line number -> who wrote the line (index into R.owners) */
	size_t line_cap;
	char (*owners)[64]; /* [0] "original", then actors' owners and their write ranges' */
	unsigned nowners;
	unsigned cur; /* who writes the content being generated */
	unsigned actor_seq;
	unsigned published, rejected, no_op, merged, either;
};

static struct run R;

#define prop_assert(cond, ...)                                                                 \
	ck_assert_msg((cond), "seed %" PRIu64 " (EOS_PUBLISH_SEED=%" PRIu64 " to replay): %s", \
		      R.seed, R.seed, prop_fmt(__VA_ARGS__))

static const char *prop_fmt(const char *fmt, ...) EOS_PRINTF(1, 2);

static const char *
prop_fmt(const char *fmt, ...)
{
	static char buf[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return buf;
}

static uint64_t
rnd(void)
{
	R.rng ^= R.rng << 13;
	R.rng ^= R.rng >> 7;
	R.rng ^= R.rng << 17;
	return R.rng;
}

static unsigned
rnd_below(unsigned n)
{
	return (unsigned)(rnd() % n);
}

static bool
chance(unsigned percent)
{
	return rnd_below(100) < percent;
}

/* --- content ---------------------------------------------------------------------------------- */

/* Style of a text file: its line ending and whether its last line ends. */
static const char *
eol_of(int i)
{
	return universe[i].path[strlen(universe[i].path) - 2] == 'c' ? "\r\n" : "\n";
}

static bool
final_newline(int i)
{
	return strcmp(universe[i].path, "t3") != 0;
}

/* A new unique line (with path i's line ending). */
static void
append_line(struct eos_buf *b, int i, bool last)
{
	char line[32];

	if (R.line_seq == R.line_cap) {
		R.line_cap = R.line_cap ? 2 * R.line_cap : 1024;
		R.line_owner = reallocarray(R.line_owner, R.line_cap, sizeof(*R.line_owner));
		ck_assert_ptr_nonnull(R.line_owner);
	}
	R.line_owner[R.line_seq] = R.cur;
	snprintf(line, sizeof(line), "line %u of %s", R.line_seq++, universe[i].path);
	ck_assert_int_eq(eos_buf_append_str(b, line), 0);
	if (!last || final_newline(i))
		ck_assert_int_eq(eos_buf_append_str(b, eol_of(i)), 0);
}

static void
node_text(struct node *n, int i, unsigned lines)
{
	struct eos_buf b;

	eos_buf_init(&b);
	for (unsigned l = 0; l < lines; l++)
		append_line(&b, i, l + 1 == lines);
	free(n->data);
	n->kind = EOS_KIND_FILE;
	n->binary = false;
	n->len = b.len;
	ck_assert_int_eq(eos_buf_append_u8(&b, 0), 0);
	n->data = (char *)eos_buf_steal(&b, NULL);
}

static void
node_binary(struct node *n)
{
	size_t len = 16 + rnd_below(200);

	free(n->data);
	n->data = malloc(len + 1);
	ck_assert_ptr_nonnull(n->data);
	eos_test_fill_random(n->data, len, rnd());
	n->data[0] = '\0';
	n->data[len] = '\0';
	n->len = len;
	n->kind = EOS_KIND_FILE;
	n->binary = true;
	n->writer = R.cur;
}

/* Split text into lines (pointers into data, each with its terminator). */
struct lines {
	const char *p[64];
	size_t len[64];
	unsigned n;
};

static void
split_lines(const struct node *nd, struct lines *ls)
{
	size_t start = 0;

	ls->n = 0;
	for (size_t i = 0; i <= nd->len; i++) {
		if (i < nd->len && nd->data[i] != '\n')
			continue;
		if (i == nd->len && start == nd->len)
			break;
		ck_assert_uint_lt(ls->n, 64);
		ls->p[ls->n] = nd->data + start;
		ls->len[ls->n++] = (i < nd->len ? i + 1 : i) - start;
		start = i + 1;
	}
}

static bool
line_eq(const struct lines *a, unsigned i, const struct lines *b, unsigned j)
{
	return a->len[i] == b->len[j] && memcmp(a->p[i], b->p[j], a->len[i]) == 0;
}

/* Replace 1 or 2 random lines of text file n (path i) with new unique lines. */
static void
text_edit(struct node *n, int i)
{
	struct lines ls;
	struct eos_buf b;
	unsigned a, c;

	split_lines(n, &ls);
	a = rnd_below(ls.n);
	c = chance(40) ? rnd_below(ls.n) : a;
	eos_buf_init(&b);
	for (unsigned l = 0; l < ls.n; l++) {
		if (l == a || l == c)
			append_line(&b, i, l + 1 == ls.n);
		else
			ck_assert_int_eq(eos_buf_append(&b, ls.p[l], ls.len[l]), 0);
	}
	free(n->data);
	n->len = b.len;
	ck_assert_int_eq(eos_buf_append_u8(&b, 0), 0);
	n->data = (char *)eos_buf_steal(&b, NULL);
}

/* --- the base --------------------------------------------------------------------------------- */

static const int hot[] = { 2, 19, 22 }; /* c0 (CRLF), t0, t3 (no final newline) */

static bool
is_hot(int i)
{
	return i == hot[0] || i == hot[1] || i == hot[2];
}

static void
base_tree(struct tree *t)
{
	memset(t, 0, sizeof(*t));
	for (int i = 0; i < NPATHS; i++) {
		struct node *n = &t->n[i];

		if (!universe[i].in_base)
			continue;
		n->mode = 0644;
		if (universe[i].kind == P_DIR) {
			n->kind = EOS_KIND_DIR;
			n->mode = 0755;
		} else if (universe[i].kind == P_LINK) {
			n->kind = EOS_KIND_SYMLINK;
			n->mode = 0777;
			n->data = strdup("t0");
			n->len = 2;
		} else if (universe[i].path[strlen(universe[i].path) - 2] == 'b') {
			node_binary(n);
		} else {
			node_text(n, i, is_hot(i) ? 20 + rnd_below(10) : 6 + rnd_below(7));
		}
	}
}

/* Stage node n at path i into a change set or publish through pu_op. */
static struct pu_op
node_op(int i, const struct node *n)
{
	struct pu_op op = { .path = universe[i].path, .mode = n->mode };

	switch (n->kind) {
	case EOS_KIND_DIR:
		op.kind = PU_DIR;
		break;
	case EOS_KIND_SYMLINK:
		op.kind = PU_SYMLINK;
		op.data = n->data;
		break;
	case EOS_KIND_FILE:
		op.kind = PU_FILE;
		op.data = n->data;
		op.len = n->len;
		/* an empty file never occurs: len 0 would mean strlen */
		ck_assert_uint_gt(n->len, 0);
		break;
	case EOS_KIND_NONE:
	case EOS_KIND_WHITEOUT:
	case EOS_KIND_FIFO: /* the model makes none */
	case EOS_KIND_CHR:
	case EOS_KIND_BLK:
	default:
		op.kind = PU_REMOVE;
		break;
	}
	return op;
}

static void
make_base(void)
{
	struct pu_op ops[NPATHS + 1];
	size_t n = 0;

	base_tree(&R.trees[1]);
	for (int i = 0; i < NPATHS; i++)
		if (R.trees[1].n[i].kind != EOS_KIND_NONE)
			ops[n++] = node_op(i, &R.trees[1].n[i]);
	ops[n].kind = PU_END;
	pu_sandbox(ops);
	R.head = 1;
}

/* --- actors ----------------------------------------------------------------------------------- */

enum actor_kind {
	A_SESSION,
	A_PLAIN,
	A_BLIND,
};

struct actor {
	enum actor_kind kind;
	char name[32];	/* session name */
	char owner[64]; /* the layer owner expected */
	uint64_t base;
	struct tree s;	    /* the actor's tree: its base with its edits */
	uint32_t staged;    /* paths staged */
	uint32_t removed;   /* paths staged as removals (directories included) */
	int origin[NPATHS]; /* renames: the source path index, else -1 */
	unsigned main;	    /* index of the actor's owner in R.owners */
	struct eos_publish *p;
	struct eos_publish_result res;
	int r;
	char msg[256];
};

static bool
is_used(const struct actor *a, int i)
{
	for (int j = 0; j < NPATHS; j++)
		if ((a->staged & (1u << j)) && (j == i || below(i, j) || below(j, i)))
			return true;
	return false;
}

static bool
parent_is_dir(const struct actor *a, int i)
{
	int p = parent_of(i);

	return p < 0 || a->s.n[p].kind == EOS_KIND_DIR;
}

/* A random path of kind k, present (want_present) or absent in the actor's tree, unused. */
static int
pick(const struct actor *a, enum pkind k, bool want_present)
{
	int cand[NPATHS], n = 0;

	for (int i = 0; i < NPATHS; i++)
		if (universe[i].kind == k && (a->s.n[i].kind != EOS_KIND_NONE) == want_present &&
		    !is_used(a, i))
			cand[n++] = i;
	return n ? cand[rnd_below((unsigned)n)] : -1;
}

static void
stage(struct actor *a, int i)
{
	a->staged |= 1u << i;
}

/* Most file edits go to a few hot text files, so that actors meet there and merge. */
static int
pick_hot(const struct actor *a)
{
	int i = hot[rnd_below(3)];

	if (a->s.n[i].kind == EOS_KIND_FILE && !is_used(a, i))
		return i;
	return pick(a, P_FILE, true);
}

static void
edit_file(struct actor *a)
{
	int i = chance(70) ? pick_hot(a) : pick(a, P_FILE, true);

	if (i < 0)
		return;
	if (a->s.n[i].binary)
		node_binary(&a->s.n[i]);
	else
		text_edit(&a->s.n[i], i);
	stage(a, i);
}

static void
create_file(struct actor *a)
{
	int i = pick(a, P_FILE, false), p;

	if (i < 0)
		return;
	p = parent_of(i);
	if (p >= 0 && a->s.n[p].kind != EOS_KIND_DIR) {
		if (is_used(a, p) && !(a->staged & (1u << p)))
			return;
		a->s.n[p] = (struct node){ .kind = EOS_KIND_DIR, .mode = 0755 };
		stage(a, p);
	}
	a->s.n[i].mode = 0644;
	if (chance(25))
		node_binary(&a->s.n[i]);
	else
		node_text(&a->s.n[i], i, 3 + rnd_below(5));
	stage(a, i);
}

static void
remove_path(struct actor *a, int i)
{
	for (int j = 0; j < NPATHS; j++)
		if (j == i || below(j, i)) {
			free(a->s.n[j].data);
			memset(&a->s.n[j], 0, sizeof(a->s.n[j]));
		}
	stage(a, i);
	a->removed |= 1u << i;
}

static void
delete_file(struct actor *a)
{
	int i = pick(a, P_FILE, true);

	if (i >= 0)
		remove_path(a, i);
}

static void
rename_file(struct actor *a)
{
	int src = pick(a, P_FILE, true), dst;

	if (src < 0)
		return;
	stage(a, src); /* reserve it while picking the destination */
	dst = pick(a, P_FILE, false);
	if (dst < 0 || !parent_is_dir(a, dst) ||
	    (parent_of(dst) >= 0 && (a->staged & (1u << parent_of(dst))))) {
		a->staged &= ~(1u << src);
		return;
	}
	node_set(&a->s.n[dst], &a->s.n[src]);
	remove_path(a, src);
	a->origin[dst] = src;
	stage(a, dst);
}

static void
chmod_file(struct actor *a)
{
	static const unsigned modes[] = { 0644, 0755, 0600 };
	int i = pick(a, P_FILE, true);
	unsigned m;

	if (i < 0)
		return;
	do
		m = modes[rnd_below(3)];
	while (m == a->s.n[i].mode);
	a->s.n[i].mode = m;
	stage(a, i);
}

static void
make_dir(struct actor *a)
{
	int i = pick(a, P_DIR, false);

	if (i < 0)
		return;
	a->s.n[i] = (struct node){ .kind = EOS_KIND_DIR, .mode = 0755 };
	stage(a, i);
}

static void
remove_dir(struct actor *a)
{
	int i = pick(a, P_DIR, true);

	if (i >= 0)
		remove_path(a, i);
}

static void
retarget(struct actor *a)
{
	static const char *const targets[] = { "t0", "t1", "nowhere", "d0/t4" };
	int i = pick(a, P_LINK, true);
	const char *t;

	if (i < 0)
		return;
	t = targets[rnd_below(4)];
	if (strcmp(t, a->s.n[i].data) == 0)
		return;
	free(a->s.n[i].data);
	a->s.n[i].data = strdup(t);
	a->s.n[i].len = strlen(t);
	stage(a, i);
}

static void
random_edit(struct actor *a)
{
	static void (*const edits[])(struct actor *) = {
		edit_file,   edit_file,	  edit_file,  edit_file, create_file, create_file,
		delete_file, rename_file, chmod_file, make_dir,	 remove_dir,  retarget,
	};

	edits[rnd_below(sizeof(edits) / sizeof(edits[0]))](a);
}

/* Blind writers only create or replace files at the root (the parent always exists). */
static void
blind_edit(struct actor *a)
{
	static const int root_files[] = { 0, 1, 2, 17, 18, 19, 20, 21, 22 };
	int i = root_files[rnd_below(sizeof(root_files) / sizeof(root_files[0]))];

	if (a->staged & (1u << i))
		return;
	a->s.n[i].mode = 0644;
	if (chance(20))
		node_binary(&a->s.n[i]);
	else
		node_text(&a->s.n[i], i, 2 + rnd_below(4));
	stage(a, i);
}

/* --- staging into the store ------------------------------------------------------------------- */

/* The unique number of a generated line. */
static unsigned
line_number(const char *line, size_t len)
{
	char buf[48];
	unsigned n;

	snprintf(buf, sizeof(buf), "%.*s", (int)EOS_MIN(len, sizeof(buf) - 1), line);
	ck_assert_msg(sscanf(buf, "line %u", &n) == 1 && n < R.line_seq, "line '%s'", buf);
	return n;
}

/* A new operation owner of write ranges. */
static unsigned
new_owner(void)
{
	ck_assert_uint_lt(R.nowners, MAX_OWNERS);
	snprintf(R.owners[R.nowners], sizeof(R.owners[0]), "operation:w%u", R.nowners);
	return R.nowners++;
}

/*
 * Write ranges for file s that actor a wrote: none, one over the whole file (an editor save:
 * only the lines a wrote become the range's), or one per line a wrote, for some of them. The
 * model's owners of those lines (binary: the writer) follow.
 */
static size_t
file_ranges(const struct actor *a, struct node *s, struct eos_write_range *out, size_t max)
{
	unsigned how = rnd_below(4), x;
	struct lines ls;
	size_t n = 0, off = 0;

	if (how < 2 || (s->binary && how == 3))
		return 0;
	if (s->binary || how == 2) {
		x = new_owner();
		out[n++] = (struct eos_write_range){ 0, s->len, R.owners[x] };
		s->writer = x;
	}
	if (s->binary)
		return n;
	split_lines(s, &ls);
	for (unsigned l = 0; l < ls.n; off += ls.len[l], l++) {
		unsigned k = line_number(ls.p[l], ls.len[l]);

		if (R.line_owner[k] != a->main)
			continue;
		if (how == 2) {
			R.line_owner[k] = s->writer;
		} else if (chance(50) && n < max) {
			x = new_owner();
			out[n++] = (struct eos_write_range){ off, off + ls.len[l], R.owners[x] };
			R.line_owner[k] = x;
		}
	}
	return n;
}

/* Stage file i of a with write ranges; false when it got none (stage it plainly). */
static bool
stage_ranged(struct actor *a, int i)
{
	struct node *s = &a->s.n[i];
	struct eos_write_range ranges[64];
	struct eos_publish_file f = {
		.attr = eos_test_attr(s->mode),
		.data = s->data,
		.len = s->len,
		.ranges = ranges,
	};
	struct eos_error err = { 0 };
	int r;

	f.nranges = file_ranges(a, s, ranges, 64);
	if (!f.nranges)
		return false;
	r = eos_publish_put_file(a->p, universe[i].path, &f, &err);
	ck_ok(r, err);
	return true;
}

static void
stage_actor(struct actor *a, const struct tree *base)
{
	struct pu_op ops[2 * NPATHS + 1];
	size_t n = 0;

	/* parents before children (universe is sorted), removals first */
	for (int i = 0; i < NPATHS; i++)
		if ((a->removed & (1u << i)) && base->n[i].kind != EOS_KIND_NONE)
			ops[n++] = (struct pu_op){ .kind = PU_REMOVE, .path = universe[i].path };
	for (int i = 0; i < NPATHS; i++) {
		const struct node *s = &a->s.n[i], *b = &base->n[i];

		if (!(a->staged & (1u << i)) || (a->removed & (1u << i)))
			continue;
		if (a->origin[i] >= 0)
			ops[n++] = (struct pu_op){ .kind = PU_RENAME,
						   .path = universe[i].path,
						   .data = universe[a->origin[i]].path };
		else if (s->kind == EOS_KIND_FILE && b->kind == EOS_KIND_FILE && data_eq(s, b))
			ops[n++] = (struct pu_op){ .kind = PU_MODE,
						   .path = universe[i].path,
						   .mode = s->mode };
		else if (s->kind != EOS_KIND_FILE || !stage_ranged(a, i))
			ops[n++] = node_op(i, s);
	}
	ops[n].kind = PU_END;
	pu_stage(a->p, ops);
}

/* A random retained version as the base: mostly the head, sometimes a few versions back. */
static uint64_t
pick_base(void)
{
	uint64_t back = chance(40) ? 0 : 1 + rnd_below(6);

	return R.head > back ? R.head - back : 1;
}

static void
actor_begin(struct actor *a)
{
	unsigned edits = 1 + rnd_below(4);
	bool editor = a->kind != A_BLIND && chance(35); /* edits files only, mostly hot ones */

	for (int i = 0; i < NPATHS; i++)
		a->origin[i] = -1;
	snprintf(a->name, sizeof(a->name), "s%u", R.actor_seq);
	if (a->kind == A_SESSION)
		snprintf(a->owner, sizeof(a->owner), "workspace_session:%s", a->name);
	else
		snprintf(a->owner, sizeof(a->owner), "operation:op-%u", R.actor_seq);
	ck_assert_uint_lt(R.nowners, MAX_OWNERS);
	a->main = R.cur = R.nowners++;
	snprintf(R.owners[R.cur], sizeof(R.owners[R.cur]), "%s", a->owner);
	a->base = a->kind == A_BLIND ? R.head : pick_base();
	tree_copy(&a->s, &R.trees[a->base]);
	for (unsigned e = 0; e < edits; e++)
		(a->kind == A_BLIND ? blind_edit : editor ? edit_file : random_edit)(a);
	if (a->kind == A_SESSION) {
		pu_session(a->name, a->base);
		pu_session_record(a->name, "marker", a->owner);
		a->p = pu_begin(a->name, 0, NULL);
		prop_assert(eos_publish_base(a->p) == a->base, "session base %" PRIu64,
			    eos_publish_base(a->p));
	} else {
		a->p = pu_begin(NULL, a->kind == A_BLIND ? 0 : a->base, a->owner);
	}
	R.actor_seq++;
	stage_actor(a, &R.trees[a->base]);
}

static void
actor_release(struct actor *a)
{
	eos_publish_free(a->p);
	a->p = NULL;
	eos_publish_result_release(&a->res);
	tree_release(&a->s);
}

/* --- the model's prediction ------------------------------------------------------------------- */

enum verdict {
	V_CLEAN,
	V_EITHER, /* adjacent line edits: git may merge or refuse them */
	V_CONFLICT,
};

static bool
touched_between(int i, uint64_t base, uint64_t head)
{
	for (uint64_t v = base + 1; v <= head; v++)
		if (R.touched[v] & (1u << i))
			return true;
	return false;
}

static bool
touched_below(int i, uint64_t base, uint64_t head)
{
	for (int j = 0; j < NPATHS; j++)
		if (below(j, i) && touched_between(j, base, head))
			return true;
	return false;
}

/* Three-way merge of text files with equal line counts, line by line. */
static enum verdict
merge_lines(const struct node *b, const struct node *h, const struct node *s, struct node *out)
{
	struct lines lb, lh, ls;
	enum verdict v = V_CLEAN;
	bool hc[64] = { false }, sc[64] = { false };
	struct eos_buf buf;

	split_lines(b, &lb);
	split_lines(h, &lh);
	split_lines(s, &ls);
	if (lb.n != lh.n || lb.n != ls.n)
		return V_CONFLICT;
	for (unsigned l = 0; l < lb.n; l++) {
		hc[l] = !line_eq(&lb, l, &lh, l);
		sc[l] = !line_eq(&lb, l, &ls, l);
		if (hc[l] && sc[l] && !line_eq(&lh, l, &ls, l))
			return V_CONFLICT;
	}
	for (unsigned l = 0; l + 1 < lb.n; l++)
		if ((hc[l] && sc[l + 1]) || (sc[l] && hc[l + 1]))
			v = V_EITHER;
	eos_buf_init(&buf);
	for (unsigned l = 0; l < lb.n; l++)
		ck_assert_int_eq(hc[l] ? eos_buf_append(&buf, lh.p[l], lh.len[l])
				       : eos_buf_append(&buf, ls.p[l], ls.len[l]),
				 0);
	free(out->data);
	out->len = buf.len;
	ck_assert_int_eq(eos_buf_append_u8(&buf, 0), 0);
	out->data = (char *)eos_buf_steal(&buf, NULL);
	out->binary = false;
	return v;
}

static unsigned
merge_mode(unsigned b, unsigned h, unsigned s, bool *conflict)
{
	if (h != b && s != b && h != s)
		*conflict = true;
	return h == b ? s : h;
}

/* Both sides changed file i (b, h, s all files, pairwise different as nodes). */
static enum verdict
merge_file(const struct node *b, const struct node *h, const struct node *s, struct node *out)
{
	bool mode_conflict = false;
	enum verdict v = V_CLEAN;

	node_set(out, h);
	out->mode = merge_mode(b->mode, h->mode, s->mode, &mode_conflict);
	if (mode_conflict)
		return V_CONFLICT;
	if (data_eq(b, h) || data_eq(h, s)) {
		node_set(out, s);
		out->mode = merge_mode(b->mode, h->mode, s->mode, &mode_conflict);
	} else if (!data_eq(b, s)) {
		if (b->binary || h->binary || s->binary)
			return V_CONFLICT;
		v = merge_lines(b, h, s, out);
	}
	return v;
}

static enum verdict
resolve_changed(const struct node *b, const struct node *h, const struct node *s, struct node *out)
{
	if (s->kind == EOS_KIND_NONE || h->kind == EOS_KIND_NONE || b->kind == EOS_KIND_NONE)
		return V_CONFLICT; /* delete/modify, modify/delete, both created differently */
	if (b->kind != h->kind || b->kind != s->kind)
		return V_CONFLICT;
	if (b->kind == EOS_KIND_SYMLINK) {
		node_set(out, data_eq(b, h) ? s : h);
		return data_eq(b, h) || data_eq(b, s) ? V_CLEAN : V_CONFLICT;
	}
	if (b->kind == EOS_KIND_FILE)
		return merge_file(b, h, s, out);
	node_set(out, s);
	return V_CLEAN;
}

static enum verdict
worst(enum verdict a, enum verdict b)
{
	return a > b ? a : b;
}

/* Resolve path i of actor a against head h into p (the predicted tree). */
static enum verdict
resolve_path(const struct actor *a, int i, uint64_t head, struct tree *p)
{
	const struct node *b = &R.trees[a->base].n[i], *h = &R.trees[head].n[i], *s = &a->s.n[i];
	enum verdict v = V_CLEAN;

	if (a->kind == A_BLIND) {
		node_set(&p->n[i], s);
		return V_CLEAN;
	}
	if (node_eq(h, s)) {
		node_set(&p->n[i], h);
	} else if (node_eq(b, h)) {
		node_set(&p->n[i], s);
		/* changed and changed back (or a directory re-created): by value nothing changed,
		 * by version the head did; deleting it may be refused either way */
		if (s->kind == EOS_KIND_NONE && touched_between(i, a->base, head))
			v = V_EITHER;
	} else {
		v = resolve_changed(b, h, s, &p->n[i]);
	}
	if ((a->removed & (1u << i)) && b->kind == EOS_KIND_DIR && touched_below(i, a->base, head))
		v = worst(v, h->kind == EOS_KIND_NONE ? V_EITHER : V_CONFLICT);
	return v;
}

/* Every present staged path needs a directory as parent in the result. */
static enum verdict
check_parents(const struct actor *a, const struct tree *p)
{
	for (int i = 0; i < NPATHS; i++) {
		int par = parent_of(i);

		if (!(a->staged & (1u << i)) || p->n[i].kind == EOS_KIND_NONE || par < 0)
			continue;
		if (p->n[par].kind != EOS_KIND_DIR)
			return V_CONFLICT;
	}
	return V_CLEAN;
}

/*
 * A rename whose source existed at the base and is gone at the head (the head deleted it, or a
 * directory above it, or renamed it away) is a conflict, unless the head changed the destination
 * too (then the destination's own verdict decides).
 */
static enum verdict
check_renames(const struct actor *a, uint64_t head)
{
	if (a->kind == A_BLIND)
		return V_CLEAN;
	for (int i = 0; i < NPATHS; i++) {
		int o = a->origin[i];

		if (!(a->staged & (1u << i)) || o < 0 || !(a->removed & (1u << o)))
			continue;
		if (R.trees[a->base].n[o].kind != EOS_KIND_NONE &&
		    R.trees[head].n[o].kind == EOS_KIND_NONE && !touched_between(i, a->base, head))
			return V_CONFLICT;
	}
	return V_CLEAN;
}

/* Predict the outcome of a against head: the verdict and (unless a conflict) the tree. */
static enum verdict
predict(const struct actor *a, uint64_t head, struct tree *p, uint32_t *touched)
{
	enum verdict v = V_CLEAN;

	tree_copy(p, &R.trees[head]);
	for (int i = 0; i < NPATHS; i++)
		if (a->staged & (1u << i))
			v = worst(v, resolve_path(a, i, head, p));
	for (int i = 0; i < NPATHS; i++)
		if ((a->removed & (1u << i)) && p->n[i].kind == EOS_KIND_NONE)
			for (int j = 0; j < NPATHS; j++)
				if (below(j, i) && p->n[j].kind != EOS_KIND_NONE) {
					free(p->n[j].data);
					memset(&p->n[j], 0, sizeof(p->n[j]));
				}
	v = worst(v, check_parents(a, p));
	v = worst(v, check_renames(a, head));
	*touched = 0;
	for (int i = 0; i < NPATHS; i++)
		if ((a->staged & (1u << i)) && !node_eq(&p->n[i], &R.trees[head].n[i]))
			*touched |= 1u << i;
	return v;
}

static bool
tree_eq(const struct tree *a, const struct tree *b)
{
	for (int i = 0; i < NPATHS; i++)
		if (!node_eq(&a->n[i], &b->n[i]))
			return false;
	return true;
}

/* --- comparing the store with the model ------------------------------------------------------- */

static void
expect_node(uint64_t v, int i, const struct node *n)
{
	const char *path = universe[i].path;
	struct eos_stat s;
	int r = eos_store_stat(pu_st, pu_sbx, v, path, &s, NULL);

	if (n->kind == EOS_KIND_NONE) {
		prop_assert(r == -ENOENT || r == -ENOTDIR, "v%" PRIu64 ": '%s' exists", v, path);
		return;
	}
	prop_assert(r == 0, "v%" PRIu64 ": stat '%s': %d", v, path, r);
	prop_assert(s.kind == n->kind, "v%" PRIu64 ": '%s' kind %d, want %d", v, path, s.kind,
		    n->kind);
	prop_assert((s.attr.mode & 07777) == n->mode, "v%" PRIu64 ": '%s' mode %o, want %o", v,
		    path, s.attr.mode & 07777, n->mode);
	if (n->kind == EOS_KIND_FILE) {
		size_t len = 0;
		cleanup_free char *got = pu_read(v, path, &len);

		prop_assert(got && len == n->len && memcmp(got, n->data, len) == 0,
			    "v%" PRIu64 ": '%s' holds '%.*s', want '%.*s'", v, path,
			    got ? (int)len : 0, got ? got : "", (int)n->len, n->data);
	} else if (n->kind == EOS_KIND_SYMLINK) {
		cleanup_free char *t = NULL;

		r = eos_store_readlink(pu_st, pu_sbx, v, path, &t, NULL);
		prop_assert(r == 0 && strcmp(t, n->data) == 0, "v%" PRIu64 ": link '%s'", v, path);
	}
}

static void
expect_tree(uint64_t v)
{
	uint64_t present = 0;

	for (int i = 0; i < NPATHS; i++) {
		expect_node(v, i, &R.trees[v].n[i]);
		present += R.trees[v].n[i].kind != EOS_KIND_NONE;
	}
	prop_assert(eos_test_tree_count(pu_st, pu_sbx, v) == present,
		    "v%" PRIu64 ": %" PRIu64 " paths, the model has %" PRIu64, v,
		    eos_test_tree_count(pu_st, pu_sbx, v), present);
}

static const char *
verdict_name(enum verdict v)
{
	return v == V_CLEAN ? "clean" : v == V_EITHER ? "either" : "conflict";
}

static void
describe_actor(const struct actor *a, char *out, size_t size)
{
	size_t off = (size_t)snprintf(out, size, "%s base %" PRIu64 " staged", a->owner, a->base);

	for (int i = 0; i < NPATHS && off < size; i++)
		if (a->staged & (1u << i))
			off += (size_t)snprintf(out + off, size - off, " %s%s%s", universe[i].path,
						(a->removed & (1u << i)) ? "(rm)" : "",
						a->origin[i] >= 0 ? "(mv)" : "");
}

/* A rejected or no-op actor: nothing changed (its session is checked by the caller). */
static void
record_unchanged(const struct actor *a, enum verdict v, const struct tree *p, const char *what)
{
	prop_assert(a->res.version == 0, "%s actor got version", what);
	if (a->res.status == EOS_PUBLISH_REJECTED) {
		prop_assert(v != V_CLEAN, "%s: rejected but the model merges it cleanly: %s", what,
			    pu_result_str(&a->res));
		R.rejected++;
	} else {
		prop_assert(v != V_CONFLICT, "%s: no-op but the model sees a conflict", what);
		prop_assert(tree_eq(p, &R.trees[a->res.head]),
			    "%s: no-op but the model changes the tree", what);
		R.no_op++;
	}
}

static void
record_published(const struct actor *a, enum verdict v, struct tree *p, uint32_t touched,
		 const char *what)
{
	uint64_t ver = a->res.version;

	prop_assert(v != V_CONFLICT, "%s: published but the model sees a conflict", what);
	prop_assert(ver == a->res.head + 1 && ver == R.head + 1,
		    "%s: version %" PRIu64 " on head %" PRIu64 " (model head %" PRIu64 ")", what,
		    ver, a->res.head, R.head);
	prop_assert(!tree_eq(p, &R.trees[a->res.head]), "%s: published an unchanged tree", what);
	prop_assert(strcmp(pu_layer(ver).owner, a->owner) == 0, "%s: layer owner '%s'", what,
		    pu_layer(ver).owner);
	ck_assert_uint_lt(ver, MAX_VERSIONS);
	tree_copy(&R.trees[ver], p);
	R.touched[ver] = touched;
	R.head = ver;
	expect_tree(ver);
	R.published++;
	R.merged += a->res.merged > 0;
}

/* The session of a is reset (published) or exactly as it was (otherwise); then removed. */
static void
check_session(const struct actor *a)
{
	struct eos_session_info info;
	struct eos_error err = { 0 };
	int r;

	if (a->kind != A_SESSION)
		return;
	r = eos_store_session_get(pu_st, pu_sbx, a->name, &info, &err);
	ck_ok(r, err);
	if (a->res.status == EOS_PUBLISH_PUBLISHED) {
		prop_assert(info.version == a->res.version && pu_delta_count(a->name) == 0 &&
				    pu_session_lease(a->name) == a->res.version,
			    "session %s not reset", a->name);
	} else if (a->res.status == EOS_PUBLISH_REJECTED) {
		prop_assert(info.version == a->base && pu_delta_count(a->name) == 1 &&
				    pu_session_lease(a->name) == a->base,
			    "rejected session %s changed", a->name);
	}
	r = eos_store_session_remove(pu_st, pu_sbx, a->name, &err);
	ck_ok(r, err);
}

/* Check a's outcome against the model at the head it was checked against. */
static void
account(struct actor *a)
{
	struct tree p = { 0 };
	uint32_t touched = 0;
	enum verdict v;
	char what[512];

	prop_assert(a->r == 0, "commit failed: %s", a->msg);
	prop_assert(a->res.base == a->base || a->kind == A_BLIND, "result base %" PRIu64,
		    a->res.base);
	prop_assert(a->res.head <= R.head, "checked against unknown head %" PRIu64, a->res.head);
	describe_actor(a, what, sizeof(what));
	v = predict(a, a->res.head, &p, &touched);
	if (getenv("EOS_PUBLISH_VERBOSE"))
		fprintf(stderr, "publish-prop: %s: model %s, %s\n", what, verdict_name(v),
			pu_result_str(&a->res));
	if (v == V_EITHER)
		R.either++;
	if (a->res.status == EOS_PUBLISH_PUBLISHED)
		record_published(a, v, &p, touched, what);
	else
		record_unchanged(a, v, &p, what);
	prop_assert(v != V_CONFLICT || a->res.status == EOS_PUBLISH_REJECTED,
		    "%s: the model predicts %s, got %s", what, verdict_name(v),
		    pu_result_str(&a->res));
	check_session(a);
	tree_release(&p);
}

/* --- driving ---------------------------------------------------------------------------------- */

static void *
commit_thread(void *arg)
{
	struct actor *a = arg;
	struct eos_error err = { 0 };

	a->r = eos_publish_commit(a->p, &a->res, &err);
	if (a->r < 0)
		snprintf(a->msg, sizeof(a->msg), "%s", eos_error_message(&err, a->r));
	return NULL;
}

static int
by_head(const void *x, const void *y)
{
	const struct actor *a = *(struct actor *const *)x, *b = *(struct actor *const *)y;

	if (a->res.head != b->res.head)
		return a->res.head < b->res.head ? -1 : 1;
	/* the publish that made head + 1 saw the same head as the others checked against it */
	return (a->res.status == EOS_PUBLISH_PUBLISHED) - (b->res.status == EOS_PUBLISH_PUBLISHED);
}

/* Publish a group of actors: one in this thread, or several from threads at once. */
static void
publish_group(struct actor *g, unsigned n)
{
	pthread_t t[MAX_GROUP];
	struct actor *order[MAX_GROUP];

	if (n == 1 || !R.threads) {
		for (unsigned i = 0; i < n; i++)
			commit_thread(&g[i]);
	} else {
		for (unsigned i = 0; i < n; i++)
			ck_assert_int_eq(pthread_create(&t[i], NULL, commit_thread, &g[i]), 0);
		for (unsigned i = 0; i < n; i++)
			pthread_join(t[i], NULL);
	}
	for (unsigned i = 0; i < n; i++)
		order[i] = &g[i];
	qsort(order, n, sizeof(order[0]), by_head);
	for (unsigned i = 0; i < n; i++)
		account(order[i]);
	for (unsigned i = 0; i < n; i++)
		actor_release(&g[i]);
}

static enum actor_kind
random_kind(void)
{
	unsigned k = rnd_below(10);

	return k < 5 ? A_SESSION : k < 8 ? A_PLAIN : A_BLIND;
}

/* --- final checks ----------------------------------------------------------------------------- */

/* The owner the model expects for a line of a text file (every line's text is unique). */
static const char *
expected_line_owner(const char *line, size_t len)
{
	return R.owners[R.line_owner[line_number(line, len)]];
}

/* Blame covers every line; each line is owned by who wrote its text, a binary file by its
 * writer (one range). */
static void
expect_blame(uint64_t v, int i, const struct node *n)
{
	cleanup_free struct eos_blame_range *r = NULL;
	const char *path = universe[i].path;
	uint64_t lines = 0;
	struct lines ls;
	size_t nr = 0;

	pu_blame(v, path, &r, &nr);
	for (size_t k = 0; k < nr; k++)
		lines += r[k].line_count;
	prop_assert(lines == pu_line_count(n->data, n->len),
		    "v%" PRIu64 " '%s': blame covers %" PRIu64 " lines, the file has %u", v, path,
		    lines, pu_line_count(n->data, n->len));
	if (n->binary) {
		prop_assert(nr == 1 && strcmp(r[0].owner, R.owners[n->writer]) == 0,
			    "v%" PRIu64 " binary '%s': %zu ranges, owner '%s', want '%s'", v, path,
			    nr, nr ? r[0].owner : "", R.owners[n->writer]);
		return;
	}
	split_lines(n, &ls);
	for (unsigned l = 0; l < ls.n; l++) {
		const char *want = expected_line_owner(ls.p[l], ls.len[l]);
		const char *got = pu_line_owner(r, nr, l + 1);

		prop_assert(strcmp(got, want) == 0,
			    "v%" PRIu64 " '%s' line %u ('%.*s') owned by '%s', want '%s'", v, path,
			    l + 1, (int)ls.len[l] - 1, ls.p[l], got, want);
	}
}

static void
expect_blame_version(uint64_t v)
{
	for (int i = 0; i < NPATHS; i++)
		if (R.trees[v].n[i].kind == EOS_KIND_FILE)
			expect_blame(v, i, &R.trees[v].n[i]);
}

/* No entry record of any sandbox is newer than the head (the only sandbox is the current). */
static void
expect_no_records_above_head(void)
{
	EOS_CLEANUP(eos_kv_iter_freep) struct eos_kv_iter *it = NULL;
	int r = eos_kv_iter_new(pu_st->kv, EOS_CF_ENTRIES, NULL, NULL, 0, 0, &it);

	ck_assert_int_eq(r, 0);
	for (eos_kv_iter_seek_first(it); eos_kv_iter_valid(it); eos_kv_iter_next(it)) {
		struct eos_entry_key_parts parts;
		size_t kn;
		const uint8_t *k = eos_kv_iter_key(it, &kn);

		ck_assert_int_eq(eos_entry_key_decode(k, kn, &parts), 0);
		prop_assert(parts.version <= R.head,
			    "an entry record at version %" PRIu64 " above the head %" PRIu64,
			    parts.version, R.head);
	}
}

static void
final_checks(void)
{
	cleanup_free struct eos_layer_info *ls = NULL;
	struct eos_error err = { 0 };
	size_t n = 0;
	int r = eos_store_layer_list(pu_st, pu_sbx, &ls, &n, &err);

	ck_ok(r, err);
	prop_assert(n == R.head && pu_head() == R.head,
		    "%zu layers, head %" PRIu64 ", the model has %" PRIu64, n, pu_head(), R.head);
	for (size_t i = 0; i < n; i++) {
		prop_assert(ls[i].version == i + 1, "layer %zu is version %" PRIu64, i,
			    ls[i].version);
		expect_tree(ls[i].version);
		expect_blame_version(ls[i].version);
	}
	expect_no_records_above_head();
	pu_fsck_clean();
}

static unsigned
env_unsigned(const char *name, unsigned def)
{
	const char *s = getenv(name);
	char *end;
	unsigned long v;

	if (!s || !*s)
		return def;
	v = strtoul(s, &end, 10);
	ck_assert_msg(*end == '\0' && v < 1000000, "bad %s='%s'", name, s);
	return (unsigned)v;
}

static void
run_seed(uint64_t seed, unsigned actors)
{
	memset(&R, 0, sizeof(R));
	R.seed = seed;
	R.rng = seed * 0x9E3779B97F4A7C15ULL + 0x1234567;
	R.actors = actors;
	R.threads = env_unsigned("EOS_PUBLISH_THREADS", 1) != 0;
	R.trees = calloc(MAX_VERSIONS, sizeof(*R.trees));
	R.touched = calloc(MAX_VERSIONS, sizeof(*R.touched));
	R.owners = calloc(MAX_OWNERS, sizeof(*R.owners));
	R.nowners = 1;
	ck_assert(R.trees && R.touched && R.owners);
	snprintf(R.owners[0], sizeof(R.owners[0]), "%s", EOS_OWNER_ORIGINAL);
	fprintf(stderr, "publish-prop: seed %" PRIu64 ", %u actors\n", seed, actors);
	make_base();
	for (unsigned done = 0; done < actors;) {
		struct actor g[MAX_GROUP];
		unsigned n = chance(30) ? 2 + rnd_below(MAX_GROUP - 1) : 1;

		memset(g, 0, sizeof(g));
		for (unsigned i = 0; i < n; i++) {
			g[i].kind = random_kind();
			actor_begin(&g[i]);
		}
		publish_group(g, n);
		done += n;
	}
	final_checks();
	fprintf(stderr,
		"publish-prop: seed %" PRIu64 ": %u published (%u merged), %u rejected, %u no-op, "
		"%u adjacent edits\n",
		seed, R.published, R.merged, R.rejected, R.no_op, R.either);
	for (uint64_t v = 0; v < MAX_VERSIONS; v++)
		tree_release(&R.trees[v]);
	free(R.trees);
	free(R.touched);
	free(R.owners);
	free(R.line_owner);
}

START_TEST(test_random_publishes_match_model)
{
	unsigned actors = env_unsigned("EOS_PUBLISH_ACTORS", 40);
	unsigned seeds = env_unsigned("EOS_PUBLISH_SEEDS", 8);
	const char *one = getenv("EOS_PUBLISH_SEED");

	if (actors > MAX_VERSIONS - 2)
		actors = MAX_VERSIONS - 2;
	if (one && *one) {
		run_seed(strtoull(one, NULL, 10), actors);
		return;
	}
	for (unsigned s = 1; s <= seeds; s++) {
		if (s > 1) {
			/* a fresh store: the final checks scan every entry record */
			pu_teardown();
			pu_setup();
		}
		run_seed(s, actors);
	}
}
END_TEST

static Suite *
prop_suite(void)
{
	Suite *s = suite_create("publish-prop");
	TCase *tc = tcase_create("model");

	tcase_add_checked_fixture(tc, pu_setup, pu_teardown);
	tcase_add_unchecked_fixture(tc, pu_suite_setup, pu_suite_teardown);
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_random_publishes_match_model);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return eos_test_run(prop_suite());
}
