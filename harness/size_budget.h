/* Checked sizes for buffers whose extents come from a file: saturating products and sums
 * (SIZE_MAX stands for "does not fit in size_t", which every limit refuses), and a budget
 * that adds up every buffer of one contract case before anything is allocated, so a small
 * file cannot ask for gigabytes. Library code: errors are values. */
#ifndef LONGMIX_SIZE_BUDGET_H
#define LONGMIX_SIZE_BUDGET_H

#include "longmix.h"

/* The most one contract case may allocate, all of its buffers together: 1 GiB. A build
 * may lower it (-DLM_CASE_MAX_BYTES=...: the fuzz targets do, to stay within libFuzzer's
 * -rss_limit_mb). */
#ifndef LM_CASE_MAX_BYTES
#define LM_CASE_MAX_BYTES ((size_t)1 << 30)
#endif

/* a * b, or SIZE_MAX when the product does not fit. */
size_t lm_size_mul(size_t a, size_t b);
/* a + b, or SIZE_MAX when the sum does not fit. */
size_t lm_size_add(size_t a, size_t b);
/* The product of extents[0..count) (1 when count is 0), or SIZE_MAX when it does not fit. */
size_t lm_size_product(const size_t *extents, size_t count);
/* LM_PRODUCT(B, L, D): the checked product of its (size_t) arguments, SIZE_MAX when it
 * does not fit. */
#define LM_PRODUCT(...)                                                                  \
    lm_size_product((const size_t[]){__VA_ARGS__},                                      \
                    sizeof((const size_t[]){__VA_ARGS__}) / sizeof(size_t))

/* The bytes a case will allocate, summed buffer by buffer (saturating). */
typedef struct lm_budget {
    size_t limit; /* bytes allowed in total */
    size_t bytes; /* bytes asked for so far; SIZE_MAX once past what size_t holds */
} lm_budget;

/* An empty budget of `limit` bytes. */
lm_budget lm_budget_of(size_t limit);
/* Adds a buffer of `count` elements of `element_size` bytes. */
void lm_budget_add(lm_budget *budget, size_t count, size_t element_size);
/* LM_OK when the buffers added fit the limit; otherwise LM_ERR_SCHEMA
 * "<what> needs 3.2 GiB (all its buffers), more than the 1 GiB limit". */
lm_status lm_budget_check(const lm_budget *budget, const char *what, lm_error *err);

/* "1 GiB", "3.2 GiB", "512 MiB", "17 KiB", "12 bytes" (units of 2^10) into text. */
void lm_bytes_text(size_t bytes, char *text, size_t size);

#endif
