/* SPDX-License-Identifier: MIT */
#include "common/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static atomic_int log_level = EOS_LOG_WARNING;
static const char *log_program = "eos";

static const char *const level_names[] = {
	[EOS_LOG_ERROR] = "error",
	[EOS_LOG_WARNING] = "warning",
	[EOS_LOG_INFO] = "info",
	[EOS_LOG_DEBUG] = "debug",
};

void
eos_log_set_level(enum eos_log_level level)
{
	atomic_store(&log_level, (int)level);
}

void
eos_log_set_program(const char *name)
{
	log_program = name;
}

void
eos_log_init_from_env(void)
{
	const char *v = getenv("EOS_LOG");

	if (!v)
		return;
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++)
		if (strcmp(v, level_names[i]) == 0)
			eos_log_set_level((enum eos_log_level)i);
}

void
eos_log(enum eos_log_level level, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	if ((int)level > atomic_load(&log_level))
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: %s: %s\n", log_program, level_names[level], line);
}
