/* The measuring commands' watch on a busy machine (see busy_watch.h). */
#include "busy_watch.h"
#include "omp_wait.h"
#include "stats.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

void lm_busy_watch_start(lm_busy_watch *w, const char *command)
{
    memset(w, 0, sizeof *w);
    w->command = command;
    lm_busy_start(&w->monitor);
    double start = lm_now();
    struct timespec pause = {0, (long)(LM_BUSY_BEFORE_S * 1e9)};
    nanosleep(&pause, NULL);
    int cpus = 0;
    w->before = lm_busy_mark(&w->monitor, start, &cpus);
    if (isnan(w->before)) {
        fprintf(stderr, "longmix %s: /proc/stat is not readable: rows cannot say whether the "
                        "machine was busy (busy_cores and disturbed left empty)\n", command);
    } else if (w->before > LM_BUSY_SLACK) {
        char wait[96];
        lm_omp_wait_text(wait, sizeof wait);
        fprintf(stderr, "longmix %s: the machine is busy: before measuring, other processes "
                        "kept %.2f of the %d CPUs this process may use busy; rows whose threads "
                        "find too few free are marked disturbed (OpenMP wait: %s)\n",
                command, w->before, cpus, wait);
    }
}

void lm_busy_watch_row(lm_busy_watch *w, double since, lm_result_row *row)
{
    int cpus = 0;
    double others = lm_busy_mark(&w->monitor, since, &cpus);
    row->busy_known = !isnan(others);
    row->busy_cores = others;
    row->disturbed = lm_busy_disturbed(others, row->threads, cpus);
    w->rows++;
    w->unsteady += strcmp(row->status ? row->status : "", "ok") == 0 &&
                   lm_unsteady(row->time.min, row->time.median, row->time.p75);
    if (!row->disturbed)
        return;
    w->disturbed++;
    if (!w->warned)
        fprintf(stderr, "longmix %s: %s at %d thread%s measured while other processes kept "
                        "%.2f of %d CPUs busy: marked disturbed (its time is not the kernel's; "
                        "later ones are counted at the end)\n",
                w->command, row->kernel, row->threads, row->threads == 1 ? "" : "s", others,
                cpus);
    w->warned = true;
}

void lm_busy_watch_finish(const lm_busy_watch *w, const char *path)
{
    if (w->disturbed > 0)
        fprintf(stderr, "longmix %s: %zu of %zu rows were measured while other processes left "
                        "their threads too few free cores (disturbed = 1 in %s): measure them "
                        "again on a quiet machine\n", w->command, w->disturbed, w->rows, path);
    if (w->unsteady > 0)
        fprintf(stderr, "longmix %s: %zu of %zu rows are unsteady (their repetitions spread "
                        "(p75 - min) / median > %.0f %%)\n", w->command, w->unsteady, w->rows,
                LM_UNSTEADY_SPREAD * 100.0);
}
