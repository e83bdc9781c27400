noinst_LIBRARIES += common/libeos-common.a
common_libeos_common_a_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(CRYPTO_CFLAGS)
common_libeos_common_a_SOURCES = \
	common/error.c common/error.h \
	common/cleanup.h \
	common/log.c common/log.h \
	common/path.c common/path.h \
	common/buf.c common/buf.h \
	common/digest.c common/digest.h \
	common/json.c common/json.h \
	common/errkind.c common/errkind.h \
	common/catalog.c common/catalog-ops.c common/catalog.h \
	common/catalog-schema.c common/catalog-schema.h \
	common/mcp.c common/mcp-call.c common/mcp.h common/mcp-internal.h \
	common/mcp-run.c common/mcp-run.h \
	common/quote.c common/quote.h \
	common/hashmap.c common/hashmap.h \
	common/ino.c common/ino.h \
	common/statedir.c common/statedir.h \
	common/clock.c common/clock.h \
	common/mutex.c common/mutex.h \
	common/failpoint.h \
	common/endian.h
if EOS_FAILPOINTS
common_libeos_common_a_SOURCES += common/failpoint.c
endif
COMMON_LIBS = common/libeos-common.a $(JANSSON_LIBS) $(CRYPTO_LIBS)
