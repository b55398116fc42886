/* The machine a measurement ran on: hwloc topology, OpenMP binding as applied, and the
 * metadata every results file carries (run id, time, git revision, host, CPU model,
 * compiler and flags). Filled by library code that never prints; `longmix info` and the
 * CSV writers format it. */
#ifndef LONGMIX_TOPO_H
#define LONGMIX_TOPO_H

#include "longmix.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LM_TOPO_MAX_THREADS 256
#define LM_TOPO_MAX_NUMA 16

/* Counts and sizes from hwloc (0 when hwloc does not report them). */
typedef struct lm_topology {
    int packages, cores, pus, numa_nodes;
    uint64_t l1d_bytes, l2_bytes, l3_bytes; /* per instance, of the first cache of each level */
    int l3_count;                           /* how many L3 (or last-level) caches */
    uint64_t llc_bytes_total;               /* sum over all last-level caches */
    uint64_t numa_memory_bytes[LM_TOPO_MAX_NUMA]; /* local memory of each NUMA node */
    uint64_t total_memory_bytes;
    char hwloc_version[32];
} lm_topology;

/* One OpenMP thread as bound: its cpuset (hwloc list syntax "0-3,8") and the PU it last
 * ran on, both read back through hwloc from inside the parallel region. */
typedef struct lm_thread_binding {
    int thread;
    char cpuset[64];
    int last_pu;
} lm_thread_binding;

typedef struct lm_omp_binding {
    int max_threads;     /* omp_get_max_threads() */
    int num_places;      /* omp_get_num_places() */
    char proc_bind[16];  /* false, true, primary, close, spread */
    char places_env[64]; /* OMP_PLACES as set, or "(unset)" */
    int thread_count;    /* entries filled in threads[] */
    lm_thread_binding threads[LM_TOPO_MAX_THREADS];
} lm_omp_binding;

/* Everything a results file says about where and how it was produced. */
typedef struct lm_machine_meta {
    char run_id[64];     /* "<UTC yyyymmddThhmmss>-<host>-<pid>" unique per process */
    char timestamp[32];  /* ISO 8601 UTC of the fill: 2026-11-29T10:21:13Z */
    char git_rev[48];    /* short hash, "+dirty" when the tree had changes, or "unknown" */
    char host[64];
    char cpu_model[96];
    char compiler[128];  /* the compiler's name and version (__VERSION__) */
    char cflags[512];    /* the baseline flags harness files were compiled with */
    lm_isa isa_active;
    char isa_why[160];
    int cores, pus;
    uint64_t llc_bytes_total;
} lm_machine_meta;

/* Reads the topology through hwloc. LM_ERR_UNSUPPORTED when hwloc cannot load it. */
lm_status lm_topology_read(lm_topology *topo, lm_error *err);

/* Runs an OpenMP parallel region of `threads` threads (<= 0: the default team) and
 * reads back each thread's binding. */
lm_status lm_omp_binding_read(int threads, lm_omp_binding *out, lm_error *err);

/* Fills meta from the build (git revision, compiler, flags), the host, the CPU, hwloc and
 * the dispatcher. Never fails: unknown fields read "unknown". */
void lm_machine_meta_fill(lm_machine_meta *meta);

/* Build metadata compiled into harness/info.c (the version is the Makefile's VERSION). */
const char *lm_build_version(void);
const char *lm_build_git_rev(void);
const char *lm_build_compiler(void);
const char *lm_build_cflags(void);

/* CPU model string: cpuid brand on x86, /proc/cpuinfo or "unknown" elsewhere. Trimmed. */
void lm_cpu_model(char *out, size_t size);

#ifdef __cplusplus
}
#endif
#endif
