#!/usr/bin/python3
"""Google Benchmark JSON (build/longmix-gbench --benchmark_out=...) -> the longmix results CSV.

usage: scripts/gbench_csv.py results/gbench.json --out results/gbench.csv

One row per benchmark: the configuration comes from the counters the shim sets
(harness/gbench_shim.cc), the machine from its custom context. With
--benchmark_repetitions=R the R per-repetition times give median, min and quartiles;
otherwise the single mean-per-iteration time fills all four. rep_times_s and rep_cpu_s
list the repetitions' real and CPU times in run order (what `longmix compare` tests).
"""
import argparse
import csv
import json
import os
import statistics
import sys

# The results columns (docs/benchmarks.md, "The results CSV"), then longmix's extras: the same list as
# harness/csv.c (tests/cli/t_measure.sh checks that both write the same header).
COLUMNS = ("run_id timestamp git_rev host cpu_model isa threads kernel dtype bits n_ctx chunk "
           "heads kv_heads head_dim d_inner d_state batch reps median_s min_s p25_s p75_s gflops "
           "gbps roofline_frac checksum status flops bytes err_max note compiler cores "
           "llc_bytes rep_times_s rep_cpu_s disc busy_cores disturbed").split()

UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def quantile(sorted_values, q):
    """NumPy's default linear interpolation, as harness/stats.c."""
    pos = q * (len(sorted_values) - 1)
    lo = int(pos)
    if lo + 1 >= len(sorted_values):
        return sorted_values[-1]
    return sorted_values[lo] + (pos - lo) * (sorted_values[lo + 1] - sorted_values[lo])


def rep_times_text(in_order, kept=64):
    """Repetition times as the sweep writes them (harness/bench_registry.c): in run
    order, at most `kept`, evenly spaced in time when there were more."""
    count = min(len(in_order), kept)
    return ";".join("%.9g" % in_order[i * len(in_order) // count] for i in range(count))


def parse_name(name):
    parts = name.split("/")
    fields = {"kernel": parts[0]}
    for part in parts[1:]:
        if ":" in part:
            key, value = part.split(":", 1)
            fields[key] = value
    return fields


def convert(doc):
    context = doc.get("context", {})
    groups = {}
    for bench in doc.get("benchmarks", []):
        if bench.get("run_type", "iteration") != "iteration":
            continue
        groups.setdefault(bench.get("run_name", bench["name"]), []).append(bench)
    rows = []
    for name, runs in groups.items():
        first = runs[0]
        fields = parse_name(name)
        error = next((r.get("error_message", "error") for r in runs if r.get("error_occurred")), None)
        ok_runs = [r for r in runs if not r.get("error_occurred")]
        in_order = [r["real_time"] * UNIT[r.get("time_unit", "ns")] for r in ok_runs]
        cpu_in_order = [r["cpu_time"] * UNIT[r.get("time_unit", "ns")] for r in ok_runs
                        if "cpu_time" in r]
        times = sorted(in_order)
        count = lambda key: first.get(key, 0)
        median = statistics.median(times) if times else 0.0
        flops, nbytes = count("flops_per_run"), count("bytes_per_run")
        row = {
            "run_id": context.get("run_id", ""),
            "timestamp": context.get("date", ""),
            "git_rev": context.get("git_rev", "unknown"),
            "host": context.get("longmix_host", context.get("host_name", "")),
            "cpu_model": context.get("cpu_model", "unknown"),
            "isa": fields.get("isa", context.get("longmix_isa", "")),
            "threads": int(count("threads")) or fields.get("threads", ""),
            "kernel": fields["kernel"],
            "dtype": fields.get("dtype", ""),
            "bits": int(count("bits")),
            "n_ctx": int(count("n_ctx")),
            "chunk": int(count("chunk")),
            "heads": int(count("heads")),
            "kv_heads": int(count("kv_heads")),
            "head_dim": int(count("head_dim")),
            "d_inner": int(count("d_inner")),
            "d_state": int(count("d_state")),
            "batch": int(count("batch")),
            "reps": len(times),
            "median_s": "%.9g" % median,
            "min_s": "%.9g" % (times[0] if times else 0.0),
            "p25_s": "%.9g" % (quantile(times, 0.25) if times else 0.0),
            "p75_s": "%.9g" % (quantile(times, 0.75) if times else 0.0),
            "gflops": "%.9g" % (flops / median * 1e-9 if median > 0 else 0.0),
            "gbps": "%.9g" % (nbytes / median * 1e-9 if median > 0 else 0.0),
            "roofline_frac": 0,
            "checksum": "%.9g" % count("checksum"),
            "status": "error" if error else "ok",
            "flops": "%.9g" % flops,
            "bytes": "%.9g" % nbytes,
            "err_max": "%.9g" % count("err_max") if not error else -1,
            "note": error or "google-benchmark (library built as DEBUG: see docs/benchmarks.md)",
            "compiler": context.get("longmix_compiler", ""),
            "cores": context.get("num_cpus", ""),
            "llc_bytes": max((c.get("size", 0) for c in context.get("caches", [])), default=0),
            "rep_times_s": rep_times_text(in_order),
            # Google Benchmark's CPU time is the benchmark thread's, not the process's
            "rep_cpu_s": rep_times_text(cpu_in_order) if len(cpu_in_order) == len(in_order) else "",
            # the shim runs each case at its defaults: the Mamba-1 cases' exact ZOH
            "disc": "zoh" if fields["kernel"] in ("mamba1_scan", "mamba1_step") else "",
            # Google Benchmark does not watch the machine: not known
            "busy_cores": "",
            "disturbed": "",
        }
        rows.append(row)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json_file")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    try:
        with open(args.json_file) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        print(f"gbench_csv: {args.json_file}: {e}", file=sys.stderr)
        return 2
    rows = convert(doc)
    temp = f"{args.out}.tmp.{os.getpid()}"
    with open(temp, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    os.replace(temp, args.out)
    print(f"gbench_csv: {len(rows)} rows -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
