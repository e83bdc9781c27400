/* SPDX-License-Identifier: MIT */
/*
 * store/ignore: .gitignore matching, written from gitignore(5) and checked against
 * `git check-ignore --no-index` (tests/unit/test-ignore.c). See store/ignore.h.
 *
 * Patterns keep git's quirks where they are observable: only a CR right before the LF is
 * dropped, a UTF-8 byte order mark at the start of a file is skipped, a pattern is cut at a NUL
 * byte, and an anchored pattern's leading run of ordinary characters is compared as a string
 * before the rest is matched as a glob (so "foo**" + "/bar" behaves like "foo" + "**" + "/bar").
 */
#include "config.h"

#include "store/ignore.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/error.h"
#include "common/hashmap.h"

/* One pattern line. */
struct ignore_rule {
	const char *pattern; /* in the file's text: without '!', a leading '/' and a trailing '/' */
	size_t literal;	     /* length of the leading part without glob characters */
	bool negate;	     /* "!pattern": re-include */
	bool dir_only;	     /* "pattern/": directories only */
	bool anchored;	     /* holds a '/': matches the path below the directory, else any name */
};

/* The rules of one .gitignore (no rules when there is none). */
struct ignore_file {
	char *text; /* owned; the patterns point into it */
	struct ignore_rule *rules;
	size_t n, cap;
};

struct eos_ignore {
	eos_ignore_read_fn read;
	void *ctx;
	struct eos_hashmap files; /* directory ("" = root) -> struct ignore_file * */
};

static void
ignore_file_free(struct ignore_file *f)
{
	if (!f)
		return;
	free(f->text);
	free(f->rules);
	free(f);
}
EOS_DEFINE_CLEANUP(struct ignore_file *, ignore_file_free)

int
eos_ignore_new(eos_ignore_read_fn read, void *ctx, struct eos_ignore **ret)
{
	struct eos_ignore *ig = calloc(1, sizeof(*ig));

	if (!ig)
		return -ENOMEM;
	ig->read = read;
	ig->ctx = ctx;
	*ret = ig;
	return 0;
}

void
eos_ignore_free(struct eos_ignore *ig)
{
	struct eos_hashmap_iter it = { 0 };

	if (!ig)
		return;
	while (eos_hashmap_next(&ig->files, &it))
		ignore_file_free(it.value->ptr);
	eos_hashmap_release(&ig->files);
	free(ig);
}

/* ---- glob matching (wildmatch with a pathname flag: '*', '?' and '[...]' never match '/') ---- */

enum glob_result {
	GLOB_MATCH,
	GLOB_NOMATCH,
	GLOB_ABORT_ALL,	     /* no later start of the text can match either */
	GLOB_ABORT_TO_SLASH, /* only a "**" may look past the next '/' */
};

static enum glob_result glob_at(const char *pat0, const char *p, const char *t);

/* Whether c is in the character class name[0..n). */
static bool
glob_class_has(const char *name, size_t n, unsigned char c, bool *ret)
{
	static const struct {
		const char *name;
		int (*fn)(int);
	} classes[] = {
		{ "alnum", isalnum }, { "alpha", isalpha }, { "blank", isblank },
		{ "cntrl", iscntrl }, { "digit", isdigit }, { "graph", isgraph },
		{ "lower", islower }, { "print", isprint }, { "punct", ispunct },
		{ "space", isspace }, { "upper", isupper }, { "xdigit", isxdigit },
	};

	for (size_t i = 0; i < EOS_ARRAY_SIZE(classes); i++) {
		if (strlen(classes[i].name) == n && memcmp(classes[i].name, name, n) == 0) {
			*ret = classes[i].fn(c) != 0;
			return true;
		}
	}
	return false;
}

/*
 * Match the bracket expression at *pp (its '[') against c and move *pp to its closing ']'.
 * The first member may be ']'; "a-z" ranges, "\x" escapes, "[:class:]" and '!' or '^' negation.
 * GLOB_ABORT_ALL for an unterminated or malformed expression (it never matches).
 */
static enum glob_result
glob_bracket(const char **pp, unsigned char c)
{
	const unsigned char *p = (const unsigned char *)*pp + 1;
	bool negate = *p == '!' || *p == '^', found = false, first = true;
	unsigned char prev = 0, lo;

	if (negate)
		p++;
	for (; first || *p != ']'; first = false, p++) {
		if (*p == '\0')
			return GLOB_ABORT_ALL;
		if (*p == '\\') {
			if (*++p == '\0')
				return GLOB_ABORT_ALL;
			found |= *p == c, prev = *p;
		} else if (*p == '-' && prev && p[1] && p[1] != ']') {
			lo = prev, p++;
			if (*p == '\\' && *++p == '\0')
				return GLOB_ABORT_ALL;
			found |= c >= lo && c <= *p, prev = 0;
		} else if (*p == '[' && p[1] == ':') {
			const char *name = (const char *)p + 2, *end = strstr(name, ":]");
			bool in = false;

			if (!end || memchr(name, ']', (size_t)(end - name)) != NULL) {
				found |= c == '[', prev = '[';
				continue;
			}
			if (!glob_class_has(name, (size_t)(end - name), c, &in))
				return GLOB_ABORT_ALL;
			found |= in, prev = 0, p = (const unsigned char *)end + 1;
		} else {
			found |= *p == c, prev = *p;
		}
	}
	*pp = (const char *)p;
	return found != negate && c != '/' ? GLOB_MATCH : GLOB_NOMATCH;
}

/* p points at a run of '*': match it and the rest of the pattern against t. */
static enum glob_result
glob_star(const char *pat0, const char *p, const char *t)
{
	const char *stars = p;
	bool any_depth = false; /* a "**" path component: may match '/' */
	enum glob_result r;

	while (*p == '*')
		p++;
	if (p - stars >= 2 && (stars == pat0 || stars[-1] == '/') && (*p == '\0' || *p == '/')) {
		/* "**" + "/": first try matching no directory at all */
		if (*p == '/' && glob_at(pat0, p + 1, t) == GLOB_MATCH)
			return GLOB_MATCH;
		any_depth = true;
	}
	if (*p == '\0')
		return any_depth || !strchr(t, '/') ? GLOB_MATCH : GLOB_ABORT_TO_SLASH;
	if (!any_depth && *p == '/') {
		/* "*" + "/": the star takes the rest of this path component */
		const char *slash = strchr(t, '/');

		return slash ? glob_at(pat0, p + 1, slash + 1) : GLOB_ABORT_ALL;
	}
	for (; *t; t++) {
		r = glob_at(pat0, p, t);
		if (r == GLOB_MATCH || r == GLOB_ABORT_ALL ||
		    (r == GLOB_ABORT_TO_SLASH && !any_depth))
			return r;
		if (!any_depth && *t == '/')
			return GLOB_ABORT_TO_SLASH;
	}
	return GLOB_ABORT_ALL;
}

/* Match pattern p (a suffix of pat0) against the whole text t. */
static enum glob_result
glob_at(const char *pat0, const char *p, const char *t)
{
	enum glob_result r;

	for (; *p; p++, t++) {
		if (*p == '*')
			return glob_star(pat0, p, t);
		if (*t == '\0')
			return GLOB_ABORT_ALL;
		switch (*p) {
		case '?':
			if (*t == '/')
				return GLOB_NOMATCH;
			break;
		case '[':
			r = glob_bracket(&p, (unsigned char)*t);
			if (r != GLOB_MATCH)
				return r;
			break;
		case '\\':
			/* A trailing '\' matches nothing. */
			if (*++p == '\0')
				return GLOB_NOMATCH;
			/* fall through */
		default:
			if (*p != *t)
				return GLOB_NOMATCH;
			break;
		}
	}
	return *t ? GLOB_NOMATCH : GLOB_MATCH;
}

/* Whether rule r matches name[0..n) (a base name, or a path below the rule's directory). */
static bool
rule_matches(const struct ignore_rule *r, const char *name, size_t n)
{
	if (r->literal > n || memcmp(r->pattern, name, r->literal) != 0)
		return false;
	if (r->pattern[r->literal] == '\0')
		return r->literal == n;
	return glob_at(r->pattern + r->literal, r->pattern + r->literal, name + r->literal) ==
	       GLOB_MATCH;
}

/* ---- parsing ---- */

/* Cut trailing spaces unless escaped with '\'. */
static void
trim_trailing_spaces(char *s)
{
	char *space = NULL;

	for (char *p = s; *p; p++) {
		if (*p == ' ') {
			if (!space)
				space = p;
			continue;
		}
		if (*p == '\\' && *++p == '\0')
			return;
		space = NULL;
	}
	if (space)
		*space = '\0';
}

/* Parse one line (NUL-terminated, in f->text) into a rule, unless it holds none. */
static int
ignore_add_line(struct ignore_file *f, char *line)
{
	struct ignore_rule r = { 0 };
	size_t len;

	if (line[0] == '#')
		return 0;
	trim_trailing_spaces(line);
	if (line[0] == '!')
		r.negate = true, line++;
	len = strlen(line);
	if (len > 0 && line[len - 1] == '/')
		r.dir_only = true, line[--len] = '\0';
	r.anchored = strchr(line, '/') != NULL;
	if (line[0] == '/')
		line++, len--;
	if (len == 0)
		return 0;
	r.pattern = line;
	r.literal = strcspn(line, "*?[\\");
	if (eos_buf_array_reserve(&f->rules, &f->cap, f->n, sizeof(*f->rules), 8) < 0)
		return -ENOMEM;
	f->rules[f->n++] = r;
	return 0;
}

/* Take text (malloc'd, len bytes) and parse it into f. */
static int
ignore_parse(struct ignore_file *f, char *text, size_t len)
{
	char *p, *nl, *end;
	int r;

	f->text = realloc(text, len + 1);
	if (!f->text) {
		free(text);
		return -ENOMEM;
	}
	f->text[len] = '\0';
	p = f->text, end = p + len;
	if (len >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0)
		p += 3;
	for (; p < end; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		*nl = '\0';
		if (nl > p && nl[-1] == '\r')
			nl[-1] = '\0';
		r = ignore_add_line(f, p);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The rules of directory dir[0..n) ("" = root), read and parsed on first use. */
static int
ignore_file_get(struct eos_ignore *ig, const char *dir, size_t n, struct ignore_file **ret,
		struct eos_error *err)
{
	EOS_CLEANUP(ignore_file_freep) struct ignore_file *f = NULL;
	cleanup_free char *name = strndup(dir, n);
	union eos_hashmap_value *slot = eos_hashmap_find(&ig->files, dir, n);
	char *text = NULL;
	size_t len = 0;
	int r;

	if (slot) {
		*ret = slot->ptr;
		return 0;
	}
	f = calloc(1, sizeof(*f));
	if (!name || !f)
		return eos_error_set(err, -ENOMEM, "gitignore: out of memory");
	r = ig->read(ig->ctx, name, &text, &len, err);
	if (r < 0 && r != -ENOENT)
		return eos_error_prefix(err, r, "read '%s%s.gitignore'", name, n ? "/" : "");
	if (r == -ENOENT)
		eos_error_clear(err);
	if (r >= 0 && ignore_parse(f, text, len) < 0)
		return eos_error_set(err, -ENOMEM, "gitignore: out of memory");
	if (eos_hashmap_put(&ig->files, dir, n, f) < 0)
		return eos_error_set(err, -ENOMEM, "gitignore: out of memory");
	*ret = TAKE_PTR(f);
	return 0;
}

/* The last rule of f that matches path[0..n) (is_dir: a directory) below directory base (its
 * length; 0 = root), or NULL. */
static const struct ignore_rule *
ignore_file_match(const struct ignore_file *f, const char *path, size_t n, size_t base, bool is_dir)
{
	const char *name = memrchr(path, '/', n), *rel = base ? path + base + 1 : path;

	name = name ? name + 1 : path;
	for (size_t i = f->n; i-- > 0;) {
		const struct ignore_rule *r = &f->rules[i];

		if (r->dir_only && !is_dir)
			continue;
		if (r->anchored ? rule_matches(r, rel, (size_t)(path + n - rel))
				: rule_matches(r, name, (size_t)(path + n - name)))
			return r;
	}
	return NULL;
}

/*
 * Whether path (NUL-terminated; n = strlen) is excluded by the .gitignore files of its ancestors,
 * ignoring whether an ancestor itself is: the deepest file with a matching rule decides.
 */
static int
ignore_excluded(struct eos_ignore *ig, const char *path, size_t n, bool is_dir, bool *ret,
		struct eos_error *err)
{
	const struct ignore_rule *rule;
	struct ignore_file *f = NULL;
	size_t base = n;
	int r;

	while (base > 0) {
		const char *slash = memrchr(path, '/', base);

		base = slash ? (size_t)(slash - path) : 0;
		r = ignore_file_get(ig, path, base, &f, err);
		if (r < 0)
			return r;
		rule = ignore_file_match(f, path, n, base, is_dir);
		if (rule) {
			*ret = !rule->negate;
			return 0;
		}
	}
	*ret = false;
	return 0;
}

/* path without leading, trailing and repeated '/' (malloc'd). */
static char *
path_clean(const char *path)
{
	char *out = malloc(strlen(path) + 1), *q = out;

	if (!out)
		return NULL;
	for (const char *p = path; *p; p++)
		if (*p != '/' || (q > out && q[-1] != '/'))
			*q++ = *p;
	if (q > out && q[-1] == '/')
		q--;
	*q = '\0';
	return out;
}

int
eos_ignore_check(struct eos_ignore *ig, const char *path, bool is_dir, bool *ret,
		 struct eos_error *err)
{
	cleanup_free char *p = path_clean(path);
	bool excluded = false;
	size_t n, end = 0;
	int r;

	if (!p)
		return eos_error_set(err, -ENOMEM, "gitignore: out of memory");
	n = strlen(p);
	/* Each ancestor directory first: nothing inside an excluded directory is re-included. */
	while (end < n && !excluded) {
		const char *slash = strchr(p + end, '/');

		end = slash ? (size_t)(slash - p) : n;
		p[end] = '\0';
		r = ignore_excluded(ig, p, end, end < n || is_dir, &excluded, err);
		if (end < n)
			p[end++] = '/';
		if (r < 0)
			return r;
	}
	*ret = excluded;
	return 0;
}
