# eosd, the supervisor daemon (DESIGN §5): its modules in supervisor/libeosd.a (linked by eosd
# and by the unit tests), main.c on top. The sessions' sources come from supervisor/session.mk.
noinst_LIBRARIES += supervisor/libeosd.a
supervisor_libeosd_a_CFLAGS = $(AM_CFLAGS) $(EVENT_CFLAGS) $(JANSSON_CFLAGS)
supervisor_libeosd_a_SOURCES = supervisor/daemon.h \
	supervisor/pool.h supervisor/pool.c supervisor/fusepool.h supervisor/fusepool.c \
	supervisor/auth.h supervisor/auth.c \
	supervisor/gateway.h supervisor/gateway-internal.h supervisor/gateway.c \
	supervisor/gateway-request.c supervisor/gateway-reply.c supervisor/stream.h \
	supervisor/ops.h supervisor/ops.c supervisor/sandbox-ops.c \
	supervisor/runfiles.h supervisor/runfiles.c \
	supervisor/gateway-kept.c supervisor/gateway-console.c \
	supervisor/console.h supervisor/console.c supervisor/gateway-mcp.c \
	supervisor/mcp-http.h supervisor/mcp-http-internal.h supervisor/mcp-http.c \
	supervisor/mcp-http-call.c \
	supervisor/obs.h supervisor/obs-internal.h supervisor/obs.c supervisor/obs-follow.c \
	supervisor/obs-ops.c supervisor/obs-snapshot.c supervisor/obs-layers.c supervisor/obs-record.c \
	supervisor/cgroup.h supervisor/cgroup-internal.h supervisor/cgroup.c \
	supervisor/cgroup-detect.c supervisor/cgroup-ops.c \
	supervisor/commands.h supervisor/commands-internal.h supervisor/commands.c \
	supervisor/commands-run.c supervisor/commands-store.c supervisor/commands-ops.c
EOSD_LIBS = supervisor/libeosd.a $(FS_LIBS) $(EVENT_LIBS) $(SECCOMP_LIBS)
include supervisor/session.mk
include supervisor/console.mk
include supervisor/holder/holder.mk

bin_PROGRAMS += supervisor/eosd
supervisor_eosd_SOURCES = supervisor/main.c
supervisor_eosd_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
supervisor_eosd_LDADD = $(EOSD_LIBS)
