/* SPDX-License-Identifier: MIT */
/*
 * fs-model: a randomized model checker for a mounted session view.
 *
 *	fs-model [--seed N] [--ops N] [--batch N] [--no-owner] [--drop-caches] [-v] VIEW MODEL
 *	fs-model --compare-only [--no-owner] VIEW MODEL
 *
 * VIEW (the eos view) and MODEL (a plain directory) start as identical trees. A seeded random
 * sequence of operations (fs-model-gen.c) is applied to both with the same arguments, the
 * model first (fs-model-run.c). Every step of every operation must give the same result on
 * both sides: the same value or errno, the same bytes read back. After each batch and at the
 * end the trees are compared completely (fs-model-tree.c): names, types, permission bits,
 * owners, sizes, contents, link counts, symlink targets, user.* xattrs, hard links, mtimes an
 * operation set explicitly, whether an mtime moved since the last comparison, and that view
 * inode numbers stay stable.
 *
 * The operation sequence depends only on the seed and on the model tree, so a failure replays
 * with the printed command on fresh copies of the same starting trees. Paths never climb out
 * of the trees: generated symlink targets are relative and contain no "..".
 * This file: options, the driver loop, the explicit-mtime bookkeeping and the reports.
 * Exit status: 0 the trees stayed equal, 1 a mismatch (or a hang or crash), 2 usage or setup.
 */
#include "tests/integration/fs-model.h"

#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/cleanup.h"

/* Written before each operation, printed by the handler of a fatal signal or the watchdog. */
static char crash_msg[DESC_LEN + 1024];
static size_t crash_len;

/* ---- small utilities ---- */

static const char *
fmt_result(long r, char *buf, size_t size)
{
	const char *name;

	if (r >= 0) {
		snprintf(buf, size, "%ld", r);
		return buf;
	}
	name = strerrorname_np((int)-r);
	snprintf(buf, size, "-%s (%s)", name ? name : "?", strerror((int)-r));
	return buf;
}

static bool
parse_u64(const char *s, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-')
		return false;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end)
		return false;
	*ret = v;
	return true;
}

/* ---- sets of model inodes: explicitly set mtimes, uncertain mtime updates ---- */

bool
fsm_set_has(const struct ino_set *set, ino_t ino)
{
	for (size_t i = 0; i < set->n; i++)
		if (set->v[i] == ino)
			return true;
	return false;
}

static void
set_add(struct ino_set *set, ino_t ino)
{
	if (fsm_set_has(set, ino))
		return;
	if (set->n == set->cap) {
		set->cap = set->cap ? 2 * set->cap : 16;
		set->v = fsm_realloc(set->v, set->cap * sizeof(*set->v));
	}
	set->v[set->n++] = ino;
}

static void
mt_forget(struct ctx *c, ino_t ino)
{
	for (size_t i = 0; i < c->mt.n; i++)
		if (c->mt.v[i] == ino)
			c->mt.v[i] = c->mt.v[--c->mt.n];
}

/* Forget every inode that an operation on path may change: the path (followed or not) and
 * its parent. Through a symlink an O_CREAT can create elsewhere: then forget everything. */
static void
mt_forget_path(struct ctx *c, const char *path)
{
	int root = c->root[SIDE_MODEL];
	const char *slash = strrchr(path, '/');
	char parent[PATH_LEN];
	struct stat st;

	if (fstatat(root, path, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISLNK(st.st_mode))
			c->mt.n = 0;
		mt_forget(c, st.st_ino);
	}
	if (fstatat(root, path, &st, 0) == 0)
		mt_forget(c, st.st_ino);
	snprintf(parent, sizeof(parent), "%.*s", slash ? (int)(slash - path) : 1,
		 slash ? path : ".");
	if (fstatat(root, parent, &st, 0) == 0)
		mt_forget(c, st.st_ino);
}

static void
mt_forget_op(struct ctx *c)
{
	int fd = c->op.kind == OP_FD ? c->fds[SIDE_MODEL][c->op.slot] : -1;
	struct stat st;

	mt_forget_path(c, c->op.path);
	if (c->op.path2_is_path)
		mt_forget_path(c, c->op.path2);
	if (fd >= 0 && fstat(fd, &st) == 0)
		mt_forget(c, st.st_ino);
}

/* ---- reporting ---- */

void
fsm_print_replay(const struct ctx *c, FILE *f)
{
	fprintf(f, "  replay: fs-model --seed %" PRIu64 " --ops %lu --batch %lu%s %s %s\n", c->seed,
		c->index, c->batch, c->check_owner ? "" : " --no-owner", c->dir[SIDE_VIEW],
		c->dir[SIDE_MODEL]);
	fprintf(f, "          (on fresh copies of the same starting trees; add -v to trace)\n");
}

static void
print_outcome(const char *who, const struct outcome *o)
{
	char buf[128];

	fprintf(stderr, "  %s:", who);
	for (int i = 0; i < o->n; i++)
		fprintf(stderr, " %s=%s", o->step[i], fmt_result(o->r[i], buf, sizeof(buf)));
	if (o->data_len)
		fprintf(stderr, " (%zu bytes read)", o->data_len);
	fprintf(stderr, "\n");
}

static size_t
first_difference(const struct outcome o[SIDE_COUNT])
{
	size_t n = EOS_MIN(o[0].data_len, o[1].data_len), i;

	for (i = 0; i < n; i++)
		if (o[0].data[i] != o[1].data[i])
			break;
	return i;
}

static bool
outcomes_equal(const struct outcome o[SIDE_COUNT])
{
	if (o[0].n != o[1].n || o[0].data_len != o[1].data_len)
		return false;
	for (int i = 0; i < o[0].n; i++)
		if (o[0].r[i] != o[1].r[i] || strcmp(o[0].step[i], o[1].step[i]))
			return false;
	return o[0].data_len == 0 || !memcmp(o[0].data, o[1].data, o[0].data_len);
}

static void
check_outcomes(struct ctx *c, const struct outcome o[SIDE_COUNT])
{
	if (outcomes_equal(o))
		return;
	fprintf(stderr, "fs-model: mismatch seed %" PRIu64 " op #%lu: %s\n", c->seed, c->index,
		c->desc);
	print_outcome("model", &o[SIDE_MODEL]);
	print_outcome("view ", &o[SIDE_VIEW]);
	if (o[0].data_len != o[1].data_len ||
	    (o[0].data_len && memcmp(o[0].data, o[1].data, o[0].data_len)))
		fprintf(stderr, "  bytes read: model %zu, view %zu, first difference at %zu\n",
			o[0].data_len, o[1].data_len, first_difference(o));
	fsm_print_replay(c, stderr);
	exit(1);
}

void
fsm_set_crash_msg(const struct ctx *c, const char *what)
{
	int n = snprintf(crash_msg, sizeof(crash_msg),
			 " seed %" PRIu64 " op #%lu: %s\n  replay: fs-model --seed %" PRIu64
			 " --ops %lu --batch %lu%s %s %s\n",
			 c->seed, c->index, what, c->seed, c->index, c->batch,
			 c->check_owner ? "" : " --no-owner", c->dir[SIDE_VIEW],
			 c->dir[SIDE_MODEL]);

	crash_len = n < 0 ? 0 : EOS_MIN((size_t)n, sizeof(crash_msg) - 1);
}

static void
on_fatal_signal(int sig)
{
	const char *what = sig == SIGALRM ? "fs-model: hang (no progress within the timeout) at"
					  : "fs-model: crash (fatal signal) at";
	ssize_t ignored;

	ignored = write(STDERR_FILENO, what, strlen(what));
	ignored = write(STDERR_FILENO, crash_msg, crash_len);
	(void)ignored;
	_exit(1);
}

static void
install_signals(void)
{
	static const int sigs[] = { SIGALRM, SIGBUS, SIGSEGV };
	struct sigaction sa = { .sa_handler = on_fatal_signal };

	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < EOS_ARRAY_SIZE(sigs); i++)
		sigaction(sigs[i], &sa, NULL);
}

/* ---- the driver ---- */

static void
record_result(struct ctx *c, const struct outcome *o)
{
	struct stat st;
	int flags = c->op.arg & AT_SYMLINK_NOFOLLOW;

	c->count[c->op.kind]++;
	for (int i = 0; i < o->n; i++)
		if (o->r[i] < 0) {
			c->failed++;
			break;
		}
	mt_forget_op(c);
	if (c->op.kind == OP_UTIMENS && c->op.sets_mtime && o->n == 1 && o->r[0] == 0 &&
	    fstatat(c->root[SIDE_MODEL], c->op.path, &st, flags) == 0)
		set_add(&c->mt, st.st_ino);
	if (c->op.mtime_unsure && fstatat(c->root[SIDE_MODEL], c->op.path, &st, 0) == 0)
		set_add(&c->unsure, st.st_ino);
}

static void
run_one(struct ctx *c)
{
	struct outcome o[SIDE_COUNT] = { 0 };

	fsm_refresh_entries(c);
	fsm_gen_op(c);
	fsm_set_crash_msg(c, c->desc);
	if (c->verbose)
		fprintf(stderr, "#%lu %s\n", c->index, c->desc);
	mt_forget_op(c);
	alarm(OP_TIMEOUT);
	fsm_run_side(c, SIDE_MODEL, &o[SIDE_MODEL]);
	fsm_run_side(c, SIDE_VIEW, &o[SIDE_VIEW]);
	alarm(0);
	if (c->verbose) {
		print_outcome("model", &o[SIDE_MODEL]);
		print_outcome("view ", &o[SIDE_VIEW]);
	}
	check_outcomes(c, o);
	record_result(c, o);
	free(o[0].data);
	free(o[1].data);
}

/* user.* xattrs are compared only when the model's file system supports them. */
static bool
probe_xattr(const struct ctx *c)
{
	char path[PATH_LEN + 64];
	bool ok;

	snprintf(path, sizeof(path), "%s/", c->abs[SIDE_MODEL]);
	ok = lsetxattr(path, "user.fs-model.probe", "1", 1, 0) == 0;
	if (ok)
		lremovexattr(path, "user.fs-model.probe");
	return ok;
}

static void
print_summary(const struct ctx *c, unsigned long entries)
{
	printf("fs-model: seed %" PRIu64
	       ": %lu ops, %lu tree comparisons, trees equal (%lu entries,"
	       " %lu ops failed alike):",
	       c->seed, c->ops, c->compares, entries, c->failed);
	for (int i = 0; i < OP_COUNT; i++)
		if (c->count[i])
			printf(" %s=%lu", fsm_op_name((enum op_kind)i), c->count[i]);
	printf("\n");
}

static void
usage(FILE *f)
{
	fprintf(f, "usage: fs-model [--seed N] [--ops N] [--batch N] [--no-owner] [--drop-caches]\n"
		   "                [--verbose] VIEW_DIR MODEL_DIR\n"
		   "       fs-model --compare-only [--no-owner] VIEW_DIR MODEL_DIR\n");
}

static void
help(void)
{
	usage(stdout);
	printf("Apply a seeded random sequence of operations to VIEW_DIR and MODEL_DIR (which start\n"
	       "equal) and check that both behave alike and stay equal.\n"
	       "  --seed N        the random seed (default: from the clock; printed on failure)\n"
	       "  --ops N         number of operations (default 1000)\n"
	       "  --batch N       compare the whole trees every N operations (default 100)\n"
	       "  --compare-only  only compare the two trees\n"
	       "  --no-owner      do not compare owners (uid, gid)\n"
	       "  --drop-caches   drop the kernel's caches before each comparison (root only)\n"
	       "  --verbose, -v   print every operation and both results\n"
	       "Exit status: 0 equal, 1 a mismatch (or a hang or a crash), 2 usage or setup error.\n");
}

/* Parse the options into c; returns true for --compare-only. Exits 2 on bad usage. */
static bool
parse_args(struct ctx *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "ops", required_argument, NULL, 'n' },
		{ "batch", required_argument, NULL, 'b' },
		{ "compare-only", no_argument, NULL, 'c' },
		{ "no-owner", no_argument, NULL, 'o' },
		{ "drop-caches", no_argument, NULL, 'd' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	bool compare_only = false;
	int ch;

	c->seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	c->ops = 1000;
	c->batch = 100;
	c->check_owner = true;
	while ((ch = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
		switch (ch) {
		case 's':
			if (!parse_u64(optarg, &c->seed))
				goto bad;
			break;
		case 'n':
		case 'b':
			if (!parse_u64(optarg, &v) || v > 100000000 || (ch == 'b' && v == 0))
				goto bad;
			*(ch == 'n' ? &c->ops : &c->batch) = (unsigned long)v;
			break;
		case 'c':
			compare_only = true;
			break;
		case 'o':
			c->check_owner = false;
			break;
		case 'd':
			c->drop_caches = true;
			break;
		case 'v':
			c->verbose = true;
			break;
		case 'h':
			help();
			exit(0);
		default:
			goto bad;
		}
	}
	if (argc - optind != 2)
		goto bad;
	c->dir[SIDE_VIEW] = argv[optind];
	c->dir[SIDE_MODEL] = argv[optind + 1];
	return compare_only;
bad:
	usage(stderr);
	exit(2);
}

int
main(int argc, char **argv)
{
	static struct ctx c;
	bool compare_only = parse_args(&c, argc, argv);
	unsigned long entries;

	for (int s = 0; s < SIDE_COUNT; s++) {
		c.root[s] = open(c.dir[s], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		c.abs[s] = realpath(c.dir[s], NULL);
		if (c.root[s] < 0 || !c.abs[s]) {
			fprintf(stderr, "fs-model: cannot open %s directory '%s': %m\n",
				fsm_side_name(s), c.dir[s]);
			return 2;
		}
	}
	memset(c.fds, -1, sizeof(c.fds));
	setvbuf(stdout, NULL, _IOLBF, 0);
	install_signals();
	c.have_xattr = probe_xattr(&c);
	if (compare_only) {
		c.ops = 0;
		entries = fsm_compare_trees(&c);
		printf("fs-model: trees equal (%lu entries)\n", entries);
		return 0;
	}
	fsm_rng_seed(&c.rng, c.seed);
	entries = fsm_compare_trees(&c);
	for (c.index = 1; c.index <= c.ops; c.index++) {
		run_one(&c);
		if (c.index % c.batch == 0 || c.index == c.ops)
			entries = fsm_compare_trees(&c);
	}
	print_summary(&c, entries);
	return 0;
}
