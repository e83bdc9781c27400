/* SPDX-License-Identifier: MIT */
/*
 * fs-conformance: what the groups in more than one file share — the run's state and the TAP
 * and check steps of fs-conformance.c. A check step notes what went wrong (the call, the path,
 * the errno) and returns false; tap() prints one TAP line and, on a failure, the notes.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

enum {
	MAX_PAIRS = 16,
};

struct pair {
	const char *a;
	const char *b;
};

struct pairs {
	struct pair v[MAX_PAIRS];
	int n;
};

struct fsc {
	int root;	  /* DIR */
	int work;	  /* DIR/NAME */
	int g;		  /* the running group's directory */
	char gpath[4096]; /* its path */
	char pathbuf[4096];
	const char *dir;
	const char *name;
	const char *only;
	const char *skip;
	bool is_root;
	bool read_only;
	bool have_uid;
	uid_t uid;
	gid_t gid;
	long big_mb;
	long many;
	struct pairs lower_files; /* REL=REF: content of REL equals the local file REF */
	struct pairs lower_links; /* A=B: hard links of one inode */
	struct pairs lower_write; /* REL=REF: append to REL, then it reads REF + marker */
	struct pairs lower_dirs;  /* REL: renamed to REL.renamed, contents intact */
};

/* TAP lines printed, and failed, so far (a forked child reports its own back). */
extern int tap_count;
extern int tap_failed;

__attribute__((format(printf, 2, 3))) bool tap(bool pass, const char *fmt, ...);
void tap_skip(const char *desc, const char *reason);

/* Check steps: the call succeeded (sc), failed with want or alt (se2, se); values match. */
bool sc(long r, const char *op, const char *path);
bool se2(long r, int want, int alt, const char *op, const char *path);
bool se(long r, int want, const char *op, const char *path);
bool eq(long long got, long long want, const char *what, const char *path);
bool eqo(unsigned got, unsigned want, const char *what, const char *path);
bool truth(bool cond, const char *what, const char *path);

/* File steps on paths relative to dfd. */
bool write_all(int fd, const void *buf, size_t len, const char *path);
bool put_mode(int dfd, const char *path, const void *data, size_t len, mode_t mode);
bool put(int dfd, const char *path, const char *s);
bool has_str(int dfd, const char *path, const char *s);
bool lst(int dfd, const char *path, struct stat *st);
bool open_fails(int dfd, const char *path, int flags, int want, int alt);
/* The exit status of a child (251 when it did not exit normally). */
int wait_child(pid_t pid);
/* The path of name in the group's directory, for calls without an *at() form. */
const char *path_in(struct fsc *t, const char *name);

/* fs-conformance-perm.c: the permission group. */
void g_perm(struct fsc *t);
