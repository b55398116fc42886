/* The crossover command's tables, sentences and summary lines (see crossover_table.h). */
#include "crossover_table.h"
#include "busy.h"
#include "opts.h"

#include <stdio.h>
#include <string.h>

void lm_crossover_fmt_time(char *out, size_t size, double s)
{
    if (s <= 0.0)
        snprintf(out, size, "failed");
    else if (s < 1e-3)
        snprintf(out, size, "%.1f us", s * 1e6);
    else if (s < 1.0)
        snprintf(out, size, "%.2f ms", s * 1e3);
    else
        snprintf(out, size, "%.2f s", s);
}

/* The measured points behind a result: the indices 0..hi (found), 0 (below the grid) or
 * every one (above the grid), attention's and the other's (a flat b counted once). */
static void trust_counts(const lm_crossover_comparison *c, const size_t *index, size_t m,
                         const lm_crossover_point *p, lm_crossover_words *w)
{
    size_t last = p->where == 0 ? p->hi : p->where < 0 ? 0 : m - 1;
    for (size_t j = 0; j <= last && j < m; j++) {
        const lm_crossover_measured *pa = &c->a[index[j]], *pb = &c->b[c->b_flat ? 0 : index[j]];
        w->points += 1 + (!c->b_flat || j == 0);
        w->disturbed += pa->disturbed + ((!c->b_flat || j == 0) && pb->disturbed);
        w->unsteady += pa->unsteady + ((!c->b_flat || j == 0) && pb->unsteady);
    }
}

void lm_crossover_report(const lm_crossover_comparison *c, lm_csv *summary, char *sentence,
                         size_t size)
{
    double nd[LM_LIST_MAX], a[LM_LIST_MAX], b[LM_LIST_MAX];
    size_t index[LM_LIST_MAX], m = 0;
    for (size_t i = 0; i < c->count; i++) {
        double tb = c->b[c->b_flat ? 0 : i].t;
        if (c->a[i].t > 0.0 && tb > 0.0) {
            nd[m] = (double)c->n[i], a[m] = c->a[i].t, b[m] = tb, index[m] = i;
            m++;
        }
    }
    lm_crossover_point p = {0};
    lm_status s = lm_crossover_find(nd, a, b, m, &p, NULL);
    lm_crossover_words w = {.decode = c->decode, .other = c->other, .dtype = c->dtype,
                            .grid_option = c->decode ? "--ctx" : "--prefill-ctx",
                            .threads = c->threads, .where = p.where, .n_star = p.n_star,
                            .n_first = m ? nd[0] : 0.0, .n_last = m ? nd[m - 1] : 0.0};
    if (s == LM_OK)
        trust_counts(c, index, m, &p, &w);
    const bool trusted = w.disturbed == 0 && w.unsteady == 0;
    lm_crossover_sentence(&w, sentence, size);
    char measured[64] = "no data", around[160] = "-", t1[32], t2[32], t3[32], t4[32], n1[32];
    if (s == LM_OK && p.where == 0) {
        lm_format_count(n1, sizeof n1, p.n_star);
        snprintf(measured, sizeof measured, trusted ? "**%s**" : "%s", n1);
        lm_crossover_fmt_time(t1, sizeof t1, a[p.lo]), lm_crossover_fmt_time(t2, sizeof t2, b[p.lo]);
        lm_crossover_fmt_time(t3, sizeof t3, a[p.hi]), lm_crossover_fmt_time(t4, sizeof t4, b[p.hi]);
        snprintf(around, sizeof around, "n=%.0f: %s vs %s; n=%.0f: %s vs %s", nd[p.lo], t1, t2,
                 nd[p.hi], t3, t4);
    } else if (s == LM_OK) {
        size_t at = p.where < 0 ? 0 : m - 1;
        lm_format_count(n1, sizeof n1, nd[at]);
        snprintf(measured, sizeof measured, "%s %s (grid end)", p.where < 0 ? "<=" : ">", n1);
        lm_crossover_fmt_time(t1, sizeof t1, a[at]), lm_crossover_fmt_time(t2, sizeof t2, b[at]);
        snprintf(around, sizeof around, "n=%.0f: %s vs %s", nd[at], t1, t2);
    }
    char mem[32] = "-", flop[32] = "-", trust[64] = "ok";
    if (c->memory_n > 0.0)
        snprintf(mem, sizeof mem, "%g", c->memory_n);
    if (c->flop_n > 0.0)
        lm_format_count(flop, sizeof flop, c->flop_n);
    if (w.disturbed > 0)
        snprintf(trust, sizeof trust, "not trusted: %zu of %zu busy", w.disturbed, w.points);
    else if (w.unsteady > 0)
        snprintf(trust, sizeof trust, "not trusted: %zu of %zu unsteady", w.unsteady, w.points);
    else if (s != LM_OK)
        snprintf(trust, sizeof trust, "failed");
    printf("| %s | %s vs %s | %s | %s | %d | %s | %s | %s | %s | %s |\n", c->phase, c->a_name,
           c->b_name, c->dtype, lm_isa_name(c->isa), c->threads, measured, around, mem, flop,
           trust);
    enum { CELLS = 16 };
    char cells[CELLS][96];
    const char *ptrs[CELLS];
    snprintf(cells[0], 96, "%s", c->phase);
    snprintf(cells[1], 96, "%s", c->a_name);
    snprintf(cells[2], 96, "%s", c->b_name);
    snprintf(cells[3], 96, "%s", c->dtype);
    snprintf(cells[4], 96, "%s", lm_isa_name(c->isa));
    snprintf(cells[5], 96, "%d", c->threads);
    snprintf(cells[6], 96, "%s", s == LM_OK ? (p.where == 0 ? "found" : p.where < 0 ? "below_grid" : "above_grid") : "no_data");
    snprintf(cells[7], 96, "%.6g", s == LM_OK ? p.n_star : 0.0);
    snprintf(cells[8], 96, "%.0f", s == LM_OK && m ? nd[p.lo] : 0.0);
    snprintf(cells[9], 96, "%.6g", s == LM_OK && m ? a[p.lo] : 0.0);
    snprintf(cells[10], 96, "%.6g", s == LM_OK && m ? b[p.lo] : 0.0);
    snprintf(cells[11], 96, "%.0f", s == LM_OK && m ? nd[p.hi] : 0.0);
    snprintf(cells[12], 96, "%g", c->memory_n);
    snprintf(cells[13], 96, "%g", c->flop_n);
    snprintf(cells[14], 96, "%s", s != LM_OK ? "failed" : w.disturbed ? "disturbed"
                                  : w.unsteady ? "unsteady" : "ok");
    for (int i = 0; i < CELLS - 1; i++)
        ptrs[i] = cells[i];
    ptrs[CELLS - 1] = sentence;
    lm_csv_append(summary, ptrs, NULL);
}

void lm_crossover_print_header(void)
{
    printf("| phase | comparison | KV cache | ISA | threads | measured crossover n* (tokens) "
           "| times at the grid points around it (attention vs other) | memory crossover "
           "(tokens, this cache) | FLOP crossover (tokens) | trust |\n"
           "|---|---|---|---|--:|--:|---|--:|--:|---|\n");
}

void lm_crossover_print_sentences(char sentences[][640], size_t count)
{
    printf("\n");
    for (size_t i = 0; i < count; i++)
        printf("- %s\n", sentences[i]);
}

const char *const lm_crossover_summary_columns[LM_CROSSOVER_SUMMARY_COLUMNS] = {
    "phase", "method_a", "method_b", "dtype", "isa", "threads", "found", "n_star",
    "lo_n", "lo_a_s", "lo_b_s", "hi_n", "memory_n", "flop_n", "trust", "sentence"};

void lm_crossover_print_legend(long state_bytes_per_value)
{
    printf("\nMeasured crossover n*: the context where attention's time reaches the other "
           "method's, interpolated log-log between the two grid points around it (their times "
           "are printed, attention first). `<= n (grid end)`: the other method was already "
           "faster at the smallest n measured; `> n (grid end)`: attention was still faster at "
           "the largest; the sentences say which grid to extend. A result is `not trusted` "
           "when a measurement behind it was taken while other processes kept cores busy "
           "(`disturbed` in the CSV) or its repetitions spread ((p75 - min) / median > 20 %%).\n\n"
           "Memory crossover: where the KV cache (in the row's dtype: f32 4 bytes per value, "
           "f16 and bf16 2) outgrows the recurrent state (SSM state and convolution tail at "
           "%ld bytes per value, --bytes-per-value): a statement about memory, not time.\n\n"
           "FLOP crossover: where attention's flop count (decode: 4 n x heads x head_dim per "
           "token, a dot product and a weighted sum over n cached tokens) reaches the other "
           "kernel's (the Mamba-1 step: about 5 x d_inner x d_state); two kernels running at "
           "the same FLOP/s would cross there. The measured n* comes later because they do not: "
           "decode attention does about one flop per byte of K/V it streams and runs at memory "
           "bandwidth, while the SSM step spends an exponential per state element, counted as a "
           "few flops and costing tens of cycles (docs/benchmarks.md, Crossover).\n",
           state_bytes_per_value);
}

