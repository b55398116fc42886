/* The crossover command's tables: one Markdown row, one sentence and one summary CSV line
 * per comparison of attention against another method over a grid of context lengths, and
 * the legend under them. Harness code of `longmix crossover`: it prints on stdout. */
#ifndef LONGMIX_CROSSOVER_TABLE_H
#define LONGMIX_CROSSOVER_TABLE_H

#include "crossover.h"
#include "csv.h"

/* One measured configuration: its median seconds (0 when it failed or another --shard
 * measures it) and whether the machine was busy (disturbed) or its repetitions spread
 * (unsteady, lm_unsteady). */
typedef struct lm_crossover_measured {
    double t;
    bool disturbed, unsteady;
} lm_crossover_measured;

/* One comparison: attention's points against the other method's over the grid n. */
typedef struct lm_crossover_comparison {
    const char *phase, *a_name, *b_name; /* the summary's phase, method_a, method_b */
    const char *other;                   /* the other method in the sentence */
    const char *dtype;                   /* the KV cache's (decode) */
    lm_isa isa;
    int threads;
    const long *n;                       /* {count} the grid, increasing */
    const lm_crossover_measured *a, *b;  /* {count}; b_flat: b[0] stands for every n */
    bool b_flat, decode;
    size_t count;
    double memory_n, flop_n;             /* 0: not applicable */
} lm_crossover_comparison;

/* The summary CSV's columns: phase, method_a, method_b, dtype, isa, threads, found,
 * n_star, lo_n, lo_a_s, lo_b_s, hi_n, memory_n, flop_n, trust, sentence. */
#define LM_CROSSOVER_SUMMARY_COLUMNS 16
extern const char *const lm_crossover_summary_columns[LM_CROSSOVER_SUMMARY_COLUMNS];

/* Seconds for a reader: "12.3 us", "4.56 ms", "1.23 s"; "failed" for 0. */
void lm_crossover_fmt_time(char *out, size_t size, double s);

/* Prints the table's header (Markdown). */
void lm_crossover_print_header(void);
/* Prints comparison c's table row, appends its summary line to `summary` (with
 * lm_crossover_summary_columns) and leaves its sentence (lm_crossover_sentence) in
 * sentence[0..size). */
void lm_crossover_report(const lm_crossover_comparison *c, lm_csv *summary, char *sentence,
                         size_t size);
/* Prints the sentences of the rows just tabled as a Markdown list. */
void lm_crossover_print_sentences(char sentences[][640], size_t count);
/* Prints what the measured, memory and FLOP columns mean (the recurrent state at
 * state_bytes_per_value) and why the measured n* comes later than the FLOP one. */
void lm_crossover_print_legend(long state_bytes_per_value);

#endif
