/* SPDX-License-Identifier: MIT */
/*
 * Logging. Library modules log at debug level at most; main programs log once, at the top, and
 * set the level (EOS_LOG environment variable: error, warning, info, debug). Messages go to
 * stderr as "eos: level: message".
 */
#pragma once

#include "common/error.h"

enum eos_log_level {
	EOS_LOG_ERROR,
	EOS_LOG_WARNING,
	EOS_LOG_INFO,
	EOS_LOG_DEBUG,
};

/* Set the threshold; messages above it are dropped. Thread-safe (atomic). */
void eos_log_set_level(enum eos_log_level level);
/* Read EOS_LOG from the environment, if set. */
void eos_log_init_from_env(void);
/* Set the program name printed before each message (borrowed; pass a string literal). */
void eos_log_set_program(const char *name);
void eos_log(enum eos_log_level level, const char *fmt, ...) EOS_PRINTF(2, 3);

#define eos_log_error(...) eos_log(EOS_LOG_ERROR, __VA_ARGS__)
#define eos_log_warn(...)  eos_log(EOS_LOG_WARNING, __VA_ARGS__)
#define eos_log_info(...)  eos_log(EOS_LOG_INFO, __VA_ARGS__)
#define eos_log_debug(...) eos_log(EOS_LOG_DEBUG, __VA_ARGS__)
