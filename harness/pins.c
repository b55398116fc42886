/* SHA256SUMS: the pins of contracts/, in sha256sum's own format. */
#include "contract_load.h"

#include <ctype.h>
#include <errno.h>
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

lm_status lm_pins_read(const char *path, lm_pin_list *pins, lm_error *err)
{
    *pins = (lm_pin_list){0};
    FILE *file = fopen(path, "r");
    if (file == NULL)
        return lm_fail(err, LM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    char line[1024];
    int number = 0;
    lm_status status = LM_OK;
    while (status == LM_OK && fgets(line, sizeof line, file) != NULL) {
        number++;
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] == '\0' || line[0] == '#')
            continue;
        /* "HEX  NAME" (text mode) or "HEX *NAME" (binary mode) */
        if (strlen(line) < 67 || !is_digest(line) || line[64] != ' ' ||
            (line[65] != ' ' && line[65] != '*'))
            status = lm_fail(err, LM_ERR_PARSE, "%s:%d: expected '<64 hex digits>  <file>'", path,
                             number);
        else if (!add_pin(pins, line, line + 66))
            status = lm_fail(err, LM_ERR_NOMEM, "%s: out of memory", path);
    }
    fclose(file);
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
