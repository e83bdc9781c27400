/* SPDX-License-Identifier: MIT */
/*
 * store/chunk-mem: the memory of the chunk cache's chunks, apart from malloc's heap.
 *
 * Cached chunks live long and come in many sizes (16–256 KiB); malloc's short-lived buffers (a
 * chunk read's frame and decode buffers) fall into the holes they leave, so the heap kept
 * growing and a miss touched fresh pages — about 25 page faults per 64 KiB chunk, and a heap of
 * 420 MB for a 256 MiB cache after a random read of a 256 MiB file (bench/README.md). The pool is
 * one reservation of address space, in transparent huge pages where the kernel offers them,
 * carved in 4 KiB pages: a free list per size, a never-used tail, and a larger free block split
 * when a size has none. Memory stays in the pool once touched (the cache bounds what it holds).
 * A request the pool cannot serve gets NULL and the caller uses malloc(). Thread-safe.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct eos_chunk_mem;

/* Reserve bytes of address space (nothing is touched). Returns 0, or -ENOMEM. */
int eos_chunk_mem_new(size_t bytes, struct eos_chunk_mem **ret);
/* Give the reservation back once every block is released; NULL-safe. */
void eos_chunk_mem_unref(struct eos_chunk_mem *m);
/* A block of at least len bytes, or NULL (too large, or no room): use malloc() then. */
void *eos_chunk_mem_alloc(struct eos_chunk_mem *m, size_t len);
/*
 * Prefaulting: the first write to fresh pool memory costs a page fault that zeroes a huge page
 * (a fifth of a view's CPU on cold random reads, more in a VM whose host backs guest memory on
 * first touch). eos_chunk_mem_prefault() populates the pages just past the never-used tail
 * (MADV_POPULATE_WRITE, 4 MiB ahead, never past the reservation) so that a host can pay that
 * cost on a background thread instead of on a read. The pool starts no thread of its own:
 * eos_chunk_mem_prefault_due() says when a prefault would help (cheap, lock-free), and the host
 * calls eos_chunk_mem_prefault() from its own thread. Both are NULL-safe and thread-safe; a
 * kernel without MADV_POPULATE_WRITE (before 5.14) turns prefaulting off.
 */
bool eos_chunk_mem_prefault_due(struct eos_chunk_mem *m);
void eos_chunk_mem_prefault(struct eos_chunk_mem *m);
/* Whether p lies in the pool (NULL-safe). */
bool eos_chunk_mem_owns(const struct eos_chunk_mem *m, const void *p);
/* Return p (of len bytes) to the pool if it is the pool's; false: it is malloc()'s. */
bool eos_chunk_mem_release(struct eos_chunk_mem *m, void *p, size_t len);
