/* Sparse attention patterns (lesson section 3): a causal window plus global tokens
 * (Longformer / BigBird style) and the Sparse Transformer's strided pattern, as uint8
 * masks {n, n} (1 = scored) and as pair counts computed without building the mask. */
#ifndef LONGMIX_SPARSE_H
#define LONGMIX_SPARSE_H

#include "lm_core.h"

/* Window of w plus global tokens, causally: M[i, j] = 1 when j <= i and (i - j < w or
 * j is global or i is global). global_tokens {n_global}, each < n (n_global may be 0).
 * mask {n, n}. LM_ERR_ARG for w = 0 or a global token >= n, LM_ERR_SHAPE for n = 0. */
lm_status lm_sparse_global_local_mask(size_t n, size_t w, const size_t *global_tokens,
                                      size_t n_global, uint8_t *mask, lm_error *err);

/* M[i, j] = 1 when i - j >= 0 and (i - j < stride or (i - j) mod stride = 0). */
lm_status lm_sparse_strided_mask(size_t n, size_t stride, uint8_t *mask, lm_error *err);

/* The pairs each pattern scores (the count of 1s in its mask). */
lm_status lm_sparse_global_local_pairs(size_t n, size_t w, const size_t *global_tokens,
                                       size_t n_global, uint64_t *pairs, lm_error *err);
lm_status lm_sparse_strided_pairs(size_t n, size_t stride, uint64_t *pairs, lm_error *err);

#endif
