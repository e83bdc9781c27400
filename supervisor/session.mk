# The sessions of eosd (supervisor/session.h): included by supervisor/local.mk.
supervisor_libeosd_a_SOURCES += supervisor/session.h supervisor/session.c \
	supervisor/session-internal.h supervisor/session-mount.c supervisor/session-ops.c \
	supervisor/session-publish.c supervisor/files.h supervisor/files.c \
	supervisor/files-head.c supervisor/files-text.c
