/* SPDX-License-Identifier: MIT */
/*
 * JSON helpers over jansson (the only module besides the tools that includes <jansson.h>).
 * Builders return new references (caller owns; json_decref()), or NULL on OOM.
 */
#pragma once

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "common/cleanup.h"
#include "common/digest.h"
#include "common/error.h"

/* jansson >= 2.9 provides json_decrefp(): EOS_CLEANUP(json_decrefp) json_t *j = NULL; */

/* Set key to a new value, stealing the reference; returns 0 or -ENOMEM (value freed). */
int eos_json_set(json_t *obj, const char *key, json_t *value);
/* Append a new value to an array, stealing the reference; returns 0 or -ENOMEM. */
int eos_json_push(json_t *arr, json_t *value);
/* An integer that fits JSON's safe range is a number; larger values become strings. */
json_t *eos_json_u64(uint64_t v);
/* A string from bytes that may not be UTF-8: invalid sequences become U+FFFD. */
json_t *eos_json_bytes(const char *p, size_t n);
json_t *eos_json_digest(const struct eos_digest *d);
/* {"error":{"kind":…,"message":…,"code":…}} for err/code. */
json_t *eos_json_error(const char *kind, int code, const struct eos_error *err);
/* Print compact JSON and a newline. Returns 0 or -EIO. */
int eos_json_print_line(FILE *f, const json_t *v);
/* Print indented JSON and a newline. */
int eos_json_print_pretty(FILE *f, const json_t *v);
