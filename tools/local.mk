bin_PROGRAMS += tools/eos-store
tools_eos_store_SOURCES = tools/eos-store.c tools/eos-store.h tools/eos-store-read.c \
	tools/eos-store-admin.c tools/eos-store-session.c
tools_eos_store_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tools_eos_store_LDADD = $(FS_LIBS)

bin_PROGRAMS += tools/eosfs
tools_eosfs_SOURCES = tools/eosfs.c
tools_eosfs_CFLAGS = $(AM_CFLAGS)
tools_eosfs_LDADD = $(FS_LIBS)
tools_eos_store_SOURCES += tools/eos-store-publish.c
tools_eos_store_SOURCES += tools/eos-store-blame.c
tools_eos_store_SOURCES += tools/eos-store-export.c
