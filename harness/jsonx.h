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

/* The most elements lm_json_array copies (2^25 float64 values, 256 MiB). */
#define LM_JSON_ARRAY_MAX ((size_t)1 << 25)

/* A rectangular array of numbers of exactly `ndim` dimensions (1..4): dims[] receives the
 * extents, *data a malloc'd row-major float64 copy (free()). The whole array is checked to
 * be rectangular before anything is allocated. LM_ERR_SHAPE when it is empty along an axis
 * or has fewer dimensions (an array of another shape); a ragged array, which has no shape,
 * is LM_ERR_SCHEMA naming the first sub-array of another extent ("x must be rectangular:
 * x[0][1] has 3 entries where axis 2 has 4"), as is one of more than LM_JSON_ARRAY_MAX
 * elements; booleans and non-numbers LM_ERR_TYPE. */
lm_status lm_json_array(const json_t *root, const char *path, size_t ndim, size_t *dims,
                        double **data, lm_error *err);
/* A 1-D array of integers (booleans rejected): *data malloc'd, *count its length. */
lm_status lm_json_int_array(const json_t *root, const char *path, long long **data,
                            size_t *count, lm_error *err);

#endif
