/* ThreadSanitizer self-check, the negative half: the OpenMP synchronisation the kernels'
 * drivers rely on. Each thread writes its own slot, then reads the other's after a barrier;
 * a parallel loop with a reduction writes an array the initial thread reads after the
 * loop's implicit barrier; an atomic and a critical section update shared totals. All of
 * it is race-free, so TSan must report nothing: it does only when it is told about
 * OpenMP's barriers (clang's libomp with Archer), not with gcc's uninstrumented libgomp. */
#include <omp.h>
#include <stdio.h>

enum { N = 4096 };

int main(void)
{
    static double values[N];
    double slot[2] = {0.0, 0.0}, seen = 0.0, sum = 0.0, largest = 0.0;
    long hits = 0;
#pragma omp parallel num_threads(2)
    {
        int me = omp_get_thread_num();
        slot[me] = me + 1.0;
#pragma omp barrier
        double other = slot[1 - me]; /* written by the other thread before the barrier */
#pragma omp atomic
        seen += other;
#pragma omp for reduction(+ : sum)
        for (int i = 0; i < N; i++) {
            values[i] = 0.5 * i;
            sum += values[i];
        }
#pragma omp critical
        {
            if (slot[me] > largest)
                largest = slot[me];
            hits++;
        }
    }
    double check = 0.0;
    for (int i = 0; i < N; i++)
        check += values[i];
    int ok = seen == 3.0 && sum == check && sum == 0.25 * N * (N - 1) && largest == 2.0 && hits == 2;
    printf("sync %s: seen %g, sum %g, largest %g, hits %ld\n", ok ? "ok" : "WRONG", seen, sum,
           largest, hits);
    return ok ? 0 : 1;
}
