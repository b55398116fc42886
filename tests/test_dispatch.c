/* The dispatch table: every path this machine runs agrees with the float64 oracle. */

#include "longmix.h"
#include <criterion/criterion.h>
#include <math.h>

Test(dispatch, every_resolved_field_is_set)
{
    for (int isa = 0; isa < LM_ISA_COUNT; isa++) {
        const lm_ops *ops = lm_ops_for((lm_isa)isa);
        if (ops == NULL)
            continue;
        cr_assert_eq(ops->isa, (lm_isa)isa);
        cr_assert_not_null(ops->gemv_rowdot_f32, "isa %s", lm_isa_name((lm_isa)isa));
    }
}

Test(dispatch, parse_rejects_unknown_names)
{
    lm_isa isa;
    lm_error err;
    cr_assert_eq(lm_isa_parse("avx2", &isa, &err), LM_OK);
    cr_assert_eq(isa, LM_ISA_AVX2);
    cr_assert_eq(lm_isa_parse("sse9", &isa, &err), LM_ERR_ARG);
    cr_assert(strstr(err.message, "sse9") != NULL, "message names the input: %s", err.message);
}

Test(dispatch, rowdot_matches_reference_on_every_available_path)
{
    enum { n = 5, d = 37 }; /* d is not a multiple of any vector width */
    float xf[n * d], wf[d], yf[n];
    double xd[n * d], wd[d], yd[n];
    for (int i = 0; i < n * d; i++) {
        xf[i] = (float)sin(0.37 * i);
        xd[i] = (double)xf[i]; /* the oracle sees the same rounded inputs */
    }
    for (int j = 0; j < d; j++) {
        wf[j] = (float)cos(0.11 * j);
        wd[j] = (double)wf[j];
    }
    cr_assert_eq(lm_gemv_rowdot_f64_ref(xd, wd, yd, n, d, NULL), LM_OK);
    for (int isa = 0; isa < LM_ISA_COUNT; isa++) {
        if (!lm_isa_available((lm_isa)isa))
            continue;
        lm_ops_for((lm_isa)isa)->gemv_rowdot_f32(xf, wf, yf, n, d);
        for (int i = 0; i < n; i++)
            cr_assert_float_eq((double)yf[i], yd[i], 1e-5, "isa %s row %d",
                               lm_isa_name((lm_isa)isa), i);
    }
}

Test(dispatch, reference_rejects_bad_input)
{
    double x[2] = {1.0, (double)NAN}, w[2] = {1.0, 1.0}, y[1];
    lm_error err;
    cr_assert_eq(lm_gemv_rowdot_f64_ref(x, w, y, 1, 2, &err), LM_ERR_NONFINITE);
    cr_assert_eq(lm_gemv_rowdot_f64_ref(x, w, y, 0, 2, &err), LM_ERR_SHAPE);
}
