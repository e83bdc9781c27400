/* SPDX-License-Identifier: MIT */
/*
 * Mechanical resource cleanup with __attribute__((cleanup)).
 *
 * Declare resources at the top of a block, initialised to NULL or -1:
 *	cleanup_free char *s = NULL;
 *	cleanup_close int fd = -1;
 *	EOS_CLEANUP(eos_buf_freep) struct eos_buf *b = NULL;
 * Ownership leaves a cleanup variable only through TAKE_PTR() / TAKE_FD(). Never jump (goto)
 * past such a declaration.
 */
#pragma once

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define EOS_CLEANUP(fn) __attribute__((cleanup(fn)))

/* Generate `static inline void func##p(type *p)` calling func(*p) when *p is non-NULL. */
#define EOS_DEFINE_CLEANUP(type, func)      \
	static inline void func##p(type *p) \
	{                                   \
		if (*p)                     \
			func(*p);           \
	}

static inline void
eos_freep(void *p)
{
	free(*(void **)p);
}

static inline void
eos_closep(int *fd)
{
	if (*fd >= 0)
		close(*fd);
}

static inline void
eos_fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

static inline void
eos_closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}

#define cleanup_free	 EOS_CLEANUP(eos_freep)
#define cleanup_close	 EOS_CLEANUP(eos_closep)
#define cleanup_fclose	 EOS_CLEANUP(eos_fclosep)
#define cleanup_closedir EOS_CLEANUP(eos_closedirp)

/* Return the pointer and reset the variable to NULL: ownership moves to the caller. */
#define TAKE_PTR(p)                                \
	({                                         \
		__typeof__(p) eos_take_tmp_ = (p); \
		(p) = NULL;                        \
		eos_take_tmp_;                     \
	})

/* Return the fd and reset the variable to -1. */
#define TAKE_FD(fd)                      \
	({                               \
		int eos_take_fd_ = (fd); \
		(fd) = -1;               \
		eos_take_fd_;            \
	})

#define EOS_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define EOS_MIN(a, b)	  ((a) < (b) ? (a) : (b))
#define EOS_MAX(a, b)	  ((a) > (b) ? (a) : (b))
