/* SPDX-License-Identifier: MIT */
/* eos-store blame: who wrote each line of a file (see cli/eos-store.h). */
#include <stdlib.h>

#include "common/cleanup.h"
#include "common/json.h"

#include "cli/eos-store.h"

static json_t *
range_row(const void *item)
{
	const struct eos_blame_range *r = item;

	return json_pack("{s:I,s:I,s:o}", "start_line", (json_int_t)r->start_line, "line_count",
			 (json_int_t)r->line_count, "owner", tool_json_str(r->owner));
}

int
tool_cmd_blame(struct tool *t, const struct tool_args *a)
{
	cleanup_free struct eos_blame_range *ranges = NULL;
	EOS_CLEANUP(json_decrefp) json_t *rows = NULL;
	cleanup_free char *path = NULL;
	struct eos_error err = { 0 };
	struct eos_sandbox_info sb;
	size_t n = 0;
	uint64_t v;
	int r;

	r = tool_sandbox_path(t, a, &sb, &v, &path);
	if (r != TOOL_OK)
		return r;
	r = eos_store_blame(t->st, sb.id, v, path, &ranges, &n, &err);
	if (r < 0)
		return tool_fail(t, r, &err);
	rows = tool_json_rows(ranges, n, sizeof(*ranges), range_row);
	if (!rows)
		return tool_failf(t, -ENOMEM, "out of memory");
	return tool_output(t,
			   json_pack("{s:o,s:o,s:O}", "path", tool_json_str(path), "version",
				     tool_json_layer(v), "ranges", rows),
			   TOOL_RENDER_ALL);
}
