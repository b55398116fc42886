/* Operator driver of the float32 affine scan: sequential, or three phases per tile of
 * parts * chunk rows inside one OpenMP region (scan.h). */
#include "scan.h"
#include "lm_ops.h"

#include <omp.h>
#include <string.h>

lm_status lm_scan_affine_f32(lm_scan_affine_f32_fn kernel, lm_scan_affine_reduce_f32_fn reduce,
                             const float *a, const float *b, size_t steps, size_t width,
                             const float *initial_state, float *states, float *final_state,
                             size_t chunk, size_t parts, lm_error *err)
{
    if (steps == 0 || width == 0)
        return lm_fail(err, LM_ERR_SHAPE, "steps and width must be positive, got {%zu, %zu}",
                       steps, width);
    if (a == NULL || b == NULL || states == NULL)
        return lm_fail(err, LM_ERR_SHAPE, "a, b and states must be given");
    if (chunk == 0)
        return lm_fail(err, LM_ERR_ARG, "chunk must be positive");
    if (kernel == NULL)
        kernel = lm_ops_active()->scan_affine_f32;
    if (reduce == NULL)
        reduce = lm_ops_active()->scan_affine_reduce_f32;
    if (parts == 0)
        parts = (size_t)omp_get_max_threads();
    /* More parts than chunks of the sequence would only add empty work. */
    const size_t chunks = (steps + chunk - 1) / chunk;
    if (parts > chunks)
        parts = chunks;

    /* start {parts + 1, width}: the state entering each part; prod, acc {parts, width}. */
    float *work = lm_alloc((3 * parts + 1) * width * sizeof(float));
    if (work == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "no memory for the scan workspace");
    float *start = work, *prod = work + (parts + 1) * width, *acc = prod + parts * width;
    if (initial_state != NULL)
        memcpy(start, initial_state, width * sizeof(float));

    if (parts == 1) {
        kernel(a, b, steps, width, start, states);
    } else {
        const size_t tile = parts * chunk;
        /* parts is the algorithm's split; the team is at most the OpenMP thread budget
         * (each thread takes parts me, me + team, ...). */
        size_t threads = (size_t)omp_get_max_threads();
        if (threads > parts)
            threads = parts;
#pragma omp parallel num_threads((int)threads)
        {
            const size_t team = (size_t)omp_get_num_threads();
            const size_t me = (size_t)omp_get_thread_num();
            for (size_t t0 = 0; t0 < steps; t0 += tile) {
                /* (1) each part's chunk as one affine map */
                for (size_t i = me; i < parts; i += team) {
                    const size_t s = t0 + i * chunk;
                    if (s >= steps)
                        continue;
                    const size_t n = steps - s < chunk ? steps - s : chunk;
                    reduce(a + s * width, b + s * width, n, width, prod + i * width,
                           acc + i * width);
                }
#pragma omp barrier
                /* (2) carry: start[i+1] = prod[i] * start[i] + acc[i] */
#pragma omp single
                for (size_t i = 0; i < parts && t0 + i * chunk < steps; i++)
                    for (size_t c = 0; c < width; c++)
                        start[(i + 1) * width + c] =
                            prod[i * width + c] * start[i * width + c] + acc[i * width + c];
                /* (implicit barrier of single) (3) each part scanned from its true start;
                 * its rows are still in cache from phase 1. The kernel advances start[i]
                 * in place to the part's end state, which equals start[i+1]. */
                for (size_t i = me; i < parts; i += team) {
                    const size_t s = t0 + i * chunk;
                    if (s >= steps)
                        continue;
                    const size_t n = steps - s < chunk ? steps - s : chunk;
                    kernel(a + s * width, b + s * width, n, width, start + i * width,
                           states + s * width);
                }
#pragma omp barrier
                /* The next tile starts from the last part's end state (the scanned one,
                 * equal to the tile's last output row). */
#pragma omp single
                {
                    size_t used = (steps - t0 + chunk - 1) / chunk;
                    if (used > parts)
                        used = parts;
                    memmove(start, start + (used - 1) * width, width * sizeof(float));
                }
            }
        }
    }
    if (final_state != NULL)
        memcpy(final_state, start, width * sizeof(float));
    lm_free(work);
    return LM_OK;
}
