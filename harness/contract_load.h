/* Reading, hashing, parsing and pin lookup of contract files (used by `longmix verify`). */
#ifndef LONGMIX_CONTRACT_LOAD_H
#define LONGMIX_CONTRACT_LOAD_H

#include "contract.h"

/* Reads the whole file once into contract->bytes and hashes it. LM_ERR_IO names the file. */
lm_status lm_contract_read(lm_contract *contract, const char *path, lm_error *err);
/* Parses contract->bytes (duplicate keys rejected). LM_ERR_PARSE gives file:line:column. */
lm_status lm_contract_parse(lm_contract *contract, lm_error *err);
/* The checker for the contract's schema; LM_ERR_SCHEMA for an unknown one. */
lm_status lm_contract_checker_for(const lm_contract *contract, lm_contract_checker *checker,
                                  const char **schema_name, lm_error *err);
void lm_contract_free(lm_contract *contract);

/* Lower-case hex SHA-256 of bytes (hex receives 64 digits and a NUL). */
void lm_sha256_hex(const unsigned char *bytes, size_t size, char hex[65]);

/* A SHA256SUMS file (sha256sum format: "HEX  NAME" or "HEX *NAME" per line). */
typedef struct lm_pin_list {
    size_t count;
    char (*digest)[65];
    char **name;
} lm_pin_list;

/* Reads a pin list; LM_ERR_IO when unreadable, LM_ERR_PARSE naming the bad line. */
lm_status lm_pins_read(const char *path, lm_pin_list *pins, lm_error *err);
/* The pinned digest of `name` (a bare file name), or NULL. */
const char *lm_pins_find(const lm_pin_list *pins, const char *name);
void lm_pins_free(lm_pin_list *pins);

#endif
