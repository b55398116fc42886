/* `longmix compare BASE.csv NEW.csv`: the performance regression gate. Joins two results
 * files by configuration, prints each ratio and exits 1 when a configuration got slower
 * beyond the allowance and the noise (compare.h states the rule). */
#include "cli.h"
#include "results.h"
#include "compare.h"
#include "verify_report.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct compare_cli {
    const char *base, *new_, *output;
    lm_format format;
    lm_compare_options rule;
    bool strict;
} compare_cli;

static void compare_usage(FILE *out)
{
    fputs(
        "usage: longmix compare BASE.csv NEW.csv [--max-slowdown PCT] [--alpha A]\n"
        "                       [--time wall|cpu] [--format text|junit|json] [--output FILE]\n"
        "                       [--raw] [--force] [--strict]\n"
        "\n"
        "Joins the rows of two results files (longmix sweep) by configuration (kernel, isa,\n"
        "threads, dtype, bits, n_ctx, chunk, heads, kv_heads, head_dim, d_inner, d_state,\n"
        "batch) and prints the ratio of the medians, NEW over BASE, of each. A configuration\n"
        "is SLOWER (a regression) when both hold:\n"
        "  - its median ratio exceeds the allowance (1 + PCT/100) x max(1, machine), where\n"
        "    machine is how much lower the same-run roofline of NEW's row was than BASE's\n"
        "    (a slower machine minute is not a regression; a faster one never makes one);\n"
        "  - the one-sided Mann-Whitney U test of NEW's repetition times divided by the\n"
        "    allowance against BASE's (column rep_times_s) gives p < alpha: slower by more\n"
        "    than the allowance beyond the noise of the two runs.\n"
        "'faster' is the mirror image. A NEW row whose output failed its check (status not\n"
        "ok) is FAILED. Rows in only one file and rows that cannot be tested (no repetition\n"
        "times, too few of them, a failed baseline row) are listed, never dropped.\n"
        "\n"
        "  --max-slowdown PCT  allowed slowdown in percent (default 10)\n"
        "  --alpha A           level of the U tests (default 0.05); the repetitions must be\n"
        "                      able to reach it (5 vs 5 can reach 0.004, 3 vs 3 only 0.05)\n"
        "  --time wall|cpu     judge wall times (default: median_s, rep_times_s) or the\n"
        "                      process CPU times of the same repetitions (rep_cpu_s): on a\n"
        "                      machine shared with other jobs, CPU time is what their\n"
        "                      scheduling does not inflate (one-thread rows: the kernel's own)\n"
        "  --format F          text (default: one line per configuration, then a summary),\n"
        "                      junit (JUnit XML: one testcase per configuration) or json\n"
        "  --output FILE       write the report to FILE (the summary line goes to stderr)\n"
        "  --raw               no roofline allowance: compare the times as measured\n"
        "  --force             compare files measured on different CPU models\n"
        "  --strict            rows in only one file and untested rows fail too\n"
        "\n"
        "exit status: 0 no regression, 1 a configuration SLOWER or FAILED (or, with --strict,\n"
        "             missing or untested), 2 bad usage, unreadable or malformed file,\n"
        "             different CPU models without --force, no configuration in common\n",
        out);
}

static int usage_error(const char *message, const char *detail)
{
    fprintf(stderr, "longmix compare: %s%s\n(see longmix compare --help)\n", message, detail);
    return LM_EXIT_USAGE;
}

/* A number filling the whole text, optionally followed by '%'. */
static bool parse_number(const char *text, bool percent, double *out)
{
    char *end;
    double v = strtod(text, &end);
    if (end == text || !isfinite(v))
        return false;
    if (percent && *end == '%')
        end++;
    if (*end != '\0')
        return false;
    *out = v;
    return true;
}

static bool parse_format(const char *text, lm_format *format)
{
    static const struct {
        const char *name;
        lm_format format;
    } names[] = {{"text", LM_FORMAT_TEXT}, {"junit", LM_FORMAT_JUNIT}, {"json", LM_FORMAT_JSON}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(text, names[i].name) == 0) {
            *format = names[i].format;
            return true;
        }
    return false;
}

/* 0 to go on, -1 after --help, else an exit code. */
static int parse_cli(int argc, char **argv, compare_cli *o)
{
    memset(o, 0, sizeof *o);
    o->format = LM_FORMAT_TEXT;
    o->rule = (lm_compare_options){.max_slowdown = 0.10, .alpha = 0.05, .use_roofline = true};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double x;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            compare_usage(stdout);
            return -1;
        } else if (strcmp(a, "--raw") == 0) {
            o->rule.use_roofline = false;
        } else if (strcmp(a, "--force") == 0) {
            o->rule.force = true;
        } else if (strcmp(a, "--strict") == 0) {
            o->strict = true;
        } else if (strcmp(a, "--max-slowdown") == 0 || strcmp(a, "--alpha") == 0 ||
                   strcmp(a, "--format") == 0 || strcmp(a, "--output") == 0 ||
                   strcmp(a, "--time") == 0) {
            if (v == NULL)
                return usage_error(a, " needs a value");
            i++;
            if (strcmp(a, "--output") == 0)
                o->output = v;
            else if (strcmp(a, "--time") == 0 && strcmp(v, "wall") != 0 && strcmp(v, "cpu") != 0)
                return usage_error("--time takes wall or cpu, got ", v);
            else if (strcmp(a, "--time") == 0)
                o->rule.cpu_time = strcmp(v, "cpu") == 0;
            else if (strcmp(a, "--format") == 0 && !parse_format(v, &o->format))
                return usage_error("--format takes text, junit or json, got ", v);
            else if (strcmp(a, "--max-slowdown") == 0 &&
                     (!parse_number(v, true, &x) || !(x > 0.0) || x > 1000.0))
                return usage_error("--max-slowdown takes a percentage in (0, 1000], got ", v);
            else if (strcmp(a, "--max-slowdown") == 0)
                o->rule.max_slowdown = x / 100.0;
            else if (strcmp(a, "--alpha") == 0 &&
                     (!parse_number(v, false, &x) || !(x > 0.0 && x < 1.0)))
                return usage_error("--alpha takes a level in (0, 1), got ", v);
            else if (strcmp(a, "--alpha") == 0)
                o->rule.alpha = x;
        } else if (a[0] == '-' && a[1] != '\0') {
            return usage_error("unknown option ", a);
        } else if (o->base == NULL) {
            o->base = a;
        } else if (o->new_ == NULL) {
            o->new_ = a;
        } else {
            return usage_error("takes exactly two files (BASE.csv NEW.csv); extra: ", a);
        }
    }
    if (o->new_ == NULL)
        return usage_error("needs two files: BASE.csv NEW.csv", "");
    return 0;
}

/* ---- writers ------------------------------------------------------------------------- */

/* Seconds with a unit: "12.3 ms". */
static void fmt_seconds(char *out, size_t size, double s)
{
    static const struct {
        double scale;
        const char *unit;
    } units[] = {{1.0, "s"}, {1e-3, "ms"}, {1e-6, "us"}, {1e-9, "ns"}};
    size_t u = 0;
    while (u + 1 < sizeof units / sizeof units[0] && s < units[u].scale)
        u++;
    snprintf(out, size, "%.3g %s", s / units[u].scale, units[u].unit);
}

/* Does this verdict make the gate fail? */
static bool fails(lm_compare_verdict v, bool strict)
{
    return v == LM_COMPARE_SLOWER || v == LM_COMPARE_FAILED ||
           (strict && (v == LM_COMPARE_UNTESTED || v == LM_COMPARE_BASE_ONLY ||
                       v == LM_COMPARE_NEW_ONLY));
}

/* What one row says, without its verdict word or label. */
static void describe(const lm_compare_row *r, const compare_cli *o, char *out, size_t size)
{
    char tb[32], tn[32], machine[64] = "";
    switch (r->verdict) {
    case LM_COMPARE_BASE_ONLY:
        snprintf(out, size, "only in %s (line %ld): not measured in %s", o->base, r->base_line,
                 o->new_);
        return;
    case LM_COMPARE_NEW_ONLY:
        snprintf(out, size, "only in %s (line %ld): no baseline in %s", o->new_, r->new_line,
                 o->base);
        return;
    case LM_COMPARE_FAILED:
        snprintf(out, size, "%s", r->reason);
        return;
    default: break;
    }
    if (!(r->ratio > 0.0)) { /* untested before the times were read */
        snprintf(out, size, "%s", r->reason);
        return;
    }
    fmt_seconds(tb, sizeof tb, r->base_median);
    fmt_seconds(tn, sizeof tn, r->new_median);
    if (r->machine > 0.0)
        snprintf(machine, sizeof machine, ", machine %.3fx", r->machine);
    else
        snprintf(machine, sizeof machine, "%s",
                 o->rule.use_roofline ? ", machine n/a (no roofline)" : ", machine not used (--raw)");
    int n = snprintf(out, size, "%.3fx (%s -> %s)%s, allowed %.3fx", r->ratio, tb, tn, machine,
                     r->allowed);
    size_t used = n > 0 && (size_t)n < size ? (size_t)n : size - 1;
    if (r->verdict == LM_COMPARE_UNTESTED)
        snprintf(out + used, size - used, "; untested: %s", r->reason);
    else
        snprintf(out + used, size - used, ", p %.2g (%zu vs %zu reps)",
                 r->verdict == LM_COMPARE_FASTER || r->ratio < 1.0 ? r->p_faster : r->p_slower,
                 r->base_reps, r->new_reps);
}

static const char *verdict_word(lm_compare_verdict v)
{
    static const char *const words[LM_COMPARE_VERDICTS] = {
        "same", "faster", "SLOWER", "FAILED", "untested", "missing", "new"};
    return v < LM_COMPARE_VERDICTS ? words[v] : "?";
}

static void write_summary(const lm_compare_result *res, const compare_cli *o, FILE *out)
{
    const size_t *c = res->counts;
    fprintf(out,
            "%zu configurations: %zu slower, %zu failed, %zu faster, %zu same, %zu untested, "
            "%zu only in %s, %zu only in %s\n",
            res->count, c[LM_COMPARE_SLOWER], c[LM_COMPARE_FAILED], c[LM_COMPARE_FASTER],
            c[LM_COMPARE_SAME], c[LM_COMPARE_UNTESTED], c[LM_COMPARE_BASE_ONLY], o->base,
            c[LM_COMPARE_NEW_ONLY], o->new_);
}

static void write_text(const lm_compare_result *res, const compare_cli *o, FILE *out)
{
    fprintf(out, "compare: %s (%zu rows) -> %s (%zu rows), CPU '%s'", o->base, res->base_rows,
            o->new_, res->new_rows, res->base_cpu);
    if (strcmp(res->base_cpu, res->new_cpu) != 0)
        fprintf(out, " vs '%s' (--force)", res->new_cpu);
    fprintf(out, "\nrule: SLOWER when the %s time's median ratio > %.3g x machine slowdown%s and "
                 "one-sided U test p < %g\n",
            o->rule.cpu_time ? "CPU" : "wall", 1.0 + o->rule.max_slowdown,
            o->rule.use_roofline ? " (same-run roofline)" : " (--raw: 1)", o->rule.alpha);
    char text[1024];
    for (size_t i = 0; i < res->count; i++) {
        describe(&res->rows[i], o, text, sizeof text);
        fprintf(out, "%-8s %s: %s\n", verdict_word(res->rows[i].verdict), res->rows[i].label, text);
    }
    write_summary(res, o, out);
}

static void write_junit(const lm_compare_result *res, const compare_cli *o, FILE *out)
{
    size_t failures = 0, skipped = 0;
    for (size_t i = 0; i < res->count; i++) {
        failures += fails(res->rows[i].verdict, o->strict);
        skipped += !fails(res->rows[i].verdict, o->strict) &&
                   res->rows[i].verdict >= LM_COMPARE_UNTESTED;
    }
    fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                 "<testsuites name=\"longmix compare\" tests=\"%zu\" failures=\"%zu\" "
                 "skipped=\"%zu\">\n  <testsuite name=\"",
            res->count, failures, skipped);
    lm_report_write_escaped(out, o->base, false);
    fputs(" -&gt; ", out);
    lm_report_write_escaped(out, o->new_, false);
    fprintf(out, "\" tests=\"%zu\" failures=\"%zu\" skipped=\"%zu\">\n", res->count, failures,
            skipped);
    char text[1024];
    for (size_t i = 0; i < res->count; i++) {
        const lm_compare_row *r = &res->rows[i];
        describe(r, o, text, sizeof text);
        fputs("    <testcase classname=\"compare.", out);
        lm_report_write_escaped(out, r->kernel, false);
        fputs("\" name=\"", out);
        lm_report_write_escaped(out, r->label, false);
        fputs("\">\n", out);
        const char *tag = fails(r->verdict, o->strict) ? "failure"
                          : r->verdict >= LM_COMPARE_UNTESTED ? "skipped" : NULL;
        if (tag != NULL) {
            fprintf(out, "      <%s message=\"%s: ", tag, lm_compare_verdict_name(r->verdict));
            lm_report_write_escaped(out, text, false);
            fputs("\"/>\n", out);
        }
        fputs("      <system-out>", out);
        lm_report_write_escaped(out, text, false);
        fputs("</system-out>\n    </testcase>\n", out);
    }
    fputs("  </testsuite>\n</testsuites>\n", out);
}

/* A number, or null when unknown (negative p-values, zero ratios of absent rows). */
static json_t *number_or_null(double v, bool known)
{
    return known && isfinite(v) ? json_real(v) : json_null();
}

static json_t *row_json(const lm_compare_row *r, const compare_cli *o)
{
    bool both = r->verdict != LM_COMPARE_BASE_ONLY && r->verdict != LM_COMPARE_NEW_ONLY &&
                r->verdict != LM_COMPARE_FAILED && r->base_median > 0.0;
    bool tested = r->p_slower >= 0.0;
    json_t *j = json_pack("{s:s, s:s, s:s, s:b}", "verdict", lm_compare_verdict_name(r->verdict),
                          "label", r->label, "key", r->key, "fails",
                          (int)fails(r->verdict, o->strict));
    json_object_set_new(j, "base_line", r->base_line ? json_integer(r->base_line) : json_null());
    json_object_set_new(j, "new_line", r->new_line ? json_integer(r->new_line) : json_null());
    json_object_set_new(j, "base_median_s", number_or_null(r->base_median, both));
    json_object_set_new(j, "new_median_s", number_or_null(r->new_median, both));
    json_object_set_new(j, "ratio", number_or_null(r->ratio, both));
    json_object_set_new(j, "machine", number_or_null(r->machine, r->machine > 0.0));
    json_object_set_new(j, "allowed", number_or_null(r->allowed, both));
    json_object_set_new(j, "p_slower", number_or_null(r->p_slower, tested));
    json_object_set_new(j, "p_faster", number_or_null(r->p_faster, tested));
    json_object_set_new(j, "base_reps", json_integer((json_int_t)r->base_reps));
    json_object_set_new(j, "new_reps", json_integer((json_int_t)r->new_reps));
    json_object_set_new(j, "exact", json_boolean(tested && r->exact));
    json_object_set_new(j, "reason", json_string(r->reason));
    return j;
}

static void write_json(const lm_compare_result *res, const compare_cli *o, FILE *out)
{
    json_t *counts = json_object(), *rows = json_array();
    for (int v = 0; v < LM_COMPARE_VERDICTS; v++)
        json_object_set_new(counts, lm_compare_verdict_name((lm_compare_verdict)v),
                            json_integer((json_int_t)res->counts[v]));
    for (size_t i = 0; i < res->count; i++)
        json_array_append_new(rows, row_json(&res->rows[i], o));
    json_t *root = json_pack("{s:s, s:s, s:s, s:s, s:f, s:f, s:s, s:b, s:b, s:o, s:o}", "base",
                             o->base, "new", o->new_, "base_cpu_model", res->base_cpu,
                             "new_cpu_model", res->new_cpu, "max_slowdown_pct",
                             100.0 * o->rule.max_slowdown, "alpha", o->rule.alpha, "time",
                             o->rule.cpu_time ? "cpu" : "wall", "roofline",
                             (int)o->rule.use_roofline, "strict", (int)o->strict, "counts",
                             counts, "rows", rows);
    if (root != NULL)
        json_dumpf(root, out, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    fputc('\n', out);
    json_decref(root);
}

static void write_report(const lm_compare_result *res, const compare_cli *o, FILE *out)
{
    if (o->format == LM_FORMAT_JUNIT)
        write_junit(res, o, out);
    else if (o->format == LM_FORMAT_JSON)
        write_json(res, o, out);
    else
        write_text(res, o, out);
}

/* ---- the command ---------------------------------------------------------------------- */

static int exit_code(const lm_compare_result *res, bool strict)
{
    for (size_t i = 0; i < res->count; i++)
        if (fails(res->rows[i].verdict, strict))
            return LM_EXIT_CHECK_FAILED;
    return LM_EXIT_OK;
}

static int run_compare(const compare_cli *o)
{
    lm_csv base, new_;
    lm_error err;
    if (lm_results_read(&base, o->base, &err) != LM_OK) {
        fprintf(stderr, "longmix compare: %s\n", err.message);
        return LM_EXIT_USAGE;
    }
    if (lm_results_read(&new_, o->new_, &err) != LM_OK) {
        lm_csv_free(&base);
        fprintf(stderr, "longmix compare: %s\n", err.message);
        return LM_EXIT_USAGE;
    }
    lm_compare_result res;
    lm_status s = lm_compare_results(&base, o->base, &new_, o->new_, &o->rule, &res, &err);
    lm_csv_free(&base);
    lm_csv_free(&new_);
    if (s != LM_OK) {
        fprintf(stderr, "longmix compare: %s\n", err.message);
        return LM_EXIT_USAGE;
    }
    int rc = exit_code(&res, o->strict);
    FILE *out = o->output != NULL ? fopen(o->output, "w") : stdout;
    if (out == NULL) {
        fprintf(stderr, "longmix compare: cannot write %s\n", o->output);
        rc = LM_EXIT_USAGE;
    } else {
        write_report(&res, o, out);
        if (out != stdout && fclose(out) != 0) {
            fprintf(stderr, "longmix compare: cannot write %s\n", o->output);
            rc = LM_EXIT_USAGE;
        }
        if (out != stdout)
            write_summary(&res, o, stderr);
    }
    lm_compare_free(&res);
    return rc;
}

int lm_cmd_compare(int argc, char **argv)
{
    compare_cli o;
    int rc = parse_cli(argc, argv, &o);
    if (rc != 0)
        return rc < 0 ? LM_EXIT_OK : rc;
    return run_compare(&o);
}
