/* longmix merge: join results CSVs (the shards of `sweep --shard K/N`) into one. */
#include "cli.h"
#include "results.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void merge_usage(FILE *out)
{
    fprintf(out, "usage: longmix merge A.csv B.csv ... --out ALL.csv [--force]\n\n"
                 "Joins results files (e.g. the shards of longmix sweep --shard K/N) into one,\n"
                 "keeping the first row of each configuration (later duplicates are dropped and\n"
                 "counted). Every cell is checked against its column (an integer where n_ctx\n"
                 "goes, a finite non-negative time, a known status, ...); a bad cell is refused\n"
                 "with its file, line and column. Refuses files whose rows come from different\n"
                 "CPU models or git revisions unless --force. ALL.csv is written atomically.\n\n"
                 "exit status: 0 merged, 2 bad usage or a file that is unreadable or invalid\n");
}

typedef struct merge_options {
    const char *out_path;
    bool force;
    const char **names; /* {count} */
    size_t count;
} merge_options;

/* 0 to go on, -1 after --help, else an exit code. */
static int parse_options(int argc, char **argv, merge_options *o)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            merge_usage(stdout);
            return -1;
        } else if (strcmp(argv[i], "--force") == 0) {
            o->force = true;
        } else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
            o->out_path = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "longmix merge: unknown option '%s'\n", argv[i]);
            merge_usage(stderr);
            return LM_EXIT_USAGE;
        } else {
            o->names[o->count++] = argv[i];
        }
    }
    if (o->out_path == NULL || o->count == 0) {
        merge_usage(stderr);
        return LM_EXIT_USAGE;
    }
    return 0;
}

/* Reads, merges and writes; the message of a failure in err. */
static int merge_files(const merge_options *o, lm_error *err)
{
    lm_csv *inputs = calloc(o->count, sizeof *inputs);
    if (inputs == NULL) {
        lm_fail(err, LM_ERR_NOMEM, "out of memory");
        return LM_EXIT_USAGE;
    }
    int rc = LM_EXIT_OK;
    size_t read = 0;
    for (; read < o->count; read++)
        if (lm_results_read(&inputs[read], o->names[read], err) != LM_OK) {
            rc = LM_EXIT_USAGE;
            break;
        }
    lm_csv merged;
    size_t dropped = 0;
    if (rc == LM_EXIT_OK) {
        if (lm_results_merge(inputs, o->names, o->count, o->force, &merged, &dropped, err) !=
            LM_OK) {
            rc = LM_EXIT_USAGE;
        } else {
            if (lm_csv_write_atomic(&merged, o->out_path, err) != LM_OK)
                rc = LM_EXIT_USAGE;
            else
                fprintf(stderr, "longmix merge: %zu rows from %zu files (%zu duplicate rows "
                                "dropped) -> %s\n", merged.rows, o->count, dropped, o->out_path);
            lm_csv_free(&merged);
        }
    }
    for (size_t i = 0; i < read; i++)
        lm_csv_free(&inputs[i]);
    free(inputs);
    return rc;
}

int lm_cmd_merge(int argc, char **argv)
{
    merge_options o = {NULL, false, calloc((size_t)argc, sizeof(const char *)), 0};
    if (o.names == NULL) {
        fprintf(stderr, "longmix merge: out of memory\n");
        return LM_EXIT_USAGE;
    }
    int rc = parse_options(argc, argv, &o);
    if (rc == 0) {
        lm_error err;
        rc = merge_files(&o, &err);
        if (rc != LM_EXIT_OK)
            fprintf(stderr, "longmix merge: %s\n", err.message);
    }
    free(o.names);
    return rc < 0 ? LM_EXIT_OK : rc;
}
