# fs/: the FUSE session view (library; served by eosfs now, by eosd later).
noinst_LIBRARIES += fs/libeos-fs.a
fs_libeos_fs_a_CFLAGS = $(AM_CFLAGS) $(FUSE_CFLAGS)
fs_libeos_fs_a_SOURCES = \
	fs/view.h fs/view-internal.h fs/view.c \
	fs/inode.c fs/node.c fs/nodetab.c fs/dir.c fs/namespace.c fs/rename.c fs/file.c fs/xattr.c \
	fs/copyup.c fs/txn.c fs/delta.c fs/check.c fs/capture.c fs/links.c fs/partial.c fs/dirlist.c fs/flusher.c \
	fs/capture-internal.h fs/capture-links.c fs/writelog.h fs/writelog.c fs/journal.h fs/journal.c fs/pending.c \
	fs/publish.c fs/publish-live.c fs/gate.c fs/reset.c fs/owners.c fs/ops-internal.h fs/ops.c fs/fuse-mount.c \
	fs/pathops.c
FS_LIBS = fs/libeos-fs.a $(STORE_LIBS) $(FUSE_LIBS) -lpthread

# eosfs: the standalone mounter of session views.
bin_PROGRAMS += fs/eosfs
fs_eosfs_SOURCES = fs/eosfs.c
fs_eosfs_CFLAGS = $(AM_CFLAGS)
fs_eosfs_LDADD = $(FS_LIBS)
