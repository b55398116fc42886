#!/usr/bin/python3
"""Pool several honest sweeps of one grid into one baseline for `longmix compare`.

usage: scripts/pool_baseline.py RUN1.csv RUN2.csv ... --out BASELINE.csv

A single sweep's repetitions cover only its own minutes; on a shared machine the next run
drifts further than that (docs/benchmarks.md "The CI gate"). The pooled baseline holds, per
configuration, the repetitions of every run (rep_times_s and rep_cpu_s: at most 64, taken
evenly from the runs in turn), so the U test compares a new run against the spread of the
machine's minutes, not of one. median_s, min_s, p25_s, p75_s, gflops and gbps are
recomputed from the pooled wall times, roofline_frac against the median of the runs'
attainable rates (gflops / roofline_frac), reps is the pooled count, run_id and timestamp
name the runs. Every run must share the CPU model, the git revision and the configurations;
rows that failed (status other than ok) are refused.
"""
import argparse
import csv
import os
import statistics
import sys

KEPT = 64  # harness/bench.h LM_BENCH_KEPT_REPS
KEY = ("kernel isa threads dtype bits n_ctx chunk heads kv_heads head_dim d_inner d_state "
       "batch disc").split()  # harness/csv.c lm_results_key_columns


def quantile(values, q):
    """NumPy's default linear interpolation, as harness/stats.c."""
    s = sorted(values)
    pos = q * (len(s) - 1)
    lo = int(pos)
    return s[-1] if lo + 1 >= len(s) else s[lo] + (pos - lo) * (s[lo + 1] - s[lo])


def times(row, column, path):
    try:
        values = [float(t) for t in row[column].split(";")]
    except (KeyError, ValueError):
        sys.exit(f"pool_baseline: {path}: {column} of {row['kernel']} is missing or malformed")
    return values


def interleave(lists):
    """At most KEPT values, taken from the lists in turn (each run's share kept in order)."""
    out, i = [], 0
    while len(out) < KEPT and any(i < len(l) for l in lists):
        out += [l[i] for l in lists if i < len(l)]
        i += 1
    return out[:KEPT]


def pool(rows, paths):
    first = dict(rows[0])
    for column in ("cpu_model", "git_rev"):
        values = {r[column] for r in rows}
        if len(values) > 1:
            sys.exit(f"pool_baseline: {first['kernel']}: {column} differs between runs: {sorted(values)}")
    bad = [p for r, p in zip(rows, paths) if r["status"] != "ok"]
    if bad:
        sys.exit(f"pool_baseline: {first['kernel']} failed in {', '.join(bad)}: pool honest runs only")
    wall = interleave([times(r, "rep_times_s", p) for r, p in zip(rows, paths)])
    has_cpu = all(r.get("rep_cpu_s") for r in rows)
    cpu = interleave([times(r, "rep_cpu_s", p) for r, p in zip(rows, paths)]) if has_cpu else []
    median = statistics.median(wall)
    attainable = [float(r["gflops"]) / float(r["roofline_frac"]) for r in rows
                  if float(r["roofline_frac"]) > 0 and float(r["gflops"]) > 0]
    flops, nbytes = float(first["flops"]), float(first["bytes"])
    gflops = flops / median * 1e-9
    first.update({
        "run_id": "pooled:" + "+".join(r["run_id"] for r in rows),
        "timestamp": max(r["timestamp"] for r in rows),
        "reps": len(wall),
        "median_s": "%.9g" % median, "min_s": "%.9g" % min(wall),
        "p25_s": "%.9g" % quantile(wall, 0.25), "p75_s": "%.9g" % quantile(wall, 0.75),
        "gflops": "%.9g" % gflops, "gbps": "%.9g" % (nbytes / median * 1e-9),
        "roofline_frac": "%.9g" % (gflops / statistics.median(attainable)) if attainable else "0",
        "rep_times_s": ";".join("%.9g" % t for t in wall),
    })
    if "rep_cpu_s" in first:
        first["rep_cpu_s"] = ";".join("%.9g" % t for t in cpu)
    return first


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    tables = []
    for path in args.runs:
        try:
            with open(path, newline="") as f:
                tables.append(list(csv.DictReader(f)))
        except OSError as e:
            sys.exit(f"pool_baseline: {e}")
    header = list(tables[0][0].keys()) if tables[0] else []
    keyed = [{tuple(r.get(k) or "" for k in KEY): r for r in t} for t in tables]
    for path, k in zip(args.runs, keyed):
        if k.keys() != keyed[0].keys():
            sys.exit(f"pool_baseline: {path} does not measure the configurations of {args.runs[0]}")
    pooled = [pool([k[key] for k in keyed], args.runs) for key in keyed[0]]
    temp = f"{args.out}.tmp.{os.getpid()}"
    with open(temp, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=header, lineterminator="\n")
        writer.writeheader()
        writer.writerows(pooled)
    os.replace(temp, args.out)
    print(f"pool_baseline: {len(pooled)} configurations from {len(args.runs)} runs -> {args.out}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
