/* One Mamba-2 SSD decode step of one (batch row, head), instantiated per ISA by the
 * *_ssd.c files through the vocabulary kernels/simd/<isa>.h; SSD_STEP_NAME names it.
 * The state S {P, N} is row-major (rows i of N floats), so each row runs along N in
 * vectors, two accumulators for y_i, the last N % LM_W floats one at a time:
 *   S_i = abar S_i + (delta x_i) B;   y_i = S_i . C + skip x_i. */
void SSD_STEP_NAME(const float *x, const float *b, const float *c, size_t P, size_t N,
                   float abar, float delta, float skip, float *S, float *y)
{
    const LM_V va = V_SET1(abar);
    for (size_t i = 0; i < P; i++) {
        float *row = S + i * N; /* {N} */
        const float dx = delta * x[i];
        const LM_V vdx = V_SET1(dx);
        LM_V acc0 = V_SET1(0.0f), acc1 = acc0;
        size_t n = 0;
        for (; n + 2 * LM_W <= N; n += 2 * LM_W) {
            const LM_V r0 = V_FMA(vdx, V_LOADU(b + n), V_MUL(va, V_LOADU(row + n)));
            const LM_V r1 =
                V_FMA(vdx, V_LOADU(b + n + LM_W), V_MUL(va, V_LOADU(row + n + LM_W)));
            V_STOREU(row + n, r0);
            V_STOREU(row + n + LM_W, r1);
            acc0 = V_FMA(r0, V_LOADU(c + n), acc0);
            acc1 = V_FMA(r1, V_LOADU(c + n + LM_W), acc1);
        }
        for (; n + LM_W <= N; n += LM_W) {
            const LM_V r0 = V_FMA(vdx, V_LOADU(b + n), V_MUL(va, V_LOADU(row + n)));
            V_STOREU(row + n, r0);
            acc0 = V_FMA(r0, V_LOADU(c + n), acc0);
        }
        float s = V_HSUM(V_ADD(acc0, acc1));
        for (; n < N; n++) {
            row[n] = dx * b[n] + abar * row[n];
            s += row[n] * c[n];
        }
        y[i] = s + skip * x[i];
    }
}
