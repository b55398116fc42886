/* Progress line on stderr when it is a terminal. */
#include "progress.h"

#include "stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void lm_progress_start(lm_progress *p, size_t total)
{
    const char *force = getenv("LONGMIX_PROGRESS");
    p->enabled = force != NULL && force[0] != '\0' ? strcmp(force, "0") != 0 : isatty(2) != 0;
    p->total = total;
    p->start = lm_now();
}

static void format_seconds(char *out, size_t size, double s)
{
    if (s < 120.0)
        snprintf(out, size, "%.0fs", s);
    else if (s < 7200.0)
        snprintf(out, size, "%ldm%02lds", (long)s / 60, (long)s % 60);
    else
        snprintf(out, size, "%.1fh", s / 3600.0);
}

void lm_progress_format(char *out, size_t size, size_t done, size_t total, double elapsed,
                        const char *label)
{
    char el[32], eta[32];
    format_seconds(el, sizeof el, elapsed);
    if (done == 0)
        snprintf(eta, sizeof eta, "?");
    else
        format_seconds(eta, sizeof eta, elapsed / (double)done * (double)(total - done));
    snprintf(out, size, "[%zu/%zu] %s  elapsed %s  eta %s", done, total, label ? label : "", el,
             eta);
}

void lm_progress_update(lm_progress *p, size_t done, const char *label)
{
    if (!p->enabled)
        return;
    char line[256];
    lm_progress_format(line, sizeof line, done, p->total, lm_now() - p->start, label);
    fprintf(stderr, "\r\033[K%s", line);
    fflush(stderr);
}

void lm_progress_finish(lm_progress *p)
{
    if (p->enabled)
        fprintf(stderr, "\r\033[K");
}
