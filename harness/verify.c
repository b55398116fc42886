/* `longmix verify`: check SHA-256-pinned numerical contracts.
 * Exit 0 when every check passed, 1 when one failed (a pin mismatch included), 2 for bad
 * usage, an unreadable file, malformed JSON, a missing field or an unknown schema. */
#include "cli.h"
#include "contract_load.h"

#include <ctype.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct verify_options {
    const char *sha256;     /* --sha256: pin for the one FILE given, else NULL */
    const char *contracts;  /* --contracts: folder whose SHA256SUMS lists the defaults */
    const char *output;     /* --output: report file instead of stdout */
    lm_format format;
} verify_options;

static void verify_usage(FILE *out)
{
    fputs("usage: longmix verify [--sha256 HEX] [--format text|tap|junit|json] [--output FILE]\n"
          "                      [--contracts DIR] [FILE...]\n"
          "\n"
          "Checks numerical contracts. Each FILE is read once; the SHA-256 of its bytes must\n"
          "equal its pin (the line for it in SHA256SUMS beside it, or --sha256 when one FILE is\n"
          "given); then its JSON is parsed and every expected number is recomputed in C.\n"
          "Without FILE, every contract listed in DIR/SHA256SUMS (default contracts/).\n"
          "\n"
          "  --sha256 HEX     pin for the single FILE (64 hex digits)\n"
          "  --format F       text (default: one PASS/FAIL line per check, then 'N passed, N failed'),\n"
          "                   tap, junit (JUnit XML) or json\n"
          "  --output FILE    write the report to FILE (the summary line still goes to stderr)\n"
          "  --contracts DIR  folder of the default contracts and their SHA256SUMS\n"
          "\n"
          "exit status: 0 all passed, 1 a check failed (pin mismatch included),\n"
          "             2 bad usage, unreadable file, malformed JSON, missing field, unknown schema\n",
          out);
}

static int usage_error(const char *message, const char *detail)
{
    fprintf(stderr, "longmix verify: %s%s\n(see longmix verify --help)\n", message, detail);
    return LM_EXIT_USAGE;
}

static bool parse_format(const char *text, lm_format *format)
{
    static const char *const names[] = {"text", "tap", "junit", "json"};
    for (int i = 0; i < 4; i++)
        if (strcmp(text, names[i]) == 0) {
            *format = (lm_format)i;
            return true;
        }
    return false;
}

static bool valid_digest(const char *text)
{
    if (strlen(text) != 64)
        return false;
    for (int i = 0; i < 64; i++)
        if (!isxdigit((unsigned char)text[i]))
            return false;
    return true;
}

/* The pin of `path` from SHA256SUMS in its folder. */
static lm_status pin_beside(const char *path, char digest[65], lm_error *err)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    int folder_length = slash ? (int)(slash - path) : 1;
    char sums[4096];
    snprintf(sums, sizeof sums, "%.*s/SHA256SUMS", folder_length, slash ? path : ".");
    lm_pin_list pins;
    lm_status status = lm_pins_read(sums, &pins, err);
    if (status != LM_OK) {
        char reason[LM_ERROR_MESSAGE_SIZE];
        snprintf(reason, sizeof reason, "%s", err ? err->message : "");
        return lm_fail(err, status, "%s has no pin: %s (pass --sha256 HEX or add it to %s)", path,
                       reason, sums);
    }
    const char *found = lm_pins_find(&pins, base);
    if (found != NULL)
        memcpy(digest, found, 65);
    lm_pins_free(&pins);
    if (found == NULL)
        return lm_fail(err, LM_ERR_SCHEMA, "%s has no pin in %s (pass --sha256 HEX or add a line)",
                       path, sums);
    return LM_OK;
}

/* Verifies one file: pin, parse, schema, checks. Returns an exit code for this file. */
static int verify_file(const char *path, const char *pinned, lm_report *report)
{
    lm_error err = {0};
    char digest[65];
    if (pinned != NULL) {
        for (int i = 0; i < 65; i++)
            digest[i] = (char)tolower((unsigned char)pinned[i]);
    } else if (pin_beside(path, digest, &err) != LM_OK) {
        fprintf(stderr, "longmix verify: %s\n", err.message);
        return LM_EXIT_USAGE;
    }
    lm_contract contract;
    if (lm_contract_read(&contract, path, &err) != LM_OK) {
        fprintf(stderr, "longmix verify: %s\n", err.message);
        return LM_EXIT_USAGE;
    }
    lm_report_begin_file(report, path);
    int code = LM_EXIT_OK;
    if (!lm_check_true(report, "pin", "sha256", strcmp(digest, contract.sha256_hex) == 0, digest,
                       contract.sha256_hex)) {
        fprintf(stderr, "longmix verify: %s: SHA-256 mismatch: pinned %s, file has %s; "
                        "the file is not trusted further\n", path, digest, contract.sha256_hex);
        code = LM_EXIT_CHECK_FAILED;
    } else {
        lm_contract_checker checker;
        const char *schema = "";
        lm_status status = lm_contract_parse(&contract, &err);
        if (status == LM_OK)
            status = lm_contract_checker_for(&contract, &checker, &schema, &err);
        if (status == LM_OK)
            status = checker(&contract, report, &err);
        if (status != LM_OK) {
            fprintf(stderr, "longmix verify: %s%s%s\n",
                    strncmp(err.message, path, strlen(path)) == 0 ? "" : path,
                    strncmp(err.message, path, strlen(path)) == 0 ? "" : ": ", err.message);
            code = LM_EXIT_USAGE;
        }
    }
    lm_contract_free(&contract);
    return code;
}

/* Verifies every file named in DIR/SHA256SUMS, in its order. */
static int verify_listed(const char *folder, lm_report *report)
{
    char sums[4096];
    snprintf(sums, sizeof sums, "%s/SHA256SUMS", folder);
    lm_pin_list pins;
    lm_error err;
    if (lm_pins_read(sums, &pins, &err) != LM_OK) {
        fprintf(stderr, "longmix verify: %s (run from the longmix folder, or pass --contracts "
                        "DIR or FILE...)\n", err.message);
        return LM_EXIT_USAGE;
    }
    int worst = LM_EXIT_OK;
    for (size_t i = 0; i < pins.count; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", folder, pins.name[i]);
        int code = verify_file(path, pins.digest[i], report);
        worst = code > worst ? code : worst;
    }
    lm_pins_free(&pins);
    return worst;
}

static int parse_options(int argc, char **argv, verify_options *options)
{
    static const struct option long_options[] = {
        {"sha256", required_argument, NULL, 's'}, {"format", required_argument, NULL, 'f'},
        {"output", required_argument, NULL, 'o'}, {"contracts", required_argument, NULL, 'c'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
    };
    *options = (verify_options){.contracts = "contracts", .format = LM_FORMAT_TEXT};
    opterr = 0;
    optind = 1;
    int option;
    while ((option = getopt_long(argc, argv, "+h", long_options, NULL)) != -1) {
        switch (option) {
        case 's':
            if (!valid_digest(optarg))
                return usage_error("--sha256 needs 64 hex digits, got ", optarg);
            options->sha256 = optarg;
            break;
        case 'f':
            if (!parse_format(optarg, &options->format))
                return usage_error("--format must be text, tap, junit or json, got ", optarg);
            break;
        case 'o': options->output = optarg; break;
        case 'c': options->contracts = optarg; break;
        case 'h': verify_usage(stdout); return -1;
        default:
            return usage_error("unknown or incomplete option ", argv[optind - 1]);
        }
    }
    if (options->sha256 != NULL && argc - optind != 1)
        return usage_error("--sha256 pins exactly one FILE", "");
    return LM_EXIT_OK;
}

int lm_cmd_verify(int argc, char **argv)
{
    verify_options options;
    int code = parse_options(argc, argv, &options);
    if (code != LM_EXIT_OK)
        return code < 0 ? LM_EXIT_OK : code;
    FILE *out = stdout;
    if (options.output != NULL && (out = fopen(options.output, "w")) == NULL) {
        fprintf(stderr, "longmix verify: cannot write %s\n", options.output);
        return LM_EXIT_USAGE;
    }
    lm_report *report = lm_report_new();
    if (report == NULL) {
        fprintf(stderr, "longmix verify: out of memory\n");
        return LM_EXIT_USAGE;
    }
    int worst = LM_EXIT_OK;
    if (optind == argc)
        worst = verify_listed(options.contracts, report);
    for (int i = optind; i < argc; i++) {
        int file_code = verify_file(argv[i], options.sha256, report);
        worst = file_code > worst ? file_code : worst;
    }
    lm_report_write(report, options.format, out);
    if (out != stdout || options.format != LM_FORMAT_TEXT)
        fprintf(stderr, "%zu passed, %zu failed\n", lm_report_passed(report),
                lm_report_failed(report));
    if (out != stdout && fclose(out) != 0) {
        fprintf(stderr, "longmix verify: error writing %s\n", options.output);
        worst = LM_EXIT_USAGE;
    }
    if (worst == LM_EXIT_OK && lm_report_failed(report) > 0)
        worst = LM_EXIT_CHECK_FAILED;
    lm_report_free(report);
    return worst;
}
