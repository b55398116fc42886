/* libFuzzer target: the contract path of `longmix verify`, from bytes to report.
 *
 * The input is a contract file's bytes. As verify does (harness/verify.c), they are hashed
 * and the pin checked (pinned to their own digest, so every input goes on), parsed with
 * duplicate keys rejected, given to the checker of their schema (M8, primer, kernels: each
 * loader and checker, kernel cases run on every path this machine has), and the report is
 * written in every format. The size caps are the CLI's (LM_CONTRACT_MAX_BYTES, the case
 * budget; the fuzz build lowers LM_CASE_MAX_BYTES to stay within -rss_limit_mb). A finding
 * is a crash, a sanitizer report, a leak or a timeout; a refused input is not. */
#include "../../harness/contract.h"
#include "../../harness/contract_load.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every report format written to /dev/null (the escaping of ids and messages runs). */
static void write_every_format(const lm_report *report)
{
    static FILE *sink;
    if (sink == NULL && (sink = fopen("/dev/null", "w")) == NULL)
        abort();
    for (int format = LM_FORMAT_TEXT; format <= LM_FORMAT_JSON; format++)
        lm_report_write(report, (lm_format)format, sink);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > LM_CONTRACT_MAX_BYTES) /* lm_contract_read refuses larger files */
        return -1;
    lm_contract contract = {.path = "fuzz.json", .size = size};
    contract.bytes = malloc(size ? size : 1);
    if (contract.bytes == NULL)
        return 0;
    memcpy(contract.bytes, data, size);
    lm_sha256_hex(contract.bytes, size, contract.sha256_hex);
    lm_report *report = lm_report_new();
    if (report == NULL)
        abort();
    lm_report_begin_file(report, contract.path);
    char pinned[65];
    memcpy(pinned, contract.sha256_hex, sizeof pinned);
    if (lm_check_true(report, "pin", "sha256", strcmp(pinned, contract.sha256_hex) == 0, pinned,
                      contract.sha256_hex)) {
        lm_error err = {0};
        lm_contract_checker checker;
        const char *schema = "";
        lm_status status = lm_contract_parse(&contract, &err);
        if (status == LM_OK)
            status = lm_contract_checker_for(&contract, &checker, &schema, &err);
        if (status == LM_OK)
            status = checker(&contract, report, &err);
        if (status != LM_OK) {
            if (memchr(err.message, '\0', sizeof err.message) == NULL)
                abort(); /* an error message is always terminated */
            lm_report_error(report, contract.path, err.message);
        }
    }
    write_every_format(report);
    lm_report_free(report);
    lm_contract_free(&contract);
    return 0;
}
