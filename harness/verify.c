/* `longmix verify`: check SHA-256-pinned numerical contracts.
 * Exit 0 when every check passed, 1 when one failed (a pin mismatch included), 2 for bad
 * usage, an unreadable file, malformed JSON, a missing field or an unknown schema. A file
 * that could not be checked is an ERROR in the report, in every format. */
#include "cli.h"
#include "contract_load.h"
#include "files.h"

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
    bool summary;           /* --summary: one line per file on stdout */
} verify_options;

static void verify_usage(FILE *out)
{
    fputs("usage: longmix verify [--sha256 HEX] [--format text|tap|junit|json] [--output FILE]\n"
          "                      [--summary] [--contracts DIR] [FILE...]\n"
          "\n"
          "Checks numerical contracts. Each FILE (a regular file of at most 16 MiB, or '-' for\n"
          "standard input, a pipe, with --sha256) is read once; the SHA-256 of its bytes must\n"
          "equal its pin (the line for it in SHA256SUMS in its folder, or --sha256 when one FILE\n"
          "is given); then its JSON is parsed and every expected number is recomputed in C.\n"
          "Without FILE, every contract listed in DIR/SHA256SUMS (default contracts/).\n"
          "\n"
          "  --sha256 HEX     pin for the single FILE (64 hex digits)\n"
          "  --format F       text (default: one PASS/FAIL/ERROR line per check or file, then\n"
          "                   'N passed, N failed, N errors'), tap, junit (JUnit XML) or json\n"
          "  --output FILE    write the report to FILE, atomically (the summary line still goes\n"
          "                   to stderr)\n"
          "  --summary        on stdout, one line per contract file instead of one per check\n"
          "                   ('PASS FILE: N checks, N passed, 0 failed'; FAIL names the first\n"
          "                   failed check), then the summary line; with --output FILE the full\n"
          "                   report (--format) goes to FILE\n"
          "  --contracts DIR  folder of the default contracts and their SHA256SUMS\n"
          "\n"
          "A file that cannot be checked (unreadable, unpinned, malformed, a bad field) is an\n"
          "ERROR: counted in 'N errors', a <error> in JUnit, 'not ok' in TAP, \"errors\" in JSON.\n"
          "A run passed only when the summary says 0 failed and 0 errors.\n"
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

/* Prints "longmix verify: MESSAGE" on stderr, escaped (ids and paths come from files). */
static void say(const char *message)
{
    fputs("longmix verify: ", stderr);
    lm_write_visible(stderr, message);
    fputc('\n', stderr);
}

/* An exit-2 error for `path`: said on stderr and recorded in the report (without the
 * "PATH: " the message may start with, since the report names the file). */
static int file_error(lm_report *report, const char *path, const char *message)
{
    say(message);
    const size_t length = strlen(path);
    const bool named =
        strncmp(message, path, length) == 0 && strncmp(message + length, ": ", 2) == 0;
    lm_report_error(report, path, named ? message + length + 2 : message);
    return LM_EXIT_USAGE;
}

/* The pin of `path` from SHA256SUMS in its folder. */
static lm_status pin_beside(const char *path, char digest[65], lm_error *err)
{
    if (strcmp(path, "-") == 0)
        return lm_fail(err, LM_ERR_ARG, "standard input has no folder and so no SHA256SUMS: "
                       "pass its pin with --sha256 HEX");
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    char folder[4096], sums[4200];
    snprintf(folder, sizeof folder, "%.*s", slash ? (slash == path ? 1 : (int)(slash - path)) : 1,
             slash ? path : ".");
    snprintf(sums, sizeof sums, "%s%sSHA256SUMS", folder, strcmp(folder, "/") == 0 ? "" : "/");
    lm_pin_list pins;
    lm_status status = lm_pins_read(sums, &pins, err);
    if (status != LM_OK) {
        char reason[LM_ERROR_MESSAGE_SIZE];
        snprintf(reason, sizeof reason, "%s", err ? err->message : "");
        return lm_fail(err, status, "%s has no pin: its folder '%s' has no usable SHA256SUMS "
                       "(%s); pass --sha256 HEX or add a line for it to %s", path, folder,
                       reason, sums);
    }
    const char *found = lm_pins_find(&pins, base);
    if (found != NULL)
        memcpy(digest, found, 65);
    lm_pins_free(&pins);
    if (found == NULL)
        return lm_fail(err, LM_ERR_SCHEMA, "%s has no pin in %s, the SHA256SUMS of its folder "
                       "'%s' (pass --sha256 HEX or add a line)", path, sums, folder);
    return LM_OK;
}

/* Pin check, parse, schema and checks of a contract read; an exit code for this file. */
static int check_contract(lm_contract *contract, const char *path, const char *digest,
                          lm_report *report)
{
    lm_error err = {0};
    lm_report_begin_file(report, path);
    if (!lm_check_true(report, "pin", "sha256", strcmp(digest, contract->sha256_hex) == 0,
                       digest, contract->sha256_hex)) {
        char message[LM_ERROR_MESSAGE_SIZE + 256];
        snprintf(message, sizeof message, "%s: SHA-256 mismatch: pinned %s, file has %s; the "
                 "file is not trusted further", path, digest, contract->sha256_hex);
        say(message);
        return LM_EXIT_CHECK_FAILED;
    }
    lm_contract_checker checker;
    const char *schema = "";
    lm_status status = lm_contract_parse(contract, &err);
    if (status == LM_OK)
        status = lm_contract_checker_for(contract, &checker, &schema, &err);
    if (status == LM_OK)
        status = checker(contract, report, &err);
    if (status == LM_OK)
        return LM_EXIT_OK;
    char message[LM_ERROR_MESSAGE_SIZE + 4096];
    const bool named = strncmp(err.message, path, strlen(path)) == 0;
    snprintf(message, sizeof message, "%s%s%s", named ? "" : path, named ? "" : ": ",
             err.message);
    return file_error(report, path, message);
}

/* Verifies one file: read, pin, parse, schema, checks. Returns an exit code for this file. */
static int verify_file(const char *path, const char *pinned, lm_report *report)
{
    lm_error err = {0};
    lm_contract contract;
    if (lm_contract_read(&contract, path, &err) != LM_OK)
        return file_error(report, path, err.message);
    char digest[65];
    int code;
    if (pinned != NULL) {
        for (int i = 0; i < 65; i++)
            digest[i] = (char)tolower((unsigned char)pinned[i]);
        code = check_contract(&contract, path, digest, report);
    } else if (pin_beside(path, digest, &err) != LM_OK) {
        code = file_error(report, path, err.message);
    } else {
        code = check_contract(&contract, path, digest, report);
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
        char message[LM_ERROR_MESSAGE_SIZE + 128];
        snprintf(message, sizeof message, "%s (run from the longmix folder, or pass --contracts "
                 "DIR or FILE...)", err.message);
        return file_error(report, sums, message);
    }
    int worst = LM_EXIT_OK;
    for (size_t i = 0; i < pins.count; i++) {
        char path[8192];
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
        {"summary", no_argument, NULL, 'S'},      {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
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
        case 'S': options->summary = true; break;
        case 'h': verify_usage(stdout); return -1;
        default:
            return usage_error("unknown or incomplete option ", argv[optind - 1]);
        }
    }
    if (options->sha256 != NULL && argc - optind != 1)
        return usage_error("--sha256 pins exactly one FILE", "");
    return LM_EXIT_OK;
}

/* Writes the report to stdout, or atomically to --output; false when that failed. */
static bool write_report(const lm_report *report, const verify_options *options,
                         lm_atomic_file *file)
{
    if (options->summary)
        lm_report_write_per_file(report, stdout);
    if (options->output == NULL) {
        if (!options->summary)
            lm_report_write(report, options->format, stdout);
        return fflush(stdout) == 0;
    }
    lm_error err;
    lm_report_write(report, options->format, file->stream);
    if (lm_atomic_commit(file, &err) != LM_OK) {
        say(err.message);
        return false;
    }
    return true;
}

int lm_cmd_verify(int argc, char **argv)
{
    verify_options options;
    int code = parse_options(argc, argv, &options);
    if (code != LM_EXIT_OK)
        return code < 0 ? LM_EXIT_OK : code;
    lm_atomic_file file = {0};
    lm_error err;
    if (options.output != NULL && lm_atomic_open(&file, options.output, &err) != LM_OK) {
        say(err.message);
        return LM_EXIT_USAGE;
    }
    lm_report *report = lm_report_new();
    if (report == NULL) {
        say("out of memory");
        lm_atomic_abort(&file);
        return LM_EXIT_USAGE;
    }
    int worst = LM_EXIT_OK;
    if (optind == argc)
        worst = verify_listed(options.contracts, report);
    for (int i = optind; i < argc; i++) {
        int file_code = verify_file(argv[i], options.sha256, report);
        worst = file_code > worst ? file_code : worst;
    }
    if (!write_report(report, &options, &file))
        worst = LM_EXIT_USAGE;
    if (!options.summary && (options.output != NULL || options.format != LM_FORMAT_TEXT))
        fprintf(stderr, "%zu passed, %zu failed, %zu errors\n", lm_report_passed(report),
                lm_report_failed(report), lm_report_errors(report));
    if (lm_report_errors(report) > 0)
        worst = LM_EXIT_USAGE; /* an error recorded is never a pass, nor a mere failure */
    else if (worst == LM_EXIT_OK && lm_report_failed(report) > 0)
        worst = LM_EXIT_CHECK_FAILED;
    lm_report_free(report);
    return worst;
}
