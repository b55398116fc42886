/* Status names and the lm_fail message writer: the only way library code reports. */
#include "lm_core.h"

#include <stdarg.h>
#include <stdio.h>

static const char *const status_names[LM_STATUS_COUNT] = {
    [LM_OK] = "ok",
    [LM_ERR_ARG] = "argument",
    [LM_ERR_SHAPE] = "shape",
    [LM_ERR_NONFINITE] = "non-finite",
    [LM_ERR_DOMAIN] = "domain",
    [LM_ERR_TYPE] = "type",
    [LM_ERR_NUMERIC] = "numeric",
    [LM_ERR_NOMEM] = "out of memory",
    [LM_ERR_IO] = "i/o",
    [LM_ERR_PARSE] = "parse",
    [LM_ERR_SCHEMA] = "schema",
    [LM_ERR_UNSUPPORTED] = "unsupported",
};

const char *lm_status_name(lm_status status)
{
    if ((unsigned)status >= LM_STATUS_COUNT || status_names[status] == NULL)
        return "unknown";
    return status_names[status];
}

void lm_error_clear(lm_error *err)
{
    if (err == NULL)
        return;
    err->status = LM_OK;
    err->message[0] = '\0';
}

lm_status lm_fail(lm_error *err, lm_status status, const char *format, ...)
{
    if (err == NULL)
        return status;
    err->status = status;
    va_list args;
    va_start(args, format);
    vsnprintf(err->message, sizeof err->message, format, args);
    va_end(args);
    return status;
}
