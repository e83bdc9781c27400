bin_PROGRAMS += tools/eos-store
tools_eos_store_SOURCES = tools/eos-store.c tools/eos-store.h tools/eos-store-read.c \
	tools/eos-store-admin.c
tools_eos_store_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tools_eos_store_LDADD = $(STORE_LIBS)
