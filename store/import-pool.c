/* SPDX-License-Identifier: MIT */
/*
 * The pieces of eos_store_import() that both importers use while staging: problem lists,
 * progress reporting and the worker pool that stages file contents. See store/import.h.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"

#include "store/import.h"

enum {
	/* room for the problem list inside one error message, leaving space for prefixes */
	LIST_ROOM = EOS_ERROR_MSG_MAX - 160,
	/* read-ahead of PATH jobs: bytes requested but not yet taken by a worker, per file cap */
	PREFETCH_BYTES = 64 << 20,
	PREFETCH_FILE_MAX = 4 << 20,
};

/* --- problem lists ---------------------------------------------------------------------------- */

int
eos_import_problems_add(struct eos_import_problems *p, const char *path, const char *what)
{
	char *s = NULL;
	int n;

	p->total++;
	if (p->n >= EOS_IMPORT_LIST_MAX)
		return 0;
	if (!p->items && !(p->items = calloc(EOS_IMPORT_LIST_MAX, sizeof(*p->items))))
		return -ENOMEM;
	n = what ? asprintf(&s, "'%s' (%s)", path, what) : asprintf(&s, "'%s'", path);
	if (n < 0)
		return -ENOMEM;
	p->items[p->n++] = s;
	return 0;
}

int
eos_import_problems_fail(const struct eos_import_problems *p, int code, const char *singular,
			 const char *plural, struct eos_error *err)
{
	char list[EOS_ERROR_MSG_MAX] = "";
	size_t len = 0, shown = 0;

	for (; shown < p->n; shown++) {
		size_t n = strlen(p->items[shown]);

		if (shown > 0 && len + n + 2 > LIST_ROOM)
			break;
		snprintf(list + len, sizeof(list) - len, "%s%s", shown ? ", " : "",
			 p->items[shown]);
		len = strlen(list);
	}
	if (p->total > shown)
		snprintf(list + len, sizeof(list) - len, " and %" PRIu64 " more", p->total - shown);
	return eos_error_set(err, code, "%" PRIu64 " %s: %s", p->total,
			     p->total == 1 ? singular : plural, list);
}

void
eos_import_problems_release(struct eos_import_problems *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->items[i]);
	free(p->items);
	*p = (struct eos_import_problems){ 0 };
}

int
eos_import_skip(struct eos_import_result *ret, const char *path)
{
	char **v = reallocarray(ret->skipped, ret->nskipped + 1, sizeof(*v));

	if (!v)
		return -ENOMEM;
	ret->skipped = v;
	v[ret->nskipped] = strdup(path);
	if (!v[ret->nskipped])
		return -ENOMEM;
	ret->nskipped++;
	return 0;
}

void
eos_import_result_release(struct eos_import_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nskipped; i++)
		free(r->skipped[i]);
	free(r->skipped);
	r->skipped = NULL;
	r->nskipped = 0;
}

/* --- progress --------------------------------------------------------------------------------- */

void
eos_import_progress_init(struct eos_import_progress *p, const struct eos_import_options *o)
{
	*p = (struct eos_import_progress){
		.fn = o ? o->progress : NULL,
		.ctx = o ? o->progress_ctx : NULL,
		.status = { .phase = EOS_IMPORT_SCAN },
		.next_ns = eos_mono_ns() + EOS_IMPORT_PROGRESS_NS,
	};
	if (p->fn)
		p->fn(p->ctx, &p->status);
}

void
eos_import_progress_phase(struct eos_import_progress *p, enum eos_import_phase phase,
			  uint64_t total_files, uint64_t total_bytes)
{
	p->status.phase = phase;
	if (phase == EOS_IMPORT_STAGE) {
		p->status.total_files = total_files;
		p->status.total_bytes = total_bytes;
	}
	if (!p->fn)
		return;
	p->next_ns = eos_mono_ns() + EOS_IMPORT_PROGRESS_NS;
	p->fn(p->ctx, &p->status);
}

void
eos_import_progress_tick(struct eos_import_progress *p, uint64_t files, uint64_t bytes, bool force)
{
	int64_t now;

	if (!p->fn)
		return;
	now = eos_mono_ns();
	if (!force && now < p->next_ns)
		return;
	p->next_ns = now + EOS_IMPORT_PROGRESS_NS;
	p->status.files = files;
	p->status.bytes = bytes;
	p->fn(p->ctx, &p->status);
}

/* --- worker pool ------------------------------------------------------------------------------ */

struct eos_import_pool {
	struct eos_changeset *cs; /* borrowed */
	int root_fd;		  /* borrowed; anchors PATH jobs */
	pthread_mutex_t lock;
	pthread_cond_t work; /* a job was queued, the pool closes or fails */
	pthread_cond_t room; /* (monotonic clock) budget freed, a failure, or a worker exited */
	pthread_cond_t ahead_cond; /* a job to prefetch, read-ahead room, closing or a failure */
	/* protected by lock: */
	struct eos_import_job *head, *tail;
	struct eos_import_job *ahead; /* next queued job the prefetcher has not reached */
	size_t ahead_bytes;	      /* read-ahead requested for queued, untaken jobs */
	size_t budget, queued_bytes;  /* MEM job bytes queued or being staged */
	bool closing;
	unsigned running; /* workers that have not exited */
	int code;	  /* first failure */
	struct eos_error err;
	uint64_t files, bytes;
	/* owned by the creating thread: */
	pthread_t *threads;
	unsigned nthreads;
	pthread_t prefetcher;
	bool has_prefetcher;
};

struct eos_import_job *
eos_import_job_new(enum eos_import_job_kind kind, const char *path, const struct eos_attr *attr)
{
	struct eos_import_job *job = calloc(1, sizeof(*job));

	if (!job)
		return NULL;
	job->kind = kind;
	job->fd = -1;
	job->attr = *attr;
	job->path = strdup(path);
	if (!job->path) {
		free(job);
		return NULL;
	}
	return job;
}

void
eos_import_job_free(struct eos_import_job *job)
{
	if (!job)
		return;
	if (job->fd >= 0)
		close(job->fd);
	free(job->data);
	free(job->path);
	free(job);
}

/* Stage a host file; it must still be the inode the walk saw (dev/ino are checked). */
static int
pool_run_path(struct eos_import_pool *pool, const struct eos_import_job *job, uint64_t *bytes,
	      struct eos_error *err)
{
	cleanup_close int fd = -1;
	struct eos_attr attr;
	struct stat sb;
	int r;

	r = eos_import_open_seen(pool->root_fd, job->path, job->dev, job->ino, &fd, &sb, err);
	if (r < 0)
		return r;
	attr = eos_import_attr_from_stat(&sb);
	*bytes = (uint64_t)sb.st_size;
	r = eos_changeset_put_file_fd(pool->cs, job->path, &attr, fd, err);
	return r ?: eos_import_copy_xattrs(pool->cs, job->path, fd, err);
}

static int
pool_run(struct eos_import_pool *pool, const struct eos_import_job *job, uint64_t *bytes,
	 struct eos_error *err)
{
	switch (job->kind) {
	case EOS_IMPORT_JOB_MEM:
		*bytes = job->len;
		return eos_changeset_put_file_mem(pool->cs, job->path, &job->attr, job->data,
						  job->len, err);
	case EOS_IMPORT_JOB_FD:
		*bytes = job->len;
		return eos_changeset_put_file_fd(pool->cs, job->path, &job->attr, job->fd, err);
	case EOS_IMPORT_JOB_PATH:
		return pool_run_path(pool, job, bytes, err);
	}
	return eos_error_set(err, -EINVAL, "bad import job for '%s'", job->path);
}

/* Bytes of job's file the prefetcher asks the kernel to read ahead. */
static size_t
prefetch_len(const struct eos_import_job *job)
{
	return job->len < PREFETCH_FILE_MAX ? job->len : PREFETCH_FILE_MAX;
}

/*
 * Reading many small files one after the other leaves the disk idle between requests (a cold
 * /usr/include reads at ~100 MB/s with one reader, ~300 MB/s with eight here). The prefetcher
 * walks the queue ahead of the workers and asks the kernel to start reading each file
 * (POSIX_FADV_WILLNEED is asynchronous), bounded by PREFETCH_BYTES not yet taken.
 */
static void
prefetch_one(int root_fd, const char *path, size_t len)
{
	int fd = eos_import_open_beneath(root_fd, path);

	if (fd < 0)
		return; /* the worker reports it */
	posix_fadvise(fd, 0, (off_t)len, POSIX_FADV_WILLNEED);
	close(fd);
}

/* Wait for a job to prefetch; NULL when there will be none. Called locked. */
static struct eos_import_job *
prefetch_take(struct eos_import_pool *pool)
{
	struct eos_import_job *job;

	for (;;) {
		while (pool->code == 0 && !(pool->ahead && pool->ahead_bytes < PREFETCH_BYTES) &&
		       !(pool->closing && !pool->ahead))
			pthread_cond_wait(&pool->ahead_cond, &pool->lock);
		if (pool->code != 0 || !pool->ahead)
			return NULL;
		job = pool->ahead;
		pool->ahead = job->next;
		if (job->kind == EOS_IMPORT_JOB_PATH && job->len > 0)
			return job;
	}
}

static void *
pool_prefetcher(void *arg)
{
	struct eos_import_pool *pool = arg;
	struct eos_import_job *job;

	pthread_mutex_lock(&pool->lock);
	while ((job = prefetch_take(pool))) {
		size_t len = prefetch_len(job);
		char *path = strdup(job->path);

		if (!path)
			continue;
		/* counted now: a worker may take (and free) the job while we read ahead */
		job->prefetched = true;
		pool->ahead_bytes += len;
		pthread_mutex_unlock(&pool->lock);
		prefetch_one(pool->root_fd, path, len);
		free(path);
		pthread_mutex_lock(&pool->lock);
	}
	pthread_mutex_unlock(&pool->lock);
	return NULL;
}

/* Next job, or NULL when the pool is closed and empty or has failed. Called locked. */
static struct eos_import_job *
pool_take(struct eos_import_pool *pool)
{
	struct eos_import_job *job;

	while (!pool->head && !pool->closing && pool->code == 0)
		pthread_cond_wait(&pool->work, &pool->lock);
	if (pool->code != 0 || !pool->head)
		return NULL;
	job = pool->head;
	pool->head = job->next;
	if (!pool->head)
		pool->tail = NULL;
	if (pool->ahead == job)
		pool->ahead = job->next;
	if (job->prefetched) {
		pool->ahead_bytes -= prefetch_len(job);
		pthread_cond_signal(&pool->ahead_cond);
	}
	return job;
}

/* Account for a finished job. Called locked. */
static void
pool_done(struct eos_import_pool *pool, size_t mem, int r, uint64_t bytes,
	  const struct eos_error *e)
{
	pool->queued_bytes -= mem;
	if (r < 0 && pool->code == 0) {
		pool->code = r;
		pool->err = *e;
		pthread_cond_broadcast(&pool->work);
		pthread_cond_broadcast(&pool->room);
		pthread_cond_broadcast(&pool->ahead_cond);
	} else if (r >= 0) {
		pool->files++;
		pool->bytes += bytes;
	}
	/* Only a producer waiting for budget needs to know; finish polls for progress. */
	if (mem)
		pthread_cond_broadcast(&pool->room);
}

static void *
pool_worker(void *arg)
{
	struct eos_import_pool *pool = arg;
	struct eos_import_job *job;

	pthread_mutex_lock(&pool->lock);
	while ((job = pool_take(pool))) {
		struct eos_error e = { 0 };
		size_t mem = job->kind == EOS_IMPORT_JOB_MEM ? job->len : 0;
		uint64_t bytes = 0;
		int r;

		pthread_mutex_unlock(&pool->lock);
		r = pool_run(pool, job, &bytes, &e);
		eos_import_job_free(job);
		pthread_mutex_lock(&pool->lock);
		pool_done(pool, mem, r, bytes, &e);
	}
	pool->running--;
	pthread_cond_broadcast(&pool->room);
	pthread_mutex_unlock(&pool->lock);
	return NULL;
}

static int
pool_init_sync(struct eos_import_pool *pool)
{
	pthread_condattr_t ca;
	int r;

	pthread_mutex_init(&pool->lock, NULL);
	pthread_cond_init(&pool->work, NULL);
	pthread_cond_init(&pool->ahead_cond, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	r = pthread_cond_init(&pool->room, &ca);
	pthread_condattr_destroy(&ca);
	return -r;
}

int
eos_import_pool_new(struct eos_changeset *cs, int root_fd, unsigned threads, size_t budget,
		    struct eos_import_pool **ret, struct eos_error *err)
{
	EOS_CLEANUP(eos_import_pool_freep) struct eos_import_pool *pool = NULL;
	int r = 0;

	pool = calloc(1, sizeof(*pool));
	if (!pool || !(pool->threads = calloc(threads, sizeof(*pool->threads))))
		return eos_import_no_memory(err);
	pool->cs = cs;
	pool->root_fd = root_fd;
	pool->budget = budget;
	if ((r = pool_init_sync(pool)) < 0)
		return eos_error_set(err, r, "import pool: %s", strerror(-r));
	pthread_mutex_lock(&pool->lock);
	for (unsigned i = 0; i < threads; i++) {
		r = pthread_create(&pool->threads[pool->nthreads], NULL, pool_worker, pool);
		if (r != 0)
			break;
		pool->nthreads++;
		pool->running++;
	}
	pthread_mutex_unlock(&pool->lock);
	if (pool->nthreads == 0)
		return eos_error_set(err, -r, "start import threads: %s", strerror(r));
	/* without a prefetcher the import only reads slower */
	if (root_fd >= 0)
		pool->has_prefetcher =
			pthread_create(&pool->prefetcher, NULL, pool_prefetcher, pool) == 0;
	*ret = TAKE_PTR(pool);
	return 0;
}

int
eos_import_pool_push(struct eos_import_pool *pool, struct eos_import_job *job,
		     struct eos_error *err)
{
	size_t mem = job->kind == EOS_IMPORT_JOB_MEM ? job->len : 0;
	int r;

	pthread_mutex_lock(&pool->lock);
	while (pool->code == 0 && mem && pool->queued_bytes &&
	       pool->queued_bytes + mem > pool->budget)
		pthread_cond_wait(&pool->room, &pool->lock);
	r = pool->code;
	if (r < 0) {
		if (err)
			*err = pool->err;
		pthread_mutex_unlock(&pool->lock);
		eos_import_job_free(job);
		return r;
	}
	job->next = NULL;
	if (pool->tail)
		pool->tail->next = job;
	else
		pool->head = job;
	pool->tail = job;
	if (!pool->ahead)
		pool->ahead = job;
	pool->queued_bytes += mem;
	pthread_cond_signal(&pool->work);
	pthread_cond_signal(&pool->ahead_cond);
	pthread_mutex_unlock(&pool->lock);
	return 0;
}

void
eos_import_pool_counts(struct eos_import_pool *pool, uint64_t *ret_files, uint64_t *ret_bytes)
{
	pthread_mutex_lock(&pool->lock);
	*ret_files = pool->files;
	*ret_bytes = pool->bytes;
	pthread_mutex_unlock(&pool->lock);
}

static void
pool_join(struct eos_import_pool *pool)
{
	for (unsigned i = 0; i < pool->nthreads; i++)
		pthread_join(pool->threads[i], NULL);
	pool->nthreads = 0;
	if (pool->has_prefetcher)
		pthread_join(pool->prefetcher, NULL);
	pool->has_prefetcher = false;
}

int
eos_import_pool_finish(struct eos_import_pool *pool, struct eos_import_progress *progress,
		       struct eos_error *err)
{
	uint64_t files, bytes;
	int r;

	pthread_mutex_lock(&pool->lock);
	pool->closing = true;
	pthread_cond_broadcast(&pool->work);
	pthread_cond_broadcast(&pool->ahead_cond);
	while (pool->running > 0) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += EOS_IMPORT_PROGRESS_NS;
		ts.tv_sec += ts.tv_nsec / 1000000000;
		ts.tv_nsec %= 1000000000;
		pthread_cond_timedwait(&pool->room, &pool->lock, &ts);
		files = pool->files;
		bytes = pool->bytes;
		pthread_mutex_unlock(&pool->lock);
		eos_import_progress_tick(progress, files, bytes, false);
		pthread_mutex_lock(&pool->lock);
	}
	r = pool->code;
	if (r < 0 && err)
		*err = pool->err;
	pthread_mutex_unlock(&pool->lock);
	pool_join(pool);
	return r;
}

void
eos_import_pool_free(struct eos_import_pool *pool)
{
	if (!pool)
		return;
	if (pool->threads) {
		pthread_mutex_lock(&pool->lock);
		pool->closing = true;
		if (pool->code == 0)
			pool->code = -ECANCELED;
		pthread_cond_broadcast(&pool->work);
		pthread_cond_broadcast(&pool->ahead_cond);
		pthread_mutex_unlock(&pool->lock);
		pool_join(pool);
		pthread_mutex_destroy(&pool->lock);
		pthread_cond_destroy(&pool->work);
		pthread_cond_destroy(&pool->ahead_cond);
		pthread_cond_destroy(&pool->room);
	}
	while (pool->head) {
		struct eos_import_job *job = pool->head;

		pool->head = job->next;
		eos_import_job_free(job);
	}
	free(pool->threads);
	free(pool);
}
