/* SPDX-License-Identifier: MIT */
/*
 * store/import-tar: what the tar import's two files share — import-tar.c (the passes over the
 * archive, staging) and import-tar-git.c (the git indexes of work trees in the archive).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/archive.h"
#include "store/import.h"

enum tar_kind {
	TAR_DIR,
	TAR_FILE,
	TAR_SYMLINK,
	TAR_NODE,    /* a fifo or a device */
	TAR_SOCKET,  /* skipped, and listed in the result */
	TAR_SPECIAL, /* a type the store cannot hold: refused */
};

/* The final state of one path. */
struct tar_node {
	char *path;
	enum tar_kind kind;
	struct eos_attr attr;
	char *target;	    /* TAR_SYMLINK */
	enum eos_kind node; /* TAR_NODE: FIFO, CHR or BLK */
	uint64_t rdev;	    /* TAR_NODE: the device */
	size_t content;	    /* TAR_FILE: index of the archive entry that holds the bytes */
	uint64_t size;	    /* TAR_FILE */
	size_t link_to;	    /* TAR_FILE: node staged with this content, or SIZE_MAX (itself) */
	bool linked;	    /* TAR_FILE: another node is staged as a link to this one */
	uint8_t oid_len;    /* TAR_FILE: a git index tracks it; the length of its object ids */
	uint8_t *oid;	    /* TAR_FILE: the git object id of its content (pass 2) */
	uint8_t *index;	    /* TAR_FILE: a work tree's or submodule's git index, read in pass 1 */
	char *git_top;	    /* TAR_FILE, a submodule's index: its work tree (eos_tar_git_plan) */
	char *config;	    /* TAR_FILE: a submodule's git config, read in pass 1 */
};

struct tar_scan {
	const char *src;
	struct tar_node *nodes; /* in order of first appearance: parents before children */
	size_t n, cap;
	size_t *table; /* open addressing over nodes: index + 1, 0 = free */
	size_t table_cap;
	struct eos_attr root;
	size_t nentries;
	size_t *primary; /* per archive entry: index + 1 of the node staged with its bytes */
	size_t groups, nlinks, ndirs, nsyms, nnodes;
	uint64_t group_bytes; /* the sizes of the groups' contents */
	struct eos_import_problems specials;
	struct eos_import_result *ret; /* sockets go to its skipped list */
	bool not_tar;
	struct eos_archive_reader *rd; /* pass 1's reader */
	bool git_indexes;	       /* refresh the work trees' git indexes (import-tar-git.c) */
};

/* Index of the node for path[0..len), or SIZE_MAX. */
size_t eos_tar_find(const struct tar_scan *s, const char *path, size_t len);
/* Read the current archive entry's data (size bytes, holes zeroed) into buf. */
int eos_tar_read_mem(struct eos_archive_reader *rd, const char *path, uint64_t size, uint8_t *buf,
		     struct eos_error *err);

/*
 * import-tar-git.c. Pass 1 keeps the bytes of every git index and submodule config
 * (eos_tar_git_read); once the tree is final, eos_tar_git_plan marks the files the indexes track;
 * pass 2 hashes them as git does (eos_tar_git_hash), and after the data eos_tar_git_stage stages
 * each index with the stat data of every entry whose content is the archive's rewritten to what a
 * view shows.
 */
/* Whether pass 1 keeps the bytes of the archive's file at path. */
bool eos_tar_git_wanted(const char *path);
int eos_tar_git_read(struct tar_scan *s, struct tar_node *node, struct eos_error *err);
int eos_tar_git_plan(struct tar_scan *s, struct eos_error *err);
int eos_tar_git_hash(struct tar_node *node, const struct eos_import_job *job,
		     struct eos_error *err);
int eos_tar_git_stage(struct tar_scan *s, struct eos_changeset *cs, struct eos_import_result *ret,
		      struct eos_error *err);
/* Free what the git steps keep of a node. */
void eos_tar_git_release(struct tar_node *node);
