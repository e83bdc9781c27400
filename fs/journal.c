/* SPDX-License-Identifier: MIT */
/*
 * fs/journal: the session's write journal (see journal.h).
 *
 * File: a 32-byte header (magic "EOSJRNL1", le64 generation, the 16-byte session nonce), then
 * 72-byte records: le64 seq · le64 ino · u8 type (1 write) · u8 copy-up · le16 0 · le32 op ·
 * le64 start · le64 end · le64 size · le64 mtime (ns) · le64 lower limit · le64 check (the
 * hash of the 64 bytes before it). A batch image (type 4) is such a record holding le64 length
 * and le64 hash of the image at 24 and 32, followed by the image (eos_session_batch_ops()). A
 * record or image that does not check ends the generation (a torn tail after a power loss).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/endian.h"
#include "common/failpoint.h"
#include "common/hashmap.h"
#include "common/log.h"

#include "fs/view-internal.h"

static const char MAGIC[8] = "EOSJRNL1";

enum {
	HEADER_BYTES = 32,
	RECORD_BYTES = 72,
	RECORD_CHECKED = 64, /* bytes covered by the check */
	REC_WRITE = 1,
	REC_ATTR = 2,
	REC_TRUNC = 3,
	REC_BATCH = 4,
	BATCH_MAX = 64 << 20,	  /* larger images are refused (-EFBIG) */
	ATTR_META_CHANGED = 1,	  /* REC_ATTR, REC_TRUNC flags: EOS_NODE_META_CHANGED */
	ROTATE_BYTES = 4 << 20,	  /* a generation this large is rotated */
	PREALLOC_BYTES = 1 << 20, /* preallocated ahead of the appends */
	PREALLOC_MIN = 64 << 10,  /* refill when less than this is left */
	KEY_JOURNAL = 'J',
};

/*
 * One record. REC_WRITE: a write of [start, end) by op, with the size, mtime and copy-up state
 * after it. REC_ATTR: a change of a node's mode, owner or times (a SETATTR without a size), with
 * all of them after it. REC_TRUNC: a truncation to size, with the times and the copy-up state
 * after it.
 */
struct jrec {
	uint64_t seq, ino;
	uint8_t type, copyup;
	uint32_t op;
	uint64_t start, end, size;
	int64_t mtime_ns;
	uint64_t lower_limit;
	uint32_t mode, uid, gid, aflags;
	int64_t atime_ns, ctime_ns;
};

void
eos_journal_init(struct eos_journal *j)
{
	*j = (struct eos_journal){ .fd = -1 };
	pthread_rwlock_init(&j->lock, NULL);
	pthread_mutex_init(&j->rotate_lock, NULL);
	pthread_mutex_init(&j->room_lock, NULL);
	atomic_store(&j->next_seq, 1);
}

static void
gen_name(uint64_t gen, char *out, size_t size)
{
	snprintf(out, size, "journal-%016" PRIx64, gen);
}

/* Bytes 24..64 of a record: the write's range and state, or the attributes. */
static void
rec_encode(const struct jrec *r, uint8_t *p)
{
	memset(p, 0, RECORD_BYTES);
	eos_put_le64(p, r->seq);
	eos_put_le64(p + 8, r->ino);
	p[16] = r->type;
	p[17] = r->copyup;
	eos_put_le32(p + 20, r->op);
	if (r->type == REC_BATCH) {
		eos_put_le64(p + 24, r->size);
		eos_put_le64(p + 32, r->start);
	} else if (r->type == REC_TRUNC) {
		eos_put_le32(p + 24, r->aflags);
		eos_put_le64(p + 32, (uint64_t)r->ctime_ns);
		eos_put_le64(p + 40, r->size);
		eos_put_le64(p + 56, r->lower_limit);
	} else if (r->type == REC_ATTR) {
		eos_put_le32(p + 24, r->mode);
		eos_put_le32(p + 28, r->uid);
		eos_put_le32(p + 32, r->gid);
		eos_put_le32(p + 36, r->aflags);
		eos_put_le64(p + 40, (uint64_t)r->atime_ns);
		eos_put_le64(p + 56, (uint64_t)r->ctime_ns);
	} else {
		eos_put_le64(p + 24, r->start);
		eos_put_le64(p + 32, r->end);
		eos_put_le64(p + 40, r->size);
		eos_put_le64(p + 56, r->lower_limit);
	}
	eos_put_le64(p + 48, (uint64_t)r->mtime_ns);
	eos_put_le64(p + 64, eos_hashmap_hash(p, RECORD_CHECKED));
}

static bool
rec_decode(const uint8_t *p, struct jrec *r)
{
	if (eos_get_le64(p + 64) != eos_hashmap_hash(p, RECORD_CHECKED))
		return false;
	*r = (struct jrec){ .seq = eos_get_le64(p),
			    .ino = eos_get_le64(p + 8),
			    .type = p[16],
			    .copyup = p[17],
			    .op = eos_get_le32(p + 20),
			    .mtime_ns = (int64_t)eos_get_le64(p + 48) };
	if (r->type == REC_BATCH) {
		r->size = eos_get_le64(p + 24);
		r->start = eos_get_le64(p + 32);
		return r->size <= BATCH_MAX;
	}
	if (r->type == REC_ATTR) {
		r->mode = eos_get_le32(p + 24);
		r->uid = eos_get_le32(p + 28);
		r->gid = eos_get_le32(p + 32);
		r->aflags = eos_get_le32(p + 36);
		r->atime_ns = (int64_t)eos_get_le64(p + 40);
		r->ctime_ns = (int64_t)eos_get_le64(p + 56);
		return r->copyup == EOS_JCOPYUP_NONE &&
		       !(r->aflags & ~(uint32_t)ATTR_META_CHANGED) && !(r->mode & ~(uint32_t)07777);
	}
	r->size = eos_get_le64(p + 40);
	r->lower_limit = eos_get_le64(p + 56);
	if (r->type == REC_TRUNC) {
		r->aflags = eos_get_le32(p + 24);
		r->ctime_ns = (int64_t)eos_get_le64(p + 32);
		return r->copyup <= EOS_JCOPYUP_PARTIAL &&
		       !(r->aflags & ~(uint32_t)ATTR_META_CHANGED);
	}
	r->start = eos_get_le64(p + 24);
	r->end = eos_get_le64(p + 32);
	return r->type == REC_WRITE && r->copyup <= EOS_JCOPYUP_PARTIAL && r->start <= r->end;
}

/* --- the nonce -------------------------------------------------------------------------------- */

int
eos_journal_load_nonce(struct eos_view *v, const void *val, size_t vlen)
{
	if (vlen != EOS_JOURNAL_NONCE && vlen != EOS_JOURNAL_NONCE + 8)
		return -EBADMSG;
	memcpy(v->journal.nonce, val, EOS_JOURNAL_NONCE);
	v->journal.floor = vlen > EOS_JOURNAL_NONCE
				   ? eos_get_le64((const uint8_t *)val + EOS_JOURNAL_NONCE)
				   : 0;
	v->journal.have_nonce = true;
	return 0;
}

int
eos_journal_stage_floor(struct eos_view *v, uint64_t floor, struct eos_session_batch *b)
{
	uint8_t key = KEY_JOURNAL, val[EOS_JOURNAL_NONCE + 8];

	memcpy(val, v->journal.nonce, EOS_JOURNAL_NONCE);
	eos_put_le64(val + EOS_JOURNAL_NONCE, floor);
	return eos_session_batch_put(b, &key, 1, val, sizeof(val));
}

uint64_t
eos_journal_floor_locked(struct eos_view *v)
{
	return atomic_load(&v->journal.next_seq) - 1;
}

/* A new incarnation of the session: a fresh nonce, recorded before any file carries it. */
static int
make_nonce(struct eos_view *v)
{
	EOS_CLEANUP(eos_session_batch_freep) struct eos_session_batch *b = NULL;
	struct eos_journal *j = &v->journal;
	uint8_t key = KEY_JOURNAL;
	int r;

	if (getrandom(j->nonce, sizeof(j->nonce), 0) != (ssize_t)sizeof(j->nonce))
		return eos_neg_errno();
	r = eos_delta_batch(v, &b);
	r = r ?: eos_session_batch_put(b, &key, 1, j->nonce, sizeof(j->nonce));
	r = r ?: eos_delta_commit(v, b, EOS_COMMIT_DIRECT);
	if (r == 0)
		j->have_nonce = true;
	return r;
}

/* --- replay ----------------------------------------------------------------------------------- */

static void
apply_copyup(struct eos_node *n, const struct jrec *r)
{
	if (r->copyup == EOS_JCOPYUP_NONE)
		return;
	n->flags |= EOS_NODE_DATA;
	if (r->copyup == EOS_JCOPYUP_PARTIAL) {
		n->flags |= EOS_NODE_PARTIAL;
		eos_writelog_release(&n->x->present);
		n->x->lower_limit = r->lower_limit;
	}
}

static int
replay_write(struct eos_node *n, const struct jrec *r)
{
	int e;

	apply_copyup(n, r);
	e = eos_writelog_add(&n->x->log, r->start, r->end, r->op);
	if (e == 0 && n->flags & EOS_NODE_PARTIAL)
		e = eos_writelog_add(&n->x->present, r->start, r->end, 0);
	if (e < 0)
		return e;
	n->size = r->size;
	n->mtime = n->x->ctime = r->mtime_ns;
	n->flags |= EOS_NODE_LOG_DIRTY;
	return 0;
}

/* As truncate_fields() (fs/file.c) did, over the copy-up the record carries. */
static void
replay_trunc(struct eos_node *n, const struct jrec *r)
{
	apply_copyup(n, r);
	eos_partial_truncate(n, r->size);
	n->size = r->size;
	eos_writelog_truncate(&n->x->log, r->size);
	n->mtime = r->mtime_ns;
	n->x->ctime = r->ctime_ns;
	n->flags |= EOS_NODE_LOG_DIRTY;
}

static void
replay_attr(struct eos_node *n, const struct jrec *r)
{
	n->mode = (n->mode & S_IFMT) | r->mode;
	n->uid = r->uid;
	n->gid = r->gid;
	n->x->atime = r->atime_ns;
	n->mtime = r->mtime_ns;
	n->x->ctime = r->ctime_ns;
}

/* Apply r to its node when the node's records do not include it yet. */
static int
replay_one(struct eos_view *v, const struct jrec *r)
{
	struct eos_node *n = eos_node_get(v, r->ino);
	int e = 0;

	if (!n || !(n->flags & EOS_NODE_UPPER) || r->seq <= n->x->jseq)
		return 0; /* removed since, or already in its records */
	if (r->type == REC_ATTR)
		replay_attr(n, r);
	else if (r->type == REC_TRUNC)
		replay_trunc(n, r);
	else
		e = replay_write(n, r);
	if (e < 0)
		return e;
	if (r->aflags & ATTR_META_CHANGED) /* 0 in a write's record */
		n->flags |= EOS_NODE_META_CHANGED;
	n->x->jseq = r->seq;
	n->flags |= EOS_NODE_DIRTY;
	return 0;
}

static bool
header_ok(const struct eos_journal *j, const uint8_t *h, uint64_t gen)
{
	return memcmp(h, MAGIC, sizeof(MAGIC)) == 0 && eos_get_le64(h + 8) == gen &&
	       memcmp(h + 16, j->nonce, EOS_JOURNAL_NONCE) == 0;
}

/* What the journal holds: batch images (newest value per record) and the other records. */
struct eos_jreplay {
	struct eos_recmap images;
	struct eos_recent *over; /* images, sorted */
	size_t nover;
	struct jrec *recs; /* in journal order */
	size_t n, cap;
	uint64_t max_seq, next;
};

void
eos_jreplay_free(struct eos_jreplay *jr)
{
	if (!jr)
		return;
	free(jr->over);
	eos_recmap_release(&jr->images);
	free(jr->recs);
	free(jr);
}

const struct eos_recent *
eos_jreplay_images(const struct eos_jreplay *jr, size_t *ret_n)
{
	*ret_n = jr->nover;
	return jr->over;
}

/*
 * The image that follows header r; false when torn (short or not matching its hash). An image
 * at or below the floor is in the store already: it is checked, not applied (applying it would
 * take its records back to older values).
 */
static int
read_image(FILE *f, const struct jrec *r, uint64_t floor, struct eos_jreplay *jr)
{
	cleanup_free uint8_t *buf = malloc(r->size ? r->size : 1);

	if (!buf)
		return -ENOMEM;
	if (fread(buf, 1, r->size, f) != r->size || eos_hashmap_hash(buf, r->size) != r->start)
		return 0;
	if (r->seq <= floor)
		return 1;
	int e = eos_recmap_add(&jr->images, buf, r->size);

	return e == -EBADMSG ? 0 : e < 0 ? e : 1;
}

static int
keep_rec(struct eos_jreplay *jr, const struct jrec *r)
{
	if (eos_buf_array_reserve(&jr->recs, &jr->cap, jr->n, sizeof(*jr->recs), 256) < 0)
		return -ENOMEM;
	jr->recs[jr->n++] = *r;
	return 0;
}

/* Read generation gen into jr; false when it belongs to another incarnation (delete it). */
static int
read_file(struct eos_view *v, uint64_t gen, struct eos_jreplay *jr, bool *ret_ours)
{
	char name[40];
	uint8_t h[HEADER_BYTES], rec[RECORD_BYTES];
	cleanup_fclose FILE *f = NULL;
	int fd, r = 0;

	gen_name(gen, name, sizeof(name));
	fd = openat(v->data_dirfd, name, O_RDONLY | O_CLOEXEC);
	f = fd >= 0 ? fdopen(fd, "re") : NULL;
	if (!f) {
		if (fd >= 0)
			close(fd);
		return eos_neg_errno();
	}
	*ret_ours = fread(h, 1, sizeof(h), f) == sizeof(h) && header_ok(&v->journal, h, gen);
	while (*ret_ours && r == 0 && fread(rec, 1, sizeof(rec), f) == sizeof(rec)) {
		struct jrec one;

		if (!rec_decode(rec, &one))
			break; /* torn tail (power loss): what follows was never acknowledged */
		if (one.type == REC_BATCH && (r = read_image(f, &one, v->journal.floor, jr)) <= 0)
			break;
		jr->max_seq = EOS_MAX(jr->max_seq, one.seq);
		r = one.type == REC_BATCH ? 0 : keep_rec(jr, &one);
	}
	return r;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The generations in the data directory, sorted. Caller frees *ret. */
static int
list_gens(struct eos_view *v, uint64_t **ret, size_t *ret_n)
{
	int fd = openat(v->data_dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cleanup_closedir DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	uint64_t *gens = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return eos_neg_errno();
	}
	while ((e = readdir(d))) {
		char *end;
		uint64_t gen;

		if (strncmp(e->d_name, "journal-", 8) != 0)
			continue;
		gen = strtoull(e->d_name + 8, &end, 16);
		if (*end || end == e->d_name + 8)
			continue;
		if (eos_buf_array_reserve(&gens, &cap, n + 1, sizeof(*gens), 8) < 0) {
			free(gens);
			return -ENOMEM;
		}
		gens[n++] = gen;
	}
	if (n > 1)
		qsort(gens, n, sizeof(*gens), cmp_u64);
	*ret = gens;
	*ret_n = n;
	return 0;
}

static void
remove_gen(struct eos_view *v, uint64_t gen)
{
	char name[40];

	gen_name(gen, name, sizeof(name));
	unlinkat(v->data_dirfd, name, 0);
}

/* Read every generation into jr (jr->next: the generation to start). With tidy, those of another
 * incarnation are deleted. */
static int
read_all(struct eos_view *v, bool tidy, struct eos_jreplay *jr)
{
	cleanup_free uint64_t *gens = NULL;
	size_t n = 0;
	int r = list_gens(v, &gens, &n);

	jr->next = n ? gens[n - 1] + 1 : 1;
	v->journal.oldest = jr->next;
	for (size_t i = 0; r == 0 && i < n; i++) {
		bool ours = false;

		r = read_file(v, gens[i], jr, &ours);
		if (r == 0 && !ours && tidy)
			remove_gen(v, gens[i]);
		else if (r == 0 && gens[i] < v->journal.oldest)
			v->journal.oldest = gens[i];
	}
	return r ?: eos_recmap_sorted(&jr->images, &jr->over, &jr->nover);
}

int
eos_journal_read(struct eos_view *v, bool tidy, struct eos_jreplay **ret, struct eos_error *err)
{
	struct eos_jreplay *jr = calloc(1, sizeof(*jr));
	/* without a nonce no generation is ours: they are only listed (and deleted, with tidy) */
	int r = jr ? read_all(v, tidy, jr) : -ENOMEM;

	if (r < 0) {
		eos_jreplay_free(jr);
		return eos_error_set(err, r, "session '%s': cannot read its journal: %s",
				     v->session, strerror(-r));
	}
	*ret = jr;
	return 0;
}

/* Apply the records that are not images over the loaded nodes (images were loaded with them). */
static int
apply_recs(struct eos_view *v, struct eos_jreplay *jr)
{
	int r = 0;

	for (size_t i = 0; r == 0 && i < jr->n; i++)
		r = replay_one(v, &jr->recs[i]);
	return r;
}

/* --- generations ------------------------------------------------------------------------------ */

static int
prealloc(struct eos_journal *j, int fd, uint64_t from)
{
	if (fallocate(fd, FALLOC_FL_KEEP_SIZE, (off_t)from, PREALLOC_BYTES) == 0) {
		j->reserved = from + PREALLOC_BYTES;
		return 0;
	}
	if (errno == EOPNOTSUPP || errno == ENOSYS) {
		j->reserved = UINT64_MAX; /* nothing to reserve with: appends take their chance */
		return 0;
	}
	return eos_neg_errno();
}

/* Create generation gen with its header; returns the fd (O_APPEND) or -errno. */
static int
gen_create(struct eos_view *v, uint64_t gen)
{
	uint8_t h[HEADER_BYTES] = { 0 };
	char name[40];
	cleanup_close int fd = -1;

	gen_name(gen, name, sizeof(name));
	fd = openat(v->data_dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return eos_neg_errno();
	memcpy(h, MAGIC, sizeof(MAGIC));
	eos_put_le64(h + 8, gen);
	memcpy(h + 16, v->journal.nonce, EOS_JOURNAL_NONCE);
	if (write(fd, h, sizeof(h)) != (ssize_t)sizeof(h)) {
		int r = errno ? eos_neg_errno() : -EIO;

		unlinkat(v->data_dirfd, name, 0);
		return r;
	}
	return TAKE_FD(fd);
}

/* Switch appends to a new generation (exclusive lock); the old fd is returned for closing. */
static int
gen_switch(struct eos_view *v, int fd, uint64_t **ret_inos, size_t *ret_n, bool *ret_all)
{
	struct eos_journal *j = &v->journal;
	int old;

	pthread_rwlock_wrlock(&j->lock);
	old = j->fd;
	j->fd = fd;
	j->gen++;
	atomic_store(&j->torn, false);
	atomic_store(&j->bytes, HEADER_BYTES);
	pthread_mutex_lock(&j->room_lock);
	j->reserved = 0;
	pthread_mutex_unlock(&j->room_lock);
	*ret_all = eos_flusher_take(v, ret_inos, ret_n);
	pthread_rwlock_unlock(&j->lock);
	return old;
}

static void
remove_older(struct eos_view *v, uint64_t below)
{
	for (uint64_t g = v->journal.oldest; g < below; g++)
		remove_gen(v, g);
	v->journal.oldest = below;
}

/* Write the records of every replayed (dirty) node; true when all were written. */
static bool
checkpoint_loaded(struct eos_view *v)
{
	bool ok = true;

	for (size_t i = 0; i < EOS_TABLE_SHARDS; i++) {
		struct eos_node_iter it = { 0 };
		struct eos_node *n;

		while ((n = eos_table_next(&v->shards[i], &it))) {
			if (n->flags & (EOS_NODE_DIRTY | EOS_NODE_LOG_DIRTY))
				ok = eos_delta_flush_node(v, n, EOS_COMMIT_CHECKPOINT) == 0 && ok;
			ok = eos_pending_commit_due(v) == 0 && ok;
		}
	}
	return ok;
}

int
eos_journal_open(struct eos_view *v, struct eos_jreplay *jr, struct eos_error *err)
{
	struct eos_journal *j = &v->journal;
	int r = apply_recs(v, jr);

	r = r ?: j->have_nonce ? 0 : make_nonce(v);
	if (r < 0)
		return eos_error_set(err, r, "session '%s': cannot replay its journal: %s",
				     v->session, strerror(-r));
	/* sequence numbers go on above every one the journal, the records and the floor hold: a
	 * record numbered below a node's jseq would be skipped at the next replay */
	uint64_t last = EOS_MAX(EOS_MAX(jr->max_seq, j->floor), j->max_jseq);

	atomic_store(&j->next_seq, EOS_MAX(last, atomic_load(&j->next_seq) - 1) + 1);
	/* the images are written with the replayed nodes' records, then the journal can go */
	eos_pending_absorb(v, &jr->images);
	v->pending.active = true;
	if (checkpoint_loaded(v) && eos_pending_commit(v, false) == 0)
		remove_older(v, jr->next);
	j->gen = jr->next;
	r = gen_create(v, jr->next);
	if (r < 0)
		return eos_error_set(err, r, "session '%s': cannot start its journal: %s",
				     v->session, strerror(-r));
	j->fd = r;
	atomic_store(&j->bytes, HEADER_BYTES);
	return 0;
}

int
eos_journal_replay(struct eos_view *v, struct eos_jreplay *jr, struct eos_error *err)
{
	int r = apply_recs(v, jr);

	if (r < 0)
		return eos_error_set(err, r, "session '%s': cannot replay its journal: %s",
				     v->session, strerror(-r));
	return 0;
}

void
eos_journal_release(struct eos_view *v, bool remove)
{
	struct eos_journal *j = &v->journal;

	if (j->fd >= 0)
		close(j->fd);
	j->fd = -1;
	if (remove && v->data_dirfd >= 0)
		remove_older(v, j->gen + 1);
	pthread_rwlock_destroy(&j->lock);
	pthread_mutex_destroy(&j->rotate_lock);
	pthread_mutex_destroy(&j->room_lock);
}

/* --- appending -------------------------------------------------------------------------------- */

/* Whether the store's filesystem has room for a preallocation of the given kind. */
static int
room_for(struct eos_view *v, enum eos_journal_room room)
{
	struct eos_error err;

	if (room == EOS_JROOM_DATA)
		return eos_fs_room(v, PREALLOC_BYTES);
	if (room == EOS_JROOM_RECORD)
		return eos_store_record_room(v->store, PREALLOC_BYTES, &err) < 0 ? -ENOSPC : 0;
	return 0;
}

int
eos_journal_reserve(struct eos_view *v, enum eos_journal_room room)
{
	struct eos_journal *j = &v->journal;
	int r = 0;

	if (atomic_load(&j->bytes) + PREALLOC_MIN <= j->reserved)
		return 0; /* a racy read: the locked check below decides */
	pthread_rwlock_rdlock(&j->lock);
	pthread_mutex_lock(&j->room_lock);
	if (j->fd >= 0 && atomic_load(&j->bytes) + PREALLOC_MIN > j->reserved)
		r = room_for(v, room) ?: prealloc(j, j->fd, atomic_load(&j->bytes));
	pthread_mutex_unlock(&j->room_lock);
	pthread_rwlock_unlock(&j->lock);
	/* what frees space goes on with what is left: the append takes its chance */
	return room == EOS_JROOM_FREEING ? 0 : r;
}

/*
 * A short write left a torn record, which ends the generation's replay: no later record may
 * follow it, so appends fail until the flusher has started the next generation.
 */
static void
mark_torn(struct eos_view *v)
{
	atomic_store(&v->journal.torn, true);
	eos_flusher_kick(v);
}

/* Cut the two parts of an append (record, image) down to keep bytes in all. */
static void
shorten(struct iovec iov[2], size_t keep)
{
	iov[0].iov_len = EOS_MIN(iov[0].iov_len, keep);
	iov[1].iov_len = EOS_MIN(iov[1].iov_len, keep - iov[0].iov_len);
}

/*
 * Append rec (its seq assigned here) and, for an image, the len bytes at extra, in one write
 * (O_APPEND); the caller holds the journal's lock shared. A generation that grew past the
 * rotation size wakes the flusher at every append: a rotation that failed is retried.
 */
static int
append_locked(struct eos_view *v, struct jrec *rec, const void *extra, size_t len)
{
	struct eos_journal *j = &v->journal;
	uint8_t buf[RECORD_BYTES];
	struct iovec iov[2] = { { buf, sizeof(buf) }, { (void *)extra, len } };
	size_t want = sizeof(buf) + len;
	ssize_t got;

	rec->seq = atomic_fetch_add(&j->next_seq, 1);
	rec_encode(rec, buf);
	/* tests: what a full disk or a signal can leave */
	if (EOS_FAILPOINT("journal.short_append") < 0)
		shorten(iov, want / 2);
	errno = EIO; /* no journal: appends fail */
	got = j->fd >= 0 && !atomic_load(&j->torn) ? writev(j->fd, iov, extra ? 2 : 1) : -1;
	if (got == (ssize_t)want) {
		if (atomic_fetch_add(&j->bytes, want) + want >= ROTATE_BYTES)
			eos_flusher_kick(v);
		return 0;
	}
	if (got >= 0)
		mark_torn(v);
	return got < 0 && errno ? eos_neg_errno() : -EIO;
}

/* Append rec for n (locked) and queue n for the next checkpoint. */
static int
append(struct eos_view *v, struct eos_node *n, struct jrec *rec)
{
	struct eos_journal *j = &v->journal;
	int r = EOS_FAILPOINT("journal.append");

	if (r < 0)
		return r;
	pthread_rwlock_rdlock(&j->lock);
	r = append_locked(v, rec, NULL, 0);
	if (r == 0) {
		n->x->jseq = rec->seq;
		n->x->jcopyup = EOS_JCOPYUP_NONE;
		eos_flusher_queue(v, n);
	}
	pthread_rwlock_unlock(&j->lock);
	return r;
}

int
eos_journal_batch(struct eos_view *v, struct eos_session_batch *b)
{
	struct eos_journal *j = &v->journal;
	enum eos_journal_room room =
		eos_session_batch_frees(b) ? EOS_JROOM_FREEING : EOS_JROOM_RECORD;
	struct eos_error err;
	size_t len;
	const void *ops = eos_session_batch_ops(b, &len);
	int r = EOS_FAILPOINT("journal.append");

	if (len > BATCH_MAX)
		return -EFBIG;
	r = r ?: eos_session_batch_room(b, &err);
	r = r ?: eos_journal_reserve(v, room);
	if (r < 0)
		return r;
	struct jrec rec = { .type = REC_BATCH, .size = len, .start = eos_hashmap_hash(ops, len) };

	pthread_rwlock_rdlock(&j->lock);
	r = append_locked(v, &rec, ops, len);
	if (r == 0)
		eos_pending_add_locked(v, ops, len);
	pthread_rwlock_unlock(&j->lock);
	return r;
}

int
eos_journal_pend(struct eos_view *v, struct eos_session_batch *b)
{
	size_t len;
	const void *ops = eos_session_batch_ops(b, &len);

	pthread_rwlock_rdlock(&v->journal.lock);
	eos_pending_add_locked(v, ops, len);
	pthread_rwlock_unlock(&v->journal.lock);
	return 0;
}

int
eos_journal_wrote(struct eos_view *v, struct eos_node *n, uint64_t start, uint64_t end, uint32_t op)
{
	struct jrec rec = { .ino = n->ino,
			    .type = REC_WRITE,
			    .copyup = n->x->jcopyup,
			    .op = op,
			    .start = start,
			    .end = end,
			    .size = n->size,
			    .mtime_ns = n->mtime,
			    .lower_limit = n->x->lower_limit };

	return append(v, n, &rec);
}

bool
eos_journal_takes(struct eos_view *v, const struct eos_node *n)
{
	struct eos_journal *j = &v->journal;
	bool started;

	if (!(n->flags & EOS_NODE_UPPER))
		return false;
	pthread_rwlock_rdlock(&j->lock);
	started = j->fd >= 0;
	pthread_rwlock_unlock(&j->lock);
	return started;
}

static uint32_t
attr_flags(const struct eos_node *n)
{
	return n->flags & EOS_NODE_META_CHANGED ? ATTR_META_CHANGED : 0;
}

int
eos_journal_attr(struct eos_view *v, struct eos_node *n)
{
	struct jrec rec = { .ino = n->ino,
			    .type = REC_ATTR,
			    .mode = n->mode & 07777,
			    .uid = n->uid,
			    .gid = n->gid,
			    .aflags = attr_flags(n),
			    .atime_ns = eos_node_atime(n),
			    .mtime_ns = n->mtime,
			    .ctime_ns = eos_node_ctime(n) };

	return append(v, n, &rec);
}

int
eos_journal_truncated(struct eos_view *v, struct eos_node *n)
{
	struct jrec rec = { .ino = n->ino,
			    .type = REC_TRUNC,
			    .copyup = n->x->jcopyup,
			    .aflags = attr_flags(n),
			    .size = n->size,
			    .mtime_ns = n->mtime,
			    .ctime_ns = eos_node_ctime(n),
			    .lower_limit = n->x->lower_limit };

	return append(v, n, &rec);
}

/* --- rotation --------------------------------------------------------------------------------- */

bool
eos_journal_rotate_due(struct eos_view *v)
{
	struct eos_journal *j = &v->journal;

	/* a torn generation takes no appends: the next one must start */
	return j->fd >= 0 && (atomic_load(&j->bytes) >= ROTATE_BYTES || atomic_load(&j->torn));
}

static void
rotate_locked(struct eos_view *v)
{
	uint64_t *inos = NULL;
	size_t n = 0;
	bool all = false, ok;
	int fd = gen_create(v, v->journal.gen + 1), old;

	if (fd < 0) {
		eos_log_error("session '%s': cannot rotate its journal: %s", v->session,
			      strerror(-fd));
		return;
	}
	old = gen_switch(v, fd, &inos, &n, &all);
	if (old >= 0)
		close(old);
	ok = eos_flusher_checkpoint(v, inos, n);
	if (all)
		ok = eos_view_persist(v, false, NULL) == 0 && ok;
	ok = eos_pending_commit(v, false) == 0 && ok; /* the old generations' images with them */
	if (ok)
		remove_older(v, v->journal.gen);
	free(inos);
}

void
eos_journal_rotate(struct eos_view *v)
{
	/* a checkpoint writes records: not while a live publish or a fork holds the gate */
	pthread_rwlock_rdlock(&v->gate.writers);
	pthread_mutex_lock(&v->journal.rotate_lock);
	if (v->journal.fd >= 0 && !atomic_load(&v->broken))
		rotate_locked(v);
	pthread_mutex_unlock(&v->journal.rotate_lock);
	pthread_rwlock_unlock(&v->gate.writers);
}

void
eos_journal_commit_pending(struct eos_view *v)
{
	/* not while a live publish or a fork holds the gate: they write them themselves */
	pthread_rwlock_rdlock(&v->gate.writers);
	if (!atomic_load(&v->broken))
		eos_pending_commit(v, false);
	pthread_rwlock_unlock(&v->gate.writers);
}

/* Switch appends to fd (-1: none, appends fail) as generation gen. */
static void
gen_replace(struct eos_journal *j, int fd, uint64_t gen)
{
	pthread_rwlock_wrlock(&j->lock);
	if (j->fd >= 0)
		close(j->fd);
	j->fd = fd;
	j->gen = gen;
	j->oldest = gen;
	atomic_store(&j->torn, false);
	atomic_store(&j->bytes, HEADER_BYTES);
	pthread_mutex_lock(&j->room_lock);
	j->reserved = 0;
	pthread_mutex_unlock(&j->room_lock);
	pthread_rwlock_unlock(&j->lock);
}

int
eos_journal_restart(struct eos_view *v, struct eos_error *err)
{
	struct eos_journal *j = &v->journal;
	uint64_t gen = j->gen + 1;
	int r = make_nonce(v);
	int fd = r < 0 ? r : gen_create(v, gen);

	/* without a journal of the new incarnation, writes must fail rather than go unrecorded */
	gen_replace(j, fd >= 0 ? fd : -1, gen);
	if (fd < 0)
		return eos_error_set(err, fd, "session '%s': cannot start its new journal: %s",
				     v->session, strerror(-fd));
	return 0;
}
