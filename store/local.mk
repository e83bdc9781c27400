noinst_LIBRARIES += store/libeos-store.a
store_libeos_store_a_CFLAGS = $(AM_CFLAGS) $(ROCKSDB_CFLAGS) $(ZSTD_CFLAGS) $(ARCHIVE_CFLAGS) \
	$(JANSSON_CFLAGS) $(CRYPTO_CFLAGS) $(GIT2_CFLAGS)
store_libeos_store_a_SOURCES = \
	store/store.h store/store-internal.h store/store.c store/store-dir.c store/owner.c \
	store/kv.h store/kv.c store/kv-scan.c store/kv-wal.c \
	store/codec.h store/codec.c \
	store/chunker.h store/chunker.c \
	store/cache.h store/cache.c store/chunk-mem.h store/chunk-mem.c \
	store/content.h store/content.c store/file.c \
	store/entry.h store/entry.c store/kind.c store/read.c \
	store/sandbox.h store/sandbox.c store/layer.c store/lease.c \
	store/refs.h store/refs.c \
	store/changeset.h store/changeset.c store/commit.c store/commit-record.c \
	store/import.h store/import.c store/import-pool.c store/import-tar.h store/import-tar.c \
	store/squash.c store/gc.c store/fsck-internal.h store/fsck.c store/fsck-content.c \
	store/fsck-damage.c store/destroy.c store/stats.c store/obs.h store/obs.c store/layer-usage.c \
	store/publish-parents.c store/session.c store/reclaim.c store/space.h store/space.c
# RocksDB is C++: link with the C++ runtime.
STORE_LIBS = store/libeos-store.a $(COMMON_LIBS) $(ROCKSDB_LIBS) $(ZSTD_LIBS) $(ARCHIVE_LIBS) \
	$(GIT2_LIBS) $(CRYPTO_LIBS) -lstdc++ -lm
# The publish gate and what it needs: each part lists its sources in its own fragment.
include store/publish.mk
include store/git.mk
include store/blame.mk
include store/export.mk
include store/autosquash.mk
