/* Option values shared by the measurement subcommands: integer lists with k/M suffixes
 * and doubling ranges, ISA lists, "K/N" shards. Library code: errors are values. */
#ifndef LONGMIX_OPTS_H
#define LONGMIX_OPTS_H

#include "longmix.h"

#define LM_LIST_MAX 64
/* The largest value a size list takes (2^40), and a thread list (4096). */
#define LM_SIZE_VALUE_MAX (1L << 40)
#define LM_THREADS_MAX 4096L

/* One decimal integer in [min, max] (the whole text; no suffix). LM_ERR_ARG
 * "NAME must be an integer in MIN..MAX, got 'TEXT'" otherwise, overflow included. */
lm_status lm_parse_integer(const char *name, const char *text, long min, long max,
                           long *out, lm_error *err);

/* Parses "1,2,4", "4k,16k" (k = 1024, M = 1048576) and doubling ranges "256..16384"
 * (256, 512, ..., 16384) into out[0..*count). `name` names the option in messages.
 * LM_ERR_ARG for an empty list, a non-integer, a value below `min` or above
 * LM_SIZE_VALUE_MAX (suffix applied: "'18014398509481985k' is too large"), or more than
 * LM_LIST_MAX values. */
lm_status lm_parse_size_list(const char *name, const char *text, long min, long *out,
                             size_t *count, lm_error *err);

/* Thread counts: "auto" = 1 and `cores` (once when cores is 1), "cores" = cores, else a
 * size list as above with values in 1..LM_THREADS_MAX. */
lm_status lm_parse_thread_list(const char *name, const char *text, int cores, long *out,
                               size_t *count, lm_error *err);

/* Parses "scalar,avx2", "all" (every available path) or "active" (the dispatcher's
 * choice). LM_ERR_ARG for unknown names, LM_ERR_UNSUPPORTED for paths this machine lacks. */
lm_status lm_parse_isa_list(const char *name, const char *text, lm_isa *out, size_t *count,
                            lm_error *err);

/* Parses a comma list of words into out[0..*count) (each at most 31 characters). */
lm_status lm_parse_word_list(const char *name, const char *text, char out[][32], size_t *count,
                             lm_error *err);

/* Parses "K/N" with 1 <= K <= N. */
lm_status lm_parse_shard(const char *text, int *k, int *n, lm_error *err);

/* True when configuration `index` (0-based, in enumeration order) belongs to shard K of N:
 * index % N == K - 1. */
int lm_shard_selects(size_t index, int k, int n);

#endif
