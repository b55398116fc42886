/* A crossover said in one plain sentence (see crossover.h). */
#include "crossover.h"
#include "busy.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void lm_format_count(char *out, size_t size, double value)
{
    char digits[32];
    snprintf(digits, sizeof digits, "%.0f", value < 0.0 ? 0.0 : value);
    size_t n = strlen(digits), used = 0;
    for (size_t i = 0; i < n && used + 2 < size; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            out[used++] = ',';
        out[used++] = digits[i];
    }
    out[used < size ? used : size - 1] = '\0';
}

/* "an f32 cache", "a bf16 cache": the article a reader says before the dtype's name. */
static void cache_phrase(char *out, size_t size, const char *dtype)
{
    const bool vowel_sound = dtype[0] == 'f' || dtype[0] == 'i' || dtype[0] == 'e';
    snprintf(out, size, "%s %s cache", vowel_sound ? "an" : "a", dtype);
}

/* The growing side and the other side of the sentence, decode or prefill. */
static void sides(const lm_crossover_words *w, char *attention, size_t a_size, char *other,
                  size_t o_size)
{
    char cache[48];
    cache_phrase(cache, sizeof cache, w->dtype);
    if (w->decode) {
        snprintf(attention, a_size, "one attention layer's decode over %s", cache);
        snprintf(other, o_size, "one %s layer's decode step", w->other);
    } else {
        snprintf(attention, a_size, "one causal attention layer's prefill");
        snprintf(other, o_size, "one %s layer's prefill", w->other);
    }
}

static void finding(const lm_crossover_words *w, char *out, size_t size)
{
    char attention[96], other[96], n[32], first[32], last[32];
    sides(w, attention, sizeof attention, other, sizeof other);
    lm_format_count(n, sizeof n, w->n_star);
    lm_format_count(first, sizeof first, w->n_first);
    lm_format_count(last, sizeof last, w->n_last);
    const char *unit = w->decode ? "cached tokens" : "prompt tokens";
    const char *plural = w->threads == 1 ? "" : "s";
    if (w->where == 0) {
        snprintf(out, size, "On this CPU, with more than %s %s, %s is faster than %s (%d thread%s).",
                 n, unit, other, attention, w->threads, plural);
    } else if (w->where < 0) {
        /* the suggested option in the grid's own syntax: plain integers */
        snprintf(out, size, "On this CPU, %s was already faster than %s at the smallest context "
                 "measured (%s %s, %d thread%s): the crossover is at %s tokens or fewer; extend %s "
                 "below %s (e.g. %s %.0f..%.0f) to place it.", other, attention, first, unit,
                 w->threads, plural, first, w->grid_option, first, w->grid_option,
                 fmax(1.0, floor(w->n_first / 8.0)), w->n_first);
    } else {
        snprintf(out, size, "On this CPU, %s was still faster than %s at the largest context "
                 "measured (%s %s, %d thread%s): the crossover lies beyond %s tokens; extend %s "
                 "above %s (e.g. %s %.0f..%.0f) to find it.", attention, other, last, unit,
                 w->threads, plural, last, w->grid_option, last, w->grid_option, w->n_last,
                 w->n_last * 8.0);
    }
}

void lm_crossover_sentence(const lm_crossover_words *w, char *out, size_t size)
{
    if (w->points == 0) {
        snprintf(out, size, "No crossover: a measurement behind it failed (see the messages above).");
        return;
    }
    char said[640];
    finding(w, said, sizeof said);
    if (w->disturbed == 0 && w->unsteady == 0) {
        snprintf(out, size, "%s", said);
        return;
    }
    char why[160];
    if (w->disturbed > 0 && w->unsteady > 0)
        snprintf(why, sizeof why, "%zu of the %zu measurements behind it were taken while other "
                 "processes kept cores busy, %zu unsteady", w->disturbed, w->points, w->unsteady);
    else if (w->disturbed > 0)
        snprintf(why, sizeof why, "%zu of the %zu measurements behind it were taken while other "
                 "processes kept cores busy", w->disturbed, w->points);
    else
        snprintf(why, sizeof why, "%zu of the %zu measurements behind it unsteady "
                 "(repetitions spread over %.0f %% of the median)", w->unsteady, w->points,
                 LM_UNSTEADY_SPREAD * 100.0);
    snprintf(out, size, "Not a finding (%s; measure again on a quiet machine): %s", why, said);
}
