/* Float64 oracle of a whole SwiGLU MLP layer (layers.h). */
#include "layers.h"

#include <math.h>
#include <stdlib.h>

lm_status lm_mlp_layer_f64_ref(const double *x, const double *w_gate, const double *w_up,
                               const double *w_down, size_t batch, size_t d, size_t ff,
                               double eps, double *y, lm_error *err)
{
    if (batch == 0 || d == 0 || ff == 0)
        return lm_fail(err, LM_ERR_SHAPE, "sizes must be positive, got batch %zu, d %zu, ff %zu",
                       batch, d, ff);
    for (size_t i = 0; i < batch * d; i++)
        if (!isfinite(x[i]))
            return lm_fail(err, LM_ERR_NONFINITE, "x must contain only finite values");
    double *h = malloc(d * sizeof *h), *g = malloc(ff * sizeof *g);
    if (h == NULL || g == NULL) {
        free(h);
        free(g);
        return lm_fail(err, LM_ERR_NOMEM, "out of memory");
    }
    for (size_t b = 0; b < batch; b++) {
        const double *xb = x + b * d;
        double ss = 0.0;
        for (size_t i = 0; i < d; i++)
            ss += xb[i] * xb[i];
        double inv = 1.0 / sqrt(ss / (double)d + eps);
        for (size_t i = 0; i < d; i++)
            h[i] = xb[i] * inv;
        for (size_t f = 0; f < ff; f++) {
            double gate = 0.0, up = 0.0;
            for (size_t i = 0; i < d; i++) {
                gate += w_gate[f * d + i] * h[i];
                up += w_up[f * d + i] * h[i];
            }
            g[f] = gate / (1.0 + exp(-gate)) * up;
        }
        for (size_t i = 0; i < d; i++) {
            double s = 0.0;
            for (size_t f = 0; f < ff; f++)
                s += w_down[i * ff + f] * g[f];
            y[b * d + i] = xb[i] + s;
        }
    }
    free(h);
    free(g);
    return LM_OK;
}
