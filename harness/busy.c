/* Other processes' CPU time on our CPUs (see busy.h). */
#define _GNU_SOURCE /* sched_getaffinity, CPU_ISSET */
#include "busy.h"
#include "stats.h"

#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { STAT_FIELDS = 8, MAX_CPUS = 4096, STAT_BYTES = 1 << 18 };

/* One "cpuN f1 f2 ..." line at p (ending at end): N into *cpu and the busy ticks (every
 * field but idle and iowait, of the first STAT_FIELDS) into *ticks; false when it is not a
 * per-CPU line. */
static bool parse_cpu_line(const char *p, const char *end, long *cpu, double *ticks)
{
    if (end - p < 4 || strncmp(p, "cpu", 3) != 0 || p[3] < '0' || p[3] > '9')
        return false;
    char line[512];
    size_t n = (size_t)(end - p) < sizeof line - 1 ? (size_t)(end - p) : sizeof line - 1;
    memcpy(line, p, n);
    line[n] = '\0';
    char *at = line + 3, *next;
    *cpu = strtol(at, &next, 10);
    if (next == at || *cpu < 0)
        return false;
    double sum = 0.0;
    for (int f = 0; f < STAT_FIELDS; f++) {
        at = next;
        double v = strtod(at, &next);
        if (next == at || !(v >= 0.0)) {
            *ticks = sum;
            return f >= 4; /* old kernels list fewer fields; user..idle must be there */
        }
        if (f != 3 && f != 4) /* idle, iowait */
            sum += v;
    }
    *ticks = sum;
    return true;
}

lm_status lm_busy_parse_stat(const char *text, size_t length, double ticks_per_s,
                             const bool *mask, size_t mask_count, double *busy_s, int *cpus,
                             lm_error *err)
{
    *busy_s = 0.0;
    *cpus = 0;
    if (!(ticks_per_s > 0.0))
        return lm_fail(err, LM_ERR_ARG, "ticks per second must be positive");
    const char *p = text, *end = text + length;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (eol == NULL)
            eol = end;
        long cpu;
        double ticks = 0.0;
        if (parse_cpu_line(p, eol, &cpu, &ticks) &&
            (mask == NULL || ((size_t)cpu < mask_count && mask[cpu]))) {
            *busy_s += ticks / ticks_per_s;
            (*cpus)++;
        }
        p = eol + 1;
    }
    return *cpus > 0 ? LM_OK : lm_fail(err, LM_ERR_PARSE, "/proc/stat lists none of our CPUs");
}

lm_status lm_busy_sample_now(lm_busy_sample *out, lm_error *err)
{
    memset(out, 0, sizeof *out);
    bool *mask = calloc(MAX_CPUS, sizeof *mask);
    char *text = malloc(STAT_BYTES);
    if (mask == NULL || text == NULL) {
        free(mask), free(text);
        return lm_fail(err, LM_ERR_NOMEM, "out of memory reading /proc/stat");
    }
    cpu_set_t set;
    bool masked = sched_getaffinity(0, sizeof set, &set) == 0;
    for (int c = 0; masked && c < CPU_SETSIZE && c < MAX_CPUS; c++)
        mask[c] = CPU_ISSET(c, &set);
    FILE *f = fopen("/proc/stat", "r");
    size_t length = f ? fread(text, 1, STAT_BYTES, f) : 0;
    if (f)
        fclose(f);
    out->own_s = lm_cpu_now();
    out->wall_s = lm_now();
    long hz = sysconf(_SC_CLK_TCK);
    lm_status s = length == 0 ? lm_fail(err, LM_ERR_IO, "cannot read /proc/stat")
                              : lm_busy_parse_stat(text, length, hz > 0 ? (double)hz : 100.0,
                                                   masked ? mask : NULL, MAX_CPUS,
                                                   &out->busy_s, &out->cpus, err);
    free(mask), free(text);
    if (s != LM_OK)
        out->cpus = 0;
    return s;
}

double lm_busy_others(const lm_busy_sample *a, const lm_busy_sample *b)
{
    double wall = b->wall_s - a->wall_s;
    if (a->cpus == 0 || b->cpus == 0 || a->cpus != b->cpus || !(wall > 0.0))
        return (double)NAN;
    double others = ((b->busy_s - a->busy_s) - (b->own_s - a->own_s)) / wall;
    return others > 0.0 ? others : 0.0;
}

bool lm_busy_disturbed(double others, int threads, int cpus)
{
    return !isnan(others) && cpus > 0 && others > (double)(cpus - threads) + LM_BUSY_SLACK;
}

/* The spacing of the samples the ring keeps (LM_BUSY_RING of them cover 5 s at least). */
#define KEEP_SPACING_S 0.02

/* Keeps s in the ring when it is KEEP_SPACING_S after the newest kept (or the first). */
static void keep_sample(lm_busy_monitor *m, const lm_busy_sample *s)
{
    const lm_busy_sample *newest = &m->ring[(m->next + LM_BUSY_RING - 1) % LM_BUSY_RING];
    if (m->count > 0 && s->wall_s - newest->wall_s < KEEP_SPACING_S)
        return;
    m->ring[m->next] = *s;
    m->next = (m->next + 1) % LM_BUSY_RING;
    if (m->count < LM_BUSY_RING)
        m->count++;
}

void lm_busy_start(lm_busy_monitor *m)
{
    memset(m, 0, sizeof *m);
    lm_busy_sample s;
    if (lm_busy_sample_now(&s, NULL) == LM_OK) {
        keep_sample(m, &s);
        m->known = true;
    }
}

double lm_busy_mark(lm_busy_monitor *m, double since, int *cpus)
{
    if (cpus != NULL)
        *cpus = 0;
    lm_busy_sample now;
    if (!m->known || lm_busy_sample_now(&now, NULL) != LM_OK)
        return (double)NAN;
    double start = fmin(since, now.wall_s - LM_BUSY_MIN_WINDOW_S);
    /* newest to oldest: the newest kept sample at or before start, else the oldest */
    const lm_busy_sample *from = NULL;
    for (size_t k = 1; k <= m->count; k++) {
        from = &m->ring[(m->next + LM_BUSY_RING - k) % LM_BUSY_RING];
        if (from->wall_s <= start)
            break;
    }
    double others = from != NULL ? lm_busy_others(from, &now) : (double)NAN;
    keep_sample(m, &now);
    if (cpus != NULL)
        *cpus = now.cpus;
    return others;
}

bool lm_unsteady(double min_s, double median_s, double p75_s)
{
    return median_s > 0.0 && (p75_s - min_s) / median_s > LM_UNSTEADY_SPREAD;
}
