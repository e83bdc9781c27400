/* SPDX-License-Identifier: MIT */
/*
 * fs-model: a randomized model checker for a mounted session view (usage in fs-model.c).
 *
 * fs-model.c drives the run and reports, fs-model-gen.c generates operations, fs-model-run.c
 * executes one operation on one side (model or view), fs-model-tree.c lists directories and
 * compares the two trees.
 * Single-threaded: all state lives in one struct ctx owned by main(). Helpers that fail on
 * setup problems print a message and exit 2; a mismatch prints its report and exits 1.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "tests/integration/model-util.h"

#define PRINTF_LIKE(fmt, args) __attribute__((format(printf, fmt, args)))

enum {
	PATH_LEN = 4096,
	NAME_LEN = 300,
	DESC_LEN = 6144,
	MAX_STEPS = 12,
	MAX_DEPTH = 4,	       /* new entries are created at most this deep */
	MAX_DIFFS = 20,	       /* tree differences printed before giving up */
	MAX_CAPTURE = 1 << 22, /* bytes read back by a whole-file read */
	BIG_TREE = 400,	       /* above this many entries, removals get more weight */
	OP_TIMEOUT = 60,       /* seconds before an operation counts as hung */
	CMP_TIMEOUT = 600,     /* seconds for one tree comparison */
	FD_SLOTS = 4,	       /* descriptors kept open across operations, per side */
};

enum side {
	SIDE_MODEL,
	SIDE_VIEW,
	SIDE_COUNT,
};

/* Entry kinds, as bits so that a caller can ask for several. */
enum kind {
	K_REG = 1 << 0,
	K_DIR = 1 << 1,
	K_LNK = 1 << 2,
	K_FIFO = 1 << 3,
	K_OTHER = 1 << 4,
	K_ANY = (1 << 5) - 1,
};

enum op_kind {
	OP_CREATE,
	OP_WRITE,
	OP_APPEND,
	OP_TRUNCATE,
	OP_OTRUNC,
	OP_READ,
	OP_UNLINK,
	OP_MKDIR,
	OP_RMDIR,
	OP_RENAME,
	OP_SYMLINK,
	OP_LINK,
	OP_CHMOD,
	OP_UTIMENS,
	OP_SETXATTR,
	OP_RMXATTR,
	OP_GETXATTR,
	OP_OPEN_UNLINK,
	OP_MKFIFO,
	OP_STAT,
	OP_MMAP,
	OP_COPY_RANGE,
	OP_FALLOCATE,
	OP_FD,
	OP_READDIR,
	OP_COUNT,
};

/* What an OP_FD does with its slot of long-lived descriptors (struct op's variant). */
enum fd_action {
	FD_OPEN,
	FD_PWRITE,
	FD_PREAD,
	FD_FTRUNCATE,
	FD_FSTAT,
	FD_CLOSE,
};

/* xoshiro256** seeded through splitmix64: the same seed gives the same stream everywhere. */
struct rng {
	uint64_t s[4];
};

struct entry {
	char *path; /* relative to the root; "" is the root itself */
	unsigned kind;
	int depth;
};

struct entries {
	struct entry *v;
	size_t n, cap;
};

/* One generated operation; path2 is a second path, a symlink target or an xattr name. */
struct op {
	enum op_kind kind;
	char path[PATH_LEN];
	char path2[PATH_LEN];
	char name3[NAME_LEN]; /* OP_READDIR: the name created during the listing */
	bool path2_is_path;
	int oflags, oflags2; /* extra open flags for path and path2 */
	int arg;	     /* rename/utimensat/fallocate/xattr/stat flags */
	int variant;
	int slot; /* OP_FD: the descriptor slot */
	mode_t mode, umask;
	uint64_t off, off2, len;
	unsigned char *buf; /* len bytes to write (owned) */
	struct timespec times[2];
	bool sets_mtime;
	bool mtime_unsure; /* whether it updates mtime differs between file systems */
};

/* What one side observed: each step's value or -errno, and the bytes it read back. */
struct outcome {
	int n;
	const char *step[MAX_STEPS];
	long r[MAX_STEPS];
	unsigned char *data;
	size_t data_len;
};

/* A small set of model inode numbers. */
struct ino_set {
	ino_t *v;
	size_t n, cap;
};

/* A view inode seen at the previous comparison, keyed by the model object (inode and birth
 * time, so that a reused model inode number is another object). */
struct ino_seen {
	ino_t model;
	int64_t btime_sec;
	uint32_t btime_nsec;
	ino_t view;
	bool has_mtime;			   /* a regular file or a directory */
	struct timespec mtime[SIDE_COUNT]; /* as seen by this comparison */
};

struct ctx {
	const char *dir[SIDE_COUNT]; /* as given, for the replay command */
	char *abs[SIDE_COUNT];	     /* absolute, for the path-only xattr calls */
	int root[SIDE_COUNT];
	struct rng rng;
	uint64_t seed;
	unsigned long ops, batch, index;
	bool verbose, check_owner, have_xattr, drop_caches;
	struct entries es;
	struct op op;
	char desc[DESC_LEN];
	struct ino_set mt;     /* mtime set explicitly and not touched since: compared */
	struct ino_set unsure; /* mtime update differs between file systems: not checked */
	unsigned long count[OP_COUNT], failed, compares;
	int fds[SIDE_COUNT][FD_SLOTS]; /* -1: the slot is closed */
	char fd_path[FD_SLOTS][PATH_LEN];
	struct ino_seen *seen; /* sorted by model inode and birth time */
	size_t nseen;
};

/* A directory listing, sorted by name. */
struct name {
	char *s;
	ino_t ino; /* d_ino from readdir */
};

struct names {
	struct name *v;
	size_t n, cap;
};

static inline const char *
fsm_side_name(int s)
{
	return s == SIDE_MODEL ? "model" : "view";
}

#define fsm_realloc mu_realloc
#define fsm_strdup  mu_strdup
#define fsm_join    mu_join

static inline long
fsm_neg_errno(void)
{
	return errno > 0 ? -(long)errno : -EIO;
}

/* A system call's result as its value or -errno. */
static inline long
fsm_sys(long r)
{
	return r < 0 ? fsm_neg_errno() : r;
}

/* fs-model.c */
bool fsm_set_has(const struct ino_set *set, ino_t ino);
/* Print the command that replays the run up to the current operation. */
void fsm_print_replay(const struct ctx *c, FILE *f);
/* Set what a fatal signal or the watchdog reports: the seed, the op index and what. */
void fsm_set_crash_msg(const struct ctx *c, const char *what);

/* fs-model-gen.c */
const char *fsm_op_name(enum op_kind kind);
void fsm_rng_seed(struct rng *r, uint64_t seed);
/* List the model's tree into c->es (the paths operations pick from). */
void fsm_refresh_entries(struct ctx *c);
/* Generate c->op and its description c->desc from c->rng and c->es. */
void fsm_gen_op(struct ctx *c);

/* fs-model-run.c */
/* Run c->op on side s (changes the working directory to that side's root). */
void fsm_run_side(struct ctx *c, enum side s, struct outcome *o);

/* fs-model-tree.c */
unsigned fsm_kind_of(mode_t mode);
/* Fill ret with the sorted names of directory dfd (without . and ..): 0 or -errno. */
int fsm_list_names(int dfd, struct names *ret);
void fsm_names_clear(struct names *n);
/* Compare the whole trees: the number of entries when equal; else print the differences
 * and exit 1. */
unsigned long fsm_compare_trees(struct ctx *c);
