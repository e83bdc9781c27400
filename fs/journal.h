/* SPDX-License-Identifier: MIT */
/*
 * fs/journal: the session's write journal — what makes a write(2) that returned survive a
 * SIGKILL of the serving process without a store write per request.
 *
 * Every write to a session file appends one fixed-size record (inode, byte range, operation,
 * the file's size and mtime afterwards, and the copy-up that preceded it) to an append-only
 * file in the session's data directory before the write is acknowledged; so does every change
 * of an upper node's mode, owner or times (a SETATTR without a size: all of them afterwards) and
 * every truncation of an upper file (its size, times and copy-up). Every other change of the
 * session's records (a namespace operation, a copy-up, an xattr) appends an image of its batch,
 * whose records reach the store later with many others (fs/pending.c). A
 * killed process loses nothing the kernel already holds: the data file's bytes and the journal's
 * records are both in the page cache. Node records carry the sequence number of the newest record
 * they include (`jseq`), so replaying a journal over the records at mount applies exactly the
 * records that came after each node's last checkpoint, whatever order the two were written in.
 *
 * Generations. The journal is a series of files `journal-<gen>`; appends go to the newest. The
 * flusher rotates once a generation is large: it switches appends to a new file, writes the
 * records of every node journaled since the last rotation (a checkpoint) and the pending
 * records, then deletes the old file. A journal belongs to one incarnation of the session (a random
 * nonce in its header and in the session's 'J' record): files of an earlier incarnation (a session
 * reset by a publish) are deleted at load, never replayed.
 *
 * Locking: appends take the rotation lock shared (O_APPEND writes need no other lock) and the
 * node's lock is held by the caller, so one node's records are in sequence order in the file;
 * rotation takes it exclusively for the switch only, and a commit of the pending records while
 * it takes them (so that its floor covers every image appended before).
 *
 * Durability: the journal is written, not synced. A power loss may lose what was not fsynced
 * (fsync of a file checkpoints its node with a synced store write), as doc/fs.md states.
 */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/cleanup.h"
#include "common/error.h"

struct eos_view;
struct eos_node;

enum eos_jcopyup {
	EOS_JCOPYUP_NONE = 0,
	EOS_JCOPYUP_EMPTY = 1,	 /* the data file was created empty (new file, O_TRUNC) */
	EOS_JCOPYUP_FULL = 2,	 /* the lower content was copied into the data file whole */
	EOS_JCOPYUP_PARTIAL = 3, /* the data file starts sparse (fs/partial.c) */
};

enum {
	EOS_JOURNAL_NONCE = 16,
};

struct eos_journal {
	pthread_rwlock_t lock;	     /* shared: appends; exclusive: switching generations */
	pthread_mutex_t rotate_lock; /* one rotation at a time */
	int fd;			     /* the current generation (O_APPEND), or -1 when not started */
	uint64_t gen;
	_Atomic uint64_t bytes; /* written to the current generation */
	pthread_mutex_t room_lock;
	uint64_t reserved; /* the current generation is preallocated up to here */
	_Atomic uint64_t next_seq;
	uint8_t nonce[EOS_JOURNAL_NONCE];
	bool have_nonce;   /* the session's 'J' record was loaded */
	uint64_t floor;	   /* images up to this sequence number are in the store (from 'J') */
	uint64_t max_jseq; /* the newest journal record a loaded node record includes */
	atomic_bool torn;  /* an append was cut short: no more until the next generation */
	uint64_t oldest;   /* oldest generation still on disk */
};

void eos_journal_init(struct eos_journal *j);
/* Close the current generation; with remove, delete every generation (all checkpointed). */
void eos_journal_release(struct eos_view *v, bool remove);

/*
 * Opening a session: after its nonce was loaded (eos_delta_load_nonce), read every generation of
 * this incarnation (with tidy, delete those of others); load the records with the images over
 * them (eos_jreplay_images, eos_delta_load); then either open the journal or replay it.
 */
struct eos_jreplay;
struct eos_recent;
int eos_journal_read(struct eos_view *v, bool tidy, struct eos_jreplay **ret,
		     struct eos_error *err);
const struct eos_recent *eos_jreplay_images(const struct eos_jreplay *jr, size_t *ret_n);
void eos_jreplay_free(struct eos_jreplay *jr);
EOS_DEFINE_CLEANUP(struct eos_jreplay *, eos_jreplay_free)
/*
 * Make sure the session has a nonce ('J' record), replay the records over the loaded nodes,
 * write the images and the replayed nodes' records, delete the generations read and start a new
 * one: from then on the view's record changes go through the journal (fs/pending.c).
 */
int eos_journal_open(struct eos_view *v, struct eos_jreplay *jr, struct eos_error *err);
/* Replay the records over the loaded nodes in memory only, writing and deleting nothing (a
 * view opened to be inspected). */
int eos_journal_replay(struct eos_view *v, struct eos_jreplay *jr, struct eos_error *err);

/*
 * A change's batch (eos_delta_commit, EOS_COMMIT_JOURNAL): append its image, then add its records
 * to the pending ones; -ENOSPC when the store would refuse it, -EFBIG above 64 MiB.
 */
struct eos_session_batch;
int eos_journal_batch(struct eos_view *v, struct eos_session_batch *b);
/* Records that the journal holds already (a checkpoint's): add them to the pending ones. */
int eos_journal_pend(struct eos_view *v, struct eos_session_batch *b);

/*
 * Make sure the next few appends cannot fail for lack of space (-ENOSPC otherwise), keeping free
 * the store's soft reserve for data (writes), its hard reserve for records (attribute changes,
 * namespace changes); what frees space never fails here.
 */
enum eos_journal_room {
	EOS_JROOM_DATA,
	EOS_JROOM_RECORD,
	EOS_JROOM_FREEING
};
int eos_journal_reserve(struct eos_view *v, enum eos_journal_room room);

/*
 * n (locked) was written: [start, end) by operation op (start == end: only its size or mtime
 * changed), after the copy-up n->jcopyup (consumed). Appends one record and queues n for the
 * next checkpoint. The caller has updated n's size, mtime, log and present ranges already.
 */
int eos_journal_wrote(struct eos_view *v, struct eos_node *n, uint64_t start, uint64_t end,
		      uint32_t op);

/*
 * Whether a change of n (locked) can be journaled instead of written as its record: n has a
 * record to replay over (it is upper) and the journal takes appends.
 */
bool eos_journal_takes(struct eos_view *v, const struct eos_node *n);
/*
 * n's (locked) mode, owner and times were changed: appends one record holding all of them and
 * queues n for the next checkpoint, as eos_journal_wrote() does for a write. The record carries
 * no copy-up: the caller makes sure none waits for its record (n->x->jcopyup).
 */
int eos_journal_attr(struct eos_view *v, struct eos_node *n);
/*
 * n (locked) was truncated to n->size (its mtime and ctime as they are now) after the copy-up
 * n->x->jcopyup (consumed): appends one record and queues n, as eos_journal_wrote() does.
 */
int eos_journal_truncated(struct eos_view *v, struct eos_node *n);

/* Whether the current generation is large enough to rotate. */
bool eos_journal_rotate_due(struct eos_view *v);
/* Rotate: new generation, checkpoint every queued node, delete the old ones (flusher thread). */
void eos_journal_rotate(struct eos_view *v);
/* Write the pending records (fs/pending.c) before the next rotation would (flusher thread). */
void eos_journal_commit_pending(struct eos_view *v);

/* Called by the delta loader for the session's 'J' record (the nonce, and the floor). */
int eos_journal_load_nonce(struct eos_view *v, const void *val, size_t vlen);
/*
 * The floor for a commit of the pending records taken now: every image appended so far is
 * among them. The caller holds the journal's lock exclusively (no append in flight).
 */
uint64_t eos_journal_floor_locked(struct eos_view *v);
/* Stage the session's 'J' record with floor into b (with the commit whose images it covers). */
int eos_journal_stage_floor(struct eos_view *v, uint64_t floor, struct eos_session_batch *b);
