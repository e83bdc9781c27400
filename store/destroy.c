/* SPDX-License-Identifier: MIT */
/*
 * eos_store_sandbox_destroy: drop every key of one sandbox and its chunk references in one synced
 * batch. Keys of a sandbox all start with its be64 number, so each column family loses one range.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/endian.h"
#include "common/error.h"

#include "store/entry.h"
#include "store/kv.h"
#include "store/refs.h"
#include "store/sandbox.h"
#include "store/store-internal.h"

/* -1 for the content of every file record of the sandbox (all versions). */
static int
drop_refs(struct eos_store *st, const char *id, uint64_t sbx, struct eos_refdelta *d,
	  struct eos_error *err)
{
	EOS_CLEANUP(eos_kv_iter_freep) struct eos_kv_iter *it = NULL;
	uint8_t lo[8], hi[8];
	int r;

	eos_put_be64(lo, sbx);
	eos_put_be64(hi, sbx + 1);
	r = eos_kv_iter_new(st->kv, EOS_CF_ENTRIES, NULL, hi, sizeof(hi), EOS_KV_ITER_NO_CACHE_FILL,
			    &it);
	if (r < 0)
		return eos_error_set(err, r, "destroy '%s': iterate entries", id);
	for (eos_kv_iter_seek(it, lo, sizeof(lo)); eos_kv_iter_valid(it); eos_kv_iter_next(it)) {
		EOS_CLEANUP(eos_entry_release) struct eos_entry e = { 0 };
		struct eos_entry_key_parts parts;
		size_t klen, vlen;
		const uint8_t *k = eos_kv_iter_key(it, &klen);
		const uint8_t *v = eos_kv_iter_value(it, &vlen);

		eos_entry_init(&e);
		r = eos_entry_key_decode(k, klen, &parts);
		if (r == 0)
			r = eos_entry_decode(v, vlen, parts.version, &e);
		if (r < 0)
			return eos_error_set(err, -EBADMSG, "destroy '%s': corrupt entry record",
					     id);
		if (e.st.kind == EOS_KIND_FILE) {
			r = eos_refdelta_add_content(d, &e.st.content, -1);
			if (r < 0)
				return eos_error_set(err, r, "destroy '%s': out of memory", id);
		}
	}
	return eos_kv_iter_status(it, err);
}

static int
stage_deletes(struct eos_kv_batch *b, const char *id, uint64_t sbx)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf reg = { 0 };
	uint8_t lo[8], hi[8];
	int r;

	eos_put_be64(lo, sbx);
	eos_put_be64(hi, sbx + 1);
	for (size_t i = 0; i < eos_sandbox_cfs_n; i++)
		eos_kv_batch_delete_range(b, eos_sandbox_cfs[i], lo, sizeof(lo), hi, sizeof(hi));
	r = eos_meta_key(&reg, EOS_SANDBOX_GLOBAL, "sandbox:");
	if (r == 0)
		r = eos_buf_append_str(&reg, id);
	if (r < 0)
		return r;
	eos_kv_batch_delete(b, EOS_CF_META, reg.data, reg.len);
	return 0;
}

static int
destroy_locked(struct eos_store *st, const char *id, uint64_t *ret_sbx, struct eos_error *err)
{
	EOS_CLEANUP(eos_kv_batch_freep) struct eos_kv_batch *b = NULL;
	EOS_CLEANUP(eos_refdelta_freep) struct eos_refdelta *d = NULL;
	uint64_t sbx;
	int r;

	r = eos_sandbox_resolve(st, id, &sbx, err);
	if (r < 0)
		return r;
	if (sbx == EOS_SANDBOX_GLOBAL || sbx == UINT64_MAX)
		return eos_error_set(err, -EBADMSG, "destroy '%s': bad sandbox number %llu", id,
				     (unsigned long long)sbx);
	if (eos_kv_batch_new(&b) < 0 || eos_refdelta_new(&d) < 0)
		return eos_error_set(err, -ENOMEM, "destroy '%s': out of memory", id);
	r = drop_refs(st, id, sbx, d, err);
	if (r < 0)
		return r;
	r = stage_deletes(b, id, sbx);
	if (r < 0)
		return eos_error_set(err, r, "destroy '%s': out of memory", id);
	r = eos_refdelta_apply(st, d, b, NULL, err);
	if (r == 0)
		r = eos_kv_batch_write(st->kv, b, true, err);
	if (r < 0)
		return eos_error_prefix(err, r, "destroy '%s'", id);
	eos_sandbox_forget(st, id);
	*ret_sbx = sbx;
	return 0;
}

int
eos_store_sandbox_destroy(struct eos_store *st, const char *id, struct eos_error *err)
{
	uint64_t sbx = 0;
	int r;

	r = eos_sandbox_id_check(id, err);
	if (r < 0)
		return r;
	eos_store_exclusive_begin(st);
	pthread_mutex_lock(&st->write_lock);
	r = destroy_locked(st, id, &sbx, err);
	pthread_mutex_unlock(&st->write_lock);
	eos_store_exclusive_end(st);
	/* the records are gone: the session data directories follow, then the disk space */
	r = r ?: eos_session_dirs_remove(st, id, NULL, err);
	if (r == 0)
		eos_store_reclaim(st, sbx, EOS_RECLAIM_SANDBOX | EOS_RECLAIM_OBJECTS);
	return r;
}
