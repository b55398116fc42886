/* The one harness registry: every kernel word of the list (kernels/include/lm_kernels.h)
 * and every composite operator, with its bench case (what `sweep`, `crossover` and the
 * Google Benchmark shim measure) and its contract runner (what `verify` runs for a
 * kernels.json case), under ONE name: the word of `sweep --kernel`, of the contract's
 * "kernel" and of the CSV's kernel column.
 *
 *   LM_REGISTRY(BOTH, BENCH, CONTRACT)
 *     BOTH(word, summary)      a bench case lm_bench_<word> and a runner lm_kcase_<word>
 *     BENCH(word, summary)     a bench case only (a variant measured on its own)
 *     CONTRACT(word, summary)  a runner only (the lesson's float64 references)
 *
 * The bench cases live in harness/bench_<family>.c, the runners in kcases_<family>.c.
 * Old names (the sweep's attn_decode_q and affine_scan, the contract's attention_prefill,
 * kvquant_decode, ssm_mamba1_scan, linear_attention, delta_rule, ssm_ssd, the sweep's
 * mla_decode_absorbed / _expanded / _cached, ...) are accepted
 * as aliases (harness/registry.c), so existing CSVs and contracts keep working.
 * tests/test_registry.c fails when a word of the kernel list lacks a bench case, a runner,
 * a contract case or a recipe in docs/contracts.md. */
#ifndef LONGMIX_REGISTRY_H
#define LONGMIX_REGISTRY_H

#include "bench.h"
#include "kernel_cases.h"

#define LM_REGISTRY(BOTH, BENCH, CONTRACT)                                                 \
    BOTH(gemv_rowdot, "y = X w, x {n, d} row-major, w {d}, y {n}")                        \
    BOTH(attn_decode, "decode over a KV cache, q {batch, heads, d}, k, v {batch, kv_heads, " \
                      "capacity, d}")                                                      \
    BOTH(kvq_decode, "one decode step over a quantized KV cache (int8, int4, kivi4, kivi2, " \
                     "kivi4g64, kivi2g64), o {heads, d}")                                  \
    BOTH(attn_prefill, "causal (masked) GQA prefill, q {n, heads, d}, k, v {n, kv_heads, d}, " \
                       "o {n, heads, d}")                                                  \
    BENCH(attn_prefill_window, NULL)                                                       \
    BOTH(window_decode, "token-by-token decode through a rolling buffer of w slots, "      \
                        "o {n, heads, d}")                                                 \
    BOTH(latent_mla, "DeepSeek-V2 latent attention (absorbed or expanded, decode or "      \
                     "prefill), o {n_q, heads, v}")                                        \
    BENCH(latent_mla_expanded, NULL)                                                       \
    BENCH(latent_mla_cached, NULL)                                                         \
    BOTH(mamba1_scan, "Mamba-1 selective scan (exact ZOH or delta*B), y {B, L, D} then "   \
                      "h_final {B, D, N}")                                                 \
    BENCH(mamba1_step, NULL)                                                               \
    BOTH(ssd_chunked, "Mamba-2 SSD, chunked form; y then h_final")                        \
    BOTH(ssd_step, "Mamba-2 SSD, decode steps with the state in place; y then h_final")   \
    BOTH(conv_causal, "causal depthwise conv with tail state, y then tail_out")           \
    BOTH(scan_affine, "h_t = a_t h_{t-1} + b_t, sequential or three-phase chunked over "   \
                      "time, states {T, W}")                                               \
    BOTH(linear_chunked, "linear attention (additive / elu+1 normalized, gated), chunked") \
    BOTH(linear_recurrent, "linear attention (additive / elu+1 normalized, gated), "       \
                           "recurrent")                                                    \
    BOTH(delta_chunked, "(gated) delta rule, unit keys, chunked WY form; y then s_final")  \
    BOTH(delta_recurrent, "(gated) delta rule, unit keys, recurrent; y then s_final")      \
    BOTH(ssd_recurrent, "Mamba-2 SSD, recurrent (the linear-attention kernel); y then "    \
                        "h_final")                                                         \
    CONTRACT(lesson_sdpa, "single-head softmax attention, optional mask and scaling")      \
    CONTRACT(lesson_window_decode, "rolling-buffer sliding-window decode")                \
    CONTRACT(lesson_linear_feature, "phi = elu + 1 linear attention")                     \
    CONTRACT(lesson_affine_scan, "h_t = a_t h_{t-1} + b_t, four algorithms")              \
    CONTRACT(lesson_kv_quantize, "per-row symmetric quantization, codes + scales")        \
    CONTRACT(lesson_kivi, "KIVI asymmetric quantize-dequantize")

/* The bench cases and runners the list names (defined in the family files). */
#define LM_REGISTRY_DECLARE_BENCH(word, summary) extern const lm_bench_case lm_bench_##word;
#define LM_REGISTRY_DECLARE_RUNNER(word, summary)                                          \
    lm_status lm_kcase_##word(lm_kcase *kcase, lm_rng *rng, const lm_ops *ops, lm_kout *out, \
                              lm_error *err);
#define LM_REGISTRY_DECLARE_BOTH(word, summary)                                            \
    LM_REGISTRY_DECLARE_BENCH(word, summary) LM_REGISTRY_DECLARE_RUNNER(word, summary)
LM_REGISTRY(LM_REGISTRY_DECLARE_BOTH, LM_REGISTRY_DECLARE_BENCH, LM_REGISTRY_DECLARE_RUNNER)

/* One registered name. */
typedef struct lm_registry_entry {
    const char *name;            /* the word */
    const char *summary;         /* one line: what the contract runner computes, or NULL */
    const lm_bench_case *bench;  /* NULL: not measured */
    lm_kernel_runner contract;   /* NULL: no contract runner */
} lm_registry_entry;

/* Every entry, in registry order. */
size_t lm_registry_count(void);
const lm_registry_entry *lm_registry_at(size_t index);

/* The entry registered as `name`, or the one an old name stands for; NULL when neither.
 * `options` (a contract case's "options" object, or NULL) picks among the words an old
 * contract name covers: linear_attention is linear_chunked when options.chunk is set and
 * linear_recurrent otherwise (likewise delta_rule; ssm_ssd is ssd_chunked with chunk,
 * ssd_step with decode true, ssd_recurrent otherwise). */
const lm_registry_entry *lm_registry_find(const char *name, const json_t *options);

#endif
