/* SPDX-License-Identifier: MIT */
/*
 * fs-model: generate the next operation from the seeded random stream and the model's tree:
 * the weighted choice of an operation, its paths (mostly existing entries, sometimes new,
 * colliding or odd names), its data and its arguments, and its one-line description.
 */
#include <assert.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/cleanup.h"

#include "tests/integration/fs-model.h"

struct op_info {
	const char *name;
	unsigned weight;
};

static const struct op_info op_table[OP_COUNT] = {
	[OP_CREATE] = { "create", 10 },
	[OP_WRITE] = { "write", 9 },
	[OP_APPEND] = { "append", 5 },
	[OP_TRUNCATE] = { "truncate", 5 },
	[OP_OTRUNC] = { "otrunc", 4 },
	[OP_READ] = { "read", 8 },
	[OP_UNLINK] = { "unlink", 7 },
	[OP_MKDIR] = { "mkdir", 5 },
	[OP_RMDIR] = { "rmdir", 4 },
	[OP_RENAME] = { "rename", 12 },
	[OP_SYMLINK] = { "symlink", 3 },
	[OP_LINK] = { "link", 4 },
	[OP_CHMOD] = { "chmod", 3 },
	[OP_UTIMENS] = { "utimens", 3 },
	[OP_SETXATTR] = { "setxattr", 3 },
	[OP_RMXATTR] = { "removexattr", 2 },
	[OP_GETXATTR] = { "getxattr", 1 },
	[OP_OPEN_UNLINK] = { "open-unlink", 3 },
	[OP_MKFIFO] = { "mkfifo", 1 },
	[OP_STAT] = { "stat", 3 },
	[OP_MMAP] = { "mmap-write", 2 },
	[OP_COPY_RANGE] = { "copy_file_range", 2 },
	[OP_FALLOCATE] = { "fallocate", 2 },
	[OP_FD] = { "fd", 6 },
	[OP_READDIR] = { "readdir-mutate", 3 },
};

const char *
fsm_op_name(enum op_kind kind)
{
	return op_table[kind].name;
}

/* ---- random numbers ---- */

static uint64_t
splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void
fsm_rng_seed(struct rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

static uint64_t
rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t
rng_next(struct rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

/* Uniform enough in [0, n); 0 when n is 0. */
static uint64_t
below(struct ctx *c, uint64_t n)
{
	return n ? rng_next(&c->rng) % n : 0;
}

static bool
pct(struct ctx *c, unsigned p)
{
	return below(c, 100) < p;
}

/* ---- the model's entries, from which operations pick their paths ---- */

static void
entries_clear(struct entries *es)
{
	for (size_t i = 0; i < es->n; i++)
		free(es->v[i].path);
	es->n = 0;
}

static void
entries_add(struct entries *es, char *path, const struct stat *st, int depth)
{
	if (es->n == es->cap) {
		es->cap = es->cap ? 2 * es->cap : 256;
		es->v = fsm_realloc(es->v, es->cap * sizeof(*es->v));
	}
	es->v[es->n++] = (struct entry){ path, fsm_kind_of(st->st_mode), depth };
}

static void
walk_model(struct entries *es, int dfd, const char *rel, int depth)
{
	struct names n;
	struct stat st;

	if (fsm_list_names(dfd, &n) < 0) {
		fprintf(stderr, "fs-model: cannot list model directory '%s': %m\n", rel);
		exit(2);
	}
	for (size_t i = 0; i < n.n; i++) {
		char *path = fsm_join(rel, n.v[i].s);
		int sub;

		if (fstatat(dfd, n.v[i].s, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			free(path);
			continue;
		}
		entries_add(es, path, &st, depth);
		if (!S_ISDIR(st.st_mode))
			continue;
		sub = openat(dfd, n.v[i].s, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			continue;
		walk_model(es, sub, path, depth + 1);
		close(sub);
	}
	fsm_names_clear(&n);
}

void
fsm_refresh_entries(struct ctx *c)
{
	struct stat st;

	entries_clear(&c->es);
	if (fstat(c->root[SIDE_MODEL], &st) < 0) {
		fprintf(stderr, "fs-model: cannot stat the model root: %m\n");
		exit(2);
	}
	entries_add(&c->es, fsm_strdup(""), &st, 0);
	walk_model(&c->es, c->root[SIDE_MODEL], "", 1);
}

/* A random entry of one of the kinds in mask (the root only when with_root), or NULL. */
static const struct entry *
pick_entry(struct ctx *c, unsigned mask, bool with_root, int max_depth)
{
	size_t count = 0, k;

	for (size_t i = with_root ? 0 : 1; i < c->es.n; i++)
		if ((c->es.v[i].kind & mask) && c->es.v[i].depth <= max_depth)
			count++;
	if (count == 0)
		return NULL;
	k = below(c, count);
	for (size_t i = with_root ? 0 : 1; i < c->es.n; i++)
		if ((c->es.v[i].kind & mask) && c->es.v[i].depth <= max_depth && k-- == 0)
			return &c->es.v[i];
	return NULL;
}

/* The model's view of path (following symlinks): its size, 0 when missing. */
static uint64_t
model_size(struct ctx *c, const char *path)
{
	struct stat st;

	if (fstatat(c->root[SIDE_MODEL], path, &st, 0) < 0)
		return 0;
	return (uint64_t)st.st_size;
}

/* O_NONBLOCK when path is a fifo in the model: opening it must not wait for a peer. */
static int
fifo_flag(struct ctx *c, const char *path)
{
	struct stat st;

	if (fstatat(c->root[SIDE_MODEL], path, &st, 0) == 0 && S_ISFIFO(st.st_mode))
		return O_NONBLOCK;
	return 0;
}

/* ---- generating paths ---- */

static const char *
special_name(struct ctx *c, bool allow_dots)
{
	static char n255[256], n256[257];
	static const char *const names[] = {
		".wh.a", ".wh..wh..opq", "a b",	 "\xc3\xbc", "x.c", ".hidden",
		"-",	 "n255",	 "n256", ".",	     ".."
	};
	size_t count = EOS_ARRAY_SIZE(names) - (allow_dots ? 0 : 2);
	const char *s = names[below(c, count)];

	if (!n255[0]) {
		memset(n255, 'n', 255);
		memset(n256, 'n', 256);
	}
	if (!strcmp(s, "n255"))
		return n255;
	if (!strcmp(s, "n256"))
		return n256;
	return s;
}

/* A short name from a small alphabet, so that names collide; sometimes an odd one. */
static void
random_name(struct ctx *c, bool allow_dots, char *out, size_t size)
{
	static const char alphabet[] = "abcdef";
	size_t len;

	if (pct(c, 8)) {
		snprintf(out, size, "%s", special_name(c, allow_dots));
		return;
	}
	len = 1 + below(c, 2);
	for (size_t i = 0; i < len; i++)
		out[i] = alphabet[below(c, sizeof(alphabet) - 1)];
	out[len] = '\0';
}

/* out = dir/name (name alone under the root), cut at PATH_LEN - 1 bytes. */
static void
set_path(char *out, const char *dir, const char *name)
{
	size_t a = strlen(dir), b = strlen(name), used = 0;

	if (a) {
		used = EOS_MIN(a, (size_t)PATH_LEN - 2);
		memmove(out, dir, used);
		out[used++] = '/';
	}
	b = EOS_MIN(b, (size_t)PATH_LEN - 1 - used);
	memmove(out + used, name, b);
	out[used + b] = '\0';
}

/* A new name in an existing directory (it may exist already); sometimes below a file or a
 * missing directory, for ENOTDIR and ENOENT. */
static void
gen_new(struct ctx *c, char *out)
{
	const struct entry *parent;
	char name[300];
	unsigned r = (unsigned)below(c, 100);

	if (r < 3)
		parent = pick_entry(c, K_REG | K_LNK | K_FIFO, false, MAX_DEPTH);
	else
		parent = pick_entry(c, K_DIR, true, MAX_DEPTH - 1);
	if (!parent)
		parent = &c->es.v[0];
	random_name(c, parent->path[0] != '\0', name, sizeof(name));
	if (r >= 3 && r < 5) {
		char missing[PATH_LEN];

		set_path(missing, parent->path, "zz");
		set_path(out, missing, name);
		return;
	}
	set_path(out, parent->path, name);
}

/* Mostly an existing path, sometimes a new one or an odd one. */
static void
gen_any(struct ctx *c, char *out)
{
	const struct entry *e;
	unsigned r = (unsigned)below(c, 100);

	if (r < 78 && (e = pick_entry(c, K_ANY, false, INT32_MAX))) {
		snprintf(out, PATH_LEN, "%s", e->path);
	} else if (r < 97) {
		gen_new(c, out);
	} else if (r < 99 && (e = pick_entry(c, K_REG, false, INT32_MAX))) {
		set_path(out, e->path, "x");
	} else {
		out[0] = '\0';
	}
}

/* Mostly an existing entry of the kinds in mask, else anything. */
static void
gen_existing(struct ctx *c, unsigned mask, char *out)
{
	const struct entry *e;

	if (pct(c, 90) && (e = pick_entry(c, mask, false, INT32_MAX))) {
		snprintf(out, PATH_LEN, "%s", e->path);
		return;
	}
	gen_any(c, out);
}

/* A relative symlink target that never leaves the tree: no "..", never absolute. */
static void
gen_target(struct ctx *c, const char *link, char *out)
{
	const char *slash = strrchr(link, '/');
	size_t plen = slash ? (size_t)(slash - link) : 0;
	unsigned r = (unsigned)below(c, 100);
	char a[300], b[300];

	if (r < 45) {
		for (int tries = 0; tries < 8; tries++) {
			const struct entry *e = pick_entry(c, K_ANY, false, INT32_MAX);

			if (!e)
				break;
			if (plen == 0 || (!strncmp(e->path, link, plen) && e->path[plen] == '/')) {
				snprintf(out, PATH_LEN, "%s", e->path + (plen ? plen + 1 : 0));
				return;
			}
		}
	}
	random_name(c, false, a, sizeof(a));
	if (r < 75) {
		snprintf(out, PATH_LEN, "%s", a);
	} else if (r < 90) {
		random_name(c, false, b, sizeof(b));
		snprintf(out, PATH_LEN, "%s/%s", a, b);
	} else if (r < 97) {
		snprintf(out, PATH_LEN, "%s", slash ? slash + 1 : link);
	} else {
		snprintf(out, PATH_LEN, ".");
	}
}

/* ---- generating data ---- */

static uint64_t
gen_size(struct ctx *c)
{
	unsigned r = (unsigned)below(c, 100);

	if (r < 15)
		return 0;
	if (r < 65)
		return below(c, 4097);
	return below(c, 200 * 1024 + 1);
}

/* len bytes: random, text-like (compressible) or zeros. */
static unsigned char *
gen_data(struct ctx *c, uint64_t len)
{
	unsigned char *p = fsm_realloc(NULL, len);
	unsigned r = (unsigned)below(c, 100);
	uint64_t x = rng_next(&c->rng);

	if (r < 10) {
		memset(p, 0, len);
	} else if (r < 40) {
		for (uint64_t i = 0; i < len; i++)
			p[i] = (unsigned char)("abcdefgh ijklmnop\n"[(i + x) % 18]);
	} else {
		for (uint64_t i = 0; i < len; i += 8) {
			uint64_t v = rng_next(&c->rng);

			memcpy(p + i, &v, len - i < 8 ? len - i : 8);
		}
	}
	return p;
}

static mode_t
gen_file_mode(struct ctx *c)
{
	static const mode_t modes[] = { 0644, 0600, 0755, 0444, 0640, 0666, 0700 };

	return modes[below(c, EOS_ARRAY_SIZE(modes))];
}

static mode_t
gen_umask(struct ctx *c)
{
	static const mode_t masks[] = { 022, 0, 077, 027, 002 };

	return masks[below(c, EOS_ARRAY_SIZE(masks))];
}

/* ---- describing an operation ---- */

static void PRINTF_LIKE(2, 3) desc_add(struct ctx *c, const char *fmt, ...)
{
	size_t used = strlen(c->desc);
	va_list ap;

	if (used >= sizeof(c->desc) - 1)
		return;
	va_start(ap, fmt);
	vsnprintf(c->desc + used, sizeof(c->desc) - used, fmt, ap);
	va_end(ap);
}

static const char *
oflags_str(int f, char *buf, size_t size)
{
	static const struct {
		int flag;
		const char *name;
	} names[] = { { O_CREAT, "O_CREAT" },
		      { O_EXCL, "O_EXCL" },
		      { O_TRUNC, "O_TRUNC" },
		      { O_APPEND, "O_APPEND" },
		      { O_NONBLOCK, "O_NONBLOCK" } };
	int acc = f & O_ACCMODE;

	snprintf(buf, size, "%s",
		 acc == O_RDONLY   ? "O_RDONLY"
		 : acc == O_WRONLY ? "O_WRONLY"
				   : "O_RDWR");
	for (size_t i = 0; i < EOS_ARRAY_SIZE(names); i++)
		if (f & names[i].flag)
			snprintf(buf + strlen(buf), size - strlen(buf), "|%s", names[i].name);
	return buf;
}

static const char *const fd_action_name[] = {
	[FD_OPEN] = "open",	      [FD_PWRITE] = "pwrite", [FD_PREAD] = "pread",
	[FD_FTRUNCATE] = "ftruncate", [FD_FSTAT] = "fstat",   [FD_CLOSE] = "close",
};

/* The common description: op name, paths, and the fields that the op uses. */
static void
describe(struct ctx *c)
{
	const struct op *op = &c->op;
	char fl[128];

	snprintf(c->desc, sizeof(c->desc), "%s '%s'", op_table[op->kind].name, op->path);
	if (op->kind == OP_FD)
		desc_add(c, " slot=%d %s", op->slot, fd_action_name[op->variant]);
	if (op->kind == OP_READDIR)
		desc_add(c, " creating '%s' after %" PRIu64 " entries", op->name3, op->len);
	if (op->path2[0] || op->path2_is_path)
		desc_add(c, " %s '%s'", op->kind == OP_SYMLINK ? "->" : "and", op->path2);
	if (op->oflags)
		desc_add(c, " open=%s", oflags_str(op->oflags, fl, sizeof(fl)));
	if (op->mode)
		desc_add(c, " mode=0%o", (unsigned)op->mode);
	if (op->kind == OP_CREATE || op->kind == OP_MKDIR || op->kind == OP_MKFIFO)
		desc_add(c, " umask=0%03o", (unsigned)op->umask);
	if (op->off || op->off2 || op->kind == OP_TRUNCATE)
		desc_add(c, " off=%" PRIu64 " off2=%" PRIu64, op->off, op->off2);
	if (op->len || op->buf)
		desc_add(c, " len=%" PRIu64, op->len);
	if (op->arg)
		desc_add(c, " flags=0x%x", (unsigned)op->arg);
	if (op->variant && op->kind != OP_FD)
		desc_add(c, " variant=%d", op->variant);
}

/* ---- generating operations ---- */

static void
gen_write_like(struct ctx *c, struct op *op)
{
	uint64_t size;

	gen_existing(c, K_REG, op->path);
	size = model_size(c, op->path);
	op->oflags2 = fifo_flag(c, op->path);
	if (op->kind == OP_WRITE) {
		op->off = pct(c, 10) ? size : below(c, size + 128 * 1024);
		op->len = pct(c, 5) ? 0 : 1 + below(c, 32 * 1024);
		op->variant = pct(c, 20);
	} else if (op->kind == OP_APPEND) {
		op->len = 1 + below(c, 16 * 1024);
		op->variant = pct(c, 25);
	} else if (op->kind == OP_OTRUNC) {
		op->len = gen_size(c);
		op->variant = pct(c, 20);
	} else {
		op->off = size ? below(c, size) & ~(uint64_t)4095 : 0;
		op->mtime_unsure = true; /* tmpfs does not update mtime on mmap writes */
		op->len = 1 + below(c, 16 * 1024);
	}
	op->buf = gen_data(c, op->len);
}

static void
gen_create(struct ctx *c, struct op *op)
{
	if (pct(c, 70))
		gen_new(c, op->path);
	else
		gen_any(c, op->path);
	op->oflags = O_WRONLY | O_CREAT | (pct(c, 25) ? O_EXCL : O_TRUNC) | fifo_flag(c, op->path);
	op->mode = gen_file_mode(c);
	op->umask = gen_umask(c);
	op->len = gen_size(c);
	op->buf = gen_data(c, op->len);
}

static void
gen_truncate(struct ctx *c, struct op *op)
{
	uint64_t size;
	unsigned r = (unsigned)below(c, 100);

	gen_existing(c, K_REG, op->path);
	size = model_size(c, op->path);
	if (r < 15)
		op->off = 0;
	else if (r < 40)
		op->off = size / 2;
	else if (r < 70)
		op->off = size + below(c, 128 * 1024);
	else
		op->off = below(c, 256 * 1024);
	op->variant = pct(c, 50);
	op->oflags2 = fifo_flag(c, op->path);
	/* truncate(2) to the same size: ext4 updates mtime, tmpfs does not (POSIX: no need). */
	op->mtime_unsure = op->variant == 0 && op->off == size;
}

static void
gen_read(struct ctx *c, struct op *op)
{
	gen_existing(c, K_REG, op->path);
	op->oflags2 = fifo_flag(c, op->path);
	op->off = below(c, model_size(c, op->path) + 4096);
	op->len = 1 + below(c, 64 * 1024);
	op->variant = pct(c, 20);
}

static void
gen_rename(struct ctx *c, struct op *op)
{
	unsigned r = (unsigned)below(c, 100);

	if (pct(c, 35))
		gen_existing(c, K_DIR, op->path);
	else
		gen_any(c, op->path);
	if (pct(c, 50))
		gen_new(c, op->path2);
	else
		gen_any(c, op->path2);
	op->path2_is_path = true;
	op->arg = r < 70 ? 0 : r < 85 ? RENAME_NOREPLACE : RENAME_EXCHANGE;
}

static void
gen_link(struct ctx *c, struct op *op)
{
	gen_existing(c, K_REG, op->path);
	if (pct(c, 75))
		gen_new(c, op->path2);
	else
		gen_any(c, op->path2);
	op->path2_is_path = true;
}

static void
gen_chmod(struct ctx *c, struct op *op)
{
	struct stat st;
	bool dir;

	gen_any(c, op->path);
	dir = fstatat(c->root[SIDE_MODEL], op->path, &st, 0) == 0 && S_ISDIR(st.st_mode);
	/* Keep the tree readable for an unprivileged checker (u+r on files, u+rx on dirs),
	 * and mostly writable so that it does not fill up with what cannot be removed. */
	op->mode = (mode_t)below(c, 01000) | (dir ? 0500 : 0400) | (pct(c, 85) ? 0200 : 0);
	if (dir && pct(c, 10))
		op->mode |= S_ISVTX;
}

static void
gen_utimens(struct ctx *c, struct op *op)
{
	unsigned r = (unsigned)below(c, 100);

	gen_any(c, op->path);
	op->arg = pct(c, 20) ? AT_SYMLINK_NOFOLLOW : 0;
	op->times[0].tv_sec = 1000000000 + (time_t)below(c, 700000000);
	op->times[0].tv_nsec = (long)below(c, 1000000000);
	if (pct(c, 30))
		op->times[0].tv_nsec = UTIME_OMIT;
	op->times[1].tv_sec = 1000000000 + (time_t)below(c, 700000000);
	op->times[1].tv_nsec = (long)below(c, 1000000000);
	if (r < 10)
		op->times[1].tv_nsec = UTIME_NOW;
	else if (r < 15)
		op->times[1].tv_nsec = UTIME_OMIT;
	op->sets_mtime = r >= 15;
}

static void
gen_xattr(struct ctx *c, struct op *op)
{
	static const char *const xnames[] = { "user.a", "user.b", "user.c", "user.long.name.x" };
	unsigned r = (unsigned)below(c, 100);

	gen_existing(c, K_REG | K_DIR, op->path);
	snprintf(op->path2, PATH_LEN, "%s", xnames[below(c, EOS_ARRAY_SIZE(xnames))]);
	if (op->kind != OP_SETXATTR)
		return;
	op->arg = r < 70 ? 0 : r < 85 ? XATTR_CREATE : XATTR_REPLACE;
	op->len = below(c, 65);
	op->buf = gen_data(c, op->len);
}

static void
gen_open_unlink(struct ctx *c, struct op *op)
{
	gen_existing(c, K_REG, op->path);
	op->oflags2 = fifo_flag(c, op->path);
	op->variant = pct(c, 35);
	if (op->variant) {
		gen_existing(c, K_REG, op->path2);
		op->path2_is_path = true;
	}
	op->off = below(c, model_size(c, op->path) + 8192);
	op->len = 1 + below(c, 16 * 1024);
	op->buf = gen_data(c, op->len);
}

static void
gen_copy_range(struct ctx *c, struct op *op)
{
	gen_existing(c, K_REG, op->path);
	gen_existing(c, K_REG, op->path2);
	op->path2_is_path = true;
	op->oflags = fifo_flag(c, op->path);
	op->oflags2 = fifo_flag(c, op->path2);
	op->off = below(c, model_size(c, op->path) + 4096);
	op->off2 = below(c, model_size(c, op->path2) + 64 * 1024);
	op->len = below(c, 64 * 1024);
}

static void
gen_fallocate(struct ctx *c, struct op *op)
{
	static const int modes[] = { 0, FALLOC_FL_KEEP_SIZE,
				     FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE };

	gen_existing(c, K_REG, op->path);
	op->oflags2 = fifo_flag(c, op->path);
	op->arg = modes[below(c, EOS_ARRAY_SIZE(modes))];
	op->off = below(c, model_size(c, op->path) + 64 * 1024);
	op->len = 1 + below(c, 128 * 1024);
	op->mtime_unsure = true; /* ext4 and tmpfs differ on mtime for some modes */
}

static void
gen_mknode(struct ctx *c, struct op *op)
{
	if (pct(c, 85))
		gen_new(c, op->path);
	else
		gen_any(c, op->path);
	op->umask = gen_umask(c);
	if (op->kind == OP_MKDIR) {
		static const mode_t modes[] = { 0755, 0700, 0750, 0775, 0777 };

		op->mode = modes[below(c, EOS_ARRAY_SIZE(modes))];
	} else {
		op->mode = gen_file_mode(c);
	}
}

/* An empty slot opens a file; an open one is written, read, truncated, stat-ed or closed. */
static void
gen_fd(struct ctx *c, struct op *op)
{
	static const int modes[] = { O_RDWR, O_RDWR, O_RDONLY, O_WRONLY | O_APPEND,
				     O_RDWR | O_TRUNC };
	struct stat st;
	uint64_t size;
	unsigned r = (unsigned)below(c, 100);
	int fd;

	op->slot = (int)below(c, FD_SLOTS);
	fd = c->fds[SIDE_MODEL][op->slot];
	if (fd < 0) {
		gen_existing(c, K_REG, op->path);
		snprintf(c->fd_path[op->slot], PATH_LEN, "%s", op->path);
		op->oflags = modes[below(c, EOS_ARRAY_SIZE(modes))] | fifo_flag(c, op->path);
		op->variant = FD_OPEN;
		return;
	}
	snprintf(op->path, PATH_LEN, "%s", c->fd_path[op->slot]);
	size = fstat(fd, &st) == 0 ? (uint64_t)st.st_size : 0;
	op->variant = r < 30   ? FD_PWRITE
		      : r < 55 ? FD_PREAD
		      : r < 65 ? FD_FTRUNCATE
		      : r < 75 ? FD_FSTAT
			       : FD_CLOSE;
	if (op->variant == FD_PWRITE) {
		op->off = below(c, size + 64 * 1024);
		op->len = 1 + below(c, 16 * 1024);
		op->buf = gen_data(c, op->len);
	} else if (op->variant == FD_PREAD) {
		op->off = below(c, size + 4096);
		op->len = 1 + below(c, 64 * 1024);
	} else if (op->variant == FD_FTRUNCATE) {
		op->off = below(c, 2 * size + 4096);
	}
}

/* path is an entry directly in directory dir (plen bytes; "" is the root). */
static bool
is_child(const char *dir, size_t plen, const char *path)
{
	if (plen && (strncmp(path, dir, plen) || path[plen] != '/'))
		return false;
	return !strchr(path + (plen ? plen + 1 : 0), '/');
}

/* A directory, the name of one of its entries to remove (or a missing one), a name to create
 * and after how many listed entries to do it. */
static void
gen_readdir(struct ctx *c, struct op *op)
{
	const struct entry *dir = pct(c, 90) ? pick_entry(c, K_DIR, true, INT32_MAX) : NULL;
	size_t plen, count = 0, k;

	if (!dir)
		dir = &c->es.v[0];
	snprintf(op->path, PATH_LEN, "%s", dir->path[0] ? dir->path : ".");
	plen = strlen(dir->path);
	for (size_t i = 1; i < c->es.n; i++)
		count += is_child(dir->path, plen, c->es.v[i].path);
	op->len = below(c, count + 2);
	random_name(c, false, op->name3, sizeof(op->name3));
	random_name(c, false, op->path2, PATH_LEN);
	k = below(c, count + 1);
	for (size_t i = 1; i < c->es.n && pct(c, 80); i++) {
		if (is_child(dir->path, plen, c->es.v[i].path) && k-- == 0) {
			const char *slash = strrchr(c->es.v[i].path, '/');

			snprintf(op->path2, PATH_LEN, "%s", slash ? slash + 1 : c->es.v[i].path);
			break;
		}
	}
}

static enum op_kind
pick_kind(struct ctx *c)
{
	unsigned w[OP_COUNT], total = 0;
	uint64_t k;

	for (int i = 0; i < OP_COUNT; i++) {
		w[i] = op_table[i].weight;
		if (!c->have_xattr && (i == OP_SETXATTR || i == OP_RMXATTR || i == OP_GETXATTR))
			w[i] = 0;
		if (c->es.n > BIG_TREE && (i == OP_UNLINK || i == OP_RMDIR))
			w[i] *= 3;
		total += w[i];
	}
	k = below(c, total);
	for (int i = 0; i < OP_COUNT; i++) {
		if (k < w[i])
			return (enum op_kind)i;
		k -= w[i];
	}
	return OP_STAT;
}

void
fsm_gen_op(struct ctx *c)
{
	struct op *op = &c->op;

	free(op->buf);
	memset(op, 0, sizeof(*op));
	op->kind = pick_kind(c);
	switch (op->kind) {
	case OP_CREATE:
		gen_create(c, op);
		break;
	case OP_WRITE:
	case OP_APPEND:
	case OP_OTRUNC:
	case OP_MMAP:
		gen_write_like(c, op);
		break;
	case OP_TRUNCATE:
		gen_truncate(c, op);
		break;
	case OP_READ:
		gen_read(c, op);
		break;
	case OP_UNLINK:
		gen_existing(c, K_REG | K_LNK | K_FIFO, op->path);
		break;
	case OP_RMDIR:
		gen_existing(c, K_DIR, op->path);
		break;
	case OP_MKDIR:
	case OP_MKFIFO:
		gen_mknode(c, op);
		break;
	case OP_RENAME:
		gen_rename(c, op);
		break;
	case OP_SYMLINK:
		if (pct(c, 85))
			gen_new(c, op->path);
		else
			gen_any(c, op->path);
		gen_target(c, op->path, op->path2);
		break;
	case OP_LINK:
		gen_link(c, op);
		break;
	case OP_CHMOD:
		gen_chmod(c, op);
		break;
	case OP_UTIMENS:
		gen_utimens(c, op);
		break;
	case OP_SETXATTR:
	case OP_RMXATTR:
	case OP_GETXATTR:
		gen_xattr(c, op);
		break;
	case OP_OPEN_UNLINK:
		gen_open_unlink(c, op);
		break;
	case OP_STAT:
		gen_any(c, op->path);
		op->arg = pct(c, 50) ? AT_SYMLINK_NOFOLLOW : 0;
		break;
	case OP_COPY_RANGE:
		gen_copy_range(c, op);
		break;
	case OP_FALLOCATE:
		gen_fallocate(c, op);
		break;
	case OP_FD:
		gen_fd(c, op);
		break;
	case OP_READDIR:
		gen_readdir(c, op);
		break;
	case OP_COUNT:
		assert(false);
		break;
	}
	describe(c);
}
