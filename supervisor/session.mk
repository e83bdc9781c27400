# The sessions of eosd (supervisor/session.h): included by supervisor/local.mk.
supervisor_libeosd_a_SOURCES += supervisor/session.h supervisor/session.c
