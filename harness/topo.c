/* Topology through hwloc, OpenMP binding read back per thread, and the machine metadata
 * every results file carries. */
#include "topo.h"

#include <hwloc.h>
#include <omp.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t first_cache_size(hwloc_topology_t t, hwloc_obj_type_t type)
{
    hwloc_obj_t obj = hwloc_get_obj_by_type(t, type, 0);
    return obj != NULL && obj->attr != NULL ? (uint64_t)obj->attr->cache.size : 0;
}

static uint64_t cache_size_sum(hwloc_topology_t t, hwloc_obj_type_t type)
{
    uint64_t sum = 0;
    int n = hwloc_get_nbobjs_by_type(t, type);
    for (int i = 0; i < n; i++) {
        hwloc_obj_t obj = hwloc_get_obj_by_type(t, type, (unsigned)i);
        if (obj != NULL && obj->attr != NULL)
            sum += (uint64_t)obj->attr->cache.size;
    }
    return sum;
}

static int count_of(hwloc_topology_t t, hwloc_obj_type_t type)
{
    int n = hwloc_get_nbobjs_by_type(t, type);
    return n < 0 ? 0 : n;
}

lm_status lm_topology_read(lm_topology *topo, lm_error *err)
{
    memset(topo, 0, sizeof *topo);
    unsigned version = hwloc_get_api_version();
    snprintf(topo->hwloc_version, sizeof topo->hwloc_version, "%u.%u.%u", version >> 16,
             (version >> 8) & 0xff, version & 0xff);
    hwloc_topology_t t;
    if (hwloc_topology_init(&t) != 0)
        return lm_fail(err, LM_ERR_UNSUPPORTED, "hwloc_topology_init failed");
    if (hwloc_topology_load(t) != 0) {
        hwloc_topology_destroy(t);
        return lm_fail(err, LM_ERR_UNSUPPORTED, "hwloc_topology_load failed");
    }
    topo->packages = count_of(t, HWLOC_OBJ_PACKAGE);
    topo->cores = count_of(t, HWLOC_OBJ_CORE);
    topo->pus = count_of(t, HWLOC_OBJ_PU);
    topo->numa_nodes = count_of(t, HWLOC_OBJ_NUMANODE);
    topo->l1d_bytes = first_cache_size(t, HWLOC_OBJ_L1CACHE);
    topo->l2_bytes = first_cache_size(t, HWLOC_OBJ_L2CACHE);
    topo->l3_bytes = first_cache_size(t, HWLOC_OBJ_L3CACHE);
    topo->l3_count = count_of(t, HWLOC_OBJ_L3CACHE);
    topo->llc_bytes_total = topo->l3_count > 0 ? cache_size_sum(t, HWLOC_OBJ_L3CACHE)
                                               : cache_size_sum(t, HWLOC_OBJ_L2CACHE);
    for (int i = 0; i < topo->numa_nodes; i++) {
        hwloc_obj_t node = hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE, (unsigned)i);
        uint64_t bytes = node != NULL && node->attr != NULL ? node->attr->numanode.local_memory : 0;
        if (i < LM_TOPO_MAX_NUMA)
            topo->numa_memory_bytes[i] = bytes;
        topo->total_memory_bytes += bytes;
    }
    if (topo->cores == 0) /* some VMs expose PUs only */
        topo->cores = topo->pus;
    hwloc_topology_destroy(t);
    return LM_OK;
}

static const char *proc_bind_name(omp_proc_bind_t bind)
{
    switch (bind) {
    case omp_proc_bind_false: return "false";
    case omp_proc_bind_true: return "true";
    case omp_proc_bind_master: return "primary";
    case omp_proc_bind_close: return "close";
    case omp_proc_bind_spread: return "spread";
    default: return "unknown";
    }
}

lm_status lm_omp_binding_read(int threads, lm_omp_binding *out, lm_error *err)
{
    memset(out, 0, sizeof *out);
    out->max_threads = omp_get_max_threads();
    out->num_places = omp_get_num_places();
    snprintf(out->proc_bind, sizeof out->proc_bind, "%s", proc_bind_name(omp_get_proc_bind()));
    const char *places = getenv("OMP_PLACES");
    snprintf(out->places_env, sizeof out->places_env, "%s", places ? places : "(unset)");
    hwloc_topology_t t;
    if (hwloc_topology_init(&t) != 0 || hwloc_topology_load(t) != 0)
        return lm_fail(err, LM_ERR_UNSUPPORTED, "hwloc could not load the topology");
    int team = threads > 0 ? threads : out->max_threads;
    if (team > LM_TOPO_MAX_THREADS)
        team = LM_TOPO_MAX_THREADS;
    int seen = 0;
#pragma omp parallel num_threads(team)
    {
        int id = omp_get_thread_num();
        lm_thread_binding *b = &out->threads[id];
        hwloc_bitmap_t set = hwloc_bitmap_alloc();
        b->thread = id;
        snprintf(b->cpuset, sizeof b->cpuset, "unknown");
        b->last_pu = -1;
        if (set != NULL) {
            if (hwloc_get_cpubind(t, set, HWLOC_CPUBIND_THREAD) == 0)
                hwloc_bitmap_list_snprintf(b->cpuset, sizeof b->cpuset, set);
            if (hwloc_get_last_cpu_location(t, set, HWLOC_CPUBIND_THREAD) == 0)
                b->last_pu = hwloc_bitmap_first(set);
            hwloc_bitmap_free(set);
        }
#pragma omp single
        seen = omp_get_num_threads();
    }
    out->thread_count = seen;
    hwloc_topology_destroy(t);
    return LM_OK;
}

static void trim(char *s)
{
    size_t start = 0, len = strlen(s);
    while (start < len && isspace((unsigned char)s[start]))
        start++;
    while (len > start && isspace((unsigned char)s[len - 1]))
        len--;
    memmove(s, s + start, len - start);
    s[len - start] = '\0';
}

void lm_cpu_model(char *out, size_t size)
{
    snprintf(out, size, "%s", lm_cpu()->brand);
    trim(out);
    if (out[0] != '\0')
        return;
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[256];
    while (f != NULL && fgets(line, sizeof line, f) != NULL) {
        const char *colon = strchr(line, ':');
        if (colon != NULL && (strncmp(line, "model name", 10) == 0 ||
                              strncmp(line, "Model", 5) == 0 ||
                              strncmp(line, "CPU part", 8) == 0)) {
            snprintf(out, size, "%s", colon + 1);
            trim(out);
            break;
        }
    }
    if (f != NULL)
        fclose(f);
    if (out[0] == '\0')
        snprintf(out, size, "unknown");
}

void lm_machine_meta_fill(lm_machine_meta *meta)
{
    memset(meta, 0, sizeof *meta);
    time_t now = time(NULL);
    struct tm utc;
    gmtime_r(&now, &utc);
    strftime(meta->timestamp, sizeof meta->timestamp, "%Y-%m-%dT%H:%M:%SZ", &utc);
    if (gethostname(meta->host, sizeof meta->host - 1) != 0)
        snprintf(meta->host, sizeof meta->host, "unknown");
    char stamp[20];
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%S", &utc);
    snprintf(meta->run_id, sizeof meta->run_id, "%s-%.16s-%ld", stamp, meta->host,
             (long)getpid());
    snprintf(meta->git_rev, sizeof meta->git_rev, "%s", lm_build_git_rev());
    snprintf(meta->compiler, sizeof meta->compiler, "%s", lm_build_compiler());
    snprintf(meta->cflags, sizeof meta->cflags, "%s", lm_build_cflags());
    lm_cpu_model(meta->cpu_model, sizeof meta->cpu_model);
    const char *why = NULL;
    meta->isa_active = lm_isa_active(&why);
    snprintf(meta->isa_why, sizeof meta->isa_why, "%s", why ? why : "");
    lm_topology topo;
    if (lm_topology_read(&topo, NULL) == LM_OK) {
        meta->cores = topo.cores;
        meta->pus = topo.pus;
        meta->llc_bytes_total = topo.llc_bytes_total;
    }
}
