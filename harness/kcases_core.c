/* Kernel-contract runners for the core kernels (recipes: docs/contracts.md, "kernels"). */
#include "registry.h"

/* gemv_rowdot: y = X w.
 * Recipe: x = rng.standard_normal((n, d)); w = rng.standard_normal(d); for dtype f32 both
 * are rounded to float32. Output y {n}. dtype f64 runs lm_gemv_rowdot_f64_ref. Shapes may
 * be 0 only in bad-input cases (expected.status "shape"). */
lm_status lm_kcase_gemv_rowdot(lm_kcase *kcase, lm_rng *rng, const lm_ops *ops, lm_kout *out,
                               lm_error *err)
{
    static const char *const dtypes[] = {"f32", "f64", NULL};
    static const char *const options[] = {NULL};
    size_t n, d;
    lm_status status;
    if ((status = lm_kcase_dtype_in(kcase, dtypes, err)) != LM_OK ||
        (status = lm_kcase_known_options(kcase, options, err)) != LM_OK ||
        (status = lm_kcase_size0(kcase, "n", &n, err)) != LM_OK ||
        (status = lm_kcase_size0(kcase, "d", &d, err)) != LM_OK)
        return status;
    lm_budget budget = lm_kcase_budget(kcase); /* x {n, d}, w {d}, y {n} */
    lm_budget_add(&budget, LM_PRODUCT(n, d), LM_KCASE_VALUE_BYTES);
    lm_budget_add(&budget, d, LM_KCASE_VALUE_BYTES);
    lm_budget_add(&budget, n, LM_KCASE_VALUE_BYTES);
    if ((status = lm_kcase_reserve(kcase, &budget, err)) != LM_OK)
        return status;
    /* The fast kernel trusts its caller (it has no operator driver): like a driver, reject an
     * empty x here with the reference's status; dtype f64 lets the reference itself judge. */
    if (ops != NULL && (n == 0 || d == 0))
        return lm_fail(err, LM_ERR_SHAPE, "x must be non-empty, got shape {%zu, %zu}", n, d);
    double *x = lm_kcase_normal(kcase, rng, n * d); /* {n, d} */
    double *w = lm_kcase_normal(kcase, rng, d);     /* {d} */
    if (x == NULL || w == NULL || (status = lm_kcase_output(kcase, n, out, err)) != LM_OK)
        return lm_fail(err, LM_ERR_NOMEM, "case %s: no memory for inputs", kcase->id);
    if (ops == NULL)
        return lm_gemv_rowdot_f64_ref(x, w, out->values, n, d, err);
    float *xf = lm_kcase_to_f32(kcase, x, n * d);
    float *wf = lm_kcase_to_f32(kcase, w, d);
    float *yf = lm_kcase_alloc(kcase, n, sizeof(float));
    if (xf == NULL || wf == NULL || yf == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "case %s: no memory for float32 copies", kcase->id);
    ops->gemv_rowdot_f32(xf, wf, yf, n, d);
    for (size_t i = 0; i < n; i++)
        out->values[i] = (double)yf[i];
    return LM_OK;
}

