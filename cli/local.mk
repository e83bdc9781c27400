# eos-store: the offline developer tool over the store API (the only program of cli/ that links
# the store; eosctl talks to eosd over the wire).
bin_PROGRAMS += cli/eos-store
cli_eos_store_SOURCES = cli/eos-store.c cli/eos-store.h cli/eos-store-read.c \
	cli/eos-store-admin.c cli/eos-store-session.c cli/eos-store-publish.c \
	cli/eos-store-blame.c cli/eos-store-export.c
cli_eos_store_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
cli_eos_store_LDADD = $(FS_LIBS)
include cli/eosctl.mk
