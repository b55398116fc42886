/* SHA256SUMS: the pins of contracts/, in sha256sum's own format. */
#include "contract_load.h"
#include "files.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_digest(const char *text)
{
    for (int i = 0; i < 64; i++)
        if (!isxdigit((unsigned char)text[i]))
            return false;
    return true;
}

/* Appends one pin; false when out of memory. */
static bool add_pin(lm_pin_list *pins, const char *digest, const char *name)
{
    char(*digests)[65] = realloc(pins->digest, (pins->count + 1) * sizeof *digests);
    if (digests == NULL)
        return false;
    pins->digest = digests;
    char **names = realloc(pins->name, (pins->count + 1) * sizeof *names);
    if (names == NULL)
        return false;
    pins->name = names;
    names[pins->count] = strdup(name);
    if (names[pins->count] == NULL)
        return false;
    for (int i = 0; i < 64; i++)
        digests[pins->count][i] = (char)tolower((unsigned char)digest[i]);
    digests[pins->count][64] = '\0';
    pins->count++;
    return true;
}

/* Parses one line (without its end of line): blank and '#' lines are skipped. */
static lm_status parse_line(lm_pin_list *pins, const char *path, size_t number, char *line,
                            lm_error *err)
{
    size_t length = strlen(line);
    if (length > 0 && line[length - 1] == '\r')
        line[--length] = '\0';
    if (line[0] == '\0' || line[0] == '#')
        return LM_OK;
    /* "HEX  NAME" (text mode) or "HEX *NAME" (binary mode) */
    if (length < 67 || !is_digest(line) || line[64] != ' ' || (line[65] != ' ' && line[65] != '*'))
        return lm_fail(err, LM_ERR_PARSE, "%s:%zu: expected '<64 hex digits>  <file>'", path,
                       number);
    if (!add_pin(pins, line, line + 66))
        return lm_fail(err, LM_ERR_NOMEM, "%s: out of memory", path);
    return LM_OK;
}

lm_status lm_pins_read(const char *path, lm_pin_list *pins, lm_error *err)
{
    *pins = (lm_pin_list){0};
    char *text;
    size_t size;
    lm_status status = lm_read_file(path, LM_PINS_MAX_BYTES, false, &text, &size, err);
    if (status != LM_OK)
        return status;
    if (memchr(text, '\0', size) != NULL)
        status = lm_fail(err, LM_ERR_PARSE, "%s: holds a NUL byte (not a SHA256SUMS file)", path);
    char *line = text;
    for (size_t number = 1; status == LM_OK && line < text + size; number++) {
        char *end = strchr(line, '\n'); /* lines of any length: the number stays the file's */
        if (end != NULL)
            *end = '\0';
        status = parse_line(pins, path, number, line, err);
        line = end ? end + 1 : text + size;
    }
    free(text);
    if (status != LM_OK)
        lm_pins_free(pins);
    return status;
}

const char *lm_pins_find(const lm_pin_list *pins, const char *name)
{
    for (size_t i = 0; i < pins->count; i++)
        if (strcmp(pins->name[i], name) == 0)
            return pins->digest[i];
    return NULL;
}

void lm_pins_free(lm_pin_list *pins)
{
    for (size_t i = 0; i < pins->count; i++)
        free(pins->name[i]);
    free(pins->name);
    free(pins->digest);
    *pins = (lm_pin_list){0};
}
