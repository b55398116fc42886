/* The affine-scan kernel bodies, instantiated per ISA through the mapping layer of
 * kernels/simd/<isa>.h; SCAN_NAME / REDUCE_NAME name the two functions. Vectors run
 * across the width; the last width % LM_W columns take a scalar loop. The time loop
 * carries one FMA dependency per vector per row, so a 16-wide row costs one FMA latency
 * and the scan is bound by memory, not arithmetic. Wide rows are walked in time blocks of
 * about 16 K floats per array (time_block) so that each column pass finds the rows of the
 * block still in cache. */

#include <stdint.h>

#ifndef V_STREAM /* no streaming store on this path: plain stores */
#define V_STREAM(ptr, v) V_STOREU(ptr, v)
#define V_SFENCE() ((void)0)
#endif

/* Outputs of at least this many bytes per call go around the caches (non-temporal stores,
 * when the rows are whole aligned vectors): written once and not read back here, they
 * would otherwise cost a read for ownership (4 streams of traffic instead of 3) and evict
 * the inputs of the next chunk. */
#define LM_SCAN_STREAM_BYTES (1u << 20)

#ifndef LM_SCAN_TIME_BLOCK_DEFINED
#define LM_SCAN_TIME_BLOCK_DEFINED
static size_t time_block(size_t width)
{
    size_t rows = 16384 / (width ? width : 1);
    return rows < 8 ? 8 : rows;
}
#endif

/* One time block: rows [0, steps) of the arrays as given. stream: out rows are aligned
 * whole vectors, written with non-temporal stores. */
static inline __attribute__((always_inline)) void
SCAN_BLOCK(const float *a, const float *b, size_t steps, size_t width, float *state, float *out,
           int stream)
{
    size_t c = 0;
    for (; c + 2 * LM_W <= width; c += 2 * LM_W) { /* two vectors: two chains in flight */
        LM_V h0 = V_LOADU(state + c), h1 = V_LOADU(state + c + LM_W);
        for (size_t t = 0; t < steps; t++) { /* h = a[t] * h + b[t] */
            const size_t row = t * width + c;
            h0 = V_FMA(V_LOADU(a + row), h0, V_LOADU(b + row));
            h1 = V_FMA(V_LOADU(a + row + LM_W), h1, V_LOADU(b + row + LM_W));
            if (stream) {
                V_STREAM(out + row, h0);
                V_STREAM(out + row + LM_W, h1);
            } else {
                V_STOREU(out + row, h0);
                V_STOREU(out + row + LM_W, h1);
            }
        }
        V_STOREU(state + c, h0);
        V_STOREU(state + c + LM_W, h1);
    }
    for (; c + LM_W <= width; c += LM_W) {
        LM_V h = V_LOADU(state + c);
        for (size_t t = 0; t < steps; t++) {
            const size_t row = t * width + c;
            h = V_FMA(V_LOADU(a + row), h, V_LOADU(b + row));
            if (stream)
                V_STREAM(out + row, h);
            else
                V_STOREU(out + row, h);
        }
        V_STOREU(state + c, h);
    }
    for (; c < width; c++) {
        float h = state[c];
        for (size_t t = 0; t < steps; t++) {
            h = a[t * width + c] * h + b[t * width + c];
            out[t * width + c] = h;
        }
        state[c] = h;
    }
}

void SCAN_NAME(const float *a, const float *b, size_t steps, size_t width, float *state,
               float *out)
{
    const size_t block = time_block(width);
    const int stream = steps * width * sizeof(float) >= LM_SCAN_STREAM_BYTES &&
                       width % LM_W == 0 && (uintptr_t)out % (LM_W * sizeof(float)) == 0;
    for (size_t t0 = 0; t0 < steps; t0 += block) {
        const size_t rows = steps - t0 < block ? steps - t0 : block;
        if (stream)
            SCAN_BLOCK(a + t0 * width, b + t0 * width, rows, width, state, out + t0 * width, 1);
        else
            SCAN_BLOCK(a + t0 * width, b + t0 * width, rows, width, state, out + t0 * width, 0);
    }
    if (stream)
        V_SFENCE();
}

/* The composition of rows [0, steps) applied after (prod, acc) (both in/out). */
static void REDUCE_BLOCK(const float *a, const float *b, size_t steps, size_t width,
                         float *prod, float *acc)
{
    size_t c = 0;
    for (; c + LM_W <= width; c += LM_W) {
        LM_V p = V_LOADU(prod + c), h = V_LOADU(acc + c);
        for (size_t t = 0; t < steps; t++) { /* p *= a[t]; h = a[t] * h + b[t] */
            const LM_V at = V_LOADU(a + t * width + c);
            p = V_MUL(p, at);
            h = V_FMA(at, h, V_LOADU(b + t * width + c));
        }
        V_STOREU(prod + c, p);
        V_STOREU(acc + c, h);
    }
    for (; c < width; c++) {
        float p = prod[c], h = acc[c];
        for (size_t t = 0; t < steps; t++) {
            p *= a[t * width + c];
            h = a[t * width + c] * h + b[t * width + c];
        }
        prod[c] = p;
        acc[c] = h;
    }
}

void REDUCE_NAME(const float *a, const float *b, size_t steps, size_t width, float *prod,
                 float *acc)
{
    for (size_t c = 0; c < width; c++) {
        prod[c] = 1.0f;
        acc[c] = 0.0f;
    }
    const size_t block = time_block(width);
    for (size_t t0 = 0; t0 < steps; t0 += block) {
        const size_t rows = steps - t0 < block ? steps - t0 : block;
        REDUCE_BLOCK(a + t0 * width, b + t0 * width, rows, width, prod, acc);
    }
}
