/* The OpenMP wait policy of the measuring commands (see omp_wait.h). */
#include "omp_wait.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { MAX_ARGS = 256 };

void lm_omp_wait_settle(int argc, char **argv)
{
    if (getenv("OMP_WAIT_POLICY") != NULL || getenv("GOMP_SPINCOUNT") != NULL)
        return;
    if (argc < 1 || argc + 2 > MAX_ARGS || setenv("GOMP_SPINCOUNT", LM_OMP_SPINCOUNT, 1) != 0)
        return;
    char *args[MAX_ARGS];
    static char program[] = "longmix";
    args[0] = program;
    for (int i = 0; i < argc; i++)
        args[i + 1] = argv[i];
    args[argc + 1] = NULL;
    execv("/proc/self/exe", args);
    unsetenv("GOMP_SPINCOUNT"); /* the exec failed: libgomp's default stays in force */
}

void lm_omp_wait_text(char *out, size_t size)
{
    const char *policy = getenv("OMP_WAIT_POLICY"), *spin = getenv("GOMP_SPINCOUNT");
    if (spin != NULL)
        snprintf(out, size, "GOMP_SPINCOUNT=%.64s", spin);
    else if (policy != NULL)
        snprintf(out, size, "OMP_WAIT_POLICY=%.64s", policy);
    else
        snprintf(out, size, "libgomp default");
}
