/* Typed, path-named access to contract JSON (see jsonx.h). */
#include "jsonx.h"
#include "size_budget.h"

#include <stdlib.h>
#include <string.h>

enum { PATH_MAX_TEXT = 256 };

/* Kind of a JSON value in the words an error message uses. */
static const char *kind_name(const json_t *value)
{
    switch (json_typeof(value)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "an unknown value";
}

/* Walks one dotted/indexed path from `node`. */
lm_status lm_json_at(const json_t *root, const char *path, const json_t **out, lm_error *err)
{
    const json_t *node = root;
    const char *p = path;
    char key[PATH_MAX_TEXT];
    while (*p != '\0') {
        if (*p == '[') {
            char *end = NULL;
            unsigned long index = strtoul(p + 1, &end, 10);
            if (end == p + 1 || *end != ']')
                return lm_fail(err, LM_ERR_SCHEMA, "bad path '%s'", path);
            if (!json_is_array(node))
                return lm_fail(err, LM_ERR_TYPE, "%.*s must be an array, got %s",
                               (int)(p - path), path, kind_name(node));
            node = json_array_get(node, index);
            if (node == NULL)
                return lm_fail(err, LM_ERR_SCHEMA, "missing field %.*s (array too short)",
                               (int)(end + 1 - path), path);
            p = end + 1;
            continue;
        }
        if (*p == '.')
            p++;
        size_t length = strcspn(p, ".[");
        if (length == 0 || length >= sizeof key)
            return lm_fail(err, LM_ERR_SCHEMA, "bad path '%s'", path);
        memcpy(key, p, length);
        key[length] = '\0';
        if (!json_is_object(node))
            return lm_fail(err, LM_ERR_TYPE, "%.*s must be an object, got %s",
                           (int)(p - path - (p > path)), path, kind_name(node));
        node = json_object_get(node, key);
        if (node == NULL)
            return lm_fail(err, LM_ERR_SCHEMA, "missing field %.*s", (int)(p + length - path),
                           path);
        p += length;
    }
    *out = node;
    return LM_OK;
}

lm_status lm_json_int(const json_t *root, const char *path, long long *out, lm_error *err)
{
    const json_t *value;
    lm_status status = lm_json_at(root, path, &value, err);
    if (status != LM_OK)
        return status;
    if (!json_is_integer(value))
        return lm_fail(err, LM_ERR_TYPE, "%s must be an integer, got %s", path, kind_name(value));
    *out = (long long)json_integer_value(value);
    return LM_OK;
}

/* A number that is not a boolean; `where` names it in the message. */
static lm_status number_of(const json_t *value, const char *where, double *out, lm_error *err)
{
    if (!json_is_number(value))
        return lm_fail(err, LM_ERR_TYPE, "%s must be a number, got %s", where, kind_name(value));
    *out = json_number_value(value);
    return LM_OK;
}

lm_status lm_json_real(const json_t *root, const char *path, double *out, lm_error *err)
{
    const json_t *value;
    lm_status status = lm_json_at(root, path, &value, err);
    return status != LM_OK ? status : number_of(value, path, out, err);
}

lm_status lm_json_string(const json_t *root, const char *path, const char **out, lm_error *err)
{
    const json_t *value;
    lm_status status = lm_json_at(root, path, &value, err);
    if (status != LM_OK)
        return status;
    if (!json_is_string(value))
        return lm_fail(err, LM_ERR_TYPE, "%s must be a string, got %s", path, kind_name(value));
    *out = json_string_value(value);
    return LM_OK;
}

/* Measures the extents of a nested array along its first elements (a guess that
 * check_rectangular confirms before anything is allocated). */
static lm_status measure(const json_t *value, const char *path, size_t ndim, size_t *dims,
                         lm_error *err)
{
    const json_t *node = value;
    for (size_t axis = 0; axis < ndim; axis++) {
        if (!json_is_array(node))
            return lm_fail(err, LM_ERR_SHAPE, "%s must be a %zu-dimensional array", path, ndim);
        dims[axis] = json_array_size(node);
        if (dims[axis] == 0)
            return lm_fail(err, LM_ERR_SHAPE, "%s must be non-empty along axis %zu", path, axis);
        node = json_array_get(node, 0);
    }
    return LM_OK;
}

/* "path[i][j]" for the first `depth` entries of index. */
static void element_path(char *text, size_t size, const char *path, const size_t *index,
                         size_t depth)
{
    int used = snprintf(text, size, "%s", path);
    for (size_t axis = 0; axis < depth && used >= 0 && (size_t)used < size; axis++)
        used += snprintf(text + used, size - (size_t)used, "[%zu]", index[axis]);
}

/* Every sub-array at every axis has the extent dims[axis], so the element count is the
 * product of dims and every element exists (the file holds it): checked before the copy is
 * allocated, so a ragged array cannot make that product (or its byte count) wrap. */
static lm_status check_rectangular(const json_t *node, const char *path, size_t axis,
                                   size_t ndim, const size_t *dims, size_t *index, lm_error *err)
{
    if (axis == ndim)
        return LM_OK; /* an element: flatten checks it is a number */
    if (!json_is_array(node) || json_array_size(node) != dims[axis]) {
        char where[PATH_MAX_TEXT + 96];
        element_path(where, sizeof where, path, index, axis);
        if (!json_is_array(node))
            return lm_fail(err, LM_ERR_SCHEMA, "%s must be rectangular: %s must be an array of "
                           "%zu entries, got %s", path, where, dims[axis], kind_name(node));
        return lm_fail(err, LM_ERR_SCHEMA, "%s must be rectangular: %s has %zu entries where "
                       "axis %zu has %zu", path, where, json_array_size(node), axis, dims[axis]);
    }
    for (size_t i = 0; i < dims[axis]; i++) {
        index[axis] = i;
        lm_status status = check_rectangular(json_array_get(node, i), path, axis + 1, ndim, dims,
                                             index, err);
        if (status != LM_OK)
            return status;
    }
    return LM_OK;
}

/* Copies a rectangular array (checked) into data, row-major, checking every element. */
static lm_status flatten(const json_t *node, const char *path, size_t axis, size_t ndim,
                         const size_t *dims, size_t *index, double *data, lm_error *err)
{
    if (axis == ndim) {
        lm_error inner;
        if (number_of(node, path, &data[*index], &inner) != LM_OK)
            return lm_fail(err, LM_ERR_TYPE, "%s: element %zu must be a number, got %s", path,
                           *index, kind_name(node));
        (*index)++;
        return LM_OK;
    }
    for (size_t i = 0; i < dims[axis]; i++) {
        lm_status status = flatten(json_array_get(node, i), path, axis + 1, ndim, dims, index,
                                   data, err);
        if (status != LM_OK)
            return status;
    }
    return LM_OK;
}

lm_status lm_json_array(const json_t *root, const char *path, size_t ndim, size_t *dims,
                        double **data, lm_error *err)
{
    const json_t *value;
    lm_status status = lm_json_at(root, path, &value, err);
    if (status != LM_OK)
        return status;
    if (ndim < 1 || ndim > 4)
        return lm_fail(err, LM_ERR_ARG, "ndim must be 1..4, got %zu", ndim);
    size_t index[4] = {0, 0, 0, 0};
    if ((status = measure(value, path, ndim, dims, err)) != LM_OK ||
        (status = check_rectangular(value, path, 0, ndim, dims, index, err)) != LM_OK)
        return status;
    const size_t total = lm_size_product(dims, ndim);
    if (total > LM_JSON_ARRAY_MAX)
        return lm_fail(err, LM_ERR_SCHEMA, "%s holds %zu elements, more than the %zu an array "
                       "may hold", path, total, (size_t)LM_JSON_ARRAY_MAX);
    double *copy = malloc(lm_size_mul(total, sizeof *copy));
    if (copy == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "out of memory reading %s", path);
    size_t count = 0;
    status = flatten(value, path, 0, ndim, dims, &count, copy, err);
    if (status != LM_OK) {
        free(copy);
        return status;
    }
    *data = copy;
    return LM_OK;
}

lm_status lm_json_int_array(const json_t *root, const char *path, long long **data,
                            size_t *count, lm_error *err)
{
    const json_t *value;
    lm_status status = lm_json_at(root, path, &value, err);
    if (status != LM_OK)
        return status;
    if (!json_is_array(value))
        return lm_fail(err, LM_ERR_TYPE, "%s must be an array, got %s", path, kind_name(value));
    size_t n = json_array_size(value);
    long long *copy = malloc((n ? n : 1) * sizeof *copy);
    if (copy == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "out of memory reading %s", path);
    for (size_t i = 0; i < n; i++) {
        const json_t *item = json_array_get(value, i);
        if (!json_is_integer(item)) {
            free(copy);
            return lm_fail(err, LM_ERR_TYPE, "%s[%zu] must be an integer, got %s", path, i,
                           kind_name(item));
        }
        copy[i] = (long long)json_integer_value(item);
    }
    *data = copy;
    *count = n;
    return LM_OK;
}
