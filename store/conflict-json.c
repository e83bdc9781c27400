/* SPDX-License-Identifier: MIT */
/* store/conflict-json: a publish conflict as JSON (eos_conflict_json(), store/store.h). */
#include <string.h>

#include "common/json.h"

#include "store/store.h"

static json_t *
str_json(const char *s)
{
	return eos_json_bytes(s, strlen(s));
}

static json_t *
lines_json(const struct eos_conflict *k)
{
	json_t *arr = json_array();

	for (size_t i = 0; arr && i < k->nlines; i++) {
		const struct eos_conflict_lines *l = &k->lines[i];

		eos_json_push(arr, json_pack("{s:I,s:I,s:I,s:I,s:I,s:I}", "base_start",
					     (json_int_t)l->base_start, "base_count",
					     (json_int_t)l->base_count, "head_start",
					     (json_int_t)l->head_start, "head_count",
					     (json_int_t)l->head_count, "session_start",
					     (json_int_t)l->session_start, "session_count",
					     (json_int_t)l->session_count));
	}
	return arr;
}

json_t *
eos_conflict_json(const struct eos_conflict *k)
{
	return json_pack("{s:o,s:s,s:o,s:s,s:s,s:s,s:o,s:o}", "path", str_json(k->path), "kind",
			 eos_conflict_kind_name(k->kind), "detail",
			 k->detail ? str_json(k->detail) : json_null(), "base", k->base_fp, "head",
			 k->head_fp, "session", k->session_fp, "lines", lines_json(k), "message",
			 str_json(k->message ? k->message : ""));
}
