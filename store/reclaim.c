/* SPDX-License-Identifier: MIT */
/*
 * Space comes back: after destroy, gc and squash have deleted keys, compact the ranges they
 * deleted so that RocksDB drops the deleted tables' data and the blob files no reference points
 * to any more (doc/store-format.md, "Reclaiming space"). Runs at the end of the operation,
 * outside every store lock: the compaction only rewrites files, readers and writers go on.
 */
#include <stdint.h>

#include "common/cleanup.h"
#include "common/endian.h"

#include "store/kv.h"
#include "store/store-internal.h"

enum {
	/* a commit writing this much (or an eighth of a memtable) gets blob files of its own */
	RECLAIM_FLUSH_BYTES = 1 << 20,
};

const enum eos_cf eos_sandbox_cfs[] = {
	EOS_CF_ENTRIES, EOS_CF_LAYERS, EOS_CF_META, EOS_CF_SESSION, EOS_CF_BLAME,
};
const size_t eos_sandbox_cfs_n = EOS_ARRAY_SIZE(eos_sandbox_cfs);

/*
 * A compaction writes its output before deleting its input: skip it when the filesystem could
 * not take one compaction's worth (RocksDB compacts later by itself, once space is back).
 */
static bool
reclaim_has_room(struct eos_store *st)
{
	uint64_t free;

	if (st->space.plan.fs_bytes == 0)
		return true;
	return eos_space_free(&st->space, &free) == 0 && free >= st->space.plan.compaction;
}

void
eos_store_reclaim(struct eos_store *st, uint64_t sbx, enum eos_reclaim_flags flags)
{
	static const enum eos_cf objects[] = { EOS_CF_CHUNKS, EOS_CF_MANIFESTS, EOS_CF_REFS };
	uint8_t lo[8], hi[8];

	if (!reclaim_has_room(st))
		return;
	eos_put_be64(lo, sbx);
	eos_put_be64(hi, sbx + 1);
	if (flags & EOS_RECLAIM_SANDBOX)
		for (size_t i = 0; i < eos_sandbox_cfs_n; i++)
			eos_kv_compact_range(st->kv, eos_sandbox_cfs[i], lo, sizeof(lo), hi,
					     sizeof(hi));
	if (flags & EOS_RECLAIM_ENTRIES)
		eos_kv_compact_range(st->kv, EOS_CF_ENTRIES, lo, sizeof(lo), hi, sizeof(hi));
	/* Digests are random: the deleted chunks are spread over the whole key space. */
	if (flags & EOS_RECLAIM_OBJECTS)
		for (size_t i = 0; i < EOS_ARRAY_SIZE(objects); i++)
			eos_kv_compact_range(st->kv, objects[i], NULL, 0, NULL, 0);
}

/*
 * A blob file holds the chunks of one flush and is deleted only when all of them are. Flushing
 * after each sizeable commit keeps one change set's chunks apart from the next ones', so that a
 * squash or destroy that frees them frees whole files (blob GC is off: doc/store-format.md,
 * "Reclaiming space"). Smaller commits share files. A flush costs a WAL, a table and a blob file,
 * written in the background.
 */
void
eos_store_chunks_committed(struct eos_store *st, uint64_t stored)
{
	uint64_t memtable = eos_kv_write_buffer(st->kv, EOS_CF_CHUNKS);

	if (stored > 0 && stored >= EOS_MIN(memtable / 8, RECLAIM_FLUSH_BYTES))
		eos_kv_flush_async(st->kv, EOS_CF_CHUNKS);
}
