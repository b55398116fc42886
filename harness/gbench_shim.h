/* Google Benchmark shim (harness/gbench_shim.cc, the only C++ in longmix): registers
 * every bench-registry case with Google Benchmark, so `make bench` measures the same
 * configurations as `longmix sweep` with the library's statistics and JSON output
 * (scripts/gbench_csv.py turns that JSON into the results CSV). */
#ifndef LONGMIX_GBENCH_SHIM_H
#define LONGMIX_GBENCH_SHIM_H

#ifdef __cplusplus
extern "C" {
#endif

/* Registers every case of the bench registry: the active ISA, 1 thread and all cores,
 * each supported dtype, the case's default context and a quarter of it. Returns the
 * number of benchmarks registered. */
int lm_gbench_register_all(void);

#ifdef __cplusplus
}
#endif
#endif
