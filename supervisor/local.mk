# eosd, the supervisor daemon (DESIGN §5): its modules in supervisor/libeosd.a (linked by eosd
# and by the unit tests), main.c on top. The sessions' sources come from supervisor/session.mk.
noinst_LIBRARIES += supervisor/libeosd.a
supervisor_libeosd_a_CFLAGS = $(AM_CFLAGS) $(EVENT_CFLAGS) $(JANSSON_CFLAGS)
supervisor_libeosd_a_SOURCES = supervisor/daemon.h
EOSD_LIBS = supervisor/libeosd.a $(FS_LIBS) $(EVENT_LIBS)
include supervisor/session.mk
