/* The measuring commands' watch on a busy machine: the busy monitor (busy.h) started
 * before the first measurement, each row's busy_cores and disturbed filled in, and what
 * was seen said on stderr (once when it starts, once at the first disturbed row, a count at
 * the end). Harness code: it prints. */
#ifndef LONGMIX_BUSY_WATCH_H
#define LONGMIX_BUSY_WATCH_H

#include "busy.h"
#include "csv.h"

typedef struct lm_busy_watch {
    lm_busy_monitor monitor;
    const char *command;  /* "sweep", "crossover": the messages' prefix */
    double before;        /* other processes' cores in use just before measuring (nan) */
    size_t rows, disturbed, unsteady;
    bool warned;          /* the first disturbed row was said */
} lm_busy_watch;

/* Starts the monitor, watches LM_BUSY_BEFORE_S of wall time with nothing measured and says
 * on stderr when other processes already keep cores busy. */
#define LM_BUSY_BEFORE_S 0.2
void lm_busy_watch_start(lm_busy_watch *w, const char *command);

/* Fills row->busy_known, busy_cores and disturbed for a row measured from wall time
 * `since` (lm_now()) to now, counts it (and whether it is unsteady), and says on stderr
 * the first time a row is disturbed. */
void lm_busy_watch_row(lm_busy_watch *w, double since, lm_result_row *row);

/* Says how many rows were disturbed or unsteady (nothing when none); `path` names the
 * file that holds them. */
void lm_busy_watch_finish(const lm_busy_watch *w, const char *path);

#endif
