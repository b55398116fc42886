/* The OpenMP wait policy of the measuring commands (sweep, crossover, roofline, model).
 *
 * libgomp's idle team threads spin before they sleep: GOMP_SPINCOUNT 300,000 iterations
 * when neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT is set (about 5 ms of `pause` on the
 * development VM), cut to 1,000 only when the process runs more threads than its CPU mask
 * holds. It cannot see other processes: with a second process on one of two cores, a
 * 2-thread team's spinning member keeps its core while the member with work waits for a
 * scheduler slice, and every parallel region costs milliseconds (docs/benchmarks.md,
 * "Noise"). libgomp reads the variables once, when it is loaded, so they cannot be set
 * from main: the process is executed again with them set. */
#ifndef LONGMIX_OMP_WAIT_H
#define LONGMIX_OMP_WAIT_H

#include <stddef.h>

/* The spin count set when the user set neither variable: libgomp's own value for an
 * oversubscribed process (about 17 us of spinning here, then a futex sleep). */
#define LM_OMP_SPINCOUNT "1000"

/* When neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT is in the environment: sets
 * GOMP_SPINCOUNT=LM_OMP_SPINCOUNT and executes /proc/self/exe again as
 * `longmix <argv[0]> <argv[1..argc)>` (argv as a subcommand receives it); returns only when
 * it did not (a variable was set, or the exec failed: the run goes on with libgomp's
 * default). Harness code for the commands that measure; never call it from a library. */
void lm_omp_wait_settle(int argc, char **argv);

/* What the run's OpenMP wait is, for messages, into out[0..size): "GOMP_SPINCOUNT=1000",
 * "OMP_WAIT_POLICY=passive" or "libgomp default". */
void lm_omp_wait_text(char *out, size_t size);

#endif
