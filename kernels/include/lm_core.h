/* What every family shares: status codes, memory, the NumPy-compatible generator, ISA
 * paths. Part of the public API (longmix.h includes it); kernel files include it directly.
 *
 * Every library function that can fail returns an lm_status and, when the caller
 * passes a non-NULL lm_error, writes a one-line message naming the offending argument
 * ("continuous_a must be non-positive for the stable lesson model"). Library code never
 * prints, exits or aborts; the CLI turns statuses into messages and exit codes.
 */
#ifndef LONGMIX_CORE_H
#define LONGMIX_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status ------------------------------------------------------------------- */

typedef enum lm_status {
    LM_OK = 0,
    LM_ERR_ARG,         /* a scalar argument is out of range (zero size, beta > 1, ...) */
    LM_ERR_SHAPE,       /* shapes disagree or an array is empty */
    LM_ERR_NONFINITE,   /* an input holds NaN or Inf */
    LM_ERR_DOMAIN,      /* mathematically outside the model: positive mode, zero key, ... */
    LM_ERR_TYPE,        /* a value of the wrong kind (a JSON boolean where an integer goes) */
    LM_ERR_NUMERIC,     /* the computation itself produced a non-finite result */
    LM_ERR_NOMEM,       /* an allocation failed */
    LM_ERR_IO,          /* a file could not be read or written */
    LM_ERR_PARSE,       /* malformed input text (JSON, CSV) */
    LM_ERR_SCHEMA,      /* well-formed input missing a field or of an unknown schema */
    LM_ERR_UNSUPPORTED, /* a valid request this build or CPU cannot serve */
    LM_STATUS_COUNT
} lm_status;

#define LM_ERROR_MESSAGE_SIZE 512

/* An explained failure: the status and a message that names the argument and the rule. */
typedef struct lm_error {
    lm_status status;
    char message[LM_ERROR_MESSAGE_SIZE];
} lm_error;

/* Short stable name of a status ("shape", "domain", ...); never NULL. */
const char *lm_status_name(lm_status status);

/* Records status and a printf-style message in *err (when err is non-NULL) and returns
 * status, so a validator can write `return lm_fail(err, LM_ERR_ARG, "n must be positive");`.
 * lm_fail(err, LM_OK, ...) clears err. */
lm_status lm_fail(lm_error *err, lm_status status, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

/* Clears *err to LM_OK with an empty message (err may be NULL). */
void lm_error_clear(lm_error *err);

/* ---- memory --------------------------------------------------------------------- */

/* 64-byte aligned, zero-filled buffer of `bytes` bytes (bytes may be 0: returns a valid
 * pointer that must still be freed). Returns NULL when out of memory. Free with lm_free. */
void *lm_alloc(size_t bytes);
void lm_free(void *pointer);

/* ---- numpy.random.default_rng(seed) -------------------------------------------------
 * Bit-for-bit the stream of NumPy's Generator(PCG64(SeedSequence(seed))) for a
 * non-negative integer seed of any size, given as little-endian 32-bit words (the
 * SeedSequence entropy words: seed 0 is {0}, seed 2**40 is {0, 256}). */

typedef struct lm_rng {
    uint64_t state_high, state_low;         /* PCG64 128-bit LCG state */
    uint64_t increment_high, increment_low; /* PCG64 stream increment (odd) */
} lm_rng;

/* Seeds from entropy words (word_count >= 1). */
lm_status lm_rng_seed_words(lm_rng *rng, const uint32_t *words, size_t word_count,
                            lm_error *err);
/* Seeds from one 64-bit seed (the common case). */
void lm_rng_seed(lm_rng *rng, uint64_t seed);
/* Seeds from a decimal string of any length ("0", "340282366920938463463374607431768211457"). */
lm_status lm_rng_seed_decimal(lm_rng *rng, const char *decimal, lm_error *err);

uint64_t lm_rng_next_u64(lm_rng *rng);      /* Generator.bit_generator.random_raw() */
double lm_rng_random(lm_rng *rng);          /* Generator.random(): 53-bit double in [0, 1) */
double lm_rng_uniform(lm_rng *rng, double low, double high); /* Generator.uniform */
double lm_rng_standard_normal(lm_rng *rng); /* Generator.standard_normal (ziggurat) */

/* Fill out[0..count) in C order, exactly as NumPy fills an array of that many elements. */
void lm_rng_fill_uniform(lm_rng *rng, double low, double high, double *out, size_t count);
void lm_rng_fill_standard_normal(lm_rng *rng, double *out, size_t count);

/* ---- ISA dispatch ------------------------------------------------------------------ */

typedef enum lm_isa {
    LM_ISA_SCALAR = 0, /* portable float32 C, every machine */
    LM_ISA_AVX2,       /* AVX2 + FMA (+ F16C) */
    LM_ISA_AVX512,     /* AVX-512 F/BW/VL/DQ (+ BF16/FP16 where present) */
    LM_ISA_AVX512VNNI, /* the avx512 path with the VNNI integer-dot kernels (kvq_decode) */
    LM_ISA_AVX512BF16, /* the avx512vnni path with the BF16 dot-product kernels (VDPBF16PS) */
    LM_ISA_NEON,       /* AArch64 Advanced SIMD */
    LM_ISA_COUNT
} lm_isa;

/* What the CPU and OS support, read once from cpuid + xgetbv (or the AArch64 baseline). */
typedef struct lm_cpu_features {
    bool avx2, fma, f16c;
    bool avx512f, avx512bw, avx512vl, avx512dq, avx512_bf16, avx512_fp16;
    bool avx512_vnni; /* cpuid 7.0 ecx bit 11: VPDPBUSD/VPDPWSSD on zmm */
    bool os_saves_ymm, os_saves_zmm;
    bool neon;
    char vendor[16];
    char brand[64];
} lm_cpu_features;

const lm_cpu_features *lm_cpu(void);
const char *lm_isa_name(lm_isa isa);
/* Parses a path name ("scalar", "avx2", "avx512", "avx512vnni", "avx512bf16", "neon");
 * LM_ERR_ARG for anything else. */
lm_status lm_isa_parse(const char *name, lm_isa *isa, lm_error *err);
/* True when this build holds the path and this CPU (and OS) can run it. */
bool lm_isa_available(lm_isa isa);
/* The initial path, chosen once: LONGMIX_ISA when set and available, else the best
 * available. `why` (optional) receives a sentence explaining the choice. Nothing changes
 * it afterwards: a caller that wants another path passes lm_ops_for(isa) down. */
lm_isa lm_isa_active(const char **why);

#ifdef __cplusplus
}
#endif
#endif /* LONGMIX_CORE_H */
