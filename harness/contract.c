/* Loading a contract: read the bytes once, hash those bytes (nettle SHA-256), look the
 * pin up, then parse the same buffer with jansson (duplicate keys rejected) and pick the
 * schema's checker. Nothing is re-serialised before hashing. */
#include "contract.h"
#include "contract_load.h"
#include "files.h"

#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

lm_status lm_contract_read(lm_contract *contract, const char *path, lm_error *err)
{
    *contract = (lm_contract){.path = path};
    char *bytes;
    size_t size;
    lm_status status = lm_read_file(path, LM_CONTRACT_MAX_BYTES, true, &bytes, &size, err);
    if (status != LM_OK)
        return status;
    contract->bytes = (unsigned char *)bytes;
    contract->size = size;
    lm_sha256_hex(contract->bytes, size, contract->sha256_hex);
    return LM_OK;
}

void lm_sha256_hex(const unsigned char *bytes, size_t size, char hex[65])
{
    struct sha256_ctx context;
    uint8_t digest[SHA256_DIGEST_SIZE];
    sha256_init(&context);
    sha256_update(&context, size, bytes);
    sha256_digest(&context, sizeof digest, digest);
    for (size_t i = 0; i < sizeof digest; i++)
        snprintf(hex + 2 * i, 3, "%02x", digest[i]);
}

lm_status lm_contract_parse(lm_contract *contract, lm_error *err)
{
    json_error_t json_error;
    contract->root = json_loadb((const char *)contract->bytes, contract->size,
                                JSON_REJECT_DUPLICATES, &json_error);
    if (contract->root == NULL)
        return lm_fail(err, LM_ERR_PARSE, "%s:%d:%d: malformed JSON: %s", contract->path,
                       json_error.line, json_error.column, json_error.text);
    if (!json_is_object(contract->root))
        return lm_fail(err, LM_ERR_SCHEMA, "%s: a contract must be a JSON object",
                       contract->path);
    return LM_OK;
}

void lm_contract_free(lm_contract *contract)
{
    json_decref(contract->root);
    free(contract->bytes);
    *contract = (lm_contract){0};
}

/* Schemas: the M8 notebook's (schema_version 2, no "schema" field) and longmix's own. */
lm_status lm_contract_checker_for(const lm_contract *contract, lm_contract_checker *checker,
                                  const char **schema_name, lm_error *err)
{
    const json_t *schema = json_object_get(contract->root, "schema");
    if (schema != NULL) {
        if (!json_is_string(schema))
            return lm_fail(err, LM_ERR_TYPE, "%s: field schema must be a string", contract->path);
        const char *name = json_string_value(schema);
        *schema_name = name;
        if (strcmp(name, "longmix-primer/1") == 0)
            *checker = lm_verify_primer;
        else if (strcmp(name, "longmix-kernels/1") == 0)
            *checker = lm_verify_kernels;
        else
            return lm_fail(err, LM_ERR_SCHEMA,
                           "%s: unknown schema '%s' (known: longmix-primer/1, longmix-kernels/1, "
                           "or schema_version 2 for M8)", contract->path, name);
        return LM_OK;
    }
    const json_t *version = json_object_get(contract->root, "schema_version");
    if (version == NULL)
        return lm_fail(err, LM_ERR_SCHEMA,
                       "%s: missing field schema (or schema_version for an M8 contract)",
                       contract->path);
    if (!json_is_integer(version))
        return lm_fail(err, LM_ERR_TYPE, "%s: schema_version must be an integer", contract->path);
    if (json_integer_value(version) != 2)
        return lm_fail(err, LM_ERR_SCHEMA, "%s: unknown schema_version %lld (this build knows 2)",
                       contract->path, (long long)json_integer_value(version));
    *schema_name = "m8/2";
    *checker = lm_verify_m8;
    return LM_OK;
}
