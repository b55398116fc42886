/* longmix: verify numerical contracts, measure kernels, find the SSM/attention crossover. */
#include "cli.h"
#include "topo.h"

#include <stdio.h>
#include <string.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

typedef struct subcommand {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} subcommand;

static const subcommand subcommands[] = {
    {"verify", lm_cmd_verify, "check SHA-256-pinned numerical contracts (contracts/*.json)"},
    {"info", lm_cmd_info, "CPU, ISA path and why, topology, OpenMP binding, build"},
    {"roofline", lm_cmd_roofline, "peak FMA per ISA and STREAM-triad bandwidth, to CSV"},
    {"sweep", lm_cmd_sweep, "measure kernels over a grid of configurations into a results CSV"},
    {"merge", lm_cmd_merge, "join results CSVs (sweep shards); refuses mixed machines"},
    {"compare", lm_cmd_compare, "performance regression gate: two results CSVs, ratio and U test"},
    {"model", lm_cmd_model, "whole models: decode ms/token, memory and the model-level crossover"},
    {"crossover", lm_cmd_crossover, "measured SSM-vs-attention crossover beside memory and FLOP"},
    {"lesson", lm_cmd_lesson, "data of the lesson's eight figures, from longmix's references"},
    {"compare-machines", lm_cmd_compare_machines, "results folders of several machines side by side"},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: longmix <command> [options]   (longmix <command> --help for more)\n"
                 "       longmix --version\n\n"
                 "commands:\n");
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        fprintf(out, "  %-16s %s\n", subcommands[i].name, subcommands[i].summary);
    fprintf(out, "\nexit status: 0 ok, 1 a check failed, 2 bad usage or input\n");
}

/* glibc's allocator, tuned for repeated calls: the operator drivers allocate their
 * workspaces per call (the SSD's states, scores and per-thread blocks, 2-3 MiB), and with
 * glibc's defaults an interleaved sweep (other configurations' buffers freed in between)
 * makes the heap top be trimmed and those pages fault in again on every call: a third of
 * the chunked SSD's time on this VM, and its 2-thread run no faster than 1 thread
 * (docs/benchmarks.md, "The allocator"). Blocks below 32 MiB come from the heap and up to
 * 256 MiB of its free top is kept; larger ones (weights, caches) are mapped and returned on
 * free as before. */
static void tune_allocator(void)
{
#if defined(__GLIBC__)
    (void)mallopt(M_MMAP_THRESHOLD, 32 << 20);
    (void)mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
}

int main(int argc, char **argv)
{
    tune_allocator();
    if (argc < 2) {
        usage(stderr);
        return LM_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return LM_EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("longmix %s (git %s, %s)\n", lm_build_version(), lm_build_git_rev(),
               lm_build_compiler());
        return LM_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        if (strcmp(argv[1], subcommands[i].name) == 0)
            return subcommands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "longmix: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return LM_EXIT_USAGE;
}
