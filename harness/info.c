/* longmix info: the machine, the chosen ISA path and why, the OpenMP binding as applied,
 * the build. The same metadata goes with every results file (topo.h, lm_machine_meta). */
#include "cli.h"
#include "omp_wait.h"
#include "topo.h"

#include "build_info.h"

#include <jansson.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *lm_build_version(void) { return LM_BUILD_VERSION; }

const char *lm_build_git_rev(void) { return LM_BUILD_GIT_REV; }

const char *lm_build_compiler(void)
{
#ifdef __VERSION__
    return LM_BUILD_CC " " __VERSION__;
#else
    return LM_BUILD_CC;
#endif
}

const char *lm_build_cflags(void) { return LM_BUILD_CFLAGS; }

static void info_usage(FILE *out)
{
    fprintf(out,
            "usage: longmix info [--format text|json] [--threads N]\n\n"
            "CPU model, ISA paths available and chosen (and why), hwloc topology, OpenMP\n"
            "threads with each thread's cpuset read back through hwloc, compiler, flags and\n"
            "git revision. --threads sets the team whose binding is read (default: OpenMP's).\n"
            "The chain is where the active path's slots fall back: avx512bf16 derives from\n"
            "avx512vnni (every CPU with AVX512-BF16 has VNNI), which derives from avx512.\n"
            "LONGMIX_ISA=scalar|avx2|avx512|avx512vnni|avx512bf16|neon forces a path;\n"
            "OMP_PLACES/OMP_PROC_BIND bind.\n");
}

static void human_bytes(uint64_t bytes, char *out, size_t size)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    snprintf(out, size, v == (double)(uint64_t)v ? "%.0f %s" : "%.1f %s", v, units[u]);
}

static void print_text(const lm_machine_meta *m, const lm_topology *t, const lm_omp_binding *b)
{
    char l1[32], l2[32], l3[32], mem[32];
    human_bytes(t->l1d_bytes, l1, sizeof l1);
    human_bytes(t->l2_bytes, l2, sizeof l2);
    human_bytes(t->l3_bytes, l3, sizeof l3);
    human_bytes(t->total_memory_bytes, mem, sizeof mem);
    printf("cpu        %s\n", m->cpu_model);
    printf("isa        %s: %s\n", lm_isa_name(m->isa_active), m->isa_why);
    printf("chain     ");
    for (lm_isa isa = m->isa_active;; isa = lm_isa_parent(isa)) { /* where a slot falls back */
        printf(" %s%s", lm_isa_name(isa), lm_isa_parent(isa) == isa ? "" : " ->");
        if (lm_isa_parent(isa) == isa)
            break;
    }
    printf(" (a path without its own kernel for a slot runs its parent's)\n");
    printf("available ");
    for (int i = 0; i < LM_ISA_COUNT; i++)
        if (lm_isa_available((lm_isa)i))
            printf(" %s", lm_isa_name((lm_isa)i));
    printf("\n");
    printf("topology   %d package(s), %d core(s), %d PU(s); L1d %s, L2 %s, L3 %s x %d\n",
           t->packages, t->cores, t->pus, l1, l2, l3, t->l3_count);
    printf("numa       %d node(s), %s", t->numa_nodes, mem);
    for (int i = 0; i < t->numa_nodes && i < LM_TOPO_MAX_NUMA; i++) {
        char node[32];
        human_bytes(t->numa_memory_bytes[i], node, sizeof node);
        printf("%s node %d %s", i == 0 ? ":" : ",", i, node);
    }
    printf("\n");
    printf("openmp     max threads %d, places %d (OMP_PLACES %s), proc_bind %s\n", b->max_threads,
           b->num_places, b->places_env, b->proc_bind);
    for (int i = 0; i < b->thread_count; i++)
        printf("  thread %-3d cpuset %-12s last on PU %d\n", b->threads[i].thread,
               b->threads[i].cpuset, b->threads[i].last_pu);
    char wait[96];
    lm_omp_wait_text(wait, sizeof wait);
    printf("omp wait   %s here; sweep, crossover and roofline run with GOMP_SPINCOUNT=%s when "
           "neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT is set (docs/benchmarks.md, Noise)\n",
           wait, LM_OMP_SPINCOUNT);
    printf("compiler   %s\n", m->compiler);
    printf("flags      %s\n", m->cflags);
    printf("git        %s\n", m->git_rev);
    printf("hwloc      %s\n", t->hwloc_version);
    printf("host       %s\n", m->host);
}

static json_t *to_json(const lm_machine_meta *m, const lm_topology *t, const lm_omp_binding *b)
{
    json_t *available = json_array();
    for (int i = 0; i < LM_ISA_COUNT; i++)
        if (lm_isa_available((lm_isa)i))
            json_array_append_new(available, json_string(lm_isa_name((lm_isa)i)));
    json_t *chain = json_array();
    for (lm_isa isa = m->isa_active;; isa = lm_isa_parent(isa)) {
        json_array_append_new(chain, json_string(lm_isa_name(isa)));
        if (lm_isa_parent(isa) == isa)
            break;
    }
    json_t *numa = json_array();
    for (int i = 0; i < t->numa_nodes && i < LM_TOPO_MAX_NUMA; i++)
        json_array_append_new(numa, json_integer((json_int_t)t->numa_memory_bytes[i]));
    json_t *threads = json_array();
    for (int i = 0; i < b->thread_count; i++)
        json_array_append_new(threads, json_pack("{s:i, s:s, s:i}", "thread", b->threads[i].thread,
                                                 "cpuset", b->threads[i].cpuset, "last_pu",
                                                 b->threads[i].last_pu));
    json_t *topology = json_pack(
        "{s:i, s:i, s:i, s:i, s:I, s:I, s:I, s:i, s:I, s:o, s:I, s:s}", "packages", t->packages,
        "cores", t->cores, "pus", t->pus, "numa_nodes", t->numa_nodes, "l1d_bytes",
        (json_int_t)t->l1d_bytes, "l2_bytes", (json_int_t)t->l2_bytes, "l3_bytes",
        (json_int_t)t->l3_bytes, "l3_count", t->l3_count, "llc_bytes_total",
        (json_int_t)t->llc_bytes_total, "numa_memory_bytes", numa, "total_memory_bytes",
        (json_int_t)t->total_memory_bytes, "hwloc_version", t->hwloc_version);
    json_t *openmp = json_pack("{s:i, s:i, s:s, s:s, s:o}", "max_threads", b->max_threads,
                               "num_places", b->num_places, "proc_bind", b->proc_bind,
                               "omp_places", b->places_env, "threads", threads);
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:{s:s, s:s, s:o, s:o}, s:o, s:o, s:s, s:s}",
                     "run_id", m->run_id, "timestamp", m->timestamp, "git_rev", m->git_rev,
                     "host", m->host, "cpu_model", m->cpu_model, "isa", "active",
                     lm_isa_name(m->isa_active), "why", m->isa_why, "chain", chain,
                     "available", available,
                     "topology", topology, "openmp", openmp, "compiler", m->compiler, "cflags",
                     m->cflags);
}

int lm_cmd_info(int argc, char **argv)
{
    const char *format = "text";
    int threads = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            info_usage(stdout);
            return LM_EXIT_OK;
        } else if (strcmp(argv[i], "--format") == 0 && i + 1 < argc) {
            format = argv[++i];
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end != '\0' || v < 1 || v > LM_TOPO_MAX_THREADS) {
                fprintf(stderr, "longmix info: --threads must be an integer in 1..%d, got '%s'\n",
                        LM_TOPO_MAX_THREADS, argv[i]);
                return LM_EXIT_USAGE;
            }
            threads = (int)v;
        } else {
            fprintf(stderr, "longmix info: unknown option '%s'\n", argv[i]);
            info_usage(stderr);
            return LM_EXIT_USAGE;
        }
    }
    if (strcmp(format, "text") != 0 && strcmp(format, "json") != 0) {
        fprintf(stderr, "longmix info: --format must be text or json, got '%s'\n", format);
        return LM_EXIT_USAGE;
    }
    lm_machine_meta meta;
    lm_topology topo;
    lm_error err;
    lm_machine_meta_fill(&meta);
    if (lm_topology_read(&topo, &err) != LM_OK)
        fprintf(stderr, "longmix info: %s (topology fields are zero)\n", err.message);
    lm_omp_binding *binding = malloc(sizeof *binding);
    if (binding == NULL) {
        fprintf(stderr, "longmix info: out of memory\n");
        return LM_EXIT_USAGE;
    }
    if (lm_omp_binding_read(threads, binding, &err) != LM_OK)
        fprintf(stderr, "longmix info: %s\n", err.message);
    if (strcmp(format, "json") == 0) {
        json_t *doc = to_json(&meta, &topo, binding);
        char *text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("%s\n", text ? text : "{}");
        free(text);
        json_decref(doc);
    } else {
        print_text(&meta, &topo, binding);
    }
    free(binding);
    return LM_EXIT_OK;
}
