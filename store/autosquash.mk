# SPDX-License-Identifier: MIT
# store/autosquash.c: the automatic squash policy.
# store/squash*.c: the squash planned without a lock and written under the writer lock.
store_libeos_store_a_SOURCES += store/squash.h store/squash-refs.c store/squash-write.c \
	store/autosquash.c
