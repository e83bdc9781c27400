/* SPDX-License-Identifier: MIT */
/*
 * supervisor/files: the file operations (file_read, file_write, file_edit, file_list,
 * file_blame) in a session (files.c: through the session's live view's path operations,
 * never a mount of it: fs/view.h) and at the head (files-head.c: the store's read API, blind
 * writes through the publish gate), and what both share (files-text.c: lines, edits, paths).
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/error.h"

#include "supervisor/daemon.h"

enum {
	EOSD_READ_MAX = 16 << 20, /* bytes of content file_read returns at most */
	EOSD_EDIT_MAX = 64 << 20, /* bytes of a file file_edit rewrites at most */
	EOSD_BLOCK = 64 << 10,	  /* read size */
};

/* Collects lines [offset, offset + limit) of a stream of blocks, and counts all lines. */
struct eosd_lines {
	uint64_t offset, limit; /* 1-based first line; lines at most */
	uint64_t line;		/* 1-based number of the line the next byte belongs to */
	bool in_line;		/* bytes of line `line` seen (a last line without '\n' counts) */
	struct eos_buf out;
	uint64_t taken; /* lines in out */
	bool capped;	/* a selected line did not fit in EOSD_READ_MAX */
};

void eosd_lines_init(struct eosd_lines *l, uint64_t offset, uint64_t limit);
int eosd_lines_feed(struct eosd_lines *l, const char *p, size_t n);
/* {"path", "content", "offset", "lines", "total_lines", "truncated"}; releases l's buffer. */
json_t *eosd_lines_json(struct eosd_lines *l, const char *path);

/*
 * Apply the edits ([{old_string, new_string, replace_all}], validated by the catalog) to text
 * in order, each on the result of the ones before: -EINVAL naming the edit (0-based, as the
 * catalog counts them), the path and why when an old_string matches nowhere, or more than once
 * without replace_all; text is unchanged then. *ret_replaced counts the replacements.
 */
int eosd_edits_apply(const char *path, const json_t *edits, struct eos_buf *text,
		     size_t *ret_replaced, struct eos_error *err);

/* Refuse an absolute path or one with a ".." component, naming it. "" is the root. */
int eosd_path_check(const char *path, struct eos_error *err);

/* The request's id, or a new req-<hex> into buf. */
const char *eosd_request_id(const struct eosd_call *c, char *buf, size_t size);

/* The head side (files-head.c). */
int eosd_head_read(struct eosd *d, struct eosd_call *c, const char *path, json_t **out,
		   struct eos_error *err);
int eosd_head_list(struct eosd *d, struct eosd_call *c, const char *path, json_t **out,
		   struct eos_error *err);
/* Read the whole file at the head into text (at most EOSD_EDIT_MAX bytes); *ret_version gets
 * the head it was read at and *ret_mode its permission bits. */
int eosd_head_load(struct eosd *d, const char *sandbox, const char *path, struct eos_buf *text,
		   uint64_t *ret_version, uint32_t *ret_mode, struct eos_error *err);
/* Write text as path's content at the head through the gate (base 0: blind; else checked and
 * merged against base), owned by operation:<request_id>. */
int eosd_head_write(struct eosd *d, struct eosd_call *c, const char *path,
		    const struct eos_buf *text, uint64_t base, json_t **out, struct eos_error *err);
