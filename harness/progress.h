/* A one-line progress display on stderr ("[k/n] label  elapsed 12s  eta 30s"), shown only
 * when stderr is a terminal. */
#ifndef LONGMIX_PROGRESS_H
#define LONGMIX_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>

typedef struct lm_progress {
    bool enabled;
    size_t total;
    double start;
} lm_progress;

/* enabled = stderr is a TTY (isatty(2)) unless LONGMIX_PROGRESS=0/1 overrides. */
void lm_progress_start(lm_progress *p, size_t total);
/* Formats the line for `done` of total after `elapsed` seconds (ETA = elapsed / done *
 * remaining; "?" before the first). */
void lm_progress_format(char *out, size_t size, size_t done, size_t total, double elapsed,
                        const char *label);
void lm_progress_update(lm_progress *p, size_t done, const char *label);
/* Clears the line. */
void lm_progress_finish(lm_progress *p);

#endif
