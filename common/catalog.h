/* SPDX-License-Identifier: MIT */
/*
 * The operation catalog (DESIGN §6): the one table of every operation eos serves — its name,
 * surface, arguments with their kinds, defaults and limits, and help. The gateway validates
 * requests against it, eosctl derives its parsing, help and completion from it, and the MCP
 * server its tool schemas. No operation is defined anywhere else.
 *
 * A request names an operation and carries {"request_id", "sandbox_id", "args"}; sandbox_id is
 * not an argument of the table but required by every operation with needs_sandbox.
 * eos_catalog_validate() checks args against the operation and fills in defaults, so a handler
 * sees only well-formed, complete arguments.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

enum eos_surface {
	EOS_SURFACE_MANAGEMENT,
	EOS_SURFACE_RUNTIME,
	EOS_SURFACE_OBSERVABILITY,
	EOS_SURFACE_COUNT
};

enum eos_arg_kind {
	EOS_ARG_STRING, /* any string up to max bytes (max 0: EOS_CATALOG_STRING_MAX) */
	EOS_ARG_INT,	/* an integer in [min, max] */
	EOS_ARG_BOOL,	/* true or false */
	EOS_ARG_ENUM,	/* one of values[] */
	EOS_ARG_ID,	/* an identifier: [A-Za-z0-9._-], 1 to 64 bytes, not starting with '.' */
	EOS_ARG_PATH,	/* a path inside the sandbox: relative, no "..", no NUL; "" is the root */
	EOS_ARG_HOST_PATH, /* an absolute path on the host */
	EOS_ARG_VERSION,   /* a layer: "L000003", "L3" or "3" */
	EOS_ARG_EDITS,	   /* [{old_string, new_string, replace_all?}], 1 to max items */
	EOS_ARG_ENV, /* {"NAME": "value"}: environment names, string values; 0 to max entries */
};

enum {
	EOS_CATALOG_STRING_MAX = 64 << 20, /* bytes of a string argument without its own max */
	EOS_CATALOG_ID_MAX = 64,
	EOS_CATALOG_PATH_MAX = 4096,
	EOS_CATALOG_EDITS_MAX = 1000,
	EOS_CATALOG_ENV_MAX = 256,	   /* entries of an env argument without its own max */
	EOS_CATALOG_ENV_VALUE_MAX = 32768, /* bytes of one env value */
};

struct eos_arg {
	const char *name;
	enum eos_arg_kind kind;
	bool required;
	const char *def;  /* default, as JSON text ("false", "1", "\"tar\""), or NULL */
	int64_t min, max; /* INT: bounds; STRING: max bytes (0: the default); EDITS: max items */
	const char *const *values; /* ENUM: NULL-terminated */
	unsigned positional;	   /* eosctl: 1.. its position on the command line, 0: an option */
	const char *help;
};

struct eos_op {
	const char *name; /* "create_sandbox" */
	enum eos_surface surface;
	bool needs_sandbox;    /* the request must carry sandbox_id */
	const char *cli_group; /* eosctl: "sandbox" in `eosctl sandbox create` */
	const char *cli_verb;  /* eosctl: "create"; "": the group alone (`eosctl trace ID`) */
	const char *help;      /* one line */
	const struct eos_arg *args;
	size_t nargs;
	bool read_only;	   /* changes nothing */
	bool destructive;  /* may delete what the caller cannot get back */
	bool idempotent;   /* repeating it with the same arguments changes nothing more */
	bool long_running; /* runs on the worker pool and may report progress */
	/*
	 * sandbox_id may be given (the operation then covers that sandbox only) or left out (all
	 * of them); a token limited to one sandbox gets that one either way.
	 */
	bool sandbox_optional;
};

/* Every operation, in catalog order; *n receives their number. */
const struct eos_op *eos_catalog_ops(size_t *n);

/* The operation named name, or NULL. */
const struct eos_op *eos_catalog_find(const char *name);

/* The operation eosctl calls `group verb`, or NULL. */
const struct eos_op *eos_catalog_find_cli(const char *group, const char *verb);

/* The argument named name of op, or NULL. */
const struct eos_arg *eos_catalog_arg(const struct eos_op *op, const char *name);

/* "management", "runtime", "observability". */
const char *eos_surface_name(enum eos_surface s);
/* The surface named name, or -EINVAL. */
int eos_surface_parse(const char *name);

/* "string", "integer", "boolean", "enum", "id", "path", "host_path", "version", "edits", "env". */
const char *eos_arg_kind_name(enum eos_arg_kind k);

/*
 * Check args (a JSON object, or NULL for none) against op and add every missing argument that
 * has a default. -EINVAL with a message naming the argument for: an argument op does not have,
 * a missing required one, a value of the wrong kind, a value out of range or not among the
 * enum's values, an id or path that breaks its rules. args is changed only on success.
 */
int eos_catalog_validate(const struct eos_op *op, json_t *args, struct eos_error *err);

/* Check one value against arg (as eos_catalog_validate() does). */
int eos_catalog_check_value(const struct eos_arg *arg, const json_t *v, struct eos_error *err);

/*
 * Parse a command-line word into a value of arg's kind ("3" for INT, "true"/"false" for BOOL,
 * the text for the others; EDITS take JSON), checked as eos_catalog_check_value() does.
 * Caller owns *ret.
 */
int eos_catalog_parse_word(const struct eos_arg *arg, const char *word, json_t **ret,
			   struct eos_error *err);
