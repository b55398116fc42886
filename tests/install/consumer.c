/* A program outside the tree, built against an installed longmix with nothing but
 * `pkg-config --cflags --libs longmix` (tests/install/run.sh). It calls one function of each
 * installed header and checks the values: NumPy's default_rng(0) stream, the pairwise sum,
 * a validator's message, the allocator's alignment, the dispatcher's choice.
 * Prints "consumer: ok (isa NAME)" and exits 0, or names the first check that failed. */
#include <lm_reduce.h>
#include <lm_validate.h>
#include <longmix.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int failed(const char *what)
{
    fprintf(stderr, "consumer: FAILED %s\n", what);
    return 1;
}

int main(void)
{
    lm_rng rng;
    lm_rng_seed(&rng, 0);
    double first = lm_rng_random(&rng), second = lm_rng_random(&rng);
    if (first != 0.6369616873214543 || second != 0.2697867137638703)
        return failed("lm_rng_random: numpy.random.default_rng(0).random() is 0.6369616873214543, "
                      "then 0.2697867137638703");

    double x[200];
    for (int i = 0; i < 200; i++)
        x[i] = (double)(i + 1) / 7.0;
    if (lm_sum_pairwise_f64(x, 200) != 2871.4285714285716) /* np.sum(np.arange(1, 201) / 7) */
        return failed("lm_sum_pairwise_f64: np.sum(np.arange(1, 201) / 7) is 2871.4285714285716");

    lm_error err;
    if (lm_require_positive_f64("beta", -1.0, &err) != LM_ERR_ARG ||
        strcmp(err.message, "beta must be positive, got -1") != 0 ||
        strcmp(lm_status_name(err.status), "argument") != 0)
        return failed("lm_require_positive_f64: LM_ERR_ARG 'beta must be positive, got -1'");

    double *buffer = lm_alloc(1000 * sizeof *buffer);
    if (buffer == NULL || (uintptr_t)buffer % 64 != 0 || buffer[999] != 0.0)
        return failed("lm_alloc: a zero-filled 64-byte aligned buffer");
    lm_free(buffer);

    const char *why = NULL;
    lm_isa isa = lm_isa_active(&why);
    if (!lm_isa_available(LM_ISA_SCALAR) || !lm_isa_available(isa) || why == NULL)
        return failed("lm_isa_active: an available path, with the reason");
    printf("consumer: ok (isa %s)\n", lm_isa_name(isa));
    return 0;
}
