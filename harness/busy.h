/* Is the machine busy while we measure? The CPU time other processes take on the CPUs this
 * process may run on, from /proc/stat, over a window of wall time: the "busy cores" of a
 * row. A row is disturbed when the cores its OpenMP team needs were not free. Library code:
 * errors are values, nothing printed. */
#ifndef LONGMIX_BUSY_H
#define LONGMIX_BUSY_H

#include "longmix.h"

#include <stdbool.h>
#include <stddef.h>

/* Other processes' cores in use above which a row counts as disturbed, beyond the cores
 * its team leaves free: the slack for the kernel's own housekeeping and for /proc/stat's
 * 10 ms ticks over the shortest window (LM_BUSY_MIN_WINDOW_S: 0.05 cores each side). */
#define LM_BUSY_SLACK 0.25
/* The shortest window a row's busy cores are taken over (seconds; a row is usually
 * shorter, so its window reaches back over the rows before it). */
#define LM_BUSY_MIN_WINDOW_S 0.5

/* One reading: wall and CPU clocks, and the busy time of the CPUs in our affinity mask. */
typedef struct lm_busy_sample {
    double wall_s;  /* lm_now() */
    double own_s;   /* this process's CPU seconds, every thread (lm_cpu_now()) */
    double busy_s;  /* seconds the CPUs of the mask were not idle (user, nice, system, irq,
                       softirq, steal), all processes */
    int cpus;       /* CPUs in the affinity mask that /proc/stat lists */
} lm_busy_sample;

/* Sums the busy time of the CPUs `wanted(cpu)` selects from /proc/stat text
 * text[0..length) ("cpuN user nice system idle iowait irq softirq steal ..." lines, in
 * ticks of ticks_per_s) into *busy_s and counts them into *cpus. LM_ERR_PARSE when no
 * selected CPU line parses. `mask` is {mask_count} flags indexed by CPU number (NULL:
 * every CPU). */
lm_status lm_busy_parse_stat(const char *text, size_t length, double ticks_per_s,
                             const bool *mask, size_t mask_count, double *busy_s, int *cpus,
                             lm_error *err);

/* Reads /proc/stat and the clocks now (LM_ERR_IO when /proc/stat is unreadable: then the
 * machine's busy-ness is unknown and rows say nan). */
lm_status lm_busy_sample_now(lm_busy_sample *out, lm_error *err);

/* Other processes' average cores in use from a to b (b later): (busy - own) / wall, at
 * least 0; nan when the window is empty or a sample is missing (cpus 0). */
double lm_busy_others(const lm_busy_sample *a, const lm_busy_sample *b);

/* True when `others` cores in use leave fewer than `threads` of `cpus` free, beyond
 * LM_BUSY_SLACK: others > cpus - threads + LM_BUSY_SLACK (never for nan). */
bool lm_busy_disturbed(double others, int threads, int cpus);

/* A ring of recent samples, 20 ms apart at least: the window of a row ends now and starts
 * at the newest sample kept at least LM_BUSY_MIN_WINDOW_S earlier (or the oldest kept). */
#define LM_BUSY_RING 256
typedef struct lm_busy_monitor {
    lm_busy_sample ring[LM_BUSY_RING];
    size_t count, next; /* samples held, the slot the next one goes to */
    bool known;         /* the first sample was read */
} lm_busy_monitor;

/* Starts a monitor with one sample (known false when /proc/stat is unreadable). */
void lm_busy_start(lm_busy_monitor *m);
/* Reads a sample now (kept in the ring) and returns other processes' cores in use over the window that ends
 * now and reaches back to `since` (a wall time, e.g. the row's start) or
 * LM_BUSY_MIN_WINDOW_S, whichever is earlier; nan when unknown. *cpus (may be NULL)
 * receives the CPUs counted. */
double lm_busy_mark(lm_busy_monitor *m, double since, int *cpus);

/* A row is unsteady when its repetitions spread more than this: (p75 - min) / median. */
#define LM_UNSTEADY_SPREAD 0.20
/* (p75 - min) / median > LM_UNSTEADY_SPREAD (false for a row without a positive median). */
bool lm_unsteady(double min_s, double median_s, double p75_s);

#endif
