/* Operator driver of the float32 affine scan: sequential, or the three phases run per
 * chunk, pipelined across threads (scan.h). */
#include "scan.h"
#include "lm_ops.h"

#include <omp.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

/* Number of chunks whose end state is published; chunk i may start its carry when it
 * reaches i. Waiting spins, then yields the core (the other thread may be descheduled). */
static void wait_for(const atomic_size_t *published, size_t i)
{
    for (unsigned spins = 0; atomic_load_explicit(published, memory_order_acquire) < i;)
        if (++spins > 4096)
            sched_yield();
}

/* The parallel scan in one pass over chunks of `chunk` rows; chunk i is taken by thread
 * i mod team and goes through the three phases of the scan on its own:
 *   (1) its rows reduced to one affine map (prod, acc), read from memory;
 *   (2) the carry: once chunk i - 1 has published the state after it, this chunk's end
 *       state prod * start + acc is published (the only sequential part: `width` FMAs);
 *   (3) its rows scanned from their true start, a and b re-read from cache.
 * No barriers: a thread waits only for the chunk before its own, so while one thread
 * scans its chunk the other reduces the next. ends {2, width} holds the state after
 * chunk i in slot i % 2: chunk i + 1 reads it before publishing, and chunk i + 2 writes the
 * slot only after that. work = ends, then {prod, acc, state} per thread. The state after
 * the last chunk is the kernel's (the last row), as in the sequential scan. */
static void scan_chunks(lm_scan_affine_fn *kernel, lm_scan_affine_reduce_fn *reduce,
                        const float *a, const float *b, size_t steps, size_t width,
                        const float *initial_state, float *states, float *final_state,
                        size_t chunk, size_t threads, float *work)
{
    const size_t chunks = (steps + chunk - 1) / chunk;
    float *ends = work;
    atomic_size_t published;
    atomic_init(&published, 0);
#pragma omp parallel num_threads((int)threads)
    {
        const size_t team = (size_t)omp_get_num_threads();
        const size_t me = (size_t)omp_get_thread_num();
        float *prod = work + (2 + 3 * me) * width, *acc = prod + width, *state = acc + width;
        for (size_t i = me; i < chunks; i += team) {
            const size_t s = i * chunk, n = steps - s < chunk ? steps - s : chunk;
            if (i == 0) { /* from the initial state: scanned at once, its end published */
                if (initial_state != NULL)
                    memcpy(state, initial_state, width * sizeof(float));
                else
                    memset(state, 0, width * sizeof(float));
                kernel(a, b, n, width, state, states);
                memcpy(ends, state, width * sizeof(float));
            } else {
                reduce(a + s * width, b + s * width, n, width, prod, acc);
                wait_for(&published, i);
                memcpy(state, ends + (i - 1) % 2 * width, width * sizeof(float));
                float *end = ends + i % 2 * width;
                for (size_t c = 0; c < width; c++)
                    end[c] = prod[c] * state[c] + acc[c];
            }
            atomic_store_explicit(&published, i + 1, memory_order_release);
            if (i > 0)
                kernel(a + s * width, b + s * width, n, width, state, states + s * width);
            if (i + 1 == chunks && final_state != NULL)
                memcpy(final_state, state, width * sizeof(float));
        }
    }
}

lm_status lm_scan_affine_f32(const float *a, const float *b, size_t steps, size_t width,
                             const float *initial_state, float *states, float *final_state,
                             size_t chunk, size_t parts, const lm_ops *ops, lm_error *err)
{
    lm_status ops_status = lm_ops_check(ops, err);
    if (ops_status != LM_OK)
        return ops_status;
    if (steps == 0 || width == 0)
        return lm_fail(err, LM_ERR_SHAPE, "steps and width must be positive, got {%zu, %zu}",
                       steps, width);
    if (a == NULL || b == NULL || states == NULL)
        return lm_fail(err, LM_ERR_SHAPE, "a, b and states must be given");
    if (chunk == 0)
        return lm_fail(err, LM_ERR_ARG, "chunk must be positive");
    lm_scan_affine_fn *const kernel = ops->scan_affine_f32;
    lm_scan_affine_reduce_fn *const reduce = ops->scan_affine_reduce_f32;
    if (parts == 0)
        parts = (size_t)omp_get_max_threads();
    /* More parts than chunks of the sequence would only add empty work. */
    const size_t chunks = (steps + chunk - 1) / chunk;
    if (parts > chunks)
        parts = chunks;

    if (parts == 1) {
        float *state = lm_alloc(width * sizeof(float));
        if (state == NULL)
            return lm_fail(err, LM_ERR_NOMEM, "no memory for the scan workspace");
        if (initial_state != NULL)
            memcpy(state, initial_state, width * sizeof(float));
        else
            memset(state, 0, width * sizeof(float));
        kernel(a, b, steps, width, state, states);
        if (final_state != NULL)
            memcpy(final_state, state, width * sizeof(float));
        lm_free(state);
        return LM_OK;
    }
    size_t threads = (size_t)omp_get_max_threads();
    if (threads > parts)
        threads = parts;
    /* ends {2, width}: the state after chunk i in slot i % 2; then {prod, acc, state} of
     * every thread */
    float *work = lm_alloc((2 + 3 * threads) * width * sizeof(float));
    if (work == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "no memory for the scan workspace");
    scan_chunks(kernel, reduce, a, b, steps, width, initial_state, states, final_state, chunk,
                threads, work);
    lm_free(work);
    return LM_OK;
}
