/* SPDX-License-Identifier: MIT */
/*
 * common/clock: time for measuring durations.
 */
#pragma once

#include <stdint.h>

/* Nanoseconds on CLOCK_MONOTONIC (never goes back; not a wall-clock time). */
int64_t eos_mono_ns(void);

/* Nanoseconds since the epoch on CLOCK_REALTIME (a wall-clock time: mtimes, created-at). */
int64_t eos_wall_ns(void);
