/* ThreadSanitizer self-check, the positive half: two OpenMP threads increment one counter
 * with no synchronisation. scripts/test-tsan.sh requires TSan to report this race; a TSan
 * set-up that stays silent here would prove nothing by staying silent on the kernels. */
#include <stdio.h>

int main(void)
{
    long counter = 0;
#pragma omp parallel num_threads(2)
    for (int i = 0; i < 100000; i++)
        counter++; /* the race */
    printf("counter %ld\n", counter);
    return 0;
}
