/* lm_rng against real NumPy: every case of tests/fixtures/numpy-rng.json (what NumPy
 * 1.24.2 printed for default_rng(seed)) must match bit for bit — the PCG64 state after
 * seeding, the first raw words, random, uniform and standard_normal draws, the SHA-256
 * of 10^6 normals and of the mixed stream, and np.sum of the 10^6 normals. */
#include "longmix.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <nettle/sha2.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIXTURE_PATH "tests/fixtures/numpy-rng.json"
/* Seeds of more than four words (SeedSequence's extra-entropy branch), made with NumPy by
 * scripts/make_rng_large_seed_fixture.py. */
#define LARGE_SEED_FIXTURE_PATH "tests/fixtures/numpy-rng-large-seeds.json"

__extension__ typedef unsigned __int128 u128;

/* ---- a mismatch report: the checkers count, the tests assert ------------------------ */

typedef struct report {
    int mismatches;
    char first[512]; /* the first mismatch, naming the seed, the field and the index */
} report;

__attribute__((format(printf, 2, 3))) static void mismatch(report *r, const char *format, ...)
{
    if (r->mismatches++ == 0) {
        va_list args;
        va_start(args, format);
        vsnprintf(r->first, sizeof r->first, format, args);
        va_end(args);
    }
}

static uint64_t bits_of(double value)
{
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    return bits;
}

/* ---- fixture access --------------------------------------------------------------- */

static json_t *load_fixture_file(const char *path)
{
    json_error_t error;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &error);
    cr_assert_not_null(root, "%s:%d:%d: %s (run the tests from the repository root)",
                       path, error.line, error.column, error.text);
    json_t *cases = json_object_get(root, "cases");
    cr_assert(json_is_array(cases) && json_array_size(cases) > 0,
              "%s: \"cases\" must be a non-empty array", path);
    return root;
}

static json_t *load_fixture(void) { return load_fixture_file(FIXTURE_PATH); }

static const json_t *field(const json_t *c, const char *key)
{
    const json_t *value = json_object_get(c, key);
    cr_assert_not_null(value, "%s: a case lacks \"%s\"", FIXTURE_PATH, key);
    return value;
}

static const char *string_field(const json_t *c, const char *key)
{
    const json_t *value = field(c, key);
    cr_assert(json_is_string(value), "%s: \"%s\" must be a string", FIXTURE_PATH, key);
    return json_string_value(value);
}

static const char *seed_of(const json_t *c) { return string_field(c, "seed"); }

/* The array `key` must hold at least `count` entries. */
static const json_t *array_field(const json_t *c, const char *key, size_t count)
{
    const json_t *value = field(c, key);
    cr_assert(json_is_array(value) && json_array_size(value) >= count,
              "%s: seed %s: \"%s\" must be an array of at least %zu", FIXTURE_PATH,
              seed_of(c), key, count);
    return value;
}

static double number_at(const json_t *array, size_t i)
{
    const json_t *value = json_array_get(array, i);
    cr_assert(json_is_number(value), "%s: entry %zu must be a number", FIXTURE_PATH, i);
    return json_number_value(value);
}

static void seed_from_case(lm_rng *rng, const json_t *c)
{
    lm_error err;
    lm_status status = lm_rng_seed_decimal(rng, seed_of(c), &err);
    cr_assert_eq(status, LM_OK, "seed %s: %s", seed_of(c), err.message);
}

/* ---- checkers ----------------------------------------------------------------------- */

/* Decimal text of a 128-bit number (the fixture writes PCG64 state and inc that way). */
static void u128_decimal(u128 value, char out[48])
{
    char reversed[48];
    size_t n = 0;
    do {
        reversed[n++] = (char)('0' + (int)(value % 10u));
        value /= 10u;
    } while (value != 0);
    for (size_t i = 0; i < n; i++)
        out[i] = reversed[n - 1 - i];
    out[n] = '\0';
}

static void check_seeding(const json_t *c, report *r)
{
    lm_rng rng;
    seed_from_case(&rng, c);
    const json_t *pcg = field(c, "pcg64_state_after_seeding");
    char got_state[48], got_inc[48];
    u128_decimal(((u128)rng.state_high << 64) | rng.state_low, got_state);
    u128_decimal(((u128)rng.increment_high << 64) | rng.increment_low, got_inc);
    const char *want_state = string_field(pcg, "state");
    const char *want_inc = string_field(pcg, "inc");
    if (strcmp(got_state, want_state) != 0)
        mismatch(r, "seed %s: state after seeding: expected %s, got %s", seed_of(c),
                 want_state, got_state);
    if (strcmp(got_inc, want_inc) != 0)
        mismatch(r, "seed %s: inc after seeding: expected %s, got %s", seed_of(c), want_inc,
                 got_inc);
}

enum draw_kind { DRAW_RANDOM, DRAW_UNIFORM, DRAW_NORMAL };

/* Draws the fixture's first values of one kind from a fresh generator; compares bits. */
static void check_doubles(const json_t *c, const char *key, size_t count, enum draw_kind kind,
                          report *r)
{
    const json_t *want = array_field(c, key, count);
    lm_rng rng;
    seed_from_case(&rng, c);
    for (size_t i = 0; i < count; i++) {
        double got = kind == DRAW_RANDOM    ? lm_rng_random(&rng)
                     : kind == DRAW_UNIFORM ? lm_rng_uniform(&rng, 0.70, 0.99)
                                            : lm_rng_standard_normal(&rng);
        double expected = number_at(want, i);
        if (bits_of(got) != bits_of(expected))
            mismatch(r, "seed %s: %s[%zu]: expected %.17g (0x%016" PRIX64 "), got %.17g "
                     "(0x%016" PRIX64 ")", seed_of(c), key, i, expected, bits_of(expected),
                     got, bits_of(got));
    }
}

static void check_raw(const json_t *c, report *r)
{
    const json_t *want = array_field(c, "random_raw_first_8", 8);
    lm_rng rng;
    seed_from_case(&rng, c);
    for (size_t i = 0; i < 8; i++) {
        const char *text = json_string_value(json_array_get(want, i));
        cr_assert_not_null(text, "seed %s: random_raw_first_8[%zu] must be a hex string",
                           seed_of(c), i);
        char *end;
        errno = 0;
        uint64_t expected = strtoull(text, &end, 16);
        cr_assert(errno == 0 && *end == '\0', "seed %s: random_raw_first_8[%zu] = \"%s\" "
                  "is not a 64-bit hex number", seed_of(c), i, text);
        uint64_t got = lm_rng_next_u64(&rng);
        if (got != expected)
            mismatch(r, "seed %s: random_raw_first_8[%zu]: expected 0x%016" PRIX64
                     ", got 0x%016" PRIX64, seed_of(c), i, expected, got);
    }
}

static void check_first_draws(const json_t *c, report *r)
{
    check_raw(c, r);
    check_doubles(c, "random_first_8", 8, DRAW_RANDOM, r);
    check_doubles(c, "uniform_0.70_0.99_first_8", 8, DRAW_UNIFORM, r);
    check_doubles(c, "standard_normal_first_32", 32, DRAW_NORMAL, r);
}

/* SHA-256 of the little-endian float64 bytes of values {count}, as lowercase hex. */
static void sha256_float64le(const double *values, size_t count, char hex[65])
{
    struct sha256_ctx ctx;
    uint8_t chunk[8 * 256];
    sha256_init(&ctx);
    for (size_t start = 0; start < count; start += 256) {
        size_t n = count - start < 256 ? count - start : 256;
        for (size_t i = 0; i < n; i++) {
            uint64_t bits = bits_of(values[start + i]);
            for (size_t b = 0; b < 8; b++)
                chunk[8 * i + b] = (uint8_t)(bits >> (8 * b));
        }
        sha256_update(&ctx, 8 * n, chunk);
    }
    uint8_t digest[SHA256_DIGEST_SIZE];
    sha256_digest(&ctx, sizeof digest, digest);
    for (size_t i = 0; i < SHA256_DIGEST_SIZE; i++)
        snprintf(hex + 2 * i, 3, "%02x", digest[i]);
}

/* np.sum of a contiguous float64 vector: the reduction iterator hands the add loop
 * buffer-sized pieces (8192 elements), each summed pairwise into the running total. */
static double numpy_sum(const double *a, size_t n)
{
    double total = 0.0;
    for (size_t start = 0; start < n; start += 8192)
        total += lm_sum_pairwise_f64(a + start, n - start < 8192 ? n - start : 8192);
    return total;
}

enum { NORMAL_STREAM = 1000000, MIXED_BLOCK = 53 * 6, MIXED_TAIL = 6 };

static void check_digest(const json_t *c, const char *key, const double *values, size_t count,
                         report *r)
{
    char got[65];
    sha256_float64le(values, count, got);
    const char *want = string_field(c, key);
    if (strcmp(got, want) != 0)
        mismatch(r, "seed %s: %s: expected %s, got %s", seed_of(c), key, want, got);
}

static void check_normal_stream(const json_t *c, report *r)
{
    double *normals = malloc(NORMAL_STREAM * sizeof *normals);
    cr_assert_not_null(normals);
    lm_rng rng;
    seed_from_case(&rng, c);
    lm_rng_fill_standard_normal(&rng, normals, NORMAL_STREAM);
    check_digest(c, "standard_normal_1e6_float64le_sha256", normals, NORMAL_STREAM, r);
    const json_t *want_sum = field(c, "standard_normal_1e6_sum");
    cr_assert(json_is_number(want_sum), "seed %s: standard_normal_1e6_sum must be a number",
              seed_of(c));
    double expected = json_number_value(want_sum), got = numpy_sum(normals, NORMAL_STREAM);
    if (bits_of(got) != bits_of(expected))
        mismatch(r, "seed %s: standard_normal_1e6_sum: expected %.17g, got %.17g", seed_of(c),
                 expected, got);
    free(normals);
}

/* uniform(0.70, 0.99, (53, 6)), then standard_normal((53, 6)), then standard_normal(6),
 * from one generator, hashed as one byte stream. */
static void check_mixed_stream(const json_t *c, report *r)
{
    double mixed[2 * MIXED_BLOCK + MIXED_TAIL];
    lm_rng rng;
    seed_from_case(&rng, c);
    lm_rng_fill_uniform(&rng, 0.70, 0.99, mixed, MIXED_BLOCK);
    lm_rng_fill_standard_normal(&rng, mixed + MIXED_BLOCK, MIXED_BLOCK);
    lm_rng_fill_standard_normal(&rng, mixed + 2 * MIXED_BLOCK, MIXED_TAIL);
    check_digest(c, "mixed_uniform318_normal318_normal6_float64le_sha256", mixed,
                 sizeof mixed / sizeof mixed[0], r);
}

/* ---- the fixture, case by case ------------------------------------------------------ */

typedef void checker(const json_t *c, report *r);

static void check_every_case_of(const char *path, checker *check)
{
    json_t *root = load_fixture_file(path);
    const json_t *cases = json_object_get(root, "cases");
    report r = {0};
    for (size_t i = 0; i < json_array_size(cases); i++)
        check(json_array_get(cases, i), &r);
    json_decref(root);
    cr_assert_eq(r.mismatches, 0, "%d mismatches; first: %s", r.mismatches, r.first);
}

static void check_every_case(checker *check) { check_every_case_of(FIXTURE_PATH, check); }

Test(rng, state_after_seeding_matches_numpy) { check_every_case(check_seeding); }

Test(rng, seeds_longer_than_the_pool_match_numpy)
{
    check_every_case_of(LARGE_SEED_FIXTURE_PATH, check_seeding);
    check_every_case_of(LARGE_SEED_FIXTURE_PATH, check_first_draws);
}

Test(rng, first_draws_match_numpy_bit_for_bit) { check_every_case(check_first_draws); }

Test(rng, million_normals_digest_and_sum_match_numpy) { check_every_case(check_normal_stream); }

Test(rng, mixed_stream_digest_matches_numpy) { check_every_case(check_mixed_stream); }

/* ---- the checks can fail: one flipped digit in a copy of a case is caught ------------ */

/* Flips the last hex or decimal digit of a string field of object `parent`. */
static void flip_string_digit(json_t *parent, const char *key)
{
    const char *text = json_string_value(json_object_get(parent, key));
    cr_assert_not_null(text, "flip: \"%s\" must be a string", key);
    char copy[128];
    snprintf(copy, sizeof copy, "%s", text);
    size_t last = strlen(copy) - 1;
    copy[last] = copy[last] == '1' ? '2' : '1';
    json_object_set_new(parent, key, json_string(copy));
}

/* The number with its 6th significant decimal digit changed. */
static double flipped_number(double value)
{
    char text[64];
    snprintf(text, sizeof text, "%.16e", value);
    char *digit = strchr(text, '.') + 5; /* the 6th significant digit */
    *digit = *digit == '1' ? '2' : '1';
    return strtod(text, NULL);
}

static void expect_caught(const json_t *original, checker *check, const char *what,
                          void (*flip)(json_t *copy))
{
    json_t *copy = json_deep_copy(original);
    cr_assert_not_null(copy);
    report clean = {0};
    check(copy, &clean);
    cr_assert_eq(clean.mismatches, 0, "unflipped copy must pass: %s", clean.first);
    flip(copy);
    report r = {0};
    check(copy, &r);
    cr_assert_gt(r.mismatches, 0, "a flipped digit in %s went unnoticed", what);
    json_decref(copy);
}

static void flip_state(json_t *c)
{
    flip_string_digit(json_object_get(c, "pcg64_state_after_seeding"), "state");
}
static void flip_inc(json_t *c)
{
    flip_string_digit(json_object_get(c, "pcg64_state_after_seeding"), "inc");
}
static void flip_raw(json_t *c)
{
    json_t *array = json_object_get(c, "random_raw_first_8");
    const char *text = json_string_value(json_array_get(array, 5));
    char copy[32];
    snprintf(copy, sizeof copy, "%s", text);
    copy[8] = copy[8] == '1' ? '2' : '1';
    json_array_set_new(array, 5, json_string(copy));
}
static void flip_array_number(json_t *c, const char *key, size_t index)
{
    json_t *array = json_object_get(c, key);
    double value = json_number_value(json_array_get(array, index));
    json_array_set_new(array, index, json_real(flipped_number(value)));
}
static void flip_random(json_t *c) { flip_array_number(c, "random_first_8", 7); }
static void flip_uniform(json_t *c) { flip_array_number(c, "uniform_0.70_0.99_first_8", 0); }
static void flip_normal(json_t *c) { flip_array_number(c, "standard_normal_first_32", 31); }
static void flip_normal_digest(json_t *c)
{
    flip_string_digit(c, "standard_normal_1e6_float64le_sha256");
}
static void flip_sum(json_t *c)
{
    double value = json_number_value(json_object_get(c, "standard_normal_1e6_sum"));
    json_object_set_new(c, "standard_normal_1e6_sum", json_real(flipped_number(value)));
}
static void flip_mixed_digest(json_t *c)
{
    flip_string_digit(c, "mixed_uniform318_normal318_normal6_float64le_sha256");
}

Test(rng, a_flipped_digit_in_any_expectation_is_caught)
{
    json_t *root = load_fixture();
    const json_t *c = json_array_get(json_object_get(root, "cases"), 0);
    expect_caught(c, check_seeding, "the state", flip_state);
    expect_caught(c, check_seeding, "the increment", flip_inc);
    expect_caught(c, check_first_draws, "random_raw_first_8", flip_raw);
    expect_caught(c, check_first_draws, "random_first_8", flip_random);
    expect_caught(c, check_first_draws, "uniform_0.70_0.99_first_8", flip_uniform);
    expect_caught(c, check_first_draws, "standard_normal_first_32", flip_normal);
    expect_caught(c, check_normal_stream, "the 10^6-normal digest", flip_normal_digest);
    expect_caught(c, check_normal_stream, "the 10^6-normal sum", flip_sum);
    expect_caught(c, check_mixed_stream, "the mixed digest", flip_mixed_digest);
    json_decref(root);
}

/* ---- the other seeding entry points ------------------------------------------------ */

static void assert_same_state(const lm_rng *a, const lm_rng *b, const char *what)
{
    cr_assert(a->state_high == b->state_high && a->state_low == b->state_low &&
                  a->increment_high == b->increment_high && a->increment_low == b->increment_low,
              "%s: states differ", what);
}

/* Every fixture seed below 2^64 seeds identically through lm_rng_seed, and every seed
 * through its little-endian 32-bit words. */
Test(rng, integer_and_word_seeding_agree_with_the_fixture_states)
{
    json_t *root = load_fixture();
    const json_t *cases = json_object_get(root, "cases");
    for (size_t i = 0; i < json_array_size(cases); i++) {
        const json_t *c = json_array_get(cases, i);
        const char *seed = seed_of(c);
        lm_rng from_decimal, other;
        seed_from_case(&from_decimal, c);

        /* words = the seed in base 2^32, least significant first, by long division */
        uint32_t words[16];
        size_t word_count = 0;
        char digits[160];
        snprintf(digits, sizeof digits, "%s", seed);
        size_t length = strlen(digits);
        for (;;) {
            uint64_t remainder = 0;
            bool nonzero = false;
            for (size_t d = 0; d < length; d++) {
                uint64_t current = remainder * 10u + (uint64_t)(digits[d] - '0');
                digits[d] = (char)('0' + current / 4294967296u);
                remainder = current % 4294967296u;
                nonzero = nonzero || digits[d] != '0';
            }
            cr_assert_lt(word_count, 16u);
            words[word_count++] = (uint32_t)remainder;
            if (!nonzero)
                break;
        }
        lm_error err;
        cr_assert_eq(lm_rng_seed_words(&other, words, word_count, &err), LM_OK, "seed %s: %s",
                     seed, err.message);
        assert_same_state(&from_decimal, &other, seed);

        errno = 0;
        char *end;
        unsigned long long small = strtoull(seed, &end, 10);
        if (errno == 0 && *end == '\0') {
            lm_rng_seed(&other, (uint64_t)small);
            assert_same_state(&from_decimal, &other, seed);
        }
    }
    json_decref(root);
}

/* A 64-bit seed of two words (2^40 = {0, 256}) and its decimal and word forms agree, and
 * leading zeros do not change a decimal seed. */
Test(rng, two_word_seed_forms_agree)
{
    lm_rng a, b, c;
    lm_error err;
    const uint32_t words[2] = {0, 256};
    lm_rng_seed(&a, UINT64_C(1) << 40);
    cr_assert_eq(lm_rng_seed_decimal(&b, "0001099511627776", &err), LM_OK, "%s", err.message);
    cr_assert_eq(lm_rng_seed_words(&c, words, 2, &err), LM_OK, "%s", err.message);
    assert_same_state(&a, &b, "2^40 decimal");
    assert_same_state(&a, &c, "2^40 words");
}

Test(rng, decimal_seed_rejects_what_is_not_a_non_negative_integer)
{
    const char *bad[] = {"", "-1", "12a", " 7", "+7", "0x10"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        lm_rng rng = {1, 2, 3, 4};
        lm_error err;
        cr_assert_eq(lm_rng_seed_decimal(&rng, bad[i], &err), LM_ERR_ARG, "input \"%s\"",
                     bad[i]);
        char quoted[32];
        snprintf(quoted, sizeof quoted, "\"%s\"", bad[i]);
        cr_assert(strstr(err.message, quoted) != NULL, "message names the input %s: %s",
                  quoted, err.message);
        cr_assert(rng.state_high == 1 && rng.state_low == 2 && rng.increment_high == 3 &&
                      rng.increment_low == 4,
                  "a rejected seed leaves the generator untouched");
    }
    lm_rng rng;
    lm_error err;
    cr_assert_eq(lm_rng_seed_decimal(&rng, NULL, &err), LM_ERR_ARG);
    cr_assert_eq(lm_rng_seed_words(&rng, NULL, 1, &err), LM_ERR_ARG);
    const uint32_t zero = 0;
    cr_assert_eq(lm_rng_seed_words(&rng, &zero, 0, &err), LM_ERR_ARG);
    cr_assert(strstr(err.message, "seed words") != NULL, "%s", err.message);
}
