/* Reading, hashing, parsing and pin lookup of contract files (used by `longmix verify`). */
#ifndef LONGMIX_CONTRACT_LOAD_H
#define LONGMIX_CONTRACT_LOAD_H

#include "contract.h"

/* The largest contract file verify reads: 16 MiB, 80 times the largest pinned one (its JSON
 * tree takes up to some 20 times the bytes in memory). */
#define LM_CONTRACT_MAX_BYTES ((size_t)16 << 20)
/* The largest SHA256SUMS file (1 MiB). */
#define LM_PINS_MAX_BYTES ((size_t)1 << 20)

/* Reads the whole file once into contract->bytes and hashes it: a regular file of at most
 * LM_CONTRACT_MAX_BYTES, or standard input (a pipe or a file) for "-" (lm_read_file).
 * LM_ERR_IO names the file ("is a directory", "not a regular file (a FIFO)"), LM_ERR_ARG
 * when it is larger than the limit. */
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

/* Reads a pin list (a regular file of at most LM_PINS_MAX_BYTES); LM_ERR_IO when
 * unreadable, LM_ERR_PARSE naming the bad line by its number in the file. */
lm_status lm_pins_read(const char *path, lm_pin_list *pins, lm_error *err);
/* The pinned digest of `name` (a bare file name), or NULL. */
const char *lm_pins_find(const lm_pin_list *pins, const char *name);
void lm_pins_free(lm_pin_list *pins);

#endif
