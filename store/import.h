/* SPDX-License-Identifier: MIT */
/*
 * store/import: the parts of eos_store_import() shared by the directory walker (import.c) and the
 * tar reader (import-tar.c, over the libarchive wrapper store/archive.c).
 *
 * Both importers first scan their source completely (collecting every unreadable file or file of
 * an unknown type, so that one error lists them all, and every socket, which is skipped), then
 * open ONE change set that creates the sandbox, stage directories, symlinks, fifos and devices
 * from the calling thread, hand file contents to a pool of worker
 * threads (each calls eos_changeset_put_file_*(), which hashes, chunks, compresses and writes in
 * that thread), stage hard links once their targets are staged, and commit once. Nothing is
 * visible in the store until that single commit succeeds.
 *
 * Counting: files are the regular files staged with content, hardlinks the further names of
 * those files, dirs the directories below the root, specials the fifos and devices, bytes the
 * file content sizes.
 *
 * Files: import.c (source detection, directory walk, shared steps, host file access),
 * import-pool.c (problem lists, progress, worker pool), import-tar.c (archives).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "common/error.h"

#include "store/git-index.h"
#include "store/store.h"

enum {
	EOS_IMPORT_LIST_MAX = 20,	 /* problem paths named in one error message */
	EOS_IMPORT_MEM_MAX = 32 << 20,	 /* archive members up to this size are read into memory */
	EOS_IMPORT_INDEX_MAX = 1 << 30,	 /* git indexes up to this size are refreshed (in memory) */
	EOS_IMPORT_CONFIG_MAX = 1 << 20, /* submodules' git configs up to this size are read */
	EOS_IMPORT_BUDGET = 128 << 20,	 /* bytes of queued in-memory file data */
	EOS_IMPORT_THREADS_MAX = 64,
	EOS_IMPORT_PROGRESS_NS = 100000000, /* progress callback interval */
};

/* --- problem lists ---------------------------------------------------------------------------- */

/* Paths found unsuitable during a scan ("'a/fifo' (fifo)"). Embedded: zero-initialise. */
struct eos_import_problems {
	char **items; /* the first EOS_IMPORT_LIST_MAX, formatted */
	size_t n;
	uint64_t total; /* all of them */
};

/* Record path, with what (may be NULL) in parentheses. Returns 0 or -ENOMEM. */
int eos_import_problems_add(struct eos_import_problems *p, const char *path, const char *what);
/*
 * Fill err with "<total> <noun>: 'a' (what), 'b', … and N more" (noun chosen by count: singular
 * or plural) and return code.
 */
int eos_import_problems_fail(const struct eos_import_problems *p, int code, const char *singular,
			     const char *plural, struct eos_error *err);
void eos_import_problems_release(struct eos_import_problems *p);

/* Append a copy of path to ret's skipped list (a socket the import leaves out). 0 or -ENOMEM. */
int eos_import_skip(struct eos_import_result *ret, const char *path);

/* --- progress --------------------------------------------------------------------------------- */

struct eos_import_progress {
	void (*fn)(void *ctx, const struct eos_import_status *s); /* NULL: no reporting */
	void *ctx;
	struct eos_import_status status; /* as last reported */
	int64_t next_ns;		 /* monotonic time of the next report */
};

/* Start reporting to o's callback (if any), and report the SCAN phase. */
void eos_import_progress_init(struct eos_import_progress *p, const struct eos_import_options *o);
/* Enter phase (STAGE with the totals to stage, COMMIT) and report it. */
void eos_import_progress_phase(struct eos_import_progress *p, enum eos_import_phase phase,
			       uint64_t total_files, uint64_t total_bytes);
/* Report files and bytes staged so far when the interval has passed (always with force). */
void eos_import_progress_tick(struct eos_import_progress *p, uint64_t files, uint64_t bytes,
			      bool force);

/* --- worker pool ------------------------------------------------------------------------------ */

enum eos_import_job_kind {
	EOS_IMPORT_JOB_MEM, /* data/len: bytes in memory (owned by the job, in the budget) */
	EOS_IMPORT_JOB_FD,  /* fd: a temporary file positioned at 0 (owned by the job), len bytes */
	EOS_IMPORT_JOB_PATH, /* path below the pool's root fd; must still be the inode dev/ino */
};

/* One file to stage. Created with eos_import_job_new(); the pool owns pushed jobs. */
struct eos_import_job {
	enum eos_import_job_kind kind;
	char *path; /* tree path, also the host path relative to the root fd for PATH jobs */
	struct eos_attr attr;
	void *data;
	size_t len; /* MEM/FD: bytes to stage; PATH: size seen by the walk (for read-ahead) */
	int fd;
	dev_t dev;
	ino_t ino;
	bool prefetched; /* the pool asked the kernel to read it ahead (pool lock) */
	struct eos_import_job *next;
};

/* Copies path. Returns NULL on allocation failure. */
struct eos_import_job *eos_import_job_new(enum eos_import_job_kind kind, const char *path,
					  const struct eos_attr *attr);
void eos_import_job_free(struct eos_import_job *job);
EOS_DEFINE_CLEANUP(struct eos_import_job *, eos_import_job_free)

struct eos_import_pool;

/*
 * Start threads workers staging into cs (borrowed, must outlive the pool). root_fd (borrowed,
 * may be -1 when no PATH jobs are pushed) anchors PATH jobs. In-memory data queued or in progress
 * is limited to budget bytes. Caller owns *ret; eos_import_pool_free().
 */
int eos_import_pool_new(struct eos_changeset *cs, int root_fd, unsigned threads, size_t budget,
			struct eos_import_pool **ret, struct eos_error *err);
/*
 * Queue job (ownership moves to the pool, also on failure). Blocks while the in-memory budget is
 * full. Fails with the first worker error (and its message) once any job has failed.
 */
int eos_import_pool_push(struct eos_import_pool *pool, struct eos_import_job *job,
			 struct eos_error *err);
/* Files and bytes staged so far (any thread). */
void eos_import_pool_counts(struct eos_import_pool *pool, uint64_t *ret_files, uint64_t *ret_bytes);
/*
 * No more jobs: wait until every queued job is staged, reporting progress meanwhile from the
 * calling thread, and join the workers. Returns 0 or the first worker error.
 */
int eos_import_pool_finish(struct eos_import_pool *pool, struct eos_import_progress *progress,
			   struct eos_error *err);
/* Stop (dropping queued jobs), join and free. NULL-safe. */
void eos_import_pool_free(struct eos_import_pool *pool);
EOS_DEFINE_CLEANUP(struct eos_import_pool *, eos_import_pool_free)

/* --- shared steps ----------------------------------------------------------------------------- */

/* Fill err with "<op> '<path>': <strerror(errno)>" and return -errno (errno as left by op). */
int eos_import_sys_fail(struct eos_error *err, const char *op, const char *path);
/* Fill err with "out of memory" and return -ENOMEM. */
int eos_import_no_memory(struct eos_error *err);

/* Worker count for o (0 = online cores), clamped to 1..EOS_IMPORT_THREADS_MAX. */
unsigned eos_import_threads(const struct eos_import_options *o);
/* sec + nsec as nanoseconds, saturated to the int64_t range. */
int64_t eos_import_time_ns(int64_t sec, long nsec);
/* The permission bits (07777), owner and mtime of sb. */
struct eos_attr eos_import_attr_from_stat(const struct stat *sb);
/*
 * Open path below root_fd (borrowed) read-only without following any symlink: openat2()
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS, falling back to openat() with O_NOFOLLOW (final
 * component only) where openat2 is missing or denied. Returns the fd (O_CLOEXEC | O_NONBLOCK;
 * caller closes it) or -errno.
 */
int eos_import_open_beneath(int root_fd, const char *path);
/*
 * Open path below root_fd as eos_import_open_beneath() does and fstat it into *sb; it must
 * still be the regular file dev/ino the walk saw, else -EAGAIN "… changed during the import".
 * *ret_fd: the fd (caller closes it). 0 or -errno with err set.
 */
int eos_import_open_seen(int root_fd, const char *path, dev_t dev, ino_t ino, int *ret_fd,
			 struct stat *sb, struct eos_error *err);
/*
 * Stage the user.* extended attributes of the open file fd as xattrs of path in cs (other
 * namespaces are not shown by session views). A filesystem without xattrs gives none.
 */
int eos_import_copy_xattrs(struct eos_changeset *cs, const char *path, int fd,
			   struct eos_error *err);
/* Whether path is a work tree's git index: ".git/index" or ".../.git/index". */
bool eos_import_is_git_index(const char *path);
/* The work tree of such an index ("a/b" for "a/b/.git/index", "" at the root); NULL: ENOMEM. */
char *eos_import_git_work_tree(const char *index);
/*
 * Whether path may be a submodule's index, ".../.git/modules/<name>/index", or the config beside
 * it (import-git-module.c).
 */
bool eos_import_is_module_index(const char *path);
bool eos_import_is_module_config(const char *path);
/*
 * The work tree of the submodule index at path, as its git directory's config names it
 * (core.worktree), into *ret; NULL when the config names none inside the import. 0 or -ENOMEM.
 */
int eos_import_module_work_tree(int root_fd, const char *index, char **ret);
/* The same from the config's len bytes (an archive's member). */
int eos_import_module_work_tree_of(const char *index, const char *config, size_t len, char **ret);
/*
 * Stage the git index at path (the regular file dev/ino the walk saw), after every file it
 * names: its entries' stat data refreshed for the session views unless keep, or when it is not
 * an index this parser reads (import-git.c). *bytes: its size; *refreshed: entries rewritten.
 */
int eos_import_git_index(struct eos_changeset *cs, int root_fd, const char *path, dev_t dev,
			 ino_t ino, bool keep, uint64_t *bytes, size_t *refreshed,
			 struct eos_error *err);
/*
 * The stat data a view shows of the lower file or symlink at path (attr and size as staged; mode
 * the index entry's, which stays) into *view. False when the file has no time a view can show.
 */
bool eos_import_git_view(const char *path, const struct eos_attr *attr, uint64_t size,
			 uint32_t mode, struct eos_gitidx_stat *view);
/*
 * The git object id (oid_len bytes: SHA-1, or SHA-256 for 32) of a blob of size bytes: p, or
 * when p is NULL the first size bytes of fd (read with pread, the offset unmoved), into out.
 */
int eos_import_git_blob_id(size_t oid_len, const void *p, int fd, uint64_t size, uint8_t *out);
/* Open the change set creating the sandbox (owner "import"). Caller frees *ret. */
int eos_import_begin(struct eos_store *st, const struct eos_import_options *o, const char *source,
		     const struct eos_attr *root, struct eos_changeset **ret,
		     struct eos_error *err);
/* Commit cs and fill ret's sandbox id and version (the counts are the caller's). */
int eos_import_commit(struct eos_changeset *cs, struct eos_import_result *ret,
		      struct eos_error *err);

/*
 * Import the archive open at fd (a regular file, read twice: once for the listing, once for
 * the data). src is the absolute path, for the source string and messages. Returns -EINVAL
 * "'<src>' is neither a directory nor a tar archive" when fd is not a (compressed) tar.
 */
int eos_import_tar(struct eos_store *st, const char *src, int fd,
		   const struct eos_import_options *o, struct eos_import_result *ret,
		   struct eos_error *err);
