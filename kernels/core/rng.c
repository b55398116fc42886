/* numpy.random.default_rng(seed), bit for bit: SeedSequence entropy pooling, PCG64
 * (128-bit LCG, XSL-RR output) and the Generator draws random, uniform and
 * standard_normal (NumPy's float64 ziggurat). The algorithms follow NumPy's
 * numpy/random/bit_generator.pyx, src/pcg64/pcg64.h and src/distributions/distributions.c;
 * the ziggurat tables are data (ziggurat_tables.c, generated). */
#include "lm_core.h"
#include "ziggurat.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

__extension__ typedef unsigned __int128 u128;

/* ---- SeedSequence (pool of 4 uint32 words) ----------------------------------------- */

enum { SEED_POOL_WORDS = 4, SEED_XSHIFT = 16 };
#define SEED_INIT_A UINT32_C(0x43b0d7e5)
#define SEED_MULT_A UINT32_C(0x931e8875)
#define SEED_INIT_B UINT32_C(0x8b51f9dd)
#define SEED_MULT_B UINT32_C(0x58f38ded)
#define SEED_MIX_MULT_L UINT32_C(0xca01f9dd)
#define SEED_MIX_MULT_R UINT32_C(0x4973f715)

/* hashmix: value ^= h; h *= MULT_A; value *= h; value ^= value >> 16 (all mod 2^32). */
static uint32_t seed_hashmix(uint32_t value, uint32_t *hash_const)
{
    value ^= *hash_const;
    *hash_const *= SEED_MULT_A;
    value *= *hash_const;
    return value ^ (value >> SEED_XSHIFT);
}

/* mix: r = MIX_MULT_L * x - MIX_MULT_R * y; r ^= r >> 16 (mod 2^32). */
static uint32_t seed_mix(uint32_t x, uint32_t y)
{
    uint32_t result = SEED_MIX_MULT_L * x - SEED_MIX_MULT_R * y;
    return result ^ (result >> SEED_XSHIFT);
}

/* SeedSequence.mix_entropy with an empty spawn key: hash the first words into the pool,
 * cross-mix every pool word into every other, then fold in the remaining words. */
static void seed_pool(const uint32_t *words, size_t word_count,
                      uint32_t pool[SEED_POOL_WORDS])
{
    uint32_t hash_const = SEED_INIT_A;
    for (size_t i = 0; i < SEED_POOL_WORDS; i++)
        pool[i] = seed_hashmix(i < word_count ? words[i] : 0u, &hash_const);
    for (size_t src = 0; src < SEED_POOL_WORDS; src++)
        for (size_t dst = 0; dst < SEED_POOL_WORDS; dst++)
            if (src != dst)
                pool[dst] = seed_mix(pool[dst], seed_hashmix(pool[src], &hash_const));
    for (size_t src = SEED_POOL_WORDS; src < word_count; src++)
        for (size_t dst = 0; dst < SEED_POOL_WORDS; dst++)
            pool[dst] = seed_mix(pool[dst], seed_hashmix(words[src], &hash_const));
}

/* SeedSequence.generate_state(4, uint64): 8 uint32 words cycled from the pool and hashed
 * with INIT_B / MULT_B, paired little-endian into uint64 (word 2k low, 2k+1 high). */
static void seed_generate_u64(const uint32_t pool[SEED_POOL_WORDS], uint64_t out[4])
{
    uint32_t hash_const = SEED_INIT_B;
    uint32_t state[8];
    for (size_t i = 0; i < 8; i++) {
        uint32_t value = pool[i % SEED_POOL_WORDS] ^ hash_const;
        hash_const *= SEED_MULT_B;
        value *= hash_const;
        state[i] = value ^ (value >> SEED_XSHIFT);
    }
    for (size_t k = 0; k < 4; k++)
        out[k] = (uint64_t)state[2 * k] | ((uint64_t)state[2 * k + 1] << 32);
}

/* ---- PCG64 ------------------------------------------------------------------------- */

/* PCG's default 128-bit LCG multiplier, 2549297995355413924 * 2^64 + 4865540595714422341. */
#define PCG_MULTIPLIER_HIGH UINT64_C(0x2360ED051FC65DA4)
#define PCG_MULTIPLIER_LOW UINT64_C(0x4385DF649FCCF645)

static u128 u128_make(uint64_t high, uint64_t low) { return ((u128)high << 64) | low; }

static u128 pcg_state(const lm_rng *rng) { return u128_make(rng->state_high, rng->state_low); }

static void pcg_store_state(lm_rng *rng, u128 state)
{
    rng->state_high = (uint64_t)(state >> 64);
    rng->state_low = (uint64_t)state;
}

/* One LCG step: state = state * MULT + inc (mod 2^128). */
static u128 pcg_step(u128 state, u128 increment)
{
    return state * u128_make(PCG_MULTIPLIER_HIGH, PCG_MULTIPLIER_LOW) + increment;
}

/* pcg64_set_seed(seed = {s0, s1}, inc = {i0, i1}): initstate = s0:s1, initseq = i0:i1;
 * state = 0; inc = (initseq << 1) | 1; step; state += initstate; step. */
static void pcg_seed(lm_rng *rng, const uint64_t generated[4])
{
    u128 initial_state = u128_make(generated[0], generated[1]);
    u128 increment = (u128_make(generated[2], generated[3]) << 1) | 1u;
    u128 state = pcg_step(0, increment);
    state = pcg_step(state + initial_state, increment);
    pcg_store_state(rng, state);
    rng->increment_high = (uint64_t)(increment >> 64);
    rng->increment_low = (uint64_t)increment;
}

static void rng_seed_checked_words(lm_rng *rng, const uint32_t *words, size_t word_count)
{
    uint32_t pool[SEED_POOL_WORDS];
    uint64_t generated[4];
    seed_pool(words, word_count, pool);
    seed_generate_u64(pool, generated);
    pcg_seed(rng, generated);
}

/* Contract: words {word_count} are SeedSequence entropy words (least significant first),
 * word_count >= 1. Returns LM_ERR_ARG (rng untouched) when rng or words is NULL or
 * word_count is 0. */
lm_status lm_rng_seed_words(lm_rng *rng, const uint32_t *words, size_t word_count,
                            lm_error *err)
{
    if (rng == NULL)
        return lm_fail(err, LM_ERR_ARG, "rng must not be NULL");
    if (words == NULL || word_count == 0)
        return lm_fail(err, LM_ERR_ARG,
                       "seed words must hold at least one 32-bit word (seed 0 is {0})");
    rng_seed_checked_words(rng, words, word_count);
    lm_error_clear(err);
    return LM_OK;
}

/* Contract: seeds rng as default_rng(seed); seed < 2^32 is one word, else two. */
void lm_rng_seed(lm_rng *rng, uint64_t seed)
{
    const uint32_t words[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    rng_seed_checked_words(rng, words, words[1] != 0 ? 2 : 1);
}

/* Contract: decimal is one or more ASCII digits, nothing else (no sign, no spaces);
 * leading zeros are allowed. LM_ERR_ARG with a message quoting the input otherwise,
 * LM_ERR_NOMEM when the word buffer cannot be allocated. rng is untouched on failure. */
lm_status lm_rng_seed_decimal(lm_rng *rng, const char *decimal, lm_error *err)
{
    if (rng == NULL)
        return lm_fail(err, LM_ERR_ARG, "rng must not be NULL");
    if (decimal == NULL)
        return lm_fail(err, LM_ERR_ARG, "seed must be a decimal string, not NULL");
    size_t length = 0;
    for (; decimal[length] != '\0'; length++) {
        unsigned char c = (unsigned char)decimal[length];
        if (c >= '0' && c <= '9')
            continue;
        char shown[16]; /* the offending character, or its code when unprintable */
        if (c > ' ' && c < 0x7f)
            snprintf(shown, sizeof shown, "'%c'", c);
        else
            snprintf(shown, sizeof shown, "byte 0x%02x", (unsigned)c);
        return lm_fail(err, LM_ERR_ARG,
                       "seed \"%.80s\" must be a non-negative decimal integer "
                       "(digits 0-9 only; %s at position %zu is not)",
                       decimal, shown, length);
    }
    if (length == 0)
        return lm_fail(err, LM_ERR_ARG,
                       "seed \"\" must be a non-negative decimal integer (it is empty)");

    /* 10^9 < 2^30, so every 9 digits add fewer than 30 bits: length / 9 + 2 words
     * hold the value. Build it by words = words * 10 + digit. */
    size_t capacity = length / 9 + 2;
    uint32_t *words = lm_alloc(capacity * sizeof *words);
    if (words == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "seed \"%.80s\": no memory for %zu words",
                       decimal, capacity);
    size_t word_count = 1; /* words[0] = 0 from lm_alloc */
    for (size_t i = 0; i < length; i++) {
        uint64_t carry = (uint64_t)(decimal[i] - '0');
        for (size_t w = 0; w < word_count; w++) {
            uint64_t value = (uint64_t)words[w] * 10u + carry;
            words[w] = (uint32_t)value;
            carry = value >> 32;
        }
        if (carry != 0)
            words[word_count++] = (uint32_t)carry;
    }
    rng_seed_checked_words(rng, words, word_count);
    lm_free(words);
    lm_error_clear(err);
    return LM_OK;
}

/* ---- draws ------------------------------------------------------------------------- */

/* Contract: advances the LCG, then returns XSL-RR of the new state:
 * rotate_right(high ^ low, state >> 122). */
uint64_t lm_rng_next_u64(lm_rng *rng)
{
    u128 state = pcg_step(pcg_state(rng), u128_make(rng->increment_high, rng->increment_low));
    pcg_store_state(rng, state);
    uint64_t folded = (uint64_t)(state >> 64) ^ (uint64_t)state;
    unsigned rotation = (unsigned)(state >> 122);
    return (folded >> rotation) | (folded << ((64u - rotation) & 63u));
}

/* Contract: (next_u64 >> 11) * 2^-53, a double in [0, 1). */
double lm_rng_random(lm_rng *rng)
{
    return (double)(lm_rng_next_u64(rng) >> 11) * (1.0 / 9007199254740992.0);
}

/* Contract: low + (high - low) * random(), as Generator.uniform computes it. */
double lm_rng_uniform(lm_rng *rng, double low, double high)
{
    return low + (high - low) * lm_rng_random(rng);
}

/* The tail beyond r (base layer): Marsaglia's method with x = -log1p(-U1) / r,
 * y = -log1p(-U2), accepted when 2y > x^2; the sign comes from bit 8 of the magnitude. */
static double normal_tail(lm_rng *rng, uint64_t magnitude)
{
    for (;;) {
        double x = -lm_ziggurat_normal_inv_r * log1p(-lm_rng_random(rng));
        double y = -log1p(-lm_rng_random(rng));
        if (y + y > x * x)
            return ((magnitude >> 8) & 1u) ? -(lm_ziggurat_normal_r + x)
                                           : lm_ziggurat_normal_r + x;
    }
}

/* Contract: Generator.standard_normal. Each try draws 64 bits: layer = bits 0-7,
 * sign = bit 8, magnitude = bits 9-60. Accept magnitude * wi[layer] when magnitude <
 * ki[layer]; otherwise layer 0 samples the tail and other layers test the wedge
 * (fi[layer-1] - fi[layer]) * U + fi[layer] < exp(-x^2 / 2) with one more draw. */
double lm_rng_standard_normal(lm_rng *rng)
{
    for (;;) {
        uint64_t bits = lm_rng_next_u64(rng);
        unsigned layer = (unsigned)(bits & 0xffu);
        bits >>= 8;
        uint64_t magnitude = (bits >> 1) & UINT64_C(0x000fffffffffffff);
        double x = (double)magnitude * lm_ziggurat_normal_wi[layer];
        if (bits & 1u)
            x = -x;
        if (magnitude < lm_ziggurat_normal_ki[layer])
            return x; /* about 99.3% of draws */
        if (layer == 0)
            return normal_tail(rng, magnitude);
        double fi_low = lm_ziggurat_normal_fi[layer];
        double fi_high = lm_ziggurat_normal_fi[layer - 1];
        if ((fi_high - fi_low) * lm_rng_random(rng) + fi_low < exp(-0.5 * x * x))
            return x;
    }
}

/* Contract (fills): out {count}, element i is the i-th draw (C order). */
void lm_rng_fill_uniform(lm_rng *rng, double low, double high, double *out, size_t count)
{
    for (size_t i = 0; i < count; i++)
        out[i] = lm_rng_uniform(rng, low, high);
}

void lm_rng_fill_standard_normal(lm_rng *rng, double *out, size_t count)
{
    for (size_t i = 0; i < count; i++)
        out[i] = lm_rng_standard_normal(rng);
}
