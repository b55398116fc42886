/* A contract file as read by `longmix verify`: the raw bytes (read once), their SHA-256,
 * and the JSON parsed from those same bytes (duplicate keys rejected). */
#ifndef LONGMIX_CONTRACT_H
#define LONGMIX_CONTRACT_H

#include "longmix.h"
#include "verify_report.h"

#include <jansson.h>

typedef struct lm_contract {
    const char *path;      /* as given on the command line or in SHA256SUMS */
    unsigned char *bytes;  /* the file's raw bytes */
    size_t size;
    char sha256_hex[65];   /* of `bytes`, lower-case hex */
    json_t *root;          /* parsed from `bytes`; NULL until parsed */
} lm_contract;

/* A schema's checker: recomputes every expected number of the contract and records one
 * check each in `report`. Returns LM_OK when the contract could be checked (failed checks
 * live in the report); LM_ERR_SCHEMA / LM_ERR_TYPE when a field is missing or of the wrong
 * kind (err names its path), which the CLI reports as bad input (exit 2). */
typedef lm_status (*lm_contract_checker)(const lm_contract *contract, lm_report *report,
                                         lm_error *err);

lm_status lm_verify_m8(const lm_contract *contract, lm_report *report, lm_error *err);
lm_status lm_verify_primer(const lm_contract *contract, lm_report *report, lm_error *err);
lm_status lm_verify_kernels(const lm_contract *contract, lm_report *report, lm_error *err);

struct lm_plugin;
/* A kernel contract checked on a loaded plugin's operators instead of longmix's own
 * (harness/kernels_plugin.c): each case of an operator the plugin provides runs in a child
 * process limited to timeout_s seconds; checks are named plugin:NAME/op. */
lm_status lm_verify_kernels_plugin(const lm_contract *contract, const struct lm_plugin *plugin,
                                   double timeout_s, lm_report *report, lm_error *err);

#endif
