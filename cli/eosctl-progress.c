/* SPDX-License-Identifier: MIT */
/*
 * eosctl-progress: what a long-running operation draws on stderr (a terminal) while eosd works:
 * a spinner with the elapsed time, and once eosd sends progress events (doc/eosd.md, "Progress
 * events") the phase, the counts and the rate — with a bar and a percentage when the event
 * names the totals. One line, redrawn in place, cut to the terminal's width, erased before
 * the reply is printed.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "common/clock.h"

#include "cli/eosctl.h"

enum {
	SPINNER_AFTER_MS = 300,
	BAR_WIDTH = 16,
	RATE_AFTER_MS = 500, /* of a phase, before its rate means anything */
	LINE_MAX = 256,
};

void
eosctl_progress_init(struct eosctl_progress *p, const struct eos_op *op)
{
	*p = (struct eosctl_progress){ .op = op, .start_ns = eos_mono_ns() };
}

static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };

/* The unit v is best shown in (an index of units). */
static size_t
unit_of(double v)
{
	size_t u = 0;

	while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024;
		u++;
	}
	return u;
}

/* v in unit u ("12.3"), with the unit's name when named ("12.3 MiB"), in buf. */
static void
fmt_in(char *buf, size_t n, double v, size_t u, bool named)
{
	for (size_t i = 0; i < u; i++)
		v /= 1024;
	snprintf(buf, n, u ? "%.1f%s%s" : "%.0f%s%s", v, named ? " " : "", named ? units[u] : "");
}

/* "1.5 KiB", "12.3 MiB" in buf. */
static void
fmt_size(char *buf, size_t n, double v)
{
	fmt_in(buf, n, v, unit_of(v), true);
}

/* frac (0 to 1) as BAR_WIDTH characters of '#' and '-' in bar. */
static void
fmt_bar(char bar[BAR_WIDTH + 1], double frac)
{
	for (int i = 0; i < BAR_WIDTH; i++)
		bar[i] = i < (int)(frac * BAR_WIDTH + 0.5) ? '#' : '-';
	bar[BAR_WIDTH] = '\0';
}

/* The counts of the last event: "[####----]  45%  1234/3000 files  12.3/28.7 MiB  5.1 MiB/s". */
static void
fmt_counts(const struct eosctl_progress *p, int64_t now, char *buf, size_t n)
{
	char done[32], total[32], speed[32], rate[40] = "";
	char bar[BAR_WIDTH + 1];
	int64_t ms = (now - p->phase_ns) / 1000000;
	double frac;

	fmt_size(done, sizeof(done), (double)p->bytes);
	fmt_size(total, sizeof(total), (double)p->total_bytes);
	if (p->total_bytes) /* "12.3/27.7 MiB" */
		fmt_in(done, sizeof(done), (double)p->bytes, unit_of((double)p->total_bytes),
		       false);
	if (ms >= RATE_AFTER_MS && p->bytes >= p->phase_bytes) {
		fmt_size(speed, sizeof(speed),
			 (double)(p->bytes - p->phase_bytes) * 1000 / (double)ms);
		snprintf(rate, sizeof(rate), " %s/s", speed);
	}
	if (p->total_paths) { /* an export: paths of total, and the contents written so far */
		frac = (double)p->paths / (double)p->total_paths;
		fmt_bar(bar, frac);
		snprintf(buf, n, " [%s] %3d%% %llu/%llu paths %llu files %s%s", bar,
			 (int)(frac * 100), (unsigned long long)p->paths,
			 (unsigned long long)p->total_paths, (unsigned long long)p->files, done,
			 rate);
		return;
	}
	if (p->total_files == 0 && p->total_bytes == 0) {
		snprintf(buf, n, " %llu files %s%s", (unsigned long long)p->files, done, rate);
		return;
	}
	/* Bytes measure big files, counts the cost per file: with both, their mean. */
	if (p->total_bytes && p->total_files)
		frac = ((double)p->bytes / (double)p->total_bytes +
			(double)p->files / (double)p->total_files) /
		       2;
	else if (p->total_bytes)
		frac = (double)p->bytes / (double)p->total_bytes;
	else
		frac = (double)p->files / (double)p->total_files;
	frac = frac > 1 ? 1 : frac;
	fmt_bar(bar, frac);
	snprintf(buf, n, " [%s] %3d%% %llu/%llu files %s/%s%s", bar, (int)(frac * 100),
		 (unsigned long long)p->files, (unsigned long long)p->total_files, done, total,
		 rate);
}

/* The terminal's width (stderr), or 80. */
static size_t
columns(void)
{
	struct winsize ws;

	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1)
		return ws.ws_col;
	return 80;
}

static void
draw(struct eosctl_progress *p, int64_t now)
{
	int64_t ms = (now - p->start_ns) / 1000000;
	bool bar = p->counts && (p->total_files || p->total_bytes || p->total_paths);
	char spin[3] = { "|/-\\"[p->frame++ % 4], ' ', '\0' };
	char line[LINE_MAX], counts[160] = "", cli[128];
	size_t width = columns() - 1;
	int len;

	if (p->counts)
		fmt_counts(p, now, counts, sizeof(counts));
	eosctl_op_cli_name(p->op, cli, sizeof(cli));
	/* a bar moves by itself; otherwise the spinner and the time show that eosd works */
	len = snprintf(line, sizeof(line), "%s%s: %s%s", bar ? "" : spin, cli, p->phase, counts);
	if (len >= 0 && !bar && (size_t)len < sizeof(line))
		len += snprintf(line + len, sizeof(line) - (size_t)len, "%s%lld.%llds",
				p->phase[0] ? " " : "", (long long)(ms / 1000),
				(long long)(ms % 1000 / 100));
	if (len < 0)
		return;
	if ((size_t)len > width && width < sizeof(line))
		line[width] = '\0';
	fprintf(stderr, "\r%s\033[K", line);
	fflush(stderr);
	p->drawn = true;
}

void
eosctl_progress_tick(struct eosctl_progress *p)
{
	int64_t now = eos_mono_ns();

	if (!p->events && (now - p->start_ns) / 1000000 < SPINNER_AFTER_MS)
		return;
	draw(p, now);
}

static uint64_t
field_u64(const json_t *doc, const char *key, bool *found)
{
	const json_t *v = json_object_get(doc, key);

	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return 0;
	*found = true;
	return (uint64_t)json_integer_value(v);
}

void
eosctl_progress_event(struct eosctl_progress *p, const char *data)
{
	json_t *doc = json_loads(data, 0, NULL);
	const char *phase = json_string_value(json_object_get(doc, "phase"));
	int64_t now = eos_mono_ns();
	bool found = false;

	if (!json_is_object(doc)) {
		json_decref(doc);
		return; /* not what eosctl knows how to draw: the spinner goes on */
	}
	if (phase && strcmp(phase, p->phase) != 0) {
		snprintf(p->phase, sizeof(p->phase), "%s", phase);
		p->phase_ns = now;
		p->phase_bytes = field_u64(doc, "bytes", &found);
	}
	p->files = field_u64(doc, "files", &found);
	p->bytes = field_u64(doc, "bytes", &found);
	p->total_files = field_u64(doc, "total_files", &found);
	p->total_bytes = field_u64(doc, "total_bytes", &found);
	p->paths = field_u64(doc, "paths", &found);
	p->total_paths = field_u64(doc, "total_paths", &found);
	p->counts = found &&
		    (p->files || p->bytes || p->total_files || p->total_bytes || p->total_paths);
	p->events = true;
	json_decref(doc);
	draw(p, now);
}

void
eosctl_progress_clear(struct eosctl_progress *p)
{
	if (p->drawn)
		fprintf(stderr, "\r\033[K");
	p->drawn = false;
}
