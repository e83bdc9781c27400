# eos-holder, the per-session namespace holder (supervisor/holder/, doc/holder.md): a small
# single-threaded binary with libc only (and common/buf.c), installed in libexec; eosd's side
# of it is in supervisor/libeosd.a. Included by supervisor/local.mk.
libexec_PROGRAMS = supervisor/holder/eos-holder
supervisor_holder_eos_holder_SOURCES = supervisor/holder/holder.h supervisor/holder/holder.c \
	supervisor/holder/holder-proto.h supervisor/holder/holder-proto.c \
	supervisor/holder/ns.c supervisor/holder/rootfs.c supervisor/holder/command.c \
	supervisor/holder/proctree.c supervisor/holder/harden.c
supervisor_holder_eos_holder_LDADD = common/libeos-common.a

# The commands' seccomp filter, built by eosd (supervisor/seccomp.c: the only user of libseccomp).
supervisor_libeosd_a_SOURCES += supervisor/seccomp.h supervisor/seccomp.c
supervisor_libeosd_a_CFLAGS += $(SECCOMP_CFLAGS)

# eosd's client for the holder (supervisor/holder-client.h) and the protocol it shares with it.
supervisor_libeosd_a_SOURCES += supervisor/holder/holder-proto.h \
	supervisor/holder/holder-proto.c supervisor/holder-client.h \
	supervisor/holder-client-internal.h supervisor/holder-client.c supervisor/holder-events.c
supervisor_libeosd_a_CPPFLAGS = $(AM_CPPFLAGS) -DEOS_LIBEXECDIR='"$(libexecdir)"'
