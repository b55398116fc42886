// Google Benchmark shim: every bench-registry case registered from C, real time (the
// kernels run OpenMP teams), flops and bytes as rate counters, the configuration as
// counters and the machine metadata as custom context, so scripts/gbench_csv.py can write
// the same tidy results CSV as `longmix sweep`.
#include "gbench_shim.h"

#include "bench.h"
#include "topo.h"

#include <benchmark/benchmark.h>
#include <omp.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace {

void run_case(benchmark::State &state, const lm_bench_case *bench, lm_bench_config config)
{
    lm_error err;
    const struct lm_ops *ops = lm_bench_ops(&config, &err);
    if (ops == nullptr) {
        state.SkipWithError(err.message);
        return;
    }
    omp_set_num_threads(config.threads);
    void *data = nullptr;
    if (bench->setup(&config, &data, &err) != LM_OK) {
        state.SkipWithError(err.message);
        return;
    }
    lm_status status = bench->run(data, ops, &err); // warm-up, outside the timed loop
    for (auto _ : state) {
        if (status != LM_OK)
            break;
        status = bench->run(data, ops, &err);
    }
    double checksum = 0.0, err_max = -1.0;
    if (status == LM_OK)
        status = bench->check(data, ops, &checksum, &err_max, &err);
    bench->teardown(data);
    if (status != LM_OK) {
        state.SkipWithError(err.message);
        return;
    }
    double flops = 0.0, bytes = 0.0;
    bench->cost(&config, &flops, &bytes);
    using benchmark::Counter;
    state.counters["flops"] = Counter(flops, Counter::kIsIterationInvariantRate);
    state.counters["bytes"] = Counter(bytes, Counter::kIsIterationInvariantRate);
    state.counters["flops_per_run"] = flops;
    state.counters["bytes_per_run"] = bytes;
    state.counters["checksum"] = checksum;
    state.counters["err_max"] = err_max;
    state.counters["threads"] = config.threads;
    state.counters["bits"] = config.bits;
    state.counters["n_ctx"] = static_cast<double>(config.n_ctx);
    state.counters["chunk"] = static_cast<double>(config.chunk);
    state.counters["heads"] = static_cast<double>(config.heads);
    state.counters["kv_heads"] = static_cast<double>(config.kv_heads);
    state.counters["head_dim"] = static_cast<double>(config.head_dim);
    state.counters["d_inner"] = static_cast<double>(config.d_inner);
    state.counters["d_state"] = static_cast<double>(config.d_state);
    state.counters["batch"] = static_cast<double>(config.batch);
}

std::vector<std::string> split(const char *list)
{
    std::vector<std::string> out;
    std::string item;
    for (const char *p = list;; p++) {
        if (*p == ',' || *p == '\0') {
            out.push_back(item);
            item.clear();
            if (*p == '\0')
                break;
        } else {
            item += *p;
        }
    }
    return out;
}

} // namespace

extern "C" int lm_gbench_register_all(void)
{
    lm_machine_meta meta;
    lm_machine_meta_fill(&meta);
    benchmark::AddCustomContext("run_id", meta.run_id);
    benchmark::AddCustomContext("git_rev", meta.git_rev);
    benchmark::AddCustomContext("cpu_model", meta.cpu_model);
    benchmark::AddCustomContext("longmix_host", meta.host);
    benchmark::AddCustomContext("longmix_compiler", meta.compiler);
    benchmark::AddCustomContext("longmix_isa", lm_isa_name(meta.isa_active));
    int cores = meta.cores > 0 ? meta.cores : 1;
    int registered = 0;
    for (size_t i = 0; i < lm_bench_count(); i++) {
        const lm_bench_case *bench = lm_bench_at(i);
        lm_bench_config base;
        lm_bench_default_config(bench, &base);
        std::vector<long> contexts{base.n_ctx};
        if ((bench->uses & LM_BENCH_USES_CTX) && base.n_ctx >= 64)
            contexts.insert(contexts.begin(), base.n_ctx / 4);
        for (const std::string &dtype : split(bench->dtypes))
            for (long n : contexts)
                for (int threads : {1, cores}) {
                    lm_bench_config config = base;
                    std::snprintf(config.dtype, sizeof config.dtype, "%s", dtype.c_str());
                    if (dtype == "f16" || dtype == "bf16")
                        config.bits = 16;
                    config.n_ctx = n;
                    config.threads = threads;
                    std::string name = std::string(bench->name) + "/isa:" +
                                       lm_isa_name(config.isa) + "/dtype:" + dtype +
                                       "/n_ctx:" + std::to_string(n) +
                                       "/threads:" + std::to_string(threads);
                    benchmark::RegisterBenchmark(name.c_str(), run_case, bench, config)
                        ->UseRealTime()
                        ->Unit(benchmark::kMicrosecond);
                    registered++;
                    if (cores == 1)
                        break;
                }
    }
    return registered;
}

int main(int argc, char **argv)
{
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv))
        return 2;
    lm_gbench_register_all();
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
