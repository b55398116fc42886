/* Typed, path-named access to contract JSON. Paths are dotted with optional indices:
 * "zoh.deltas", "memory.hybrid_256k.kv_bytes", "decode_flops.positions[2]". Every
 * failure names the path: "missing field zoh.deltas", "zoh.deltas[1] must be a number,
 * got a boolean". JSON booleans are never accepted where a number is required. */
#ifndef LONGMIX_JSONX_H
#define LONGMIX_JSONX_H

#include "longmix.h"

#include <jansson.h>

/* The value at `path`, or LM_ERR_SCHEMA "missing field PATH". */
lm_status lm_json_at(const json_t *root, const char *path, const json_t **out, lm_error *err);
/* An integer (JSON integer only; LM_ERR_TYPE for booleans, reals, strings). */
lm_status lm_json_int(const json_t *root, const char *path, long long *out, lm_error *err);
/* A number: JSON integer or real (LM_ERR_TYPE for booleans and others). */
lm_status lm_json_real(const json_t *root, const char *path, double *out, lm_error *err);
lm_status lm_json_string(const json_t *root, const char *path, const char **out, lm_error *err);

/* A rectangular array of numbers of exactly `ndim` dimensions (1..4): dims[] receives the
 * extents, *data a malloc'd row-major float64 copy (free()). Ragged arrays, booleans and
 * non-numbers are LM_ERR_TYPE / LM_ERR_SHAPE with the offending element's path. */
lm_status lm_json_array(const json_t *root, const char *path, size_t ndim, size_t *dims,
                        double **data, lm_error *err);
/* A 1-D array of integers (booleans rejected): *data malloc'd, *count its length. */
lm_status lm_json_int_array(const json_t *root, const char *path, long long **data,
                            size_t *count, lm_error *err);

#endif
