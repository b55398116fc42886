/* Option value parsing for the measurement subcommands. */
#include "opts.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

lm_status lm_parse_integer(const char *name, const char *text, long min, long max,
                           long *out, lm_error *err)
{
    char *stop;
    errno = 0;
    long v = strtol(text, &stop, 10);
    if (stop == text || *stop != '\0' || errno == ERANGE || v < min || v > max)
        return lm_fail(err, LM_ERR_ARG, "%s must be an integer in %ld..%ld, got '%s'", name,
                       min, max, text);
    *out = v;
    return LM_OK;
}

/* One value of a list, with its k/M suffix, at most `max`. */
static lm_status parse_one(const char *name, const char *text, long max, const char **end,
                           long *value, lm_error *err)
{
    char *stop;
    errno = 0;
    long v = strtol(text, &stop, 10);
    if (stop == text)
        return lm_fail(err, LM_ERR_ARG, "%s: '%s' is not an integer", name, text);
    long scale = 1;
    if (*stop == 'k' || *stop == 'K')
        scale = 1024, stop++;
    else if (*stop == 'm' || *stop == 'M')
        scale = 1048576, stop++;
    if (errno == ERANGE || v > max / scale || v < -(max / scale))
        return lm_fail(err, LM_ERR_ARG, "%s: '%.*s' is too large (at most %ld)", name,
                       (int)(stop - text), text, max);
    *value = v * scale;
    *end = stop;
    return LM_OK;
}

static lm_status parse_list(const char *name, const char *text, long min, long max, long *out,
                            size_t *count, lm_error *err)
{
    *count = 0;
    if (text == NULL || text[0] == '\0')
        return lm_fail(err, LM_ERR_ARG, "%s must not be empty", name);
    const char *p = text;
    for (;;) {
        long first, last;
        const char *end;
        lm_status s = parse_one(name, p, max, &end, &first, err);
        if (s != LM_OK)
            return s;
        last = first;
        if (end[0] == '.' && end[1] == '.') {
            s = parse_one(name, end + 2, max, &end, &last, err);
            if (s != LM_OK)
                return s;
            if (first <= 0 || last < first)
                return lm_fail(err, LM_ERR_ARG, "%s: range '%s' must be A..B with 0 < A <= B",
                               name, p);
        }
        if (*end != ',' && *end != '\0')
            return lm_fail(err, LM_ERR_ARG, "%s: unexpected '%c' in '%s'", name, *end, text);
        /* first and last are at most max (<= LONG_MAX / 2), so doubling cannot overflow */
        for (long v = first; v <= last; v *= 2) {
            if (v < min)
                return lm_fail(err, LM_ERR_ARG, "%s values must be >= %ld, got %ld", name, min, v);
            if (*count >= LM_LIST_MAX)
                return lm_fail(err, LM_ERR_ARG, "%s holds more than %d values", name, LM_LIST_MAX);
            out[(*count)++] = v;
            if (v == 0 || first == last)
                break;
        }
        if (*end == '\0')
            break;
        p = end + 1;
        if (*p == '\0')
            return lm_fail(err, LM_ERR_ARG, "%s ends with ','", name);
    }
    return LM_OK;
}

lm_status lm_parse_size_list(const char *name, const char *text, long min, long *out,
                             size_t *count, lm_error *err)
{
    return parse_list(name, text, min, LM_SIZE_VALUE_MAX, out, count, err);
}

lm_status lm_parse_thread_list(const char *name, const char *text, int cores, long *out,
                               size_t *count, lm_error *err)
{
    if (cores < 1)
        cores = 1;
    if (text != NULL && strcmp(text, "auto") == 0) {
        *count = 0;
        out[(*count)++] = 1;
        if (cores > 1)
            out[(*count)++] = cores;
        return LM_OK;
    }
    if (text != NULL && strcmp(text, "cores") == 0) {
        out[0] = cores;
        *count = 1;
        return LM_OK;
    }
    return parse_list(name, text, 1, LM_THREADS_MAX, out, count, err);
}

lm_status lm_parse_word_list(const char *name, const char *text, char out[][32], size_t *count,
                             lm_error *err)
{
    *count = 0;
    if (text == NULL || text[0] == '\0')
        return lm_fail(err, LM_ERR_ARG, "%s must not be empty", name);
    const char *p = text;
    for (;;) {
        size_t len = strcspn(p, ",");
        if (len == 0)
            return lm_fail(err, LM_ERR_ARG, "%s has an empty item in '%s'", name, text);
        if (len >= 32)
            return lm_fail(err, LM_ERR_ARG, "%s item '%.*s' is longer than 31 characters", name,
                           (int)len, p);
        if (*count >= LM_LIST_MAX)
            return lm_fail(err, LM_ERR_ARG, "%s holds more than %d values", name, LM_LIST_MAX);
        memcpy(out[*count], p, len);
        out[(*count)++][len] = '\0';
        if (p[len] == '\0')
            break;
        p += len + 1;
    }
    return LM_OK;
}

lm_status lm_parse_isa_list(const char *name, const char *text, lm_isa *out, size_t *count,
                            lm_error *err)
{
    char words[LM_LIST_MAX][32];
    size_t n;
    *count = 0;
    lm_status s = lm_parse_word_list(name, text, words, &n, err);
    if (s != LM_OK)
        return s;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(words[i], "all") == 0) {
            for (int isa = 0; isa < LM_ISA_COUNT; isa++)
                if (lm_isa_available((lm_isa)isa))
                    out[(*count)++] = (lm_isa)isa;
            continue;
        }
        lm_isa isa;
        if (strcmp(words[i], "active") == 0 || strcmp(words[i], "auto") == 0) {
            isa = lm_isa_active(NULL);
        } else {
            s = lm_isa_parse(words[i], &isa, err);
            if (s != LM_OK)
                return lm_fail(err, LM_ERR_ARG, "%s: unknown ISA '%s' (scalar, avx2, avx512, neon, "
                               "all or active)", name, words[i]);
            if (!lm_isa_available(isa))
                return lm_fail(err, LM_ERR_UNSUPPORTED,
                               "%s: ISA path %s is not available on this machine", name, words[i]);
        }
        if (*count < LM_LIST_MAX)
            out[(*count)++] = isa;
    }
    return LM_OK;
}

lm_status lm_parse_shard(const char *text, int *k, int *n, lm_error *err)
{
    char *end;
    errno = 0;
    long a = strtol(text, &end, 10);
    if (end == text || *end != '/' || errno == ERANGE)
        return lm_fail(err, LM_ERR_ARG, "--shard must be K/N (e.g. 2/4), got '%s'", text);
    const char *rest = end + 1;
    long b = strtol(rest, &end, 10);
    if (end == rest || *end != '\0' || errno == ERANGE || b < 1 || a < 1 || a > b || b > 100000)
        return lm_fail(err, LM_ERR_ARG, "--shard must be K/N with 1 <= K <= N, got '%s'", text);
    *k = (int)a;
    *n = (int)b;
    return LM_OK;
}

int lm_shard_selects(size_t index, int k, int n) { return (int)(index % (size_t)n) == k - 1; }
